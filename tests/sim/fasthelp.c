/* fasthelp - who pre-faults a fast block: after one cudaHostAlloc of SIZE
 * (default 16 MiB), the threads of this process named "pincache-help" (the
 * helpers beyond the copy threads' cap, stage/xfer_help.c, started for a
 * block of PINCACHE_TEST_FAST_WIDE_MIN or more and parked after it), and
 * whether the block holds what was written.
 *
 *   fasthelp [SIZE_MIB]   prints "alloc=RC helpers=N bytes=ok|bad" */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../doubles/sim.h"

static int helpers(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	char path[300], name[64];
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL) {
		FILE *f;
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		if (fgets(name, sizeof name, f) && strncmp(name, "pincache-help", 13) == 0)
			n++;
		fclose(f);
	}
	closedir(d);
	return n;
}

int main(int argc, char **argv)
{
	size_t size = (size_t)(argc > 1 ? atoi(argv[1]) : 16) << 20;
	unsigned char *p = NULL;
	cudaError_t e = cudaHostAlloc((void **)&p, size, 0);
	int ok = 0;

	if (e == cudaSuccess) {
		memset(p, 0x5a, size);
		ok = p[0] == 0x5a && p[size / 2] == 0x5a && p[size - 1] == 0x5a;
	}
	printf("alloc=%d helpers=%d bytes=%s\n", (int)e, helpers(), ok ? "ok" : "bad");
	if (e == cudaSuccess)
		cudaFreeHost(p);
	return 0;
}
