/* memkind.c - what kind of memory a pointer is (see memkind.h).  Never
 * cached: the program can free and remap pageable memory at any time. */
#include "config.h"
#include <string.h>
#include "core/memkind.h"
#include "real/real.h"

enum pc_mem pc_mem_classify(const void *p, int *device)
{
    struct cudaPointerAttributes a;

    memset(&a, 0, sizeof a);
    if (PC_CALL_REAL(cudaPointerGetAttributes, &a, p) != cudaSuccess) {
        PC_CALL_REAL(cudaGetLastError);   /* ours: nothing was pending */
        return PC_MEM_PAGEABLE;
    }
    switch (a.type) {
    case cudaMemoryTypeUnregistered: return PC_MEM_PAGEABLE;
    case cudaMemoryTypeHost:         return PC_MEM_PINNED;
    case cudaMemoryTypeDevice:       *device = a.device; return PC_MEM_DEVICE;
    default:                         return PC_MEM_OTHER;
    }
}
