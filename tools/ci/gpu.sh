#!/usr/bin/env bash
# make gpu: everything that needs a CUDA GPU, in one command, on a machine
# with a GPU, nvcc and a python3 whose torch is already installed (PY=...),
# with no network: it builds against that torch and installs nothing else.
# CI has no GPU; this is the run that proves the CUDA code.
#
#   make gpu                                      # every part
#   make gpu STEPS=build,harness,third-party      # some parts
#
# The parts run in three phases: the builds; then every check side by side,
# in lanes (below), since most of them wait on the GPU, a compiler or a
# child process for much of their time; then the benchmarks, alone on a
# quiet GPU. Beside the checks, a warm-up run of the benchmarks (one call
# per measurement, EXTENSION_CPP_BENCH_WARM) compiles what they compile into
# Inductor's and Triton's caches, so that alone on the GPU they measure. With
# two GPUs or more the benchmarks run during the checks instead, on the last
# GPU and BENCH_CPUS CPUs of their own, the checks on the first GPU and the
# other CPUs: the whole run then takes about as long as the checks. Each
# part's output goes to $OUT/<part>.log; a failing part does not stop the
# others. It ends with one summary (also $OUT/summary.txt): each part,
# passed or failed, with its wall and CPU seconds, then what only a GPU
# checks. The results pages the docs show are written into
# $OUT/pages/ from what ran (docs/results/README.md says how a page reaches
# the docs).
#
# Why a script and not nox or pytest alone: the parts are builds, pytest runs
# of other builds (EXTENSION_CPP_BUILD, the simple kernels' install folder),
# compute-sanitizer and benchmarks, each with its own time limit inside a
# budget, side by side, in the one Python the machine has.
#
# Variables: PY (python3), STEPS (every part), OUT (build/gpu), BUDGET
# (seconds for the whole run, 1e9: each part gets at most what is left),
# WORKERS (pytest-xdist workers of a part: each lane sets its own, for 16
# CPUs, scaled to the CPUs the checks have), BENCH_CPUS (4),
# TORCH_CUDA_ARCH_LIST (the GPU's own), EXTENSION_CPP_COMMIT (the commit the
# tree was copied from, for the pages' stamps, where the tree has no .git).
set -u
cd "$(dirname "$0")/../.." || exit 2
REPO=$(pwd)
PY=${PY:-python3}
ALL=build,cuda,stable,simple,harness,third-party,triton,huge,aoti,sanitizer,tutorial,bench,perf
STEPS=${STEPS:-$ALL}
OUT=${OUT:-build/gpu}
BUDGET=${BUDGET:-1000000000}
CPUS=$(nproc)
WORKERS=${WORKERS:-$CPUS}
export PYTHONUNBUFFERED=1 MAX_JOBS=${MAX_JOBS:-$CPUS}
# Inductor compiles in this process rather than in a pool of its own: every
# lane's workers compile at once, and the CPUs are theirs.
export TORCHINDUCTOR_COMPILE_THREADS=1
mkdir -p "$OUT/pages" "$OUT/parts"
OUT=$(cd "$OUT" && pwd)
rm -f "$OUT"/parts/*
START=$(date +%s)
PHASE2=0
: >"$OUT/summary.txt"

for part in ${STEPS//,/ }; do
  [[ ",$ALL," == *",$part,"* ]] || { echo "make gpu: unknown part '$part'; the parts are $ALL" >&2; exit 2; }
done
wants() { [[ ",$STEPS," == *",$1,"* ]]; }
say() { echo "$*" | tee -a "$OUT/summary.txt"; }

# part NAME LIMIT_S COMMAND...: runs COMMAND (output in $OUT/NAME.log) for at
# most the lesser of LIMIT_S and the budget left, and records its outcome,
# wall seconds and CPU seconds (its processes' user and system time) in
# $OUT/parts/NAME; returns its exit status.
part() {
  local name=$1 limit=$2
  shift 2
  local left=$((BUDGET - ($(date +%s) - START)))
  ((limit > left)) && limit=$left
  if ((limit <= 0)); then
    echo "$name: FAILED, not run: the budget of $BUDGET s is spent" >"$OUT/parts/$name"
    return 1
  fi
  echo "==> $name (at most $limit s): $*"
  local t0=$EPOCHREALTIME rc TIMEFORMAT="%U %S"
  # SIGINT first: pytest, interrupted so, still writes its summary and XML.
  { time timeout --signal=INT --kill-after=20 "$limit" "$@" >"$OUT/$name.log" 2>&1; } 2>"$OUT/$name.cpu"
  rc=$?
  local seconds cpu last
  seconds=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')
  cpu=$(awk '{ printf "%.0f", $1 + $2 }' "$OUT/$name.cpu")
  last=$(grep -E '(passed|failed|error|skipped|xfailed)( |,|$).* in [0-9.]+s' "$OUT/$name.log" | tail -n 1 | tr -d '=' | xargs)
  if ((rc == 0)); then
    echo "$name: passed, $seconds s, CPU $cpu s${last:+ ($last)}" >"$OUT/parts/$name"
  else
    local why=$rc
    ((rc == 124 || rc == 137)) && why="$rc, out of time"
    {
      echo "$name: FAILED (exit $why), $seconds s, CPU $cpu s${last:+ ($last)}; the end of $name.log:"
      tail -n 40 "$OUT/$name.log" | sed 's/^/    /'
    } >"$OUT/parts/$name"
  fi
  echo "<== $(head -n 1 "$OUT/parts/$name")"
  return $rc
}

# pytest with a lane's workers, an idle one taking tests queued for a busy
# one (--dist worksteal), its junit XML kept for the pages.
pytest_part() {
  local name=$1 limit=$2
  shift 2
  part "$name" "$limit" "$PY" -m pytest -p no:cacheprovider -q -rfE -n "$WORKERS" --dist worksteal \
    --junitxml="$OUT/$name.xml" "$@"
}

{
  echo "make gpu: parts $STEPS"
  echo "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1), $CPUS CPUs"
  "$PY" -c 'import sys, torch; print(f"Python {sys.version.split()[0]}, torch {torch.__version__} (CUDA {torch.version.cuda})")'
} | tee -a "$OUT/summary.txt"
# The benchmarks beside the checks where there is a second GPU (and no
# CUDA_VISIBLE_DEVICES has picked GPUs already), and CPUs to spare for them.
GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
BENCH_CPUS=${BENCH_CPUS:-4}
BESIDE=0
if ((GPUS >= 2 && CPUS > 2 * BENCH_CPUS)) && [[ -z ${CUDA_VISIBLE_DEVICES-} ]] &&
  { wants bench || wants perf; }; then
  BESIDE=1
fi
CHECK_CPUS=$((CPUS - BESIDE * BENCH_CPUS))
# workers N: N workers for 16 CPUs, scaled to the CPUs the checks have.
workers() { echo $((($1 * CHECK_CPUS + 8) / 16)); }
"$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else "make gpu: torch sees no CUDA GPU")' || exit 2
"$PY" -c 'import xdist' 2>/dev/null || { echo "make gpu: needs pytest-xdist (pip install pytest-xdist)" >&2; exit 2; }
# The GPU's own architecture, unless one is set.
TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-$("$PY" -c 'import torch; print("%d.%d" % torch.cuda.get_device_capability())')}
export TORCH_CUDA_ARCH_LIST

export PY OUT REPO SIMPLE=$REPO/build/simple-install
# -- phase 1: the builds ------------------------------------------------------
if wants build; then
  # The harness (pure Python), then the three builds side by side: each
  # compiles in its own folder (build/temp-fast, build/temp-simple,
  # stable/build), so a second run on the same machine recompiles nothing.
  # shellcheck disable=SC2016  # expanded by the inner bash, from the exports
  part build 400 bash -c '
    pip=("$PY" -m pip install -q --no-build-isolation --no-deps)
    "${pip[@]}" -e harness/ || exit 1
    "${pip[@]}" -e . >"$OUT/build-classic.log" 2>&1 & classic=$!
    EXTENSION_CPP_KERNELS=simple "${pip[@]}" --upgrade --target "$SIMPLE" . >"$OUT/build-simple.log" 2>&1 & simple=$!
    "${pip[@]}" -e stable/ >"$OUT/build-stable.log" 2>&1 & stable=$!
    # The harness zoo (harness/tests/harness_zoo), which every zoo test loads,
    # with its CUDA file and, for the tests that hide the GPU, without.
    load_zoo=(env PYTHONPATH="harness/tests${PYTHONPATH:+:$PYTHONPATH}" "$PY" -c "from harness_zoo import zoo; zoo.load()")
    "${load_zoo[@]}" >"$OUT/build-zoo.log" 2>&1 & zoo=$!
    CUDA_VISIBLE_DEVICES= "${load_zoo[@]}" >"$OUT/build-zoo_cpu.log" 2>&1 & zoo_cpu=$!
    failed=0
    for build in classic simple stable zoo zoo_cpu; do
      wait "${!build}" || { echo "the $build build failed:"; tail -n 30 "$OUT/build-$build.log"; failed=1; }
    done
    ((failed == 0)) && "$PY" -c "import extension_cpp, extension_cpp_stable, torch
for ns in (\"extension_cpp\", \"extension_cpp_stable\"):
    assert torch._C._dispatch_has_kernel_for_dispatch_key(ns + \"::mymul\", \"CUDA\"), ns
print(\"the classic and stable builds load, with their CUDA kernels\")"'
fi

# -- phase 2: the checks, in lanes side by side --------------------------------
# Seven lanes, each a few parts in turn, sized so that they end together,
# and the benchmarks' warm-up: the CPUs are the limit (the parts' CPU
# seconds, in the summary, add up to about 16 CPUs busy for the whole
# phase), so workers() scales each lane's workers to the CPUs the checks
# have.
C=tests/conformance
NOT_HERE=(--ignore="$C/test_aoti.py" --ignore="$C/test_wheel.py")
CUDA=(-m "cuda and not huge")
# The tests that exercise the kernels themselves (results, layouts, errors,
# gradients, streams and graphs), for the stable and simple builds: they
# share the classic build's Python front end (fake kernels, opcheck,
# autodiff modes, vmap, torch.compile and export), which the cuda part
# proves on the GPU and make test on the CPU for each build.
KERNEL_TESTS=(test_harness.py test_kernel_paths.py test_layout_rule.py test_correctness.py
  test_errors.py test_properties.py test_limits.py test_cuda.py test_autograd.py)
FRONT_END=(-k "not compile and not dynamic and not export and not fake and not opcheck and not autodiff and not vmap and not gradgradcheck")

# The classic build's CUDA cases (every test file but the huge cases, the
# aoti part's and test_wheel.py, which needs the network), then the simple
# build's kernel tests from its install folder (as make test-simple runs
# them), so that `import extension_cpp` finds it.
lane_builds() {
  wants cuda && WORKERS=$(workers 5) pytest_part cuda 300 "$C" "${CUDA[@]}" "${NOT_HERE[@]}"
  if wants simple; then
    (cd "$SIMPLE" && EXTENSION_CPP_EXPECT_KERNELS=simple WORKERS=$(workers 5) pytest_part simple 240 \
      --rootdir "$REPO" -c "$REPO/pyproject.toml" "${KERNEL_TESTS[@]/#/$REPO/$C/}" "${CUDA[@]}" \
      "${FRONT_END[@]}")
  fi
}
# The harness's own tests: the zoo runs each op's CPU and CUDA cases, and
# run_all after CUDA is initialised.
lane_harness() {
  wants harness && WORKERS=$(workers 6) pytest_part harness 360 harness/tests \
    --ignore=harness/tests/third_party -m "not huge"
}
# The third-party libraries' CUDA cases and their reproducers.
lane_third_party() {
  wants third-party && WORKERS=$(workers 5) pytest_part third-party 360 harness/tests/third_party \
    -m "cuda and not huge"
}
# Tensors past 2^31 elements (4 GiB and more each), one test at a time: the
# classic and stable builds', the Triton ops' and the zoo's; then the Triton
# side path: the harness on its ops (every check, every layout) and the
# appendix's Triton tests.
lane_triton() {
  if wants huge; then
    # shellcheck disable=SC2016  # expanded by the inner bash, from the exports
    part huge 240 env EXTENSION_CPP_HUGE=1 bash -c '
      pytest=("$PY" -m pytest -p no:cacheprovider -q -rfE -m huge)
      "${pytest[@]}" --junitxml="$OUT/huge.xml" tests/conformance tests/tutorial/test_triton.py harness/tests &&
        EXTENSION_CPP_BUILD=stable "${pytest[@]}" tests/conformance'
  fi
  wants triton && WORKERS=$(workers 3) pytest_part triton 240 tests/tutorial/test_triton.py \
    tests/tutorial/test_tutorial_appendix.py -k triton -m "not huge"
}
# compute-sanitizer, memcheck and racecheck side by side, on the cases that
# take each kernel path (any error reported fails; racecheck on those that
# may take a kernel with shared memory).
lane_sanitizer() {
  if wants sanitizer; then
    part sanitizer 300 env PY="$PY" OUT="$OUT/sanitizer" TOOLS="memcheck racecheck" \
      tools/ci/compute_sanitizer.sh -k each_path
    cp "$OUT/sanitizer/compute-sanitizer.md" "$OUT/pages/" 2>/dev/null
  fi
}
# AOTInductor: the C++ runner on the exported models, of the C++ ops and of
# the Triton ops, on the GPU (make test runs the CPU one).
lane_aoti() {
  wants aoti && WORKERS=$(workers 2) pytest_part aoti 300 "$C/test_aoti.py" -m cuda
}
# The tutorial walk: every checkpoint built and checked, CUDA cells
# included, the rows side by side; then the stable build's kernel tests.
lane_tutorial() {
  if wants tutorial; then
    MAX_JOBS=4 part tutorial 360 "$PY" -m tools.tutorial.walk --jobs "$(workers 7)"
    cp build/results/tutorial_matrix_gpu.md "$OUT/pages/" 2>/dev/null
  fi
  wants stable && EXTENSION_CPP_BUILD=stable WORKERS=$(workers 5) pytest_part stable 240 \
    "${KERNEL_TESTS[@]/#/$C/}" "${CUDA[@]}" "${FRONT_END[@]}"
}
# triton_bench NAME LIMIT ARGS...: the C++/CUDA against Triton benchmark
# (benchmarks.triton) as part NAME, at the sizes the proof measures; the
# warm-up and the measured run both call it, so that the warm-up compiles
# what the measured run will. The Triton package is imported from its
# folder, as the tests do.
triton_bench() {
  local name=$1 limit=$2
  shift 2
  PYTHONPATH=tutorial/appendix/triton${PYTHONPATH:+:$PYTHONPATH} part "$name" "$limit" \
    "$PY" -m benchmarks.triton --log2 20,24 "$@"
}
# The benchmarks' warm-up (phase 3 below runs them): the sections and the
# part that compile, one call per measurement, their pages thrown away. Its
# outcome is shown, not counted: the benchmarks themselves are the proof.
lane_warm() {
  export EXTENSION_CPP_BENCH_WARM=1
  if wants bench; then
    triton_bench warm-bench 300 --out "$OUT/warm/cpp_or_triton.md" \
      --sections contiguous,fusion,layouts
  fi
  if wants perf; then
    part warm-perf 300 "$PY" -m benchmarks.layouts --device cuda --out "$OUT/warm/layouts.md"
  fi
}
# -- phase 3: the benchmarks, on a quiet GPU -----------------------------------
# C++/CUDA against the Triton side path (docs/cpp_or_triton.md), sized for a
# proof: two contiguous sizes, the layouts at 2^20 and 2^24. Its sections
# are written as they finish. Then make bench's GPU page (perf/cuda.md): ours
# against PyTorch's forms over every layout, whole calls by size, the stable
# build against the classic one; its stamps name EXTENSION_CPP_COMMIT where
# the tree has no .git.
lane_bench() {
  if wants bench; then
    triton_bench bench 240 --out "$OUT/pages/cpp_or_triton.md" --json "$OUT/cpp_or_triton.json"
  fi
  if wants perf; then
    part perf 240 "$PY" -m benchmarks --device cuda --threads 1 --parts layouts,ratios,stable \
      --out "$OUT/pages/perf"
  fi
}
# pin CPULIST: this shell and what it starts run on those CPUs alone.
pin() { taskset -cp "$1" "$BASHPID" >/dev/null; }
if ((BESIDE)); then
  {
    pin "$CHECK_CPUS-$((CPUS - 1))"
    CUDA_VISIBLE_DEVICES=$((GPUS - 1)) lane_bench 2>&1 | sed -u "s/^/[bench] /"
  } &
  pin "0-$((CHECK_CPUS - 1))"
  export CUDA_VISIBLE_DEVICES=0
fi
PHASE2=$(date +%s)
lanes=()
{ lane_builds 2>&1 | sed -u "s/^/[builds] /"; } & lanes+=($!)
{ lane_harness 2>&1 | sed -u "s/^/[harness] /"; } & lanes+=($!)
{ lane_third_party 2>&1 | sed -u "s/^/[third-party] /"; } & lanes+=($!)
{ lane_triton 2>&1 | sed -u "s/^/[triton] /"; } & lanes+=($!)
{ lane_sanitizer 2>&1 | sed -u "s/^/[sanitizer] /"; } & lanes+=($!)
{ lane_aoti 2>&1 | sed -u "s/^/[aoti] /"; } & lanes+=($!)
{ lane_tutorial 2>&1 | sed -u "s/^/[tutorial] /"; } & lanes+=($!)
if ((!BESIDE)) && { wants bench || wants perf; }; then
  mkdir -p "$OUT/warm"
  { lane_warm 2>&1 | sed -u "s/^/[warm] /"; } & lanes+=($!)
fi
wait "${lanes[@]}"
PHASE2=$(($(date +%s) - PHASE2))
((BESIDE)) || lane_bench
wait

# The pages, from the junit XML of each part that ran.
render() {
  [[ -f $OUT/$1.xml ]] && "$PY" -m tools.docs.render_results "$OUT/$1.xml" --out "$OUT/pages/$2" >/dev/null
}
render cuda conformance-gpu.md
render triton conformance-triton-gpu.md

echo
FAILED=0
for part in ${ALL//,/ }; do
  wants "$part" || continue
  [[ -f $OUT/parts/$part ]] || echo "$part: FAILED, never finished (its lane ended early)" >"$OUT/parts/$part"
  tee -a "$OUT/summary.txt" <"$OUT/parts/$part"
  grep -q "^$part: passed" "$OUT/parts/$part" || FAILED=1
done
shopt -s nullglob
for warm in "$OUT"/parts/warm-*; do
  echo "(not counted) $(head -n 1 "$warm")" | tee -a "$OUT/summary.txt"
done
pages=("$OUT"/pages/*.md "$OUT"/pages/perf/*.md)
beside=""
((BESIDE)) && beside=" (the benchmarks beside them, on GPU $((GPUS - 1)) and $BENCH_CPUS CPUs)"
say "total: $(($(date +%s) - START)) s, of which the checks side by side $PHASE2 s$beside; pages written: ${pages[*]#"$OUT"/pages/}"
cat <<'EOF' | tee -a "$OUT/summary.txt"
Only a GPU checks (CI, without one, skips them): the CUDA kernels of the
classic, stable and simple builds (every conformance check on cuda, with
cuda_graph and side_stream); the zoo's CUDA bugs and the third-party CUDA
cases; the Triton kernels compiled for the GPU, under torch.compile, and the
huge cases (CI runs their eager results, strides, vmap and autodiff cases in
Triton's interpreter); AOTInductor's Triton model; compute-sanitizer; the
tutorial's CUDA cells; the GPU benchmarks.
EOF
exit $FAILED
