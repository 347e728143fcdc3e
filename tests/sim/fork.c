/* fork - a child of a process that used CUDA.
 *
 * The parent allocates pinned blocks and frees some (under the shim they stay
 * cached), then forks twice:
 *   child a  makes no CUDA call and exits: it must exit promptly, and (checked
 *            by fork.sh) must leave no report behind;
 *   child b  calls cudaHostAlloc and cudaFreeHost: the real runtime refuses
 *            every call in such a child with cudaErrorInitializationError, and
 *            the shim must not hand it one of the parent's cached blocks.
 * Uses the CUDA runtime API only, so it also runs against a real libcudart.
 * Prints "parent_pid=N" and "child_a_pid=N" for fork.sh.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include "../tap.h"

#define MB (1u << 20)

/* Under ASan: LeakSanitizer's check at a forked child's exit stops the
 * threads its registry inherited from the parent, which the child does not
 * have ("Running thread N was not suspended"), and once hung there past the
 * 20 s bound, in the plain run, on a loaded CI machine: the sanitizer, not
 * the program.  The child's prompt exit is what is tested. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}

/* Wait up to 20 s for pid; returns its wait status, or -1 if it hung (then killed). */
static int wait_bounded(pid_t pid)
{
	struct timespec ms10 = { 0, 10 * 1000 * 1000 };
	int status;

	for (int i = 0; i < 2000; i++) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return status;
		if (r < 0)
			return -2;
		nanosleep(&ms10, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

int main(void)
{
	void *live = NULL, *freed[2] = { NULL, NULL };
	int pipefd[2], status;
	pid_t a, b;
	int got[3] = { -1, -1, -1 };

	setvbuf(stdout, NULL, _IOLBF, 0);
	is_int(cudaHostAlloc(&live, MB, 0), cudaSuccess, "parent: cudaHostAlloc");
	for (int i = 0; i < 2; i++) {
		cudaHostAlloc(&freed[i], MB, 0);
		cudaFreeHost(freed[i]);
	}
	printf("parent_pid=%ld\n", (long)getpid());
	fflush(NULL);

	a = fork();
	if (a == 0)
		exit(0);                 /* child a: no CUDA at all; exit() runs destructors */
	printf("child_a_pid=%ld\n", (long)a);
	status = wait_bounded(a);
	ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "child without CUDA calls exits promptly with status 0 (wait status %d)", status);

	if (pipe(pipefd))
		return 99;
	fflush(NULL);
	b = fork();
	if (b == 0) {
		void *p = NULL;
		int r[3];

		close(pipefd[0]);
		r[0] = cudaHostAlloc(&p, MB, 0);   /* the size the parent has cached */
		r[1] = cudaFreeHost(live);
		r[2] = cudaGetLastError();
		if (write(pipefd[1], r, sizeof r) != (ssize_t)sizeof r)
			_exit(98);
		exit(0);
	}
	close(pipefd[1]);
	if (read(pipefd[0], got, sizeof got) != (ssize_t)sizeof got)
		diag("child b sent nothing back");
	close(pipefd[0]);
	status = wait_bounded(b);
	ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "child with CUDA calls exits promptly with status 0 (wait status %d)", status);
	is_int(got[0], cudaErrorInitializationError, "child: cudaHostAlloc fails with initialization error");
	is_int(got[1], cudaErrorInitializationError, "child: cudaFreeHost of the parent's block fails likewise");
	is_int(got[2], cudaErrorInitializationError, "child: the last error says so");

	is_int(cudaFreeHost(live), cudaSuccess, "parent: its block is still its own after the forks");
	return done_testing();
}
