#!/usr/bin/env bash
# make ab: the in-kernel `compare` over several boots, arches and CPU counts,
# then abtool (abtool/) for tables, variance split, CSV, JSON and PNG plots.
#
#   scripts/tools/ab.sh        (all settings through the environment)
#
#   ARCHES="x86_64 aarch64"   arches to boot
#   CPUS="4"                  CPU counts (each arch x each count)
#   BOOTS=3                   boots per arch and count; boot b gets seed=b
#   RUNS=5 WARMUP=1           compare -n / -w (per boot and config)
#   CONFIGS="default|NEXT_BUDDY"              '|'-separated compare configs
#   WORKLOADS="hackbench -g 2|perfpipe -l 2000" '|'-separated workloads
#   ICOUNT=2                  reproducible mode: QEMU -icount shift=N,sleep=off
#                             (one host thread, instruction-counted time);
#                             ICOUNT=off: ordinary multi-threaded TCG, wall-clock time
#   OUT=build/ab              where logs/, tables.txt, samples.*, *.png go
#   BOOT_TIMEOUT=600          seconds one boot may take
#   KERNEL=ELF                boot this kernel instead of building the tree's
#                             (one arch only; make bench-compare's old commits)
#   AB_BOOTARGS=""            more boot arguments, before seed= (kbench.sh:
#                             schedstats=disable, so that compare's runs
#                             time the scheduler without its diagnostic
#                             counters; a kernel older than the argument
#                             warns about it and boots as ever)
#
# The script reaches the kernel as boot arguments (`seed=B run=compare ...;
# ...; poweroff`), not typed on the serial port, so in reproducible mode two
# boots with the same seed print the same bytes. A progress line per run.
set -euo pipefail

# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init ab
root=$H_ROOT
ARCHES=${ARCHES:-x86_64 aarch64}
CPUS=${CPUS:-4}
BOOTS=${BOOTS:-3}
RUNS=${RUNS:-5}
WARMUP=${WARMUP:-1}
CONFIGS=${CONFIGS:-default|NEXT_BUDDY}
WORKLOADS=${WORKLOADS:-hackbench -g 2|perfpipe -l 2000}
ICOUNT=${ICOUNT:-2}
OUT=${OUT:-$root/build/ab}
BOOT_TIMEOUT=${BOOT_TIMEOUT:-600}
AB_BOOTARGS=${AB_BOOTARGS:-}
target_dir=${CARGO_TARGET_DIR:-$root/target}

bad() { echo "error: ab: $*" >&2; exit 2; }
[[ $BOOTS =~ ^[0-9]+$ && $BOOTS -ge 1 ]] || bad "BOOTS must be a positive integer, got '$BOOTS'"
[[ $RUNS =~ ^[0-9]+$ && $RUNS -ge 1 ]] || bad "RUNS must be a positive integer, got '$RUNS'"
[[ $WARMUP =~ ^[0-9]+$ ]] || bad "WARMUP must be an integer >= 0, got '$WARMUP'"
[[ $ICOUNT == off || $ICOUNT =~ ^[0-9]$ ]] || bad "ICOUNT must be off or a shift 0..9, got '$ICOUNT'"
for c in $CPUS; do [[ $c =~ ^[1-8]$ ]] || bad "CPUS must be counts 1..8, got '$c'"; done
for a in $ARCHES; do [[ $a == x86_64 || $a == aarch64 ]] || bad "unknown arch '$a'"; done

# The run= script: one compare per workload, then poweroff.
script=""
IFS='|' read -ra cfgs <<<"$CONFIGS"
IFS='|' read -ra wls <<<"$WORKLOADS"
copts=""
for c in "${cfgs[@]}"; do copts+=" -c '${c:-default}'"; done
for w in "${wls[@]}"; do
    script+="compare -n $RUNS -w $WARMUP$copts -- $w; "
done
script+="poweroff"

failed=()
mkdir -p "$OUT/logs"
rm -f "$OUT"/logs/*.log "$OUT"/logs/*.cmdline
mode="reproducible (-icount shift=$ICOUNT,sleep=off)"
[[ $ICOUNT == off ]] && mode="TCG, wall clock (not reproducible)"
echo "ab: $ARCHES x CPUs {$CPUS} x $BOOTS boot(s), $mode; script: $script"

[[ -z ${KERNEL:-} || $ARCHES != *\ * ]] || bad "KERNEL=ELF needs a single arch in ARCHES"
for arch in $ARCHES; do
    [[ -n ${KERNEL:-} ]] || make -s -C "$root" kernel ARCH="$arch" >/dev/null
    case $arch in
        x86_64) elf=$target_dir/x86_64-unknown-none/release/kernel; qopts=() ;;
        # GICv3 and -cpu max at every CPU count, as in the SMP ktest runs.
        aarch64) elf=$target_dir/aarch64-unknown-none/release/kernel; qopts=(gic=3 cpu=max) ;;
    esac
    elf=${KERNEL:-$elf}
    for cpus in $CPUS; do
        for ((b = 1; b <= BOOTS; b++)); do
            log="$OUT/logs/${arch}_smp${cpus}_seed${b}.log"
            icount=""
            [[ $ICOUNT != off ]] && icount=$ICOUNT
            append="${AB_BOOTARGS:+$AB_BOOTARGS }seed=$b run=$script"
            printf '%s' "$append" >"$log.cmdline"
            t0=$(date +%s.%N)
            h_qemu "$arch" kernel="$elf" append="$append" smp="$cpus" \
                ${icount:+icount=$icount} "${qopts[@]}"
            # stdin from /dev/null: nothing is typed; the script is the boot argument.
            # (set +e: a failed boot is reported below, not fatal.)
            set +e
            timeout -k 5 "$BOOT_TIMEOUT" "${QEMU[@]}" \
                </dev/null 2>&1 | tee "$log" | tr -d '\r' | while IFS= read -r line; do
                case $line in
                    run\ * | warmup\ *) echo "ab: $arch smp$cpus boot $b/$BOOTS: ${line%% | *}" ;;
                    error:* | *PANIC*) echo "ab: $arch smp$cpus boot $b/$BOOTS: $line" ;;
                esac
            done
            rc=${PIPESTATUS[0]}
            set -e
            t1=$(date +%s.%N)
            if ! h_status_ok "$arch" "$rc"; then
                # Keep going: the runs before the failure are still samples,
                # and in reproducible mode the log is an exact reproducer.
                echo "error: ab: $arch smp$cpus boot $b failed (status $rc); see $log; reproduce with:" >&2
                echo "  SMP=$cpus ${icount:+ICOUNT=$icount }${qopts[*]^^} scripts/boot/qemu.sh $arch $elf \"\$(cat $log.cmdline)\"" >&2
                failed+=("$log")
                continue
            fi
            printf 'ab: %s smp%s boot %d/%d done in %.1f s of host time\n' "$arch" "$cpus" "$b" "$BOOTS" \
                "$(echo "$t1 - $t0" | bc)"
            rm -f "$log.cmdline"
        done
    done
done

cd "$root"
cargo run -q -p abtool --release -- --out "$OUT" "$OUT"/logs/*.log
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "error: ab: ${#failed[@]} boot(s) failed (their runs up to the failure are in the tables): ${failed[*]}" >&2
    exit 1
fi
