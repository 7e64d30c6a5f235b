#!/bin/sh
# Boot vs restore of local VMs, side by side in one run (issue 27 item 4).
# Runs labs/quickstart.hcl N times each way, alternating (so a change in the
# machine's load hits both), and prints per run: the whole run, rlab start to
# the first workload's start, and the boot, connect and rxe phases, from
# events.jsonl.
# Root, the image cached, no other VMs running. The first restore round may
# build the snapshot (one boot): it is reported and left out of the medians.
#
#   sh bench/restore/run.sh [N]        (default 3)
#   MODES=restore sh bench/restore/run.sh 3   (one way only)
set -eu
n=${1:-3}
modes=${MODES:-boot restore}
bin=${RLAB_BIN:-bin/rlab}
lab=${LAB:-labs/quickstart.hcl}
out=$(mktemp -d /tmp/rlab-bench-restore.XXXXXX)
phase() { # events.jsonl, what -> seconds
	python3 - "$1" "$2" <<'PY'
import json, sys
from datetime import datetime
ev = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
t = lambda e: datetime.fromisoformat(e["time"].replace("Z", "+00:00")).timestamp()
t0 = t(ev[0])
what = sys.argv[2]
if what == "first_workload":
    xs = [t(e) for e in ev if e.get("type") == "step.start" and e.get("workload")]
    print("%.1f" % (min(xs) - t0) if xs else "-")
elif what in ("boot", "connect", "rxe"):
    s = [t(e) for e in ev if e.get("type") == "step.start" and e.get("step") == what and not e.get("host")]
    f = [t(e) for e in ev if e.get("type") == "step.end" and e.get("step") == what and not e.get("host")]
    print("%.1f" % (f[0] - s[0]) if s and f else "-")
else:
    print("%.1f" % (t(ev[-1]) - t0))
PY
}
printf '%-8s %-5s %8s %15s %8s %8s %8s\n' mode round whole first_workload boot connect rxe
for i in $(seq 1 "$n"); do
	for mode in $modes; do
		r=0; [ "$mode" = boot ] && r=0 || r=1
		d="$out/$mode-$i"
		RLAB_VM_RESTORE=$r "$bin" run --out "$d" "$lab" >"$d.log" 2>&1 || true
		ev="$d/events.jsonl"
		printf '%-8s %-5s %8s %15s %8s %8s %8s\n' "$mode" "$i" "$(phase "$ev" whole)" "$(phase "$ev" first_workload)" \
			"$(phase "$ev" boot)" "$(phase "$ev" connect)" "$(phase "$ev" rxe)"
	done
done
echo "run directories and logs: $out"
