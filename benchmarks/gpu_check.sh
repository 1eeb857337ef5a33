#!/usr/bin/env bash
# The GPU check: one prepared run of at most 8 minutes on a GPU machine (docs/benchmarks.md,
# "GPU check"). It runs the CUDA tests, then `benchmarks.diffusion_batches` for the SD-Turbo-sized
# and the SDXL-sized random-weight models (eager against compiled, previews off and at every
# step, the pipeline against the bare diffusers call, peak memory), then the out-of-memory drill.
# Each step has a time limit of its own, so one slow step cannot take the others' time; a step
# cut short says so and the run goes on.
#
#   benchmarks/gpu_check.sh             # on the GPU machine: copy what it prints into the doc
#   benchmarks/gpu_check.sh --dry-run   # on a CPU: the same steps on the tiny models (tested)
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
[ -x "$PYTHON" ] || PYTHON=python3

if [ "${1:-}" = "--dry-run" ]; then
  DEVICE=cpu
  MODELS=(tiny)
  BATCHES=(1 2)
  COMPILED_BATCHES=(1)
  REPETITIONS=1
  STEPS=(--steps 2)  # the path matters here, not the work
  # A shared CPU is slower than a GPU: the same steps, longer limits (more on a busy machine).
  LIMIT_SCALE=${GPU_CHECK_LIMIT_SCALE:-4}
else
  DEVICE=cuda
  MODELS=(turbo-sized sdxl-sized)
  BATCHES=(1 2 4)
  COMPILED_BATCHES=(1 4)  # each batch size compiles once (about a minute each)
  REPETITIONS=3
  STEPS=()
  LIMIT_SCALE=1
fi
MODELS_DIR=$(mktemp -d "${TMPDIR:-/tmp}/sfumato-gpu-check-XXXXXX")
trap 'rm -rf "$MODELS_DIR"' EXIT
FAILED=0
STARTED=$SECONDS

# step SECONDS TITLE COMMAND...: run COMMAND under a time limit, saying how it ended.
step() {
  local limit=$(($1 * LIMIT_SCALE)) title=$2
  shift 2
  echo
  echo "== $title (limit ${limit} s, at $((SECONDS - STARTED)) s)"
  timeout --kill-after=10 "$limit" "$@"
  local status=$?
  if [ $status -eq 124 ] || [ $status -eq 137 ]; then
    echo "-- $title: TIMED OUT after ${limit} s"
    FAILED=1
  elif [ $status -ne 0 ]; then
    echo "-- $title: FAILED (exit $status)"
    FAILED=1
  fi
}

BATCHES_COMMAND=("$PYTHON" -m benchmarks.diffusion_batches --device "$DEVICE" --dtype float16
  --repetitions "$REPETITIONS" --models-dir "$MODELS_DIR" "${STEPS[@]}")

echo "GPU check on $DEVICE: $("$PYTHON" -c 'import torch; print(torch.cuda.get_device_name() if torch.cuda.is_available() else "no CUDA device", "| torch", torch.__version__)')"
step 45 "CUDA tests" "$PYTHON" -m pytest -q -p no:cacheprovider -n 0 \
  tests/pipelines/test_diffusion_cuda.py
for model in "${MODELS[@]}"; do
  if [ "$model" = sdxl-sized ]; then limits=(110 90 40); else limits=(45 90 30); fi
  step "${limits[0]}" "$model: eager, previews off, against the bare diffusers call" \
    "${BATCHES_COMMAND[@]}" --models "$model" --batches "${BATCHES[@]}" --bare
  if [ "$model" = sdxl-sized ]; then compiled=(1); else compiled=("${COMPILED_BATCHES[@]}"); fi
  step "${limits[1]}" "$model: compiled (the preset's tuning), against the bare call" \
    "${BATCHES_COMMAND[@]}" --models "$model" --batches "${compiled[@]}" --tuning preset --bare
  step "${limits[2]}" "$model: eager, a preview at every step" \
    "${BATCHES_COMMAND[@]}" --models "$model" --batches 1 "${BATCHES[-1]}" --previews every-step
done
step 30 "out-of-memory drill" "$PYTHON" -m benchmarks.oom_drill --device "$DEVICE" \
  --models "${MODELS[0]}" --models-dir "$MODELS_DIR"
echo
echo "GPU check done in $((SECONDS - STARTED)) s$([ $FAILED -eq 0 ] || echo ' (with failures above)')"
exit $FAILED
