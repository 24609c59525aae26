# A /plan.sh for the linux-compare initramfs (lc.mode=ab; sourced with /lc.sh):
# can PREEMPT_SHORT act on lcbench's schbench in Linux 7.x at all?
# (docs/results/linux/ab-features.md, "the NO_PREEMPT_SHORT schbench row").
# In 7.2 the feature is read once, in `wakeup_preempt_fair()`: a wakee whose
# slice is shorter than the running entity's skips that one's slice
# protection. So the probe records both slices at every call, with an
# fprobe (BTF arguments) on `wakeup_preempt_fair`: the wakee's `se.slice`,
# `se.custom_slice` and `se.depth`, and the same of `rq->donor` (the
# running task), over one run of `lcbench schbench -m 1 -t 4 -r 1` under
# the boot's features and one with NO_PREEMPT_SHORT. Per run it prints:
#   - `slice: cfg C calls N wakee_shorter S`: the calls, and those where the
#     wakee's slice is the shorter (the only case the feature changes);
#   - `slice: WAKEE / CURRENT: K`: the calls by (slice ns, custom, depth) of
#     the wakee and of the running task;
#   - `slice: other-slice current pid P (COMM): K`: the running tasks whose
#     slice differs from the wakee's (pid 0: a CPU's idle task, whose call
#     returns at its class test, after the probe);
#   - `slice: lost N`: events the ring buffer overwrote (0: the counts are
#     whole).
#
#   scripts/linux-compare/initramfs.sh X_DIR DIR scripts/linux-compare/slice-probe.sh
#   MEM=1G SMP=4 ACCEL=tcg QEMU_EXTRA="-icount shift=2,sleep=off -initrd DIR/initramfs.cpio.gz" \
#     scripts/boot/qemu.sh x86_64 DIR/vmlinuz console=ttyS0 quiet preempt=full lc.mode=ab lc.seed=1
# (X_DIR: the unpacked packages, build/linux-compare/x-sid after a linux-compare run)
T=/sys/kernel/tracing
F=/sys/kernel/debug/sched/features
[ -d $T/events ] || mount -t tracefs nodev $T
probe='f:lc/wp wakeup_preempt_fair ps=p->se.slice:u64 pcs=p->se.custom_slice:u8 pd=p->se.depth:s32'
probe="$probe cpid=rq->donor->pid:s32 cs=rq->donor->se.slice:u64 ccs=rq->donor->se.custom_slice:u8 cd=rq->donor->se.depth:s32"
if ! echo "$probe" >>$T/dynamic_events; then
    echo "slice: error: probe refused: $probe"
    tail -3 $T/error_log
else
    echo 16384 >$T/buffer_size_kb || echo "slice: error: buffer_size_kb"
    echo "slice: base_slice_ns $(cat /sys/kernel/debug/sched/base_slice_ns)"
    for cfg in default NO_PREEMPT_SHORT; do
        [ $cfg = default ] || echo $cfg >$F || echo "slice: error: $cfg refused"
        echo >$T/trace
        echo 1 >$T/events/lc/enable
        lcbench schbench -m 1 -t 4 -r 1 | head -1
        echo 0 >$T/events/lc/enable
        echo "slice: lost $(lc_ring_lost)"
        awk -v cfg=$cfg '
        / wp: / {
            n++
            delete A
            for (i = 1; i <= NF; i++) { j = index($i, "="); if (j) A[substr($i, 1, j - 1)] = substr($i, j + 1) }
            by[A["ps"] " " A["pcs"] " " A["pd"] " / " A["cs"] " " A["ccs"] " " A["cd"]]++
            if (A["ps"] + 0 < A["cs"] + 0) shorter++
            if (A["ps"] != A["cs"]) other[A["cpid"]]++
        }
        END {
            printf "slice: cfg %s calls %d wakee_shorter %d\n", cfg, n, shorter
            for (k in by) printf "slice: %s: %d\n", k, by[k]
            for (p in other) printf "%s %d\n", p, other[p] >"/tmp/slice.other"
        }' $T/trace
        [ -f /tmp/slice.other ] && while read -r pid k; do
            if [ "$pid" = 0 ]; then comm=idle; else comm=$(cat /proc/"$pid"/comm 2>/dev/null || echo exited); fi
            echo "slice: other-slice current pid $pid ($comm): $k"
        done </tmp/slice.other
        rm -f /tmp/slice.other
        echo PREEMPT_SHORT >$F
    done
fi
