/* intercept.h - what the interposition files share: the libcudart.so.12
 * twins of the runtime wrappers (major.c), the CUDA 11 cuGetProcAddress
 * (procaddr.c), and the lookup of the entry points pincache substitutes
 * for the real ones (dlsym.c). */
#ifndef PC_INTERCEPT_H
#define PC_INTERCEPT_H
#include "real/drv_ext.h"

#define PC_RT(name, params, args) cudaError_t pc12_##name params;
#define PC_RT_ABI12(name, params, args, params12, args12) \
    cudaError_t pc12_##name params12; cudaError_t pc_##name##_12 params12;
#define PC_RT13(name, params, args)
#include "intercept/cudart.def"
#undef PC_RT_ABI12
#undef PC_RT13
#undef PC_RT

/* Exported as cuGetProcAddress (cuda.h maps that name to _v2). */
CUresult pc_cuGetProcAddress_v1(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
    __asm__("cuGetProcAddress") __attribute__((visibility("default")));

/* pincache's entry point standing in for real, which the real dlsym found
 * for name (in libcuda, or a libcudart of major 12 or 13), or real itself
 * when name is not one pincache serves or real lies elsewhere. */
void *pc_hook_symbol(const char *name, void *real);

#endif
