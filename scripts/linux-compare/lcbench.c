/*
 * lcbench: the Linux side of `make linux-compare`'s workloads that Debian does
 * not package, with the shapes of the `sched>` shell's workloads
 * (kernel/src/workloads/). One static binary, several commands:
 *
 *   lcbench rus CMD [ARGS...]
 *       runs CMD, then prints its (and its waited-for descendants')
 *       voluntary and involuntary context switches, wall time and CPU
 *       time (user + system: their summed sum_exec_runtime, split by ticks):
 *       "rus: wall_ns=N nvcsw=N nivcsw=N status=N cpu_us=N"
 *   lcbench schbench [-m MSG] [-t WORKERS] [-r SECONDS] [-F KB] [-s USEC] [-M]
 *       schbench's shape: workers queue themselves on their message thread,
 *       post its futex and sleep on their own; the message thread wakes each
 *       (stamping the time just before), the worker records the wakeup
 *       latency, sleeps -s us (its I/O), touches -F KiB and records the request
 *       latency. Defaults as the shell's: -m 1 -t 4 -r 5 -F 256 -s 100.
 *       Counters after the metrics: each wakeup by where the worker was when
 *       posted (wk_awake / wk_same / wk_other), the posts each way and how
 *       many woke a sleeper, the threads' involuntary switches. -M adds the
 *       message threads' own wakeups (msg_wake_sum_us, msg_same): of the
 *       rounds that slept first, the time from the stamp of the post that
 *       set the futex (taken before its store, only when it was clear) to
 *       the return from the wait, and how many ran on the posting CPU. Off
 *       by default: the stamps are clock reads the other runs do not make.
 *   lcbench pgbench [-c CLIENTS] [-t TX] [-S]
 *       pgbench's shape: one backend thread per client over a unix stream
 *       socket pair; read-write: 7 statements per transaction (BEGIN and END
 *       a fifth of 20 us of backend CPU work, END also sleeps 200 us), -S:
 *       one statement of 20 us. 128-byte messages. Defaults -c 1 -t 10.
 *   lcbench spin -d MS [-c CPU] SPEC...
 *       one CPU-bound process per SPEC, all released together, all stopped
 *       at the same end time; prints each one's CPU time and share. SPEC:
 *         N            nice N (SCHED_OTHER)
 *         batch:N      SCHED_BATCH at nice N
 *         idle         SCHED_IDLE
 *         slice:US     nice 0 with a custom slice (sched_setattr sched_runtime)
 *         duty:RUN:SLP nice 0, runs RUN us then sleeps SLP us, repeatedly
 *         fifo:PRIO    SCHED_FIFO at priority PRIO (an RT hog: with the fair
 *                      server, Linux 6.12+ runs the fair spinners 50 ms of
 *                      every 1 s beside it)
 *       A SPEC may end in @DIR: that spinner first moves itself into the
 *       cgroup (v2) directory DIR (writes its pid to DIR/cgroup.procs), then
 *       takes its policy; after the usual lines, one per such spinner:
 *       "cgtask: i=K cgroup=DIR pid=P cpu_ms=X utime_ticks=U stime_ticks=S"
 *       (its CPU time, and /proc/PID/stat's utime and stime in clock ticks,
 *       read by the spinner itself when it stops).
 *   lcbench wakelat -d MS [-c CPU] [-n HOGS] [-p PERIOD_US] [-P POLICY] [-s SLICE_US] [-f PRIO]
 *       HOGS nice-0 spinners and one sleeper on CPU -c; the sleeper wakes
 *       every PERIOD_US (absolute CLOCK_MONOTONIC timer) with POLICY (normal,
 *       batch, idle) and, with -s, a custom slice; it records how late it
 *       runs. Prints avg, p50, p99 and max wakeup latency. With -f the hogs
 *       are SCHED_FIFO at PRIO (the sleeper then runs only when the fair
 *       server lends it time); they take their policy, then all start at a
 *       common time 50 ms ahead, and the sleeper's first wakeup is 20 ms
 *       after it (a fair parent could not start the sleeper behind running
 *       FIFO hogs): the shape of our kernel's wakelat.
 *   lcbench dl admit|pinned|narrow|periodic ...
 *       SCHED_DEADLINE (raw sched_setattr), the shapes of the shell's
 *       `chrt -d`, `taskset` and `dlperiodic`:
 *       dl admit -r RUNTIME_US -p PERIOD_US [-D DEADLINE_US] [-n MAX]
 *           children unpinned, one after the other, each asks for
 *           SCHED_DEADLINE and (admitted) sleeps holding its bandwidth, up to
 *           MAX (default 16) or the first refusal. Prints "dl: admitted N"
 *           and "dl: errno NAME" (the refusal's errno, `ok` if none).
 *       dl pinned -r RUNTIME_US -p PERIOD_US [-D DEADLINE_US]
 *           a child allowed only on CPU 0 asks for SCHED_DEADLINE: its errno
 *           (Linux: EPERM, the root domain is not inside its affinity).
 *       dl narrow -r RUNTIME_US -p PERIOD_US [-D DEADLINE_US]
 *           an unpinned child becomes SCHED_DEADLINE, then asks for CPU 0
 *           alone with sched_setaffinity: its errno (Linux: EBUSY).
 *       dl periodic -n N -r RUNTIME_US -D DEADLINE_US -p PERIOD_US -w WORK_US -d MS
 *           N unpinned SCHED_DEADLINE children released together 9 ms
 *           ahead (the shell's two ticks and 1 ms), then every PERIOD_US; each job burns WORK_US of the
 *           task's own CPU time (CLOCK_THREAD_CPUTIME_ID) and records its
 *           response time (end - release); a job that ends after release +
 *           DEADLINE_US missed; a late job delays the next one, which starts
 *           at once (no skipping). Jobs whose period ends within MS. Prints
 *           "dlperiodic: N tasks runtime R deadline D period P work W us: J
 *           jobs, M missed, response avg A p50 B p99 C max X us, lateness
 *           max L us" (p50/p99 order statistics rounded down to whole us,
 *           lateness = response - deadline, negative when early).
 *   lcbench turns [-d MS]
 *       QEMU's round-robin vCPU turns under -icount: for K = 1..CPUs, K
 *       spinners on CPUs 0..K-1 read CLOCK_MONOTONIC for MS ms (default
 *       1000); a jump of more than 20 us is a gap (another vCPU's turn, or
 *       at K=1 the spinner's own interrupts), the stretch between two gaps a
 *       turn. Prints per K the turns' and gaps' p10/p50/p90/mean in us.
 *       `costs` prints the same as "cost: vcpu_turns_kK: ..." lines.
 *   lcbench pingpong [-s] [-n ITERS]
 *       costs' pingpong_half_ns alone (-s: over unix stream socketpairs),
 *       on CPU 0: "pingpong: pipe|sock half_ns=N switches_a_round=N".
 *       For a probe around the reader's sleep (sleeplock-probe.sh).
 *   lcbench getppid [-n ITERS]
 *       costs' null_syscall_ns alone, on CPU 0: "getppid: ns=N" (a
 *       near-empty syscall: an fprobe pair on it measures the pair's own
 *       cost inside a traced span, sleeplock-probe.sh).
 *   lcbench costs [-n ITERS]
 *       the simulator's qemu:N cost table (sim/src/machine.rs), measured on
 *       this machine (`make linux-compare WHAT=costs`). Times are
 *       CLOCK_MONOTONIC, which under QEMU -icount counts instructions, so
 *       every figure is reproducible. Messages are 100 bytes, as
 *       hackbench's. Lines "cost: NAME VALUE [note]".
 *       Figures (each over ITERS operations after ITERS/10 of warm-up; the
 *       wakeup figures also as medians, which a vCPU losing its round-robin turn
 *       inside a timed write does not move):
 *         work_scale_kN      time of a fixed loop on CPU 0 while N-1 other vCPUs
 *                            spin, over the same loop alone: under -icount the
 *                            vCPUs take turns on one host thread and the clock
 *                            counts every vCPU's instructions
 *         null_syscall_ns    getppid()
 *         pipe_write_ns / pipe_read_ns    100-byte write / read, nobody waiting
 *         sock_write_ns / sock_read_ns    the same on a unix stream socketpair
 *         switch_thread_ns / switch_process_ns
 *                            two threads / processes on CPU 0 calling sched_yield:
 *                            (time - 2 x ITERS x yield alone) / context switches
 *                            counted in /proc/stat
 *         wake_local_ns      a write that wakes a SCHED_BATCH reader sleeping on
 *                            the same CPU (batch: no wakeup preemption inside the
 *                            timed write), minus a write in the same loop that
 *                            wakes nobody: the waker's try_to_wake_up, local
 *         wake_remote_ns     the same with the reader pinned to an idle CPU 1
 *                            (wake list + IPI send), waker side
 *         lat_remote_idle_ns from the waker's return from write() to the reader's
 *                            return from read() on idle CPU 1
 *         wake_remote_busy_ns, lat_remote_busy_ns
 *                            the same with a SCHED_IDLE spinner on CPU 1 (the
 *                            reader preempts it: direct enqueue + resched IPI);
 *                            two vCPUs busy
 *         pingpong_half_ns   two SCHED_BATCH processes on CPU 0 sending 100 bytes
 *                            back and forth over two pipes: every read sleeps
 *                            first, every write wakes the sleeping reader (no
 *                            wakeup preemption: batch), one switch per half
 *                            round (checked in /proc/stat): time per half round
 *         sleep_ns           pingpong_half_ns less what the figures above charge
 *                            for it (pipe_write_ns + pipe_read_ns + wake_local_ns's
 *                            medians + switch_process_ns): a read that sleeps
 *                            (the task's dequeue, the wait queue, the empty
 *                            check and the retry) beyond a read that finds data
 *                            and a yield's switch, in which nobody sleeps
 *         pingpong_sock_half_ns, sleep_sock_ns   the same over unix stream
 *                            socketpairs (with sock_write_ns, sock_read_ns)
 *         tick_irq_ns        this process alone on CPU 0 (the other vCPUs idle)
 *                            reading CLOCK_MONOTONIC for 1 s: a jump of more
 *                            than 2 us is an interrupt; the median jump less
 *                            one loop, against CPU 0's local timer interrupts
 *                            (LOC in /proc/interrupts) in the same second
 *         tick_pre_ns, tick_post_ns, tick_probe_ns
 *                            tick_irq_ns's spinner again, with an fprobe on
 *                            sched_tick() (trace clock mono, raw output: ns):
 *                            the median time from a jump's start to the probe
 *                            (pre: the interrupt's entry, the timekeeping and
 *                            update_process_times up to sched_tick, whose
 *                            clock update the tick's decisions see) and from
 *                            the probe to the jump's end (post), each less half
 *                            a loop; probe_ns is the traced median jump less
 *                            the untraced one: the probe's own cost, part of it
 *                            in pre and part in post (not told apart)
 *         switch_gap_tick_ns, switch_gap_hrtick_ns, hrtick_irq_ns
 *                            two nice-0 spinners on CPU 0 (other vCPUs idle)
 *                            recording their clock jumps for 1 s; a switch gap
 *                            runs from one's last read to the other's first:
 *                            the interrupt that ended the slice and the switch.
 *                            With NO_HRTICK every slice ends at a tick, with
 *                            HRTICK at its expiry (Linux 7.2 arms the HRTICK
 *                            only for a newly picked task, so the expiry is
 *                            measured through the switch it causes); medians.
 *                            hrtick_irq_ns = tick_irq_ns + the HRTICK's gap -
 *                            the tick's gap: the HRTICK's entry, hrtick() and
 *                            exit, the lone tick standing for the tick's
 *         hrtick_pre_ns, hrtick_post_ns, hrtick_probe_ns
 *                            the HRTICK run again with an fprobe on hrtick():
 *                            a gap's start to hrtick()'s entry (pre), and the
 *                            entry to the other spinner's first read (post,
 *                            the switch included); probe_ns as the tick's
 *         ipi_resched_ns     a spinner on CPU 1 (a SCHED_IDLE one queued beside
 *                            it, HRTICK off) records its clock jumps while this
 *                            process on CPU 0 renices it (1, 0, 1, ...), which
 *                            sends CPU 1 a reschedule IPI, and, on alternate
 *                            calls, a task of CPU 1 that sleeps, which sends
 *                            nothing, sleeping 200 us after each call (CPU 0
 *                            idle: its turn passes at once). Under round-robin
 *                            TCG each call is inside one jump of the spinner,
 *                            with the rest of CPU 0's turn; the medians' jump
 *                            difference less the calls' own (timed on CPU 0)
 *                            is the IPI's entry, handler, the return's
 *                            schedule() (the spinner picked again) and exit on
 *                            CPU 1; RES and CAL counted on CPU 1
 *         ipi_call_wake_ns   wake_remote_ns' round again (the reader woken on
 *                            idle CPU 1 through its wake list), traced with
 *                            irq_vectors:call_function_single_entry/exit on
 *                            CPU 1: the median entry-to-exit (the handler's
 *                            body: sched_ttwu_pending's activation) less one
 *                            event's cost, half the traced latency's median
 *                            less the untraced one (two events in it); the
 *                            interrupt's entry and exit are not in it
 *         wake_scan_ns       with nice-19 spinners on CPUs 1..N-1 and SIS_UTIL
 *                            off, a SCHED_BATCH reader woken onto CPU 0 unpinned
 *                            (select_idle_sibling checks CPU 0, then scans the
 *                            other CPUs of the LLC and finds none idle) minus the
 *                            same reader pinned to CPU 0 (no select_task_rq),
 *                            medians; before each round the waker yields until
 *                            the reader sleeps (/proc/PID/stat state S)
 *
 * Every command but costs ends with a line "lcbench: METRIC=VALUE ..." that
 * the guest script turns into a `compare` run line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SCHED_BATCH
#define SCHED_BATCH 3
#endif
#ifndef SCHED_IDLE
#define SCHED_IDLE 5
#endif

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static long num(const char *s, long lo, long hi, const char *what)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *s == 0 || *end != 0 || v < lo || v > hi) {
		fprintf(stderr, "lcbench: %s must be %ld..%ld, got '%s'\n", what, lo, hi, s);
		exit(2);
	}
	return v;
}

static void pin(int cpu)
{
	if (cpu < 0)
		return;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		die("sched_setaffinity");
}

/* Wall-clock busy work, as the shell's work_ns. */
static void work_ns(uint64_t ns)
{
	uint64_t until = now_ns() + ns;
	while (now_ns() < until)
		;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { ns / 1000000000ull, ns % 1000000000ull };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static long futex(atomic_int *uaddr, int op, int val)
{
	return syscall(SYS_futex, uaddr, op, val, NULL, NULL, 0);
}

/*
 * Sleeps until *f is non-zero, then clears it (a binary semaphore); returns
 * whether it slept (a FUTEX_WAIT returned 0).
 */
static int sem_wait_fs(atomic_int *f)
{
	int slept = 0;
	for (;;) {
		int one = 1;
		if (atomic_compare_exchange_strong(f, &one, 0))
			return slept;
		if (futex(f, FUTEX_WAIT_PRIVATE, 0) == 0)
			slept = 1;
	}
}

/* Returns how many sleepers FUTEX_WAKE woke (0 or 1). */
static long sem_post_f(atomic_int *f)
{
	atomic_store(f, 1);
	return futex(f, FUTEX_WAKE_PRIVATE, 1);
}

/* Latency histogram: 1 us buckets up to 1 s (larger values go to the last). */
#define HBUCKETS 1000000
struct hist {
	atomic_uint *b;
	atomic_ullong n, sum;
};

static void hist_init(struct hist *h)
{
	h->b = calloc(HBUCKETS, sizeof(*h->b));
	if (!h->b)
		die("calloc");
	h->n = 0;
	h->sum = 0;
}

static void hist_add(struct hist *h, uint64_t ns)
{
	uint64_t us = ns / 1000;
	if (us >= HBUCKETS)
		us = HBUCKETS - 1;
	atomic_fetch_add(&h->b[us], 1);
	atomic_fetch_add(&h->n, 1);
	atomic_fetch_add(&h->sum, ns);
}

/* The smallest bucket (us) at or under which per_mille of the samples lie. */
static double hist_pct(struct hist *h, unsigned per_mille)
{
	uint64_t n = h->n, want = (n * per_mille + 999) / 1000, seen = 0;
	if (n == 0)
		return 0;
	for (uint64_t i = 0; i < HBUCKETS; i++) {
		seen += h->b[i];
		if (seen >= want)
			return (double)i;
	}
	return HBUCKETS - 1;
}

/* ---- rus ---------------------------------------------------------------- */

static int cmd_rus(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: lcbench rus CMD [ARGS...]\n");
		return 2;
	}
	uint64_t t0 = now_ns();
	pid_t p = fork();
	if (p < 0)
		die("fork");
	if (p == 0) {
		execvp(argv[1], argv + 1);
		die(argv[1]);
	}
	int st;
	if (waitpid(p, &st, 0) < 0)
		die("waitpid");
	uint64_t t1 = now_ns();
	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	long long cpu_us = (long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
			   ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
	printf("rus: wall_ns=%llu nvcsw=%ld nivcsw=%ld status=%d cpu_us=%lld\n", (unsigned long long)(t1 - t0),
	       ru.ru_nvcsw, ru.ru_nivcsw, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), cpu_us);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

/* ---- schbench ----------------------------------------------------------- */

struct sworker {
	atomic_int sem;
	atomic_ullong woken_at;
	atomic_int waker_cpu;
	char *buf;
	struct sgroup *g;
	int idx;
};

struct sgroup {
	atomic_int post;
	atomic_ullong first_post_at; /* -M: the stamp and CPU of the post that set `post` */
	atomic_int first_post_cpu;
	pthread_mutex_t lock;
	int *list, nlist;
	struct sworker *w;
	int nw;
	atomic_int done;
};

static struct hist s_wake, s_req;
static atomic_ullong s_requests;
/*
 * Counters (after " | " in the lcbench line): each wakeup latency by where the
 * worker was when posted: 0 not asleep yet (its FUTEX_WAIT never slept), 1
 * asleep and run on the message thread's CPU (the one it stamped on), 2 asleep
 * and run on another CPU; the posts each way and how many woke a sleeper; the
 * threads' involuntary switches (RUSAGE_THREAD).
 */
static struct hist s_wcat[3];
static atomic_ullong s_wposts, s_wposts_woke, s_mposts, s_mposts_woke, s_msg_slept, s_msg_rounds;
static atomic_ullong s_nivcsw_msg, s_nivcsw_wk;

static long thread_nivcsw(void)
{
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_nivcsw;
}
static long s_kb = 256, s_sleep_us = 100;
static int s_msg_lat; /* -M */
static atomic_ullong s_msg_wake_ns, s_msg_same;

static void *sworker_main(void *arg)
{
	struct sworker *w = arg;
	struct sgroup *g = w->g;
	for (;;) {
		pthread_mutex_lock(&g->lock);
		g->list[g->nlist++] = w->idx;
		pthread_mutex_unlock(&g->lock);
		if (s_msg_lat && !atomic_load(&g->post)) {
			atomic_store(&g->first_post_at, now_ns());
			atomic_store(&g->first_post_cpu, sched_getcpu());
		}
		atomic_fetch_add(&s_wposts_woke, sem_post_f(&g->post));
		atomic_fetch_add(&s_wposts, 1);
		int slept = sem_wait_fs(&w->sem);
		uint64_t t = now_ns();
		if (atomic_load(&g->done)) {
			atomic_fetch_add(&s_nivcsw_wk, thread_nivcsw());
			return NULL;
		}
		hist_add(&s_wake, t - w->woken_at);
		int cat = !slept ? 0 : sched_getcpu() == atomic_load(&w->waker_cpu) ? 1 : 2;
		hist_add(&s_wcat[cat], t - w->woken_at);
		if (s_sleep_us)
			sleep_ns(s_sleep_us * 1000);
		for (long i = 0; i < s_kb * 1024; i += 64)
			w->buf[i]++;
		hist_add(&s_req, now_ns() - t);
		atomic_fetch_add(&s_requests, 1);
	}
}

static uint64_t s_end;

static void *smsg_main(void *arg)
{
	struct sgroup *g = arg;
	int *mine = calloc(g->nw, sizeof(int));
	if (!mine)
		die("calloc");
	while (now_ns() < s_end) {
		int slept = sem_wait_fs(&g->post);
		atomic_fetch_add(&s_msg_slept, slept);
		if (s_msg_lat && slept) {
			atomic_fetch_add(&s_msg_wake_ns, now_ns() - atomic_load(&g->first_post_at));
			atomic_fetch_add(&s_msg_same, sched_getcpu() == atomic_load(&g->first_post_cpu));
		}
		atomic_fetch_add(&s_msg_rounds, 1);
		pthread_mutex_lock(&g->lock);
		int n = g->nlist;
		memcpy(mine, g->list, n * sizeof(int));
		g->nlist = 0;
		pthread_mutex_unlock(&g->lock);
		for (int i = 0; i < n; i++) {
			struct sworker *w = &g->w[mine[i]];
			atomic_store(&w->waker_cpu, sched_getcpu());
			w->woken_at = now_ns();
			atomic_fetch_add(&s_mposts_woke, sem_post_f(&w->sem));
			atomic_fetch_add(&s_mposts, 1);
		}
	}
	atomic_fetch_add(&s_nivcsw_msg, thread_nivcsw());
	atomic_store(&g->done, 1);
	for (int i = 0; i < g->nw; i++)
		sem_post_f(&g->w[i].sem);
	free(mine);
	return NULL;
}

static int cmd_schbench(int argc, char **argv)
{
	long m = 1, t = 4, r = 5;
	int c;
	while ((c = getopt(argc, argv, "m:t:r:F:s:M")) != -1) {
		switch (c) {
		case 'm': m = num(optarg, 1, 64, "-m"); break;
		case 't': t = num(optarg, 1, 4095, "-t"); break;
		case 'r': r = num(optarg, 1, 600, "-r"); break;
		case 'F': s_kb = num(optarg, 0, 65536, "-F"); break;
		case 's': s_sleep_us = num(optarg, 0, 1000000, "-s"); break;
		case 'M': s_msg_lat = 1; break;
		default: return 2;
		}
	}
	hist_init(&s_wake);
	hist_init(&s_req);
	for (int i = 0; i < 3; i++)
		hist_init(&s_wcat[i]);
	struct sgroup *gs = calloc(m, sizeof(*gs));
	pthread_t *th = calloc(m * (t + 1), sizeof(pthread_t));
	if (!gs || !th)
		die("calloc");
	uint64_t t0 = now_ns();
	s_end = t0 + (uint64_t)r * 1000000000ull;
	int k = 0;
	for (long i = 0; i < m; i++) {
		struct sgroup *g = &gs[i];
		pthread_mutex_init(&g->lock, NULL);
		g->nw = t;
		g->w = calloc(t, sizeof(*g->w));
		g->list = calloc(t, sizeof(int));
		if (!g->w || !g->list)
			die("calloc");
		if (pthread_create(&th[k++], NULL, smsg_main, g))
			die("pthread_create");
		for (long j = 0; j < t; j++) {
			g->w[j].g = g;
			g->w[j].idx = j;
			g->w[j].buf = calloc(1, s_kb * 1024 + 64);
			if (!g->w[j].buf)
				die("calloc");
			if (pthread_create(&th[k++], NULL, sworker_main, &g->w[j]))
				die("pthread_create");
		}
	}
	for (int i = 0; i < k; i++)
		pthread_join(th[i], NULL);
	double secs = (now_ns() - t0) / 1e9;
	printf("schbench: wakeup p50 %.0f p99 %.0f us; request p50 %.0f p99 %.0f us; %llu requests in %.3f s\n",
	       hist_pct(&s_wake, 500), hist_pct(&s_wake, 990), hist_pct(&s_req, 500), hist_pct(&s_req, 990),
	       (unsigned long long)s_requests, secs);
	printf("lcbench: wakeup_p99_us=%.4f request_p99_us=%.4f rps=%.4f | ", hist_pct(&s_wake, 990),
	       hist_pct(&s_req, 990), s_requests / secs);
	static const char *cat[3] = { "awake", "same", "other" };
	for (int i = 0; i < 3; i++)
		printf("wk_%s=%llu wk_%s_p99_us=%.0f wk_%s_sum_us=%llu ", cat[i], (unsigned long long)s_wcat[i].n,
		       cat[i], hist_pct(&s_wcat[i], 990), cat[i], (unsigned long long)(s_wcat[i].sum / 1000));
	printf("msg_posts=%llu msg_posts_woke=%llu wk_posts=%llu wk_posts_woke=%llu msg_rounds=%llu msg_slept=%llu "
	       "nivcsw_msg=%llu nivcsw_wk=%llu",
	       (unsigned long long)s_mposts, (unsigned long long)s_mposts_woke, (unsigned long long)s_wposts,
	       (unsigned long long)s_wposts_woke, (unsigned long long)s_msg_rounds, (unsigned long long)s_msg_slept,
	       (unsigned long long)s_nivcsw_msg, (unsigned long long)s_nivcsw_wk);
	if (s_msg_lat)
		printf(" msg_wake_sum_us=%llu msg_same=%llu", (unsigned long long)(s_msg_wake_ns / 1000),
		       (unsigned long long)s_msg_same);
	printf("\n");
	return 0;
}

/* ---- pgbench ------------------------------------------------------------ */

#define STMT_NS 20000ull
#define COMMIT_SLEEP_NS 200000ull
#define MSG_BYTES 128

struct conn {
	int cfd, bfd;
	long tx;
	int select_only;
	uint64_t lat_sum, done, end;
};

static void full_io(int fd, char *b, int wr)
{
	size_t got = 0;
	while (got < MSG_BYTES) {
		ssize_t n = wr ? write(fd, b + got, MSG_BYTES - got) : read(fd, b + got, MSG_BYTES - got);
		if (n <= 0)
			die(wr ? "write" : "read");
		got += n;
	}
}

static void *backend_main(void *arg)
{
	struct conn *c = arg;
	char b[MSG_BYTES];
	for (;;) {
		full_io(c->bfd, b, 0);
		uint32_t i, n;
		memcpy(&i, b, 4);
		memcpy(&n, b + 4, 4);
		if (i == UINT32_MAX)
			return NULL;
		if (n == 1)
			work_ns(STMT_NS);
		else if (i == 0)
			work_ns(STMT_NS / 5);
		else if (i == n - 1) {
			work_ns(STMT_NS / 5);
			sleep_ns(COMMIT_SLEEP_NS);
		} else
			work_ns(STMT_NS);
		full_io(c->bfd, b, 1);
	}
}

static pthread_barrier_t pg_start;

static void *client_main(void *arg)
{
	struct conn *c = arg;
	char b[MSG_BYTES] = { 0 };
	uint32_t n = c->select_only ? 1 : 7;
	pthread_barrier_wait(&pg_start);
	for (long t = 0; t < c->tx; t++) {
		uint64_t t0 = now_ns();
		for (uint32_t i = 0; i < n; i++) {
			memcpy(b, &i, 4);
			memcpy(b + 4, &n, 4);
			full_io(c->cfd, b, 1);
			full_io(c->cfd, b, 0);
		}
		c->lat_sum += now_ns() - t0;
		c->done++;
	}
	c->end = now_ns();
	uint32_t poison = UINT32_MAX;
	memcpy(b, &poison, 4);
	full_io(c->cfd, b, 1);
	return NULL;
}

static int cmd_pgbench(int argc, char **argv)
{
	long clients = 1, tx = 10;
	int sel = 0, c;
	while ((c = getopt(argc, argv, "c:t:S")) != -1) {
		switch (c) {
		case 'c': clients = num(optarg, 1, 1000, "-c"); break;
		case 't': tx = num(optarg, 1, 1000000, "-t"); break;
		case 'S': sel = 1; break;
		default: return 2;
		}
	}
	struct conn *cs = calloc(clients, sizeof(*cs));
	pthread_t *th = calloc(2 * clients, sizeof(pthread_t));
	if (!cs || !th)
		die("calloc");
	pthread_barrier_init(&pg_start, NULL, clients + 1);
	for (long i = 0; i < clients; i++) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
			die("socketpair");
		cs[i] = (struct conn){ .cfd = sv[0], .bfd = sv[1], .tx = tx, .select_only = sel };
		if (pthread_create(&th[2 * i], NULL, backend_main, &cs[i]) ||
		    pthread_create(&th[2 * i + 1], NULL, client_main, &cs[i]))
			die("pthread_create");
	}
	pthread_barrier_wait(&pg_start);
	uint64_t t0 = now_ns(), end = t0, done = 0, lat = 0;
	for (long i = 0; i < 2 * clients; i++)
		pthread_join(th[i], NULL);
	for (long i = 0; i < clients; i++) {
		done += cs[i].done;
		lat += cs[i].lat_sum;
		if (cs[i].end > end)
			end = cs[i].end;
	}
	double secs = (end - t0) / 1e9, lat_ms = done ? lat / 1e6 / done : 0;
	printf("number of transactions actually processed: %llu/%llu\n", (unsigned long long)done,
	       (unsigned long long)(clients * tx));
	printf("latency average = %.3f ms\ntps = %.3f\n", lat_ms, done / secs);
	printf("lcbench: tps=%.4f lat_avg_ms=%.4f\n", done / secs, lat_ms);
	return 0;
}

