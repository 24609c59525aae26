#!/usr/bin/env bash
# make linux-compare: the current Debian Linux (sid, 7.x) as the referee, on
# the same emulated machine as our kernel: the same A/B (`compare`), EEVDF
# conformance rows and latency figures, in both. A tool target, not in
# `make test`; docs/results/linux.md quotes its tables.
#
#   scripts/linux-compare.sh KERNEL_ELF
#
#   WHAT="ab conformance"  parts to run: ab, conformance, latency, costs,
#                    topology (what Linux sees of the machine: caches shared
#                    per CPU, sched domains; OUT/topology.txt), cgroup (task
#                    groups' CPU shares by cpu.weight; OUT/cgroup.txt), smt
#                    (placement and balancing rows for a machine with SMT,
#                    SMP=4,threads=2: OUT/smt-t2.txt)
#   ARCH=x86_64      x86_64 (Debian amd64 on q35) or aarch64 (Debian arm64 on
#                    virt, GICv2, cortex-a72); KERNEL_ELF is ours of that arch
#   SMP=4            CPUs of both machines (2..8), or N,threads=T: N CPUs
#                    as N/T cores of T SMT threads (T 1 or 2, dividing N;
#                    QEMU -smp N,threads=T, one socket), e.g. 4,threads=2:
#                    2 cores x 2 threads, two domain levels (SMT, MC). The
#                    parts ab, latency, costs, topology and smt boot that
#                    machine (conformance and cgroup keep their own flat
#                    CONF_SMP / CG_SMP); the logs keep `smpN` in their
#                    names, their directories and tables a -tT suffix
#                    (ab-t2/, latency-t2.txt, smt-t2.txt, ...), and
#                    SIM defaults to 0 (the simulator's qemu:N is flat)
#   ICOUNT=2         reproducible time: QEMU -icount shift=N,sleep=off;
#                    ICOUNT=off: multi-threaded TCG, wall clock (not reproducible)
#   LINUX_DETERMINISTIC=1   Linux boots that repeat themselves: the same
#                    seed and plan give the same log, byte for byte
#                    (initramfs.sh builds the same archive from the same
#                    inputs; linux-compare/determinism.sh): no RDRAND or
#                    RDSEED (aarch64's cortex-a72 has no RNDR), QEMU's
#                    -seed the boot's seed (it also fixes virt's DT
#                    kaslr-seed and rng-seed), the RTC at a fixed date on
#                    the virtual clock, and nokaslr
#                    randomize_kstack_offset=off page_alloc.shuffle=0
#                    norandmaps. 0: Debian's defaults, as every Linux log
#                    before 2026-12-05 (night) was taken: each boot a new
#                    sample
#   LINUX_SUITE=sid  sid: Debian's current Linux (7.x); bookworm: Debian 12's 6.1
#   PREEMPT=full     both kernels' boot preemption model (preempt=); aarch64:
#                    lazy only (Debian's arm64 build has no PREEMPT_DYNAMIC and
#                    runs the model it was built with, lazy), and no
#                    preempt= configs
#   OURS=1           also run our kernel (0: Linux only)
#   OURS_FEATURES=linux   ours' boots (ab, conformance, latency) and the
#                    simulator's A/B rows start from
#                    the default sched features of the Linux boot they are
#                    compared with: after Linux's boot the harness reads its
#                    `lc: features` line (debugfs sched/features) and ours
#                    takes every flag of its own table whose default differs
#                    (linux-compare/defaults.sh; printed as `linux-compare:
#                    ours takes Linux's defaults: ...`); a config's own flags
#                    apply on top. Debian's arm64 7.2 boots NO_HRTICK, amd64
#                    as ours. Linux's flags ours has not are listed, not
#                    applied. own: ours' compile-time defaults
#   LINUX=1          boot Linux (0: keep the Linux logs already under OUT and
#                    run only our kernel and the simulator again, e.g. after a
#                    change of ours; ab, cgroup and smt parts only; ab and
#                    smt: at least the seed-1 Linux log, ours may have more
#                    BOOTS / SMT_BOOTS than it; nothing is fetched then,
#                    unless WHAT also names a part that boots Linux; kept:
#                    as 0, with the Linux column kept in the repository,
#                    docs/results/linux/referee/ARCH, copied under OUT
#                    first: WHAT=ab, SMP=4 only, and it has the hackbench
#                    rows of FULL=1 CONFIGS2= on x86_64 and of the aarch64
#                    page's four lines on aarch64, and on both the second
#                    set's schbench and pgbench rows (ARCH-features, taken
#                    when the run has a second set); other rows find no
#                    Linux runs)
#   OURS_COST=0      ab: ours' hackbench workloads with Linux's syscall costs
#                    charged per message (our shell's `hackbench -C linux`:
#                    the CPU time Linux 7.2 spends in each pipe/socket
#                    write and read on this machine, as `lcbench costs`
#                    measured it; docs/results/linux/three-way.md, "Ours with Linux's
#                    syscall costs"). 0: not charged (logs ARCH_smpN_seedB,
#                    column ARCH); linux: charged only (logs and column
#                    ARCH-clinux); both: each boot seed runs ours twice,
#                    uncharged then charged, and the versus table has both
#                    columns, each with its own verdicts and tally. Other
#                    workloads (schbench, perfpipe, cyclictest -L, ...) run
#                    unchanged in the charged boot
#   OURS_FLIPS=      ab: empty (the default): ours' hackbench runs as it is;
#                    N: ours' hackbench workloads get `-W N` (in both columns
#                    with OURS_COST=both): the run's parent thread starts
#                    with N wakee_flips, which its tasks copy, as rt-tests'
#                    hackbench main process inherits init's in Linux (4-8
#                    there, per boot: linux-compare/flips-probe.sh). An
#                    input, not a rule of the scheduler; the label shows it
#                    (`... -W N`); docs/results/linux/smt.md, "Two-level
#                    topology (SMT): Linux and ours". The simulator's rows
#                    get the same input (sim-rows.sh SIM_FLIPS, hackbench
#                    `flips=N`)
#   SIM=1            also the simulator (sim run, qemu:SMP preset: the x86_64
#                    machine, costs measured on it by WHAT=costs) for the
#                    A/B's hackbench workloads and the second set's
#                    schbench and pgbench (sim-rows.sh), SIM_SEEDS=6 seeds;
#                    SIM_ABLATION=1 also each of its mechanisms switched off
#                    (sim-ablation.sh: OUT/AB_NAME/ablation/ablation.txt)
#   OUT=build/linux-compare   packages (cached), initramfs, logs, tables
#   REPORT_ONLY=1    no boots: the tables from the last run's logs
#   BOOT_SILENCE=600 a boot (Linux's or ours) is ended when its log has not
#                    grown for this many seconds (a hung guest), and
#   BOOT_TIMEOUT=7200  when it has run this long in all (host seconds;
#                    scripts/lib/harness.sh, h_run). A Linux A/B boot of 80
#                    runs took 821-1366 s at host load 6-10, and prints a
#                    line every run, so only a silence limit suits both a
#                    loaded host and a hang.
#  ab:
#   BOOTS=2 RUNS=3 WARMUP=1   boots (boot b gets seed b), kept and warmup
#                    rounds per boot and comparison
#   BOOT_SEED=1      the first boot's seed: boots get seeds BOOT_SEED ..
#                    BOOT_SEED+BOOTS-1 (more boots of the same kernel, e.g.
#                    BOOT_SEED=3 after a 2-boot run). Above 1 the logs of
#                    other seeds under OUT/AB_NAME/logs are kept, and pool
#                    with the new ones in the tables
#   CONFIGS / WORKLOADS        '|'-separated configs and workloads of the
#                    first comparison set (NEXT_BUDDY x preempt model)
#   CONFIGS2 / WORKLOADS2      the second set (the other features)
#   FULL=1           the workloads of docs/results/linux.md: hackbench also
#                    with threads (-T) and -p -g 4 -l 50; perfpipe, cyclictest
#                    and cyclictest under load in the second set
#   AB_NAME=ab       the directory under OUT for this A/B's logs and tables
#   TRACE=0          1: Linux also counts, per run, why the workload's tasks
#                    switch out and who wakes whom (ftrace histogram
#                    triggers, guest.sh's lc_trace_*: `trace` lines in its
#                    log), summed per config by trace-summary.py into
#                    OUT/AB_NAME/trace.txt; the triggers slow the runs down;
#                    2: only the triggers without a stack walk (per-pid
#                    switch states, waker/wakee pairs, wakeup-to-run time,
#                    HRTICK expiries), cheaper than 1 but not free (x86_64,
#                    4 vCPUs: hackbench -g 2 2.8 s a run against 2.05
#                    untraced, -p -g 2 2.5 s against 1.37; the socket
#                    rows' lazy-vs-full effect does not survive it);
#                    with either, our hackbench runs get -R (its `roles:`
#                    lines, the same counts)
#   A config is `default` or comma-separated settings: FEATURE, NO_FEATURE,
#   preempt=MODEL, kernel.sched_base_slice_ns=N (Linux: debugfs
#   sched/features, sched/preempt and sched/base_slice_ns; ours: the same
#   words in `compare -c`). A workload is our shell's command
#   (hackbench, schbench, pgbench, perfpipe, cyclictest, spin, wakelat), run
#   in Linux as the equivalent program (rt-tests' hackbench and cyclictest,
#   `cyclictest -L G` as cyclictest beside a `hackbench -T -p -g G`,
#   lcbench's schbench, pgbench, spin and wakelat, piperr, perf bench sched
#   pipe); or
#   `LABEL => LINUX COMMAND` for a Linux-only workload.
#  conformance:
#   CONF_ONLY=REGEX  only the rows whose name matches (awk ERE), e.g. '^dl_'
#   CONF_MS=1000     length of each conformance run
#   CONF_SMP=1       CPUs of both machines for these rows (every task is on
#                    CPU 0 anyway; 1 keeps our kernel's idle CPUs out of the
#                    emulation's time); the SCHED_DEADLINE rows (dl_*) run
#                    only at CONF_SMP=4, the count their shapes are for
#   CONF_BOOTS=1     boots of each kernel; above 1, boot b gets seed b (Linux
#                    lc.seed=b, ours seed=b) and a pseudo-random pause from
#                    it before every run (Linux: usleep 0..4 ms; ours: `yield
#                    -l 1..1000`, 0..4.7 ms under -icount shift=2), so runs
#                    start at different tick phases; logs linux-seedB.log and
#                    ours-seedB.log, a table per boot and one of each row's
#                    spread over the boots (conformance.py)
#  latency:
#   REPS=3 LOOPS_PIPE=2000   repetitions per boot of: cyclictest, the pipe
#                    round trips (same CPU, cross CPU); then REPS runs of
#                    hackbench -p -g 2 -l 100
#  cgroup (task groups: cgroup v2's cpu.weight against ours' `cgroup`):
#   CG_MS=3000       length of each run (guest ms)
#   CG_SMP="1 4"     the CPU counts to run (one boot of each kernel per
#                    count and boot; a row runs at its own count only)
#   CG_BOOTS=2       boots of each; boot b gets seed b and a pause from it
#                    before every run (Linux: usleep 0..4 ms; ours: `yield
#                    -l 1..1000`); logs OUT/cgroup/linux-smpN-seedB.log and
#                    ours-smpN-ROW-seedB.log (ours: one boot per row, so the
#                    spinners' thread ids are known: see part_cgroup);
#                    the table (cgroup.py) in OUT/cgroup.txt
#  smt (rows in smt_rows; smt-summary.py's table):
#   SMT_BOOTS=2 SMT_REPS=3   boots of each kernel (boot b: seed b) and
#                    rounds per boot (each round runs every row once)
#   SMT_MS=1000      length of the CPU hog rows (guest ms)
#   SMT_LOOPS=20000  round trips of the pipe pair row (Linux: perf bench
#                    sched pipe, whose start-up takes ~0.2 s of one CPU:
#                    enough loops that the pair's own time dominates)
#  costs:
#   COST_ITERS=2000  operations per figure of `lcbench costs` (the simulator's qemu:N
#                    cost table: switches, pipe/socket syscalls, wakeups,
#                    IPI latency, idle scan, vCPU time sharing), one boot of
#                    Linux only, printed to OUT/costs.txt
#
# Linux boots through scripts/boot/qemu.sh ARCH (same machine, CPU model,
# SMP, memory and flags as ours) with `-initrd` and `console=ttyS0` (aarch64:
# ttyAMA0) `quiet preempt=$PREEMPT lc.mode=... lc.seed=B`; always TCG
# (-icount needs it).
# Packages come from scripts/linux-compare/fetch.sh (a private apt
# configuration; cached), the initramfs from initramfs.sh, the in-guest A/B
# from guest.sh. Both kernels' A/B transcripts have the same run lines, so
# abtool (abtool/) prints the same mmtests tables, CSV and JSON for both
# (Linux's logs are named linux-ARCH_smpN_seedB.log), and `abtool
# --versus` sets the two side by side with a verdict per row.
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: $0 KERNEL_ELF" >&2
    exit 2
