/* sim_vmm.c - the simulated driver's memory pools (over sim_pool.c) and
 * virtual memory management (test double, libcuda.so.1 only), minimal.
 *
 * VMM: a handle is a memfd of its size; cuMemAddressReserve reserves
 * inaccessible address space, cuMemMap maps the handle's file there (still
 * inaccessible), cuMemSetAccess opens it (host handles then answer as host
 * memory in pointer queries), cuMemUnmap closes it again.  cuMemRelease of
 * a mapped handle frees its memory only at its last unmap (cuMemRelease's
 * documentation).  Host handles count against SIM_PINNED_LIMIT from create
 * to free.  Everything here is ASSUMED, TO BE MEASURED
 * (tests/doubles/README.md; dev/probe/hostpool.cu): the granularity
 * (2 MiB), the error codes, release/unmap in either order. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cuda.h>
#include "sim_internal.h"

#define API __attribute__((visibility("default")))
#define VMM_GRANULE ((size_t)2 << 20)
#define VMM_MAGIC 0x766d6d68u
#define VMM_MAX_MAPS 256

CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t n, CUstream s);
CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t n, CUmemoryPool pool, CUstream s);
CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream s);

/* Driver codes are the runtime's for everything here; the runtime's last
 * error is not the driver's business. */
static CUresult drv(cudaError_t e)
{
	if (e != cudaSuccess)
		cudaGetLastError();
	return (CUresult)e;
}

/* ---- pools: the runtime double's, under the driver's names */

API CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
	return drv(cudaMemPoolCreate((cudaMemPool_t *)pool, (const struct cudaMemPoolProps *)(const void *)props));
}

API CUresult cuMemPoolDestroy(CUmemoryPool pool) { return drv(cudaMemPoolDestroy((cudaMemPool_t)pool)); }
API CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) { return drv(cudaMemPoolTrimTo((cudaMemPool_t)pool, keep)); }

API CUresult cuMemGetDefaultMemPool(CUmemoryPool *pool, CUmemLocation *loc, CUmemAllocationType type)
{
	return drv(cudaMemGetDefaultMemPool((cudaMemPool_t *)pool, (struct cudaMemLocation *)(void *)loc,
					    (enum cudaMemAllocationType)type));
}

API CUresult cuMemGetMemPool(CUmemoryPool *pool, CUmemLocation *loc, CUmemAllocationType type)
{
	return drv(cudaMemGetMemPool((cudaMemPool_t *)pool, (struct cudaMemLocation *)(void *)loc,
				     (enum cudaMemAllocationType)type));
}

API CUresult cuMemSetMemPool(CUmemLocation *loc, CUmemAllocationType type, CUmemoryPool pool)
{
	return drv(cudaMemSetMemPool((struct cudaMemLocation *)(void *)loc, (enum cudaMemAllocationType)type,
				     (cudaMemPool_t)pool));
}

API CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
	return drv(cudaDeviceSetMemPool(dev, (cudaMemPool_t)pool));
}

API CUresult cuMemAllocFromPoolAsync(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s)
{
	return drv(cudaMallocFromPoolAsync((void **)p, n, (cudaMemPool_t)pool, (cudaStream_t)s));
}

API CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s)
{
	return drv(cudaMallocFromPoolAsync_ptsz((void **)p, n, (cudaMemPool_t)pool, (cudaStream_t)s));
}

API CUresult cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s)
{
	return drv(cudaMallocAsync((void **)p, n, (cudaStream_t)s));
}

API CUresult cuMemAllocAsync_ptsz(CUdeviceptr *p, size_t n, CUstream s)
{
	return drv(cudaMallocAsync_ptsz((void **)p, n, (cudaStream_t)s));
}

API CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) { return drv(cudaFreeAsync((void *)p, (cudaStream_t)s)); }
API CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s) { return drv(cudaFreeAsync_ptsz((void *)p, (cudaStream_t)s)); }

/* Pinned and registered memory as measured (sim_mem.c: the context is the
 * one current at the allocation, which the driver double records);
 * otherwise the pool handle only. */
API CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attr, CUdeviceptr ptr)
{
	int rc = sim_mem_host_attribute(data, (int)attr, (uintptr_t)ptr, NULL);

	if (rc >= 0)
		return (CUresult)rc;
	if (attr != CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE)
		return CUDA_ERROR_INVALID_VALUE;
	return (CUresult)sim_pool_of((void **)data, (uintptr_t)ptr);
}