/* ---- spin --------------------------------------------------------------- */

struct sched_attr_l {
	uint32_t size, sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime, sched_deadline, sched_period;
	uint32_t util_min, util_max;
};

/* Applies a SPEC to the calling process; returns the duty cycle (run, sleep). */
static void apply_spec(const char *spec, uint64_t *run_ns, uint64_t *sleep_ns_out)
{
	struct sched_attr_l a = { .size = sizeof(a), .sched_policy = SCHED_OTHER };
	*run_ns = *sleep_ns_out = 0;
	if (strncmp(spec, "batch:", 6) == 0) {
		a.sched_policy = SCHED_BATCH;
		a.sched_nice = num(spec + 6, -20, 19, "batch:NICE");
	} else if (strcmp(spec, "idle") == 0) {
		a.sched_policy = SCHED_IDLE;
	} else if (strncmp(spec, "slice:", 6) == 0) {
		a.sched_runtime = num(spec + 6, 100, 100000, "slice:US") * 1000ull;
	} else if (strncmp(spec, "fifo:", 5) == 0) {
		a.sched_policy = SCHED_FIFO;
		a.sched_priority = num(spec + 5, 1, 99, "fifo:PRIO");
	} else if (strncmp(spec, "duty:", 5) == 0) {
		const char *c = strchr(spec + 5, ':');
		if (!c) {
			fprintf(stderr, "lcbench: duty:RUN_US:SLEEP_US, got '%s'\n", spec);
			exit(2);
		}
		char run[32];
		snprintf(run, sizeof(run), "%.*s", (int)(c - spec - 5), spec + 5);
		*run_ns = num(run, 1, 10000000, "duty RUN_US") * 1000ull;
		*sleep_ns_out = num(c + 1, 1, 10000000, "duty SLEEP_US") * 1000ull;
	} else {
		a.sched_nice = num(spec, -20, 19, "NICE");
	}
	if (syscall(SYS_sched_setattr, 0, &a, 0) != 0)
		die("sched_setattr");
}

