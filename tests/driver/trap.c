/* trap - a library that is not CUDA but defines names that look like it
 * (cudnnCreate, cublasCreate_v2, curl_easy_init, cudaHostAllocator) and
 * even exact CUDA names (cudaHostAlloc, cuMemHostAlloc): a lookup on its
 * handle must find its own definitions.  It also checks RTLD_NEXT through
 * the interposed dlsym: trap_next looks up the next definition of itself,
 * which must be next_b.c's, not its own. */
#include <dlfcn.h>

#define T(ret, name, val) __attribute__((visibility("default"))) ret name(void) { return val; }
T(int, cudnnCreate, 101)
T(int, cublasCreate_v2, 102)
T(int, curl_easy_init, 103)
T(int, cudaHostAllocator, 104)
T(int, cudaHostAlloc, 105)
T(int, cuMemHostAlloc, 106)
T(int, cuGetProcAddress_v2, 107)

__attribute__((visibility("default"))) int trap_next(void)
{
	int (*f)(void);

	*(void **)&f = dlsym(RTLD_NEXT, "trap_next");
	if (!f)
		return -2;
	if (f == trap_next)
		return -1;      /* RTLD_NEXT answered as if asked from elsewhere */
	return 1000 + f();
}
