/* sim_fork.c - what a fork() costs the H200 for the memory the device pins.
 *
 * Measured on the H200 (dev/probe/fastalloc2.cu, driver 580.159.04, kernel
 * 6.18), fork() with a block live:
 *   registered private memory, 4 KiB pages    25.6 ms at 64 MiB, 395 ms at 1 GiB
 *   registered private memory, huge pages     55 ms at 64 MiB, 835 ms at 1 GiB
 *   the same with MADV_DONTFORK               1.2 ms (the child dies of SIGSEGV reading it)
 *   shared mappings, cudaHostAlloc memory     0.9-1.5 ms (the child sees later writes)
 * Linux copies a pinned page of a private mapping at fork() instead of
 * sharing it copy-on-write; the rest is the fork's own cost.  The sim pins
 * nothing, so its children already see what the H200's do (a copy, a
 * fault, the shared pages); only the copy's cost is added here, by the
 * registered bytes that are private and not MADV_DONTFORK, which only
 * /proc/self/smaps tells (sharing, VmFlags "dc", AnonHugePages). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sim_internal.h"

/* Bytes of [s, e) inside the spans. */
static size_t overlap(const struct sim_span *sp, size_t n, uintptr_t s, uintptr_t e)
{
	size_t bytes = 0;

	for (size_t i = 0; i < n; i++) {
		uintptr_t b = sp[i].base > s ? sp[i].base : s;
		uintptr_t t = sp[i].base + sp[i].size < e ? sp[i].base + sp[i].size : e;

		bytes += t > b ? t - b : 0;
	}
	return bytes;
}

/* Is the two-letter flag f among an smaps VmFlags line's? */
static bool vm_flag(const char *flags, const char *f)
{
	for (const char *p = flags; (p = strstr(p, f)) != NULL; p += 2)
		if (p[-1] == ' ' && (p[2] == ' ' || p[2] == '\n' || p[2] == '\0'))
			return true;
	return false;
}

double sim_fork_copy_us(void)
{
	size_t n = 0;
	struct sim_span *sp = sim_mem_spans(MT_REGISTERED, &n);
	unsigned long long small = 0, huge = 0, huge_kb = 0;
	uintptr_t s = 0, e = 0;
	bool priv = false;
	char *line = NULL;
	size_t cap = 0;
	double us;
	FILE *f;

	if (!n || !(f = fopen("/proc/self/smaps", "re"))) {
		free(sp);
		return 0;
	}
	while (getline(&line, &cap, f) > 0) {
		unsigned long long a, b, kb;
		char perms[8];

		if (sscanf(line, "%llx-%llx %7s", &a, &b, perms) == 3) {
			s = (uintptr_t)a;
			e = (uintptr_t)b;
			priv = perms[3] == 'p';
			huge_kb = 0;
		} else if (sscanf(line, "AnonHugePages: %llu kB", &kb) == 1) {
			huge_kb = kb;
		} else if (strncmp(line, "VmFlags:", 8) == 0 && priv && e > s && !vm_flag(line + 8, "dc")) {
			/* The last line of a mapping; its huge pages taken as spread evenly. */
			unsigned long long ov = overlap(sp, n, s, e);
			unsigned long long h = (unsigned long long)((double)ov * (double)(huge_kb << 10) / (double)(e - s));

			h = h < ov ? h : ov;
			huge += h;
			small += ov - h;
		}
	}
	free(line);
	fclose(f);
	free(sp);
	us = ((double)small * sim_cfg.fork_us_per_mb + (double)huge * sim_cfg.fork_huge_us_per_mb) / (1 << 20);
	pthread_mutex_lock(&sim_mu);
	sim_ctr.fork_copy_bytes += small + huge;
	sim_ctr.fork_copy_ns += (unsigned long long)(us * 1e3);
	pthread_mutex_unlock(&sim_mu);
	return us;
}
