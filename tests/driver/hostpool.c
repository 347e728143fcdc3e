/* hostpool - pinned memory that never passes through cudaHostAlloc (issue
 * 17): host memory pools through the runtime (sim libcudart.so.13) and
 * through the driver as a static cudart reaches it (dlopen libcuda.so.1,
 * cuGetProcAddress_v2), host VMM (cuMemCreate, map, access, unmap, release
 * in both orders), next to cudaHostAlloc and cudaHostRegister, some freed.
 * Bad input gets the same codes (and last error) plain and shimmed;
 * device-located pools and VMM are not pinned host memory.
 *
 * It prints "expect SOURCE live|peak BYTES" lines: what it pinned by source,
 * which hostpool.sh compares with the report's "pinned" object.
 *
 *   hostpool   (TAP; PINCACHE_LIB_EXPECTED=1 under the shim;
 *               SIM_ASYNC_HOST_POOL=1: cudaMallocAsync from the host pool) */
#include "drv_test.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include "../tap.h"

#define MiB ((size_t)1 << 20)

/* Live and peak bytes by source, as the program itself sees them. */
static long long live[4], peak[4];
static const char *const src_key[4] = { "host_alloc", "registered", "host_pools", "host_vmm" };
enum { S_ALLOC, S_REG, S_POOL, S_VMM };

static void books(int s, long long delta)
{
	live[s] += delta;
	if (live[s] > peak[s])
		peak[s] = live[s];
}

