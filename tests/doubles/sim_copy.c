/* sim_copy.c - the cudaMemcpy and cudaMemset families.
 *
 * Host-side behaviour, as measured on the H200 (README.md "Pageable
 * copies" names the row behind each rule):
 *   - copies whose host side is pinned (cudaHostAlloc'd or registered), and
 *     device-to-device copies, are asynchronous: the stream's worker reads the
 *     source when the copy executes, not when it is queued;
 *   - a pageable H2D (pageable_h2d) is read by the calling thread: at once up
 *     to SIM_INLINE_BYTES; beyond, through the device's one staging buffer,
 *     whose first SIM_STAGING_BYTES are read at the call and the rest once
 *     the work ahead of the copy is done (the call holds the host until then,
 *     and holds the staging buffer from every other large pageable copy of
 *     the device).  cudaMemcpy first waits for the legacy stream's earlier
 *     work (blocking and per-thread streams' included), cudaMemcpy_ptds for
 *     the per-thread stream's own; both return once the source is read, and
 *     once the copy is done where nothing else holds it;
 *   - a pageable host-to-host copy waits for the stream's earlier work,
 *     stages the source and returns;
 *   - a copy into pageable memory returns once the data is there;
 *   - a pageable copy whose device side runs past its cudaMalloc allocation
 *     is rejected with cudaErrorInvalidValue.
 */
#include <stdlib.h>
#include <string.h>
#include "sim_internal.h"

/* ---- the model's measured constants (README.md "Pageable copies") */
#define SIM_INLINE_BYTES  ((size_t)64 << 10)   /* 64 KiB: read at the call, no staging buffer */
#define SIM_STAGING_BYTES ((size_t)2 << 20)    /* 2 MiB: read at the call through the buffer */

/* One staging buffer per device, held by a large pageable H2D until its
 * source is read.  Taken before sim_mu, never the other way round. */
static pthread_mutex_t staging[SIM_MAX_DEVICES] = {
	[0 ... SIM_MAX_DEVICES - 1] = PTHREAD_MUTEX_INITIALIZER
};

/* Bytes [from, to) of a row-major source (rows of width, pitch spitch) into
 * the linear buffer stage. */
static void gather(char *stage, const char *src, size_t spitch, size_t width, size_t from, size_t to)
{
	while (from < to) {
		size_t r = from / width, c = from % width, k = width - c;

		if (k > to - from)
			k = to - from;
		memcpy(stage + from, src + r * spitch + c, k);
		from += k;
	}
}

/* cudaMemcpy's wait before it reads: the legacy stream's earlier work,
 * every blocking and per-thread stream's included (a marker queued there
 * takes those dependencies); cudaMemcpy_ptds: the per-thread stream's own. */
static cudaError_t sync_wait(struct CUstream_st *s)
{
	struct sim_op *mark;
	uint64_t seq;
	cudaError_t e;

	if (s->kind != SK_LEGACY) {
		pthread_mutex_lock(&sim_mu);
		seq = s->enq;
		pthread_mutex_unlock(&sim_mu);
		sim_wait_seq(s, seq);
		return cudaSuccess;
	}
	mark = sim_op_new(OP_WAIT);
	if (!mark)
		return cudaErrorMemoryAllocation;
	e = sim_enqueue(s, mark, &seq);
	if (!e && seq)
		sim_wait_seq(s, seq);
	return e;
}

/* A pageable H2D, op on s: the calling thread reads the source into
 * op->owned as the runtime does, queueing op once the runtime would have
 * queued its first DMA.  *seq: op's number (0: captured, op gone). */
static cudaError_t pageable_h2d(struct CUstream_st *s, struct sim_op *op, const char *src, size_t spitch,
				uint64_t *seq)
{
	size_t width = op->width, bytes = width * op->height;
	bool held = bytes > SIM_STAGING_BYTES;   /* op may be run and freed once queued, unless held */
	cudaError_t e;

	if (bytes <= SIM_INLINE_BYTES) {
		gather(op->owned, src, spitch, width, 0, bytes);
		return sim_enqueue(s, op, seq);
	}
	pthread_mutex_lock(&staging[s->dev]);
	gather(op->owned, src, spitch, width, 0, bytes < SIM_STAGING_BYTES ? bytes : SIM_STAGING_BYTES);
	op->held = held;
	e = sim_enqueue(s, op, seq);
	if (!e && *seq && held) {
		sim_wait_ahead(s, op, true);
		gather(op->owned, src, spitch, width, SIM_STAGING_BYTES, bytes);
		sim_op_release(op);
	}
	pthread_mutex_unlock(&staging[s->dev]);
	return e;
}

/* Does a pageable copy's device side [p, p + extent) run past the device
 * allocation it starts in?  Caller holds sim_mu. */
static bool past_allocation(const void *p, size_t extent)
{
	struct sim_range *r = sim_mem_find(p);

	return r && r->type == MT_DEVICE && (uintptr_t)p - r->base + extent > r->size;
}

enum copy_mode { COPY_SYNC, COPY_ASYNC };

