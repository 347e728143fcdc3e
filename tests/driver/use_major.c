/* use_major - built twice, as libuse12.so (linked to libcudart.so.12) and
 * libuse13.so (linked to libcudart.so.13): a plugin per cudart major, so
 * that majors.c holds references to both versions of cudaHostAlloc (one
 * link cannot: ld binds a name to the first library defining it). */
#include <cuda_runtime_api.h>

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define EXP __attribute__((visibility("default")))

EXP cudaError_t CAT(alloc, MAJOR)(void **p, size_t n, unsigned int flags)
{
	return cudaHostAlloc(p, n, flags);
}

EXP cudaError_t CAT(free, MAJOR)(void *p)
{
	return cudaFreeHost(p);
}