/* Moves the calling process into the cgroup v2 directory DIR. */
static void join_cgroup(const char *dir)
{
	char path[300], pid[32];
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	int fd = open(path, O_WRONLY);
	int len = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (fd < 0 || write(fd, pid, len) != len) {
		fprintf(stderr, "lcbench: cannot join cgroup %s: %s\n", dir, strerror(errno));
		exit(1);
	}
	close(fd);
}

/* The calling process's utime and stime (clock ticks) from /proc/self/stat. */
static void stat_ticks(uint64_t ticks[2])
{
	char buf[1024];
	int fd = open("/proc/self/stat", O_RDONLY);
	ssize_t len = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (len <= 0)
		return;
	buf[len] = 0;
	/* after "PID (COMM) ": state is field 3, utime 14, stime 15 */
	char *p = strrchr(buf, ')');
	unsigned long long u, s;
	if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &u, &s) == 2) {
		ticks[0] = u;
		ticks[1] = s;
	}
}

static int cmd_spin(int argc, char **argv)
{
	long ms = -1, cpu = -1;
	/* not getopt: a SPEC may be a negative nice value */
	int optind = 1;
	while (optind + 1 < argc && (!strcmp(argv[optind], "-d") || !strcmp(argv[optind], "-c"))) {
		if (argv[optind][1] == 'd')
			ms = num(argv[optind + 1], 1, 600000, "-d MS");
		else
			cpu = num(argv[optind + 1], 0, 4095, "-c CPU");
		optind += 2;
	}
	int n = argc - optind;
	if (ms < 0 || n < 1) {
		fprintf(stderr, "usage: lcbench spin -d MS [-c CPU] SPEC...\n");
		return 2;
	}
	int go[2], res[2], ready[2];
	if (pipe(go) || pipe(res) || pipe(ready))
		die("pipe");
	pid_t *pids = calloc(n, sizeof(pid_t));
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			die("fork");
		if (pids[i] == 0) {
			uint64_t run, slp;
			pin(cpu);
			char spec[256];
			snprintf(spec, sizeof(spec), "%s", argv[optind + i]);
			char *at = strrchr(spec, '@');
			if (at) {
				*at = 0;
				join_cgroup(at + 1);
			}
			apply_spec(spec, &run, &slp);
			close(go[1]);
			if (write(ready[1], "r", 1) != 1)
				die("write");
			close(ready[1]);
			uint64_t end;
			if (read(go[0], &end, sizeof(end)) != sizeof(end))
				die("read");
			uint64_t next_sleep = run ? cpu_ns() + run : 0;
			while (now_ns() < end) {
				if (run && cpu_ns() >= next_sleep) {
					sleep_ns(slp);
					next_sleep = cpu_ns() + run;
				}
			}
			uint64_t cpu_end = cpu_ns(), ticks[2] = { 0, 0 };
			struct rusage ru;
			getrusage(RUSAGE_SELF, &ru);
			if (at)
				stat_ticks(ticks);
			uint64_t out[6] = { (uint64_t)i, cpu_end, (uint64_t)ru.ru_nvcsw, (uint64_t)ru.ru_nivcsw,
					    ticks[0], ticks[1] };
			if (write(res[1], out, sizeof(out)) != sizeof(out))
				die("write");
			_exit(0);
		}
	}
	close(go[0]);
	close(res[1]);
	close(ready[1]);
	for (int i = 0; i < n; i++) { /* every child has set its policy and waits */
		char b;
		if (read(ready[0], &b, 1) != 1) {
			fprintf(stderr, "lcbench: a spinner failed to start\n");
			exit(1);
		}
	}
	uint64_t end = now_ns() + (uint64_t)ms * 1000000ull;
	for (int i = 0; i < n; i++)
		if (write(go[1], &end, sizeof(end)) != sizeof(end))
			die("write");
	uint64_t (*r)[6] = calloc(n, sizeof(*r)), total = 0, nv = 0, niv = 0;
	for (int i = 0; i < n; i++) {
		uint64_t out[6];
		if (read(res[0], out, sizeof(out)) != sizeof(out))
			die("read");
		memcpy(r[out[0]], out, sizeof(out));
	}
	for (int i = 0; i < n; i++) {
		waitpid(pids[i], NULL, 0);
		total += r[i][1];
		nv += r[i][2];
		niv += r[i][3];
	}
	for (int i = 0; i < n; i++)
		printf("spin: %-12s runtime %9.3f ms  share %6.2f%%  nvcsw %llu nivcsw %llu\n", argv[optind + i],
		       r[i][1] / 1e6, 100.0 * r[i][1] / (total ? total : 1), (unsigned long long)r[i][2],
		       (unsigned long long)r[i][3]);
	for (int i = 0; i < n; i++) {
		const char *at = strrchr(argv[optind + i], '@');
		if (at)
			printf("cgtask: i=%d cgroup=%s pid=%d cpu_ms=%.3f utime_ticks=%llu stime_ticks=%llu\n", i, at + 1,
			       (int)pids[i], r[i][1] / 1e6, (unsigned long long)r[i][4], (unsigned long long)r[i][5]);
	}
	printf("lcbench: runtime_ms=%.4f share0_pct=%.4f | nvcsw=%llu nivcsw=%llu\n", total / 1e6,
	       100.0 * r[0][1] / (total ? total : 1), (unsigned long long)nv, (unsigned long long)niv);
	return 0;
}

/* ---- wakelat ------------------------------------------------------------ */