struct side {
	bool host;      /* the side is host memory */
	bool pageable;  /* ... neither cudaHostAlloc'd nor registered */
};

/* Caller holds sim_mu. */
static struct side classify(const void *p, bool host_by_kind, bool by_pointer)
{
	struct sim_range *r = sim_mem_find(p);
	struct side sd;

	sd.host = by_pointer ? !(r && r->type == MT_DEVICE) : host_by_kind;
	sd.pageable = sd.host && !r;
	return sd;
}

/* batch: 0, or a batch operand's SIM_BATCH flags (sim_internal.h). */
static cudaError_t copy2d_ordered(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
				  size_t height, enum cudaMemcpyKind kind, cudaStream_t stream, bool ptz,
				  enum copy_mode mode, int batch)
{
	bool in_order = batch & SIM_BATCH_SRC_LATE;
	cudaError_t e = sim_enter();
	struct side sd, ss;
	struct CUstream_st *s;
	struct sim_op *op;
	uint64_t seq;
	bool by_ptr = kind == cudaMemcpyDefault;

	if (e)
		return sim_ret(e);
	if ((unsigned)kind > cudaMemcpyDefault)
		return sim_ret(cudaErrorInvalidMemcpyDirection);
	if (width == 0 || height == 0)
		return cudaSuccess;
	if (!dst || !src)
		return sim_ret(cudaErrorInvalidValue);
	if (height > 1 && (width > dpitch || width > spitch))
		return sim_ret(cudaErrorInvalidPitchValue);
	s = mode == COPY_SYNC ? sim_stream_resolve(ptz ? cudaStreamPerThread : cudaStreamLegacy, false)
			      : sim_stream_resolve(stream, ptz);
	if (!s)
		return sim_ret(cudaErrorInvalidResourceHandle);
	op = sim_op_new(OP_COPY);
	if (!op)
		return sim_ret(cudaErrorMemoryAllocation);
	pthread_mutex_lock(&sim_mu);
	sd = classify(dst, kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyHostToHost, by_ptr);
	ss = classify(src, kind == cudaMemcpyHostToDevice || kind == cudaMemcpyHostToHost, by_ptr);
	pthread_mutex_unlock(&sim_mu);
	op->dst = dst;
	op->dpitch = height > 1 ? dpitch : width;
	op->src = src;
	op->spitch = height > 1 ? spitch : width;
	op->width = width;
	op->height = height;
	op->pageable = sd.pageable || ss.pageable;
	op->delay_us = sim_copy_us(width * height);

	if (op->pageable && !(sd.host && ss.host)) {
		/* Measured: a pageable copy across two cudaMalloc neighbours is
		 * rejected, last error 1. */
		bool past;

		pthread_mutex_lock(&sim_mu);
		past = ss.pageable ? past_allocation(dst, (height - 1) * op->dpitch + width)
				   : past_allocation(src, (height - 1) * op->spitch + width);
		pthread_mutex_unlock(&sim_mu);
		if (past) {
			free(op);
			return sim_ret(cudaErrorInvalidValue);
		}
	}
	if (ss.pageable && !sd.host && !in_order && !(batch & SIM_BATCH)) {
		bool wait;

		op->owned = malloc(width * height);
		if (!op->owned) {
			free(op);
			return sim_ret(cudaErrorMemoryAllocation);
		}
		op->src = op->owned;
		op->spitch = width;
		e = mode == COPY_SYNC ? sync_wait(s) : cudaSuccess;
		if (e) {
			free(op->owned);
			free(op);
			return sim_ret(e);
		}
		e = pageable_h2d(s, op, src, spitch, &seq);
		if (e || !seq || mode != COPY_SYNC)
			return sim_ret(e);   /* refused, or captured: op is gone */
		/* Returns once the source is read; the copy itself is done by then
		 * unless other work holds it (cudaMemcpy_ptds behind legacy work:
		 * 64 KiB returned at once). */
		pthread_mutex_lock(&sim_mu);
		wait = s->done >= seq || sim_ahead_done(s, op);
		pthread_mutex_unlock(&sim_mu);
		if (wait)
			sim_wait_seq(s, seq);
		return cudaSuccess;
	}
	if (mode == COPY_ASYNC && ss.pageable && !in_order) {
		/* Stage the source now, after the stream's earlier work; a batch
		 * operand's only under SIM_BATCH_SRC_AFTER (sim_batch.c). */
		char *stage = malloc(width * height);

		if (!stage) {
			free(op);
			return sim_ret(cudaErrorMemoryAllocation);
		}
		if (!(batch & SIM_BATCH) || (batch & SIM_BATCH_SRC_AFTER)) {
			pthread_mutex_lock(&sim_mu);
			seq = s->enq;
			pthread_mutex_unlock(&sim_mu);
			sim_wait_seq(s, seq);
		}
		for (size_t r = 0; r < height; r++)
			memcpy(stage + r * width, (const char *)src + r * op->spitch, width);
		op->src = op->owned = stage;
		op->spitch = width;
	}
	e = sim_enqueue(s, op, &seq);
	if (!e && seq && (mode == COPY_SYNC || (sd.pageable && !(batch & SIM_BATCH_DST_ASYNC))))
		sim_wait_seq(s, seq);
	return sim_ret(e);
}

