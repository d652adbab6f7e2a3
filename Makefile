# extension_cpp: every entry point a user or CI needs.
#
#   make tutorial   set up, build, and walk the tutorial checkpoints in order
#   make test       set up, lint, build, and run every test (what CI runs)
#
# The environment lives in .venv (made from $(BASE_PYTHON)); the test build
# compiles CUDA for one architecture (sm_90) to keep nvcc time down, while
# `make wheel` builds the release list from setup.py.

BASE_PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TEST_CUDA_ARCHS ?= 9.0
export PYTHONUNBUFFERED := 1

.PHONY: setup build lint format test test-conformance tutorial wheel matrix bench docs clean

setup: $(STAMP)

$(STAMP): requirements/dev.txt requirements/torch.txt
	@echo "==> creating $(VENV) with $(BASE_PYTHON)"
	test -x $(PY) || $(BASE_PYTHON) -m venv $(VENV)
	$(PY) -m pip install --progress-bar off -q --upgrade pip
	$(PY) -m pip install --progress-bar off -r requirements/torch.txt -r requirements/dev.txt
	touch $@

build: setup
	@echo "==> building extension_cpp (CUDA archs: $(TEST_CUDA_ARCHS))"
	TORCH_CUDA_ARCH_LIST="$(TEST_CUDA_ARCHS)" MAX_JOBS=$${MAX_JOBS:-2} \
		$(PY) -m pip install --no-build-isolation --no-deps -e . -q
	$(PY) -c "import extension_cpp, torch; print('extension_cpp loaded; CUDA kernels:', torch._C._dispatch_has_kernel_for_dispatch_key('extension_cpp::mymul', 'CUDA'))"

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/clang-format --dry-run -Werror $$(git ls-files 'csrc/*.cpp' 'csrc/*.h' 'csrc/*.cu' 'tutorial/*.cpp' 'tutorial/*.cu')

format: setup
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/clang-format -i $$(git ls-files 'csrc/*.cpp' 'csrc/*.h' 'csrc/*.cu' 'tutorial/*.cpp' 'tutorial/*.cu')

test-conformance: build
	$(PY) -m pytest tests/conformance

test: lint build
	$(PY) -m pytest tests

tutorial: build
	$(PY) tutorial/walk.py

# Benchmarks (tests/perf, scripts/bench*.py): JSON, plots and ratio tables in
# $(BENCH_OUT). Here: the CPU at 1 thread and at all threads. On a GPU box
# with the extension built: make bench BENCH_DEVICE=cuda BENCH_OUT=$$OUT
BENCH_DEVICE ?= cpu
BENCH_THREADS ?= 1,$(shell nproc)
BENCH_OUT ?= docs/results/perf

bench: build
	$(PY) scripts/bench.py --device $(BENCH_DEVICE) --threads $(BENCH_THREADS) --out $(BENCH_OUT)

clean:
	rm -rf build dist *.egg-info extension_cpp/_C*.so extension_cpp/_build_info.py
