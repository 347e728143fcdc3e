/* sim_batch.c - batched copies: cudaMemcpyBatchAsync and
 * cudaMemcpy3DBatchAsync (and their _ptsz forms) of the simulated runtime,
 * and the batch behind the simulated driver's cuMemcpyBatchAsync.
 *
 * Measured on the H200 (driver 580.159.04, CUDA 13.0, dev/probe/batch.cu;
 * docs/runtime-facts.md "Batched copies"), with the driver's 12080 failIdx:
 *   - the arguments are checked before any copy is queued: count 0, a NULL
 *     array, numAttrs 0 or above count, attrsIdxs not starting at 0, not
 *     increasing or reaching count, a srcAccessOrder outside Stream,
 *     DuringApiCall, Any, unknown flags, the legacy stream: 1, failIdx
 *     SIZE_MAX; an operand of size 0 or with a NULL pointer: 1, failIdx its
 *     index;
 *   - the operands are then queued in index order as single async copies
 *     by pointer; one that fails (size 0, NULL, a pageable one past its
 *     device allocation) stops the batch with 1, failIdx its index, the
 *     earlier ones queued and copied; the per-thread stream is accepted
 *     (not modelled: a pinned operand past its allocation, which the H200
 *     refuses with 1 too; the sim copies it);
 * and, as sim_flags says:
 *   - a pageable source under srcAccessOrder Stream: the call waits for the
 *     stream's earlier work, then reads it (64 KiB and 16 MiB behind a 100
 *     ms kernel: the call took 100 ms, the device got the bytes of the
 *     call's time);
 *   - under DuringApiCall and Any: 64 KiB read at the call (0.02 ms);
 *     16 MiB read when the copy runs, after the call returned (0.06 ms,
 *     the device got the bytes written after the return), DuringApiCall's
 *     contract notwithstanding; sizes between: taken to be read at the call
 *     up to SIM_INLINE_BYTES (64 KiB), as cudaMemcpyAsync;
 *   - a copy into pageable memory returns at once under Stream and Any
 *     (no data at the return), once the data is there under
 *     DuringApiCall (100 ms). */
#include <stdint.h>
#include "sim_internal.h"

#define SIM_BATCH_INLINE ((size_t)64 << 10)

static int sim_flags(enum cudaMemcpySrcAccessOrder order, size_t bytes)
{
	if (order == cudaMemcpySrcAccessOrderStream)
		return SIM_BATCH_SRC_AFTER | SIM_BATCH_DST_ASYNC;
	return (bytes > SIM_BATCH_INLINE ? SIM_BATCH_SRC_LATE : 0) |
	       (order == cudaMemcpySrcAccessOrderAny ? SIM_BATCH_DST_ASYNC : 0);
}

static bool bad_stream(cudaStream_t stream, bool ptz)
{
	return stream == cudaStreamLegacy || (!stream && !ptz);
}

static cudaError_t fail_at(size_t *fail, size_t i, cudaError_t e)
{
	if (fail)
		*fail = i;
	return sim_ret(e);
}

cudaError_t sim_batch(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
		      const struct cudaMemcpyAttributes *attrs, const size_t *idxs, size_t nattrs, size_t *fail,
		      cudaStream_t stream, bool ptz)
{
	cudaError_t e = sim_enter();
	size_t k = 0;

	if (e)
		return sim_ret(e);
	if (!count || !dsts || !srcs || !sizes || !attrs || !idxs || !nattrs || nattrs > count || idxs[0] != 0 ||
	    idxs[nattrs - 1] >= count || bad_stream(stream, ptz))
		return fail_at(fail, SIZE_MAX, cudaErrorInvalidValue);
	for (size_t a = 0; a < nattrs; a++) {
		if (a && idxs[a] <= idxs[a - 1])
			return fail_at(fail, SIZE_MAX, cudaErrorInvalidValue);
		if (attrs[a].srcAccessOrder < cudaMemcpySrcAccessOrderStream ||
		    attrs[a].srcAccessOrder > cudaMemcpySrcAccessOrderAny ||
		    (attrs[a].flags & ~(unsigned)cudaMemcpyFlagPreferOverlapWithCompute))
			return fail_at(fail, SIZE_MAX, cudaErrorInvalidValue);
	}
	for (size_t i = 0; i < count; i++)
		if (!sizes[i] || !dsts[i] || !srcs[i])
			return fail_at(fail, i, cudaErrorInvalidValue);
	if (!sim_stream_resolve(stream, ptz))
		return fail_at(fail, SIZE_MAX, cudaErrorInvalidResourceHandle);
	for (size_t i = 0; i < count; i++) {
		while (k + 1 < nattrs && idxs[k + 1] <= i)
			k++;
		e = sim_copy_async(dsts[i], sizes[i], srcs[i], sizes[i], sizes[i], 1, stream, ptz,
				   sim_flags(attrs[k].srcAccessOrder, sizes[i]));
		if (e)
			return fail_at(fail, i, e);
	}
	return cudaSuccess;
}

