# extension_cpp: every entry point a user or CI needs.
#
#   make tutorial   set up, build, walk the tutorial checkpoints in order, test them
#   make test       set up, lint, build, and run every other test
#   (CI runs both, and make sanitize: .ci/run)
#
# The environment lives in .venv (made from $(BASE_PYTHON)); the test build
# compiles CUDA for one architecture (sm_90) to keep nvcc time down, while
# `make wheel` builds the release list from setup.py.

BASE_PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TEST_CUDA_ARCHS ?= 9.0
TEST_WORKERS ?= 2
XDIST := -n $(TEST_WORKERS) --dist loadfile
export PYTHONUNBUFFERED := 1
# Inductor keeps compiled graphs between runs (by default in
# /tmp/torchinductor_$USER), keyed on the graph but not on our fake kernels:
# after a change to one, a cached graph still expects the old output strides
# and fails on the new kernel. So each version of the op code (both builds',
# the Triton side path's, whose op function is its fake kernel, and the
# harness zoo's, harness/tests/harness_zoo) gets a cache of its own.
OPS_HASH := $(shell cat extension_cpp/*.py stable/extension_cpp_stable/*.py tutorial/appendix/triton/extension_triton/*.py csrc/*.h csrc/*.cpp csrc/*/* csrc/*/*/* harness/tests/harness_zoo/zoo* 2>/dev/null | sha1sum | cut -c1-12)
export TORCHINDUCTOR_CACHE_DIR ?= $(CURDIR)/build/inductor-$(OPS_HASH)
# The tests compile many small graphs, in many processes (xdist workers, the
# harness's worker and its forked children): starting inductor's pool of
# compile subprocesses in each costs more than the pool saves.
export TORCHINDUCTOR_COMPILE_THREADS ?= 1

.PHONY: setup build build-simple test-builds test-deps lint format test test-conformance test-simple test-copy tutorial \
	wheel matrix bench docs docs-deps test-docs clean fuzz sanitize test-huge compute-sanitizer mutate gpu

setup: $(STAMP)

# uv installs the environment: it downloads and unpacks torch and its CUDA
# libraries in parallel, where pip does one after another (a minute or more).
# It compiles their bytecode as pip does (--compile-bytecode): where
# PYTHONDONTWRITEBYTECODE is set, every Python process would otherwise compile
# torch's modules afresh, doubling each import's time. The venv keeps pip,
# which the builds below run.
$(STAMP): requirements/dev.txt requirements/torch.txt requirements/test.txt
	@echo "==> creating $(VENV) with $(BASE_PYTHON)"
	test -x $(PY) || $(BASE_PYTHON) -m venv $(VENV)
	$(PY) -m pip install --progress-bar off -q --upgrade pip uv
	$(VENV)/bin/uv pip install --compile-bytecode --python $(PY) \
		-r requirements/torch.txt -r requirements/dev.txt
	touch $@

