/* sim_pool.c - memory pools (test double), minimal: pools located on a
 * device or on the host, each location's default and current pool, and
 * stream-ordered allocation from them.  A host pool's allocation is pinned
 * host memory (pointer attributes: host; its device address is its host
 * address), freed by cudaFreeAsync in stream order; the sim keeps no
 * reserve, so a trim has nothing to give back.  Everything here is
 * ASSUMED, TO BE MEASURED (tests/doubles/README.md; dev/probe/hostpool.cu):
 * the error codes, that cudaMallocAsync never allocates from a host pool
 * unless SIM_ASYNC_HOST_POOL=1 (then it does, once cudaMemSetMemPool made
 * a host pool current), that a pool destroyed with live allocations keeps
 * them valid. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <cuda.h>
#include "sim_internal.h"

#define POOL_MAGIC 0x706f6f6cu

struct sim_pool {
	uint32_t magic;
	int host;                 /* located on the host */
	int dev;                  /* device pools: the device */
	int is_default;           /* a location's default pool: cannot be destroyed */
	int destroyed;
};

/* Under sim_mu.  Created pools are never freed (stale handles stay safe). */
static struct sim_pool dev_default[SIM_MAX_DEVICES], host_default;
static struct sim_pool *dev_current[SIM_MAX_DEVICES], *host_current;
static int host_made_current;

static struct sim_pool *pool_of(cudaMemPool_t h)
{
	struct sim_pool *p = (struct sim_pool *)(void *)h;

	return p && p->magic == POOL_MAGIC && !p->destroyed ? p : NULL;
}

static void defaults(void)
{
	for (int d = 0; d < SIM_MAX_DEVICES; d++)
		if (!dev_default[d].magic)
			dev_default[d] = (struct sim_pool){ POOL_MAGIC, 0, d, 1, 0 };
	if (!host_default.magic)
		host_default = (struct sim_pool){ POOL_MAGIC, 1, -1, 1, 0 };
}

static int host_type(enum cudaMemLocationType t)
{
	return t == cudaMemLocationTypeHost || t == cudaMemLocationTypeHostNuma;
}

/* The pool a location names (default or current), or NULL for a bad one. */
static struct sim_pool *location_pool(const struct cudaMemLocation *loc, enum cudaMemAllocationType type,
				      int current)
{
	if (!loc || type != cudaMemAllocationTypePinned)
		return NULL;
	defaults();
	if (loc->type == cudaMemLocationTypeDevice && loc->id >= 0 && loc->id < sim_cfg.devices)
		return current && dev_current[loc->id] ? dev_current[loc->id] : &dev_default[loc->id];
	if (host_type(loc->type) && (loc->type == cudaMemLocationTypeHost || loc->id == 0))
		return current && host_current ? host_current : &host_default;
	return NULL;
}

SIM_API cudaError_t cudaMemPoolCreate(cudaMemPool_t *pool, const struct cudaMemPoolProps *props)
{
	cudaError_t e = sim_enter();
	struct sim_pool *p;
	int host;

	if (e)
		return sim_ret(e);
	if (!pool || !props || props->allocType != cudaMemAllocationTypePinned)
		return sim_ret(cudaErrorInvalidValue);
	host = host_type(props->location.type);
	if (host ? props->handleTypes != cudaMemHandleTypeNone || (props->location.type ==
		   cudaMemLocationTypeHostNuma && props->location.id != 0)
		 : props->location.type != cudaMemLocationTypeDevice || props->location.id < 0 ||
		   props->location.id >= sim_cfg.devices)
		return sim_ret(cudaErrorInvalidValue);
	if (!(p = calloc(1, sizeof *p)))
		return sim_ret(cudaErrorMemoryAllocation);
	*p = (struct sim_pool){ POOL_MAGIC, host, host ? -1 : props->location.id, 0, 0 };
	sim_keep(p);     /* never freed: stale handles stay safe to read */
	*pool = (cudaMemPool_t)(void *)p;
	return cudaSuccess;
}

SIM_API cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool)
{
	cudaError_t e = sim_enter();
	struct sim_pool *p;

	if (e)
		return sim_ret(e);
	pthread_mutex_lock(&sim_mu);
	p = pool_of(pool);
	if (p && !p->is_default) {
		p->destroyed = 1;   /* its live allocations stay valid */
		if (p == host_current)
			host_current = NULL;
		if (!p->host && dev_current[p->dev] == p)
			dev_current[p->dev] = NULL;
	}
	pthread_mutex_unlock(&sim_mu);
	return p && !p->is_default ? cudaSuccess : sim_ret(cudaErrorInvalidValue);
}

SIM_API cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t keep)
{
	cudaError_t e = sim_enter();

	(void)keep;
	if (e)
		return sim_ret(e);
	return pool_of(pool) ? cudaSuccess : sim_ret(cudaErrorInvalidValue);
}

