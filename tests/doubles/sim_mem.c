/* sim_mem.c - pinned (cudaHostAlloc), registered (cudaHostRegister) and device
 * (cudaMalloc) memory, and the pointer queries.
 *
 * All three are host memory from mmap, recorded in one sorted table of
 * non-overlapping ranges so that any interior pointer finds its range.  The
 * "device pointer" of pinned or registered memory is the host address itself
 * (UVA identity mapping): a simLaunch kernel can read it zero-copy.
 */
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cuda.h>
#include "sim_internal.h"

/* Sorted by base; under sim_mu. */
static struct sim_range *ranges;
static size_t nranges, cap_ranges;
static size_t live_device[SIM_MAX_DEVICES];
__thread uintptr_t sim_tls_owner;

/* Index of the first range whose base is above p.  Caller holds sim_mu. */
static size_t upper(uintptr_t p)
{
	size_t lo = 0, hi = nranges;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ranges[mid].base <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct sim_range *sim_mem_find(const void *p)
{
	size_t i = upper((uintptr_t)p);

	if (i == 0 || (uintptr_t)p - ranges[i - 1].base >= ranges[i - 1].size)
		return NULL;
	return &ranges[i - 1];
}

/* A range overlapping [b, b+n), or NULL.  Caller holds sim_mu. */
static struct sim_range *overlapping(uintptr_t b, size_t n)
{
	size_t i = upper(b);

	if (i > 0 && b - ranges[i - 1].base < ranges[i - 1].size)
		return &ranges[i - 1];
	if (i < nranges && ranges[i].base - b < n)
		return &ranges[i];
	return NULL;
}

/* Caller holds sim_mu.  Returns false when out of memory. */
static bool insert(const struct sim_range *r)
{
	size_t i = upper(r->base);

	if (nranges == cap_ranges) {
		size_t ncap = cap_ranges ? 2 * cap_ranges : 64;
		struct sim_range *n = realloc(ranges, ncap * sizeof *n);

		if (!n)
			return false;
		ranges = n;
		cap_ranges = ncap;
	}
	memmove(&ranges[i + 1], &ranges[i], (nranges - i) * sizeof *ranges);
	ranges[i] = *r;
	nranges++;
	return true;
}

/* Caller holds sim_mu; r points into the table. */
static void remove_range(struct sim_range *r)
{
	size_t i = (size_t)(r - ranges);

	memmove(&ranges[i], &ranges[i + 1], (nranges - i - 1) * sizeof *ranges);
	nranges--;
}

/* The exact base of a range of type t, or NULL.  Caller holds sim_mu. */
static struct sim_range *find_base(const void *p, enum sim_mem_type t)
{
	struct sim_range *r = sim_mem_find(p);

	return r && r->base == (uintptr_t)p && r->type == t ? r : NULL;
}

/* Pinned host memory is shared with a fork() child, as cudaHostAlloc's is
 * on the H200 (dev/probe/fastalloc2.cu: the child reads the block and sees
 * the parent's writes made after the fork; the fork costs 1.25-1.48 ms
 * whatever the size).  Device memory stays private: a child can make no
 * CUDA call (3), and on the H200 a device address is no host memory at all,
 * which neither mapping models; private keeps its pages out of shmem. */
static void *map(size_t size, int share)
{
	void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, share | MAP_ANONYMOUS, -1, 0);

	return m == MAP_FAILED ? NULL : m;
}

/* Is all of [p, p+size) mapped?  Registering unmapped memory fails (measured).
 * *resident: the bytes of its pages already faulted in. */
static bool mapped(const void *p, size_t size, size_t *resident)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t b = (uintptr_t)p & ~(pg - 1), e = ((uintptr_t)p + size + pg - 1) & ~(pg - 1);
	unsigned char v[64];

	*resident = 0;
	/* mincore fails with ENOMEM on any unmapped page; probe in chunks. */
	for (; b < e; b += sizeof v * pg) {
		size_t len = e - b < sizeof v * pg ? e - b : sizeof v * pg;

		if (mincore((void *)b, len, v) != 0)
			return false;
		for (size_t i = 0; i < (len + pg - 1) / pg; i++)
			*resident += (v[i] & 1) * pg;
	}
	return true;
}

