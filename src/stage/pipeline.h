/* pipeline.h - a staged copy's H2D or D2H pipeline through a ring
 * (pipeline.c).  Not included outside src/stage/. */
#ifndef PC_STAGE_PIPELINE_H
#define PC_STAGE_PIPELINE_H
#include "stage/plan.h"

/* Stage p (pc_rings.lock held).  0: no ring to be had, or (*elsewhere set)
 * its first slot is busy with a DMA the copy may not wait for: the caller
 * passes through.  1: *result is the copy's result so far; the runtime must
 * copy from *redo on (p->n: nothing), after pc_rings.lock is released. */
int pc_pipeline_run(struct pc_plan *p, cudaError_t *result, size_t *redo, int *elsewhere);

#endif
