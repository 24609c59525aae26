#!/bin/sh
# /init of the linux-compare initramfs (busybox sh). Mounts proc, sys,
# devtmpfs and debugfs, prints what the harness checks (kernel version, CPUs
# online, preempt model, scheduler features), then runs the mode named on
# the kernel command line and powers off:
#   lc.mode=ab       /plan.sh with the A/B functions of /lc.sh (lc.seed=N)
#   lc.mode=smoke    a feature flipped and read back, one tiny hackbench
#   lc.mode=latency  cyclictest and pipe round trips (lc.reps=N, lc.loops=N)
#   lc.mode=costs    lcbench costs: the simulator's qemu:N costs (lc.iters=N)
#   lc.mode=topology what the scheduler sees of the machine: each CPU's
#                    package/core ids, its caches' shared_cpu_list, its sched
#                    domains (debugfs) and /proc/schedstat's domain lines
#   lc.mode=sh       an interactive shell (debugging)
# (an initramfs built on a host of another architecture has only /bin/sh)
[ -e /bin/mount ] || /bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t debugfs debugfs /sys/kernel/debug
mkdir -p /dev/shm && mount -t tmpfs shm /dev/shm
export PATH=/bin LD_LIBRARY_PATH=/lib/x86_64-linux-gnu:/lib/aarch64-linux-gnu HOME=/tmp
arg() { tr ' ' '\n' </proc/cmdline | sed -n "s/^$1=//p" | tail -1; }
mode=$(arg lc.mode)
echo "lc: Linux $(uname -r) $(cut -d' ' -f4- /proc/version | cut -c1-60)"
echo "lc: cpus online $(cat /sys/devices/system/cpu/online) of possible $(cat /sys/devices/system/cpu/possible), nproc $(nproc)"
echo "lc: preempt $(cat /sys/kernel/debug/sched/preempt 2>/dev/null)"
echo "lc: features $(cat /sys/kernel/debug/sched/features 2>/dev/null)"
# schedstats (/proc/schedstat's sched_count, goidle, ttwu) are off by
# default. The A/B and its probes read them, so they turn them on; the
# latency part times the kernel as it ships, with them off, as ours' own
# latency boot (whose wakeup counters only `compare` turns on) does.
[ "$mode" = latency ] || echo 1 >/proc/sys/kernel/sched_schedstats
echo "lc: mode ${mode:-none} seed $(arg lc.seed) schedstats $(cat /proc/sys/kernel/sched_schedstats)"
. /lc.sh
[ "$mode" = sh ] || [ "$mode" = topology ] || lc_settle
case $mode in
    ab) . /plan.sh ;;
    smoke) lc_smoke ;;
    latency) lc_latency "$(arg lc.reps)" "$(arg lc.loops)" ;;
    costs) lcbench costs -n "$(arg lc.iters)" ;;
    topology) lc_topology ;;
    sh) setsid cttyhack sh ;;
    *) echo "lc: error: unknown lc.mode '$mode'" ;;
esac
echo "lc: done"
sync
poweroff -f