static double cost_us(double fixed, double per_mb, size_t size)
{
	return fixed + per_mb * (double)size / (1 << 20);
}

/* Caller holds sim_mu. */
bool sim_mem_reserve_pinned(size_t size)
{
	if (size > sim_cfg.pinned_limit - sim_ctr.live_pinned_bytes)
		return false;
	sim_ctr.live_pinned_bytes += size;
	if (sim_ctr.live_pinned_bytes > sim_ctr.peak_pinned_bytes)
		sim_ctr.peak_pinned_bytes = sim_ctr.live_pinned_bytes;
	return true;
}

/* Pinned memory is resident: cudaHostAlloc faults its pages in, and so
 * does a registration (the H200's register of memory not yet faulted in
 * costs the faulting rate), so a later registration of the same pages
 * costs the pre-faulted rate, as on the H200.  Returns the microseconds
 * the faulting took here, which count towards the modelled cost. */
static double populate(void *ptr, size_t size, unsigned flags)
{
	double t0 = sim_now_ms();
#ifdef MADV_POPULATE_WRITE
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t b = (uintptr_t)ptr & ~(pg - 1), e = ((uintptr_t)ptr + size + pg - 1) & ~(pg - 1);

	/* Not I/O memory (no pages to fault); a failure leaves the pages as
	 * they were, which only changes the cost of a later registration. */
	if (!(flags & cudaHostRegisterIoMemory))
		(void)madvise((void *)b, e - b,
			      flags & cudaHostRegisterReadOnly ? MADV_POPULATE_READ : MADV_POPULATE_WRITE);
#else
	(void)ptr, (void)size, (void)flags;
#endif
	return (sim_now_ms() - t0) * 1e3;
}

/* ---- pinned allocations: they cost time in proportion to size and do not
 * wait for the device (measured). */

static cudaError_t host_alloc(void **p, size_t size, unsigned flags)
{
	const unsigned valid = cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined;
	cudaError_t e = sim_enter_host();
	void *m = NULL;
	bool ok;

	if (e)
		return sim_ret(e);   /* after fork: touch no lock */
	/* A broken context: size 0 is still answered 0, a NULL out-pointer and
	 * bad flags get the sticky error, not 1 (measured on the H200). */
	if (p && size == 0 && sim_sticky_error()) {
		*p = NULL;
		return cudaSuccess;
	}
	if ((e = sim_sticky_error()) != cudaSuccess) {
		if (p)
			*p = NULL;
		goto fail;
	}
	if (!p || (flags & ~valid)) {
		e = cudaErrorInvalidValue;
		goto fail;
	}
	if (size == 0) {
		*p = NULL;
		return cudaSuccess;
	}
	if ((e = sim_capture_prohibits()) != cudaSuccess)
		goto fail;
	pthread_mutex_lock(&sim_mu);
	ok = sim_mem_reserve_pinned(size);
	pthread_mutex_unlock(&sim_mu);
	if (!ok) {
		e = cudaErrorMemoryAllocation;
		goto fail;
	}
	m = map(size, MAP_SHARED);
	pthread_mutex_lock(&sim_mu);
	if (m) {
		struct sim_range r = { (uintptr_t)m, size, MT_HOST_ALLOC, flags, sim_current_device(), sim_tls_owner };

		ok = insert(&r);
	} else {
		ok = false;
	}
	if (ok) {
		sim_ctr.host_allocs++;
		sim_ctr.live_pinned_blocks++;
	} else {
		sim_ctr.live_pinned_bytes -= size;
	}
	pthread_mutex_unlock(&sim_mu);
	if (!ok) {
		if (m)
			munmap(m, size);
		e = cudaErrorMemoryAllocation;
		goto fail;
	}
	sim_sleep_us(cost_us(sim_cfg.alloc_us, sim_cfg.alloc_us_per_mb, size) - populate(m, size, 0));
	*p = m;
	return cudaSuccess;
fail:
	pthread_mutex_lock(&sim_mu);
	sim_ctr.host_alloc_errors++;
	sim_ctr.host_alloc_oom += e == cudaErrorMemoryAllocation;
	pthread_mutex_unlock(&sim_mu);
	return sim_ret(e);
}

