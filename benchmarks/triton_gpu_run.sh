#!/usr/bin/env bash
# C++/CUDA or Triton (docs/cpp_or_triton.md): every GPU measurement and test
# of the Triton side path (tutorial/appendix/triton) in one run.
#
#   OUT=DIR EXTENSION_CPP_COMMIT=<commit> bash benchmarks/triton_gpu_run.sh
#
# From the repository root, on a machine with a CUDA GPU, nvcc, cmake, g++
# and a python3 (PYTHON=...) with torch (and the Triton it depends on),
# pytest and hypothesis. EXTENSION_CPP_COMMIT names the commit the tree was
# copied from, for the results' stamps, where it has no .git. The steps, in
# this order (STEPS=build,tests,aoti,bench picks some; each later step needs
# the build):
#
#   build  pip install -e harness/, then pip install -e . from a clean build
#          folder, timed: the C++ build time the benchmark reports
#   tests  tests/tutorial/test_triton.py (the harness on the Triton ops,
#          every layout, with the huge-tensor cases) and the Triton tests of
#          test_tutorial_appendix.py
#   aoti   the examples/aoti_runner model with the Triton ops, exported,
#          compiled by AOTInductor and run by the C++ runner
#          (test_aoti.py -k triton), beside the tests
#   bench  python -m benchmarks.triton: every measurement, one process, alone
#
# A failing step does not stop the others; the script exits non-zero if one
# failed. It keeps to a budget of 470 s in all (BUDGET=...): each step's time
# limit is the lesser of its own and what is left. Writes under $OUT
# (default build/triton-gpu-run), eight files:
#
#   cpp_or_triton.md, .json     the benchmark's stamped tables, and every number
#   conformance-triton-gpu.xml  the tests' junit XML (docs/render_results.py
#                               renders it as the docs' page)
#   build.log tests.log aoti.log bench.log   what each step printed
#   summary.txt                 the machine, each step's outcome and seconds
set -u

PY=${PYTHON:-python3}
OUT=${OUT:-build/triton-gpu-run}
STEPS=${STEPS:-build,tests,aoti,bench}
BUDGET=${BUDGET:-470}
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0} MAX_JOBS=${MAX_JOBS:-16}
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
START=$(date +%s)
FAILED=0
SECONDS_DIR=$(mktemp -d)  # each step's seconds, kept out of $OUT
trap 'rm -rf "$SECONDS_DIR"' EXIT
: >"$OUT/summary.txt"

wants() { [[ ",$STEPS," == *",$1,"* ]]; }

# step NAME LIMIT_S COMMAND...: runs COMMAND, output to $OUT/NAME.log, within
# the lesser of LIMIT_S and the budget left; records the outcome.
step() {
  local name=$1 limit=$2
  shift 2
  local left=$((BUDGET - ($(date +%s) - START)))
  ((limit > left)) && limit=$left
  if ((limit <= 0)); then
    echo "$name: not run, the budget of ${BUDGET} s is spent" | tee -a "$OUT/summary.txt"
    FAILED=1
    return 1
  fi
  echo "==> $name (at most $limit s): $*"
  local t0=$EPOCHREALTIME rc seconds
  # SIGINT first: pytest, interrupted so, still writes its junit XML.
  timeout --signal=INT --kill-after=20 "$limit" "$@" >"$OUT/$name.log" 2>&1
  rc=$?
  seconds=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
  if ((rc == 0)); then
    echo "$name: ok, $seconds s" | tee -a "$OUT/summary.txt"
  else
    ((rc == 124 || rc == 137)) && rc="$rc (out of time)"
    echo "$name: FAILED, exit $rc, $seconds s (tail of $name.log below)" | tee -a "$OUT/summary.txt"
    tail -n 30 "$OUT/$name.log"
    FAILED=1
  fi
  echo "$seconds" >"$SECONDS_DIR/$name"
  [[ $rc == 0 ]]
}

{
  echo "host: $(hostname), GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
  "$PY" -c 'import torch, triton; print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, Triton {triton.__version__}")'
} | tee -a "$OUT/summary.txt"

BUILD_SECONDS=
if wants build; then
  # The harness (pure Python, not timed), which the tests' conftest loads.
  echo "==> the harness (harness/)"
  "$PY" -m pip install -q --no-build-isolation --no-deps -e harness/ >>"$OUT/summary.txt" 2>&1 ||
    { echo "harness: FAILED to install" | tee -a "$OUT/summary.txt"; FAILED=1; }
  # From a clean build folder, so that the time is a whole build's.
  rm -rf build/temp-fast
  if step build 180 "$PY" -m pip install --no-build-isolation --no-deps -e .; then
    BUILD_SECONDS=$(cat "$SECONDS_DIR/build")
  fi
fi

# The tests and the AOTInductor run side by side, before the benchmark, so
# that they have their time whatever the benchmark takes.
PIDS=()
if wants tests; then
  # pytest-xdist where installed: the harness's compiles are independent.
  XDIST=()
  "$PY" -c 'import xdist' 2>/dev/null && XDIST=(-n 12 -p no:benchmark)
  EXTENSION_CPP_HUGE=1 step tests 200 "$PY" -m pytest tests/tutorial/test_triton.py \
    tests/tutorial/test_tutorial_appendix.py -k triton -p no:cacheprovider -q -rfE \
    "${XDIST[@]}" --junitxml="$OUT/conformance-triton-gpu.xml" &
  PIDS+=($!)
fi
if wants aoti; then
  step aoti 200 "$PY" -m pytest tests/conformance/test_aoti.py -k triton -p no:cacheprovider \
    -q -s -rfE &
  PIDS+=($!)
fi
for pid in "${PIDS[@]}"; do
  wait "$pid" || FAILED=1
done

# Last, on a quiet machine, with what is left of the budget: it writes its
# tables section by section, the longest last, so a cut run keeps the rest.
if wants bench; then
  step bench 300 env PYTHONPATH=tutorial/appendix/triton "$PY" -m benchmarks.triton --out "$OUT/cpp_or_triton.md" \
    --json "$OUT/cpp_or_triton.json" ${BUILD_SECONDS:+--cpp-build-seconds "$BUILD_SECONDS"}
fi

echo "total: $(($(date +%s) - START)) s" | tee -a "$OUT/summary.txt"
for log in tests aoti; do
  [[ -f $OUT/$log.log ]] && echo "$log: $(tail -n 1 "$OUT/$log.log")"
done
[[ -f $OUT/cpp_or_triton.md ]] && sed -n '/^## Summary/,/^## [^S]/p' "$OUT/cpp_or_triton.md"
exit $FAILED
