/* batch.h - the policy of batched copies (batch.c), which the thin wrappers
 * in src/intercept/batch.c call. */
#ifndef PC_API_BATCH_H
#define PC_API_BATCH_H
#include <stddef.h>
#include "real/cudart_ext.h"

/* One cudaMemcpyBatchAsync or cuMemcpyBatchAsync call, any ABI, its
 * arguments as the program passed them. */
struct pc_batch {
    int drv;                 /* the driver's: CUdeviceptr arrays, CUresult */
    int ptsz;                /* the _ptsz form: stream 0 is the per-thread stream */
    int has_fail;            /* a failIdx argument: cudart 12, the driver's 12080 ABI */
    const void *dsts;        /* void *[] or CUdeviceptr[] */
    const void *srcs;
    const size_t *sizes;
    size_t count;
    void *attrs;             /* struct cudaMemcpyAttributes[] or CUmemcpyAttributes[] (one layout) */
    size_t *attrsIdxs;
    size_t numAttrs;
    size_t *failIdx;
    void *stream;            /* cudaStream_t or CUstream */
};

/* Count every operand as one copy, see the stream, stage the pageable
 * operands that may be (staging on), and give the rest to the real batch
 * call.  Returns the runtime's or the driver's code. */
int pc_batch_copy(const struct pc_batch *b);

/* A cudaMemcpy3DBatchAsync or cuMemcpy3DBatchAsync, never staged (the
 * caller forwards it): its stream seen before the call; once the call
 * returned, each of its n operands counted as one copy of width x height x
 * depth bytes if it succeeded (ok), none if it was refused, as a 1D batch
 * refused by pincache's own checks is not counted. */
void pc_batch3d_seen_rt(cudaStream_t s);
void pc_batch3d_seen_drv(CUstream s);
void pc_batch3d_made_rt(size_t n, const struct cudaMemcpy3DBatchOp *ops, int ok);
void pc_batch3d_made_drv(size_t n, const CUDA_MEMCPY3D_BATCH_OP *ops, int ok);

#endif
