#!/usr/bin/env bash
# The boot harness's own limits (scripts/lib/harness.sh), with shell
# commands standing in for QEMU: a run that keeps printing is not ended
# however long it takes beyond its limit, a silent run is ended about its
# limit after its last line, a run that prints forever is ended at its cap,
# the caller's stdin reaches the command, and the h_start/h_wait_for/h_finish
# path ends a silent run the same way. About 15 s of wall time, nearly all
# of it sleeping, so host load does not decide it: each bound below is
# several seconds wide. Then one knob check of `make linux-compare`
# (scripts/linux-compare.sh) that needs no boot: a bad OURS_COST is refused
# before anything is fetched or written, and so is a config naming a
# feature ours has not, or a bad SMP shape, BOOT_SEED or LINUX_DETERMINISTIC;
# that LINUX=0 fetches no Linux packages unless a part that boots Linux
# anyway is asked for, and LINUX=kept's refusals;
# the QEMU and kernel command line of a deterministic Linux boot and of a
# default one; and the parsing that gives ours Linux's default features
# (linux-compare/defaults.sh), on sample lines.
# Last, the probe scripts' set-up (h_probe_*): their argument checks and
# messages, a probe patch that no longer applies, every committed probe
# patch applying to the working tree as its script stacks it, and each
# probe script refusing a bad SMP or seed before it copies, builds or
# boots anything.
# And make test's record of a suite (h_record: counts and wall time) and
# its closing lines (scripts/test/summary.sh), on sample records, with the
# in-kernel tests that skipped themselves at run time. Last, the QEMU
# command line's -icount from ICOUNT: a shift, off, or a clear refusal.
#
#   scripts/test/harness-test.sh
set -uo pipefail
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init harness-test
dir="$H_BUILD/harness-test"
mkdir -p "$dir"
# within SECS LO HI: LO <= SECS <= HI (one decimal)
within() { awk -v s="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(s >= lo && s <= hi) }'; }

# 1. Prints a line every 0.4 s for 4 s under a 2 s limit: a fixed total
#    limit would end it; a silence limit must not.
h_run "$dir/steady.log" 2 -- bash -c 'for i in $(seq 10); do echo "line $i"; sleep 0.4; done'
ok=1
[ "$H_RC" -eq 0 ] && ! h_ended && [ "$(grep -c '^line' "$dir/steady.log")" -eq 10 ] && ok=0
h_check printing_run_outlives_its_limit "$ok" "status $H_RC, ${H_SECS} s, ended '${H_WHY_ENDED}'"

# 2. One line, then silence: ended about 2 s later, status 124.
h_run "$dir/silent.log" 2 -- bash -c 'echo started; exec sleep 60'
ok=1
[ "$H_RC" -eq 124 ] && h_ended && [[ $H_WHY_ENDED == "no output for 2s" ]] &&
    within "$H_SECS" 1.5 6 && grep -q '^started' "$dir/silent.log" && ok=0
h_check silent_run_is_ended_after_its_limit "$ok" "status $H_RC, ${H_SECS} s, '${H_WHY_ENDED}'"

# 3. Prints forever under a 1 s limit and a cap of 3 x 1 s: ended at the cap.
H_CAP=3 h_run "$dir/chatty.log" 1 -- bash -c 'while :; do echo tick; sleep 0.1; done'
ok=1
[ "$H_RC" -eq 124 ] && [[ $H_WHY_ENDED == "still running after 3s in all" ]] &&
    within "$H_SECS" 2.5 8 && ok=0
h_check endless_output_is_ended_at_the_cap "$ok" "status $H_RC, ${H_SECS} s, '${H_WHY_ENDED}'"

# 4. The caller's stdin reaches the command (a backgrounded command would
#    otherwise read /dev/null), and H_TEE shows the output too.
out=$(H_TEE=1 h_run "$dir/stdin.log" 5 -- cat <<<"from the caller"; echo "rc=$H_RC")
ok=1
grep -qx 'from the caller' "$dir/stdin.log" && [[ $out == *"from the caller"*"rc=0"* ]] && ok=0
h_check stdin_and_tee_pass_through "$ok" "$(tr '\n' ' ' <<<"$out")"

# 5. h_start: the run prints a prompt, answers input, then falls silent
#    without ending; h_wait_for sees the prompt, h_finish ends the run for
#    its silence with status 143, before timeout(1)'s cap (2 x 4 + 5 = 13 s,
#    which would end it with 124): on a loaded host the start and the end
#    take seconds more (10.3 s seen with the host's 2 cores shared with two
#    QEMU boots and a C build), so the bound is the cap's, not the quiet
#    host's 2-3 s.
h_start "$dir/start.log" 2 -- bash -c 'echo "prompt>"; read -r l; echo "got $l"; exec sleep 60'
h_wait_for '^prompt>' 10
w1=$?
h_send $'hello\n'
h_wait_for '^got hello' 10
w2=$?
h_finish
ok=1
[ "$w1" -eq 0 ] && [ "$w2" -eq 0 ] && [ "$H_RC" -eq 143 ] && h_ended && within "$H_SECS" 1.5 12.5 && ok=0
h_check started_run_is_ended_for_silence "$ok" "waits $w1 $w2, status $H_RC, ${H_SECS} s, '${H_WHY_ENDED}'"

# 6. h_wait_for gives up on a silent run that never prints the line.
h_start "$dir/never.log" 2 -- bash -c 'echo nothing; exec sleep 60'
t0=$EPOCHREALTIME
h_wait_for '^never printed'
w=$?
secs=$(h_since "$t0")
h_finish 0
ok=1
[ "$w" -ne 0 ] && within "$secs" 1.5 6 && ok=0
h_check wait_for_gives_up_on_silence "$ok" "wait $w after ${secs} s"

# 7. linux-compare refuses a bad OURS_COST with the valid values named,
#    before any download, build or boot (its OUT is not even made).
#    (LINUX_SUITE=none: should the check be missing, fetch.sh stops at
#    once on the suite instead of downloading; the test then fails. A
#    clean environment: make exports its own knobs, e.g. SMP=1.)
lcout="$dir/lc-out"
rm -rf "$lcout"
msg=$(env -i PATH="$PATH" HOME="$HOME" OURS_COST=charged LINUX_SUITE=none OUT="$lcout" WHAT=ab "$(dirname "$0")/../linux-compare.sh" "$0" 2>&1 </dev/null)
rc=$?
ok=1
[ "$rc" -eq 2 ] && [[ $msg == *"OURS_COST must be 0, linux or both, got 'charged'"* ]] && [ ! -e "$lcout" ] && ok=0
h_check linux_compare_refuses_bad_ours_cost "$ok" "status $rc, '$msg'"

# 7a. and with OURS=1 a kernel that is not built, naming it, before any
#    download; with OURS=0 a missing kernel is no error (`make linux-costs`
#    on a tree whose kernel was never built: the next check, a bad WHAT,
#    is the one refused).
msg=$(env -i PATH="$PATH" HOME="$HOME" LINUX_SUITE=none OUT="$lcout" WHAT=ab "$(dirname "$0")/../linux-compare.sh" "$dir/no-such-dir/kernel" 2>&1 </dev/null)
rc=$?
ok=1
[ "$rc" -eq 2 ] && [[ $msg == *"our kernel $dir/no-such-dir/kernel is not built"* ]] && [ ! -e "$lcout" ] && ok=0
h_check linux_compare_refuses_a_missing_kernel "$ok" "status $rc, '$msg'"
msg=$(env -i PATH="$PATH" HOME="$HOME" OURS=0 LINUX_SUITE=none OUT="$lcout" WHAT=bogus "$(dirname "$0")/../linux-compare.sh" "$dir/no-such-dir/kernel" 2>&1 </dev/null)
rc=$?
ok=1
[ "$rc" -eq 2 ] && [[ $msg == *"unknown part 'bogus'"* ]] && [ ! -e "$lcout" ] && ok=0
h_check linux_compare_linux_alone_needs_no_kernel "$ok" "status $rc, '$msg'"

# 7b. and a bad OURS_FLIPS (hackbench -W: empty or 0..1000000, no sign or
#    leading zero) the same way.
for v in six -1 01 1000001; do
    rm -rf "$lcout"
    msg=$(env -i PATH="$PATH" HOME="$HOME" OURS_FLIPS="$v" LINUX_SUITE=none OUT="$lcout" WHAT=ab "$(dirname "$0")/../linux-compare.sh" "$0" 2>&1 </dev/null)
    rc=$?
    want="OURS_FLIPS must be empty (off) or an integer in [0, 1000000] (hackbench -W), got '$v'"
    [ "$rc" -eq 2 ] && [[ $msg == *"$want"* ]] && [ ! -e "$lcout" ]
    h_check "linux_compare_refuses_ours_flips_${v//[^a-zA-Z0-9]/_}" "$?" "status $rc, '$msg'"
done

# 7c. and a bad BOOT_SEED (the first boot's seed: a positive integer).
for v in 0 x 3x; do
    rm -rf "$lcout"
    msg=$(env -i PATH="$PATH" HOME="$HOME" BOOT_SEED="$v" LINUX_SUITE=none OUT="$lcout" WHAT=ab "$(dirname "$0")/../linux-compare.sh" "$0" 2>&1 </dev/null)
    rc=$?
    [ "$rc" -eq 2 ] && [[ $msg == *"BOOT_SEED must be a positive integer, got '$v'"* ]] && [ ! -e "$lcout" ]
    h_check "linux_compare_refuses_boot_seed_$v" "$?" "status $rc, '$msg'"
done
# 7c'. and bad boot limits (BOOT_SILENCE, BOOT_TIMEOUT: positive seconds).
for kv in BOOT_SILENCE=0 BOOT_TIMEOUT=1h BOOT_SILENCE=-5; do
    rm -rf "$lcout"
    msg=$(env -i PATH="$PATH" HOME="$HOME" "$kv" LINUX_SUITE=none OUT="$lcout" WHAT=ab "$(dirname "$0")/../linux-compare.sh" "$0" 2>&1 </dev/null)
    rc=$?
    [ "$rc" -eq 2 ] && [[ $msg == *"${kv%%=*} must be a positive integer, got '${kv#*=}'"* ]] && [ ! -e "$lcout" ]
    h_check "linux_compare_refuses_${kv//[^a-zA-Z0-9]/_}" "$?" "status $rc, '$msg'"
done

# 7d. LINUX=0 fetches no Linux packages when every part asked for honours
#    it (ab, cgroup and smt then boot no Linux and build no initramfs), and
#    LINUX=1, or a part that boots Linux whatever LINUX says (conformance),
#    still fetches: a copy of the script whose fetch.sh is a stand-in that
#    leaves a mark and fails. Without Linux logs from an earlier run, the
#    LINUX=0 run then stops at part ab, which names what it needs.
fdir="$dir/lc-fetch"
rm -rf "$fdir"
mkdir -p "$fdir/scripts/linux-compare" "$fdir/scripts/lib" "$fdir/sched/src"
cp "$(dirname "$0")/../linux-compare.sh" "$fdir/scripts/"
cp "$(dirname "$0")/../lib/harness.sh" "$fdir/scripts/lib/"
cp "$(dirname "$0")/../linux-compare/defaults.sh" "$(dirname "$0")/../linux-compare/determinism.sh" "$fdir/scripts/linux-compare/"
cp "$(dirname "$0")/../../sched/src/features.rs" "$fdir/sched/src/"
printf '#!/bin/sh\ntouch "%s/fetched"\nexit 97\n' "$fdir" >"$fdir/scripts/linux-compare/fetch.sh"
chmod +x "$fdir/scripts/linux-compare/fetch.sh"
for spec in "0|ab cgroup smt|2|no" "1|ab|97|yes" "0|ab conformance|97|yes"; do
    IFS='|' read -r lx what want fetched <<<"$spec"
    rm -rf "$fdir/out" "$fdir/fetched"
    msg=$(env -i PATH="$PATH" HOME="$HOME" LINUX="$lx" OURS=0 SIM=0 WHAT="$what" OUT="$fdir/out" "$fdir/scripts/linux-compare.sh" "$fdir/kernel" 2>&1 </dev/null)
    rc=$?
    got=no
    [ -e "$fdir/fetched" ] && got=yes
    ok=1
    [ "$rc" -eq "$want" ] && [ "$got" = "$fetched" ] && ok=0
    [ "$fetched" = no ] && [[ $msg != *"LINUX=0 needs the Linux logs of an earlier run: no $fdir/out/ab/logs/linux-x86_64_smp4_seed1.log"* ]] && ok=1
    h_check "linux_compare_linux_${lx}_${what// /_}_fetches_$fetched" "$ok" "status $rc, fetched $got, '$(tr '\n' '|' <<<"$msg")'"
done

# 7e. LINUX=kept (the Linux column kept in docs/results/linux/referee/)
#    is refused for a part other than ab, for an arch or SMP with no kept
#    column (the stand-in tree above has none), and a bad LINUX value is
#    refused with the three values named; none of them fetches.
for spec in "kept|ab conformance|WHAT must be ab, got 'ab conformance'" \
    "kept|ab|no kept Linux column for ARCH=x86_64 SMP=4" \
    "yes|ab|LINUX must be 0, 1 or kept, got 'yes'"; do
    IFS='|' read -r lx what want <<<"$spec"
    rm -rf "$fdir/out" "$fdir/fetched"
    msg=$(env -i PATH="$PATH" HOME="$HOME" LINUX="$lx" OURS=0 SIM=0 WHAT="$what" OUT="$fdir/out" "$fdir/scripts/linux-compare.sh" "$fdir/kernel" 2>&1 </dev/null)
    rc=$?
    ok=1
    [ "$rc" -eq 2 ] && [ ! -e "$fdir/fetched" ] && [[ $msg == *"$want"* ]] && ok=0
    h_check "linux_compare_linux_${lx}_${what// /_}_refused" "$ok" "status $rc, '$(tr '\n' '|' <<<"$msg")'"
done

# 7f. LINUX=kept takes the second set's column (ARCH-features/) after each
#    seed's hackbench transcript when the run has a second set, and not
#    without one; that folder is not listed as a column of its own.
kref="$fdir/docs/results/linux/referee"
mkdir -p "$kref/x86_64" "$kref/x86_64-features"
feat=$(grep -m1 '^lc: features' "$(dirname "$0")/../../docs/results/linux/referee/x86_64/linux-x86_64_smp4_seed1.log")
printf '%s\ncompare: hackbench-set\n' "$feat" >"$kref/x86_64/linux-x86_64_smp4_seed1.log"
printf '%s\ncompare: features-set\n' "$feat" >"$kref/x86_64-features/linux-x86_64_smp4_seed1.log"
for spec in "default|NO_PLACE_LAG|2" "|1"; do
    c2=${spec%|*} want=${spec##*|}
    rm -rf "$fdir/out"
    env -i PATH="$PATH" HOME="$HOME" LINUX=kept OURS=0 SIM=0 WHAT=ab CONFIGS2="$c2" OUT="$fdir/out" \
        "$fdir/scripts/linux-compare.sh" "$fdir/kernel" >/dev/null 2>&1 </dev/null
    got=$(grep -c '^compare: ' "$fdir/out/ab/logs/linux-x86_64_smp4_seed1.log" 2>/dev/null)
    ok=1
    [ "${got:-0}" -eq "$want" ] && ok=0
    h_check "linux_compare_kept_second_set_${want}_blocks" "$ok" "$got compare blocks, want $want (CONFIGS2='$c2')"
done
msg=$(env -i PATH="$PATH" HOME="$HOME" LINUX=kept SMP=2 OURS=0 SIM=0 WHAT=ab OUT="$fdir/out" \
    "$fdir/scripts/linux-compare.sh" "$fdir/kernel" 2>&1 </dev/null)
ok=1
[[ $msg == *"keeps: ARCH=x86_64 SMP=4)"* ]] && ok=0
h_check linux_compare_kept_lists_arch_folders_only "$ok" "$(tr '\n' '|' <<<"$msg")"
# 7g. Without WORKLOADS, LINUX=kept runs the kept column's own workloads
#    (its compare blocks, once each, in order: the -T rows too); a given
#    WORKLOADS is kept as given.
{
    printf '%s\n' "$feat"
    for w in 'hackbench -g 2 -l 100' 'hackbench -T -g 2 -l 100' 'hackbench -g 2 -l 100'; do
        printf "compare: 4 config(s) x 3 run(s) (+1 warmup) of '%s', rotated order, seed 1\n" "$w"
    done
} >"$kref/x86_64/linux-x86_64_smp4_seed1.log"
for given in no yes; do
    rm -rf "$fdir/out"
    w=(); [ "$given" = yes ] && w=(WORKLOADS='hackbench -g 2 -l 100')
    msg=$(env -i PATH="$PATH" HOME="$HOME" LINUX=kept OURS=0 SIM=0 WHAT=ab CONFIGS2= "${w[@]}" OUT="$fdir/out" \
        "$fdir/scripts/linux-compare.sh" "$fdir/kernel" 2>&1 </dev/null)
    ok=1
    line="LINUX=kept: the kept column's workloads: hackbench -g 2 -l 100|hackbench -T -g 2 -l 100"
    if [ "$given" = no ]; then [[ $msg == *"$line"$'\n'* || $msg == *"$line" ]] && ok=0; else [[ $msg != *"kept column's workloads"* ]] && ok=0; fi
    h_check "linux_compare_kept_workloads_given_$given" "$ok" "$(tr '\n' '|' <<<"$msg")"
done
rm -rf "$fdir/docs"

# 8. a config naming a feature ours has not is refused the same way.
rm -rf "$lcout"
msg=$(env -i PATH="$PATH" HOME="$HOME" CONFIGS='default|NO_NO_SUCH_FLAG' LINUX_SUITE=none OUT="$lcout" WHAT=ab "$(dirname "$0")/../linux-compare.sh" "$0" 2>&1 </dev/null)
rc=$?
ok=1
[ "$rc" -eq 2 ] && [[ $msg == *"configs name feature(s) our kernel has not: NO_SUCH_FLAG"* ]] && [ ! -e "$lcout" ] && ok=0
h_check linux_compare_refuses_unknown_feature "$ok" "status $rc, '$msg'"

# 8b. SMP names the CPUs and, optionally, the threads per core (N or
#    N,threads=T): a malformed or impossible shape is refused the same
#    way, and so is the simulator on an SMT machine (its qemu:N is flat).
for bad in "4,threads=3|SMP must be N (2..8) or N,threads=T (T 1 or 2), got '4,threads=3'" \
    "3,threads=2|SMP=3,threads=2: 3 CPUs are not whole cores of 2 threads" \
    "4,threads=2 SIM=1|the simulator's qemu:N machine has no SMT level; SIM must be 0 with threads"; do
    rm -rf "$lcout"
    spec=${bad%%|*}
    msg=$(env -i PATH="$PATH" HOME="$HOME" SMP="${spec%% *}" $([[ $spec == *' '* ]] && echo "${spec#* }") LINUX_SUITE=none OUT="$lcout" WHAT=smt "$(dirname "$0")/../linux-compare.sh" "$0" 2>&1 </dev/null)
    rc=$?
    ok=1
    [ "$rc" -eq 2 ] && [[ $msg == *"${bad#*|}"* ]] && [ ! -e "$lcout" ] && ok=0
    h_check "linux_compare_refuses_smp_${spec//[^a-zA-Z0-9]/_}" "$ok" "status $rc, '$msg'"
done

# 8c. Linux boots that repeat themselves unless LINUX_DETERMINISTIC=0
#    (linux-compare/determinism.sh): the QEMU command that h_qemu builds
#    from lc_det_args, passed as linux-compare.sh's boot() passes it (CPU,
#    QEMU_EXTRA, the kernel words), has RDRAND/RDSEED off, the RTC on the
#    virtual clock at a fixed date, a fixed -seed and the kernel's layout
#    randomisation off; with 0, none of them. A bad value is refused before
#    any download. aarch64 gets the same flags on its own CPU, and QEMU
#    virt's DT seeds repeat at one -seed and change with it.
rm -rf "$lcout"
msg=$(env -i PATH="$PATH" HOME="$HOME" LINUX_DETERMINISTIC=yes LINUX_SUITE=none OUT="$lcout" WHAT=ab "$(dirname "$0")/../linux-compare.sh" "$0" 2>&1 </dev/null)
rc=$?
[ "$rc" -eq 2 ] && [[ $msg == *"LINUX_DETERMINISTIC must be 0 or 1, got 'yes'"* ]] && [ ! -e "$lcout" ]
h_check linux_compare_refuses_bad_linux_deterministic "$?" "status $rc, '$msg'"
# the smoke boot (make test-linux) refuses it the same way, before its fetch
msg=$(env -i PATH="$PATH" HOME="$HOME" LINUX_DETERMINISTIC=yes OUT="$lcout" "$(dirname "$0")/../linux-compare/test-linux.sh" 2>&1 </dev/null)
rc=$?
[ "$rc" -eq 2 ] && [[ $msg == *"LINUX_DETERMINISTIC must be 0 or 1, got 'yes'"* ]] && [ ! -e "$lcout" ]
h_check test_linux_refuses_bad_linux_deterministic "$?" "status $rc, '$msg'"
# and a machine it has no boot for (ARCH: x86_64 or aarch64)
msg=$(env -i PATH="$PATH" HOME="$HOME" ARCH=riscv64 OUT="$lcout" "$(dirname "$0")/../linux-compare/test-linux.sh" 2>&1 </dev/null)
rc=$?
[ "$rc" -eq 2 ] && [[ $msg == *"ARCH must be x86_64 or aarch64, got 'riscv64'"* ]] && [ ! -e "$lcout" ]
h_check test_linux_refuses_an_unknown_arch "$?" "status $rc, '$msg'"
# shellcheck source=../linux-compare/determinism.sh
. "$(dirname "$0")/../linux-compare/determinism.sh"
det_cmd() { # ON [SEED]: the QEMU command line of an x86_64 Linux boot, one string
    lc_det_args "$1" x86_64 "${2:-}"
    CPU=$LC_DET_CPU QEMU_EXTRA="${LC_DET_QEMU[*]}" h_qemu x86_64 kernel="$0" \
        append="console=ttyS0 quiet ${LC_DET_WORDS[*]} lc.seed=1" icount=2 || return 1
    echo "${QEMU[*]}"
}
on=$(det_cmd 1)
ok=1
[[ " $on " == *" -cpu max,-rdrand,-rdseed "* && $(grep -o -- ' -cpu ' <<<"$on" | wc -l) -eq 1 &&
    " $on " == *" -rtc base=2026-01-01T00:00:00,clock=vm "* && " $on " == *" -seed 1 "* &&
    " $on " == *" -icount shift=2,sleep=off "* &&
    " $on " == *" -append console=ttyS0 quiet nokaslr randomize_kstack_offset=off page_alloc.shuffle=0 norandmaps lc.seed=1 "* ]] && ok=0
h_check linux_deterministic_boot_command_line "$ok" "$on"
# QEMU's -seed is the boot's: seed 3 gives -seed 3, a bad one falls back to 1
on3=$(det_cmd 1 3)
bad=$(det_cmd 1 '3;x')
[[ " $on3 " == *" -seed 3 "* && " $bad " == *" -seed 1 "* ]]
h_check linux_deterministic_qemu_seed_is_the_boots "$?" "seed 3: $(grep -o -- '-seed [^ ]*' <<<"$on3"), bad: $(grep -o -- '-seed [^ ]*' <<<"$bad")"
off=$(det_cmd 0)
ok=1
[[ " $off " == *" -cpu max "* && " $off " != *" -rtc "* && " $off " != *" -seed "* &&
    " $off " != *nokaslr* && " $off " != *norandmaps* ]] && ok=0
h_check linux_default_boot_command_line "$ok" "$off"
# aarch64 (QEMU virt, Debian's arm64 Image): the same flags, boot() passing
# them as for x86_64, but the CPU stays h_qemu's cortex-a72 (ARMv8.0: no
# RNDR, which QEMU would answer from the host), and the machine keeps its
# DT seeds (/chosen kaslr-seed and rng-seed: no dtb-randomness=off), which
# -seed fixes (below). A stand-in Image: an arm64 header's magic at 56.
img="$dir/det-arm64.Image"
printf '%56s%s' '' 'ARMd' >"$img"
lc_det_args 1 aarch64 2
arm=$(CPU=$LC_DET_CPU QEMU_EXTRA="${LC_DET_QEMU[*]}" h_qemu aarch64 kernel="$img" \
    append="console=ttyAMA0 quiet ${LC_DET_WORDS[*]} lc.seed=2" icount=2 && echo "${QEMU[*]}")
ok=1
[[ -z $LC_DET_CPU && " $arm " == *" -cpu cortex-a72 "* && $(grep -o -- ' -cpu ' <<<"$arm" | wc -l) -eq 1 &&
    " $arm " == *" -machine virt,gic-version=2 "* && " $arm " != *dtb-randomness* &&
    " $arm " == *" -rtc base=2026-01-01T00:00:00,clock=vm "* && " $arm " == *" -seed 2 "* &&
    " $arm " == *" -icount shift=2,sleep=off "* &&
    " $arm " == *" -append console=ttyAMA0 quiet nokaslr randomize_kstack_offset=off page_alloc.shuffle=0 norandmaps lc.seed=2 "* ]] && ok=0
h_check linux_deterministic_aarch64_boot_command_line "$ok" "$arm"
# QEMU virt's DT carries its seeds (kaslr-seed, rng-seed) from QEMU's guest
# generator: -seed N must give the same DTB every time and another N
# another one (QEMU's dumpdtb: the machine is built, nothing runs).
qa=${QEMU_AARCH64:-qemu-system-aarch64}
dtb() { # SEED: the md5 of virt's DTB at -seed SEED
    rm -f "$dir/det.dtb"
    "$qa" -machine "virt,gic-version=2,dumpdtb=$dir/det.dtb" -cpu cortex-a72 -smp 4 -m 256M \
        -nodefaults -display none -seed "$1" >/dev/null 2>&1 </dev/null
    [ -s "$dir/det.dtb" ] && grep -q kaslr-seed "$dir/det.dtb" && grep -q rng-seed "$dir/det.dtb" &&
        md5sum <"$dir/det.dtb" | cut -c1-32
}
if command -v "$qa" >/dev/null; then
    d1=$(dtb 1) d1b=$(dtb 1) d2=$(dtb 2)
    [[ -n $d1 && $d1 == "$d1b" && -n $d2 && $d2 != "$d1" ]]
    h_check linux_deterministic_aarch64_dt_seeds_follow_qemu_seed "$?" "seed 1: '$d1' '$d1b', seed 2: '$d2'"
else
    h_check linux_deterministic_aarch64_dt_seeds_follow_qemu_seed 1 "no $qa (make ensure-qemu)"
fi

# 9. ours takes Linux's default features (scripts/linux-compare/defaults.sh):
#    from arm64's feature line (Debian 7.2.13: NO_HRTICK), the one setting
#    is NO_HRTICK and Linux's flags ours has not are listed, not set; from
#    amd64's (HRTICK), none; the base rides in each A/B config without
#    setting a flag twice, and a config's flag is put back to the base;
#    the simulator's rows start from the same base, under Linux's labels.
# shellcheck source=../linux-compare/defaults.sh
. "$(dirname "$0")/../linux-compare/defaults.sh"
table=$(lcd_ours_table "$(dirname "$0")/../../sched/src/features.rs")
amd64='PLACE_LAG PLACE_DEADLINE_INITIAL PLACE_REL_DEADLINE RUN_TO_PARITY PREEMPT_SHORT NO_NEXT_BUDDY PICK_BUDDY CACHE_HOT_BUDDY DELAY_DEQUEUE DELAY_ZERO NO_PARANOID_AVG WAKEUP_PREEMPTION HRTICK HRTICK_DL NONTASK_CAPACITY TTWU_QUEUE SIS_UTIL NO_WARN_DOUBLE_CLOCK NO_RT_PUSH_IPI NO_RT_RUNTIME_SHARE NO_LB_MIN ATTACH_AGE_LOAD WA_IDLE WA_WEIGHT WA_BIAS UTIL_EST NO_LATENCY_WARN NI_RANDOM NI_RATE '
arm64=${amd64/ HRTICK HRTICK_DL / NO_HRTICK NO_HRTICK_DL }
d_amd=$(lcd_diff "$table" "$amd64")
d_arm=$(lcd_diff "$table" "$arm64")
ok=1
[[ $(sed -n 1p <<<"$d_amd") == "set:" && $(sed -n 1p <<<"$d_arm") == "set: NO_HRTICK" ]] &&
    [[ $(sed -n 2p <<<"$d_arm") == "linux-only: PARANOID_AVG HRTICK_DL NONTASK_CAPACITY WARN_DOUBLE_CLOCK RT_PUSH_IPI RT_RUNTIME_SHARE LB_MIN ATTACH_AGE_LOAD LATENCY_WARN" ]] &&
    ! lcd_diff "$table" "garbage line" >/dev/null && ok=0
h_check linux_compare_defaults_diff "$ok" "amd64 '$d_amd', arm64 '$d_arm'"
ok=1
[[ $(lcd_merge NO_HRTICK default) == NO_HRTICK && $(lcd_merge NO_HRTICK NEXT_BUDDY) == NO_HRTICK,NEXT_BUDDY &&
    $(lcd_merge NO_HRTICK HRTICK) == HRTICK && $(lcd_merge '' default) == default &&
    $(lcd_restore "$table" NO_HRTICK NO_PLACE_LAG) == PLACE_LAG && $(lcd_restore "$table" NO_HRTICK HRTICK) == NO_HRTICK &&
    $(lcd_unknown_in "$table" 'default|NO_HRTICK,preempt=lazy|NO_SUCH_FLAG') == SUCH_FLAG ]] && ok=0
h_check linux_compare_defaults_merge "$ok" "merge/restore/unknown"
printf 'compare: 2 config(s) x 1 run(s) of x\nrun 1/2 cfg A NO_HRTICK: t=1\r\nrun 2/2 cfg B NO_HRTICK: t=2\n' >"$dir/relabel.log"
printf '1\tA\tNO_HRTICK\tdefault\n1\tB\tNO_HRTICK\tNO_HRTICK\n' >"$dir/relabel.tsv"
lcd_relabel "$dir/relabel.log" "$dir/relabel.tsv"
ok=1
[[ $(grep -c '^run 1/2 cfg A default: t=1$' "$dir/relabel.log") == 1 && $(grep -c '^run 2/2 cfg B NO_HRTICK: t=2$' "$dir/relabel.log") == 1 ]] && ok=0
h_check linux_compare_relabel "$ok" "$(tr '\n' '/' <"$dir/relabel.log")"
# The simulator's rows start from the same base (sim-rows.sh's SIM_BASE):
# a stand-in for `sim` records each --config; the log keeps Linux's labels.
cat >"$dir/fake-sim" <<'FAKE'
#!/usr/bin/env bash
c=none; while [[ $# -gt 0 ]]; do [[ $1 == --config ]] && c=$2; shift; done
echo "$c" >>"${0%/*}/fake-sim.args"
echo "time_s 1.5"; echo "counters: switches 10 wakeups 5 wakeup preempts 2 buddy picks 1"
FAKE
chmod +x "$dir/fake-sim"
rm -f "$dir/fake-sim.args"
SIM_BASE=NO_HRTICK SIM_TAG=sim-t "$(dirname "$0")/../linux-compare/sim-rows.sh" "$dir/fake-sim" "$dir/simrows" 4 1 \
    'default|NEXT_BUDDY|HRTICK' 'hackbench -p -g 2 -l 10' >/dev/null 2>&1
ok=1
[[ $(sort "$dir/fake-sim.args" | tr '\n' ' ') == "HRTICK NO_HRTICK NO_HRTICK+NEXT_BUDDY " &&
    $(grep -c '^run [1-3]/3 cfg [ABC] \(default\|NEXT_BUDDY\|HRTICK\): time_s=1.5 ' "$dir/simrows/sim-t_smp4_seed1.log") == 3 ]] && ok=0
h_check sim_rows_start_from_the_linux_base "$ok" "configs '$(tr '\n' ' ' <"$dir/fake-sim.args" 2>/dev/null)', log '$(grep -o 'cfg [A-C] [A-Z_a-z]*' "$dir/simrows/sim-t_smp4_seed1.log" 2>/dev/null | tr '\n' '/')'"
# SIM_FLIPS gives every hackbench run `flips=N` (the workers' inherited
# wakee_flips); a bad value is refused before any run, with its name.
# (The stand-in records its arguments and prints every metric sim-rows
# reads: hackbench's, schbench's and lcpgbench's.)
cat >"$dir/fake-sim2" <<'FAKE'
#!/usr/bin/env bash
echo "$*" >>"${0%/*}/fake-sim2.args"
echo "wakeup_p99_us 321.5"; echo "rps 7000.0"; echo "time_s 1.5"; echo "tps 1200.5"; echo "lat_avg_ms 3.1"
echo "counters: switches 10 wakeups 5 wakeup preempts 2 buddy picks 1"
FAKE
chmod +x "$dir/fake-sim2"
rm -f "$dir/fake-sim2.args"
SIM_FLIPS=6 SIM_TAG=sim-f "$(dirname "$0")/../linux-compare/sim-rows.sh" "$dir/fake-sim2" "$dir/simflips" 4 1 \
    'default|NEXT_BUDDY' 'hackbench -p -g 2 -l 10' >/dev/null 2>&1
ok=1
[[ $(grep -c ' hackbench ipc=pipe mode=process groups=2 loops=10 flips=6$' "$dir/fake-sim2.args") == 2 ]] && ok=0
h_check sim_rows_pass_the_flips "$ok" "args '$(tr '\n' '/' <"$dir/fake-sim2.args" 2>/dev/null)'"
for bad in x -1 1000001 06; do
    rm -f "$dir/fake-sim2.args"
    out=$(SIM_FLIPS=$bad "$(dirname "$0")/../linux-compare/sim-rows.sh" "$dir/fake-sim2" "$dir/simflips" 4 1 \
        'default' 'hackbench -g 2 -l 10' 2>&1); st=$?
    ok=1
    [[ $st == 2 && $out == *"SIM_FLIPS must be empty or 0..1000000, got '$bad'"* && ! -e $dir/fake-sim2.args ]] && ok=0
    h_check "sim_rows_refuse_flips_$bad" "$ok" "status $st: $out"
done

# lcbench's schbench line runs as sim's schbench: its options mapped (the
# -F KiB walk charged 392 ns a KiB, as measured in Linux), -r seconds of
# simulated time, the wakeup p99 first on the run line; lcbench's pgbench as
# sim's lcpgbench, tps first; SIM_APPEND adds to the seed's log; a workload
# with no shape is skipped and leaves no log; a bad option or value is
# refused with its name.
rm -f "$dir/fake-sim2.args" "$dir"/simsch/*.log
SIM_TAG=sim-s "$(dirname "$0")/../linux-compare/sim-rows.sh" "$dir/fake-sim2" "$dir/simsch" 4 1 \
    'default' 'hackbench -g 2 -l 10' >/dev/null 2>&1
SIM_APPEND=1 SIM_TAG=sim-s "$(dirname "$0")/../linux-compare/sim-rows.sh" "$dir/fake-sim2" "$dir/simsch" 4 1 \
    'default|NO_PLACE_LAG' 'schbench -m 1 -t 4 -r 2' 'perfpipe -l 2000' 'schbench -F 0 -s 7' 'pgbench -c 4 -t 20' 'pgbench -S' >/dev/null 2>&1
ARCH=aarch64 SIM_APPEND=1 SIM_TAG=sim-a "$(dirname "$0")/../linux-compare/sim-rows.sh" "$dir/fake-sim2" "$dir/simsch" 4 1 \
    'default|NO_PLACE_LAG' 'schbench -m 2 -r 3' >/dev/null 2>&1
ok=1
[[ $(grep -c -- '--ms 2000 .*schbench m=1 t=4 sleep_us=100 work_us=100$' "$dir/fake-sim2.args") == 2 &&
    $(grep -c -- '--ms 5000 .*schbench m=1 t=4 sleep_us=7 work_us=1$' "$dir/fake-sim2.args") == 2 &&
    $(grep -c -- '--ms 3000 .*schbench m=2 t=4 sleep_us=100 work_us=117$' "$dir/fake-sim2.args") == 2 &&
    $(grep -c 'perfpipe' "$dir/fake-sim2.args") == 0 &&
    $(grep -c -- '--ms 600000 .*lcpgbench clients=4 tx=20 rw=1$' "$dir/fake-sim2.args") == 2 &&
    $(grep -c -- '--ms 600000 .*lcpgbench clients=1 tx=10 rw=0$' "$dir/fake-sim2.args") == 2 &&
    $(grep -c '^run [12]/2 cfg [AB] \(default\|NO_PLACE_LAG\): tps=1200.5 lat_avg_ms=3.1 | switches=10 ' "$dir/simsch/sim-s_smp4_seed1.log") == 4 &&
    $(grep -c '^run [12]/2 cfg [AB] \(default\|NO_PLACE_LAG\): wakeup_p99_us=321.5 rps=7000.0 | switches=10 ' "$dir/simsch/sim-s_smp4_seed1.log") == 4 &&
    $(grep -c '^run 1/1 cfg A default: time_s=1.5 ' "$dir/simsch/sim-s_smp4_seed1.log") == 1 ]] && ok=0
h_check sim_rows_run_schbench "$ok" "args '$(tr '\n' '/' <"$dir/fake-sim2.args" 2>/dev/null)', log '$(tr '\n' '/' <"$dir/simsch/sim-s_smp4_seed1.log" 2>/dev/null)'"
rm -f "$dir"/simsch/*.log
SIM_TAG=sim-s "$(dirname "$0")/../linux-compare/sim-rows.sh" "$dir/fake-sim2" "$dir/simsch" 4 1 \
    'default' 'perfpipe -l 2000' 'cyclictest -t 1' >/dev/null 2>&1
ok=1
[[ ! -e $dir/simsch/sim-s_smp4_seed1.log ]] && ok=0
h_check sim_rows_no_shape_no_log "$ok" "$(ls "$dir/simsch" 2>&1)"
for bad in "schbench -x 1" "schbench -m" "schbench -t four" "schbench -r 0" "pgbench -j 2" "pgbench -c" "pgbench -c 0" "pgbench -t x" "hackbench -g" "hackbench -l two"; do
    rm -f "$dir/fake-sim2.args"
    out=$(SIM_TAG=sim-s "$(dirname "$0")/../linux-compare/sim-rows.sh" "$dir/fake-sim2" "$dir/simsch" 4 1 \
        'default' "$bad" 2>&1); st=$?
    ok=1
    [[ $st == 2 && $out == *"error: sim-rows: ${bad%% *}"* && ! -e $dir/fake-sim2.args ]] && ok=0
    h_check "sim_rows_refuse_${bad// /_}" "$ok" "status $st: $out"
done
out=$(ARCH=riscv64 "$(dirname "$0")/../linux-compare/sim-rows.sh" "$dir/fake-sim2" "$dir/simsch" 4 1 'default' 'schbench' 2>&1); st=$?
ok=1
[[ $st == 2 && $out == *"ARCH must be x86_64 or aarch64 (the walk's measured cost), got 'riscv64'"* ]] && ok=0
h_check sim_rows_refuse_arch_riscv64 "$ok" "status $st: $out"
out=$(SIM_APPEND=2 "$(dirname "$0")/../linux-compare/sim-rows.sh" "$dir/fake-sim2" "$dir/simsch" 4 1 'default' 'schbench' 2>&1); st=$?
ok=1
[[ $st == 2 && $out == *"SIM_APPEND must be 0 or 1, got '2'"* ]] && ok=0
h_check sim_rows_refuse_append_2 "$ok" "status $st: $out"

# 10. The probe scripts' set-up (h_probe_* in harness.sh, used by
#     scripts/linux-compare/{lockhold,pipelock}-probe.sh, hrtick-roles.sh,
#     lazy-roles.sh and, through hrtick-roles.sh, wakestack.sh): a bad SMP,
#     ICOUNT, seed or sim knob is refused with status 2 and a message that
#     names the script and the value; good values are taken, no seed means
#     1 2; a patch that no longer applies is named (status 1).
#
# probe_run FUNC ENV... -- SEED...: FUNC in a clean environment; its
# messages, then "status N", or "ok" and what it set (smp/icount/seeds/
# sim_seeds/H/SIM_W), lines joined by |.
probe_run() {
    local f=$1 e=()
    shift
    while [ "$1" != -- ]; do e+=("$1"); shift; done
    shift
    # shellcheck disable=SC2016 # expanded by the inner bash
    env -i PATH="$PATH" "${e[@]}" bash -c '. "$0"; H_NAME=probe; "$1" "${@:2}"; rc=$?
        if [ "$rc" -ne 0 ]; then echo "status $rc"; else
            echo "ok ${smp:-}/${icount:-}/${seeds[*]:-}/${sim_seeds:-}/${H:-}/${SIM_W:-}"; fi' \
        "$H_LIB/harness.sh" "$f" "$@" 2>&1 | tr '\n' '|'
}
probe_case() { # NAME WANT FUNC ENV... -- SEED...
    local name=$1 want=$2 got
    shift 2
    got=$(probe_run "$@")
    [ "$got" = "$want" ]
    h_check "probe_args_$name" "$?" "'$got'"
}
probe_case smp_9 "error: probe: SMP must be 2..8, got '9'|status 2|" h_probe_args SMP=9 --
probe_case smp_1 "error: probe: SMP must be 2..8, got '1'|status 2|" h_probe_args SMP=1 -- 1
probe_case icount_10 "error: probe: ICOUNT must be a shift 0..9, got '10'|status 2|" h_probe_args ICOUNT=10 --
probe_case icount_neg "error: probe: ICOUNT must be a shift 0..9, got '-1'|status 2|" h_probe_args ICOUNT=-1 --
probe_case seed_x "error: probe: a seed is a number, got 'x'|status 2|" h_probe_args -- 1 x
probe_case seed_neg "error: probe: a seed is a number, got '-1'|status 2|" h_probe_args -- -1
probe_case defaults "ok 4/2/1 2///|" h_probe_args --
probe_case given "ok 2/0/7 3///|" h_probe_args SMP=2 ICOUNT=0 -- 7 3
probe_case sim_seeds_0 "error: probe: SIM_SEEDS must be 1..99, got '0'|status 2|" h_probe_sim_args SIM_SEEDS=0 --
probe_case sim_seeds_100 "error: probe: SIM_SEEDS must be 1..99, got '100'|status 2|" h_probe_sim_args SIM_SEEDS=100 --
probe_case h_without_r "error: probe: H must be one hackbench command with -R, got 'hackbench -p'|status 2|" \
    h_probe_sim_args 'H=hackbench -p' --
probe_case h_two_commands "error: probe: H must be one hackbench command with -R, got 'hackbench -R; ls'|status 2|" \
    h_probe_sim_args 'H=hackbench -R; ls' --
probe_case sim_w_idle "error: probe: SIM_W must be one sim hackbench workload, got 'idle'|status 2|" \
    h_probe_sim_args SIM_W=idle --
probe_case sim_defaults "ok ///6/hackbench -p -g 2 -l 100 -C linux -R/hackbench ipc=pipe mode=process groups=2 loops=100|" \
    h_probe_sim_args --
pdir="$dir/probe-patch"
rm -rf "$pdir"
mkdir -p "$pdir/src"
printf 'one\n' >"$pdir/src/a.txt"
printf -- '--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two\n' >"$pdir/good.patch"
printf -- '--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-three\n+four\n' >"$pdir/stale.patch"
msg=$( (H_NAME=probe; h_probe_patch "$pdir/src" "$pdir/good.patch" "$pdir/stale.patch") 2>&1)
rc=$?
[ "$rc" -eq 1 ] && [[ $msg == *"error: probe: stale.patch no longer applies to HEAD"* ]] &&
    [ "$(cat "$pdir/src/a.txt")" = two ]
h_check probe_patch_names_the_stale_patch "$?" "status $rc, '$(tr '\n' ' ' <<<"$msg")'"

# 10a. Every committed *-probe.patch applies to the working tree, stacked as
#     its script stacks it (h_probe_stacks reads the stacks from the
#     scripts), so a change that moves probed code fails here rather than
#     at the next probe run. Then a copy of the scripts with
#     pipelock-probe.patch made stale (a line it removes changed) and one
#     patch no script applies: each named, with how to refresh it.
msg=$( (H_NAME=probe; h_probe_patches_apply) 2>&1)
rc=$?
[ "$rc" -eq 0 ] && [ -z "$msg" ]
h_check probe_patches_apply_to_the_working_tree "$?" "status $rc, '$(tr '\n' ' ' <<<"$msg")'"
sdir="$dir/probe-stale"
rm -rf "$sdir"
mkdir -p "$sdir"
cp "$(dirname "$0")"/../linux-compare/*.sh "$(dirname "$0")"/../linux-compare/*-probe.patch "$sdir"/
sed -i 's/^-\(.*"waitqueue" | "pi_lock")\)/-\1 || stale/' "$sdir/pipelock-probe.patch"
printf -- '--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two\n' >"$sdir/orphan-probe.patch"
msg=$( (H_NAME=probe; h_probe_patches_apply "$sdir") 2>&1)
rc=$?
[ "$rc" -eq 1 ] && ! cmp -s "$sdir/pipelock-probe.patch" "$(dirname "$0")/../linux-compare/pipelock-probe.patch" &&
    [[ $msg == *"error: probe: pipelock-probe.patch no longer applies to the working tree on top of lockhold-probe.patch, as pipelock-probe.sh applies it; refresh it:"*"git apply -3"*"docs/testing.md"* ]] &&
    [[ $msg == *"error: probe: orphan-probe.patch: no probe script in probe-stale applies it"* ]] &&
    [ "$(grep -c '^error: ' <<<"$msg")" -eq 2 ]
h_check probe_patches_check_names_the_stale_patch "$?" "status $rc, '$(tr '\n' ' ' <<<"$msg")'"

# 10b. Each probe script refuses a bad SMP and a bad seed before anything is
#     copied, built or booted: git, make, cargo and QEMU are stand-ins that
#     would leave a mark (and fail at once, should a check be missing).
stubs="$dir/probe-stubs"
rm -rf "$stubs"
mkdir -p "$stubs"
for t in git make cargo qemu-system-x86_64; do
    printf '#!/bin/sh\ntouch "%s/ran"\nexit 97\n' "$stubs" >"$stubs/$t"
    chmod +x "$stubs/$t"
done
lcdir="$(dirname "$0")/../linux-compare"
for sc in pipelock-probe.sh:pipelock lockhold-probe.sh:lockhold hrtick-roles.sh:hrtickroles \
    lazy-roles.sh:lazyroles wakestack.sh:wakestack declines.sh:declines armlag.sh:armlag; do
    for bad in "SMP=9|SMP must be 2..8, got '9'" "SEED=1x|a seed is a number, got '1x'"; do
        spec=${bad%%|*}
        seed=1
        [[ $spec == SEED=* ]] && { seed=${spec#SEED=}; spec=SMP=4; }
        rm -f "$stubs/ran"
        msg=$(env -i PATH="$stubs:$PATH" HOME="$HOME" "$spec" "$lcdir/${sc%%:*}" "$seed" 2>&1 </dev/null)
        rc=$?
        [ "$rc" -eq 2 ] && [ "$msg" = "error: ${sc#*:}: ${bad#*|}" ] && [ ! -e "$stubs/ran" ]
        h_check "probe_script_${sc%%.*}_refuses_${bad%%=*}" "$?" "status $rc, '$msg'"
    done
done

# 11. make test's record and closing lines (scripts/test/summary.sh), on a
#     results file of its own: h_record's fifth column is the seconds since
#     the script sourced the harness, its sixth the CPU seconds of the
#     script and what it waited for; summary.sh lists the slowest suites
#     (SLOWEST of them) by that column, largest first, and the seconds
#     outside every suite, before the closing line, and fails when a suite
#     recorded a failure even though make's status was 0. A line of four
#     fields (written before the time column) still counts, as 0 s.
sdir="$dir/summary"
rm -rf "$sdir"
mkdir -p "$sdir"
srec="$sdir/results.tsv"
# The CPU column counts what the recording shell waited for: a busy loop
# of 0.3 s of CPU (however long the loaded host takes to give it that:
# up to minutes at load 10 on 2 cores, hence the wide wall bound).
(H_RESULTS=$srec H_SUITE_T0=$(awk -v t="${EPOCHREALTIME/,/.}" 'BEGIN { printf "%.6f", t - 2.5 }')
    python3 -c 'import time
t = time.process_time()
while time.process_time() - t < 0.3: pass'
    h_record "suite two" 7 0 1)
secs=$(cut -f5 "$srec") cpu=$(cut -f6 "$srec")
[ "$(cut -f1-4 "$srec")" = "suite two	7	0	1" ] && within "$secs" 2.5 300 && within "$cpu" 0.3 5
h_check record_has_the_suite_wall_and_cpu_time "$?" "'$(tr '\t' '|' <"$srec")'"
srec=$sdir/sample.tsv
printf 'slow one\t3\t0\t0\t120.0\t80.2\nquick\t1\t0\t0\t0.4\t0.1\nold four\t2\t0\t0\nmiddle\t5\t0\t2\t9.6\t19.0\nthird\t7\t0\t1\t3.5\t1.0\n' >"$srec"
echo $(($(date +%s) - 200)) >"$srec.start"
out=$(H_RESULTS=$srec SLOWEST=3 "$(dirname "$0")/summary.sh" end 0 2>&1)
rc=$?
want="make test: the slowest suites, wall and CPU seconds (6? s of the 20? were outside every suite: make's own builds):
    120.0    80.2  slow one
      9.6    19.0  middle
      3.5     1.0  third
make test: PASS: 5 suites, 18 tests passed, 0 failed, 3 skipped in 3 min 2? s"
# shellcheck disable=SC2053 # $want is a pattern: ? for the seconds that vary
[ "$rc" -eq 0 ] && [[ $out == $want ]]
h_check summary_lists_the_slowest_suites "$?" "status $rc, '$(tr '\n' '|' <<<"$out")'"
printf 'failing\t1\t2\t0\t3.0\n' >>"$srec"
# SIGPIPE ignored, as some CI runners start their jobs: nothing in the
# summary's pipes may close early and make a writer report an error.
out=$(trap '' PIPE; H_RESULTS=$srec SLOWEST=0 "$(dirname "$0")/summary.sh" end 0 2>&1)
rc=$?
[ "$rc" -eq 1 ] && [[ $out == "make test: FAIL: 6 suites, 19 tests passed, 2 failed, 3 skipped in "*$'\n'"make test: failures in: failing" ]]
h_check summary_fails_on_a_recorded_failure "$?" "status $rc, '$(tr '\n' '|' <<<"$out")'"
# More suites than one pipe buffer holds (4 000 lines, ~160 KiB) and one
# shown: an early close of the sorted list would fail its writer every time.
srec=$sdir/many.tsv
awk 'BEGIN { for (i = 1; i <= 4000; i++) printf "suite number %d of many\t1\t0\t0\t%d.0\t1.0\n", i, i }' >"$srec"
echo "$(date +%s)" >"$srec.start"
out=$(trap '' PIPE; H_RESULTS=$srec SLOWEST=1 "$(dirname "$0")/summary.sh" end 0 2>&1)
rc=$?
[ "$rc" -eq 0 ] && [ "$(wc -l <<<"$out")" -eq 3 ] && [[ $out == *$'\n'"   4000.0     1.0  suite number 4000 of many"$'\n'"make test: PASS: 4000 suites, 4000 tests passed, 0 failed, 0 skipped in "* ]]
h_check summary_reads_its_whole_list "$?" "status $rc, '$(head -c 400 <<<"$out" | tr '\n' '|')'"
# In-kernel tests that skipped themselves at run time (kskip!: `skipped
# (REASON)`) are told from the ones skipped for too few CPUs and from a
# failure's reason line, recorded (h_record_skips) and listed after the
# closing line, each with its suite and reason.
printf 'test a ... ok\r\ntest smp_b ... skipped (needs 2 CPUs, 1 online)\r\ntest c ... skipped (NOHZ_IDLE is off (nohz=off))\r\ntest d ... FAILED\n    skipped (e)\n1 passed, 1 failed, 2 skipped, 0 quarantined\n' >"$sdir/skips.log"
skips=$(h_runtime_skips "$sdir/skips.log")
[ "$skips" = "c (NOHZ_IDLE is off (nohz=off))" ]
h_check runtime_skips_are_told_from_too_few_cpus "$?" "'$(tr '\n' '|' <<<"$skips")'"
srec=$sdir/skips.tsv
printf 'ktest one\t3\t0\t1\t1.0\t1.0\n' >"$srec"
echo "$(date +%s)" >"$srec.start"
(H_RESULTS=$srec h_record_skips "ktest one" "$skips")
out=$(H_RESULTS=$srec SLOWEST=0 "$(dirname "$0")/summary.sh" end 0 2>&1)
rc=$?
[ "$rc" -eq 0 ] && [[ $out == "make test: PASS: 1 suites, 3 tests passed, 0 failed, 1 skipped in "*$'\n'"make test: skipped at run time (untested here):"$'\n'"  ktest one: c (NOHZ_IDLE is off (nohz=off))" ]]
h_check summary_lists_the_runtime_skips "$?" "status $rc, '$(tr '\n' '|' <<<"$out")'"

# 12. h_qemu's icount= (ICOUNT of scripts/boot/qemu.sh): a shift gives
#     -icount, off gives none (make linux-compare ICOUNT=off exports it),
#     anything else is refused with the accepted values named.
(
    h_qemu x86_64 kernel="$0" icount=3 2>/dev/null && [[ " ${QEMU[*]} " == *" -icount shift=3,sleep=off "* ]]
) && (
    h_qemu x86_64 kernel="$0" icount=off 2>/dev/null && [[ " ${QEMU[*]} " != *" -icount "* ]]
)
h_check qemu_icount_takes_a_shift_or_off "$?" "icount=3 and icount=off"
msg=$(ICOUNT=bogus "$(dirname "$0")/../boot/qemu.sh" x86_64 "$0" 2>&1 </dev/null)
rc=$?
[ "$rc" -eq 2 ] && [[ $msg == *"must be a shift 0..9 or off, not 'bogus'"* ]]
h_check qemu_refuses_a_bad_icount "$?" "status $rc, '$msg'"

echo "harness-test: $H_CHECKS_PASSED passed, $H_CHECKS_FAILED failed"
h_record harness "$H_CHECKS_PASSED" "$H_CHECKS_FAILED"
[ "$H_CHECKS_FAILED" -eq 0 ]
