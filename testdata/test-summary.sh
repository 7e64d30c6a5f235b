#!/bin/bash
# Runs a go test command (the arguments) and, when it fails, ends its output
# with what failed: every "--- FAIL" line and, for a test binary that hit its
# -timeout, the tests it was running and the last lines they logged before
# the goroutine dump. A CI log shown by its head and tail (as CI summaries
# are) otherwise ends deep in that dump, with the test that hung in the cut
# middle (stop 35: a VM test hung 22 minutes and its name was not in the
# part shown).
set -uo pipefail
log=$(mktemp /tmp/rlab-test-log.XXXXXX)
trap 'rm -f "$log"' EXIT
"$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] && exit 0
echo
echo "=== summary of the failed run (exit $rc): $*"
grep -E '^\s*--- FAIL' "$log" || true
if grep -q '^panic: test timed out' "$log"; then
  # go test prints "running tests:" and the names, indented, after the panic
  # line; the test's own log is what came just before it.
  sed -n '/^panic: test timed out/,/^$/p' "$log" | head -20
  echo "--- the last lines logged before the timeout:"
  sed -n '/^panic: test timed out/q;p' "$log" | tail -40
fi
exit "$rc"
