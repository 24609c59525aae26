#!/usr/bin/env bash
# Keeps every host core busy: LOAD busy loops (default: one per online CPU,
# `nproc`), for SECS seconds (0 or none: until interrupted), then stops them.
# The load under which emulated timing used to fail;
# `scripts/tools/test-under-stress.sh` runs the suites under it.
#
#   [LOAD=N] scripts/tools/stress-host.sh [SECS]
set -uo pipefail
secs=${1:-0}
n=${LOAD:-$(nproc)}
if ! [[ $n =~ ^[1-9][0-9]*$ ]]; then
    echo "stress-host: LOAD must be a number of busy loops (1 or more), not '$n'" >&2
    exit 2
fi
pids=()
sleeper=""
stop() {
    # Only what this script started, by PID.
    kill "${pids[@]}" $sleeper 2>/dev/null
    wait "${pids[@]}" $sleeper 2>/dev/null
}
trap 'stop; trap - EXIT; exit 0' INT TERM
trap stop EXIT
for _ in $(seq "$n"); do
    (while :; do :; done) &
    pids+=($!)
done
echo "stress-host: $n busy loop(s) (pids ${pids[*]}), ${secs}s (0: until interrupted)" >&2
# `wait` on a background sleep, not a foreground one: bash runs the TERM
# trap only once a foreground command ends, so a foreground `sleep 3600`
# would keep the loops running for up to an hour after test-under-stress
# asked them to stop.
while :; do
    sleep "$([ "$secs" -gt 0 ] && echo "$secs" || echo 3600)" &
    sleeper=$!
    wait "$sleeper"
    [ "$secs" -gt 0 ] && break
done
