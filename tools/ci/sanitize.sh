#!/usr/bin/env bash
# `make sanitize`: the CPU kernels under AddressSanitizer and UndefinedBehavior-
# Sanitizer, and the CPU conformance suite run against that build.
#
# The sanitized module is built from a clean copy of the tree into
# build/sanitize/site (never over the editable install), with
# EXTENSION_CPP_CUDA=0 and EXTENSION_CPP_SANITIZE (setup.py). Python and
# torch are not instrumented, so:
#   - libasan must be the first library in the process: LD_PRELOAD it (and
#     libubsan) into python;
#   - leak checking is off: CPython and torch keep allocations until exit on
#     purpose, and LeakSanitizer would report thousands of them that are not ours;
#   - only memory our code touches is checked: a bad access inside torch's
#     own kernels goes unseen, and inductor's generated code is not sanitized;
#   - test_aoti.py is left out: it configures and builds a C++ program with
#     CMake (which runs nvcc's front end) and runs it, and the preloaded
#     runtime would instrument those tools, not our kernels. make test runs it.
#   - so are the torch.compile, export and DTensor tests: they reach the
#     same kernels, on inputs the eager tests cover, through Inductor and
#     torch.distributed, which are not instrumented. make test runs them.
# Every report is written under build/sanitize/reports; the run fails if there
# is any, or if a test fails. Usage: tools/ci/sanitize.sh [pytest args...];
# SANITIZE_REBUILD=0 reuses the last build (the tests always come from the tree).
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
PY=${PY:-$REPO/.venv/bin/python}
OUT=$REPO/build/sanitize
SANITIZE=${EXTENSION_CPP_SANITIZE:-address,undefined,float-cast-overflow}

if [ "${SANITIZE_REBUILD:-1}" = 1 ] || [ ! -d "$OUT/site/extension_cpp" ]; then
  rm -rf "$OUT"
  mkdir -p "$OUT/src" "$OUT/site"
  git ls-files -co --exclude-standard -z | while IFS= read -r -d '' f; do
    [ -f "$f" ] && install -D -m 644 "$f" "$OUT/src/$f"
  done
  echo "==> building the CPU kernels with -fsanitize=$SANITIZE into $OUT/site"
  start=$(date +%s)
  PATH="$(dirname "$PY"):$PATH" EXTENSION_CPP_CUDA=0 EXTENSION_CPP_SANITIZE=$SANITIZE \
    MAX_JOBS=${MAX_JOBS:-2} \
    "$PY" -m pip install -q --no-build-isolation --no-deps --target "$OUT/site" "$OUT/src"
  echo "==> built in $(($(date +%s) - start)) s"
else
  echo "==> SANITIZE_REBUILD=0: reusing $OUT/site (its Python files are from that build)"
fi
rm -rf "$OUT/reports" "$OUT/canary"
mkdir -p "$OUT/reports"

preload="$(gcc -print-file-name=libasan.so)"
case $SANITIZE in *undefined* | *float-cast*) preload="$preload:$(gcc -print-file-name=libubsan.so)" ;; esac

# Canary: an overflow the preloaded runtime must catch and log where the
# suite's reports go, so that "0 reports" below means something.
echo "==> canary: a heap overflow that AddressSanitizer must report"
mkdir -p "$OUT/canary"
if LD_PRELOAD=$preload ASAN_OPTIONS="detect_leaks=0:log_path=$OUT/canary/asan" "$PY" -c "
import ctypes
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.memset(ctypes.c_void_p(libc.malloc(16)), 0, 17)
"; then
  echo "the canary's overflow went unreported: the sanitizer set-up is broken"
  exit 1
fi
grep -q "heap-buffer-overflow" "$OUT"/canary/asan.* || { echo "no canary report"; exit 1; }
echo "==> canary reported, as it must"

echo "==> running the CPU conformance suite with LD_PRELOAD=$preload"
cd "$OUT"  # not the repository: `import extension_cpp` must find the sanitized copy
set +e
LD_PRELOAD=$preload \
  ASAN_OPTIONS="detect_leaks=0:log_path=$OUT/reports/asan:abort_on_error=1" \
  UBSAN_OPTIONS="print_stacktrace=1:log_path=$OUT/reports/ubsan" \
  PYTHONPATH="$OUT/site" EXTENSION_CPP_EXPECT_INSTALLED_IN="$OUT/site" \
  "$PY" -m pytest "$REPO/tests/conformance" -p no:cacheprovider \
  --rootdir "$REPO" -c "$REPO/pyproject.toml" -m "not cuda" \
  --ignore-glob="$REPO/tests/conformance/test_wheel*.py" \
  --ignore-glob="$REPO/tests/conformance/test_aoti.py" \
  --ignore-glob="$REPO/tests/conformance/test_dtensor.py" \
  -k "not compile and not dynamic and not export" \
  -n "${TEST_WORKERS:-2}" --dist loadfile -q "$@"
status=$?
set -e
reports=$(find "$OUT/reports" -type f | wc -l)
echo "==> sanitizer reports: $reports (in $OUT/reports); pytest exit status: $status"
if [ "$reports" -ne 0 ]; then
  head -n 60 "$OUT"/reports/*
  exit 1
fi
exit "$status"
