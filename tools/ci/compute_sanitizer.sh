#!/usr/bin/env bash
# compute-sanitizer over the CUDA conformance cases: memcheck, racecheck,
# initcheck and synccheck, one full run of the suite each. Needs a GPU, the
# CUDA toolkit's compute-sanitizer, and the extension built with its CUDA
# kernels for that GPU (`make build`; TEST_CUDA_ARCHS=... for a non-sm_90 one).
#
#   tools/ci/compute_sanitizer.sh                      # all four tools
#   TOOLS="memcheck initcheck" tools/ci/compute_sanitizer.sh -k mymul   # some, a subset
#
# Extra arguments go to pytest. Reports go to $OUT (default
# build/compute-sanitizer/): one log per tool, then a summary. The script
# fails if any tool reports an error or any test fails.
#
# Caveats:
#   - PYTORCH_NO_CUDA_MEMORY_CACHING=1: every tensor gets its own cudaMalloc,
#     so memcheck sees a read or write past a tensor's end (with torch's
#     caching allocator it would land in a neighbouring block and pass).
#   - Only CUDA cases run (-m cuda); the compile tests' Triton kernels are
#     checked too, which is slow but finds nothing of ours to blame.
#   - racecheck checks shared memory only, which only the tiled kernels
#     use: it runs the cases marked shared_memory (the kernel-path cases
#     with an input transposed against the output), the others every CUDA
#     case. It must report 0 hazards.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
PY=${PY:-$REPO/.venv/bin/python}
OUT=${OUT:-$REPO/build/compute-sanitizer}
TOOLS=${TOOLS:-memcheck racecheck initcheck synccheck}
SANITIZER=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}

[ -x "$SANITIZER" ] || { echo "compute-sanitizer not found (set COMPUTE_SANITIZER)"; exit 2; }
"$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA GPU visible')"
mkdir -p "$OUT"

# No --leak-check for memcheck: in a Python process, tensors the interpreter
# never frees before exit (pytest's parameters, module globals) are reported
# as leaks, one error each, and they are not ours: every "leak" is a torch
# allocation still alive at exit.
# initcheck needs no options: --track-unused-memory is off by default, and in
# compute-sanitizer 2025.3 it takes no value (a "no" after it is read as the
# program to run).
declare -A extra=(
  [memcheck]=""
  [racecheck]="--racecheck-report all"
  [initcheck]=""
  [synccheck]=""
)
declare -A marks=([racecheck]="cuda and shared_memory")
# Each tool runs the suite in a process of its own, side by side: a tool
# slows its process many times over, and the GPU has room for all of them.
declare -A pid=()
for tool in $TOOLS; do
  log="$OUT/$tool.log"
  echo "==> compute-sanitizer --tool $tool (log: $log)"
  # shellcheck disable=SC2086  # the tool's extra flags are words on purpose
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 "$SANITIZER" --tool "$tool" ${extra[$tool]} \
    --error-exitcode 99 --log-file "$log" \
    "$PY" -m pytest tests/conformance -m "${marks[$tool]:-cuda}" -p no:cacheprovider -q \
    --ignore-glob='tests/conformance/test_wheel*.py' "$@" >"$OUT/$tool.pytest.txt" 2>&1 &
  pid[$tool]=$!
done
failed=0
summary=()
rows=()
for tool in $TOOLS; do
  log="$OUT/$tool.log"
  status=0
  wait "${pid[$tool]}" || status=$?
  echo "==> $tool: pytest's last lines"
  tail -n 3 "$OUT/$tool.pytest.txt"
  # memcheck, initcheck and synccheck end with "ERROR SUMMARY: N errors",
  # racecheck with "RACECHECK SUMMARY: N hazards displayed (E errors, W
  # warnings)"; a log with neither line counts as one error (the tool did not
  # finish). `|| true`: grep finding nothing must not end the script.
  errors=$({ grep -hoE 'ERROR SUMMARY: [0-9]+ error|hazards displayed \([0-9]+ error' "$log" ||
    true; } | grep -oE '[0-9]+ error' | awk '{s += $1; n++} END {print n ? s : 1}')
  summary+=("$tool: exit $status, $errors errors reported")
  # The results page's row: pytest's last line (its counts) and the errors.
  rows+=("| $tool | $(tail -n 1 "$OUT/$tool.pytest.txt" | tr -d '=' | xargs) | $errors |")
  if [ "$status" -ne 0 ] || [ "$errors" -ne 0 ]; then
    failed=1
  fi
done
printf '%s\n' "==> summary" "${summary[@]}" | tee "$OUT/summary.txt"
# The stamped page for the docs (docs/results/README.md says how it gets there).
command="tools/ci/compute_sanitizer.sh${*:+ $*}"
{
  PYTHONPATH="$REPO" "$PY" -c 'import sys, torch; from tools.docs import render_results as r
print(f"{r.stamp_line(r.stamp(sys.argv[1]))}; {torch.cuda.get_device_name()}, torch {torch.__version__}, {sys.argv[2]}.")' \
    "$command" "$("$SANITIZER" --version | grep -oE 'Version [0-9.]+' | head -n 1 | sed 's/Version /compute-sanitizer /')"
  printf '%s\n' "" "| tool | pytest | errors reported |" "| --- | --- | --- |" "${rows[@]}"
} > "$OUT/compute-sanitizer.md"
echo "wrote $OUT/compute-sanitizer.md"
exit "$failed"