static int cmd_wakelat(int argc, char **argv)
{
	long ms = 1000, cpu = 0, hogs = 2, period_us = 1000, slice_us = 0, fifo = 0;
	const char *policy = "normal";
	int c;
	while ((c = getopt(argc, argv, "d:c:n:p:P:s:f:")) != -1) {
		switch (c) {
		case 'd': ms = num(optarg, 1, 600000, "-d MS"); break;
		case 'c': cpu = num(optarg, 0, 4095, "-c CPU"); break;
		case 'n': hogs = num(optarg, 0, 64, "-n HOGS"); break;
		case 'p': period_us = num(optarg, 50, 1000000, "-p PERIOD_US"); break;
		case 'P': policy = optarg; break;
		case 's': slice_us = num(optarg, 100, 100000, "-s SLICE_US"); break;
		case 'f': fifo = num(optarg, 1, 99, "-f PRIO"); break;
		default: return 2;
		}
	}
	struct sched_attr_l a = { .size = sizeof(a), .sched_policy = SCHED_OTHER };
	if (strcmp(policy, "batch") == 0)
		a.sched_policy = SCHED_BATCH;
	else if (strcmp(policy, "idle") == 0)
		a.sched_policy = SCHED_IDLE;
	else if (strcmp(policy, "normal") != 0) {
		fprintf(stderr, "lcbench: -P must be normal, batch or idle, got '%s'\n", policy);
		return 2;
	}
	a.sched_runtime = slice_us * 1000ull;
	/* with -f: the common start of the FIFO hogs, 50 ms ahead */
	uint64_t start = now_ns() + 50000000ull;
	uint64_t end = (fifo ? start : now_ns()) + (uint64_t)ms * 1000000ull + 20000000ull;
	pid_t *pids = calloc(hogs + 1, sizeof(pid_t));
	for (long i = 0; i < hogs; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			die("fork");
		if (pids[i] == 0) {
			pin(cpu);
			if (fifo) {
				struct sched_param sp = { .sched_priority = (int)fifo };
				if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0)
					die("sched_setscheduler(SCHED_FIFO)");
				struct timespec t0 = { .tv_sec = start / 1000000000ull, .tv_nsec = start % 1000000000ull };
				while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t0, NULL) == EINTR)
					;
			}
			while (now_ns() < end + 10000000ull)
				;
			_exit(0);
		}
	}
	pin(cpu);
	if (syscall(SYS_sched_setattr, 0, &a, 0) != 0)
		die("sched_setattr");
	struct timespec next;
	if (fifo) {
		/* the first wakeup is 20 ms after the hogs start */
		next.tv_sec = start / 1000000000ull;
		next.tv_nsec = start % 1000000000ull + 20000000 - period_us * 1000;
		while (next.tv_nsec < 0) {
			next.tv_nsec += 1000000000;
			next.tv_sec--;
		}
		while (next.tv_nsec >= 1000000000) {
			next.tv_nsec -= 1000000000;
			next.tv_sec++;
		}
	} else {
		usleep(20000);
		clock_gettime(CLOCK_MONOTONIC, &next);
	}
	struct hist h;
	hist_init(&h);
	uint64_t max = 0;
	while (now_ns() < end) {
		next.tv_nsec += period_us * 1000;
		while (next.tv_nsec >= 1000000000) {
			next.tv_nsec -= 1000000000;
			next.tv_sec++;
		}
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
		uint64_t target = (uint64_t)next.tv_sec * 1000000000ull + next.tv_nsec, t = now_ns();
		uint64_t d = t > target ? t - target : 0;
		hist_add(&h, d);
		if (d > max)
			max = d;
		/* a late wakeup skips the periods it missed */
		while ((uint64_t)next.tv_sec * 1000000000ull + next.tv_nsec + period_us * 1000ull < t) {
			next.tv_nsec += period_us * 1000;
			while (next.tv_nsec >= 1000000000) {
				next.tv_nsec -= 1000000000;
				next.tv_sec++;
			}
		}
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	for (long i = 0; i < hogs; i++)
		waitpid(pids[i], NULL, 0);
	double avg = h.n ? h.sum / 1e3 / h.n : 0;
	char fifo_note[16] = "";
	if (fifo)
		snprintf(fifo_note, sizeof(fifo_note), ", fifo %ld", fifo);
	printf("wakelat: %llu wakeups, avg %.1f p50 %.0f p99 %.0f max %.1f us (policy %s, slice %ld us, %ld hogs%s)\n",
	       (unsigned long long)h.n, avg, hist_pct(&h, 500), hist_pct(&h, 990), max / 1e3, policy, slice_us, hogs,
	       fifo_note);
	printf("lcbench: lat_avg_us=%.4f lat_p99_us=%.4f lat_max_us=%.4f | wakeups=%llu\n", avg, hist_pct(&h, 990),
	       max / 1e3, (unsigned long long)h.n);
	return 0;
}

/* ---- dl: SCHED_DEADLINE ------------------------------------------------- */

#ifndef SCHED_DEADLINE
#define SCHED_DEADLINE 6
#endif

static const char *errno_name(int e)
{
	static char other[16];
	switch (e) {
	case 0: return "ok";
	case EPERM: return "EPERM";
	case EBUSY: return "EBUSY";
	case EINVAL: return "EINVAL";
	case E2BIG: return "E2BIG";
	case ESRCH: return "ESRCH";
	default: snprintf(other, sizeof(other), "E%d", e); return other;
	}
}

/* The calling thread asks for SCHED_DEADLINE; returns 0 or the errno. */
static int dl_setattr(uint64_t runtime_ns, uint64_t deadline_ns, uint64_t period_ns)
{
	struct sched_attr_l a = { .size = sizeof(a), .sched_policy = SCHED_DEADLINE,
				  .sched_runtime = runtime_ns, .sched_deadline = deadline_ns,
				  .sched_period = period_ns };
	return syscall(SYS_sched_setattr, 0, &a, 0) == 0 ? 0 : errno;
}

static void wait_child(pid_t pid)
{
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/* A child that does f(...) and writes its result (an int) to the parent. */
static int in_child(int (*f)(uint64_t, uint64_t, uint64_t), uint64_t r, uint64_t d, uint64_t p)
{
	int fd[2], res = -1;
	if (pipe(fd))
		die("pipe");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		int e = f(r, d, p);
		if (write(fd[1], &e, sizeof(e)) != sizeof(e))
			_exit(1);
		_exit(0);
	}
	if (read(fd[0], &res, sizeof(res)) != sizeof(res))
		res = -1;
	close(fd[0]);
	close(fd[1]);
	wait_child(pid);
	return res;
}

static int dl_pinned_child(uint64_t r, uint64_t d, uint64_t p)
{
	pin(0);
	return dl_setattr(r, d, p);
}

/* Becomes SCHED_DEADLINE (its errno + 1000 if refused), then narrows. */
static int dl_narrow_child(uint64_t r, uint64_t d, uint64_t p)
{
	int e = dl_setattr(r, d, p);
	if (e)
		return 1000 + e;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	return sched_setaffinity(0, sizeof(set), &set) == 0 ? 0 : errno;
}

static int cmp_u64_dl(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The sample at or under which per_mille of sorted[n] lie, whole us (ns). */
static uint64_t pct_us(const uint64_t *sorted, uint64_t n, unsigned per_mille)
{
	if (n == 0)
		return 0;
	uint64_t want = (n * per_mille + 999) / 1000;
	if (want == 0)
		want = 1;
	return sorted[want - 1] / 1000 * 1000;
}

static int dl_periodic(long n, uint64_t r, uint64_t d, uint64_t p, uint64_t w, long ms)
{
	uint64_t cap = (uint64_t)ms * 1000000ull / p + 2;
	/* per task: [0] jobs, [1] setattr errno, then cap responses */
	size_t per = cap + 2, bytes = n * per * sizeof(uint64_t);
	uint64_t *sh = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die("mmap");
	/*
	 * The first release 9 ms ahead: two ticks at HZ=250 and 1 ms, as the
	 * shell's dlperiodic. The lead sets the phase of the first deadline
	 * (setattr + D) against the releases: at 50 ms with D = 50 ms it fell
	 * 1 ms after the first release, and Linux's revised wakeup rule then
	 * held every later job back to its deadline (docs/results/linux.md).
	 */
	uint64_t start = now_ns() + 9000000ull, end = start + (uint64_t)ms * 1000000ull;
	pid_t *pids = calloc(n, sizeof(pid_t));
	for (long i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			die("fork");
		if (pids[i] == 0) {
			uint64_t *me = sh + i * per;
			int e = dl_setattr(r, d, p);
			me[1] = e;
			if (e)
				_exit(1);
			uint64_t k = 0;
			for (uint64_t rel = start; rel + p <= end && k < cap; rel += p) {
				struct timespec t = { .tv_sec = rel / 1000000000ull, .tv_nsec = rel % 1000000000ull };
				while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR)
					;
				uint64_t c0 = cpu_ns();
				while (cpu_ns() - c0 < w)
					;
				me[2 + k++] = now_ns() - rel;
				me[0] = k;
			}
			_exit(0);
		}
	}
	for (long i = 0; i < n; i++)
		wait_child(pids[i]);
	uint64_t *all = calloc(n * cap + 1, sizeof(uint64_t)), jobs = 0, missed = 0, sum = 0;
	for (long i = 0; i < n; i++) {
		uint64_t *me = sh + i * per;
		if (me[1]) {
			printf("dlperiodic: error: task %ld: sched_setattr: %s\n", i, errno_name((int)me[1]));
			return 1;
		}
		for (uint64_t k = 0; k < me[0]; k++) {
			all[jobs++] = me[2 + k];
			sum += me[2 + k];
			missed += me[2 + k] > d;
		}
	}
	qsort(all, jobs, sizeof(uint64_t), cmp_u64_dl);
	uint64_t avg = jobs ? sum / jobs : 0, max = jobs ? all[jobs - 1] : 0;
	int64_t late = (int64_t)max - (int64_t)d;
	printf("dlperiodic: %ld tasks runtime %llu deadline %llu period %llu work %llu us: %llu jobs, %llu missed, "
	       "response avg %llu.%llu p50 %llu p99 %llu max %llu.%llu us, lateness max %lld us\n",
	       n, (unsigned long long)(r / 1000), (unsigned long long)(d / 1000), (unsigned long long)(p / 1000),
	       (unsigned long long)(w / 1000), (unsigned long long)jobs, (unsigned long long)missed,
	       (unsigned long long)(avg / 1000), (unsigned long long)(avg % 1000 / 100),
	       (unsigned long long)(pct_us(all, jobs, 500) / 1000), (unsigned long long)(pct_us(all, jobs, 990) / 1000),
	       (unsigned long long)(max / 1000), (unsigned long long)(max % 1000 / 100), (long long)(late / 1000));
	printf("lcbench: resp_avg_us=%.4f resp_p99_us=%.4f resp_max_us=%.4f | jobs=%llu missed=%llu\n", avg / 1e3,
	       pct_us(all, jobs, 990) / 1e3, max / 1e3, (unsigned long long)jobs, (unsigned long long)missed);
	return 0;
}