static cudaError_t get_pool(cudaMemPool_t *pool, struct cudaMemLocation *loc, enum cudaMemAllocationType type,
			    int current)
{
	cudaError_t e = sim_enter();
	struct sim_pool *p;

	if (e)
		return sim_ret(e);
	if (!pool)
		return sim_ret(cudaErrorInvalidValue);
	pthread_mutex_lock(&sim_mu);
	p = location_pool(loc, type, current);
	pthread_mutex_unlock(&sim_mu);
	if (!p)
		return sim_ret(cudaErrorInvalidValue);
	*pool = (cudaMemPool_t)(void *)p;
	return cudaSuccess;
}

SIM_API cudaError_t cudaMemGetDefaultMemPool(cudaMemPool_t *pool, struct cudaMemLocation *loc,
					     enum cudaMemAllocationType type)
{
	return get_pool(pool, loc, type, 0);
}

SIM_API cudaError_t cudaMemGetMemPool(cudaMemPool_t *pool, struct cudaMemLocation *loc,
				      enum cudaMemAllocationType type)
{
	return get_pool(pool, loc, type, 1);
}

/* The pool must be of the location (cuMemSetMemPool's documentation). */
SIM_API cudaError_t cudaMemSetMemPool(struct cudaMemLocation *loc, enum cudaMemAllocationType type,
				      cudaMemPool_t pool)
{
	cudaError_t e = sim_enter();
	struct sim_pool *p, *at;

	if (e)
		return sim_ret(e);
	pthread_mutex_lock(&sim_mu);
	p = pool_of(pool);
	at = location_pool(loc, type, 0);
	if (p && at && p->host == at->host && p->dev == at->dev) {
		if (p->host) {
			host_current = p;
			host_made_current = 1;
		} else {
			dev_current[p->dev] = p;
		}
	} else {
		e = cudaErrorInvalidValue;
	}
	pthread_mutex_unlock(&sim_mu);
	return sim_ret(e);
}

/* "The memory pool must be local to the specified device." */
SIM_API cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t pool)
{
	struct cudaMemLocation loc = { cudaMemLocationTypeDevice, device };

	return cudaMemSetMemPool(&loc, cudaMemAllocationTypePinned, pool);
}

void *sim_pool_async_redirect(void)
{
	static int env = -1;
	void *p;

	if (env < 0) {
		const char *v = getenv("SIM_ASYNC_HOST_POOL");
		env = v && strcmp(v, "1") == 0;
	}
	if (!env)
		return NULL;
	pthread_mutex_lock(&sim_mu);
	p = host_made_current && host_current ? host_current : NULL;
	pthread_mutex_unlock(&sim_mu);
	return p;
}

static cudaError_t from_pool(void **ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream, bool ptz)
{
	cudaError_t e = sim_enter();
	struct sim_pool *p;
	void *m;
	bool ok;

	if (e)
		return sim_ret(e);
	pthread_mutex_lock(&sim_mu);
	p = pool_of(pool);
	pthread_mutex_unlock(&sim_mu);
	if (!ptr || !p)
		return sim_ret(cudaErrorInvalidValue);
	if (size == 0) {             /* measured (H200): 0 */
		*ptr = NULL;
		return cudaSuccess;
	}
	if (!sim_stream_resolve(stream, ptz))
		return sim_ret(cudaErrorInvalidResourceHandle);
	if (!p->host) {
		int dev = sim_current_device();

		sim_set_current_device(p->dev);
		e = cudaMalloc(ptr, size);
		sim_set_current_device(dev);
		return e;
	}
	pthread_mutex_lock(&sim_mu);
	ok = sim_mem_reserve_pinned(size);
	pthread_mutex_unlock(&sim_mu);
	if (!ok)
		return sim_ret(cudaErrorMemoryAllocation);
	m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED || !sim_mem_add((uintptr_t)m, size, MT_POOL_HOST, sim_current_device(), (uintptr_t)p)) {
		if (m != MAP_FAILED)
			munmap(m, size);
		pthread_mutex_lock(&sim_mu);
		sim_ctr.live_pinned_bytes -= size;
		pthread_mutex_unlock(&sim_mu);
		return sim_ret(cudaErrorMemoryAllocation);
	}
	*ptr = m;
	return cudaSuccess;
}

SIM_API cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream)
{
	return from_pool(ptr, size, pool, stream, false);
}

SIM_API cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream)
{
	return from_pool(ptr, size, pool, stream, true);
}

int sim_pool_of(void **pool, uintptr_t ptr)
{
	struct sim_range *r;
	int rc = CUDA_ERROR_INVALID_VALUE;

	if (!pool)
		return rc;
	pthread_mutex_lock(&sim_mu);
	defaults();
	r = sim_mem_find((const void *)ptr);
	if (r && r->type == MT_POOL_HOST) {
		*pool = (void *)r->owner;
		rc = CUDA_SUCCESS;
	} else if (r && r->type == MT_DEVICE) {
		*pool = &dev_default[r->dev];
		rc = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&sim_mu);
	return rc;
}