SIM_API cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
	return host_alloc(pHost, size, flags);
}

SIM_API cudaError_t cudaMallocHost(void **ptr, size_t size)
{
	return host_alloc(ptr, size, cudaHostAllocDefault);
}

/* Waits for all device work on every stream of every device, then costs
 * time, holding the gate closed all along: other threads' calls stall
 * (measured on an H200: cudaFreeHost waits for the whole device and stalls
 * other threads' launches).  Bad pointers are refused without waiting. */
SIM_API cudaError_t cudaFreeHost(void *ptr)
{
	cudaError_t e = sim_enter();
	struct sim_range *r;
	size_t size = 0;
	bool waited;

	if (e)
		return sim_ret(e);
	if (!ptr)
		return cudaSuccess;
	pthread_mutex_lock(&sim_mu);
	if (!find_base(ptr, MT_HOST_ALLOC)) {
		sim_ctr.host_free_errors++;
		pthread_mutex_unlock(&sim_mu);
		return sim_ret(cudaErrorInvalidValue);
	}
	pthread_mutex_unlock(&sim_mu);
	if ((e = sim_capture_prohibits()) != cudaSuccess)
		return sim_ret(e);

	sim_gate_close();
	waited = sim_wait_device(-1);
	pthread_mutex_lock(&sim_mu);
	r = find_base(ptr, MT_HOST_ALLOC);   /* again: another thread may have freed it */
	if (r) {
		size = r->size;
		remove_range(r);
		sim_ctr.live_pinned_bytes -= size;
		sim_ctr.live_pinned_blocks--;
		sim_ctr.host_frees++;
		sim_ctr.host_frees_waited += waited;
	} else {
		sim_ctr.host_free_errors++;
	}
	pthread_mutex_unlock(&sim_mu);
	if (size) {
		sim_sleep_us(cost_us(sim_cfg.free_us, sim_cfg.free_us_per_mb, size));
		munmap(ptr, size);
	}
	sim_gate_open();
	return size ? cudaSuccess : sim_ret(cudaErrorInvalidValue);
}

/* The runtime double alone has no contexts: its allocations' owner is 0. */
__attribute__((weak)) uintptr_t sim_primary_owner(int dev)
{
	(void)dev;
	return 0;
}

void sim_primary_gone(int dev)
{
	sim_mem_drop_primary(dev, sim_primary_owner(dev));
}

void sim_mem_drop_owner(uintptr_t owner)
{
	sim_mem_drop_primary(-1, owner);
}

/* dev >= 0: the pinned allocations of dev's primary context, whose owner is
 * primary or, made through the runtime with no context set on the thread,
 * 0.  dev < 0: those of owner. */
void sim_mem_drop_primary(int dev, uintptr_t primary)
{
	pthread_mutex_lock(&sim_mu);
	for (size_t i = 0; i < nranges;) {
		struct sim_range r = ranges[i];

		if (r.type != MT_HOST_ALLOC ||
		    (dev < 0 ? r.owner != primary : r.dev != dev || (r.owner != 0 && r.owner != primary))) {
			i++;
			continue;
		}
		remove_range(&ranges[i]);
		sim_ctr.live_pinned_bytes -= r.size;
		sim_ctr.live_pinned_blocks--;
		munmap((void *)r.base, r.size);
	}
	pthread_mutex_unlock(&sim_mu);
}