fi
# -m: with OURS=0 (Linux only, e.g. `make linux-costs`) our kernel need not
# have been built; with OURS=1 it must exist (checked below).
elf=$(realpath -m "$1")
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=scripts/linux-compare/defaults.sh
. "$here/linux-compare/defaults.sh"
WHAT=${WHAT:-ab conformance}
ARCH=${ARCH:-x86_64}
SMP=${SMP:-4}
# SMP=N or N,threads=T: the CPU count (log names, counts) and the threads
# per core; the whole string goes to QEMU's -smp.
smp_n=${SMP%%,*}
smp_threads=1
[[ $SMP == *,* ]] && smp_threads=${SMP#*,threads=}
ICOUNT=${ICOUNT:-2}
LINUX_DETERMINISTIC=${LINUX_DETERMINISTIC:-1}
LINUX_SUITE=${LINUX_SUITE:-sid}
preempt0=full
[[ $ARCH == aarch64 ]] && preempt0=lazy
PREEMPT=${PREEMPT:-$preempt0}
OURS=${OURS:-1}
LINUX=${LINUX:-1}
sim0=1
[[ $smp_threads != 1 ]] && sim0=0
SIM=${SIM:-$sim0}
SIM_SEEDS=${SIM_SEEDS:-6}
OUT=${OUT:-$root/build/linux-compare}
BOOTS=${BOOTS:-2}
BOOT_SEED=${BOOT_SEED:-1}
RUNS=${RUNS:-3}
WARMUP=${WARMUP:-1}
configs0='default|NEXT_BUDDY|preempt=lazy|NEXT_BUDDY,preempt=lazy'
[[ $ARCH == aarch64 ]] && configs0='default|NEXT_BUDDY'
CONFIGS=${CONFIGS-$configs0}
default1='hackbench -g 2 -l 100|hackbench -p -g 2 -l 100'
[[ ${FULL:-0} == 1 ]] && default1+='|hackbench -T -g 2 -l 100|hackbench -p -T -g 2 -l 100|hackbench -p -g 4 -l 50'
workloads_given=${WORKLOADS+given}
WORKLOADS=${WORKLOADS-$default1}
CONFIGS2=${CONFIGS2-$LCD_CONFIGS2}
default2=$LCD_WORKLOADS2
# FULL=1: docs/results/linux.md also ran these (cyclictest -L 1: under a
# hackbench -T -p -g 1 that runs beside it, in both kernels)
more2='perfpipe -l 2000|cyclictest -t 1 -i 500 -l 1000 -p 50'
more2+='|cyclictest -t 1 -i 500 -l 1000 -p 50 -L 1'
[[ ${FULL:-0} == 1 ]] && default2+="|$more2"
WORKLOADS2=${WORKLOADS2-$default2}
CONF_MS=${CONF_MS:-1000}
CONF_SMP=${CONF_SMP:-1}
CONF_BOOTS=${CONF_BOOTS:-1}
CG_MS=${CG_MS:-3000}
CG_SMP=${CG_SMP:-1 4}
CG_BOOTS=${CG_BOOTS:-2}
REPS=${REPS:-3}
SMT_REPS=${SMT_REPS:-3}
SMT_BOOTS=${SMT_BOOTS:-2}
SMT_MS=${SMT_MS:-1000}
SMT_LOOPS=${SMT_LOOPS:-20000}
LOOPS_PIPE=${LOOPS_PIPE:-2000}
COST_ITERS=${COST_ITERS:-2000}
BOOT_TIMEOUT=${BOOT_TIMEOUT:-7200}
BOOT_SILENCE=${BOOT_SILENCE:-600}

bad() { echo "error: linux-compare: $*" >&2; exit 2; }
case $ARCH in
    x86_64) darch=amd64 console=ttyS0 ;;
    aarch64) darch=arm64 console=ttyAMA0 ;;
    *) bad "ARCH must be x86_64 or aarch64, got '$ARCH'" ;;
esac
[[ $SMP =~ ^[2-8](,threads=[12])?$ ]] || bad "SMP must be N (2..8) or N,threads=T (T 1 or 2), got '$SMP'"
((smp_n % smp_threads == 0)) || bad "SMP=$SMP: $smp_n CPUs are not whole cores of $smp_threads threads"
[[ $smp_threads == 1 || $SIM == 0 ]] || bad "SMP=$SMP: the simulator's qemu:N machine has no SMT level; SIM must be 0 with threads"
[[ $CONF_SMP =~ ^[1-8]$ ]] || bad "CONF_SMP must be 1..8, got '$CONF_SMP'"
for n in BOOT_TIMEOUT BOOT_SILENCE BOOTS BOOT_SEED RUNS REPS SMT_REPS SMT_BOOTS SMT_MS SMT_LOOPS CONF_MS CONF_BOOTS LOOPS_PIPE COST_ITERS CG_MS CG_BOOTS; do
    [[ ${!n} =~ ^[1-9][0-9]*$ ]] || bad "$n must be a positive integer, got '${!n}'"
