#!/usr/bin/env bash
# Latency figures of several commits, one reproducible boot each: for a
# bisect of a latency change (make bench-compare runs the full bench, about
# two minutes a commit; this is one build and one boot of a few seconds).
#
#   scripts/tools/kbisect.sh COMMIT...
#
# A COMMIT of `.` is this work tree as it is (uncommitted changes
# included), built with `make kernel` into its own target directory.
#
# Each commit is checked out in a scratch worktree (KB_DIR/src, default
# /tmp/kbisect-$USER), built there with nice -n 5 into one shared target
# directory (KB_DIR/target, so consecutive commits build incrementally) and
# booted by this tree's scripts at SMP CPUs under -icount shift=ICOUNT,
# sleep=off with `seed=1 preempt=PREEMPT`, running the same sequence as
# linux-compare's latency part, each workload through `compare -n 1 -w 0`
# (its run line has the figures with ns resolution):
#
#   cyclictest -t 1 -i 500 -l 1000 -p 50; perfpipe -s -l 2000;
#   perfpipe -x -l 2000; cyclictest -t 1 -i 500 -l 1000 -p 50
#
# The boot also says `schedstats=disable`, as make bench-kernel's do: the
# figures are the scheduler's without the diagnostic wakeup counters that
# `compare` otherwise turns on for its runs (a kernel older than the
# argument warns about it and counts as it always did; KB_SCHEDSTATS=1
# leaves it out).
#
# One line per commit: the first cyclictest's average and maximum (us), the
# round trips (us), the second cyclictest's (after perfpipe) average and
# maximum. A workload the commit's kernel does not take prints '-'.
# Boots are deterministic: one per commit is the whole sample.
#
# Environment: SMP (2), ICOUNT (2), PREEMPT (full), KB_SCHEDSTATS (0), KB_DIR, KB_WORKLOADS
# ('|'-separated, replaces the sequence above), KB_KEEP=1 keeps each
# commit's ELF and log in KB_DIR/out/<sha>.{elf,log}.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/harness.sh
. "$here/../lib/harness.sh"
h_init kbisect
root=$H_ROOT
SMP=${SMP:-2}
ICOUNT=${ICOUNT:-2}
PREEMPT=${PREEMPT:-full}
KB_DIR=${KB_DIR:-/tmp/kbisect-${USER:-$(id -un)}}
cyc='cyclictest -t 1 -i 500 -l 1000 -p 50'
KB_WORKLOADS=${KB_WORKLOADS:-$cyc|perfpipe -s -l 2000|perfpipe -x -l 2000|$cyc}
case ${KB_SCHEDSTATS:-0} in
    0) stats_arg="schedstats=disable " ;;
    1) stats_arg="" ;;
    *) echo "error: kbisect: KB_SCHEDSTATS must be 0 or 1, got '$KB_SCHEDSTATS'" >&2; exit 2 ;;
esac

