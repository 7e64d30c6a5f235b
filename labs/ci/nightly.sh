#!/bin/bash
# Nightly RDMA regression job: run a lab, compare the run with the last good
# one, and leave the run directory and JUnit files for the CI system to upload.
#
#   labs/ci/nightly.sh [LAB_FILE]            (default labs/nightly.hcl)
#
# Environment (all optional):
#   RLAB        the rlab binary                          (default: rlab on PATH)
#   RUNS        where runs are kept between nights       (default: runs)
#   LAB_NAME    the lab's name, as in its lab "NAME" block (default: LAB_FILE's base name)
#   THRESHOLD   allowed regression of every metric         (default: 10%)
#   METRIC_THRESHOLDS  space-separated METRIC=PERCENT overrides, e.g. "bw_avg=5% lat_p99=25%"
#   OUT         folder for the CI system (default: ci-out): run-junit.xml, compare-junit.xml,
#               summary.md, compare.txt, compare.md, run-dir (the run directory's path)
#   RUN_DIR     compare this existing run directory instead of running the lab
#               (when another job ran it)
#   RLAB_RUN_ARGS  extra arguments for `rlab run`, e.g. "-var server=10.0.0.5"
#
# Exit status: 0 the run passed and nothing regressed; 1 a workload failed, an
# expect did not hold or a metric regressed; 2 infrastructure (hosts
# unreachable, no rdma_rxe); 130 interrupted. The baseline moves forward only
# on exit 0, so a regression keeps failing every night until it is fixed (or
# the baseline is moved by hand: echo DIR > $RUNS/$LAB_NAME/last-good).
set -uo pipefail

LAB_FILE=${1:-labs/nightly.hcl}
RLAB=${RLAB:-rlab}
RUNS=${RUNS:-runs}
LAB_NAME=${LAB_NAME:-$(basename "$LAB_FILE" .hcl)}
THRESHOLD=${THRESHOLD:-10%}
OUT=${OUT:-ci-out}
mkdir -p "$OUT" "$RUNS/$LAB_NAME"
baseline_file=$RUNS/$LAB_NAME/last-good

# 1. The baseline: the run recorded as last good, else the newest run whose
#    own status was ok (first night: none, nothing to compare).
prev=
if [ -f "$baseline_file" ]; then
  prev=$(cat "$baseline_file")
  [ -f "$prev/results.json" ] || { echo "nightly: baseline $prev in $baseline_file is gone; using the newest ok run" >&2; prev=; }
fi
if [ -z "$prev" ]; then
  before=()
  [ -n "${RUN_DIR:-}" ] && before=(--before "$RUN_DIR")
  prev=$("$RLAB" runs "$RUNS" --lab "$LAB_NAME" --status ok --last "${before[@]}") || prev=
fi

# 2. The run (argv only: no user string goes through a shell).
if [ -n "${RUN_DIR:-}" ]; then
  dir=$RUN_DIR
  [ -f "$dir/results.json" ] || { echo "nightly: RUN_DIR $dir has no results.json" >&2; exit 1; }
  run_rc=1
  [ -n "$("$RLAB" runs "$dir" --status ok --last)" ] && run_rc=0
else
  dir=$RUNS/$LAB_NAME/$(date -u +%Y-%m-%dT%H%M%SZ)
  read -r -a extra <<<"${RLAB_RUN_ARGS:-}"
  "$RLAB" run "$LAB_FILE" --out "$dir" "${extra[@]}"
  run_rc=$?
fi
echo "$dir" >"$OUT/run-dir"
[ -f "$dir/junit.xml" ] && cp "$dir/junit.xml" "$OUT/run-junit.xml"
[ -f "$dir/summary.md" ] && cp "$dir/summary.md" "$OUT/summary.md"
if [ "$run_rc" -ge 2 ]; then
  echo "nightly: rlab run exited $run_rc (infrastructure or interrupted); not compared" >&2
  exit "$run_rc"
fi

# 3. The comparison with the baseline.
cmp_rc=0
if [ -z "$prev" ]; then
  echo "nightly: no earlier good run of $LAB_NAME under $RUNS: nothing to compare (first night)"
elif [ "$prev" = "$dir" ]; then
  echo "nightly: $dir is the baseline itself: nothing to compare"
else
  # --counters: retransmissions, sequence errors or drops appearing fail
  # the night, as a drop in bandwidth does.
  limits=(--counters --threshold "$THRESHOLD")
  for mt in ${METRIC_THRESHOLDS:-}; do limits+=(--metric-threshold "$mt"); done
  "$RLAB" compare "${limits[@]}" --junit "$OUT/compare-junit.xml" "$prev" "$dir" | tee "$OUT/compare.txt"
  cmp_rc=${PIPESTATUS[0]}
  "$RLAB" compare "${limits[@]}" --markdown "$prev" "$dir" >"$OUT/compare.md" 2>/dev/null
fi

# 4. Move the baseline forward only when everything passed.
if [ "$run_rc" -eq 0 ] && [ "$cmp_rc" -eq 0 ]; then
  echo "$dir" >"$baseline_file"
  echo "nightly: PASS; baseline is now $dir"
  exit 0
fi
echo "nightly: FAIL (run exit $run_rc, compare exit $cmp_rc); baseline stays ${prev:-none}" >&2
exit 1
