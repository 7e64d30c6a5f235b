#!/bin/bash
# Benchmark `rlab pcap` against `tshark -q -z io,stat,1` on one large
# RoCEv2 + TCP capture (see BENCHMARKS.md, "pcap analysis").
#   bench/pcap/run.sh [FILE] [RUNS]
# Generates FILE (default /var/tmp/rlab-bench.pcap, 8 M frames, snaplen 128,
# ~1.1 GiB) when absent, then times RUNS (default 5) alternating runs of each
# tool, reading the file once before to warm the page cache, and prints the
# median wall time and frames/s. Don't run it while QEMU VMs are up.
set -euo pipefail
cd "$(dirname "$0")/../.."
FILE=${1:-/var/tmp/rlab-bench.pcap}
RUNS=${2:-5}
PACKETS=${PACKETS:-8000000}
export PATH=/usr/local/go/bin:$PATH
if pgrep -x qemu-system-x86_64 >/dev/null; then
  echo "QEMU VMs are running; benchmark later" >&2; exit 2
fi
go build -o /var/tmp/rlab-bench-rlab ./cmd/rlab
[ -f "$FILE" ] || go run ./bench/pcap/gen -o "$FILE" -packets "$PACKETS"
frames=$(/var/tmp/rlab-bench-rlab pcap --json "$FILE" | sed -n 's/^  "frames": \([0-9]*\),/\1/p')
cat "$FILE" >/dev/null
t() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N); echo "$e - $s" | bc; }
r=(); s=()
for i in $(seq "$RUNS"); do
  r+=("$(t /var/tmp/rlab-bench-rlab pcap "$FILE" --iograph /var/tmp/rlab-bench.svg --interval 1s)")
  s+=("$(t tshark -q -z io,stat,1 -r "$FILE")")
done
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
mr=$(med "${r[@]}"); ms=$(med "${s[@]}")
echo "file: $FILE ($(du -h "$FILE" | cut -f1), $frames frames)"
echo "rlab pcap runs (s): ${r[*]}"
echo "tshark io,stat runs (s): ${s[*]}"
printf 'rlab pcap --iograph:    median %.2f s, %.2f M frames/s\n' "$mr" "$(echo "$frames / $mr / 1000000" | bc -l)"
printf 'tshark -q -z io,stat,1: median %.2f s, %.2f M frames/s\n' "$ms" "$(echo "$frames / $ms / 1000000" | bc -l)"
