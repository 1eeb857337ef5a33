#!/usr/bin/env bash
# Builds the images: sfumato-gateway and sfumato-worker-cpu (deploy/docker/Dockerfile), and with
# --gpu sfumato-worker-gpu (Dockerfile.gpu), tagged TAG (default: the project's version); with
# --local-services only the Debian-built PostgreSQL, Redis and S3 store of
# deploy/compose.local.yaml (Dockerfile.services, on PYTHON_IMAGE).
#   deploy/docker/images.sh [--gpu | --local-services]
# Environment: PYTHON_IMAGE / CUDA_IMAGE (the bases), IMAGE_PREFIX (e.g. ghcr.io/you/; default
# none), TAG, SOURCE (the OCI source label), CA_BUNDLE (a CA file given to the build as a
# secret, for TLS-intercepting networks; default: none). Builds use the host's network, so a
# daemon without its default bridge (dockerd --bridge=none) builds too.
set -euo pipefail
cd "$(dirname "$0")/../.."
gpu=false
local_services=false
[ "${1:-}" = --gpu ] && gpu=true
[ "${1:-}" = --local-services ] && local_services=true
version=$(sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml | head -1)
tag=${TAG:-$version}
prefix=${IMAGE_PREFIX:-}

# BuildKit is needed (build secrets, bind mounts). A Docker CLI of 23 or later builds with it
# only through its buildx plugin; an older one (Debian's docker.io) has it built in.
buildkit_docker() {
    if docker buildx version >/dev/null 2>&1; then echo "docker buildx build --load"; return; fi
    local candidate
    for candidate in docker /usr/bin/docker; do
        if command -v "$candidate" >/dev/null && DOCKER_BUILDKIT=1 "$candidate" build --help >/dev/null 2>&1; then
            echo "$candidate build"; return
        fi
    done
    echo "images: no Docker client that builds with BuildKit (install docker-buildx)" >&2
    return 1
}
build=$(buildkit_docker)
common=(--network=host --progress=plain
    --build-arg "VERSION=$version"
    --build-arg "SOURCE=${SOURCE:-$(git remote get-url origin 2>/dev/null || true)}"
    --build-arg "REVISION=$(git rev-parse HEAD 2>/dev/null || true)")
[ -n "${CA_BUNDLE:-}" ] && common+=(--secret "id=ca-certificates,src=$CA_BUNDLE")
[ -n "${PYTHON_IMAGE:-}" ] && common+=(--build-arg "PYTHON_IMAGE=$PYTHON_IMAGE")

if $local_services; then
    base=(); [ -n "${PYTHON_IMAGE:-}" ] && base=(--build-arg "BASE_IMAGE=$PYTHON_IMAGE")
    for target in postgres:15 redis:7 s3:1.2.1; do
        echo "images: building sfumato-local-$target"
        DOCKER_BUILDKIT=1 $build "${common[@]}" "${base[@]}" -f deploy/docker/Dockerfile.services \
            --target "${target%%:*}" -t "sfumato-local-$target" .
    done
    exit 0
fi
for target in gateway worker; do
    name=sfumato-$target
    [ $target = worker ] && name=sfumato-worker-cpu
    echo "images: building $prefix$name:$tag"
    DOCKER_BUILDKIT=1 $build "${common[@]}" -f deploy/docker/Dockerfile --target $target \
        -t "$prefix$name:$tag" .
done
if $gpu; then
    gpu_args=("${common[@]}")
    [ -n "${CUDA_IMAGE:-}" ] && gpu_args+=(--build-arg "CUDA_IMAGE=$CUDA_IMAGE")
    DOCKER_BUILDKIT=1 $build "${gpu_args[@]}" -f deploy/docker/Dockerfile.gpu \
        -t "${prefix}sfumato-worker-gpu:$tag" .
fi