static cudaError_t copy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
			  size_t height, enum cudaMemcpyKind kind, cudaStream_t stream, bool ptz,
			  enum copy_mode mode)
{
	return copy2d_ordered(dst, dpitch, src, spitch, width, height, kind, stream, ptz, mode, 0);
}

cudaError_t sim_copy_async(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
			   cudaStream_t stream, bool ptz, int batch)
{
	return copy2d_ordered(dst, dpitch, src, spitch, width, height, cudaMemcpyDefault, stream, ptz, COPY_ASYNC,
			      batch | SIM_BATCH);
}

SIM_API cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
	return copy2d(dst, count, src, count, count, 1, kind, 0, false, COPY_SYNC);
}

SIM_API cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
	return copy2d(dst, count, src, count, count, 1, kind, 0, true, COPY_SYNC);
}

SIM_API cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
				    cudaStream_t stream)
{
	return copy2d(dst, count, src, count, count, 1, kind, stream, false, COPY_ASYNC);
}

SIM_API cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
					 cudaStream_t stream)
{
	return copy2d(dst, count, src, count, count, 1, kind, stream, true, COPY_ASYNC);
}

SIM_API cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
				 size_t height, enum cudaMemcpyKind kind)
{
	return copy2d(dst, dpitch, src, spitch, width, height, kind, 0, false, COPY_SYNC);
}

SIM_API cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
				      size_t height, enum cudaMemcpyKind kind)
{
	return copy2d(dst, dpitch, src, spitch, width, height, kind, 0, true, COPY_SYNC);
}

SIM_API cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
				      size_t height, enum cudaMemcpyKind kind, cudaStream_t stream)
{
	return copy2d(dst, dpitch, src, spitch, width, height, kind, stream, false, COPY_ASYNC);
}

SIM_API cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src, size_t spitch,
					   size_t width, size_t height, enum cudaMemcpyKind kind,
					   cudaStream_t stream)
{
	return copy2d(dst, dpitch, src, spitch, width, height, kind, stream, true, COPY_ASYNC);
}

static cudaError_t check_peer(int dstDevice, int srcDevice)
{
	int n = sim_cfg.devices;
	cudaError_t e = sim_enter();

	if (e)
		return sim_ret(e);
	if (dstDevice < 0 || dstDevice >= n || srcDevice < 0 || srcDevice >= n)
		return sim_ret(cudaErrorInvalidDevice);
	return cudaSuccess;
}

SIM_API cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice, size_t count)
{
	cudaError_t e = check_peer(dstDevice, srcDevice);

	return e ? e : copy2d(dst, count, src, count, count, 1, cudaMemcpyDeviceToDevice, 0, false, COPY_SYNC);
}

SIM_API cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice, size_t count,
					cudaStream_t stream)
{
	cudaError_t e = check_peer(dstDevice, srcDevice);

	return e ? e : copy2d(dst, count, src, count, count, 1, cudaMemcpyDeviceToDevice, stream, false,
			      COPY_ASYNC);
}

/* cudaMemset returns at once for device memory and waits when the target
 * is host memory; cudaMemsetAsync never waits. */
static cudaError_t memset_common(void *ptr, int value, size_t count, cudaStream_t stream, bool ptz,
				 enum copy_mode mode)
{
	cudaError_t e = sim_enter();
	struct CUstream_st *s;
	struct sim_op *op;
	struct sim_range *r;
	uint64_t seq;
	bool host;

	if (e)
		return sim_ret(e);
	if (count == 0)
		return cudaSuccess;
	if (!ptr)
		return sim_ret(cudaErrorInvalidValue);
	s = mode == COPY_SYNC ? sim_stream_resolve(ptz ? cudaStreamPerThread : cudaStreamLegacy, false)
			      : sim_stream_resolve(stream, ptz);
	if (!s)
		return sim_ret(cudaErrorInvalidResourceHandle);
	pthread_mutex_lock(&sim_mu);
	r = sim_mem_find(ptr);
	host = !r || r->type != MT_DEVICE;
	pthread_mutex_unlock(&sim_mu);
	op = sim_op_new(OP_MEMSET);
	if (!op)
		return sim_ret(cudaErrorMemoryAllocation);
	op->dst = ptr;
	op->dpitch = op->width = count;
	op->height = 1;
	op->value = value;
	op->delay_us = sim_copy_us(count);
	e = sim_enqueue(s, op, &seq);
	if (!e && seq && mode == COPY_SYNC && host)
		sim_wait_seq(s, seq);
	return sim_ret(e);
}

SIM_API cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
	return memset_common(devPtr, value, count, 0, false, COPY_SYNC);
}

SIM_API cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count)
{
	return memset_common(devPtr, value, count, 0, true, COPY_SYNC);
}

SIM_API cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
	return memset_common(devPtr, value, count, stream, false, COPY_ASYNC);
}

SIM_API cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream)
{
	return memset_common(devPtr, value, count, stream, true, COPY_ASYNC);
}
