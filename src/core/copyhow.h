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

struct pc_copy {
    void *dst;
    const void *src;
    size_t n;
    enum cudaMemcpyKind kind;
    cudaStream_t stream;
    enum pc_copy_how how;
    int clean;               /* checked: no CUDA error pending, n and both pointers set */
    struct pc_mem_side s, d; /* source and destination */
};

#endif
