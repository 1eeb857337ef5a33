#!/usr/bin/env bash
# Builds a Python 3.11 base image from Debian's own packages, for hosts that reach Debian's
# archive but no image registry (the Dockerfiles' public python:3.11-slim-bookworm then cannot be
# pulled). Needs root, mmdebstrap (apt-get install mmdebstrap) and a Docker daemon; about 30 s.
#   deploy/docker/python-base.sh [IMAGE]     default sfumato-python:3.11-bookworm
# then build with --build-arg PYTHON_IMAGE=IMAGE (make images PYTHON_IMAGE=IMAGE does).
set -euo pipefail
image=${1:-sfumato-python:3.11-bookworm}
docker=${DOCKER:-docker}
if "$docker" image inspect "$image" >/dev/null 2>&1; then
    echo "python-base: $image exists"
    exit 0
fi
command -v mmdebstrap >/dev/null || { echo "python-base: needs mmdebstrap (apt-get install mmdebstrap)" >&2; exit 1; }
# `python` is python3.11 as in the public image; apt's lists and caches are left out (the
# Dockerfiles run apt-get update themselves). The C library and Python come from bookworm, the
# suite the public slim image is built on.
mmdebstrap --variant=minbase --include=python3.11,python3.11-venv,python-is-python3,ca-certificates \
    --aptopt='Acquire::Languages "none"' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
    bookworm - \
    | "$docker" import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' \
        --change 'CMD ["python3"]' \
        - "$image"
echo "python-base: built $image"
