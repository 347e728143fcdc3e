/* hostfork - what a fork() child sees of pinned memory, and what the fork
 * costs, as on the H200 (dev/probe/fastalloc2.cu, tests/doubles/sim_fork.c).
 *
 *   (no argument)  a cudaHostAlloc block is shared with the child: the child
 *                  reads the parent's bytes, then the byte the parent wrote
 *                  after the fork (H200: cudaHostAlloc memory and shared
 *                  mappings; private memory would give the child a copy)
 *   -c             the fork's cost (the simulated device's counters, so
 *                  plainly only): registered private memory is copied and
 *                  paid for by size; the same range MADV_DONTFORK, a shared
 *                  mapping, or a cudaHostAlloc block cost nothing more; with
 *                  H200-sized costs (hostfork.sh) a fork with 16 MiB of it
 *                  takes at least 16 x 0.385 ms.
 * The simulated device's counters (simCounters) tie it to the sim. */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include "../doubles/sim.h"
#include "simtest.h"
#include "../tap.h"

#define MiB ((size_t)1 << 20)

/* A child that hangs is killed by its own alarm (alarm() in each child),
 * so this wait is bounded; its wait status, or -1. */
static int wait_child(pid_t pid)
{
	int status;

	return waitpid(pid, &status, 0) == pid ? status : -1;
}

/* One byte from fd within 20 s: 1, or 0/-1 (EOF: the child died; none). */
static int read_byte(int fd, unsigned char *b)
{
	struct pollfd p = { fd, POLLIN, 0 };

	return poll(&p, 1, 20000) == 1 ? (int)read(fd, b, 1) : -1;
}

/* The child reads one byte, tells the parent, waits for its word, reads it
 * again and sends that too. */
static void view(void)
{
	volatile unsigned char *blk = NULL;
	int up[2], down[2], status;
	unsigned char seen[2] = { 0, 0 }, go = 1;
	pid_t pid;

	if (cudaHostAlloc((void **)&blk, 4 * MiB, 0) != cudaSuccess || !blk || pipe(up) || pipe(down)) {
		ok(0, "cudaHostAlloc 4 MiB and two pipes");
		return;
	}
	memset((void *)blk, 0x11, 4 * MiB);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		alarm(20);
		close(up[0]);
		close(down[1]);
		seen[0] = blk[MiB + 7];
		if (write(up[1], &seen[0], 1) != 1 || read(down[0], &go, 1) != 1)
			_exit(2);
		seen[1] = blk[MiB + 7];
		_exit(write(up[1], &seen[1], 1) == 1 ? 0 : 2);
	}
	/* Unused ends closed: a child that dies gives the parent EOF, not a hang. */
	close(up[1]);
	close(down[0]);
	ok(pid > 0, "fork with a cudaHostAlloc block live");
	if (pid > 0) {
		is_int(read_byte(up[0], &seen[0]), 1, "the child read the block");
		is_int(seen[0], 0x11, "the child sees the parent's bytes");
		blk[MiB + 7] = 0x22;
		if (write(down[1], &go, 1) != 1)
			diag("the child is gone");
		is_int(read_byte(up[0], &seen[1]), 1, "the child read the block again");
		is_int(seen[1], 0x22, "the child sees the parent's write made after the fork (shared, as on the H200)");
		status = wait_child(pid);
		ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		   "the child exits with 0 (wait status %d)", status);
	}
	close(up[0]);
	close(down[1]);
	is_int(cudaFreeHost((void *)blk), cudaSuccess, "cudaFreeHost after the fork");
}

/* fork() and the child's prompt exit; the parent's time in fork() (ms), and
 * the simulated device's fork_copy_bytes added by it. */
static double fork_once(unsigned long long *copied)
{
	struct sim_counters a, b;
	double t0, t;
	pid_t pid;
	int st;

	simCounters(&a);
	fflush(NULL);
	t0 = simtest_now_ms();
	pid = fork();
	if (pid == 0)
		_exit(0);
	t = simtest_now_ms() - t0;
	st = pid > 0 ? wait_child(pid) : -3;
	if (st < 0 || !WIFEXITED(st))
		diag("the child did not exit (%d)", st);
	simCounters(&b);
	*copied = b.fork_copy_bytes - a.fork_copy_bytes;
	return t;
}

/* size bytes of fresh memory, touched (as a fast path pre-faults it). */
static unsigned char *mapped(size_t size, int share)
{
	unsigned char *m = mmap(NULL, size, PROT_READ | PROT_WRITE, share | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		return NULL;
	memset(m, 3, size);
	return m;
}

static void cost(void)
{
	unsigned char *priv = mapped(16 * MiB, MAP_PRIVATE), *shared = mapped(4 * MiB, MAP_SHARED);
	unsigned long long c = 0;
	void *blk = NULL;
	double t;

	if (!priv || !shared) {
		ok(0, "mmap");
		return;
	}
	is_int(cudaHostAlloc(&blk, 8 * MiB, 0), cudaSuccess, "cudaHostAlloc 8 MiB");
	fork_once(&c);
	ok(c == 0, "a fork with a cudaHostAlloc block live copies nothing (%llu bytes)", c);

	is_int(cudaHostRegister(shared, 4 * MiB, 0), cudaSuccess, "register 4 MiB of a shared mapping");
	fork_once(&c);
	ok(c == 0, "a fork with a registered shared mapping copies nothing (%llu bytes)", c);

	is_int(cudaHostRegister(priv + 100, 16 * MiB - 4096, 0), cudaSuccess, "register 16 MiB - 4 KiB of private memory");
	t = fork_once(&c);
	ok(c == 16 * MiB - 4096, "a fork copies the registered private bytes (%llu)", c);
	diag("fork with 16 MiB of registered private memory: %.2f ms", t);
	if (getenv("HOSTFORK_MIN_MS"))
		ok(t >= atof(getenv("HOSTFORK_MIN_MS")), "... and takes at least %s ms (%.2f ms)",
		   getenv("HOSTFORK_MIN_MS"), t);

	ok(madvise(priv + 8 * MiB, 8 * MiB, MADV_DONTFORK) == 0, "MADV_DONTFORK on the upper half");
	fork_once(&c);
	ok(c == 8 * MiB - 100, "a fork copies only the part not MADV_DONTFORK (%llu)", c);
	madvise(priv + 8 * MiB, 8 * MiB, MADV_DOFORK);

	is_int(cudaHostUnregister(priv + 100), cudaSuccess, "unregister the private memory");
	fork_once(&c);
	ok(c == 0, "after cudaHostUnregister a fork copies nothing (%llu bytes)", c);
	is_int(cudaHostUnregister(shared), cudaSuccess, "unregister the shared mapping");
	is_int(cudaFreeHost(blk), cudaSuccess, "cudaFreeHost");
	munmap(priv, 16 * MiB);
	munmap(shared, 4 * MiB);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);   /* a crashed child: EPIPE, not the parent's death */
	if (argc > 1 && strcmp(argv[1], "-c") == 0)
		cost();
	else
		view();
	return done_testing();
}