# make build reinstalls only what changed (make tutorial and make test-copy
# start with it): each library is remade when a file it is built from is
# newer than it, which are csrc/ (stable/csrc includes it), the build
# scripts, the package's Python (stable/setup.py copies some of it in) and
# the CUDA architectures (a file per list under build/cuda-archs/).
BUILD_INPUTS := $(shell find csrc stable/csrc -type f) setup.py build_options.py pyproject.toml \
	stable/setup.py stable/pyproject.toml $(filter-out %/_build_info.py,$(wildcard extension_cpp/*.py))
space := $(subst ,, )
ARCHS := build/cuda-archs/$(subst ;,_,$(subst $(space),_,$(strip $(TEST_CUDA_ARCHS))))
LIBRARY := extension_cpp/_C.abi3.so
STABLE_LIBRARY := stable/extension_cpp_stable/_C.abi3.so
HARNESS := $(VENV)/.harness-installed

build: $(LIBRARY) $(STABLE_LIBRARY)

# The harness (harness/, extension-cpp-testing) is pure Python: installed
# editable, so both packages' `testing` modules re-export this tree's copy.
$(HARNESS): $(STAMP) harness/pyproject.toml
	@echo "==> installing the harness, extension-cpp-testing (harness/)"
	$(PY) -m pip install --no-build-isolation --no-deps -e harness/ -q
	touch $@

# The builds run the venv's tools first on PATH, its ninja among them: the
# in-tree wheel that test_wheel.py builds (noxfile.py runs the venv's tools)
# then reuses make build's objects, which a ninja of another release, with
# another log format, would compile again.
BUILD_ENV := PATH="$(CURDIR)/$(VENV)/bin:$$PATH" TORCH_CUDA_ARCH_LIST="$(TEST_CUDA_ARCHS)" \
	MAX_JOBS=$${MAX_JOBS:-2}

$(ARCHS):
	rm -rf build/cuda-archs
	mkdir -p build/cuda-archs
	touch $@

$(LIBRARY): $(HARNESS) $(BUILD_INPUTS) $(ARCHS)
	@echo "==> building extension_cpp (CUDA archs: $(TEST_CUDA_ARCHS))"
	$(BUILD_ENV) $(PY) -m pip install --no-build-isolation --no-deps -e . -q
	$(PY) -c "import extension_cpp, torch; print('extension_cpp loaded; CUDA kernels:', torch._C._dispatch_has_kernel_for_dispatch_key('extension_cpp::mymul', 'CUDA'))"
	touch $@

$(STABLE_LIBRARY): $(HARNESS) $(BUILD_INPUTS) $(ARCHS)
	@echo "==> building extension_cpp_stable, the stable-ABI build (stable/)"
	$(BUILD_ENV) $(PY) -m pip install --no-build-isolation --no-deps -e stable/ -q
	$(PY) -c "import extension_cpp_stable, torch; print('extension_cpp_stable loaded; CUDA kernels:', torch._C._dispatch_has_kernel_for_dispatch_key('extension_cpp_stable::mymul', 'CUDA'))"
	touch $@

# The simple kernels alone (EXTENSION_CPP_KERNELS=simple: csrc/cpu/ and
# csrc/cuda/ without csrc/fast/), the code people read and copy, installed
# into build/simple-install beside the editable fast build; test-simple runs
# the conformance suite on it, so it can never rot.
SIMPLE := build/simple-install
SIMPLE_LIBRARY := $(SIMPLE)/extension_cpp/_C.abi3.so
build-simple: $(SIMPLE_LIBRARY)

$(SIMPLE_LIBRARY): $(STAMP) $(BUILD_INPUTS) $(ARCHS)
	@echo "==> building extension_cpp with the simple kernels into $(SIMPLE)"
	EXTENSION_CPP_KERNELS=simple $(BUILD_ENV) \
		$(PY) -m pip install --no-build-isolation --no-deps --upgrade -q --target $(SIMPLE) .
	touch $@

# The conformance suite from inside $(SIMPLE), so that `import extension_cpp`
# finds that build before the source tree's; not the tests that build
# something else (wheels, the tutorial, AOTInductor's C++ runner).
C := $(CURDIR)/tests/conformance
define test_simple
	cd $(SIMPLE) && EXTENSION_CPP_EXPECT_KERNELS=simple $(CURDIR)/$(PY) -m pytest \
		--rootdir $(CURDIR) -c $(CURDIR)/pyproject.toml -p no:cacheprovider $(1)
endef
test-simple: build-simple
	$(call test_simple,$(C) --ignore=$(C)/test_wheel.py --ignore=$(C)/test_aoti.py)
# make test runs the tests that exercise the kernels themselves (results,
# layouts, errors, gradients), not those of the Python front end, which the
# two kernel sets share.
SIMPLE_TESTS := $(addprefix $(C)/,test_harness.py test_kernel_paths.py test_layout_rule.py \
	test_correctness.py test_errors.py test_properties.py test_limits.py test_cuda.py test_autograd.py)

# test-copy: a copy made by tools/copy_op.py, with an op added
# (tests/add_an_op.py), builds and passes its own whole conformance suite.
test-copy: build
	EXTENSION_CPP_COPY_SUITE=full $(PY) -m pytest tests/test_copy_op.py -p no:cacheprovider

# ruff, clang-format and actionlint on every file git knows
# (.pre-commit-config.yaml); `make format` runs their fixes.
lint: setup
	$(VENV)/bin/pre-commit run --all-files --show-diff-on-failure

format: setup
	$(VENV)/bin/pre-commit run --all-files --hook-stage manual

# The conformance suite once per build: the classic package, then the
# stable-ABI one (tests/conformance/cases.py, EXTENSION_CPP_BUILD).
test-conformance: build
	$(PY) -m pytest tests/conformance
	EXTENSION_CPP_BUILD=stable $(PY) -m pytest tests/conformance

# Hardening (docs/hardening.md, "Fuzzing and sanitizers").
# fuzz: the property tests with ten times make test's examples, from a fresh
# seed it prints; FUZZ_SEED=N replays a run.
ifndef FUZZ_SEED
FUZZ_SEED := $(shell od -An -N4 -tu4 /dev/urandom | tr -d ' ')
endif
fuzz: build
	@echo "==> make fuzz with FUZZ_SEED=$(FUZZ_SEED) (make fuzz FUZZ_SEED=$(FUZZ_SEED) replays it)"
	$(PY) -m pytest tests/conformance/test_properties.py -p no:cacheprovider \
		--hypothesis-profile=fuzz --hypothesis-seed=$(FUZZ_SEED) --hypothesis-show-statistics

# sanitize: the CPU kernels under ASan + UBSan, and the CPU conformance suite.
sanitize: setup
	MAX_JOBS=$${MAX_JOBS:-2} PY=$(CURDIR)/$(PY) tools/ci/sanitize.sh

# mutate: one-line bugs planted in copies of the Python and C++ sources
# (python -m tools.mutate, tools/mutate/), each run against the tests that
# cover it; it lists the mutants the tests let through. Everything happens
# under build/mutate. MUTATE_ARGS passes options: --lang py, -k ops.py, ...
mutate: build
	$(PY) -m tools.mutate $(MUTATE_ARGS)

# test-huge: tensors past 2^31 elements (about 4.5 GiB per device).
test-huge: build
	EXTENSION_CPP_HUGE=1 $(PY) -m pytest tests/conformance/test_limits.py -m huge --durations=0

# compute-sanitizer: memcheck, racecheck, initcheck, synccheck (GPU machine).
compute-sanitizer: build
	PY=$(CURDIR)/$(PY) tools/ci/compute_sanitizer.sh

# gpu: everything that needs a CUDA GPU, on a machine with nvcc and a torch
# already installed, no network (tools/ci/gpu.sh): the three builds, their
# CUDA cases, the harness's tests (the zoo; the third-party libraries' CUDA
# cases), the Triton side path, AOTInductor, compute-sanitizer, the tutorial
# walk and the GPU benchmark, then one summary and the docs' GPU pages in
# build/gpu/pages. The checks run side by side, in lanes, then the
# benchmarks alone; with two GPUs the benchmarks run on the second, beside
# the checks. It uses .venv's Python where there is one, else python3
# (GPU_PY=...). STEPS=build,cuda,... picks parts; BUDGET=540 ends every part
# by then.
GPU_PY ?= $(if $(wildcard $(PY)),$(CURDIR)/$(PY),python3)
gpu:
	PY=$(GPU_PY) tools/ci/gpu.sh

# harness/tests/third_party runs the harness on torchvision's, bitsandbytes' and
# fbgemm's ops: the torchvision release built for requirements/torch.txt's
# torch, and pinned bitsandbytes and fbgemm-gpu-cpu releases (their findings
# are those releases'), each without its dependencies (they would replace
# that torch).
TORCHVISION ?= 0.29.1
BITSANDBYTES ?= 0.50.2
FBGEMM ?= 1.9.0
test-deps: setup
	@$(PY) -c "import torchvision" 2>/dev/null || { \
		echo "==> installing torchvision $(TORCHVISION) for harness/tests/third_party"; \
		$(PY) -m pip install --progress-bar off -q --no-deps torchvision==$(TORCHVISION); }
	@$(PY) -c "import bitsandbytes" 2>/dev/null || { \
		echo "==> installing bitsandbytes $(BITSANDBYTES) for harness/tests/third_party"; \
		$(PY) -m pip install --progress-bar off -q --no-deps bitsandbytes==$(BITSANDBYTES); }
	@$(PY) -c "import fbgemm_gpu" 2>/dev/null || { \
		echo "==> installing fbgemm-gpu-cpu $(FBGEMM) for harness/tests/third_party"; \
		$(PY) -m pip install --progress-bar off -q --no-deps fbgemm-gpu-cpu==$(FBGEMM); }

# make test's prerequisites: the lint and the docs' browser install, which
# wait on the network much of the time, beside the builds. The builds run one
# after another (a make of their own, without the parallel one's flags): each
# pip install writes into the one venv, or builds in the one source tree.
test-builds:
	MAKEFLAGS= $(MAKE) --no-print-directory build build-simple test-deps

# EXTENSION_CPP_HUGE=1: the tests past 2^31 elements (about 20 s and 4.6 GiB
# on the CPU) run here; a bare pytest skips them.
# TEST_WORKERS pytest-xdist workers run the two builds' suites, each test
# file whole in one worker (--dist loadfile), so that a file's one build or
# venv is made once, and the harness's isolated worker starts once per
# file's ops: handed out one test at a time, the third-party files took
# four times as long. While one worker waits on a compiler or a subprocess,
# the other runs tests. (The simple kernels' run is no faster that way.)
# Each run's junit XML goes to build/results/ (docs/results/README.md says how
# one becomes the conformance page). The first run takes every test but the
# tutorial's (make tutorial), the copy's (make test-copy) and the docs' (last,
# after the docs build).
test: setup
	$(MAKE) --no-print-directory -j2 --output-sync=line lint docs-deps test-builds
	EXTENSION_CPP_HUGE=1 $(PY) -m pytest tests harness/tests benchmarks $(XDIST) \
		--ignore=tests/tutorial --ignore=tests/test_copy_op.py --ignore=tests/docs \
		--junitxml=build/results/conformance.xml
	EXTENSION_CPP_HUGE=1 EXTENSION_CPP_BUILD=stable $(PY) -m pytest tests/conformance $(XDIST) \
		--junitxml=build/results/conformance-stable.xml
	$(call test_simple,$(SIMPLE_TESTS) -k "not capped and not compile and not dynamic and not export")
	$(build_docs)
	$(PY) -m pytest tests/docs

# The docs: HTML with warnings as errors and nitpicky references, then the
# doctest builder runs every example. Both share one doctree cache.
SPHINX := $(PY) -m sphinx -W --keep-going -n -q -d docs/_build/doctrees
define build_docs
	@echo "==> building docs/_build/html"
	rm -rf docs/_build/html docs/_build/doctest
	$(SPHINX) -E -b html docs docs/_build/html
	$(SPHINX) -b doctest docs docs/_build/doctest
endef

docs: build
	$(build_docs)

# Headless Chromium for tests/docs' browser checks (Debian's package). As
# root it is installed; without root, or where apt fails, the browser checks
# skip and say how to enable them. CI (CI=true, set by GitHub Actions) fails
# instead: there the browser checks must run.
docs-deps:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ] && echo "==> installing chromium for the docs browser check" && \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; then :; \
		elif [ -n "$$CI" ]; then echo "make docs-deps: CI must run the browser checks, and chromium could not be installed" >&2; exit 1; \
		else echo "==> no chromium, and it can't be installed here (not root, or apt-get failed): tests/docs skips its browser checks. To run them: apt-get install chromium (as root), then make test-docs"; fi; }

test-docs: docs docs-deps
	$(PY) -m pytest tests/docs

# The tutorial's own tests (tests/tutorial: each step adds what it teaches,
# the READMEs' commands work as written, the side paths build) run here,
# after the walk has built every checkpoint into the shared cache. Each
# README builds its checkpoint in a fresh copy, so those tests spread over
# the workers; the ones that share tutorial/'s own checkpoints form one
# xdist_group.
tutorial: build
	$(PY) -m tools.tutorial.walk
	$(PY) -m pytest tests/tutorial -p no:cacheprovider -n $(TEST_WORKERS) --dist loadgroup

# The wheels and the compatibility matrix are nox sessions (noxfile.py).
# make wheel: one cp39-abi3 wheel in dist/ (CUDA kernels for setup.py's
# release list), built by python -m build, repaired by auditwheel, audited
# by abi3audit, and the harness's py3-none-any wheel beside it.
NOX := $(PY) -m nox
wheel: setup
	$(NOX) -s wheel

# make matrix: every track's wheel built once, then every cell (a fresh uv
# venv per CPython x torch) tests that file: oldest (torch 2.8, CPython 3.9
# to 3.13), newest (this repository's torch, 3.10 to 3.13), stable (one
# extension_cpp_stable wheel next to torch 2.10 to 2.15) and harness (its
# wheel alone next to torch 2.8 and 2.15). Several GB of downloads per torch
# release, kept in uv's cache (tens of GB in all: `.venv/bin/uv cache clean`
# frees it), which is why make test does not run it. The
# page, build/results/compatibility.{md,json}, is rendered from the cells'
# JUnit files even when a cell fails. `nox -s matrix-oldest-3.9` runs one cell.
# The cells run MATRIX_JOBS at a time, each a nox session of its own with its
# output in build/results/matrix/<cell>.log (nox runs the sessions of one
# call in turn; xargs -P runs several calls), sharing uv's download cache,
# longest first (noxfile.py's order). One a core: each cell is CPU-bound
# (pytest, inductor's compiler, torch's threads), and a third cell on two
# cores made every cell 1.5 times as long, with no cell-seconds saved.
MATRIX_JOBS ?= $(shell nproc)
CELLS := oldest newest stable harness
matrix: wheel
	rm -rf build/results/matrix build/matrix-inductor
	mkdir -p build/results/matrix
	$(NOX) -s wheel-oldest wheel-stable
	@echo "==> make matrix: the cells of $(CELLS), $(MATRIX_JOBS) at a time"
	$(NOX) -l -t $(CELLS) --json | $(PY) -c 'import json, sys; print(*(s["session"] for s in json.load(sys.stdin)), sep="\n")' \
		| xargs -P $(MATRIX_JOBS) -I{} sh -c 'start=$$(date +%s); $(NOX) -s "{}" >"build/results/matrix/{}.log" 2>&1; \
			s=$$?; echo "{}: $$( [ $$s = 0 ] && echo passed || echo FAILED), $$(($$(date +%s) - start)) s"; exit $$s'; \
	status=$$?; \
	$(PY) -m tools.docs.render_results --matrix build/results/matrix --out build/results/compatibility.md; \
	exit $$status

# Benchmarks (python -m benchmarks): the machine's results page, <kind>.md, in
# $(BENCH_OUT), and the raw measurements, plots and each part's tables in
# build/bench/<kind>/. Here: the CPU at 1 thread and at all threads; on a GPU
# machine: make bench BENCH_DEVICE=cuda. Neither writes a tracked file;
# BENCH_OUT=docs/results/perf puts the page into the docs.
# BENCH_PARTS picks parts (layouts, ratios, stable, bandwidth); a later run of
# one part keeps the others' last results on the page.
BENCH_DEVICE ?= cpu
BENCH_THREADS ?= 1,$(shell nproc)
BENCH_OUT ?= build/bench
BENCH_PARTS ?= layouts,ratios,stable,bandwidth

bench: build
	$(PY) -m benchmarks --device $(BENCH_DEVICE) --threads $(BENCH_THREADS) \
		--parts $(BENCH_PARTS) --out $(BENCH_OUT)

clean:
	rm -rf build dist *.egg-info extension_cpp/_C*.so extension_cpp/_build_info.py \
		stable/build stable/*.egg-info stable/extension_cpp_stable/_C*.so
