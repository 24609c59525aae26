#!/usr/bin/env bash
# Receivers' wakeups that stack on the waker's CPU in the pipe rows, in our
# kernel and in the simulator, under full and lazy: `wakestack-probe.patch`
# (next to it: `hrtick-roles-probe.patch` with more counters) applied to a
# copy of the tree adds `sched::probe`, global counters in the scheduler
# crate both instruments share. Per receiver wakeup: onto the waker's CPU or
# another, the rule that placed it (`wake_wide`, WA_IDLE, WA_WEIGHT, not
# asked: the previous CPU is the waker's; a wakee still switching out) and
# what `select_idle_sibling` returned, the waker CPU's `nr_running` then,
# the idle CPUs visible, the sync flag, and the wait from the placement to
# the receiver's switch-in (time, and switch-ins on that CPU in between).
# Per local wakeup by a running sender: the how-many-th in its run, the
# request pending before it (none, lazy, now) and what the wakeup asked; per
# sender switch-out, how many receivers it woke locally in that run.
#
# It is hrtick-roles.sh with this patch in place of its own and its build
# in build/wakestack (the kernel: one boot per seed, H six times with the
# models alternating; the simulator: seeds 1..SIM_SEEDS, both models,
# without and with the pipe mutex, the same arguments and variables). It
# prints the means per run of the wakeup counters (names matching KEYS),
# per model.
#
#   scripts/linux-compare/wakestack.sh [SEED...]     (default: 1 2)
#   SMP=4 ICOUNT=2 SIM_SEEDS=6 H='hackbench -p -g 2 -l 100 -C linux -R'
#   SIM_W='hackbench ipc=pipe mode=process groups=2 loops=100'
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/harness.sh
. "$here/../lib/harness.sh"
keys=${KEYS:-^(pl_|nrw_|nidle_|sync_|wt|stk|runw_|wnr_|so|lw_|np_|qat7|mig_wake|swout_|runns_)}
h_roles_variant wakestack "$keys" "$@"
