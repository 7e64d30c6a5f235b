#!/bin/bash
# Benchmark `rlab pcap` on one core and on every core, beside reading the
# file (`cat` from the page cache) and beside `tshark -q -z io,stat,1`, in
# one run, on one large RoCEv2 + TCP capture (BENCHMARKS.md, "pcap on every
# core"; issue 26 item 4).
#   bench/pcap/cores.sh [FILE] [RUNS]
# Generates FILE (default /var/tmp/rlab-bench.pcap, 8 M frames, snaplen 128,
# ~1.1 GiB; PACKETS=N for another size) when absent, reads it once to warm
# the page cache, then times RUNS (default 5) rounds of: cat FILE, rlab pcap
# with GOMAXPROCS=1 (the split scan with one worker: roce.ScanSplitSummaries,
# as on every core), rlab pcap with every core (split by flow, merged), and
# tshark (TSHARK=0 leaves it out: it takes ~45 s of CPU a run). Prints each
# run's wall and CPU seconds and the medians as frames/s. (Before the split
# scan was the one-core path too, one core read with gopacket's pcapgo, which
# costs more CPU: BENCHMARKS.md, "Why 2 cores cost less CPU than one"; BASE
# builds of then time that.) A round that a QEMU VM overlapped is thrown
# away and redone (VMs are what other tests run here); for a figure to
# publish, run it on a quiet machine (load average < 1) and say the load.
# BASE=<git revision> also builds that revision's rlab and times its run on
# one core and on every core in the same rounds (an A/B of a change to the
# split scan: BASE=df9a415 is the split scan before its workers counted the
# frames they decode and read their own batches).
# PRIO="chrt -f 1" runs each timed command (not the builds: a Go compile
# under SCHED_FIFO spun for 10 minutes) at real-time priority, so that on a
# machine others share the cores are the benchmark's for its runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
FILE=${1:-/var/tmp/rlab-bench.pcap}
RUNS=${2:-5}
PACKETS=${PACKETS:-8000000}
TSHARK=${TSHARK:-1}
export PATH=/usr/local/go/bin:$PATH
BIN=/var/tmp/rlab-bench-rlab
go build -o "$BIN" ./cmd/rlab
BASE=${BASE:-}
PRIO=${PRIO:-}
if [ -n "$BASE" ]; then
  src=$(mktemp -d)
  git archive "$BASE" | tar -x -C "$src"
  (cd "$src" && go build -o /var/tmp/rlab-bench-rlab-base ./cmd/rlab)
  rm -rf "$src"
fi
[ -f "$FILE" ] || go run ./bench/pcap/gen -o "$FILE" -packets "$PACKETS"
cat "$FILE" >/dev/null
frames=$(GOMAXPROCS=1 "$BIN" pcap --json "$FILE" | sed -n 's/^  "frames": \([0-9]*\),/\1/p')
# The two rlab runs must agree: the split changes the speed, not the result
# (the summary, its text, and the IO graph).
for mode in --json ""; do
  # shellcheck disable=SC2086 # an empty mode is no argument
  one=$(GOMAXPROCS=1 "$BIN" pcap $mode "$FILE" | sha256sum)
  if [ "$one" != "$("$BIN" pcap $mode "$FILE" | sha256sum)" ]; then
    echo "rlab pcap $mode on one core and on $(nproc) cores disagree on $FILE" >&2
    exit 1
  fi
done
GOMAXPROCS=1 "$BIN" pcap "$FILE" --iograph /var/tmp/rlab-bench-1.svg --interval 1s >/dev/null
"$BIN" pcap "$FILE" --iograph /var/tmp/rlab-bench-n.svg --interval 1s >/dev/null
if ! cmp -s /var/tmp/rlab-bench-1.svg /var/tmp/rlab-bench-n.svg; then
  echo "rlab pcap --iograph on one core and on $(nproc) cores disagree on $FILE" >&2
  exit 1
fi
. bench/pcap/lib.sh # t, idle, med
names=("cat" "rlab pcap, GOMAXPROCS=1" "rlab pcap, $(nproc) cores")
cmds=("cat $FILE" "env GOMAXPROCS=1 $BIN pcap $FILE --iograph /var/tmp/rlab-bench.svg --interval 1s"
  "$BIN pcap $FILE --iograph /var/tmp/rlab-bench.svg --interval 1s")
if [ -n "$BASE" ]; then
  names+=("rlab pcap @$BASE, GOMAXPROCS=1" "rlab pcap @$BASE, $(nproc) cores")
  cmds+=("env GOMAXPROCS=1 /var/tmp/rlab-bench-rlab-base pcap $FILE --iograph /var/tmp/rlab-bench.svg --interval 1s"
    "/var/tmp/rlab-bench-rlab-base pcap $FILE --iograph /var/tmp/rlab-bench.svg --interval 1s")
fi
if [ "$TSHARK" = 1 ]; then
  names+=("tshark -q -z io,stat,1"); cmds+=("tshark -q -z io,stat,1 -r $FILE")
fi
declare -a W C
for i in "${!names[@]}"; do W[$i]=""; C[$i]=""; done
done_runs=0; dropped=0
while [ "$done_runs" -lt "$RUNS" ]; do
  idle
  round=(); ok=1
  for i in "${!cmds[@]}"; do
    # shellcheck disable=SC2086 # the commands are words on purpose
    r=$(t $PRIO ${cmds[$i]}) || { ok=0; break; }
    round+=("$r")
  done
  [ "$ok" = 1 ] || { dropped=$((dropped + 1)); continue; }
  done_runs=$((done_runs + 1))
  line="round $done_runs (load $(cut -d' ' -f1 /proc/loadavg)):"
  for i in "${!round[@]}"; do
    read -r w c <<<"${round[$i]}"
    W[$i]+="$w "; C[$i]+="$c "
    line+=" ${names[$i]} $w s;"
  done
  echo "$line" >&2
done
echo "file: $FILE ($(du -h "$FILE" | cut -f1), $frames frames), $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg); $dropped rounds interrupted by VMs and redone"
for i in "${!names[@]}"; do
  mw=$(med ${W[$i]}); mc=$(med ${C[$i]}) # word-split on purpose: one string of runs each
  echo "${names[$i]}: wall (s) ${W[$i]}; cpu (s) ${C[$i]}"
  awk -v n="${names[$i]}" -v f="$frames" -v w="$mw" -v c="$mc" 'BEGIN {
    printf "  %-26s median wall %7.2f s (%6.2f M frames/s), median cpu %7.2f s\n", n, w, f / w / 1e6, c }'
done
# The figure issue 26 asks for: frames/s on every core over frames/s on one
# (each build against its own one core, and BASE's every core against this
# one core); and the median CPU on every core over one core's.
ratio() { # NAME ONE-CORE-INDEX EVERY-CORE-INDEX
  awk -v n="$1" -v a="$(med ${W[$2]})" -v b="$(med ${W[$3]})" -v ca="$(med ${C[$2]})" -v cb="$(med ${C[$3]})" 'BEGIN {
    printf "%s: %.2fx (CPU %.2fx one core'"'"'s)\n", n, a / b, cb / ca }'
}
ratio "rlab pcap, $(nproc) cores vs one core" 1 2
if [ -n "$BASE" ]; then
  ratio "rlab pcap @$BASE, $(nproc) cores vs its one core" 3 4
  ratio "rlab pcap @$BASE, $(nproc) cores vs this one core" 1 4
fi