/* ---- registered memory: its own costs (sim_cudart.c, read_register_costs,
 * has the H200 rows).  Pages already faulted in cost the pre-faulted rate,
 * the others the rate of a registration that faults them itself; mincore
 * tells them apart.  Not told apart: private huge pages, which registered
 * at about half the rate of 4 KiB pages (telling them needs smaps). */

SIM_API cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
	const unsigned valid = cudaHostRegisterPortable | cudaHostRegisterMapped |
			       cudaHostRegisterIoMemory | cudaHostRegisterReadOnly;
	cudaError_t e = sim_enter();
	struct sim_range *o;
	size_t resident = 0;
	double us;

	if (e)
		return sim_ret(e);
	if (!ptr || !size || (flags & ~valid) || !mapped(ptr, size, &resident))
		return sim_ret(cudaErrorInvalidValue);
	/* Refused by a capture as cudaHostAlloc is (measured, capfree). */
	if ((e = sim_capture_prohibits()) != cudaSuccess)
		return sim_ret(e);
	resident = resident < size ? resident : size;   /* whole pages counted */
	pthread_mutex_lock(&sim_mu);
	o = overlapping((uintptr_t)ptr, size);
	if (o)
		e = o->type == MT_REGISTERED ? cudaErrorHostMemoryAlreadyRegistered : cudaErrorInvalidValue;
	else if (!sim_mem_reserve_pinned(size))
		e = cudaErrorMemoryAllocation;
	else {
		struct sim_range r = { (uintptr_t)ptr, size, MT_REGISTERED, flags, sim_current_device(), sim_tls_owner };

		if (insert(&r)) {
			sim_ctr.host_registers++;
		} else {
			sim_ctr.live_pinned_bytes -= size;
			e = cudaErrorMemoryAllocation;
		}
	}
	pthread_mutex_unlock(&sim_mu);
	if (e)
		return sim_ret(e);
	us = cost_us(sim_cfg.register_us, sim_cfg.register_us_per_mb, resident) +
	     cost_us(0, sim_cfg.register_fault_us_per_mb, size - resident);
	sim_sleep_us(us - populate(ptr, size, flags));
	return cudaSuccess;
}

/* Waits for the device (measured), like cudaFreeHost, but without the gate. */
SIM_API cudaError_t cudaHostUnregister(void *ptr)
{
	cudaError_t e = sim_enter();
	struct sim_range *r;
	size_t size = 0;

	if (e)
		return sim_ret(e);
	if (!ptr)
		return sim_ret(cudaErrorInvalidValue);
	pthread_mutex_lock(&sim_mu);
	r = sim_mem_find(ptr);
	/* Measured: an interior pointer is invalid, an unknown one not registered;
	 * a cudaHostAlloc block, base or interior, invalid (H200, tests/gpu
	 * gpu_errors and tests/sim/fastobs, docs/runs.md run 58). */
	e = r && r->type == MT_HOST_ALLOC ? cudaErrorInvalidValue
		: !r || r->type != MT_REGISTERED ? cudaErrorHostMemoryNotRegistered
		: r->base != (uintptr_t)ptr ? cudaErrorInvalidValue : cudaSuccess;
	pthread_mutex_unlock(&sim_mu);
	if (e || (e = sim_capture_prohibits()) != cudaSuccess)   /* as cudaFreeHost (measured, capfree) */
		return sim_ret(e);
	sim_wait_device(-1);
	pthread_mutex_lock(&sim_mu);
	r = find_base(ptr, MT_REGISTERED);
	if (r) {
		size = r->size;
		remove_range(r);
		sim_ctr.live_pinned_bytes -= size;
		sim_ctr.host_unregisters++;
	}
	pthread_mutex_unlock(&sim_mu);
	if (!size)
		return sim_ret(cudaErrorHostMemoryNotRegistered);
	sim_sleep_us(cost_us(sim_cfg.unregister_us, sim_cfg.unregister_us_per_mb, size));
	return cudaSuccess;
}

