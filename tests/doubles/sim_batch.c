/* sim_batch.c - batched copies: cudaMemcpyBatchAsync and
 * cudaMemcpy3DBatchAsync (and their _ptsz forms) of the simulated runtime,
 * and the batch behind the simulated driver's cuMemcpyBatchAsync.
 *
 * NOT MEASURED (README.md "Batched copies: assumed", dev/probe/batch.cu
 * measures them on the H200):
 *   - the arguments are checked before any copy is queued: count 0, a NULL
 *     array, numAttrs 0 or above count, attrsIdxs not starting at 0, not
 *     increasing or reaching count, a srcAccessOrder outside Stream,
 *     DuringApiCall, Any, unknown flags, the legacy stream: 1, failIdx
 *     SIZE_MAX; an operand of size 0 or with a NULL pointer: 1, failIdx its
 *     index;
 *   - the operands are then queued in index order as single async copies
 *     by pointer; one that fails stops the batch (failIdx its index, the
 *     earlier ones stay queued);
 *   - a pageable source under srcAccessOrder Stream is read when its copy
 *     runs; under DuringApiCall and Any as a cudaMemcpyAsync's (at the
 *     call); a copy into pageable memory returns once the data is there. */
#include <stdint.h>
#include "sim_internal.h"

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
				   attrs[k].srcAccessOrder == cudaMemcpySrcAccessOrderStream);
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
					   sp, w, h, stream, ptz, o->srcAccessOrder == cudaMemcpySrcAccessOrderStream);
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

SIM_API cudaError_t cudaMemcpyBatchAsync_ptsz(void *const *dsts, const void *const *srcs, const size_t *sizes,
					      size_t count, struct cudaMemcpyAttributes *attrs, size_t *idxs,
					      size_t nattrs, cudaStream_t stream)
{
	return sim_batch(dsts, srcs, sizes, count, attrs, idxs, nattrs, NULL, stream, true);
}

SIM_API cudaError_t cudaMemcpy3DBatchAsync(size_t n, struct cudaMemcpy3DBatchOp *ops, unsigned long long flags,
					   cudaStream_t stream)
{
	return sim_batch3d(n, ops, NULL, flags, stream, false);
}

SIM_API cudaError_t cudaMemcpy3DBatchAsync_ptsz(size_t n, struct cudaMemcpy3DBatchOp *ops,
						unsigned long long flags, cudaStream_t stream)
{
	return sim_batch3d(n, ops, NULL, flags, stream, true);
}