done
# A boot's cap in silence limits (h_run's H_CAP): BOOT_TIMEOUT rounded up.
boot_cap=$(((BOOT_TIMEOUT + BOOT_SILENCE - 1) / BOOT_SILENCE))
for n in $CG_SMP; do [[ $n =~ ^[1-8]$ ]] || bad "CG_SMP must list CPU counts 1..8, got '$CG_SMP'"; done
[[ -n ${CG_SMP// /} ]] || bad "CG_SMP must list at least one CPU count"
[[ $WARMUP =~ ^[0-9]+$ ]] || bad "WARMUP must be an integer >= 0, got '$WARMUP'"
[[ $LINUX_DETERMINISTIC == 0 || $LINUX_DETERMINISTIC == 1 ]] || bad "LINUX_DETERMINISTIC must be 0 or 1, got '$LINUX_DETERMINISTIC'"
[[ $ICOUNT == off || $ICOUNT =~ ^[0-9]$ ]] || bad "ICOUNT must be off or a shift 0..9, got '$ICOUNT'"
[[ $PREEMPT == full || $PREEMPT == lazy ]] || bad "PREEMPT must be full or lazy (Linux 7 offers only these), got '$PREEMPT'"
if [[ $ARCH == aarch64 ]]; then
    [[ $PREEMPT == lazy ]] || bad "ARCH=aarch64 runs Debian's arm64 Linux, built without PREEMPT_DYNAMIC: its model is lazy, so PREEMPT must be lazy, got '$PREEMPT'"
    [[ "|$CONFIGS|$CONFIGS2|" != *preempt=* ]] || bad "ARCH=aarch64: Debian's arm64 Linux cannot change its preemption model (no PREEMPT_DYNAMIC); drop the preempt= configs"
fi
[[ $OURS == 0 || $OURS == 1 ]] || bad "OURS must be 0 or 1, got '$OURS'"
[[ $LINUX == 0 || $LINUX == 1 || $LINUX == kept ]] || bad "LINUX must be 0, 1 or kept, got '$LINUX'"
# LINUX=kept: the hackbench A/B against the Linux column kept in the
# repository (docs/results/linux/referee/README.md), otherwise as LINUX=0.
linux_kept=""
kept_columns() { # " ARCH=a SMP=n" for each kept column, or " none"
    local a k n=0
    for k in "$root"/docs/results/linux/referee/*/linux-*_smp*_seed1.log; do
        [[ -f $k ]] || continue
        # Only a folder named after its arch: the second set's column
        # (ARCH-features/) is the simulator's referee only
        # (scripts/test/referee-test.sh).
        a=${k##*/linux-}
        a=${a%_seed1.log}
        [[ ${k%/*} == */referee/"${a%%_smp*}" ]] || continue
        k=$a
        printf ' ARCH=%s SMP=%s' "${k%%_smp*}" "${k##*_smp}"
        n=1
    done
    ((n)) || printf ' none'
}
if [[ $LINUX == kept ]]; then
    [[ $WHAT == ab ]] || bad "LINUX=kept has only the hackbench A/B's Linux runs (docs/results/linux/referee/): WHAT must be ab, got '$WHAT'"
    linux_kept=$root/docs/results/linux/referee/$ARCH
    [[ -f $linux_kept/linux-${ARCH}_smp${SMP}_seed1.log ]] ||
        bad "LINUX=kept: no kept Linux column for ARCH=$ARCH SMP=$SMP (docs/results/linux/referee/ keeps:$(kept_columns))"
    [[ -f $linux_kept/linux-${ARCH}_smp${SMP}_seed$BOOT_SEED.log ]] ||
        bad "LINUX=kept: the kept $ARCH column has $(compgen -G "$linux_kept/linux-${ARCH}_smp${SMP}_seed*.log" | wc -l) boots (seeds from 1); BOOT_SEED=$BOOT_SEED has no Linux run"
    # Without WORKLOADS, the kept column's own workloads (its `compare:`
    # blocks, in order), so that ours and the simulator run every kept
    # row: the simulator runs hackbench -T apart from processes, and a
    # -T row of Linux's with no -T run beside it would be scored against
    # the process run (abtool's counterpart, for ours' unnamed mode).
    if [[ -z $workloads_given ]]; then
        kw=$(sed -n "s/^compare: .* of '\(.*\)', rotated order.*/\1/p" "$linux_kept/linux-${ARCH}_smp${SMP}_seed1.log" |
            awk '!seen[$0]++' | paste -sd'|')
        if [[ -n $kw ]]; then
            WORKLOADS=$kw
            echo "linux-compare: ab: LINUX=kept: the kept column's workloads: $WORKLOADS" >&2
        fi
    fi
    LINUX=0
fi
OURS_FEATURES=${OURS_FEATURES:-linux}
[[ $OURS_FEATURES == linux || $OURS_FEATURES == own ]] || bad "OURS_FEATURES must be linux or own, got '$OURS_FEATURES'"
# shellcheck source=scripts/lib/harness.sh
. "$root/scripts/lib/harness.sh"
# shellcheck source=scripts/linux-compare/determinism.sh
. "$here/linux-compare/determinism.sh"
ours_table=$(lcd_ours_table "$root/sched/src/features.rs")
[[ -n $ours_table ]] || bad "no feature table in $root/sched/src/features.rs"
if [[ $OURS == 1 ]]; then
    [[ -f $elf ]] || bad "our kernel $elf is not built (make kernel ARCH=$ARCH; or OURS=0 for Linux alone)"
    unknown=$(lcd_unknown_in "$ours_table" "$CONFIGS|$CONFIGS2" | tr '\n' ' ')
    [[ -z $unknown ]] || bad "configs name feature(s) our kernel has not: ${unknown% } (ours' table: sched/src/features.rs)"
fi
OURS_COST=${OURS_COST:-0}
[[ $OURS_COST == 0 || $OURS_COST == linux || $OURS_COST == both ]] || bad "OURS_COST must be 0, linux or both, got '$OURS_COST'"
[[ -z ${OURS_FLIPS:-} || $OURS_FLIPS =~ ^(0|[1-9][0-9]{0,5}|1000000)$ ]] || bad "OURS_FLIPS must be empty (off) or an integer in [0, 1000000] (hackbench -W), got '$OURS_FLIPS'"
[[ ${FULL:-0} == 0 || ${FULL:-0} == 1 ]] || bad "FULL must be 0 or 1, got '$FULL'"
[[ ${TRACE:-0} == 0 || ${TRACE:-0} == 1 || ${TRACE:-0} == 2 ]] || bad "TRACE must be 0, 1 or 2, got '$TRACE'"
[[ $SIM == 0 || $SIM == 1 ]] || bad "SIM must be 0 or 1, got '$SIM'"
[[ $SIM_SEEDS =~ ^[1-9][0-9]*$ ]] || bad "SIM_SEEDS must be a positive integer, got '$SIM_SEEDS'"
[[ ${SIM_ABLATION:-0} == 0 || ${SIM_ABLATION:-0} == 1 ]] || bad "SIM_ABLATION must be 0 or 1, got '$SIM_ABLATION'"
for w in $WHAT; do [[ $w == ab || $w == conformance || $w == latency || $w == costs || $w == topology || $w == cgroup || $w == smt ]] || bad "unknown part '$w' (ab, conformance, latency, costs, topology, cgroup, smt)"; done
mode="reproducible (-icount shift=$ICOUNT,sleep=off)"
[[ $ICOUNT == off ]] && mode="multi-threaded TCG, wall clock (not reproducible)"
# Every boot gets ICOUNT as it is here: scripts/boot/qemu.sh (h_qemu) turns
# a shift into -icount shift=N,sleep=off and `off` into none.
# With threads, the parts' directories and tables get a -tT suffix (ab-t2,
# latency-t2.txt, ...): they do not replace the flat machine's.
tsfx=""
[[ $smp_threads != 1 ]] && tsfx=-t$smp_threads
ab_name0=ab$tsfx
target_dir=${CARGO_TARGET_DIR:-$root/target}
abtool() { (cd "$root" && cargo run -q -p abtool --release -- "$@"); }

# --- Linux: packages (cached), initramfs ------------------------------------
# The packages ($x) only go into initramfs.sh, for a Linux boot. With
# LINUX=0 the parts that honour it (ab, cgroup, smt) boot no Linux and
# build no initramfs, so nothing is fetched unless another part (which
# boots Linux whatever LINUX says) is asked for too.
fetch=$LINUX
for w in $WHAT; do [[ $w == ab || $w == cgroup || $w == smt ]] || fetch=1; done
x=""
if [[ $fetch == 1 ]]; then
    x=$(LINUX_SUITE=$LINUX_SUITE LINUX_ARCH=$darch "$here/linux-compare/fetch.sh" "$OUT" | tail -1)
fi
ldir0=$OUT/$LINUX_SUITE
[[ $ARCH == aarch64 ]] && ldir0+=-arm64
mkdir -p "$OUT/logs"
# Under -icount, Debian 12's 6.1 never brings its second CPU up (the AP spins
# in wait_for_master_cpu): it runs on one CPU there; 7.x brings all up.
one=""
[[ $LINUX_SUITE == bookworm && $ICOUNT != off ]] && one=maxcpus=1

# Linux's command for one of our shell's workloads ('' when there is none).
linux_cmd() {
    local w=$1
    case $w in
        *' => '*) echo "${w#* => }" ;;
        hackbench\ * | hackbench) echo "$w" ;;
        schbench* | pgbench* | spin\ *) echo "lcbench $w" ;;
        'perfpipe -s -l '*) echo "piperr ${w##* } 0 0" ;;
        'perfpipe -x -l '*) echo "piperr ${w##* } 0 $((smp_n - 1))" ;;
        'perfpipe -l '*) echo "perf bench sched pipe -l ${w##* }" ;;
        cyclictest*' -L '*) # under load: our -L GROUPS, rt-tests' usual shape
            local g=${w##* -L }
            g=${g%% *}
            echo "hackbench -T -p -g $g -l 1000000 >/dev/null 2>&1 & b=\$!; $(linux_cmd "${w/ -L $g/}"); kill \$b; wait" ;;
        cyclictest*) # rt-tests takes -t/-l's values attached (optional arguments)
            echo "$w -q" | sed -E 's/ -([tilpa]) ([0-9]+)/ -\1\2/g' ;;
        wakelat*) echo "lcbench $w" ;;
        *) echo "" ;;
    esac
}
label_of() { echo "${1%% => *}"; }

