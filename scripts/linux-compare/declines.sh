#!/usr/bin/env bash
# The pick that declines a receiver woken onto its sender's CPU, in our kernel
# and in the simulator, under full and lazy: `declines-probe.patch` (next to
# it: `wakestack-probe.patch` with more counters) applied to a copy of the
# tree adds `sched::probe`, global counters in the scheduler crate both
# instruments share. At each local wakeup of a receiver by a running sender
# that reaches `wakeup_preempt`'s pick (`pick_eevdf` with the wakee queued):
# the class of the pick's outcome (`DCLASS` in the patch's probe.rs: the wakee
# picked, the sender ineligible or eligible; the sender kept by RUN_TO_PARITY's
# protection, its deadline earlier than the wakee's or not; kept by its earlier
# deadline, unprotected; kept otherwise; another entity picked, the next buddy
# or by its deadline), the wakee eligible or not, and, per outcome (the wakee
# picked / declined), histograms of the pick's inputs: the sender's runtime
# since its pick (sum_exec - prev_sum_exec), the deadline gap (the wakee's
# minus the sender's, virtual ns scaled to real by the sender's weight), the
# wakee's lag at its placement (PLACE_LAG's), the sender's lag (V - v) and
# the share of its request used, and its protection and eligibility.
#
# It is hrtick-roles.sh with this patch in place of its own and its build
# in build/declines (the kernel: one boot per seed, H six times with the
# models alternating; the simulator: seeds 1..SIM_SEEDS, both models,
# without and with the pipe mutex, the same arguments and variables). It
# prints the means per run of the counters whose names match KEYS, per model.
#
#   scripts/linux-compare/declines.sh [SEED...]     (default: 1 2)
#   SMP=4 ICOUNT=2 SIM_SEEDS=6 H='hackbench -p -g 2 -l 100 -C linux -R'
#   SIM_W='hackbench ipc=pipe mode=process groups=2 loops=100'
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/harness.sh
. "$here/../lib/harness.sh"
keys=${KEYS:-^(dc_|drt|ddg_|dpl_|dsl_|dfr_|dsum_|dprot_|dl0_|ddv_|dnr_|dn_|dout_|dosum_|dwt_|dlo_|np_|lw_|runns_)}
h_roles_variant declines "$keys" "$@"
