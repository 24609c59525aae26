#!/usr/bin/env bash
# Keeps every host core busy: one busy loop per online CPU (`nproc`), for
# SECS seconds (0 or none: until interrupted), then stops them. The load under
# which emulated timing used to fail; `scripts/test-under-stress.sh` runs the
# suites under it.
#
#   scripts/stress-host.sh [SECS]
set -uo pipefail
secs=${1:-0}
n=$(nproc)
pids=()
stop() {
    # Only the loops this script started, by PID.
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
}
trap 'stop; exit 0' INT TERM
trap stop EXIT
for _ in $(seq "$n"); do
    (while :; do :; done) &
    pids+=($!)
done
echo "stress-host: $n busy loop(s) (pids ${pids[*]}), ${secs}s (0: until interrupted)" >&2
if [ "$secs" -gt 0 ]; then
    sleep "$secs"
else
    while :; do sleep 3600; done
fi
