/* The libcudart.so.12 twins of every runtime wrapper.  A program (or a
 * plugin) linked against libcudart.so.12 references cudaHostAlloc@libcudart.so.12
 * and binds here; the plain wrappers are cudaHostAlloc@@libcudart.so.13
 * (libpincache.map).  A twin makes major 12's real functions the current
 * ones for the length of the call (pc_tls_major: real.h) and runs the same
 * wrapper, so each major's calls reach that major's library.  References
 * to other majors find no definition here and bind to their own library
 * (real.c warns once).  Blocks are shared: every major's pinned memory is
 * the same driver's. */
#include "config.h"
#include "intercept/guard.h"
#include "real/real.h"
#include "intercept/intercept.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#define PC_RT(name, params, args)                                            \
    PC_EXPORT cudaError_t pc12_##name params                                 \
    {                                                                        \
        unsigned char m_ = pc_tls_major;                                     \
        pc_tls_major = PC_MAJOR_12;                                          \
        cudaError_t r_ = name args;                                          \
        pc_tls_major = m_;                                                   \
        return r_;                                                           \
    }                                                                        \
    __asm__(".symver pc12_" #name ", " #name "@libcudart.so.12");
/* A name whose 12 ABI differs runs that ABI's wrapper. */
#define PC_RT_ABI12(name, params, args, params12, args12)                    \
    PC_EXPORT cudaError_t pc12_##name params12                               \
    {                                                                        \
        unsigned char m_ = pc_tls_major;                                     \
        pc_tls_major = PC_MAJOR_12;                                          \
        cudaError_t r_ = pc_##name##_12 args12;                              \
        pc_tls_major = m_;                                                   \
        return r_;                                                           \
    }                                                                        \
    __asm__(".symver pc12_" #name ", " #name "@libcudart.so.12");
#define PC_RT13(name, params, args)   /* no cudart 12 twin */
#include "intercept/cudart.def"
#undef PC_RT_ABI12
#undef PC_RT13
#undef PC_RT