boot() { # kernel log [qemu args...] -- cmdline
    local kernel=$1 log=$2
    shift 2
    local extra=()
    while [[ $1 != -- ]]; do extra+=("$1"); shift; done
    shift
    local t0=$SECONDS
    # boot_cpu: boot_linux's (lc_det_args; empty: h_qemu's default). Ended
    # after BOOT_SILENCE s without output or BOOT_TIMEOUT s in all (h_run's
    # cap is its limit times H_CAP); `|| true` also keeps set -e out of it.
    H_CAP=$boot_cap h_run "$log" "$BOOT_SILENCE" -- \
        env SMP="$SMP" ACCEL=tcg CPU="${boot_cpu:-}" ICOUNT="$ICOUNT" QEMU_EXTRA="${extra[*]}" \
        "$root/scripts/boot/qemu.sh" "$ARCH" "$kernel" "$@" </dev/null || true
    echo "linux-compare: $(basename "$log" .log) booted and ran in $((SECONDS - t0)) s of host time" >&2
    if h_ended; then echo "warning: linux-compare: $(basename "$log" .log) was ended: $H_WHY_ENDED (BOOT_SILENCE, BOOT_TIMEOUT)" >&2; fi
}
boot_linux() { # log cmdline-words...   (the initramfs of $ldir)
    local log=$1
    shift
    local w seed=1
    for w in "$@"; do if [[ $w == lc.seed=* ]]; then seed=${w#lc.seed=}; fi; done
    lc_det_args "$LINUX_DETERMINISTIC" "$ARCH" "$seed"
    local boot_cpu=$LC_DET_CPU
    boot "$ldir/vmlinuz" "$log" -initrd "$ldir/initramfs.cpio.gz" "${LC_DET_QEMU[@]}" -- "console=$console" quiet "preempt=$PREEMPT" $one "${LC_DET_WORDS[@]}" "$@"
    local cpus
    cpus=$(tr -d '\r' <"$log" | sed -n 's/^lc: cpus online \([^ ]*\).*/\1/p')
    [[ -n $cpus ]] || { echo "error: linux-compare: Linux did not reach its init; see $log" >&2; return 1; }
    grep -q '^lc: done' <(tr -d '\r' <"$log") || echo "warning: linux-compare: Linux did not finish; see $log" >&2
    echo "linux-compare: Linux CPUs online $cpus" >&2
}

# Ours' base settings (OURS_FEATURES=linux): the flags of ours' table whose
# default differs from the Linux boot's (its log's `lc: features` line),
# into ours_set (space-separated NAME / NO_NAME; empty: none differs).
# Prints the visible line once per part. Fails when the log has no line.
ours_set=""
ours_base() { # linux-log part
    local log=$1 part=$2 d
    ours_set=""
    [[ $OURS_FEATURES == linux ]] || { echo "linux-compare: $part: OURS_FEATURES=own: ours keeps its own default features" >&2; return 0; }
    d=$(lcd_log_diff "$ours_table" "$log") || { echo "error: linux-compare: $part: no 'lc: features' line in $log: ours cannot take Linux's defaults (OURS_FEATURES=own runs ours with its own)" >&2; return 1; }
    ours_set=$(sed -n 's/^set: *//p' <<<"$d")
    echo "linux-compare: $part: ours takes Linux's defaults: ${ours_set:-(none differ)}" >&2
    echo "linux-compare: $part: Linux's flags ours has not (not applied):$(sed -n 's/^linux-only://p' <<<"$d")" >&2
    echo "linux-compare: $part: ours' flags Linux has not (ours' default):$(sed -n 's/^ours-only://p' <<<"$d")" >&2
}
# Ours' kernel refuses a run= script longer than 1000 bytes
# (kernel/src/cmdline.rs, RUN_MAX) and would then wait at its prompt until
# BOOT_TIMEOUT: say so before booting (the base settings lengthen it).
ours_run_fits() { # script part
    ((${#1} <= 1000)) && return 0
    echo "error: linux-compare: $2: ours' run= script is ${#1} bytes, over the kernel's 1000 (fewer configs or workloads; OURS_FEATURES=own drops the base settings)" >&2
    return 1
}
ours_set_script() { # the run= prefix that applies ours_set
    local s out=""
    for s in $ours_set; do out+="features $s; "; done
    echo "$out"
}

# --- ab ------------------------------------------------------------------------
plan_and_script() { # [CHARGE] writes $ldir/plan.sh; prints our run= script
    # (CHARGE: `hackbench -C CHARGE` for ours' hackbench workloads)
    local charge=${1:-} cfgs wls w c k copts="" script="" block=0 letters=ABCDEFGHIJKLMNOPQRSTUVWXYZ
    : >"$ldir/plan.sh"
    : >"$ldir/ours-relabel.tsv"
    for set in 1 2; do
        if [[ $set == 1 ]]; then cfgs=$CONFIGS wls=$WORKLOADS; else cfgs=$CONFIGS2 wls=$WORKLOADS2; fi
        [[ -n $cfgs && -n $wls ]] || continue
        IFS='|' read -ra cl <<<"$cfgs"
        IFS='|' read -ra wl <<<"$wls"
        # Ours' configs carry the base (ours_set: Linux's defaults where
        # ours' differ), and its run lines are relabelled after the boot.
        copts=""
        for c in "${cl[@]}"; do copts+=" -c '$(lcd_merge "$ours_set" "${c:-default}")'"; done
        for w in "${wl[@]}"; do
            local cmd label
            cmd=$(linux_cmd "$w")
            label=$(label_of "$w")
            [[ -n $cmd ]] || bad "no Linux command for workload '$w' (give one as 'LABEL => COMMAND')"
            printf "lc_compare %d %d '%s' '%s' '%s'\n" "$RUNS" "$WARMUP" "$label" "${cmd//\'/\'\\\'\'}" "$cfgs" >>"$ldir/plan.sh"
            # Tracing Linux: ours counts the same per-role switches and
            # receiver wakeups (hackbench -R; off otherwise, as it costs
            # guest time per message).
            local ow=$w
            [[ ${TRACE:-0} != 0 && $w == hackbench* ]] && ow+=" -R"
            [[ -n $charge && $w == hackbench* ]] && ow+=" -C $charge"
            [[ -n ${OURS_FLIPS:-} && $w == hackbench* ]] && ow+=" -W $OURS_FLIPS"
            [[ $w == *' => '* ]] && continue
            script+="compare -n $RUNS -w $WARMUP$copts -- $ow; "
            block=$((block + 1))
            for k in "${!cl[@]}"; do
                c=${cl[k]:-default}
                printf '%s\t%s\t%s\t%s\n' "$block" "${letters:k:1}" "$(lcd_merge "$ours_set" "$c")" "$c" >>"$ldir/ours-relabel.tsv"
            done
        done
    done
    echo "${script}poweroff"
}

part_ab() {
    local dir=$OUT/${AB_NAME:-$ab_name0} b script cscript="" ours_labels=()
    # Ours' runs per boot seed: label (the log's ARCH part, abtool's
    # column) and script; the charged one is ARCH-clinux. Computed again
    # once Linux's defaults are known (ours_set; the plan is the same).
    ours_scripts() {
        script=$(plan_and_script)
        [[ $OURS_COST == linux ]] && script=""
        cscript=""
        [[ $OURS_COST != 0 ]] && cscript=$(plan_and_script linux)
        if [[ $OURS_COST == both && $cscript == "$script" ]]; then
            echo "linux-compare: ab: OURS_COST=both: no hackbench workload to charge; ours runs once a seed, uncharged" >&2
            cscript=""
        fi
        return 0
    }
    ours_set=""
    ours_scripts
    [[ -n $script ]] && ours_labels+=("$ARCH")
    [[ -n $cscript ]] && ours_labels+=("$ARCH-clinux")
    if [[ ${REPORT_ONLY:-0} != 1 ]]; then
        if [[ $LINUX == 1 ]]; then
            "$here/linux-compare/initramfs.sh" "$x" "$ldir" "$ldir/plan.sh" >/dev/null
            if [[ $BOOT_SEED == 1 ]]; then
                rm -rf "$dir/logs"
            else
                for ((b = BOOT_SEED; b < BOOT_SEED + BOOTS; b++)); do rm -f "$dir/logs/"*"_smp${smp_n}_seed$b.log"; done
            fi
        else
            local n
            if [[ -n $linux_kept ]]; then
                mkdir -p "$dir/logs"
                rm -f "$dir/logs/linux-${ARCH}_smp"*.log
                cp "$linux_kept/linux-${ARCH}_smp${smp_n}_seed"*.log "$dir/logs/"
                # The second set's column (ARCH-features/), when this run
                # has a second set: each boot's transcript after the same
                # seed's hackbench one (abtool reads a workload's runs
                # wherever they are in a seed's log).
                if [[ -n $CONFIGS2 && -n $WORKLOADS2 ]]; then
                    local f
                    for f in "$linux_kept-features/linux-${ARCH}_smp${smp_n}_seed"*.log; do
                        [[ -f $f ]] && cat "$f" >>"$dir/logs/${f##*/}"
                    done
                fi
            fi
            [[ -f $dir/logs/linux-${ARCH}_smp${smp_n}_seed$BOOT_SEED.log ]] ||
                bad "LINUX=0 needs the Linux logs of an earlier run: no $dir/logs/linux-${ARCH}_smp${smp_n}_seed$BOOT_SEED.log"
            n=$(compgen -G "$dir/logs/linux-${ARCH}_smp${smp_n}_seed*.log" | wc -l)
            [[ $n == "$BOOTS" ]] || echo "linux-compare: ab: LINUX=0: $n Linux boot(s) under $dir/logs, ours $BOOTS" >&2
            rm -f "$dir/logs/${ARCH}_smp"*.log "$dir/logs/${ARCH}-clinux_smp"*.log
        fi
        mkdir -p "$dir/logs"
        echo "linux-compare: ab: $BOOTS boot(s) x SMP=$SMP, $mode, Linux preempt=$PREEMPT" >&2
        for ((b = BOOT_SEED; b < BOOT_SEED + BOOTS; b++)); do
            [[ $LINUX == 0 ]] || boot_linux "$dir/logs/linux-${ARCH}_smp${smp_n}_seed$b.log" lc.mode=ab "lc.seed=$b" "lc.trace=${TRACE:-0}"
            [[ $OURS == 1 ]] || continue
            if [[ $b == "$BOOT_SEED" ]]; then
                ours_base "$dir/logs/linux-${ARCH}_smp${smp_n}_seed$BOOT_SEED.log" ab || return 1
                ours_scripts 2>/dev/null
                ours_run_fits "$script" ab && ours_run_fits "$cscript" ab || return 1
            fi
            local log
            for log in "${ARCH}:$script" "${ARCH}-clinux:$cscript"; do
                [[ -n ${log#*:} ]] || continue
                boot "$elf" "$dir/logs/${log%%:*}_smp${smp_n}_seed$b.log" -- "seed=$b preempt=$PREEMPT run=${log#*:}"
                lcd_relabel "$dir/logs/${log%%:*}_smp${smp_n}_seed$b.log" "$ldir/ours-relabel.tsv"
            done
        done
    fi
    local others=() sims=()
    [[ $OURS == 1 ]] && others+=("${ours_labels[@]}")
    if [[ $SIM == 1 && ( ( -n $CONFIGS && -n $WORKLOADS ) || ( -n $CONFIGS2 && -n $WORKLOADS2 ) ) ]]; then
        IFS='|' read -ra sims <<<"$WORKLOADS"
        IFS='|' read -ra sims2 <<<"$WORKLOADS2"
        rm -f "$dir"/logs/sim-*.log
        (cd "$root" && cargo build -q -p sim --release)
        # The simulator runs sched, whose defaults are ours': it starts from
        # the Linux boot's default features as ours does (OURS_FEATURES).
        ours_base "$dir/logs/linux-${ARCH}_smp${smp_n}_seed$BOOT_SEED.log" "ab (simulator)" || return 1
        local append=0
        if [[ -n $CONFIGS && -n $WORKLOADS ]]; then
            ARCH=$ARCH SIM_BASE=$ours_set PREEMPT=$PREEMPT SIM_FLIPS=${OURS_FLIPS:-} "$here/linux-compare/sim-rows.sh" "$target_dir/release/sim" "$dir/logs" "$smp_n" "$SIM_SEEDS" "$CONFIGS" "${sims[@]}"
            append=1
        fi
        # The second set: the workloads sim-rows.sh has a shape for
        # (lcbench's schbench and pgbench).
        if [[ -n $CONFIGS2 && -n $WORKLOADS2 ]]; then
            ARCH=$ARCH SIM_APPEND=$append SIM_BASE=$ours_set PREEMPT=$PREEMPT "$here/linux-compare/sim-rows.sh" "$target_dir/release/sim" "$dir/logs" "$smp_n" "$SIM_SEEDS" "$CONFIGS2" "${sims2[@]}"
        fi
        compgen -G "$dir/logs/sim-*.log" >/dev/null && others+=("sim-qemu$smp_n")
        if [[ ${SIM_ABLATION:-0} == 1 && -n $CONFIGS && -n $WORKLOADS ]]; then
            SIM_BASE=$ours_set ARCH=$ARCH PREEMPT=$PREEMPT SIM_FLIPS=${OURS_FLIPS:-} "$here/linux-compare/sim-ablation.sh" "$target_dir/release/sim" "$dir/logs" "$dir/ablation" "$smp_n" "$SIM_SEEDS" "$CONFIGS" "${sims[@]}" >/dev/null
            echo "== ab: the simulator's ablation: $dir/ablation/ablation.txt"
        fi
    fi
    abtool --out "$dir" "$dir"/logs/*.log >/dev/null
    if [[ ${TRACE:-0} != 0 ]]; then
        "$here/linux-compare/trace-summary.py" "$dir"/logs/linux-*.log >"$dir/trace.txt"
        echo "== ab: Linux's trace counters per config: $dir/trace.txt"
    fi
    echo "== ab: mmtests tables (both kernels, same table code): $dir/tables.txt"
    if [[ ${#others[@]} -gt 0 ]]; then
        abtool --versus "$dir/samples.csv" "linux-$ARCH" "${others[@]}" | tee "$dir/versus.txt"
    else
        cat "$dir/tables.txt"
    fi
}

# --- conformance -----------------------------------------------------------
# Each row: NAME | Linux command | our command | what is read | reference | bound
# [| base row]. The reference is the ideal value, or `linux` (ours against
# Linux's figure), or `<=linux` (ours at most Linux's); a base row's figure
# is subtracted first, each kernel its own (e.g. the sleeper's latency with
# no hogs). docs/results/linux.md says why each bound is what it is; the
# bounds were fixed before the runs they judge.
conf_rows_all() {
    local d=$CONF_MS
    local wl="wakelat -d $d -c 0 -p 2000"
    local cyc="cyclictest -t1 -i500 -l1000 -p50 -q"
    # a fair sleeper (every 100 ms) beside a FIFO hog: how long an
    # interactive task such as the shell waits for the fair server
    local rth="wakelat -d 5000 -c 0 -n 1 -p 100000 -f 50"
    cat <<ROWS
nice0_vs_5|lcbench spin -d $d -c 0 0 5|spin -d $d -c 0 0 5|share 0|75.35|1.0
nice-10_0_5_19|lcbench spin -d $d -c 0 -10 0 5 19|spin -d $d -c 0 -10 0 5 19|share 0|87.42|1.0
nice-10_0_5_19:n0|lcbench spin -d $d -c 0 -10 0 5 19|spin -d $d -c 0 -10 0 5 19|share 1|9.38|1.0
nice-10_0_5_19:n5|lcbench spin -d $d -c 0 -10 0 5 19|spin -d $d -c 0 -10 0 5 19|share 2|3.07|0.5
nice-10_0_5_19:n19|lcbench spin -d $d -c 0 -10 0 5 19|spin -d $d -c 0 -10 0 5 19|share 3|0.14|0.2
mixed_0_0_3_-3|lcbench spin -d $d -c 0 0 0 3 -3|spin -d $d -c 0 0 0 3 -3|share 3|43.61|1.0
idle_vs_nice0|lcbench spin -d $d -c 0 idle 0|spin -d $d -c 0 idle 0|share 0|0.29|0.2
batch_vs_nice0|lcbench spin -d $d -c 0 batch:0 0|spin -d $d -c 0 batch:0 0|share 0|50.00|2.0
wake_alone:avg|lcbench $wl -n 0|$wl -n 0|lat_avg_us||
wake_alone:p50|lcbench $wl -n 0|$wl -n 0|lat_p50_us||
wake_alone:p99|lcbench $wl -n 0|$wl -n 0|lat_p99_us||
wake_normal_2hogs:avg|lcbench $wl -n 2|$wl -n 2|lat_avg_us|linux|175|wake_alone:avg
wake_normal_2hogs:p50|lcbench $wl -n 2|$wl -n 2|lat_p50_us|linux|175|wake_alone:p50
wake_normal_2hogs:p99|lcbench $wl -n 2|$wl -n 2|lat_p99_us|linux|175|wake_alone:p99
wake_batch_2hogs:avg|lcbench $wl -n 2 -P batch|$wl -n 2 -P batch|lat_avg_us|linux|175|wake_alone:avg
wake_batch_2hogs:p50|lcbench $wl -n 2 -P batch|$wl -n 2 -P batch|lat_p50_us|linux|175|wake_alone:p50
wake_batch_2hogs:p99|lcbench $wl -n 2 -P batch|$wl -n 2 -P batch|lat_p99_us|linux|175|wake_alone:p99
wake_slice100us_2hogs:avg|lcbench $wl -n 2 -s 100|$wl -n 2 -s 100|lat_avg_us|linux|175|wake_alone:avg
wake_slice100us_2hogs:p50|lcbench $wl -n 2 -s 100|$wl -n 2 -s 100|lat_p50_us|linux|175|wake_alone:p50
wake_slice100us_2hogs:p99|lcbench $wl -n 2 -s 100|$wl -n 2 -s 100|lat_p99_us|linux|175|wake_alone:p99
hog_pair_switches|lcbench spin -d $d -c 0 0 0|spin -d $d -c 0 0 0|switches||
hog_pair_switches:NO_RUN_TO_PARITY|lcbench spin -d $d -c 0 0 0|spin -d $d -c 0 0 0|switches||
duty_vs_hog|lcbench spin -d $d -c 0 duty:1000:3000 0|spin -d $d -c 0 duty:1000:3000 0|share 0|linux|2.0
duty_vs_hog:NO_PLACE_LAG|lcbench spin -d $d -c 0 duty:1000:3000 0|spin -d $d -c 0 duty:1000:3000 0|share 0|linux|1.0|duty_vs_hog
duty_vs_hog:NO_DELAY_DEQUEUE|lcbench spin -d $d -c 0 duty:1000:3000 0|spin -d $d -c 0 duty:1000:3000 0|share 0|linux|1.0|duty_vs_hog
fair_beside_fifo_hog_5s|lcbench spin -d 5000 -c 0 0 fifo:50||share 0|5.00|1.0
sleeper_beside_fifo_hog:avg|lcbench $rth|$rth|lat_avg_us|linux|100000
sleeper_beside_fifo_hog:p50|lcbench $rth|$rth|lat_p50_us|linux|100000
sleeper_beside_fifo_hog:max|lcbench $rth|$rth|lat_max_us|linux|100000
cyclictest_load:avg|hackbench -T -p -g 1 -l 1000000 >/dev/null 2>&1 & b=\$!; $cyc; kill \$b; wait|cyclictest -t 1 -i 500 -l 1000 -p 50 -L 1|cyc_avg_us|<=linux|
cyclictest_load:max|hackbench -T -p -g 1 -l 1000000 >/dev/null 2>&1 & b=\$!; $cyc; kill \$b; wait|cyclictest -t 1 -i 500 -l 1000 -p 50 -L 1|cyc_max_us|<=linux|
ROWS
    # SCHED_DEADLINE (dl_*; shapes for 4 CPUs, run only at CONF_SMP=4).
    # Admission: 16 tasks of one shape, made SCHED_DEADLINE one after the
    # other until the first refusal (Linux: lcbench's children; ours: a
    # background spin job's threads through chrt -d %1): how many were
    # admitted and the refusal's errno. The affinity rules: chrt -d of a
    # thread pinned to CPU 0, taskset of a deadline thread to CPU 0. Then
    # periodic deadline tasks under admitted load for 3 s. docs/results/
    # docs/results/linux/deadline.md ("SCHED_DEADLINE at 4 CPUs") says why each bound is what it is.
    local s16="0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0" r
    for r in 50 25 90; do
        local lc="lcbench dl admit -r ${r}000 -p 100000 -n 16"
        local oc="spin -d 300 $s16 &; chrt -d -T ${r}000000 -D 100000000 -P 100000000 0 %1; wait %1"
        echo "dl_admit_${r}of100|$lc|$oc|dl_admitted|linux|0"
        echo "dl_admit_${r}of100:errno|$lc|$oc|dl_errno|linux|"
    done
    local dlo="-d -T 10000000 -D 100000000 -P 100000000 0 %1"
    cat <<ROWS
dl_pinned:errno|lcbench dl pinned -r 10000 -p 100000|spin -d 200 -c 0 0 &; chrt $dlo; wait %1|dl_errno|linux|
dl_narrow:admitted|lcbench dl narrow -r 10000 -p 100000|spin -d 200 0 &; chrt $dlo; taskset -p 1 %1; wait %1|dl_admitted|linux|0
dl_narrow:errno|lcbench dl narrow -r 10000 -p 100000|spin -d 200 0 &; chrt $dlo; taskset -p 1 %1; wait %1|dl_errno|linux|
ROWS
    # NAME|options|jobs (tasks x 30 periods). The two-task shapes (added
    # after the first runs, same bounds) keep at most two vCPUs busy: with
    # more, QEMU's round-robin turns under -icount add up to a cycle of
    # turns to a job (docs/results/linux.md); 2x10of50 is constrained (D <
    # P), 2x10of100 implicit (D = P).
    local shape name a jobs k
    for shape in "6x10of50|-n 6 -r 20000 -D 50000 -p 100000 -w 10000 -d 3000|180" \
        "7x30of100|-n 7 -r 45000 -p 100000 -w 30000 -d 3000|210" \
        "2x10of50|-n 2 -r 20000 -D 50000 -p 100000 -w 10000 -d 3000|60" \
        "2x10of100|-n 2 -r 20000 -p 100000 -w 10000 -d 3000|60"; do
        IFS='|' read -r name a jobs <<<"$shape"
        echo "dl_periodic_$name:jobs|lcbench dl periodic $a|dlperiodic $a|dl_jobs|$jobs|0"
        echo "dl_periodic_$name:missed|lcbench dl periodic $a|dlperiodic $a|dl_missed|0|0"
        for k in avg p50 p99 max; do
            echo "dl_periodic_$name:$k|lcbench dl periodic $a|dlperiodic $a|resp_${k}_us|linux|4000"
        done
    done
}

# The rows this run makes: the deadline rows (dl_*) only at CONF_SMP=4
# (their admission counts and loads are for 4 CPUs), and with CONF_ONLY
# only the rows whose name matches that extended regular expression.
conf_rows() {
    conf_rows_all | awk -F'|' -v smp="$CONF_SMP" -v only="${CONF_ONLY:-}" \
        '($1 !~ /^dl_/ || smp == 4) && (only == "" || $1 ~ only)'
}

part_conformance() {
    local dir=$OUT/conformance b
    local llogs=("$dir/linux.log") ologs=("$dir/ours.log")
    if [[ $CONF_BOOTS -gt 1 ]]; then
        llogs=() ologs=()
        for ((b = 1; b <= CONF_BOOTS; b++)); do llogs+=("$dir/linux-seed$b.log") ologs+=("$dir/ours-seed$b.log"); done
    fi
    mkdir -p "$dir"
    [[ -n $(conf_rows) ]] || bad "conformance: no rows (CONF_ONLY='${CONF_ONLY:-}', CONF_SMP=$CONF_SMP; the dl_* rows need CONF_SMP=4)"
    [[ $CONF_SMP == 4 ]] || echo "linux-compare: conformance: the SCHED_DEADLINE rows (dl_*) are for CONF_SMP=4; left out at $CONF_SMP" >&2
    if [[ ${REPORT_ONLY:-0} != 1 ]]; then
        : >"$ldir/plan.sh"
        local ours="" name cmd ourcmd cfg lpause="" opause="" oruns=()
        declare -A done_l=() done_o=()
        # Several boots: a pause from the boot's seed before every run (ours'
        # is a `yield` of 1..1000 loops, drawn per boot below as __Y__).
        [[ $CONF_BOOTS -gt 1 ]] && lpause="lc_rand; usleep \$((lc_rng % 4000)); " opause="yield -l __Y__; "
        # Rows that read the same run share it (one run per config and command).
        while IFS='|' read -r name cmd ourcmd _; do
            name=${name%%:[a-z]*} # (:avg etc. only tell rows apart)
            cfg=default
            [[ $name == *:[A-Z]* ]] && cfg=${name##*:}
            if [[ -z ${done_l[$cfg|$cmd]:-} ]]; then
                done_l[$cfg|$cmd]=1
                printf "echo 'conf %s|%s'; lc_restore; lc_apply %s; %s%s; lc_restore\n" "$cfg" "$cmd" "$cfg" "$lpause" "$cmd" >>"$ldir/plan.sh"
            fi
            if [[ -n $ourcmd && -z ${done_o[$cfg|$ourcmd]:-} ]]; then
                done_o[$cfg|$ourcmd]=1
                oruns+=("$cfg|$ourcmd")
            fi
        done < <(conf_rows)
        "$here/linux-compare/initramfs.sh" "$x" "$ldir" "$ldir/plan.sh" >/dev/null
        for ((b = 1; b <= CONF_BOOTS; b++)); do
            SMP=$CONF_SMP boot_linux "${llogs[b - 1]}" lc.mode=ab "lc.seed=$b"
            if [[ $OURS == 1 && $b == 1 ]]; then
                # Ours' script, once Linux's defaults are known: they first
                # (a config's flag on top, then back to its base value).
                ours_base "${llogs[0]}" conformance || return 1
                ours=$(ours_set_script)
                local r back x
                for r in "${oruns[@]}"; do
                    cfg=${r%%|*} ourcmd=${r#*|}
                    if [[ $cfg == default ]]; then ours+="$opause$ourcmd; "
                    else
                        back=$(lcd_restore "$ours_table" "$ours_set" "$cfg")
                        ours+="features $cfg; $opause$ourcmd; "
                        for x in $back; do ours+="features $x; "; done
                    fi
                done
            fi
            if [[ $OURS == 1 ]]; then
                # (rows are told apart by order: the k-th workload run is the
                # k-th distinct (config, command) of the rows)
                local script=$ours rng=$((b * 2654435761 % 2147483647 + 1))
                while [[ $script == *__Y__* ]]; do
                    rng=$((rng * 48271 % 2147483647))
                    script=${script/__Y__/$((1 + rng % 1000))}
                done
                ours_run_fits "${script}poweroff" conformance || return 1
                SMP=$CONF_SMP boot "$elf" "${ologs[b - 1]}" -- "seed=$b preempt=$PREEMPT run=${script}poweroff"
            fi
        done
    fi
    echo "== conformance: SMP=$CONF_SMP, $mode, both preempt=$PREEMPT, ${CONF_MS} ms per run, $CONF_BOOTS boot(s) of each" | tee "$OUT/conformance.txt"
    for ((b = 1; b <= CONF_BOOTS; b++)); do
        [[ $CONF_BOOTS -gt 1 ]] && echo "== boot $b (seed $b)" | tee -a "$OUT/conformance.txt"
        "$here/linux-compare/conformance.py" "${llogs[b - 1]}" "${ologs[b - 1]}" < <(conf_rows) | tee -a "$OUT/conformance.txt"
    done
    if [[ $CONF_BOOTS -gt 1 ]]; then
        "$here/linux-compare/conformance.py" "${llogs[@]}" -- "${ologs[@]}" < <(conf_rows) | tee -a "$OUT/conformance.txt"
    fi
}

# --- cgroup (task groups: cpu.weight shares) ----------------------------------
# Each row: NAME|SMP|CPU|WEIGHT_A|WEIGHT_B|TASKS_A|TASKS_B|IDEAL_A|BOUND: at
# SMP CPUs, TASKS_A nice-0 spinners in group A and TASKS_B in group B (both
# children of the root), all pinned to CPU (`-`: not pinned), for CG_MS ms;
# the figure is A's part of the two groups' CPU time (%), judged against
# IDEAL_A +- BOUND (points). The ideal: the weights' ratio, capped by what
# A's spinners can use (one CPU each): not pinned on 4 CPUs, A's one spinner
# can have at most one CPU, a quarter, whatever the weights, and B's ten
# the other three. docs/results/linux/groups.md ("Task groups: cpu.weight shares")
# says how the bounds were chosen: from Linux's boots, before ours ran.
cg_rows() {
    cat <<ROWS
eq_1cpu|1|0|100|100|1|10|50.00|1.0
w1to3_1cpu|1|0|100|300|1|10|25.00|1.0
eq_4cpu_cpu0|4|0|100|100|1|10|50.00|1.0
w1to3_4cpu_cpu0|4|0|100|300|1|10|25.00|1.0
eq_4cpu_free|4|-|100|100|1|10|25.00|1.5
w1to3_4cpu_free|4|-|100|300|1|10|25.00|3.0
ROWS
}

# Ours' script for a row: the groups, a pause, the spinners in the
# background, each attached to its group by thread id, then the report. The
# spinners are asleep until 2 ticks + 1 ms after the spawn (spin.rs), so the
# attaches land before they run. Thread ids: a fresh boot's first spawned
# thread is 9; `yield` takes 9 and 10, the background job's leader 11, the
# spinners 12 on (checked: the job prints `[1] LEADER (threads FIRST-LAST)`,
# and cgroup.py refuses a log where that is not 12-...).
CG_FIRST_TID=12
ours_cg_script() { # ROW-fields... PAUSE
    local cpu=$2 wa=$3 wb=$4 na=$5 nb=$6 y=$7 s i n=$(($5 + $6)) pin=""
    [[ $cpu == - ]] || pin="-c $cpu "
    s="cgroup create A; cgroup create B; cgroup weight A $wa; cgroup weight B $wb; yield -l $y; spin -d $CG_MS $pin"
    for ((i = 0; i < n; i++)); do s+="0 "; done
    s+="&; "
    for ((i = 0; i < n; i++)); do
        if ((i < na)); then s+="cgroup attach A $((CG_FIRST_TID + i)); "; else s+="cgroup attach B $((CG_FIRST_TID + i)); "; fi
    done
    echo "${s}cgroup ls; jobs -l; wait %1; cgroup ls; poweroff"
}

# Boots ours in the background and stops it early when the kernel refuses
# the run= script (it then waits at its prompt: a kernel without `cgroup`
# says "ignoring 'run=': ... unknown command 'cgroup'"). Returns 3 then.
boot_ours_watch() { # log smp cmdline
    local log=$1 smp=$2 cmd=$3 pid t0=$SECONDS
    SMP=$smp ACCEL=tcg ICOUNT="$ICOUNT" timeout -k 5 "$BOOT_TIMEOUT" \
        "$root/scripts/boot/qemu.sh" "$ARCH" "$elf" "$cmd" </dev/null >"$log" 2>&1 &
    pid=$!
    local H_CAP=$boot_cap
    h_watch_init "$log" "$BOOT_SILENCE" # the silence limit, as boot()'s
    while kill -0 "$pid" 2>/dev/null; do
        if grep -q "ignoring 'run='" "$log" 2>/dev/null; then
            kill -TERM "$pid" 2>/dev/null
            wait "$pid" 2>/dev/null
            return 3
        fi
        if h_watch_expired; then
            h_end_run "$pid"
            echo "warning: linux-compare: $(basename "$log" .log) was ended: $H_WHY_ENDED (BOOT_SILENCE)" >&2
            break
        fi
        sleep 2
    done
    wait "$pid" 2>/dev/null
    echo "linux-compare: $(basename "$log" .log) booted and ran in $((SECONDS - t0)) s of host time" >&2
    return 0
}

part_cgroup() {
    local dir=$OUT/cgroup b n row name smp cpu wa wb na nb rc reason
    local skip=$dir/ours-skipped.txt
    mkdir -p "$dir"
    if [[ ${REPORT_ONLY:-0} != 1 ]]; then
        if [[ $LINUX == 1 ]]; then
            rm -f "$dir"/*.log
        else
            for n in $CG_SMP; do
                for ((b = 1; b <= CG_BOOTS; b++)); do
                    [[ -f $dir/linux-smp$n-seed$b.log ]] || bad "LINUX=0 needs the Linux logs of an earlier run: no $dir/linux-smp$n-seed$b.log"
                done
            done
            rm -f "$dir"/ours-*.log
        fi
        rm -f "$skip"
        : >"$ldir/plan.sh"
        while IFS='|' read -r name smp cpu wa wb na nb _; do
            printf "lc_cgroup %s '%s' %s '%s' %s %s %s %s\n" "$smp" "$name" "$CG_MS" "$cpu" "$wa" "$wb" "$na" "$nb" >>"$ldir/plan.sh"
        done < <(cg_rows)
        [[ $LINUX == 0 ]] || "$here/linux-compare/initramfs.sh" "$x" "$ldir" "$ldir/plan.sh" >/dev/null
        local ours_ok=$OURS
        for n in $CG_SMP; do
            for ((b = 1; b <= CG_BOOTS; b++)); do
                # Ours first (seconds): a kernel without `cgroup` is found
                # before the long Linux boot.
                if [[ $ours_ok == 1 ]]; then
                    local rng=$((b * 2654435761 % 2147483647 + 1))
                    while IFS='|' read -r name smp cpu wa wb na nb _; do
                        [[ $smp == "$n" ]] || continue
                        rng=$((rng * 48271 % 2147483647))
                        local log=$dir/ours-smp$n-$name-seed$b.log
                        rc=0
                        boot_ours_watch "$log" "$n" "seed=$b preempt=$PREEMPT run=$(ours_cg_script "$name" "$cpu" "$wa" "$wb" "$na" "$nb" $((1 + rng % 1000)))" || rc=$?
                        if [[ $rc == 3 ]]; then
                            reason=$(tr -d '\r' <"$log" | grep -m1 "ignoring 'run='" | sed 's/.*ignoring/ignoring/')
                            echo "our kernel ($elf) refused the cgroup script: $reason" >"$skip"
                            echo "linux-compare: cgroup: OURS' SIDE SKIPPED: our kernel refused the cgroup script ($reason); ours' side needs the shell's 'cgroup create NAME', 'cgroup weight NAME W', 'cgroup attach NAME PID' and 'cgroup ls'" >&2
                            rm -f "$dir"/ours-*.log
                            ours_ok=0
                            break
                        fi
                    done < <(cg_rows)
                fi
                [[ $LINUX == 0 ]] || SMP=$n boot_linux "$dir/linux-smp$n-seed$b.log" lc.mode=ab "lc.seed=$b" || true
            done
        done
        [[ $OURS == 1 ]] || echo "OURS=0: ours not run" >"$skip"
    fi
    {
        echo "== cgroup: task groups A and B (cgroup v2 cpu.weight; ours: cgroup weight), $mode, both preempt=$PREEMPT, ${CG_MS} ms per run, CPU counts $CG_SMP, $CG_BOOTS boot(s) of each"
        [[ -f $skip ]] && echo "ours: not run: $(cat "$skip")"
        "$here/linux-compare/cgroup.py" "$dir" < <(cg_rows)
    } | tee "$OUT/cgroup.txt"
}

# --- latency (cyclictest, pipe round trips) ------------------------------------
part_latency() {
    local dir=$OUT/latency$tsfx
    mkdir -p "$dir"
    if [[ ${REPORT_ONLY:-0} != 1 ]]; then
        "$here/linux-compare/initramfs.sh" "$x" "$ldir" >/dev/null
        boot_linux "$dir/linux.log" lc.mode=latency "lc.reps=$REPS" "lc.loops=$LOOPS_PIPE"
        local s="" r
        for ((r = 1; r <= REPS; r++)); do
            s+="cyclictest -t 1 -i 500 -l 1000 -p 50; perfpipe -s -l $LOOPS_PIPE; perfpipe -x -l $LOOPS_PIPE; "
        done
        for ((r = 1; r <= REPS; r++)); do s+="hackbench -p -g 2 -l 100; "; done
        if [[ $OURS == 1 ]]; then
            ours_base "$dir/linux.log" latency || return 1
            s="$(ours_set_script)${s}poweroff"
            ours_run_fits "$s" latency || return 1
            boot "$elf" "$dir/ours.log" -- "seed=1 preempt=$PREEMPT run=$s"
        fi
    fi
    stats() { awk 'NF {s += $1; q += $1 * $1; n++} END {if (n == 0) {print "- - 0"; exit} m = s / n; v = n > 1 ? (q - n * m * m) / (n - 1) : 0; if (v < 0) v = 0; printf "%.1f %.1f %d\n", m, sqrt(v), n}'; }
    cyc() { tr -d '\r' 2>/dev/null <"$1" | grep -E '^T: *0 ' | sed -E "s/.*Avg: *([0-9]+) +Max: *([0-9]+).*/\\$2/"; }
    linux_pipe() { tr -d '\r' <"$1" | grep -E "^round trip .*cpu 0 <-> cpu $2\\)" | awk '{print $3}'; }
    hb() { tr -d '\r' 2>/dev/null <"$1" | awk '/^Time: / {printf "%.1f\n", $2 * 1000}'; }
    ours_pipe() { tr -d '\r' 2>/dev/null <"$1" | awk -v want="--$2" '/^     round trip / {v = $3} /^placement:/ && index($0, want) {print v}'; }
    local L=$dir/linux.log O=$dir/ours.log
    {
        echo "== latency: SMP=$SMP, $mode, both preempt=$PREEMPT; mean +- stddev over $REPS repetitions in one boot"
        printf '%-34s %18s %18s %8s\n' metric ours linux ratio
        row() {
            local om os on lm ls ln ratio=-
            read -r om os on <<<"$(stats <<<"$2")"
            read -r lm ls ln <<<"$(stats <<<"$3")"
            [[ $on -gt 0 && $ln -gt 0 ]] && ratio=$(awk -v a="$om" -v b="$lm" 'BEGIN {if (b > 0) printf "%.2f", a / b; else printf "-"}')
            printf '%-34s %10s +- %-5s %10s +- %-5s %8s\n' "$1" "$om" "$os" "$lm" "$ls" "$ratio"
        }
        row "cyclictest avg latency (us)" "$(cyc "$O" 1)" "$(cyc "$L" 1)"
        row "cyclictest max latency (us)" "$(cyc "$O" 2)" "$(cyc "$L" 2)"
        row "pipe round trip, same CPU (ns)" "$(ours_pipe "$O" same)" "$(linux_pipe "$L" 0)"
        row "pipe round trip, cross CPU (ns)" "$(ours_pipe "$O" cross)" "$(linux_pipe "$L" 1)"
        row "hackbench -p -g 2 -l 100 (ms)" "$(hb "$O")" "$(hb "$L")"
        echo "linux: $(tr -d '\r' <"$L" | grep -m1 '^lc: Linux' | cut -c 5-60)"
    } | tee "$OUT/latency$tsfx.txt"
}

# --- costs (the simulator's qemu:N machine) ------------------------------------
part_costs() {
    local dir=$OUT/costs$tsfx
    mkdir -p "$dir"
    if [[ ${REPORT_ONLY:-0} != 1 ]]; then
        "$here/linux-compare/initramfs.sh" "$x" "$ldir" >/dev/null
        boot_linux "$dir/linux.log" lc.mode=costs "lc.iters=$COST_ITERS"
    fi
    {
        echo "== costs: lcbench costs -n $COST_ITERS in Linux, SMP=$SMP, $mode, preempt=$PREEMPT"
        echo "linux: $(tr -d '\r' <"$dir/linux.log" | grep -m1 '^lc: Linux' | cut -c 5-60)"
        tr -d '\r' <"$dir/linux.log" | sed -n 's/^cost: //p'
    } | tee "$OUT/costs$tsfx.txt"
    grep -q '^wake_scan_ns' "$OUT/costs$tsfx.txt" || { echo "error: linux-compare: lcbench costs did not finish; see $dir/linux.log" >&2; return 1; }
}

# --- topology (what Linux's scheduler sees of this machine) --------------------
part_topology() {
    local dir=$OUT/topology$tsfx
    mkdir -p "$dir"
    if [[ ${REPORT_ONLY:-0} != 1 ]]; then
        "$here/linux-compare/initramfs.sh" "$x" "$ldir" >/dev/null
        boot_linux "$dir/linux.log" lc.mode=topology
    fi
    {
        echo "== topology: Linux on SMP=$SMP, $mode"
        echo "linux: $(tr -d '\r' <"$dir/linux.log" | grep -m1 '^lc: Linux' | cut -c 5-60)"
        tr -d '\r' <"$dir/linux.log" | sed -n 's/^topo: //p'
    } | tee "$OUT/topology$tsfx.txt"
    grep -q 'shared_cpu_list' "$OUT/topology$tsfx.txt" || { echo "error: linux-compare: no cache lines; see $dir/linux.log" >&2; return 1; }
}

# --- smt (the two-level topology rows) -----------------------------------------
# Each row: NAME|our command|Linux's command[|the comm of Linux's workload
# tasks, when not the command's first word]. Run in rounds (every row once
# per round, SMT_REPS rounds) in each of SMT_BOOTS boots of each kernel;
# boot b gets seed b and a pause from it before every run (Linux: usleep
# 0..4 ms in lc_smt; ours: `yield -l 1..1000`). Linux prints one `smt:`
# line per run (guest.sh, lc_smt); ours runs `schedstat; stat` before and
# `stat; schedstat` after each command, and smt-summary.py takes the deltas
# of the same quantities (the domain counters of both: /proc/schedstat's
# and our `schedstat`'s lines). Ours boots with `schedstats=enable`, as
# Linux's init.sh turns kernel.sched_schedstats on: the domain counters
# of both (`lb_*`, `alb_*`, `ttwu_*`) count only with it on.
smt_rows() {
    cat <<ROWS
hogs2|spin -d $SMT_MS 0 0|lcbench spin -d $SMT_MS 0 0
hogs3|spin -d $SMT_MS 0 0 0|lcbench spin -d $SMT_MS 0 0 0
pipe_pair|perfpipe -l $SMT_LOOPS|perf bench sched pipe -l $SMT_LOOPS
hackbench|hackbench -g 2 -l 100|hackbench -g 2 -l 100
hackbench_pipe|hackbench -p -g 2 -l 100|hackbench -p -g 2 -l 100
ROWS
    # Two hogs held on one core's two threads for 100 ms (the affinity
    # mask of core 0, CPUs 0-1, or of core 1, CPUs 2-3), then allowed
    # every CPU: does the balancer move one to the idle core? The 100 ms
    # pass in a sleeper on CPU 0 (wakelat, 10 wakeups), in both kernels.
    local m wl="wakelat -d 100 -c 0 -n 0 -p 10000"
    for m in 3:core0 c:core1; do
        echo "packed_${m#*:}|spin -d $SMT_MS 0 0 &; taskset -p ${m%%:*} %1; $wl; taskset -p f %1; wait %1|taskset ${m%%:*} lcbench spin -d $SMT_MS 0 0 & lcbench $wl; for p in \$(pidof lcbench); do taskset -p f \$p; done >/dev/null; wait|lcbench"
    done
}

part_smt() {
    local dir=$OUT/smt$tsfx b r name ocmd lcmd comm
    mkdir -p "$dir"
    [[ $smp_threads != 1 ]] || echo "linux-compare: smt: SMP=$SMP has one thread per core: the rows run, but there is no SMT level to see" >&2
    if [[ ${REPORT_ONLY:-0} != 1 ]]; then
        if [[ $LINUX == 1 ]]; then
            rm -f "$dir"/*.log
        else
            [[ -f $dir/linux-seed1.log ]] || bad "LINUX=0 needs the Linux logs of an earlier run: no $dir/linux-seed1.log"
            rm -f "$dir"/ours-*.log
        fi
        rm -f "$dir/rows.txt"
        {
            echo "lc_smt_topo"
            for ((r = 1; r <= SMT_REPS; r++)); do
                while IFS='|' read -r name ocmd lcmd comm; do
                    printf "lc_smt %s '%s' %s\n" "$name" "$lcmd" "$comm"
                done < <(smt_rows)
            done
        } >"$ldir/plan.sh"
        for ((r = 1; r <= SMT_REPS; r++)); do smt_rows | cut -d'|' -f1 >>"$dir/rows.txt"; done
        [[ $LINUX == 0 ]] || "$here/linux-compare/initramfs.sh" "$x" "$ldir" "$ldir/plan.sh" >/dev/null
        for ((b = 1; b <= SMT_BOOTS; b++)); do
            [[ $LINUX == 0 ]] || boot_linux "$dir/linux-seed$b.log" lc.mode=ab "lc.seed=$b" || true
            [[ $OURS == 1 ]] || continue
            [[ $b == 1 ]] && { ours_base "$dir/linux-seed1.log" smt || return 1; }
            # ours' runs, in boots of at most 1000 bytes of run= script each
            local base script="" part=1 run rng=$((b * 2654435761 % 2147483647 + 1))
            base=$(ours_set_script)
            for ((r = 1; r <= SMT_REPS; r++)); do
                while IFS='|' read -r name ocmd _; do
                    rng=$((rng * 48271 % 2147483647))
                    run="yield -l $((1 + rng % 1000)); schedstat; stat; $ocmd; stat; schedstat; "
                    if ((${#base} + ${#script} + ${#run} + 8 > 1000)); then
                        boot "$elf" "$dir/ours-seed$b-part$part.log" -- "schedstats=enable seed=$b preempt=$PREEMPT run=$base${script}poweroff"
                        part=$((part + 1)) script=""
                    fi
                    script+=$run
                done < <(smt_rows)
            done
            boot "$elf" "$dir/ours-seed$b-part$part.log" -- "schedstats=enable seed=$b preempt=$PREEMPT run=$base${script}poweroff"
        done
    fi
    {
        echo "== smt: SMP=$SMP, $mode, both preempt=$PREEMPT, $SMT_BOOTS boot(s) x $SMT_REPS round(s) of each kernel"
        SMT_MS=$SMT_MS "$here/linux-compare/smt-summary.py" "$dir"
    } | tee "$OUT/smt$tsfx.txt"
}

if [[ -n $x ]]; then
    linux_from="$LINUX_SUITE ($(basename "$(ls -d "$x"/usr/lib/modules/* "$x"/boot/vmlinuz-* 2>/dev/null | head -1)"))"
else
    linux_from="the logs of an earlier run (LINUX=0)"
    [[ -n $linux_kept ]] && linux_from="the column kept in ${linux_kept#"$root"/} (LINUX=kept)"
fi
echo "linux-compare: parts '$WHAT', ARCH=$ARCH, SMP=$SMP, $mode, Linux from $linux_from" >&2
# Each part (and each AB_NAME) has its own initramfs (its own plan), so they
# can run side by side.
for w in $WHAT; do
    ldir=$ldir0-$w$tsfx
    [[ $w == ab ]] && ldir=$ldir0-${AB_NAME:-$ab_name0}
    mkdir -p "$ldir"
    "part_$w"
done