static CUresult (*gpa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
static int shim;

/* name at version through cuGetProcAddress; under the shim, pincache's. */
static void *drv(const char *name, int ver)
{
	void *f = NULL;

	if (gpa(name, &f, ver, 0, NULL) != CUDA_SUCCESS || !f)
		return NULL;
	if (shim && strncmp(name, "cuMemAddress", 12) != 0 && strcmp(name, "cuMemSetAccess") != 0 &&
	    strcmp(name, "cuInit") != 0 && strncmp(name, "cuDevicePrimary", 15) != 0 &&
	    strcmp(name, "cuCtxSetCurrent") != 0 && strcmp(name, "cuCtxSynchronize") != 0)
		ok(strcmp(lib_of(f), "libpincache.so") == 0, "%s: pincache's wrapper (%s)", name, lib_of(f));
	return f;
}

static cudaMemPool_t rt_pool(enum cudaMemLocationType t, int id, unsigned handles, cudaError_t *e)
{
	struct cudaMemPoolProps pp;
	cudaMemPool_t p = NULL;

	memset(&pp, 0, sizeof pp);
	pp.allocType = cudaMemAllocationTypePinned;
	pp.handleTypes = (enum cudaMemAllocationHandleType)handles;
	pp.location.type = t;
	pp.location.id = id;
	*e = cudaMemPoolCreate(&p, &pp);
	return p;
}

/* The runtime's failure: code e, and the same code as the last error. */
static void rt_fails(cudaError_t e, cudaError_t want, const char *what)
{
	cudaError_t last = cudaGetLastError();

	ok(e == want && last == want, "%s: %d, last error %d (want %d)", what, e, last, want);
}

static void runtime_part(void)
{
	cudaError_t e;
	cudaMemPool_t hp, dp;
	void *a, *b, *r1, *r2, *p1, *p2, *d1, *m1;
	struct cudaPointerAttributes at;
	struct cudaMemLocation hl = { cudaMemLocationTypeHost, 0 };
	int redirect = getenv("SIM_ASYNC_HOST_POOL") && strcmp(getenv("SIM_ASYNC_HOST_POOL"), "1") == 0;

	ok(cudaHostAlloc(&a, MiB, 0) == cudaSuccess, "cudaHostAlloc 1 MiB");
	books(S_ALLOC, MiB);
	ok(cudaHostAlloc(&b, 2 * MiB, 0) == cudaSuccess, "cudaHostAlloc 2 MiB");
	books(S_ALLOC, 2 * MiB);
	ok(cudaFreeHost(b) == cudaSuccess, "cudaFreeHost 2 MiB");
	books(S_ALLOC, -(long long)(2 * MiB));
	r1 = mmap(NULL, 4 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	r2 = mmap(NULL, MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ok(cudaHostRegister(r1, 4 * MiB, 0) == cudaSuccess, "cudaHostRegister 4 MiB");
	books(S_REG, 4 * MiB);
	ok(cudaHostRegister(r2, MiB, 0) == cudaSuccess, "cudaHostRegister 1 MiB");
	books(S_REG, MiB);
	ok(cudaHostUnregister(r2) == cudaSuccess, "cudaHostUnregister 1 MiB");
	books(S_REG, -(long long)MiB);

	hp = rt_pool(cudaMemLocationTypeHost, 0, 0, &e);
	ok(e == cudaSuccess && hp, "cudaMemPoolCreate (host)");
	ok(cudaMallocFromPoolAsync(&p1, MiB, hp, 0) == cudaSuccess, "cudaMallocFromPoolAsync 1 MiB (host pool)");
	books(S_POOL, MiB);
	ok(cudaMallocFromPoolAsync(&p2, 8 * MiB, hp, 0) == cudaSuccess, "cudaMallocFromPoolAsync 8 MiB (host pool)");
	books(S_POOL, 8 * MiB);
	ok(cudaPointerGetAttributes(&at, p1) == cudaSuccess && at.type == cudaMemoryTypeHost,
	   "host pool memory is host memory (type %d)", at.type);
	memset(p2, 0x5a, 8 * MiB);
	ok(cudaFreeAsync(p2, 0) == cudaSuccess, "cudaFreeAsync 8 MiB");
	books(S_POOL, -(long long)(8 * MiB));
	/* Not the cache's: cudaFreeHost of it is the runtime's answer. */
	rt_fails(cudaFreeHost(p1), cudaErrorInvalidValue, "cudaFreeHost of host pool memory");

	dp = rt_pool(cudaMemLocationTypeDevice, 0, 0, &e);
	ok(e == cudaSuccess && cudaMallocFromPoolAsync(&d1, 16 * MiB, dp, 0) == cudaSuccess,
	   "a device pool's allocation (not pinned host memory)");
	ok(cudaMallocAsync(&m1, 2 * MiB, 0) == cudaSuccess, "cudaMallocAsync before a host pool is current");
	ok(cudaMemSetMemPool(&hl, cudaMemAllocationTypePinned, hp) == cudaSuccess, "cudaMemSetMemPool (host)");
	ok(cudaMallocAsync(&m1, 4 * MiB, 0) == cudaSuccess, "cudaMallocAsync after it (%s)",
	   redirect ? "from the host pool" : "device memory");
	if (redirect)
		books(S_POOL, 4 * MiB);

	/* Bad input: the same codes and last error plain and shimmed. */
	rt_fails(cudaMemPoolCreate(NULL, NULL), cudaErrorInvalidValue, "cudaMemPoolCreate(NULL)");
	rt_pool(cudaMemLocationTypeHost, 0, 1, &e);
	rt_fails(e, cudaErrorInvalidValue, "cudaMemPoolCreate (host, handle type)");
	rt_pool(cudaMemLocationTypeHostNumaCurrent, 0, 0, &e);
	rt_fails(e, cudaErrorInvalidValue, "cudaMemPoolCreate (host NUMA current)");
	rt_pool(cudaMemLocationTypeDevice, 99, 0, &e);
	rt_fails(e, cudaErrorInvalidValue, "cudaMemPoolCreate (device 99)");
	rt_fails(cudaMallocFromPoolAsync(NULL, MiB, hp, 0), cudaErrorInvalidValue, "cudaMallocFromPoolAsync(NULL)");
	/* Destroyed with a live allocation, which stays valid and counted. */
	ok(cudaMemPoolDestroy(hp) == cudaSuccess, "cudaMemPoolDestroy (host, 1 MiB live)");
	rt_fails(cudaMemPoolDestroy(hp), cudaErrorInvalidValue, "cudaMemPoolDestroy again");
	rt_fails(cudaMallocFromPoolAsync(&b, MiB, hp, 0), cudaErrorInvalidValue, "cudaMallocFromPoolAsync, destroyed pool");
	rt_fails(cudaMemPoolTrimTo(hp, 0), cudaErrorInvalidValue, "cudaMemPoolTrimTo, destroyed pool");
	rt_fails(cudaFreeAsync(r1, 0), cudaErrorInvalidValue, "cudaFreeAsync of registered memory");
	memset(p1, 0x11, MiB);
	ok(cudaDeviceSynchronize() == cudaSuccess, "cudaDeviceSynchronize");
	(void)d1;
}

typedef CUresult (*pool_create_t)(CUmemoryPool *, const CUmemPoolProps *);
typedef CUresult (*pool_alloc_t)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
typedef CUresult (*free_async_t)(CUdeviceptr, CUstream);
typedef CUresult (*create_t)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long);
typedef CUresult (*release_t)(CUmemGenericAllocationHandle);
typedef CUresult (*reserve_t)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
typedef CUresult (*map_t)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
typedef CUresult (*access_t)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
typedef CUresult (*unmap_t)(CUdeviceptr, size_t);

static struct {
	pool_create_t pool_create;
	CUresult (*pool_destroy)(CUmemoryPool);
	pool_alloc_t alloc;
	free_async_t free_async;
	create_t create;
	release_t release;
	reserve_t reserve;
	map_t map;
	access_t access;
	unmap_t unmap;
} D;

static CUmemGenericAllocationHandle vmm(CUmemLocationType t, size_t n, unsigned long long flags, CUresult *r)
{
	CUmemAllocationProp p;
	CUmemGenericAllocationHandle h = 0;

	memset(&p, 0, sizeof p);
	p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.location.type = t;
	p.location.id = 0;
	*r = D.create(&h, n, &p, flags);
	return h;
}

/* Map h at va and open it for the device. */
static int map_open(CUdeviceptr va, size_t n, CUmemGenericAllocationHandle h)
{
	CUmemAccessDesc a = { { CU_MEM_LOCATION_TYPE_DEVICE, 0 }, CU_MEM_ACCESS_FLAGS_PROT_READWRITE };

	return D.map(va, n, 0, h, 0) == CUDA_SUCCESS && D.access(va, n, &a, 1) == CUDA_SUCCESS;
}

static void driver_part(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	CUresult (*init)(unsigned);
	CUresult (*retain)(CUcontext *, CUdevice);
	CUresult (*set)(CUcontext);
	CUcontext ctx;
	CUmemoryPool pool = NULL;
	CUmemPoolProps pp;
	CUdeviceptr d1, d2, va, vb, vc;
	CUmemGenericAllocationHandle h1, h2, h3, h4, hd;
	CUresult r;

	if (!h || !(*(void **)&gpa = dlsym(h, "cuGetProcAddress_v2"))) {
		ok(0, "dlopen libcuda.so.1: %s", dlerror());
		return;
	}
	*(void **)&init = drv("cuInit", 2000);
	*(void **)&retain = drv("cuDevicePrimaryCtxRetain", 7000);
	*(void **)&set = drv("cuCtxSetCurrent", 4000);
	*(void **)&D.pool_create = drv("cuMemPoolCreate", 11020);
	*(void **)&D.pool_destroy = drv("cuMemPoolDestroy", 11020);
	*(void **)&D.alloc = drv("cuMemAllocFromPoolAsync", 11020);
	*(void **)&D.free_async = drv("cuMemFreeAsync", 11020);
	*(void **)&D.create = drv("cuMemCreate", 10020);
	*(void **)&D.release = drv("cuMemRelease", 10020);
	*(void **)&D.reserve = drv("cuMemAddressReserve", 10020);
	*(void **)&D.map = drv("cuMemMap", 10020);
	*(void **)&D.access = drv("cuMemSetAccess", 10020);
	*(void **)&D.unmap = drv("cuMemUnmap", 10020);
	ok(init(0) == CUDA_SUCCESS && retain(&ctx, 0) == CUDA_SUCCESS && set(ctx) == CUDA_SUCCESS, "driver context");

	memset(&pp, 0, sizeof pp);
	pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	pp.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
	ok(D.pool_create(&pool, &pp) == CUDA_ERROR_INVALID_VALUE, "cuMemPoolCreate (host NUMA current): 1");
	pp.location.type = CU_MEM_LOCATION_TYPE_HOST;
	ok(D.pool_create(&pool, &pp) == CUDA_SUCCESS, "cuMemPoolCreate (host)");
	ok(D.alloc(&d1, 2 * MiB, pool, 0) == CUDA_SUCCESS, "cuMemAllocFromPoolAsync 2 MiB");
	books(S_POOL, 2 * MiB);
	ok(D.alloc(&d2, 2 * MiB, pool, 0) == CUDA_SUCCESS, "cuMemAllocFromPoolAsync 2 MiB");
	books(S_POOL, 2 * MiB);
	ok(D.free_async(d1, 0) == CUDA_SUCCESS, "cuMemFreeAsync");
	books(S_POOL, -(long long)(2 * MiB));
	ok(D.free_async(d1 + 1, 0) == CUDA_ERROR_INVALID_VALUE, "cuMemFreeAsync of an interior pointer: 1");
	ok(D.pool_destroy(pool) == CUDA_SUCCESS && D.alloc(&d1, MiB, pool, 0) == CUDA_ERROR_INVALID_VALUE,
	   "cuMemAllocFromPoolAsync, destroyed pool: 1");

	h1 = vmm(CU_MEM_LOCATION_TYPE_HOST, 4 * MiB, 0, &r);
	ok(r == CUDA_SUCCESS, "cuMemCreate 4 MiB (host)");
	books(S_VMM, 4 * MiB);
	h2 = vmm(CU_MEM_LOCATION_TYPE_HOST_NUMA, 2 * MiB, 0, &r);
	ok(r == CUDA_SUCCESS, "cuMemCreate 2 MiB (host NUMA 0)");
	books(S_VMM, 2 * MiB);
	hd = vmm(CU_MEM_LOCATION_TYPE_DEVICE, 2 * MiB, 0, &r);
	ok(r == CUDA_SUCCESS, "cuMemCreate 2 MiB (device: not host memory)");
	vmm(CU_MEM_LOCATION_TYPE_HOST, 2 * MiB, 1, &r);
	ok(r == CUDA_ERROR_INVALID_VALUE, "cuMemCreate with flags 1: 1");
	vmm(CU_MEM_LOCATION_TYPE_HOST, MiB, 0, &r);
	ok(r == CUDA_ERROR_INVALID_VALUE, "cuMemCreate of 1 MiB (not a granule): 1");
	ok(D.release((CUmemGenericAllocationHandle)0x1234) == CUDA_ERROR_INVALID_VALUE, "cuMemRelease of no handle: 1");
	ok(D.reserve(&va, 8 * MiB, 0, 0, 0) == CUDA_SUCCESS && D.reserve(&vb, 8 * MiB, 0, 0, 0) == CUDA_SUCCESS &&
	   D.reserve(&vc, 8 * MiB, 0, 0, 0) == CUDA_SUCCESS, "cuMemAddressReserve");
	/* Released while mapped: pinned until its unmap. */
	ok(map_open(va, 4 * MiB, h1), "cuMemMap + cuMemSetAccess (4 MiB)");
	memset((void *)va, 0x77, 4 * MiB);
	ok(D.release(h1) == CUDA_SUCCESS, "cuMemRelease while mapped");
	ok(((unsigned char *)va)[4 * MiB - 1] == 0x77, "still readable after the release");
	ok(D.unmap(va, 4 * MiB) == CUDA_SUCCESS, "cuMemUnmap: the memory goes");
	books(S_VMM, -(long long)(4 * MiB));
	ok(D.unmap(va, 4 * MiB) == CUDA_SUCCESS, "cuMemUnmap again: 0 (measured)");
	/* Unmapped, then released. */
	ok(map_open(vb, 2 * MiB, h2) && D.unmap(vb, 2 * MiB) == CUDA_SUCCESS, "map, unmap (2 MiB)");
	ok(D.release(h2) == CUDA_SUCCESS, "cuMemRelease after the unmap: the memory goes");
	books(S_VMM, -(long long)(2 * MiB));
	h3 = vmm(CU_MEM_LOCATION_TYPE_HOST, 2 * MiB, 0, &r);
	ok(r == CUDA_SUCCESS, "cuMemCreate 2 MiB, kept unmapped");
	books(S_VMM, 2 * MiB);
	h4 = vmm(CU_MEM_LOCATION_TYPE_HOST, 2 * MiB, 0, &r);
	ok(r == CUDA_SUCCESS && map_open(vc, 2 * MiB, h4) && D.release(h4) == CUDA_SUCCESS,
	   "cuMemCreate 2 MiB, mapped, released: kept by its mapping");
	books(S_VMM, 2 * MiB);
	(void)h3;
	(void)hd;
}

int main(void)
{
	shim = getenv("PINCACHE_LIB_EXPECTED") != NULL;
	runtime_part();
	driver_part();
	for (int s = 0; s < 4; s++)
		printf("expect %s %lld %lld\n", src_key[s], live[s], peak[s]);
	return done_testing();
}
