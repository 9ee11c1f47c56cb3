#!/usr/bin/env bash
# Builds strata and runs every lit and unit test; the last line is
# "N passed, N failed". Exit status is non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
NINJA_TARGETS="all strata-test-inputs" scripts/build.sh ||
  { echo "0 passed, 1 failed"; exit 1; }
log=$(mktemp)
/usr/lib/llvm-22/bin/lit -sv "$BUILD_DIR/test" "$BUILD_DIR/test/Unit" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
passed=$(grep -oE '^ +Passed *: +[0-9]+' "$log" | grep -oE '[0-9]+$' || echo 0)
expected_fail=$(grep -oE '^ +Expectedly Failed *: +[0-9]+' "$log" | grep -oE '[0-9]+$' || echo 0)
failed=0
for k in 'Failed' 'Unresolved' 'Timed Out' 'Unexpectedly Passed'; do
  n=$(grep -oE "^ +$k *: +[0-9]+" "$log" | grep -oE '[0-9]+$' || echo 0)
  failed=$((failed + n))
done
rm -f "$log"
if [ "$rc" != 0 ] && [ "$failed" = 0 ]; then failed=1; fi
echo "$((passed + expected_fail)) passed, $failed failed"
[ "$failed" = 0 ]
