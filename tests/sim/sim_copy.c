/* sim_copy.c - the cudaMemcpy and cudaMemset families.
 *
 * Host-side behaviour follows the CUDA "API synchronization behavior" page:
 *   - copies whose host side is pinned (cudaHostAlloc'd or registered), and
 *     device-to-device copies, are asynchronous: the stream's worker reads the
 *     source when the copy executes, not when it is queued;
 *   - an async copy from pageable memory waits for the stream's earlier work,
 *     copies the source into a staging buffer and returns: the caller may then
 *     overwrite the source;
 *   - an async copy into pageable memory returns once the data is there;
 *   - cudaMemcpy (and cudaMemcpy_ptds) is queued on the legacy (per-thread)
 *     default stream and returns when the copy is done.
 */
#include <stdlib.h>
#include <string.h>
#include "sim_internal.h"

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

static cudaError_t copy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
			  size_t height, enum cudaMemcpyKind kind, cudaStream_t stream, bool ptz,
			  enum copy_mode mode)
{
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

	if (mode == COPY_ASYNC && ss.pageable) {
		/* Stage the source now, after the stream's earlier work. */
		char *stage = malloc(width * height);

		if (!stage) {
			free(op);
			return sim_ret(cudaErrorMemoryAllocation);
		}
		pthread_mutex_lock(&sim_mu);
		seq = s->enq;
		pthread_mutex_unlock(&sim_mu);
		sim_wait_seq(s, seq);
		for (size_t r = 0; r < height; r++)
			memcpy(stage + r * width, (const char *)src + r * op->spitch, width);
		op->src = op->owned = stage;
		op->spitch = width;
	}
	e = sim_enqueue(s, op, &seq);
	if (!e && seq && (mode == COPY_SYNC || sd.pageable))
		sim_wait_seq(s, seq);
	return sim_ret(e);
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
