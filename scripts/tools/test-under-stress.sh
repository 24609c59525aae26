#!/usr/bin/env bash
# Runs `make TARGET` (default: test, everything CI runs) RUNS times while
# scripts/tools/stress-host.sh keeps every host core busy (LOAD busy loops,
# default one per core); prints each run's verdict, time and load, and how
# many passed. Exit status 0 only if every run passed.
#
#   [LOAD=N] scripts/tools/test-under-stress.sh [RUNS [TARGET]]
set -uo pipefail
runs=${1:-3}
target=${2:-test}
loops=${LOAD:-$(nproc)}
if ! [[ $loops =~ ^[1-9][0-9]*$ ]]; then
    echo "test-under-stress: LOAD must be a number of busy loops (1 or more), not '$loops'" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.." || exit 2
mkdir -p build
LOAD=$loops "$here/stress-host.sh" 0 &
stress=$!
trap 'kill "$stress" 2>/dev/null; wait "$stress" 2>/dev/null' EXIT
pass=0
for i in $(seq "$runs"); do
    log="build/stress-run-$i.log"
    start=$(date +%s)
    if make -s "$target" >"$log" 2>&1; then
        pass=$((pass + 1))
        verdict=PASS
    else
        # The failing lines (FAIL/FAILED, make's "Error N"), not test names
        # that merely contain "error".
        verdict="FAIL ($(grep -E '\bFAIL(ED)?\b|\] Error [0-9]+' "$log" | head -n 3 | tr '\n' ' '))"
    fi
    echo "stress run $i/$runs: $verdict in $(($(date +%s) - start)) s, load $(cut -d' ' -f1-3 /proc/loadavg) (log $log)"
done
echo "test-under-stress: $pass of $runs runs of make $target passed under stress-host ($loops busy loops on $(nproc) cores)"
[ "$pass" -eq "$runs" ]
