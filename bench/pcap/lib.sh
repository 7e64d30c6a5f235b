# Shared by bench/pcap/run.sh and bench/pcap/cores.sh (sourced, bash).
# The benchmarks must not compete with QEMU VMs (other tests use them).

# t prints "wall cpu" seconds (cpu = user + sys) of one run of its
# arguments, or fails when a QEMU VM ran meanwhile (the run is stopped).
t() {
  local out pid
  out=$(mktemp)
  ( TIMEFORMAT='%R %U %S'; time "$@" >/dev/null 2>&1 ) 2>"$out" &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    if pgrep qemu >/dev/null; then
      pkill -P "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
      rm -f "$out"
      return 1
    fi
    sleep 0.2
  done
  wait "$pid"
  awk '{printf "%s %.3f\n", $1, $2 + $3}' "$out"
  rm -f "$out"
}

# idle waits until no QEMU VM runs (at most MAXWAIT seconds, default 3600).
idle() {
  local waited=0
  while pgrep qemu >/dev/null; do
    [ "$waited" -ge "${MAXWAIT:-3600}" ] && { echo "QEMU VMs still running after ${waited}s; giving up" >&2; exit 2; }
    sleep 10; waited=$((waited + 10))
  done
}

# med prints the median of its arguments.
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
