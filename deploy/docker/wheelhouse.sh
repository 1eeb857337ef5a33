#!/usr/bin/env bash
# Fills deploy/docker/wheelhouse/ with every wheel the images install, from this host's pip (its
# index, its caches and its find-links), for builds that must not reach an index of their own
# or must take a particular torch build: `make images WHEELHOUSE=1` then installs from it alone
# (pip --no-index). torch is the one choice that matters: put the wheel you want where pip finds
# it first (the CPU build: pip download torch==2.13.0 --index-url
# https://download.pytorch.org/whl/cpu; PyPI's default is the CUDA build, gigabytes larger).
#   deploy/docker/wheelhouse.sh [PYTHON]     default python3.11
set -euo pipefail
cd "$(dirname "$0")/../.."
python=${1:-python3.11}
wheelhouse=deploy/docker/wheelhouse
# pip evaluates environment markers for the Python it runs on: redis needs async-timeout below
# Python 3.11.3 (Debian bookworm's is 3.11.2), so it is named here for the images.
# Where the suite's venv exists, the images take exactly the versions it tested (tests/stack
# once found a newer typer there that broke every command), not whatever is newest today.
constraints=()
if [ -x .venv/bin/pip ]; then
    .venv/bin/pip freeze --exclude-editable | grep -v '^-e ' > "$wheelhouse/.constraints.txt"
    constraints=(--constraint "$wheelhouse/.constraints.txt")
fi
"$python" -m pip download --quiet --only-binary=:all: --dest "$wheelhouse" "${constraints[@]}" \
    . ./clients/python 'setuptools>=77' wheel 'async-timeout>=4.0.3' 
# The image must carry torch's CPU build; refuse a wheelhouse that resolved to another.
if ls "$wheelhouse"/torch-*.whl | grep -qv '+cpu'; then
    echo "wheelhouse: torch is not the CPU build:" "$wheelhouse"/torch-*.whl >&2
    exit 1
fi
echo "wheelhouse: $(ls "$wheelhouse"/*.whl | wc -l) wheels, $(du -sh "$wheelhouse" | cut -f1)"