/* ---- pointer queries: base and interior pointers answer alike (measured) */

SIM_API cudaError_t cudaHostGetFlags(unsigned int *pFlags, void *pHost)
{
	/* After a fault: answered after a trap (719), refused after an illegal
	 * address (700) (measured on the H200). */
	cudaError_t e = sim_enter_host();
	struct sim_range *r;

	if (!e && sim_sticky_error() == cudaErrorIllegalAddress)
		e = cudaErrorIllegalAddress;

	if (e)
		return sim_ret(e);
	if (!pFlags)
		return sim_ret(cudaErrorInvalidValue);
	pthread_mutex_lock(&sim_mu);
	r = sim_mem_find(pHost);
	if (r && r->type == MT_HOST_ALLOC)
		*pFlags = r->flags | cudaHostAllocMapped;   /* Mapped is always added (measured) */
	else if (r && r->type == MT_REGISTERED)
		*pFlags = (r->flags & (cudaHostRegisterPortable | cudaHostRegisterMapped)) | cudaHostAllocMapped;
	else
		e = cudaErrorInvalidValue;
	pthread_mutex_unlock(&sim_mu);
	return sim_ret(e);
}

SIM_API cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags)
{
	cudaError_t e = sim_enter();
	struct sim_range *r;

	if (e)
		return sim_ret(e);
	if (!pDevice || flags)
		return sim_ret(cudaErrorInvalidValue);
	pthread_mutex_lock(&sim_mu);
	r = sim_mem_find(pHost);
	if (r && r->type != MT_DEVICE && r->type != MT_POOL_HOST)   /* a host pool's: 1 (measured) */
		*pDevice = pHost;                           /* same address, interior too (measured) */
	else
		e = cudaErrorInvalidValue;
	pthread_mutex_unlock(&sim_mu);
	return sim_ret(e);
}

SIM_API cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes, const void *ptr)
{
	cudaError_t e = sim_enter_host();   /* a broken context still answers (measured) */
	struct sim_range *r;

	if (e)
		return sim_ret(e);
	if (!attributes)
		return sim_ret(cudaErrorInvalidValue);
	pthread_mutex_lock(&sim_mu);
	r = sim_mem_find(ptr);
	memset(attributes, 0, sizeof *attributes);
	if (!r) {
		attributes->type = cudaMemoryTypeUnregistered;   /* measured on an H200 */
		attributes->device = -2;
		attributes->hostPointer = (void *)ptr;
	} else if (r->type == MT_DEVICE) {
		attributes->type = cudaMemoryTypeDevice;
		attributes->device = r->dev;
		attributes->devicePointer = (void *)ptr;
	} else {
		attributes->type = cudaMemoryTypeHost;
		attributes->device = r->dev;
		attributes->devicePointer = (void *)ptr;
		attributes->hostPointer = (void *)ptr;
	}
	pthread_mutex_unlock(&sim_mu);
	return cudaSuccess;
}

/* The driver's cuPointerGetAttribute of pinned or registered memory: both
 * kinds answered alike on the H200 (docs/runtime-facts.md, "A cudaHostAlloc
 * block against a registered huge-page block": range start and size the
 * block's, memory type host, mapped 1, managed, legacy IPC and sync memops
 * 0, the host and device pointers the address, the device ordinal, the
 * context it was made in).  The booleans are written as unsigned int, as
 * the probe read them.  Other memory or attributes: -1, the caller's answer
 * stands (not measured). */
