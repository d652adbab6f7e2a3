#!/usr/bin/env bash
# compute-sanitizer over the CUDA conformance cases: memcheck, racecheck,
# initcheck and synccheck, one full run of the suite each. Needs a GPU, the
# CUDA toolkit's compute-sanitizer, and the extension built with its CUDA
# kernels for that GPU (`make build`; TEST_CUDA_ARCHS=... for a non-sm_90 one).
#
#   scripts/compute_sanitizer.sh                      # all four tools
#   TOOLS="memcheck initcheck" scripts/compute_sanitizer.sh -k mymul   # some, a subset
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
#   - racecheck checks shared memory only; our kernels use none, so it must
#     report 0 hazards (a future tiled kernel would change that).
#   - memcheck also runs with --leak-check full; torch keeps its CUDA context
#     and cuBLAS handles until exit, which compute-sanitizer does not count as
#     leaks of device allocations.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
PY=${PY:-$REPO/.venv/bin/python}
OUT=${OUT:-$REPO/build/compute-sanitizer}
TOOLS=${TOOLS:-memcheck racecheck initcheck synccheck}
SANITIZER=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}

[ -x "$SANITIZER" ] || { echo "compute-sanitizer not found (set COMPUTE_SANITIZER)"; exit 2; }
"$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA GPU visible')"
mkdir -p "$OUT"

declare -A extra=(
  [memcheck]="--leak-check full"
  [racecheck]="--racecheck-report all"
  [initcheck]="--track-unused-memory no"
  [synccheck]=""
)
failed=0
summary=()
for tool in $TOOLS; do
  log="$OUT/$tool.log"
  echo "==> compute-sanitizer --tool $tool (log: $log)"
  set +e
  # shellcheck disable=SC2086  # the tool's extra flags are words on purpose
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 "$SANITIZER" --tool "$tool" ${extra[$tool]} \
    --error-exitcode 99 --log-file "$log" \
    "$PY" -m pytest tests/conformance -m cuda -p no:cacheprovider -q \
    --ignore-glob='tests/conformance/test_wheel*.py' \
    --ignore-glob='tests/conformance/test_tutorial*.py' "$@"
  status=$?
  set -e
  errors=$(grep -ho 'ERROR SUMMARY: [0-9]* error' "$log" | grep -o '[0-9]*' |
    awk '{s += $1} END {print s + 0}')
  summary+=("$tool: exit $status, $errors errors reported")
  if [ "$status" -ne 0 ] || [ "$errors" -ne 0 ]; then
    failed=1
  fi
done
printf '%s\n' "==> summary" "${summary[@]}" | tee "$OUT/summary.txt"
exit "$failed"