static int cmd_dl(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: lcbench dl admit|pinned|narrow|periodic [-r US] [-D US] [-p US] [-n N] [-w US] [-d MS]\n");
		return 2;
	}
	const char *what = argv[1];
	long r_us = -1, d_us = 0, p_us = -1, n = -1, w_us = -1, ms = -1;
	int c;
	optind = 2;
	while ((c = getopt(argc, argv, "r:D:p:n:w:d:")) != -1) {
		switch (c) {
		case 'r': r_us = num(optarg, 1, 4000000, "-r RUNTIME_US"); break;
		case 'D': d_us = num(optarg, 1, 4000000, "-D DEADLINE_US"); break;
		case 'p': p_us = num(optarg, 100, 4000000, "-p PERIOD_US"); break;
		case 'n': n = num(optarg, 1, 256, "-n N"); break;
		case 'w': w_us = num(optarg, 1, 4000000, "-w WORK_US"); break;
		case 'd': ms = num(optarg, 1, 600000, "-d MS"); break;
		default: return 2;
		}
	}
	if (r_us < 0 || p_us < 0) {
		fprintf(stderr, "lcbench dl: -r RUNTIME_US and -p PERIOD_US are needed\n");
		return 2;
	}
	uint64_t r = r_us * 1000ull, p = p_us * 1000ull, d = (d_us ? d_us : p_us) * 1000ull;
	if (!strcmp(what, "admit")) {
		long max = n < 0 ? 16 : n, admitted = 0;
		int hold[2], e = 0;
		if (pipe(hold))
			die("pipe");
		pid_t *pids = calloc(max, sizeof(pid_t));
		for (long i = 0; i < max; i++) {
			int fd[2];
			if (pipe(fd))
				die("pipe");
			pids[i] = fork();
			if (pids[i] < 0)
				die("fork");
			if (pids[i] == 0) {
				close(hold[1]);
				int ce = dl_setattr(r, d, p);
				if (write(fd[1], &ce, sizeof(ce)) != sizeof(ce))
					_exit(1);
				char b;
				if (!ce) /* holds its bandwidth until the parent closes hold */
					while (read(hold[0], &b, 1) < 0 && errno == EINTR)
						;
				_exit(0);
			}
			if (read(fd[0], &e, sizeof(e)) != sizeof(e))
				die("read");
			close(fd[0]);
			close(fd[1]);
			if (e) {
				wait_child(pids[i]);
				break;
			}
			admitted++;
		}
		close(hold[1]);
		for (long i = 0; i < admitted; i++)
			wait_child(pids[i]);
		printf("dl: admit runtime %ld deadline %ld period %ld us: admitted %ld of at most %ld\n", r_us,
		       d_us ? d_us : p_us, p_us, admitted, max);
		printf("dl: admitted %ld\ndl: errno %s\n", admitted, errno_name(e));
		printf("lcbench: admitted=%ld\n", admitted);
		return 0;
	}
	if (!strcmp(what, "pinned")) {
		int e = in_child(dl_pinned_child, r, d, p);
		printf("dl: pinned to CPU 0, setattr SCHED_DEADLINE: %s\ndl: admitted %d\ndl: errno %s\n", errno_name(e),
		       e == 0, errno_name(e));
		return 0;
	}
	if (!strcmp(what, "narrow")) {
		int e = in_child(dl_narrow_child, r, d, p);
		if (e >= 1000) {
			printf("dl: narrow: setattr SCHED_DEADLINE refused: %s\ndl: admitted 0\n", errno_name(e - 1000));
			return 1;
		}
		printf("dl: SCHED_DEADLINE, then sched_setaffinity to CPU 0: %s\ndl: admitted 1\ndl: errno %s\n",
		       errno_name(e), errno_name(e));
		return 0;
	}
	if (!strcmp(what, "periodic")) {
		if (n < 0 || w_us < 0 || ms < 0) {
			fprintf(stderr, "lcbench dl periodic: -n N, -w WORK_US and -d MS are needed\n");
			return 2;
		}
		return dl_periodic(n, r, d, p, w_us * 1000ull, ms);
	}
	fprintf(stderr, "lcbench dl: unknown '%s' (admit, pinned, narrow, periodic)\n", what);
	return 2;
}

/* ---------------------------------------------------------------- costs */

#define CMSG 100

static long c_iters = 2000;
static int c_ncpus;




static void unpin(void)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	for (int c = 0; c < c_ncpus; c++)
		CPU_SET(c, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		die("sched_setaffinity");
}

static void policy(int pol)
{
	struct sched_param p = { 0 };
	if (sched_setscheduler(0, pol, &p) != 0)
		die("sched_setscheduler");
}

static void xwrite(int fd, const void *b, size_t n)
{
	if (write(fd, b, n) != (ssize_t)n)
		die("write");
}

static void xread(int fd, void *b, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, (char *)b + got, n - got);
		if (r <= 0)
			die("read");
		got += r;
	}
}

static uint64_t ctxt(void)
{
	FILE *f = fopen("/proc/stat", "r");
	char line[256];
	uint64_t v = 0;
	if (!f)
		die("/proc/stat");
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "ctxt %llu", (unsigned long long *)&v) == 1)
			break;
	fclose(f);
	return v;
}

static int set_feature(const char *f)
{
	int fd = open("/sys/kernel/debug/sched/features", O_WRONLY);
	if (fd < 0)
		return -1;
	ssize_t r = write(fd, f, strlen(f));
	close(fd);
	return r == (ssize_t)strlen(f) ? 0 : -1;
}

/* Spinner processes on CPUs [from, to), at nice `nice` or SCHED_IDLE. */
static pid_t spinners[64];
static int nspin;

static void spin_start(int from, int to, int nice_or_idle)
{
	for (int c = from; c < to; c++) {
		pid_t p = fork();
		if (p < 0)
			die("fork");
		if (p == 0) {
			pin(c);
			if (nice_or_idle == 100)
				policy(SCHED_IDLE);
			else if (setpriority(PRIO_PROCESS, 0, nice_or_idle) != 0)
				die("setpriority");
			for (;;)
				__asm__ volatile("" ::: "memory");
		}
		spinners[nspin++] = p;
	}
	usleep(20000);
}

static void spin_stop(void)
{
	for (int i = 0; i < nspin; i++) {
		kill(spinners[i], SIGKILL);
		waitpid(spinners[i], NULL, 0);
	}
	nspin = 0;
}

static volatile uint64_t sink;

static uint64_t fixed_loop_ns(void)
{
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < 40000000; i++)
		sink += i;
	return now_ns() - t0;
}

static double per_op(uint64_t ns, long n)
{
	return (double)ns / n;
}

/* write/read of 100 bytes on a pipe or socketpair, nobody waiting. */
static void rw_costs(int sock, double *w, double *r)
{
	int fds[2];
	char buf[CMSG] = { 0 };
	if (sock ? socketpair(AF_UNIX, SOCK_STREAM, 0, fds) : pipe(fds))
		die("pipe/socketpair");
	long batch = sock ? 100 : 256, done = 0;
	uint64_t tw = 0, tr = 0;
	for (int pass = 0; pass < 2; pass++) {
		long n = pass ? c_iters : c_iters / 10;
		for (done = 0; done < n; done += batch) {
			uint64_t t0 = now_ns();
			for (long i = 0; i < batch; i++)
				xwrite(fds[1], buf, CMSG);
			uint64_t t1 = now_ns();
			for (long i = 0; i < batch; i++)
				xread(fds[0], buf, CMSG);
			uint64_t t2 = now_ns();
			if (pass)
				tw += t1 - t0, tr += t2 - t1;
		}
	}
	*w = per_op(tw, done);
	*r = per_op(tr, done);
	close(fds[0]);
	close(fds[1]);
}

static double yield_alone(void)
{
	for (long i = 0; i < c_iters / 10; i++)
		sched_yield();
	uint64_t t0 = now_ns();
	for (long i = 0; i < c_iters; i++)
		sched_yield();
	return per_op(now_ns() - t0, c_iters);
}

static void *yield_thread(void *arg)
{
	(void)arg;
	pin(0);
	for (long i = 0; i < c_iters; i++)
		sched_yield();
	return NULL;
}

/* Two tasks on CPU 0 yielding to each other. */
static double switch_cost(int threads, double alone)
{
	uint64_t c0 = ctxt(), t0 = now_ns();
	if (threads) {
		pthread_t t;
		pthread_create(&t, NULL, yield_thread, NULL);
		for (long i = 0; i < c_iters; i++)
			sched_yield();
		pthread_join(t, NULL);
	} else {
		pid_t p = fork();
		if (p < 0)
			die("fork");
		if (p == 0) {
			yield_thread(NULL);
			_exit(0);
		}
		for (long i = 0; i < c_iters; i++)
			sched_yield();
		waitpid(p, NULL, 0);
	}
	uint64_t t = now_ns() - t0, sw = ctxt() - c0;
	double d = (double)t - 2.0 * c_iters * alone;
	return sw ? d / sw : 0;
}

struct stamps {
	volatile uint64_t reader_back[1];
};

/*
 * The waker (this process, CPU 0) and a reader (child, on rcpu, or unpinned
 * when rcpu < 0, with rpol) in a ping-pong: per round the waker times a
 * write to a pipe nobody waits on (p3) and a write to the pipe the reader
 * sleeps on (p1), then sleeps on p2; the reader reads p1 (and p3), stamps
 * its return from read and writes p2. Returns the mean base write, waking
 * write and wake latency (waker's return from write to reader's return from
 * read).
 */
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static double median(uint64_t *v, long n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* Medians of the last wake_costs call (robust to a vCPU losing its
 * round-robin turn inside a timed write). */
static double med_base, med_waking, med_lat;

/* Waits (yielding) until task `pid` sleeps (state S in /proc/PID/stat). */
static void wait_asleep(pid_t pid)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	for (;;) {
		int fd = open(path, O_RDONLY);
		if (fd < 0)
			die(path);
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			die(path);
		buf[n] = 0;
		char *e = strrchr(buf, ')');
		if (e && e[1] == ' ' && e[2] == 'S')
			return;
		sched_yield();
	}
}

/* Set: the waker makes sure the reader sleeps before each round. */
static int wake_asleep;

static void wake_costs(int rcpu, int rpol, double *base, double *waking, double *lat)
{
	int p1[2], p2[2], p3[2];
	char buf[CMSG] = { 0 };
	if (pipe(p1) || pipe(p2) || pipe(p3))
		die("pipe");
	struct stamps *st = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (st == MAP_FAILED)
		die("mmap");
	long total = c_iters + c_iters / 10;
	pid_t p = fork();
	if (p < 0)
		die("fork");
	if (p == 0) {
		if (rcpu >= 0)
			pin(rcpu);
		else
			unpin();
		if (rpol != SCHED_OTHER)
			policy(rpol);
		for (long i = 0; i < total; i++) {
			xread(p1[0], buf, CMSG);
			st->reader_back[0] = now_ns();
			xread(p3[0], buf, CMSG);
			xwrite(p2[1], buf, 1);
		}
		_exit(0);
	}
	pin(0);
	usleep(10000);
	uint64_t tb = 0, tw = 0, tl = 0;
	uint64_t *sb = calloc(c_iters, 8), *sw = calloc(c_iters, 8), *sl = calloc(c_iters, 8);
	if (!sb || !sw || !sl)
		die("calloc");
	for (long i = 0; i < total; i++) {
		if (wake_asleep)
			wait_asleep(p);
		uint64_t t0 = now_ns();
		xwrite(p3[1], buf, CMSG);
		uint64_t t1 = now_ns();
		xwrite(p1[1], buf, CMSG);
		uint64_t t2 = now_ns();
		xread(p2[0], buf, 1);
		if (i >= c_iters / 10) {
			long j = i - c_iters / 10;
			sb[j] = t1 - t0;
			sw[j] = t2 - t1;
			sl[j] = st->reader_back[0] - t2;
			tb += sb[j], tw += sw[j], tl += sl[j];
		}
	}
	waitpid(p, NULL, 0);
	med_base = median(sb, c_iters);
	med_waking = median(sw, c_iters);
	med_lat = median(sl, c_iters);
	free(sb), free(sw), free(sl);
	*base = per_op(tb, c_iters);
	*waking = per_op(tw, c_iters);
	*lat = per_op(tl, c_iters);
	close(p1[0]), close(p1[1]), close(p2[0]), close(p2[1]), close(p3[0]), close(p3[1]);
	munmap(st, 4096);
}

/*
 * Two SCHED_BATCH processes on CPU 0 in a pipe (socketpair: `sock`) ping-pong
 * (pingpong_half_ns in the header): ns per half round; *sw_per_round the context switches per
 * round counted in /proc/stat (2 when every read slept).
 */
static double pingpong_half(int sock, double *sw_per_round)
{
	int a[2], b[2];
	char buf[CMSG] = { 0 };
	if (sock ? socketpair(AF_UNIX, SOCK_STREAM, 0, a) || socketpair(AF_UNIX, SOCK_STREAM, 0, b) : pipe(a) || pipe(b))
		die("pipe/socketpair");
	long total = c_iters + c_iters / 10;
	policy(SCHED_BATCH);
	pid_t p = fork();
	if (p < 0)
		die("fork");
	if (p == 0) {
		for (long i = 0; i < total; i++) {
			xread(a[0], buf, CMSG);
			xwrite(b[1], buf, CMSG);
		}
		_exit(0);
	}
	usleep(10000);
	uint64_t t0 = 0, c0 = 0;
	for (long i = 0; i < total; i++) {
		if (i == c_iters / 10) {
			c0 = ctxt();
			t0 = now_ns();
		}
		xwrite(a[1], buf, CMSG);
		xread(b[0], buf, CMSG);
	}
	uint64_t t = now_ns() - t0, sw = ctxt() - c0;
	waitpid(p, NULL, 0);
	policy(SCHED_OTHER);
	close(a[0]), close(a[1]), close(b[0]), close(b[1]);
	*sw_per_round = (double)sw / c_iters;
	return (double)t / (2.0 * c_iters);
}

