# Sfumato: `make run` serves on http://127.0.0.1:8000, `make test` runs lint and the whole suite,
# `make test-fast` the tests not marked slow (no lint). Both run the tests on every core
# (TEST_WORKERS, pytest-xdist; docs/testing.md).
# The first of these that pyproject.toml's requires-python allows (3.11 or 3.12; 3.11 is the one
# CI runs): tools/supported_python.py answers for each.
PYTHON ?= $(shell for candidate in python3.11 python3.12 python3; do \
	$$candidate tools/supported_python.py 2>/dev/null && { command -v $$candidate; break; }; done)
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
TEST_WORKERS ?= auto
PYTEST := $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup --durations=20

.PHONY: run test test-fast fuzz lint format bench install dev clean system-deps gallery client-sync \
	images stack-test

$(BIN)/python:
	@test -n "$(PYTHON)" || { echo "Python 3.11 or 3.12 is required (none found on PATH)"; exit 1; }
	$(PYTHON) tools/supported_python.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# The Python client (clients/python) is a package of its own, installed beside the service.
# torch first: the CPU-only build on a machine without an NVIDIA GPU, unless a local wheel or an
# installed torch already serves (tools/torch_install.py says which it chose).
$(VENV)/.installed: pyproject.toml clients/python/pyproject.toml | $(BIN)/python
	$(BIN)/python tools/torch_install.py
	$(BIN)/pip install -q -e .
	$(BIN)/pip install -q -e ./clients/python
	touch $@

$(VENV)/.installed-dev: pyproject.toml clients/python/pyproject.toml | $(BIN)/python
	$(BIN)/python tools/torch_install.py
	$(BIN)/pip install -q -e '.[dev]'
	$(BIN)/pip install -q -e ./clients/python
	touch $@ $(VENV)/.installed

# Debian packages that the builtin pipelines' native libraries load: Real-ESRGAN's ncnn needs
# libvulkan1 and libomp5 even on the CPU; the cv2 that opencv-python brings needs libgl1 and
# libglib2.0-0; CairoSVG, which draws the painter's glyphs and SVG logos, needs libcairo2.
# Installed when missing and running as root; otherwise named (upscaling then falls back to
# Lanczos and the worker's start-up log says why). Never fails the build.
SYSTEM_PACKAGES := libvulkan1 libomp5 libgl1 libglib2.0-0 libcairo2

system-deps:
	@if ! command -v dpkg >/dev/null 2>&1; then \
		echo "system-deps: not Debian; install the equivalents of: $(SYSTEM_PACKAGES)"; \
	else \
		missing=$$(for p in $(SYSTEM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
		if [ -n "$$missing" ] && [ "$$(id -u)" = 0 ]; then \
			echo "system-deps: installing" $$missing; \
			{ apt-get update -q && apt-get install -y -q --no-install-recommends $$missing; } \
				>/dev/null || echo "system-deps: could not install" $$missing; \
		elif [ -n "$$missing" ]; then \
			echo "system-deps: missing" $$missing "(sudo apt-get install" $$missing")"; \
		fi; \
	fi

install: $(VENV)/.installed

dev: system-deps $(VENV)/.installed-dev

run: system-deps $(VENV)/.installed
	$(BIN)/sfumato demo --base-url http://$(HOST):$(PORT)
	$(BIN)/sfumato serve --host $(HOST) --port $(PORT)

lint: dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports --no-logo
	$(BIN)/zizmor --offline --quiet .github/workflows

format: dev
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

test: system-deps lint
	$(PYTEST)

# The quick loop while working: no lint, and none of the tests that start real processes.
test-fast: dev
	$(PYTEST) -m "not slow"

# Schemathesis at random and ten times as many requests (make test sends a fixed sample).
fuzz: dev
	SFUMATO_FUZZ=1 $(PYTEST) tests/api/test_schemathesis.py

bench: dev
	$(BIN)/python -m benchmarks

# Writes the Python client's sync code (clients/python/src/sfumato_client/_sync) from its async
# code (_async), after a change there; tests/client/test_generated_sync.py fails until it is run.
client-sync: dev
	$(BIN)/python clients/python/generate_sync.py

# Regenerates docs/gallery/ and docs/gallery.md from the builtin image and video pipelines.
gallery: dev
	$(BIN)/python tools/gallery.py
	$(BIN)/python tools/video_gallery.py

# The gateway and CPU worker images (deploy/docker/images.sh; docs/operations.md "Run it in
# containers"): on the public Python image, or PYTHON_IMAGE=sfumato-python:3.11-bookworm after
# deploy/docker/python-base.sh where no registry is reachable. IMAGE_PREFIX=ghcr.io/you/ names
# them for your registry.
images:
	PYTHON_IMAGE=$(PYTHON_IMAGE) IMAGE_PREFIX=$(IMAGE_PREFIX) TAG=$(TAG) deploy/docker/images.sh

# The distributed stack in containers, end to end (tests/stack; needs a Docker daemon). After
# the suite in .ci/run.
stack-test: dev
	tests/stack/run.sh

clean:
	rm -rf $(VENV) data .mypy_cache .pytest_cache .ruff_cache .import_linter_cache
