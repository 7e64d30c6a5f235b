#!/bin/bash
# Runs every Fuzz* target of the module briefly: the lab parser (FuzzLoad)
# for 60 s, the others for FUZZTIME (default 5s). Seeds come from testdata/ of each package.
set -euo pipefail
FUZZTIME=${FUZZTIME:-5s}
LABFUZZTIME=${LABFUZZTIME:-60s}
for pkg in $(go list ./...); do
  # A package whose tests do not build lists no targets: that is a failure,
  # not a package without fuzz targets.
  if ! list=$(go test -list '^Fuzz' "$pkg" 2>&1); then
    echo "$list"
    echo "fuzz $pkg: cannot list its fuzz targets"
    exit 1
  fi
  for f in $(echo "$list" | grep '^Fuzz' || true); do
    t=$FUZZTIME
    case "$pkg/$f" in */engine/lab/FuzzLoad) t=$LABFUZZTIME ;; esac
    echo "fuzz $pkg $f ($t)"
    out=$(mktemp)
    if ! go test -run '^$' -fuzz "^${f}\$" -fuzztime "$t" -fuzzminimizetime 5s "$pkg" >"$out" 2>&1; then
      cat "$out"
      # The fuzz engine sometimes reports its own deadline ("context deadline
      # exceeded") when -fuzztime ends mid-input on a loaded machine (a race
      # in its coordinator, go.dev/issue/75804, fixed in Go 1.27; this module
      # is on 1.26; seen here at 90 s as at 5 s); a
      # real finding always writes its failing input. Anything else fails.
      if grep -q "Failing input written to\|panic:" "$out" || ! grep -q "context deadline exceeded" "$out"; then
        rm -f "$out"
        exit 1
      fi
      echo "fuzz $pkg $f: the engine's own deadline at the end of -fuzztime, no failing input: not a finding"
    fi
    rm -f "$out"
  done
done