/* Prints pingpong_half_ns and sleep_ns (sock: their socket figures), the
 * half round less `charged` (the write, read, wakeup and switch figures). */
static void sleep_cost(int sock, double charged)
{
	const char *k = sock ? "_sock" : "";
	double sw_round, half = pingpong_half(sock, &sw_round);
	printf("cost: pingpong%s_half_ns %.0f (%.2f switches a round)\n", k, half, sw_round);
	if (sw_round < 1.9 || sw_round > 2.1)
		printf("cost: sleep%s_ns - (not one switch per half round: no figure)\n", k);
	else
		printf("cost: sleep%s_ns %.0f (pingpong%s_half_ns - %s_write_ns - %s_read_ns - wake_local_ns medians - switch_process_ns)\n",
		       k, half - charged, k, sock ? "sock" : "pipe", sock ? "sock" : "pipe");
}

/* CPU 0's local timer interrupts so far (/proc/interrupts, LOC). */
static uint64_t loc_cpu0(void)
{
	FILE *f = fopen("/proc/interrupts", "r");
	char line[4096];
	unsigned long long v = 0;
	if (!f)
		die("/proc/interrupts");
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, " LOC: %llu", &v) == 1)
			break;
	fclose(f);
	return v;
}

#define IRQ_GAP_NS 2000
#define IRQ_MAX 20000

/* The loop of tick_irq's spinner, ns. */
static double tick_loop;

/* The tick's interrupt on a busy CPU (tick_irq_ns in the header); the
 * calling process is pinned to CPU 0 and the other vCPUs are idle.
 * Returns the median jump (0 if none). */
static double tick_irq(void)
{
	uint64_t *g = calloc(IRQ_MAX, sizeof(uint64_t));
	if (!g)
		die("calloc");
	long n = 0, iters = 0;
	uint64_t in_gaps = 0, l0 = loc_cpu0();
	uint64_t t = now_ns(), end = t + 1000000000ull, last = t, start = t;
	while (t < end) {
		t = now_ns();
		iters++;
		if (t - last > IRQ_GAP_NS) {
			if (n < IRQ_MAX)
				g[n] = t - last;
			n++;
			in_gaps += t - last;
		}
		last = t;
	}
	uint64_t loc = loc_cpu0() - l0;
	long kept = n < IRQ_MAX ? n : IRQ_MAX;
	double loop = iters > n ? (double)(t - start - in_gaps) / (iters - n) : 0;
	double med = 0;
	tick_loop = loop;
	if (kept == 0) {
		printf("cost: tick_irq_ns - (no jump over %d ns in 1 s)\n", IRQ_GAP_NS);
	} else {
		med = median(g, kept);
		printf("cost: tick_irq_ns %.0f (median jump %.0f less a loop of %.0f; mean jump %.0f; %ld jumps, %llu local timer interrupts on CPU 0)\n",
		       med - loop, med, loop, (double)in_gaps / n, n, (unsigned long long)loc);
	}
	free(g);
	return med;
}

/* ---- interrupts: the HRTICK expiry, the reschedule IPI, the tick's split --- */

/* A lone spinner's clock jumps: a read more than IRQ_GAP_NS after the one
 * before is a jump (last: the read before, first: the read after). */
#define JMAX 40000
struct jumps {
	long n;
	double loop_ns;
	uint64_t last[JMAX], first[JMAX];
};

