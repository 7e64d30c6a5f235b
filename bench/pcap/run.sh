#!/bin/bash
# Benchmark `rlab pcap` against `tshark -q -z io,stat,1` on one large
# RoCEv2 + TCP capture (see BENCHMARKS.md, "pcap analysis").
#   bench/pcap/run.sh [FILE] [RUNS]
# Generates FILE (default /var/tmp/rlab-bench.pcap, 8 M frames, snaplen 128,
# ~1.1 GiB) when absent, then times RUNS (default 5) alternating runs of each
# tool, reading the file once before to warm the page cache, and prints the
# median wall and CPU time and frames/s. Refuses to run while QEMU VMs are up
# (FORCE=1 overrides, to try the script, not for figures).
set -euo pipefail
cd "$(dirname "$0")/../.."
FILE=${1:-/var/tmp/rlab-bench.pcap}
RUNS=${2:-5}
PACKETS=${PACKETS:-8000000}
export PATH=/usr/local/go/bin:$PATH
if [ -z "${FORCE:-}" ] && pgrep qemu >/dev/null; then
  echo "QEMU VMs are running; benchmark later" >&2; exit 2
fi
go build -o /var/tmp/rlab-bench-rlab ./cmd/rlab
[ -f "$FILE" ] || go run ./bench/pcap/gen -o "$FILE" -packets "$PACKETS"
frames=$(/var/tmp/rlab-bench-rlab pcap --json "$FILE" | sed -n 's/^  "frames": \([0-9]*\),/\1/p')
cat "$FILE" >/dev/null
# t prints "wall cpu" seconds (cpu = user + sys) of one run.
t() {
  local TIMEFORMAT='%R %U %S' out
  out=$( { time "$@" >/dev/null 2>&1; } 2>&1 )
  awk '{printf "%s %.3f\n", $1, $2 + $3}' <<<"$out"
}
rw=(); rc=(); sw=(); sc=()
for i in $(seq "$RUNS"); do
  read -r w c < <(t /var/tmp/rlab-bench-rlab pcap "$FILE" --iograph /var/tmp/rlab-bench.svg --interval 1s); rw+=("$w"); rc+=("$c")
  read -r w c < <(t tshark -q -z io,stat,1 -r "$FILE"); sw+=("$w"); sc+=("$c")
done
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo "file: $FILE ($(du -h "$FILE" | cut -f1), $frames frames); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "rlab pcap --iograph wall (s): ${rw[*]}; cpu (s): ${rc[*]}"
echo "tshark -q -z io,stat,1 wall (s): ${sw[*]}; cpu (s): ${sc[*]}"
for n in "rlab pcap --iograph:rw:rc" "tshark -q -z io,stat,1:sw:sc"; do
  IFS=: read -r name wv cv <<<"$n"
  declare -n W=$wv C=$cv
  mw=$(med "${W[@]}"); mc=$(med "${C[@]}")
  printf '%-24s median wall %7.2f s (%5.2f M frames/s), median cpu %7.2f s (%5.2f M frames/s)\n' "$name" "$mw" "$(echo "$frames / $mw / 1000000" | bc -l)" "$mc" "$(echo "$frames / $mc / 1000000" | bc -l)"
done
