#!/usr/bin/env bash
# Where the HRTICK arms handed to the platform 0.1 ms or more after the
# runqueue's expiry come from, in our kernel and in the simulator, under
# full and lazy: `armlag-probe.patch` (next to it: `hrtick-roles-probe.patch`
# with more counters) applied to a copy of the tree. Per arm handed over
# (`flush_hrtick_cmd`), its kind (a pick, an enqueue's `hrtick_update`,
# another) and the wakeup then enqueueing (none, local, remote direct, wake
# list); per arm handed over 0.1 ms or more late, where the time went: for a
# pick, the clock's skip, `schedule`'s wake-list drain, the pick, the rest of
# `schedule` (parking the task that slept), and the kernel's switch
# bookkeeping up to the hand-over (`publish`), with the largest part
# counted; for an enqueue, the clock's staleness at the arm and the time
# from the last clock read to the hand-over. Over every pick arm without a
# clock skip, the same parts summed (the window's make-up); over every pick
# arm of a switch, the time from the hand-over to the runqueue's release in
# `finish_task_switch`, where Linux hands over (`hrtick_schedule_exit` in
# `finish_lock_switch`).
#
# It is hrtick-roles.sh with this patch in place of its own and its build in
# build/armlag (the same arguments and variables). It prints the means per
# run of the arm counters (names matching KEYS), per model.
#
#   scripts/linux-compare/armlag.sh [SEED...]     (default: 1 2)
#   SMP=4 ICOUNT=2 SIM_SEEDS=6 H='hackbench -p -g 2 -l 100 -C linux -R'
#   SIM_W='hackbench ipc=pipe mode=process groups=2 loops=100'
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/harness.sh
. "$here/../lib/harness.sh"
keys=${KEYS:-^(armlag|all_|tail_|tpart_|tdom_|apart_|csw_|tenq|tpick_)}
h_roles_variant armlag "$keys" "$@"
