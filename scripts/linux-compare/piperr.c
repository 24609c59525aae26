/*
 * piperr: N request/reply round trips over two pipes between two processes,
 * each pinned to a CPU (sched_setaffinity): the Linux side of
 * `make linux-compare`'s pipe round trip (our kernel's `perfpipe`).
 *
 *   piperr LOOPS CPU_A CPU_B
 *
 * Prints "round trip N ns/op" (CLOCK_MONOTONIC over all round trips) and
 * the CPUs the two sides ran on at the end.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0) {
		perror("sched_setaffinity");
		exit(1);
	}
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: piperr LOOPS CPU_A CPU_B\n");
		return 2;
	}
	long loops = atol(argv[1]);
	int a = atoi(argv[2]), b = atoi(argv[3]);
	int req[2], rep[2];
	if (pipe(req) || pipe(rep)) {
		perror("pipe");
		return 1;
	}
	/* Both CPUs usable, or fail before anyone waits on a pipe. */
	pin(b);
	pin(a);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		close(req[1]);
		close(rep[0]);
		pin(b);
		int v;
		for (long i = 0; i < loops; i++) {
			if (read(req[0], &v, sizeof(v)) != sizeof(v) ||
			    write(rep[1], &v, sizeof(v)) != sizeof(v))
				return 1;
		}
		printf("piperr: replier ended on cpu %d\n", sched_getcpu());
		return 0;
	}
	close(req[0]);
	close(rep[1]);
	struct timespec t0, t1;
	int v = 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < loops; i++) {
		if (write(req[1], &v, sizeof(v)) != sizeof(v) ||
		    read(rep[0], &v, sizeof(v)) != sizeof(v))
			return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	int st;
	waitpid(pid, &st, 0);
	long long ns = (t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
	printf("piperr: requester ended on cpu %d\n", sched_getcpu());
	printf("round trip %lld ns/op (%ld round trips, cpu %d <-> cpu %d)\n", ns / loops, loops, a, b);
	return 0;
}
