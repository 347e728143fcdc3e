/* drv_test.h - shared by the tests/driver programs. */
#ifndef DRV_TEST_H
#define DRV_TEST_H
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <string.h>

/* Base name of the object defining fn ("libpincache.so", "libcuda.so.1"). */
static inline const char *lib_of(void *fn)
{
	Dl_info info;
	const char *base;

	if (!fn || !dladdr(fn, &info) || !info.dli_fname)
		return "?";
	base = strrchr(info.dli_fname, '/');
	return base ? base + 1 : info.dli_fname;
}

#endif