int sim_mem_host_attribute(void *data, int attr, uintptr_t ptr, void *(*primary_ctx)(int dev))
{
	struct sim_range *r, c = { 0 };

	pthread_mutex_lock(&sim_mu);
	r = sim_mem_find((const void *)ptr);
	if (r)
		c = *r;
	pthread_mutex_unlock(&sim_mu);
	if (!r || (c.type != MT_HOST_ALLOC && c.type != MT_REGISTERED))
		return -1;
	if (!data)
		return CUDA_ERROR_INVALID_VALUE;   /* assumed */
	switch (attr) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(void **)data = c.owner ? (void *)c.owner : primary_ctx ? primary_ctx(c.dev) : NULL;
		break;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned int *)data = CU_MEMORYTYPE_HOST;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
		*(CUdeviceptr *)data = attr == CU_POINTER_ATTRIBUTE_DEVICE_POINTER ? (CUdeviceptr)ptr : (CUdeviceptr)c.base;
		break;
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		*(void **)data = (void *)ptr;
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
		*(size_t *)data = c.size;
		break;
	case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
		/* H200 (tests/sim/fastobs, docs/runs.md run 58): a cudaHostAlloc
		 * block's mapping is its size rounded up to 2 MiB; a registered
		 * range's, its own size. */
		*(size_t *)data = c.type == MT_HOST_ALLOC ? (c.size + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1) : c.size;
		break;
	case CU_POINTER_ATTRIBUTE_MAPPED:
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
	case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
	case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
		*(unsigned int *)data = attr == CU_POINTER_ATTRIBUTE_MAPPED;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data = c.dev;
		break;
	default:
		return -1;
	}
	return CUDA_SUCCESS;
}

/* ---- device memory: a separate set of mappings, typed so that copies and
 * cudaPointerGetAttributes know it is device memory */

static cudaError_t device_alloc(void **p, size_t size)
{
	cudaError_t e = sim_enter();
	int dev = sim_current_device();
	bool ok;
	void *m;

	if (e)
		return sim_ret(e);
	if (!p)
		return sim_ret(cudaErrorInvalidValue);
	if (size == 0) {
		*p = NULL;
		return cudaSuccess;
	}
	pthread_mutex_lock(&sim_mu);
	ok = size <= sim_cfg.device_limit - live_device[dev];
	if (ok)
		live_device[dev] += size;
	pthread_mutex_unlock(&sim_mu);
	if (!ok)
		return sim_ret(cudaErrorMemoryAllocation);
	m = map(size, MAP_PRIVATE);
	pthread_mutex_lock(&sim_mu);
	if (m) {
		struct sim_range r = { (uintptr_t)m, size, MT_DEVICE, 0, dev, 0 };

		ok = insert(&r);
	} else {
		ok = false;
	}
	if (ok) {
		sim_ctr.device_allocs++;
		sim_ctr.live_device_bytes += size;
	} else {
		live_device[dev] -= size;
	}
	pthread_mutex_unlock(&sim_mu);
	if (!ok) {
		if (m)
			munmap(m, size);
		return sim_ret(cudaErrorMemoryAllocation);
	}
	*p = m;
	return cudaSuccess;
}

SIM_API cudaError_t cudaMalloc(void **devPtr, size_t size)
{
	return device_alloc(devPtr, size);
}

/* Ordered on the stream in real CUDA; the sim allocates at once. */
SIM_API cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
	void *hp = sim_pool_async_redirect();

	return hp ? cudaMallocFromPoolAsync(devPtr, size, (cudaMemPool_t)hp, hStream) : device_alloc(devPtr, size);
}

SIM_API cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream)
{
	void *hp = sim_pool_async_redirect();

	return hp ? cudaMallocFromPoolAsync(devPtr, size, (cudaMemPool_t)hp, hStream) : device_alloc(devPtr, size);
}

struct sim_span *sim_mem_spans(enum sim_mem_type t, size_t *n)
{
	struct sim_span *sp = NULL;
	size_t k = 0;

	pthread_mutex_lock(&sim_mu);
	for (size_t i = 0; i < nranges; i++)
		k += ranges[i].type == t;
	if (k && (sp = malloc(k * sizeof *sp)) != NULL) {
		k = 0;
		for (size_t i = 0; i < nranges; i++)
			if (ranges[i].type == t)
				sp[k++] = (struct sim_span){ ranges[i].base, ranges[i].size };
	}
	pthread_mutex_unlock(&sim_mu);
	*n = sp ? k : 0;
	return sp;
}