/* A pointer operand's row pitch and layer height in bytes (0: packed). */
static size_t pitch_of(const struct cudaMemcpy3DOperand *o, size_t width)
{
	return o->op.ptr.rowLength ? o->op.ptr.rowLength : width;
}

static size_t layer_of(const struct cudaMemcpy3DOperand *o, size_t height)
{
	return o->op.ptr.layerHeight ? o->op.ptr.layerHeight : height;
}

cudaError_t sim_batch3d(size_t n, const struct cudaMemcpy3DBatchOp *ops, size_t *fail, unsigned long long flags,
			cudaStream_t stream, bool ptz)
{
	cudaError_t e = sim_enter();

	if (e)
		return sim_ret(e);
	if (!n || !ops || flags || bad_stream(stream, ptz))
		return fail_at(fail, SIZE_MAX, cudaErrorInvalidValue);
	for (size_t i = 0; i < n; i++) {
		const struct cudaMemcpy3DBatchOp *o = &ops[i];
		if (o->src.type != cudaMemcpyOperandTypePointer || o->dst.type != cudaMemcpyOperandTypePointer ||
		    !o->extent.width || !o->extent.height || !o->extent.depth || !o->src.op.ptr.ptr ||
		    !o->dst.op.ptr.ptr || o->srcAccessOrder < cudaMemcpySrcAccessOrderStream ||
		    o->srcAccessOrder > cudaMemcpySrcAccessOrderAny)
			return fail_at(fail, i, cudaErrorInvalidValue);
	}
	for (size_t i = 0; i < n; i++) {
		const struct cudaMemcpy3DBatchOp *o = &ops[i];
		size_t w = o->extent.width, h = o->extent.height;
		size_t sp = pitch_of(&o->src, w), dp = pitch_of(&o->dst, w);
		size_t sl = layer_of(&o->src, h) * sp, dl = layer_of(&o->dst, h) * dp;

		for (size_t z = 0; z < o->extent.depth; z++) {
			e = sim_copy_async((char *)o->dst.op.ptr.ptr + z * dl, dp, (const char *)o->src.op.ptr.ptr + z * sl,
					   sp, w, h, stream, ptz, sim_flags(o->srcAccessOrder, w * h));
			if (e)
				return fail_at(fail, i, e);
		}
	}
	return cudaSuccess;
}

SIM_API cudaError_t cudaMemcpyBatchAsync(void *const *dsts, const void *const *srcs, const size_t *sizes,
					 size_t count, struct cudaMemcpyAttributes *attrs, size_t *idxs, size_t nattrs,
					 cudaStream_t stream)
{
	return sim_batch(dsts, srcs, sizes, count, attrs, idxs, nattrs, NULL, stream, false);
}

/* Measured (runtime 13.0, fuzzer seeds 7205, 7310, 7397 replayed on an
 * H100): the runtime's per-thread form refuses stream 0 with 1, as the
 * legacy stream, as 13.0's driver forms do (sim_cuda.c). */
SIM_API cudaError_t cudaMemcpyBatchAsync_ptsz(void *const *dsts, const void *const *srcs, const size_t *sizes,
					      size_t count, struct cudaMemcpyAttributes *attrs, size_t *idxs,
					      size_t nattrs, cudaStream_t stream)
{
	return sim_batch(dsts, srcs, sizes, count, attrs, idxs, nattrs, NULL, stream, stream != 0);
}

SIM_API cudaError_t cudaMemcpy3DBatchAsync(size_t n, struct cudaMemcpy3DBatchOp *ops, unsigned long long flags,
					   cudaStream_t stream)
{
	return sim_batch3d(n, ops, NULL, flags, stream, false);
}

SIM_API cudaError_t cudaMemcpy3DBatchAsync_ptsz(size_t n, struct cudaMemcpy3DBatchOp *ops,
						unsigned long long flags, cudaStream_t stream)
{
	return sim_batch3d(n, ops, NULL, flags, stream, stream != 0);   /* as the 1D form's (above) */
}
