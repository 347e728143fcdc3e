/* stage.h - staging of pageable host<->device copies through a pinned ring. */
#ifndef PC_STAGE_H
#define PC_STAGE_H
#include "real/cudart_ext.h"
#include "core/copyhow.h"

/* Try to stage a 1D copy.  Returns 1 when the copy was handled (its result,
 * success or the runtime's error, is in *result), 0 when the caller must
 * pass the call to the real runtime unchanged (not pageable, too small,
 * staging off, ring unavailable, stream capture, ...). */
int pc_stage_copy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                  cudaStream_t stream, enum pc_copy_how how, cudaError_t *result);

/* In a forked child: forget the ring and threads without CUDA calls. */
void pc_stage_after_fork_child(void);

/* Before the real cudaDeviceReset: the current device's ring (pinned chunks
 * and events) dies with its context; forget it. */
void pc_stage_device_reset(void);
/* The same for device dev (its primary context is destroyed). */
void pc_stage_forget_device(int dev);

#endif
