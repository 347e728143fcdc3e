/* sync.h - the calls that wait for the device or a stream (sync.c), which
 * the thin wrappers in src/intercept/sync.c call. */
#ifndef PC_SYNC_H
#define PC_SYNC_H
#include "real/cudart_ext.h"

/* ptsz: the _ptsz form (its stream 0 is the per-thread stream). */
cudaError_t pc_stream_synchronize(cudaStream_t s, int ptsz);
cudaError_t pc_device_synchronize(void);
cudaError_t pc_device_free(void *p);

#endif
