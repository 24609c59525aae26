#!/usr/bin/env bash
# Runs `make test-kernel` RUNS times while scripts/stress-host.sh keeps every
# host core busy; prints each run's verdict and how many passed. Exit status
# 0 only if every run passed.
#
#   scripts/test-under-stress.sh [RUNS]
set -uo pipefail
runs=${1:-3}
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.." || exit 2
mkdir -p build
"$here/stress-host.sh" 0 &
stress=$!
trap 'kill "$stress" 2>/dev/null; wait "$stress" 2>/dev/null' EXIT
pass=0
for i in $(seq "$runs"); do
    log="build/stress-run-$i.log"
    start=$(date +%s)
    if make -s test-kernel >"$log" 2>&1; then
        pass=$((pass + 1))
        verdict=PASS
    else
        verdict="FAIL ($(grep -E 'ktest: FAIL|FAILED' "$log" | head -n 2 | tr '\n' ' '))"
    fi
    echo "stress run $i/$runs: $verdict in $(($(date +%s) - start)) s, load $(cut -d' ' -f1-3 /proc/loadavg) (log $log)"
done
echo "test-under-stress: $pass of $runs runs of make test-kernel passed under stress-host"
[ "$pass" -eq "$runs" ]
