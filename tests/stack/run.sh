#!/usr/bin/env bash
# `make stack-test`: builds what the containerized stack runs and proves it end to end
# (tests/stack/test_stack.py). Needs a running Docker daemon (.ci/run starts one), mmdebstrap
# for the Debian-built Python base, and PyPI and Debian's archive for the builds. Where no
# registry is reachable the images are built on sfumato-python:3.11-bookworm
# (deploy/docker/python-base.sh), from the host's wheelhouse (deploy/docker/wheelhouse.sh: the
# CPU torch wheel this host installs).
set -euo pipefail
cd "$(dirname "$0")/../.."
docker info >/dev/null 2>&1 || { echo "stack-test: no Docker daemon answers (see .ci/run's dockerd)" >&2; exit 1; }
python_image=${PYTHON_IMAGE:-sfumato-python:3.11-bookworm}
[ "$python_image" = sfumato-python:3.11-bookworm ] && deploy/docker/python-base.sh "$python_image"
# The wheelhouse is downloaded again only when the dependencies change (minutes otherwise).
stamp=deploy/docker/wheelhouse/.requirements.sha256
wanted=$(cat pyproject.toml clients/python/pyproject.toml deploy/docker/wheelhouse.sh | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
    deploy/docker/wheelhouse.sh
    echo "$wanted" > "$stamp"
fi
ca=()
[ -f /etc/ssl/certs/ca-certificates.crt ] && ca=(CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt)
env "${ca[@]}" PYTHON_IMAGE="$python_image" IMAGE_PREFIX=ghcr.io/sfumato/ deploy/docker/images.sh
env "${ca[@]}" PYTHON_IMAGE="$python_image" deploy/docker/images.sh --local-services
SFUMATO_STACK_TEST=1 .venv/bin/python -m pytest -p no:xdist -p no:cacheprovider tests/stack "$@"
