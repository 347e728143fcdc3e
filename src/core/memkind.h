/* memkind.h - what kind of memory a pointer is: the one classifier of the
 * copy paths, asked at most once per side of a copy (pc_mem_of). */
#ifndef PC_MEMKIND_H
#define PC_MEMKIND_H

enum pc_mem {
    PC_MEM_UNASKED,          /* not classified (yet) */
    PC_MEM_PAGEABLE,         /* unknown to the runtime: malloc'd, stack, mapped */
    PC_MEM_PINNED,           /* page-locked host memory: pinned (the cache's too) or registered */
    PC_MEM_DEVICE,
    PC_MEM_OTHER,            /* managed */
};

/* One side of a copy. */
struct pc_mem_side {
    const void *p;
    int cached;              /* one of the cache's blocks (the caller looked it up) */
    enum pc_mem kind;        /* PC_MEM_UNASKED until pc_mem_of */
    int device;              /* PC_MEM_DEVICE: its device */
};

/* One cudaPointerGetAttributes.  Call with no CUDA error pending: an error
 * from the query is ours, and cleared (older runtimes answer pageable memory
 * so, instead of cudaMemoryTypeUnregistered). */
enum pc_mem pc_mem_classify(const void *p, int *device);

/* s's kind, decided on the first call only: the cache's own blocks are
 * pinned without a query. */
static inline enum pc_mem pc_mem_of(struct pc_mem_side *s)
{
    if (s->kind == PC_MEM_UNASKED)
        s->kind = s->cached ? PC_MEM_PINNED : pc_mem_classify(s->p, &s->device);
    return s->kind;
}

static inline int pc_mem_is_host(enum pc_mem k)
{
    return k == PC_MEM_PAGEABLE || k == PC_MEM_PINNED;
}

#endif
