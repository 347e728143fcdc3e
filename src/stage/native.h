/* native.h - staging's platform check (native.c): which devices read
 * pageable memory themselves.  Not included outside src/stage/. */
#ifndef PC_STAGE_NATIVE_H
#define PC_STAGE_NATIVE_H
#include <stdint.h>

/* 1 when device dev reads pageable memory through the host's page tables,
 * so that PINCACHE_STAGE=auto leaves its copies to the runtime.  Asked of
 * the runtime the first time only (no error may be pending: the caller
 * checked); a failed question counts as 0. */
int pc_native_device(int dev);
/* Forget dev's answer (a device reset), or every device's (dev < 0: a fork
 * child); no CUDA call. */
void pc_native_forget(int dev);
/* The devices (bit N: device N) found native so far; no CUDA call. */
uint64_t pc_native_devices(void);

#endif