/* ---- VMM */

struct vmm_handle {
	uint32_t magic;
	struct vmm_handle *next;  /* every handle ever made (never freed: stale values stay safe) */
	int fd;
	size_t size;
	int host;
	int released;
	unsigned maps;
};

/* Under mu: the live mappings and reservations. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct { uintptr_t ptr; size_t size; struct vmm_handle *h; int open; } maps[VMM_MAX_MAPS];
static struct { uintptr_t ptr; size_t size; } resv[VMM_MAX_MAPS];
static struct vmm_handle *handles;

/* Caller holds mu. */
static struct vmm_handle *handle_of(CUmemGenericAllocationHandle h)
{
	for (struct vmm_handle *v = handles; v; v = v->next)
		if ((uintptr_t)v == (uintptr_t)h)
			return v->magic == VMM_MAGIC && !v->released ? v : NULL;
	return NULL;
}

/* Caller holds mu.  Gone: released and unmapped everywhere. */
static void maybe_free(struct vmm_handle *v)
{
	if (!v->released || v->maps)
		return;
	close(v->fd);
	if (v->host) {
		pthread_mutex_lock(&sim_mu);
		sim_ctr.live_pinned_bytes -= v->size;
		pthread_mutex_unlock(&sim_mu);
	}
	v->magic = 0;
}

API CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
			 unsigned long long flags)
{
	struct vmm_handle *v;
	int host, n = 0;
	bool ok = true;

	if (sim_enter())
		return CUDA_ERROR_NOT_INITIALIZED;
	cudaGetDeviceCount(&n);
	if (!handle || !prop || flags || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED || size == 0 ||
	    size % VMM_GRANULE)
		return CUDA_ERROR_INVALID_VALUE;
	host = prop->location.type == CU_MEM_LOCATION_TYPE_HOST ||
	       (prop->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA && prop->location.id == 0);
	if (!host && (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE || prop->location.id < 0 ||
		      prop->location.id >= n))
		return CUDA_ERROR_INVALID_VALUE;
	if (host) {
		pthread_mutex_lock(&sim_mu);
		ok = sim_mem_reserve_pinned(size);
		pthread_mutex_unlock(&sim_mu);
		if (!ok)
			return CUDA_ERROR_OUT_OF_MEMORY;
	}
	v = calloc(1, sizeof *v);
	if (v)
		v->fd = memfd_create("sim-vmm", MFD_CLOEXEC);
	if (!v || v->fd < 0 || ftruncate(v->fd, (off_t)size) != 0) {
		if (v && v->fd >= 0)
			close(v->fd);
		free(v);
		if (host) {
			pthread_mutex_lock(&sim_mu);
			sim_ctr.live_pinned_bytes -= size;
			pthread_mutex_unlock(&sim_mu);
		}
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	v->magic = VMM_MAGIC;
	v->size = size;
	v->host = host;
	pthread_mutex_lock(&mu);
	v->next = handles;
	handles = v;
	pthread_mutex_unlock(&mu);
	*handle = (CUmemGenericAllocationHandle)(uintptr_t)v;
	return CUDA_SUCCESS;
}

API CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	struct vmm_handle *v;

	if (sim_enter())
		return CUDA_ERROR_NOT_INITIALIZED;
	pthread_mutex_lock(&mu);
	v = handle_of(handle);
	if (v) {
		v->released = 1;
		maybe_free(v);
	}
	pthread_mutex_unlock(&mu);
	return v ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

API CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t align, CUdeviceptr addr,
				 unsigned long long flags)
{
	void *m;
	int i;

	(void)align;
	(void)addr;
	if (sim_enter())
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!ptr || size == 0 || size % VMM_GRANULE || flags)
		return CUDA_ERROR_INVALID_VALUE;
	m = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&mu);
	for (i = 0; i < VMM_MAX_MAPS && resv[i].ptr; i++)
		;
	if (i < VMM_MAX_MAPS)
		resv[i].ptr = (uintptr_t)m, resv[i].size = size;
	pthread_mutex_unlock(&mu);
	if (i == VMM_MAX_MAPS) {
		munmap(m, size);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*ptr = (CUdeviceptr)(uintptr_t)m;
	return CUDA_SUCCESS;
}

