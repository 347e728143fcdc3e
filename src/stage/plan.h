/* plan.h - staging's private view of one copy (plan.c): which copies are
 * staged, the stream checks, and the runtime's pageable-copy ordering that
 * every choice about reading the source and waiting follows.  Not included
 * outside src/stage/. */
#ifndef PC_STAGE_PLAN_H
#define PC_STAGE_PLAN_H
#include <stddef.h>
#include "real/real.h"
#include "core/copyhow.h"

#define PC_STAGE_MAX_DEV 64

struct pc_plan {
    int h2d;                 /* direction */
    int sync;                /* cudaMemcpy/_ptds: complete before returning */
    char *host;              /* pageable side */
    char *dev;               /* device side */
    size_t n;
    int devno;               /* device of dev */
    cudaStream_t h;          /* explicit stream: 0 resolved to legacy or per-thread */
    int legacy_idle;         /* cudaMemcpy_ptds: the legacy stream had no work when it was read */
    pc_copy_fn real;         /* the DMAs: the copy's own flavour (runtime or driver) */
};

/* The program had no error pending when we started (checked), so any error
 * our own queries leave behind is ours to clear: its last-error state must
 * not change. */
static inline void pc_clear_own_error(void)
{
    PC_CALL_REAL(cudaGetLastError);
}

enum { PC_SKIP, PC_DRIVER, PC_STAGE };

/* Fill p's direction and sides from c (its sides classified at most once).
 * PC_SKIP: not a pageable host/device copy; PC_DRIVER: pageable, but the
 * device side is not plainly one device allocation covering the whole range
 * (let the runtime judge it); PC_STAGE: p may be staged. */
int pc_plan_classify(struct pc_plan *p, struct pc_copy *c);
/* Resolve the stream and check that the ring may use it: no capture, and
 * stream, current device and device memory all on one device. */
int pc_plan_stream_ok(struct pc_plan *p, cudaStream_t stream, enum pc_copy_how how);

/* The runtime's staging buffer: an async pageable H2D reads this much of
 * its source at the call (plan.c has the measurements). */
#define PC_RT_STAGING_BYTES ((size_t)2 << 20)

/* The runtime's pageable-copy ordering (plan.c has the measurements). */
int pc_rt_reads_after_stream(const struct pc_plan *p);
int pc_rt_holds_for_stream(const struct pc_plan *p, size_t read);
int pc_rt_sync_h2d_waits_dma(const struct pc_plan *p);
int pc_rt_held_for_stream(const struct pc_plan *p);

/* Wait until the work the runtime reads p's source after is done.  0: done;
 * -1: it failed (the runtime takes the copy). */
int pc_order_wait(struct pc_plan *p);
/* Forget device dev's pooled events, without CUDA calls (a device reset). */
void pc_order_forget(int dev);
/* In a forked child: forget every device's, touching no lock of the parent's. */
void pc_order_after_fork_child(void);

#endif
