#!/bin/bash
# Runs every Fuzz* target of the module briefly: the lab parser (FuzzLoad)
# for 60 s, the others for FUZZTIME (default 5s). Seeds come from testdata/ of each package.
set -euo pipefail
FUZZTIME=${FUZZTIME:-5s}
LABFUZZTIME=${LABFUZZTIME:-60s}
for pkg in $(go list ./...); do
  for f in $(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
    t=$FUZZTIME
    case "$pkg/$f" in */engine/lab/FuzzLoad) t=$LABFUZZTIME ;; esac
    echo "fuzz $pkg $f ($t)"
    go test -run '^$' -fuzz "^${f}\$" -fuzztime "$t" -fuzzminimizetime 5s "$pkg"
  done
done
