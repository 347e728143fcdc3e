/* traps - exact names only: lookups of CUDA-looking and even exact CUDA
 * names on a library that is not CUDA get that library's definitions, and
 * RTLD_NEXT keeps naming the caller's successor under the interposed dlsym.
 *
 *   traps PATH-TO-libtrap.so   (the program links libtrap.so and libnext_b.so) */
#include <dlfcn.h>
#include <stdio.h>
#include "../tap.h"

int trap_next(void);

int main(int argc, char **argv)
{
	static const struct { const char *name; int val; } names[] = {
		{ "cudnnCreate", 101 }, { "cublasCreate_v2", 102 }, { "curl_easy_init", 103 },
		{ "cudaHostAllocator", 104 }, { "cudaHostAlloc", 105 }, { "cuMemHostAlloc", 106 },
		{ "cuGetProcAddress_v2", 107 },
	};
	void *h = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;

	if (!h)
		skip_all("cannot dlopen libtrap.so");
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		int (*f)(void);
		*(void **)&f = dlsym(h, names[i].name);
		is_int(f ? f() : -1, names[i].val, "dlsym(libtrap, %s) is libtrap's own", names[i].name);
	}
	ok(dlsym(h, "no_such_symbol") == NULL && dlerror() != NULL, "a missing name is still NULL with an error");
	is_int(trap_next(), 1007, "RTLD_NEXT from a library finds the next library's definition");
	return done_testing();
}