static struct jumps *jumps_new(void)
{
	struct jumps *j = mmap(NULL, sizeof(*j), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (j == MAP_FAILED)
		die("mmap");
	return j;
}

/* Reads the clock for dur_ns (or until *stop), recording the jumps. */
static void record_jumps(struct jumps *j, uint64_t dur_ns, volatile int *stop)
{
	long n = 0, iters = 0;
	uint64_t in_gaps = 0, t = now_ns(), end = t + dur_ns, last = t, start = t;
	while (t < end && !(stop && *stop)) {
		t = now_ns();
		iters++;
		if (t - last > IRQ_GAP_NS) {
			if (n < JMAX)
				j->last[n] = last, j->first[n] = t;
			n++;
			in_gaps += t - last;
		}
		last = t;
	}
	j->n = n < JMAX ? n : JMAX;
	j->loop_ns = iters > n ? (double)(t - start - in_gaps) / (iters - n) : 0;
}

/* The jump of j holding the instant t (last < t < first), or -1. */
static long jump_at(const struct jumps *j, uint64_t t)
{
	long lo = 0, hi = j->n - 1;
	while (lo <= hi) {
		long mid = (lo + hi) / 2;
		if (j->first[mid] < t)
			lo = mid + 1;
		else if (j->last[mid] > t)
			hi = mid - 1;
		else
			return mid;
	}
	return -1;
}

/* CPU cpu's count of the interrupt NAME (/proc/interrupts: "LOC", "RES", "CAL"). */
static uint64_t irq_count(const char *name, int cpu)
{
	FILE *f = fopen("/proc/interrupts", "r");
	char line[8192], key[16];
	uint64_t v = 0;
	if (!f)
		die("/proc/interrupts");
	snprintf(key, sizeof(key), "%s:", name);
	while (fgets(line, sizeof(line), f)) {
		char *p = line;
		while (*p == ' ')
			p++;
		if (strncmp(p, key, strlen(key)))
			continue;
		p += strlen(key);
		for (int c = 0; c <= cpu; c++)
			v = strtoull(p, &p, 10);
		break;
	}
	fclose(f);
	return v;
}

/* Whether sched feature NAME is on now (an exact token of the features file). */
static int feature_on(const char *name)
{
	char buf[4096], *save = NULL;
	int fd = open("/sys/kernel/debug/sched/features", O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	for (char *t = strtok_r(buf, " \n", &save); t; t = strtok_r(NULL, " \n", &save))
		if (!strcmp(t, name))
			return 1;
	return 0;
}

/* ---- tracefs: one function's entries as CLOCK_MONOTONIC instants ---------- */

#define TR "/sys/kernel/tracing"

static int tr_put(const char *file, const char *s, int append)
{
	char path[256];
	snprintf(path, sizeof(path), TR "/%s", file);
	int fd = open(path, O_WRONLY | (append ? O_APPEND : O_TRUNC));
	if (fd < 0)
		return -1;
	ssize_t r = write(fd, s, strlen(s));
	close(fd);
	return r == (ssize_t)strlen(s) ? 0 : -1;
}

/* Puts an fprobe (a kprobe if fprobes are refused) on FUNC's entry as
 * event lcb/probe, traced with the mono clock and raw output (timestamps
 * in ns). 0 if set. */
static int probe_on(const char *func)
{
	char def[128];
	if (access(TR "/events", F_OK) != 0)
		mount("nodev", TR, "tracefs", 0, NULL);
	tr_put("tracing_on", "0", 0);
	tr_put("trace", "", 0);
	snprintf(def, sizeof(def), "f:lcb/probe %s", func);
	if (tr_put("dynamic_events", def, 1) != 0) {
		snprintf(def, sizeof(def), "p:lcb/probe %s", func);
		if (tr_put("kprobe_events", def, 1) != 0)
			return -1;
	}
	if (tr_put("trace_clock", "mono", 0) || tr_put("trace_options", "raw", 0) ||
	    tr_put("buffer_size_kb", "2048", 0) || tr_put("events/lcb/probe/enable", "1", 0))
		return -1;
	return tr_put("tracing_on", "1", 0);
}

/* Stops the trace, reads CPU cpu's probe instants into ts (at most max),
 * removes the probe; returns how many. */
static long probe_off(int cpu, uint64_t *ts, long max)
{
	FILE *f;
	char line[512];
	long n = 0;
	tr_put("tracing_on", "0", 0);
	f = fopen(TR "/trace", "r");
	while (f && fgets(line, sizeof(line), f)) {
		int pid, c;
		unsigned long long t;
		if (line[0] == '#' || sscanf(line, "%d %d %llu", &pid, &c, &t) != 3 || c != cpu)
			continue;
		if (n < max)
			ts[n++] = t;
	}
	if (f)
		fclose(f);
	tr_put("events/lcb/probe/enable", "0", 0);
	tr_put("trace_options", "noraw", 0);
	tr_put("trace_clock", "local", 0);
	if (tr_put("dynamic_events", "-:lcb/probe", 1) != 0)
		tr_put("kprobe_events", "-:lcb/probe", 1);
	tr_put("trace", "", 0);
	return n;
}

/* Splits j's jumps at the probe instants ts: the median time from the jump's
 * start to the probe (pre), from the probe to the jump's end (post), and the
 * median traced jump (whole), over the jumps holding one instant. */
static long split_jumps(const struct jumps *j, const uint64_t *ts, long nts, uint64_t hi_ns, double *pre,
			double *post, double *whole)
{
	uint64_t *a = malloc(sizeof(uint64_t) * (nts + 1)), *b = malloc(sizeof(uint64_t) * (nts + 1)),
		 *w = malloc(sizeof(uint64_t) * (nts + 1));
	long k = 0;
	if (!a || !b || !w)
		die("malloc");
	for (long i = 0; i < nts; i++) {
		long m = jump_at(j, ts[i]);
		if (m < 0 || j->first[m] - j->last[m] >= hi_ns)
			continue;
		a[k] = ts[i] - j->last[m], b[k] = j->first[m] - ts[i], w[k] = j->first[m] - j->last[m];
		k++;
	}
	*pre = k ? median(a, k) : 0, *post = k ? median(b, k) : 0, *whole = k ? median(w, k) : 0;
	free(a), free(b), free(w);
	return k;
}

#define SPLIT_MAX 40000

/* Runs record_jumps for 1 s on this CPU (0) with an fprobe on FUNC, and
 * prints the split as NAME_pre_ns / NAME_post_ns against the untraced
 * median `untraced` (the probe's own cost: the traced median less it). */
static void traced_split(const char *name, const char *func, struct jumps *j, uint64_t hi_ns, double untraced)
{
	static uint64_t ts[SPLIT_MAX];
	if (probe_on(func) != 0) {
		printf("cost: %s_pre_ns - (no probe on %s)\n", name, func);
		probe_off(0, ts, 0);
		return;
	}
	record_jumps(j, 1000000000ull, NULL);
	long nts = probe_off(0, ts, SPLIT_MAX);
	double pre, post, whole;
	long k = split_jumps(j, ts, nts, hi_ns, &pre, &post, &whole);
	if (k == 0) {
		printf("cost: %s_pre_ns - (%ld probe hits on CPU 0, none inside a jump)\n", name, nts);
		return;
	}
	printf("cost: %s_pre_ns %.0f (median, jump start to %s's entry, less half a loop of %.0f; traced)\n", name,
	       pre - j->loop_ns / 2, func, j->loop_ns);
	printf("cost: %s_post_ns %.0f (median, %s's entry to jump end, less half a loop; traced)\n", name,
	       post - j->loop_ns / 2, func);
	printf("cost: %s_probe_ns %.0f (traced median jump %.0f less the untraced %.0f: the probe's cost, inside pre or post; %ld of %ld hits inside a jump)\n",
	       name, whole - untraced, whole, untraced, k, nts);
}

/* The tick's split (tick_pre_ns, tick_post_ns): a lone spinner on CPU 0 as
 * in tick_irq, with an fprobe on sched_tick, whose update_rq_clock sets the
 * clock the tick's decisions see. */
static void tick_split(double untraced_med)
{
	struct jumps *j = jumps_new();
	traced_split("tick", "sched_tick", j, 200000, untraced_med);
	munmap(j, sizeof(*j));
}

/* Two spinners on CPU 0 (this CPU), released together, each recording its
 * clock jumps for 1 s: the other's turns are its long jumps. */
struct pair {
	volatile int go;
	struct jumps j[2];
};

static void pair_run(struct pair *p)
{
	pid_t k[2];
	p->go = 0;
	for (int i = 0; i < 2; i++) {
		k[i] = fork();
		if (k[i] < 0)
			die("fork");
		if (k[i] == 0) {
			pin(0);
			while (!p->go)
				;
			record_jumps(&p->j[i], 1000000000ull, NULL);
			_exit(0);
		}
	}
	usleep(20000);
	p->go = 1;
	waitpid(k[0], NULL, 0);
	waitpid(k[1], NULL, 0);
}

/* The switch gaps of a pair run: from one spinner's last read before the
 * other's turn to the other's first read in it (shorter than hi_ns), into
 * g; with the probe instants ts (sorted), the gaps holding one also split
 * into pre (gap start to probe) and post. Returns the number of gaps. */
static long switch_gaps(const struct pair *p, uint64_t hi_ns, uint64_t *g, const uint64_t *ts, long nts,
			uint64_t *pre, uint64_t *post, long *nsplit)
{
	long n = 0, k = 0;
	for (int to = 0; to < 2; to++) {
		const struct jumps *from = &p->j[1 - to], *dst = &p->j[to];
		for (long i = 0; i < dst->n; i++) {
			uint64_t t = dst->first[i];
			long m = jump_at(from, t);
			if (m < 0 || t - from->last[m] >= hi_ns)
				continue;
			uint64_t start = from->last[m];
			g[n++] = t - start;
			/* the first probe instant after the gap's start */
			long lo = 0, hi = nts;
			while (lo < hi) {
				long mid = (lo + hi) / 2;
				if (ts[mid] <= start)
					lo = mid + 1;
				else
					hi = mid;
			}
			if (lo < nts && ts[lo] < t)
				pre[k] = ts[lo] - start, post[k] = t - ts[lo], k++;
		}
	}
	*nsplit = k;
	return n;
}

/* The HRTICK expiry (hrtick_irq_ns in the header). Linux 7.2 arms the
 * HRTICK only for a newly picked task, so its cost is measured through the
 * switch it causes: two nice-0 spinners on CPU 0, other vCPUs idle; with
 * NO_HRTICK every slice (0.7 ms) ends at a tick (4 ms), with HRTICK at the
 * HRTICK's expiry; the median switch gap is the interrupt's cost plus the
 * switch to the other spinner, so the HRTICK's cost is the tick's
 * (tick_untraced: tick_irq_ns) plus the gaps' difference. Then the same
 * with an fprobe on hrtick() splits the HRTICK's gap at its entry. */
static void hrtick_irq(double tick_untraced)
{
	int was_on = feature_on("HRTICK");
	struct pair *p = mmap(NULL, sizeof(*p), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	static uint64_t g[2 * JMAX], pre[2 * JMAX], post[2 * JMAX], ts[SPLIT_MAX];
	double med[2] = { 0, 0 };
	long cnt[2] = { 0, 0 }, ns;
	if (p == MAP_FAILED)
		die("mmap");
	for (int on = 0; on < 2; on++) {
		if (set_feature(on ? "HRTICK" : "NO_HRTICK") != 0) {
			printf("cost: hrtick_irq_ns - (cannot set HRTICK)\n");
			goto out;
		}
		uint64_t l0 = irq_count("LOC", 0);
		pair_run(p);
		uint64_t loc = irq_count("LOC", 0) - l0;
		cnt[on] = switch_gaps(p, 200000, g, NULL, 0, pre, post, &ns);
		med[on] = cnt[on] ? median(g, cnt[on]) : 0;
		printf("cost: switch_gap_%s_ns %.0f (two nice-0 spinners on CPU 0, %s: median of %ld switch gaps, %llu LOC on CPU 0)\n",
		       on ? "hrtick" : "tick", med[on], on ? "HRTICK" : "NO_HRTICK", cnt[on], (unsigned long long)loc);
	}
	if (!cnt[0] || !cnt[1]) {
		printf("cost: hrtick_irq_ns - (no switch gaps)\n");
		goto out;
	}
	printf("cost: hrtick_irq_ns %.0f (tick_irq_ns %.0f + switch_gap_hrtick_ns - switch_gap_tick_ns)\n",
	       tick_untraced + med[1] - med[0], tick_untraced);
	if (probe_on("hrtick") != 0) {
		printf("cost: hrtick_pre_ns - (no probe on hrtick)\n");
		probe_off(0, ts, 0);
		goto out;
	}
	pair_run(p);
	long nts = probe_off(0, ts, SPLIT_MAX);
	qsort(ts, nts, 8, cmp_u64);
	long n = switch_gaps(p, 200000, g, ts, nts, pre, post, &ns);
	if (ns == 0) {
		printf("cost: hrtick_pre_ns - (%ld probe hits, none inside a switch gap)\n", nts);
		goto out;
	}
	double traced = median(g, n);
	printf("cost: hrtick_pre_ns %.0f (median, gap start to hrtick()'s entry, less half a loop of %.0f; traced)\n",
	       median(pre, ns) - p->j[0].loop_ns / 2, p->j[0].loop_ns);
	printf("cost: hrtick_post_ns %.0f (median, hrtick()'s entry to the other spinner's first read, switch included; traced)\n",
	       median(post, ns));
	printf("cost: hrtick_probe_ns %.0f (traced median gap %.0f less the untraced %.0f: the probe's cost; %ld of %ld gaps hold a hit, %ld hits)\n",
	       traced - med[1], traced, med[1], ns, n, nts);
out:
	set_feature(was_on ? "HRTICK" : "NO_HRTICK");
	munmap(p, sizeof(*p));
}

#define RES_OPS 1000

/* The reschedule IPI on its receiver (ipi_resched_ns in the header). */
static void ipi_resched(void)
{
	int was_on = feature_on("HRTICK");
	struct jumps *j = jumps_new();
	volatile int *stop = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	static uint64_t ta[RES_OPS], tb[RES_OPS];
	if (stop == MAP_FAILED)
		die("mmap");
	/* HRTICK off: with it, a change of the spinner's weight re-arms its
	 * HRTICK from CPU 0, a function-call IPI, in both halves. */
	set_feature("NO_HRTICK");
	spin_start(1, 2, 100);
	*stop = 0;
	pid_t s = fork();
	if (s < 0)
		die("fork");
	if (s == 0) {
		pin(1);
		record_jumps(j, 60000000000ull, stop);
		_exit(0);
	}
	/* a task of CPU 1 asleep: renicing it sends no IPI (Linux 7.2 sends
	 * CPU 1 a reschedule IPI at a renice of either task queued there) */
	pid_t z = fork();
	if (z < 0)
		die("fork");
	if (z == 0) {
		pin(1);
		for (;;)
			pause();
	}
	usleep(20000);
	uint64_t r0 = irq_count("RES", 1), c0 = irq_count("CAL", 1);
	for (long i = 0; i < RES_OPS; i++) {
		ta[i] = now_ns();
		/* even: the running spinner, 0 -> 1 and back on alternate calls;
		 * odd: the sleeper */
		if (setpriority(PRIO_PROCESS, i % 2 ? z : s, (i / 2) % 2 ? 0 : 1) != 0)
			die("setpriority");
		tb[i] = now_ns();
		usleep(200);
	}
	uint64_t res = irq_count("RES", 1) - r0, cal = irq_count("CAL", 1) - c0;
	*stop = 1;
	waitpid(s, NULL, 0);
	kill(z, SIGKILL);
	waitpid(z, NULL, 0);
	spin_stop();
	set_feature(was_on ? "HRTICK" : "NO_HRTICK");
	uint64_t *jl = calloc(RES_OPS, 8), *jr = calloc(RES_OPS, 8), *sl = calloc(RES_OPS, 8), *sr = calloc(RES_OPS, 8);
	long nl = 0, nr = 0;
	if (!jl || !jr || !sl || !sr)
		die("calloc");
	for (long i = 0; i < RES_OPS; i++) {
		long m = jump_at(j, ta[i]);
		if (m < 0 || j->first[m] < tb[i] || j->first[m] - j->last[m] >= 200000)
			continue;
		if (i % 2 == 0)
			jl[nl] = j->first[m] - j->last[m], sl[nl++] = tb[i] - ta[i];
		else
			jr[nr] = j->first[m] - j->last[m], sr[nr++] = tb[i] - ta[i];
	}
	if (nl == 0 || nr == 0) {
		printf("cost: ipi_resched_ns - (no controller call inside a jump of CPU 1's spinner)\n");
	} else {
		double mjl = median(jl, nl), mjr = median(jr, nr), msl = median(sl, nl), msr = median(sr, nr);
		printf("cost: ipi_resched_ns %.0f ((%.0f - %.0f) - (%.0f - %.0f): CPU 1's jump around a renice of its running spinner less one of a task of CPU 1 asleep, less the renicing calls' difference on CPU 0; %ld / %ld calls inside a jump; %llu RES, %llu CAL on CPU 1 for %d calls, half of them the spinner's)\n",
		       (mjl - mjr) - (msl - msr), mjl, mjr, msl, msr, nl, nr, (unsigned long long)res,
		       (unsigned long long)cal, RES_OPS);
	}
	free(jl), free(jr), free(sl), free(sr);
	munmap((void *)stop, 4096);
	munmap(j, sizeof(*j));
}

static long event_id(const char *ev)
{
	char path[256], buf[32];
	snprintf(path, sizeof(path), TR "/events/%s/id", ev);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return n > 0 ? strtol(buf, NULL, 10) : -1;
}

/* The call-function-single IPI that delivers a queued wakeup, on its
 * receiver (ipi_call_wake_ns in the header): wake_costs' remote round (a
 * reader on idle CPU 1, the wake list) traced with the x86 tracepoints
 * irq_vectors:call_function_single_entry/exit on CPU 1; the tracepoints'
 * cost from the latency's median traced against untraced (two events in
 * it, one inside each entry-to-exit interval). */
static void ipi_call_wake(double untraced_lat)
{
	const char *en = "irq_vectors/call_function_single_entry", *ex = "irq_vectors/call_function_single_exit";
	char path[256];
	if (access(TR "/events", F_OK) != 0)
		mount("nodev", TR, "tracefs", 0, NULL);
	long id_en = event_id(en), id_ex = event_id(ex);
	if (id_en < 0 || id_ex < 0) {
		printf("cost: ipi_call_wake_ns - (no %s / %s tracepoint)\n", en, ex);
		return;
	}
	tr_put("tracing_on", "0", 0);
	tr_put("trace", "", 0);
	tr_put("trace_clock", "mono", 0);
	tr_put("trace_options", "raw", 0);
	tr_put("buffer_size_kb", "2048", 0);
	snprintf(path, sizeof(path), "events/%s/enable", en);
	tr_put(path, "1", 0);
	snprintf(path, sizeof(path), "events/%s/enable", ex);
	tr_put(path, "1", 0);
	tr_put("tracing_on", "1", 0);
	double b, wk, lat;
	wake_costs(1, SCHED_OTHER, &b, &wk, &lat);
	double traced_lat = med_lat;
	tr_put("tracing_on", "0", 0);
	uint64_t *d = calloc(4 * c_iters, 8);
	long n = 0, nin = 0;
	uint64_t open_at = 0;
	FILE *f = fopen(TR "/trace", "r");
	char line[512];
	if (!d)
		die("calloc");
	while (f && fgets(line, sizeof(line), f)) {
		int pid, c;
		unsigned long long t;
		long type;
		if (line[0] == '#' || sscanf(line, "%d %d %llu type: %ld", &pid, &c, &t, &type) != 4 || c != 1)
			continue;
		if (type == id_en)
			open_at = t, nin++;
		else if (type == id_ex && open_at && n < 4 * c_iters)
			d[n++] = t - open_at, open_at = 0;
	}
	if (f)
		fclose(f);
	snprintf(path, sizeof(path), "events/%s/enable", en);
	tr_put(path, "0", 0);
	snprintf(path, sizeof(path), "events/%s/enable", ex);
	tr_put(path, "0", 0);
	tr_put("trace_options", "noraw", 0);
	tr_put("trace_clock", "local", 0);
	tr_put("trace", "", 0);
	if (n == 0) {
		printf("cost: ipi_call_wake_ns - (no call-function-single IPI on CPU 1 traced)\n");
	} else {
		double m = median(d, n), ev = (traced_lat - untraced_lat) / 2;
		printf("cost: ipi_call_wake_ns %.0f (median entry-to-exit %.0f over %ld IPIs on CPU 1 for %ld wakeups, less one event %.0f: the latency's median traced %.0f less untraced %.0f, halved; the handler's body, without the interrupt's entry and exit)\n",
		       m - ev, m, n, c_iters + c_iters / 10, ev, traced_lat, untraced_lat);
	}
	free(d);
}

/* ---- turns: QEMU's round-robin vCPU turns under -icount ------------------ */

/*
 * K spinners pinned to CPUs 0..K-1 read CLOCK_MONOTONIC in a tight loop for
 * MS ms. Under -icount the clock counts every vCPU's instructions, so a
 * spinner whose vCPU is out of its round-robin turn sees the clock jump: a
 * jump of more than TURN_GAP_NS is a gap, and the stretch between two gaps
 * is one turn (its own interrupts, a tick handler of a few us, stay below
 * the threshold or show at K=1, where no other vCPU takes a turn).
 */
#define TURN_GAP_NS 20000
#define TURN_MAX 20000
struct turn_log {
	volatile int go;
	long n[64];
	uint64_t run[64][TURN_MAX], gap[64][TURN_MAX];
};

static void turn_spinner(struct turn_log *tl, int c, uint64_t ms)
{
	pin(c);
	while (!tl->go)
		;
	uint64_t t = now_ns(), end = t + ms * 1000000ull, last = t, seg = t;
	long n = 0;
	while (t < end) {
		t = now_ns();
		if (t - last > TURN_GAP_NS) {
			if (n < TURN_MAX) {
				tl->run[c][n] = last - seg;
				tl->gap[c][n] = t - last;
			}
			n++;
			seg = t;
		}
		last = t;
	}
	tl->n[c] = n;
	_exit(0);
}

static uint64_t pct(uint64_t *v, long n, int p)
{
	return n ? v[(n - 1) * p / 100] : 0;
}

/* Prints "PREFIX kK: ..." per K in 1..ncpus: runs (turns) and gaps of all
 * spinners, the first run of each spinner (from the release) left out. */
static void turns(int ncpus, uint64_t ms, const char *prefix)
{
	struct turn_log *tl = mmap(NULL, sizeof(*tl), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (tl == MAP_FAILED)
		die("mmap");
	uint64_t *runs = malloc(sizeof(uint64_t) * 64 * TURN_MAX), *gaps = malloc(sizeof(uint64_t) * 64 * TURN_MAX);
	if (!runs || !gaps)
		die("malloc");
	for (int k = 1; k <= ncpus; k++) {
		memset((void *)tl, 0, sizeof(*tl));
		pid_t p[64];
		for (int c = 0; c < k; c++) {
			p[c] = fork();
			if (p[c] < 0)
				die("fork");
			if (p[c] == 0)
				turn_spinner(tl, c, ms);
		}
		usleep(20000);
		tl->go = 1;
		for (int c = 0; c < k; c++)
			waitpid(p[c], NULL, 0);
		long nr = 0, ng = 0, n0 = 0;
		uint64_t sum_r = 0, sum_g = 0;
		for (int c = 0; c < k; c++) {
			long m = tl->n[c] < TURN_MAX ? tl->n[c] : TURN_MAX;
			for (long i = 0; i < m; i++) {
				if (i > 0)
					runs[nr++] = tl->run[c][i], sum_r += tl->run[c][i];
				gaps[ng++] = tl->gap[c][i], sum_g += tl->gap[c][i];
			}
			if (c == 0)
				n0 = tl->n[0];
		}
		qsort(runs, nr, 8, cmp_u64);
		qsort(gaps, ng, 8, cmp_u64);
		printf("%sk%d: turns %ld (cpu0 %ld) turn_us p10 %.1f p50 %.1f p90 %.1f mean %.1f | gaps %ld gap_us p10 %.1f p50 %.1f p90 %.1f mean %.1f\n",
		       prefix, k, nr, n0, pct(runs, nr, 10) / 1e3, pct(runs, nr, 50) / 1e3, pct(runs, nr, 90) / 1e3,
		       nr ? sum_r / 1e3 / nr : 0, ng, pct(gaps, ng, 10) / 1e3, pct(gaps, ng, 50) / 1e3,
		       pct(gaps, ng, 90) / 1e3, ng ? sum_g / 1e3 / ng : 0);
	}
	free(runs);
	free(gaps);
	munmap(tl, sizeof(*tl));
}

static int cmd_turns(int argc, char **argv)
{
	int opt;
	uint64_t ms = 1000;
	while ((opt = getopt(argc, argv, "d:")) != -1) {
		if (opt != 'd') {
			fprintf(stderr, "usage: lcbench turns [-d MS]\n");
			return 2;
		}
		ms = num(optarg, 10, 100000, "-d");
	}
	int n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 1 || n > 64) {
		fprintf(stderr, "lcbench turns: needs 1..64 CPUs online, has %d\n", n);
		return 2;
	}
	turns(n, ms, "turns: ");
	return 0;
}

static int cmd_costs(int argc, char **argv)
{
	int opt;
	while ((opt = getopt(argc, argv, "n:")) != -1) {
		if (opt != 'n') {
			fprintf(stderr, "usage: lcbench costs [-n ITERS]\n");
			return 2;
		}
		char *end;
		c_iters = strtol(optarg, &end, 10);
		if (*optarg == 0 || *end || c_iters < 100 || c_iters > 10000000) {
			fprintf(stderr, "lcbench costs: -n must be 100..10000000, got '%s'\n", optarg);
			return 2;
		}
	}
	c_ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (c_ncpus < 2 || c_ncpus > 64) {
		fprintf(stderr, "lcbench costs: needs 2..64 CPUs online, has %d\n", c_ncpus);
		return 2;
	}
	pin(0);
	printf("costs: cpus=%d iters=%ld\n", c_ncpus, c_iters);

	fixed_loop_ns();
	double alone = fixed_loop_ns();
	for (int k = 2; k <= c_ncpus; k++) {
		spin_start(1, k, 0);
		double t = fixed_loop_ns();
		spin_stop();
		printf("cost: work_scale_k%d %.3f\n", k, t / alone);
	}
	turns(c_ncpus, 1000, "cost: vcpu_turns_");
	spin_start(1, c_ncpus, 19);
	double scale_n = fixed_loop_ns() / alone;
	spin_stop();

	uint64_t t0 = now_ns();
	for (long i = 0; i < c_iters; i++)
		syscall(SYS_getppid);
	printf("cost: null_syscall_ns %.0f\n", per_op(now_ns() - t0, c_iters));

	double tick_med = tick_irq();
	if (tick_med > 0) {
		tick_split(tick_med);
		hrtick_irq(tick_med - tick_loop);
	}
	ipi_resched();

	double w, r;
	rw_costs(0, &w, &r);
	printf("cost: pipe_write_ns %.0f\ncost: pipe_read_ns %.0f\n", w, r);
	double pipe_w = w, pipe_r = r;
	rw_costs(1, &w, &r);
	printf("cost: sock_write_ns %.0f\ncost: sock_read_ns %.0f\n", w, r);
	double sock_w = w, sock_r = r;

	double y = yield_alone();
	printf("cost: yield_alone_ns %.0f\n", y);
	printf("cost: switch_thread_ns %.0f\n", switch_cost(1, y));
	double sw_process = switch_cost(0, y);
	printf("cost: switch_process_ns %.0f\n", sw_process);

	double b, wk, lat;
	wake_costs(0, SCHED_BATCH, &b, &wk, &lat);
	double local = med_waking - med_base;
	printf("cost: write_nowake_ns %.0f (local loop; median %.0f)\n", b, med_base);
	printf("cost: wake_local_ns %.0f (medians %.0f)\n", wk - b, local);
	sleep_cost(0, pipe_w + pipe_r + local + sw_process);
	sleep_cost(1, sock_w + sock_r + local + sw_process);
	wake_costs(1, SCHED_OTHER, &b, &wk, &lat);
	printf("cost: write_nowake_ns %.0f (remote loop; median %.0f)\n", b, med_base);
	printf("cost: wake_remote_ns %.0f (medians %.0f)\n", wk - b, med_waking - med_base);
	printf("cost: lat_remote_idle_ns %.0f (median %.0f)\n", lat, med_lat);
	ipi_call_wake(med_lat);
	spin_start(1, 2, 100);
	wake_costs(1, SCHED_OTHER, &b, &wk, &lat);
	spin_stop();
	printf("cost: wake_remote_busy_ns %.0f (medians %.0f; 2 vCPUs busy)\n", wk - b, med_waking - med_base);
	printf("cost: lat_remote_busy_ns %.0f (median %.0f; 2 vCPUs busy)\n", lat, med_lat);

	/* The idle scan: the same local wakeup of a SCHED_BATCH reader with
	 * every other CPU busy (nice-19 spinners) and SIS_UTIL off, the reader
	 * pinned to CPU 0 (no select_task_rq) against unpinned (wake_affine
	 * picks CPU 0, select_idle_sibling checks it, then scans the other
	 * CPUs of the LLC and finds none idle). Medians: N vCPUs are busy.
	 * The waker waits for the reader to sleep before each round: with the
	 * spinners there, it may get the CPU back before the reader sleeps. */
	if (set_feature("NO_SIS_UTIL") != 0) {
		printf("cost: wake_scan_ns - (cannot turn SIS_UTIL off)\n");
	} else {
		spin_start(1, c_ncpus, 19);
		wake_asleep = 1;
		wake_costs(0, SCHED_BATCH, &b, &wk, &lat);
		double pinned = med_waking - med_base;
		wake_costs(-1, SCHED_BATCH, &b, &wk, &lat);
		double unpinned = med_waking - med_base;
		wake_asleep = 0;
		spin_stop();
		set_feature("SIS_UTIL");
		printf("cost: work_scale_scan %.3f\n", scale_n);
		printf("cost: wake_pinned_busy_ns %.0f (median)\n", pinned);
		printf("cost: wake_unpinned_busy_ns %.0f (median)\n", unpinned);
		/* The method needs the reader asleep at the timed write; if the
		 * waker got the CPU back before the reader slept again, the
		 * "waking" write woke nobody and costs what a plain write does. */
		if (pinned < local / 2 || unpinned < local / 2)
			printf("cost: wake_scan_ns - (the reader was not asleep at the write: no figure)\n");
		else
			printf("cost: wake_scan_ns %.0f (unpinned - pinned, %d CPUs visited)\n", unpinned - pinned,
			       c_ncpus);
	}
	printf("costs: done\n");
	return 0;
}

/* `lcbench pingpong` and `lcbench getppid`: one figure of costs alone. */
static int cmd_one(int argc, char **argv, int ping)
{
	int opt, sock = 0;
	while ((opt = getopt(argc, argv, ping ? "sn:" : "n:")) != -1) {
		if (opt == 's')
			sock = 1;
		else if (opt == 'n')
			c_iters = num(optarg, 100, 10000000, "-n");
		else {
			fprintf(stderr, "usage: lcbench %s\n", ping ? "pingpong [-s] [-n ITERS]" : "getppid [-n ITERS]");
			return 2;
		}
	}
	c_ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	pin(0);
	if (ping) {
		double sw, half = pingpong_half(sock, &sw);
		printf("pingpong: %s half_ns=%.0f switches_a_round=%.2f\n", sock ? "sock" : "pipe", half, sw);
	} else {
		uint64_t t0 = now_ns();
		for (long i = 0; i < c_iters; i++)
			syscall(SYS_getppid);
		printf("getppid: ns=%.0f\n", per_op(now_ns() - t0, c_iters));
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: lcbench rus|schbench|pgbench|spin|wakelat|dl|costs|turns|pingpong|getppid ...\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *c = argv[1];
	if (!strcmp(c, "rus"))
		return cmd_rus(argc - 1, argv + 1);
	if (!strcmp(c, "schbench"))
		return cmd_schbench(argc - 1, argv + 1);
	if (!strcmp(c, "pgbench"))
		return cmd_pgbench(argc - 1, argv + 1);
	if (!strcmp(c, "spin"))
		return cmd_spin(argc - 1, argv + 1);
	if (!strcmp(c, "wakelat"))
		return cmd_wakelat(argc - 1, argv + 1);
	if (!strcmp(c, "dl"))
		return cmd_dl(argc - 1, argv + 1);
	if (!strcmp(c, "costs"))
		return cmd_costs(argc - 1, argv + 1);
	if (!strcmp(c, "turns"))
		return cmd_turns(argc - 1, argv + 1);
	if (!strcmp(c, "pingpong"))
		return cmd_one(argc - 1, argv + 1, 1);
	if (!strcmp(c, "getppid"))
		return cmd_one(argc - 1, argv + 1, 0);
	fprintf(stderr, "lcbench: unknown command '%s'\n", c);
	return 2;
}
