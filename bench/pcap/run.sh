#!/bin/bash
# Benchmark `rlab pcap` against `tshark -q -z io,stat,1` on one large
# RoCEv2 + TCP capture (see BENCHMARKS.md, "pcap analysis").
#   bench/pcap/run.sh [FILE] [RUNS]
# Generates FILE (default /var/tmp/rlab-bench.pcap, 8 M frames, snaplen 128,
# ~1.1 GiB) when absent, then times RUNS (default 5) alternating runs of each
# tool, reading the file once before to warm the page cache, and prints the
# median wall and CPU time and frames/s. Runs only while no QEMU VM is up: it
# waits for them to stop, and redoes a pair of runs that one interrupted.
set -euo pipefail
cd "$(dirname "$0")/../.."
FILE=${1:-/var/tmp/rlab-bench.pcap}
RUNS=${2:-5}
PACKETS=${PACKETS:-8000000}
export PATH=/usr/local/go/bin:$PATH
go build -o /var/tmp/rlab-bench-rlab ./cmd/rlab
[ -f "$FILE" ] || go run ./bench/pcap/gen -o "$FILE" -packets "$PACKETS"
frames=$(/var/tmp/rlab-bench-rlab pcap --json "$FILE" | sed -n 's/^  "frames": \([0-9]*\),/\1/p')
cat "$FILE" >/dev/null
. bench/pcap/lib.sh # t, idle, med
# Pairs of runs (rlab, then tshark) alternate; a pair a VM interrupted is
# thrown away and run again once the machine is free of VMs.
rw=(); rc=(); sw=(); sc=(); dropped=0
while [ ${#rw[@]} -lt "$RUNS" ]; do
  idle
  a=$(t /var/tmp/rlab-bench-rlab pcap "$FILE" --iograph /var/tmp/rlab-bench.svg --interval 1s) &&
    b=$(t tshark -q -z io,stat,1 -r "$FILE") || { dropped=$((dropped + 1)); continue; }
  read -r w c <<<"$a"; rw+=("$w"); rc+=("$c")
  read -r w c <<<"$b"; sw+=("$w"); sc+=("$c")
  echo "pair ${#rw[@]}: rlab $a, tshark $b (load $(cut -d' ' -f1 /proc/loadavg))" >&2
done
echo "file: $FILE ($(du -h "$FILE" | cut -f1), $frames frames); load average $(cut -d' ' -f1-3 /proc/loadavg); $dropped pairs interrupted by VMs and redone"
echo "rlab pcap --iograph wall (s): ${rw[*]}; cpu (s): ${rc[*]}"
echo "tshark -q -z io,stat,1 wall (s): ${sw[*]}; cpu (s): ${sc[*]}"
for n in "rlab pcap --iograph:rw:rc" "tshark -q -z io,stat,1:sw:sc"; do
  IFS=: read -r name wv cv <<<"$n"
  declare -n W=$wv C=$cv
  mw=$(med "${W[@]}"); mc=$(med "${C[@]}")
  awk -v n="$name" -v f="$frames" -v w="$mw" -v c="$mc" 'BEGIN {
    printf "%-24s median wall %7.2f s (%5.2f M frames/s), median cpu %7.2f s (%5.2f M frames/s)\n", n, w, f / w / 1e6, c, f / c / 1e6 }'
done
