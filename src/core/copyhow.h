/* copyhow.h - a host copy call: its shape (synchronous or not, and which
 * default stream its stream 0 means: the _ptds/_ptsz forms), and, as the
 * copy policy (api/copy.c) hands it to the accounting and to staging, its
 * arguments and what each side is (classified once: memkind.h). */
#ifndef PC_COPYHOW_H
#define PC_COPYHOW_H
#include <stddef.h>
#include "real/cudart_ext.h"
#include "core/memkind.h"

enum pc_copy_how { PC_COPY_SYNC, PC_COPY_SYNC_PTDS, PC_COPY_ASYNC, PC_COPY_ASYNC_PTSZ };

/* The real 1D copy of the flavour a copy came in by (api/flavour.h): the
 * runtime's cudaMemcpy family or the driver's cuMemcpy{,HtoD,DtoH}, so that
 * staging's DMAs answer in that flavour's codes.  s: a cudaStream_t or a
 * CUstream (the same handles). */
typedef int (*pc_copy_fn)(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, void *s,
                          enum pc_copy_how how);

struct pc_copy {
    void *dst;
    const void *src;
    size_t n;
    enum cudaMemcpyKind kind;
    cudaStream_t stream;
    enum pc_copy_how how;
    pc_copy_fn real;         /* the real copy of the call's flavour */
    int clean;               /* checked: no CUDA error pending, n and both pointers set */
    int known;               /* the host sides the accounting needs are classified (by the
                              * runtime when clean and not cheap) */
    int cheap;               /* classified for the accounting alone (api/copy.c), perhaps
                              * without the runtime (core/hostkind.h): never for staging */
    int foreign_ctx;         /* a context the program created is current: its streams are not the ring's */
    struct pc_mem_side s, d; /* source and destination */
};

#endif
