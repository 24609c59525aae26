/*
 * lccosts: measures, inside the guest, the costs the simulator's `qemu:N`
 * machine uses (sim/src/machine.rs), on the same emulated machine the
 * three-way A/B runs on. `make linux-compare WHAT=costs` boots Linux with it
 * and prints the table. Times are CLOCK_MONOTONIC, which under QEMU
 * `-icount shift=S,sleep=off` is instructions executed (2^S ns each), so
 * every figure is reproducible. Messages are 100 bytes, as hackbench's.
 *
 *   lccosts [-n ITERS]
 *
 * Figures (each over ITERS operations after ITERS/10 of warm-up; the
 * wakeup figures also as medians, which a vCPU losing its round-robin turn
 * inside a timed write does not move):
 *   work_scale_kN      time of a fixed loop on CPU 0 while N-1 other vCPUs
 *                      spin, over the same loop alone: under -icount the
 *                      vCPUs take turns on one host thread and the clock
 *                      counts every vCPU's instructions
 *   null_syscall_ns    getppid()
 *   pipe_write_ns / pipe_read_ns    100-byte write / read, nobody waiting
 *   sock_write_ns / sock_read_ns    the same on a unix stream socketpair
 *   switch_thread_ns / switch_process_ns
 *                      two threads / processes on CPU 0 calling sched_yield:
 *                      (time - 2 x ITERS x yield alone) / context switches
 *                      counted in /proc/stat
 *   wake_local_ns      a write that wakes a SCHED_BATCH reader sleeping on
 *                      the same CPU (batch: no wakeup preemption inside the
 *                      timed write), minus a write in the same loop that
 *                      wakes nobody: the waker's try_to_wake_up, local
 *   wake_remote_ns     the same with the reader pinned to an idle CPU 1
 *                      (wake list + IPI send), waker side
 *   lat_remote_idle_ns from the waker's return from write() to the reader's
 *                      return from read() on idle CPU 1
 *   wake_remote_busy_ns, lat_remote_busy_ns
 *                      the same with a SCHED_IDLE spinner on CPU 1 (the
 *                      reader preempts it: direct enqueue + resched IPI);
 *                      two vCPUs busy
 *   wake_scan_ns       with nice-19 spinners on CPUs 1..N-1 and SIS_UTIL
 *                      off, a SCHED_BATCH reader woken onto CPU 0 unpinned
 *                      (select_idle_sibling checks CPU 0, then scans the
 *                      other CPUs of the LLC and finds none idle) minus the
 *                      same reader pinned to CPU 0 (no select_task_rq),
 *                      medians
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SCHED_BATCH
#define SCHED_BATCH 3
#endif
#ifndef SCHED_IDLE
#define SCHED_IDLE 5
#endif

#define MSG 100

static long iters = 2000;
static int ncpus;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		die("sched_setaffinity");
}

static void unpin(void)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	for (int c = 0; c < ncpus; c++)
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
	char buf[MSG] = { 0 };
	if (sock ? socketpair(AF_UNIX, SOCK_STREAM, 0, fds) : pipe(fds))
		die("pipe/socketpair");
	long batch = sock ? 100 : 256, done = 0;
	uint64_t tw = 0, tr = 0;
	for (int pass = 0; pass < 2; pass++) {
		long n = pass ? iters : iters / 10;
		for (done = 0; done < n; done += batch) {
			uint64_t t0 = now_ns();
			for (long i = 0; i < batch; i++)
				xwrite(fds[1], buf, MSG);
			uint64_t t1 = now_ns();
			for (long i = 0; i < batch; i++)
				xread(fds[0], buf, MSG);
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
	for (long i = 0; i < iters / 10; i++)
		sched_yield();
	uint64_t t0 = now_ns();
	for (long i = 0; i < iters; i++)
		sched_yield();
	return per_op(now_ns() - t0, iters);
}

static void *yield_thread(void *arg)
{
	(void)arg;
	pin(0);
	for (long i = 0; i < iters; i++)
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
		for (long i = 0; i < iters; i++)
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
		for (long i = 0; i < iters; i++)
			sched_yield();
		waitpid(p, NULL, 0);
	}
	uint64_t t = now_ns() - t0, sw = ctxt() - c0;
	double d = (double)t - 2.0 * iters * alone;
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

static void wake_costs(int rcpu, int rpol, double *base, double *waking, double *lat)
{
	int p1[2], p2[2], p3[2];
	char buf[MSG] = { 0 };
	if (pipe(p1) || pipe(p2) || pipe(p3))
		die("pipe");
	struct stamps *st = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (st == MAP_FAILED)
		die("mmap");
	long total = iters + iters / 10;
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
			xread(p1[0], buf, MSG);
			st->reader_back[0] = now_ns();
			xread(p3[0], buf, MSG);
			xwrite(p2[1], buf, 1);
		}
		_exit(0);
	}
	pin(0);
	usleep(10000);
	uint64_t tb = 0, tw = 0, tl = 0;
	uint64_t *sb = calloc(iters, 8), *sw = calloc(iters, 8), *sl = calloc(iters, 8);
	if (!sb || !sw || !sl)
		die("calloc");
	for (long i = 0; i < total; i++) {
		uint64_t t0 = now_ns();
		xwrite(p3[1], buf, MSG);
		uint64_t t1 = now_ns();
		xwrite(p1[1], buf, MSG);
		uint64_t t2 = now_ns();
		xread(p2[0], buf, 1);
		if (i >= iters / 10) {
			long j = i - iters / 10;
			sb[j] = t1 - t0;
			sw[j] = t2 - t1;
			sl[j] = st->reader_back[0] - t2;
			tb += sb[j], tw += sw[j], tl += sl[j];
		}
	}
	waitpid(p, NULL, 0);
	med_base = median(sb, iters);
	med_waking = median(sw, iters);
	med_lat = median(sl, iters);
	free(sb), free(sw), free(sl);
	*base = per_op(tb, iters);
	*waking = per_op(tw, iters);
	*lat = per_op(tl, iters);
	close(p1[0]), close(p1[1]), close(p2[0]), close(p2[1]), close(p3[0]), close(p3[1]);
	munmap(st, 4096);
}

int main(int argc, char **argv)
{
	int opt;
	while ((opt = getopt(argc, argv, "n:")) != -1) {
		if (opt != 'n') {
			fprintf(stderr, "usage: lccosts [-n ITERS]\n");
			return 2;
		}
		char *end;
		iters = strtol(optarg, &end, 10);
		if (*optarg == 0 || *end || iters < 100 || iters > 10000000) {
			fprintf(stderr, "lccosts: -n must be 100..10000000, got '%s'\n", optarg);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpus < 2 || ncpus > 64) {
		fprintf(stderr, "lccosts: needs 2..64 CPUs online, has %d\n", ncpus);
		return 2;
	}
	pin(0);
	printf("lccosts: cpus=%d iters=%ld\n", ncpus, iters);

	fixed_loop_ns();
	double alone = fixed_loop_ns();
	for (int k = 2; k <= ncpus; k++) {
		spin_start(1, k, 0);
		double t = fixed_loop_ns();
		spin_stop();
		printf("cost: work_scale_k%d %.3f\n", k, t / alone);
	}
	spin_start(1, ncpus, 19);
	double scale_n = fixed_loop_ns() / alone;
	spin_stop();

	uint64_t t0 = now_ns();
	for (long i = 0; i < iters; i++)
		syscall(SYS_getppid);
	printf("cost: null_syscall_ns %.0f\n", per_op(now_ns() - t0, iters));

	double w, r;
	rw_costs(0, &w, &r);
	printf("cost: pipe_write_ns %.0f\ncost: pipe_read_ns %.0f\n", w, r);
	rw_costs(1, &w, &r);
	printf("cost: sock_write_ns %.0f\ncost: sock_read_ns %.0f\n", w, r);

	double y = yield_alone();
	printf("cost: yield_alone_ns %.0f\n", y);
	printf("cost: switch_thread_ns %.0f\n", switch_cost(1, y));
	printf("cost: switch_process_ns %.0f\n", switch_cost(0, y));

	double b, wk, lat;
	wake_costs(0, SCHED_BATCH, &b, &wk, &lat);
	printf("cost: write_nowake_ns %.0f (local loop; median %.0f)\n", b, med_base);
	printf("cost: wake_local_ns %.0f (medians %.0f)\n", wk - b, med_waking - med_base);
	wake_costs(1, SCHED_OTHER, &b, &wk, &lat);
	printf("cost: write_nowake_ns %.0f (remote loop; median %.0f)\n", b, med_base);
	printf("cost: wake_remote_ns %.0f (medians %.0f)\n", wk - b, med_waking - med_base);
	printf("cost: lat_remote_idle_ns %.0f (median %.0f)\n", lat, med_lat);
	spin_start(1, 2, 100);
	wake_costs(1, SCHED_OTHER, &b, &wk, &lat);
	spin_stop();
	printf("cost: wake_remote_busy_ns %.0f (medians %.0f; 2 vCPUs busy)\n", wk - b, med_waking - med_base);
	printf("cost: lat_remote_busy_ns %.0f (median %.0f; 2 vCPUs busy)\n", lat, med_lat);

	/* The idle scan: the same local wakeup of a SCHED_BATCH reader with
	 * every other CPU busy (nice-19 spinners) and SIS_UTIL off, the reader
	 * pinned to CPU 0 (no select_task_rq) against unpinned (wake_affine
	 * picks CPU 0, select_idle_sibling checks it, then scans the other
	 * CPUs of the LLC and finds none idle). Medians: N vCPUs are busy. */
	if (set_feature("NO_SIS_UTIL") != 0) {
		printf("cost: wake_scan_ns - (cannot turn SIS_UTIL off)\n");
	} else {
		spin_start(1, ncpus, 19);
		wake_costs(0, SCHED_BATCH, &b, &wk, &lat);
		double pinned = med_waking - med_base;
		wake_costs(-1, SCHED_BATCH, &b, &wk, &lat);
		double unpinned = med_waking - med_base;
		spin_stop();
		set_feature("SIS_UTIL");
		printf("cost: work_scale_scan %.3f\n", scale_n);
		printf("cost: wake_pinned_busy_ns %.0f (median)\n", pinned);
		printf("cost: wake_unpinned_busy_ns %.0f (median)\n", unpinned);
		printf("cost: wake_scan_ns %.0f (unpinned - pinned, %d CPUs visited)\n", unpinned - pinned, ncpus);
	}
	printf("lccosts: done\n");
	return 0;
}