bad() { echo "error: kbisect: $*" >&2; exit 2; }
[[ $# -ge 1 ]] || { echo "usage: $0 COMMIT..." >&2; exit 2; }
[[ $SMP =~ ^[1-8]$ ]] || bad "SMP must be 1..8, got '$SMP'"
[[ $ICOUNT =~ ^[0-9]$ ]] || bad "ICOUNT must be a shift 0..9, got '$ICOUNT'"
[[ $PREEMPT =~ ^(none|voluntary|full|lazy)$ ]] || bad "PREEMPT must be none, voluntary, full or lazy, got '$PREEMPT'"
shas=()
for c in "$@"; do
    if [[ $c == . ]]; then
        shas+=(.)
        continue
    fi
    shas+=("$(git -C "$root" rev-parse --short=10 --verify -q "$c^{commit}")") || bad "'$c' is not a commit"
done

src=$KB_DIR/src
mkdir -p "$KB_DIR/out"
if [[ " ${shas[*]} " != " . " ]] && ! git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
    rm -rf "$src"
    git -C "$root" worktree add -q --detach "$src" HEAD
fi
IFS='|' read -ra wls <<<"$KB_WORKLOADS"

# The value of KEY in the first `run 1/1 cfg A ...:` line after the N-th
# `compare` prompt of LOG.
figure() { # LOG N KEY
    tr -d '\r' <"$1" | awk -v n="$2" -v key="$3" '
        /^sched> compare / {k++}
        k == n && !done && /^run 1\/1 cfg A / {
            for (i = 1; i <= NF; i++) if (index($i, key "=") == 1) {print substr($i, length(key) + 2); done = 1}
        }'
}

printf '%-10s %9s %9s %10s %10s %9s %9s  %s\n' commit cyc_avg cyc_max rt_same rt_cross cyc2_avg cyc2_max subject
for sha in "${shas[@]}"; do
    if [[ $sha == . ]]; then
        sha=worktree
        built=${CARGO_TARGET_DIR:-$root/target}/x86_64-unknown-none/release/kernel
        build=(nice -n 5 make -s -C "$root" kernel ARCH=x86_64)
    else
        git -C "$src" checkout -q --detach "$sha"
        built=$KB_DIR/target/x86_64-unknown-none/release/kernel
        build=(env -C "$src" CARGO_TARGET_DIR="$KB_DIR/target" nice -n 5 cargo build -q -p kernel
            --target x86_64-unknown-none --release)
    fi
    if ! "${build[@]}" >"$KB_DIR/out/$sha.build" 2>&1; then
        echo "$sha: build failed (see $KB_DIR/out/$sha.build)"
        continue
    fi
    elf=$KB_DIR/out/$sha.elf
    cp "$built" "$elf"
    # Keep only the workloads this kernel parses: a run= script with one
    # command it cannot parse is ignored whole.
    script="" i=0 idx=()
    for w in "${wls[@]}"; do
        h_qemu x86_64 kernel="$elf" append="run=poweroff; compare -n 1 -w 0 -c default -- $w" smp=1 icount="$ICOUNT"
        if timeout -k 2 20 "${QEMU[@]}" </dev/null >/dev/null 2>&1; [ $? -eq "$(h_pass_status x86_64)" ]; then
            i=$((i + 1))
            idx+=("$i")
            script+="compare -n 1 -w 0 -c default -- $w; "
        else
            idx+=(0)
        fi
    done
    log=$KB_DIR/out/$sha.log
    h_qemu x86_64 kernel="$elf" append="${stats_arg}seed=1 preempt=$PREEMPT run=${script}poweroff" smp="$SMP" icount="$ICOUNT"
    h_run "$log" 600 -- nice -n 5 "${QEMU[@]}" </dev/null || true
    vals=()
    for k in "${!wls[@]}"; do
        n=${idx[$k]}
        case ${wls[$k]} in
            cyclictest*) keys=(lat_avg_us lat_max_us) ;;
            perfpipe*) keys=(usecs_per_op) ;;
            *) keys=("$(tr -d '\r' <"$log" | awk '/^run 1\/1 cfg A / && !k++ {sub(/=.*/, "", $5); print $5}')") ;;
        esac
        for key in "${keys[@]}"; do
            v=-
            [[ $n -gt 0 ]] && v=$(figure "$log" "$n" "$key")
            vals+=("${v:--}")
        done
    done
    subject="(work tree)"
    [[ $sha == worktree ]] || subject=$(git -C "$root" log -1 --format=%s "$sha" | cut -c 1-60)
    if [[ -z $KB_WORKLOADS || $KB_WORKLOADS == "$cyc|perfpipe -s -l 2000|perfpipe -x -l 2000|$cyc" ]]; then
        printf '%-10s %9s %9s %10s %10s %9s %9s  %s\n' "$sha" "${vals[@]}" "$subject"
    else
        echo "$sha ${vals[*]}  $subject"
    fi
    [[ ${KB_KEEP:-0} == 1 ]] || rm -f "$elf" "$log"
done
