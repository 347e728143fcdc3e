/* regfork - fork() while memory registered with cudaHostRegister is live.
 *
 * Linux copies registered (pinned) memory at every fork; the report counts
 * such forks, and PINCACHE_REGISTER_DONTFORK=1 marks the whole pages of a
 * registered range MADV_DONTFORK until it is unregistered.  The parent
 * registers 1 MiB starting 100 bytes into a page-aligned buffer, then forks
 * children that read one byte each and exit (a read that faults exits 42):
 *   child neighbour   a byte before the range, on the range's first page
 *                     (shared with other data): readable in any case
 *   child inside      a byte in the middle of the range
 *   child after       the same byte after cudaHostUnregister
 * Prints "child_neighbour=N child_inside=N child_after=N" (exit codes) and
 * "dontfork=0|1" (whether PINCACHE_REGISTER_DONTFORK was set); regfork.sh
 * compares them with what the option promises, and the report's counts.
 * Uses the CUDA runtime API only. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cuda_runtime_api.h>

#define SZ (1u << 20)

static void on_segv(int sig)
{
	(void)sig;
	_exit(42);
}

/* Fork a child that reads *p; returns its exit code (-1: killed). */
static int child_reads(volatile const char *p)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		struct sigaction sa;

		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_segv;
		sigaction(SIGSEGV, &sa, NULL);
		sigaction(SIGBUS, &sa, NULL);
		_exit(*p == 7 ? 0 : 3);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -2;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int main(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *buf = aligned_alloc((size_t)pg, SZ + 2 * (size_t)pg), *p = buf + 100;
	const char *opt = getenv("PINCACHE_REGISTER_DONTFORK");
	int nb, in, after;

	if (!buf)
		return 2;
	memset(buf, 7, SZ + 2 * (size_t)pg);
	if (cudaHostRegister(p, SZ, cudaHostRegisterDefault) != cudaSuccess) {
		printf("cudaHostRegister failed\n");
		return 2;
	}
	nb = child_reads(buf + 50);
	in = child_reads(p + SZ / 2);
	if (cudaHostUnregister(p) != cudaSuccess) {
		printf("cudaHostUnregister failed\n");
		return 2;
	}
	after = child_reads(p + SZ / 2);
	printf("dontfork=%d\n", opt && opt[0] == '1');
	printf("child_neighbour=%d child_inside=%d child_after=%d\n", nb, in, after);
	free(buf);
	return 0;
}
