/* fastdrv.h - the driver side of fast blocks (fastalloc.c): the driver
 * calls they are made and released with, the block's primary context, and
 * the witness block that answers for an unfenced free; and a pinned
 * allocation that leaves the runtime's last error alone. */
#ifndef PC_STAGE_FASTDRV_H
#define PC_STAGE_FASTDRV_H
#include <stddef.h>
#include "real/cudart_ext.h"

/* Registration and unregistration (driver codes; the runtime's last error
 * is left alone).  NULL until pc_fast_context_ok has resolved them. */
extern CUresult (*pc_fast_reg)(void *p, size_t n, unsigned int flags);

/* The current context is device dev's, the driver calls are there, and dev
 * has a witness: a fast block may be made now. */
int pc_fast_context_ok(int dev);

/* Unregister base in device dev's primary context (whichever context the
 * releasing thread has current): 0 done, 1 that context is gone (so is the
 * registration), -1 refused (the caller must not unmap it). */
int pc_fast_unregister(void *base, int dev);

/* The answer of the real free of a cudaHostAlloc block of device dev now:
 * real_free of dev's witness (a real 4 KiB block), or with none real_free
 * of NULL (0, or a broken context's sticky error: measured).  A witness
 * the runtime freed is replaced at once, in dev's primary context. */
int pc_fast_free_answer(int dev, int (*real_free)(void *p));

/* cuMemHostAlloc in the current context, the runtime's last error left
 * alone (hostmem.c: an allocation inside a capture with an error pending);
 * CUDA_ERROR_NOT_INITIALIZED where the driver's call cannot be reached. */
CUresult pc_fast_quiet_alloc(void **p, size_t n, unsigned int flags);
/* That call is reachable and a context is current. */
int pc_fast_quiet_ready(void);

/* Device dev's context is gone, and every witness made in it (its own, and
 * where no primary context could be pushed, other devices' made while it
 * was current). */
void pc_fast_witness_lost(int dev);
void pc_fast_drv_after_fork_child(void);

#endif