bool sim_mem_add(uintptr_t base, size_t size, enum sim_mem_type t, int dev, uintptr_t owner)
{
	struct sim_range r = { base, size, t, 0, dev, owner };
	bool ok;

	pthread_mutex_lock(&sim_mu);
	ok = !overlapping(base, size) && insert(&r);
	pthread_mutex_unlock(&sim_mu);
	return ok;
}

void sim_mem_del(uintptr_t base, enum sim_mem_type t)
{
	struct sim_range *r;

	pthread_mutex_lock(&sim_mu);
	r = find_base((const void *)base, t);
	if (r)
		remove_range(r);
	pthread_mutex_unlock(&sim_mu);
}

void sim_mem_free_device_now(void *p)
{
	struct sim_range *r;
	size_t size = 0;

	pthread_mutex_lock(&sim_mu);
	r = find_base(p, MT_DEVICE);
	if (r) {
		size = r->size;
		live_device[r->dev] -= size;
		remove_range(r);
		sim_ctr.device_frees++;
		sim_ctr.live_device_bytes -= size;
	} else if ((r = find_base(p, MT_POOL_HOST)) != NULL) {
		size = r->size;   /* back to the pool, which the sim does not keep */
		remove_range(r);
		sim_ctr.live_pinned_bytes -= size;
	}
	pthread_mutex_unlock(&sim_mu);
	if (size)
		munmap(p, size);
}

/* Waits for the device (measured). */
SIM_API cudaError_t cudaFree(void *devPtr)
{
	cudaError_t e = sim_enter();
	bool ok;

	if (e)
		return sim_ret(e);
	if (!devPtr)
		return cudaSuccess;
	pthread_mutex_lock(&sim_mu);
	ok = find_base(devPtr, MT_DEVICE) != NULL;
	pthread_mutex_unlock(&sim_mu);
	if (!ok)
		return sim_ret(cudaErrorInvalidValue);
	sim_wait_device(-1);
	sim_mem_free_device_now(devPtr);
	return cudaSuccess;
}

static cudaError_t free_async(void *devPtr, cudaStream_t stream, bool ptz)
{
	cudaError_t e = sim_enter();
	struct CUstream_st *s;
	struct sim_op *op;
	uint64_t seq;
	bool ok;

	if (e)
		return sim_ret(e);
	if (!devPtr)
		return cudaSuccess;
	pthread_mutex_lock(&sim_mu);
	ok = find_base(devPtr, MT_DEVICE) != NULL || find_base(devPtr, MT_POOL_HOST) != NULL;
	pthread_mutex_unlock(&sim_mu);
	if (!ok)
		return sim_ret(cudaErrorInvalidValue);
	s = sim_stream_resolve(stream, ptz);
	if (!s)
		return sim_ret(cudaErrorInvalidResourceHandle);
	op = sim_op_new(OP_FREE);
	if (!op)
		return sim_ret(cudaErrorMemoryAllocation);
	op->dst = devPtr;
	return sim_ret(sim_enqueue(s, op, &seq));
}

SIM_API cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
	return free_async(devPtr, hStream, false);
}

SIM_API cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream)
{
	return free_async(devPtr, hStream, true);
}

/* Objects the sim never frees (created contexts, pools: stale handles stay
 * safe to read) are kept reachable here, so that a leak checker sees them
 * as the sim's own.  volatile: the stores are kept. */
static void *volatile sim_kept[1024];
static unsigned sim_nkept;

void sim_keep(void *p)
{
	unsigned i = __atomic_fetch_add(&sim_nkept, 1, __ATOMIC_RELAXED);

	if (i < sizeof sim_kept / sizeof sim_kept[0])
		sim_kept[i] = p;
}