API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	int i;

	if (sim_enter())
		return CUDA_ERROR_NOT_INITIALIZED;
	pthread_mutex_lock(&mu);
	for (i = 0; i < VMM_MAX_MAPS && !(resv[i].ptr == (uintptr_t)ptr && resv[i].size == size); i++)
		;
	if (i < VMM_MAX_MAPS)
		resv[i].ptr = 0;
	pthread_mutex_unlock(&mu);
	if (i == VMM_MAX_MAPS)
		return CUDA_ERROR_INVALID_VALUE;
	munmap((void *)(uintptr_t)ptr, size);
	return CUDA_SUCCESS;
}

/* Is [p, p+n) inside one reservation and free of mappings?  Caller holds mu. */
static int can_map(uintptr_t p, size_t n)
{
	int in = 0;

	for (int i = 0; i < VMM_MAX_MAPS; i++) {
		if (resv[i].ptr && p >= resv[i].ptr && p - resv[i].ptr + n <= resv[i].size)
			in = 1;
		if (maps[i].h && p < maps[i].ptr + maps[i].size && maps[i].ptr < p + n)
			return 0;
	}
	return in;
}

API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
		      unsigned long long flags)
{
	uintptr_t p = (uintptr_t)ptr;
	struct vmm_handle *v;
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	int i;

	if (sim_enter())
		return CUDA_ERROR_NOT_INITIALIZED;
	pthread_mutex_lock(&mu);
	v = handle_of(handle);
	for (i = 0; i < VMM_MAX_MAPS && maps[i].h; i++)
		;
	/* Measured (H200): an offset not a multiple of the granularity, or a
	 * range past the handle's end, is CUDA_ERROR_NOT_SUPPORTED (801). */
	if (v && !flags && size && size % VMM_GRANULE == 0 &&
	    (offset % VMM_GRANULE != 0 || offset > v->size || size > v->size - offset))
		r = CUDA_ERROR_NOT_SUPPORTED;
	else if (v && !flags && size && size % VMM_GRANULE == 0 && i < VMM_MAX_MAPS && can_map(p, size) &&
	    mmap((void *)p, size, PROT_NONE, MAP_SHARED | MAP_FIXED, v->fd, (off_t)offset) != MAP_FAILED) {
		maps[i].ptr = p;
		maps[i].size = size;
		maps[i].h = v;
		maps[i].open = 0;
		v->maps++;
		r = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&mu);
	return r;
}

API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
	uintptr_t p = (uintptr_t)ptr;
	size_t covered = 0;

	if (sim_enter())
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!desc || !count)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < VMM_MAX_MAPS; i++)
		if (maps[i].h && maps[i].ptr >= p && maps[i].ptr - p < size)
			covered += maps[i].size;
	if (covered == size) {
		for (int i = 0; i < VMM_MAX_MAPS; i++) {
			if (!maps[i].h || maps[i].ptr < p || maps[i].ptr - p >= size || maps[i].open)
				continue;
			mprotect((void *)maps[i].ptr, maps[i].size, PROT_READ | PROT_WRITE);
			maps[i].open = sim_mem_add(maps[i].ptr, maps[i].size, maps[i].h->host ? MT_VMM_HOST : MT_DEVICE,
						   sim_current_device(), 0);
		}
	}
	pthread_mutex_unlock(&mu);
	return covered == size ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Every mapping that starts inside the range goes. */
API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	uintptr_t p = (uintptr_t)ptr;
	int n = 0;

	if (sim_enter())
		return CUDA_ERROR_NOT_INITIALIZED;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < VMM_MAX_MAPS; i++) {
		struct vmm_handle *v = maps[i].h;

		if (!v || maps[i].ptr < p || maps[i].ptr - p >= size)
			continue;
		if (maps[i].open)
			sim_mem_del(maps[i].ptr, v->host ? MT_VMM_HOST : MT_DEVICE);
		mmap((void *)maps[i].ptr, maps[i].size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE,
		     -1, 0);
		maps[i].h = NULL;
		v->maps--;
		maybe_free(v);
		n++;
	}
	pthread_mutex_unlock(&mu);
	/* Measured (H200): unmapping a reserved range with nothing mapped,
	 * or unmapping twice, answers 0. */
	(void)n;
	return CUDA_SUCCESS;
}
