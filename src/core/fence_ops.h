/* fence_ops.h - what the fences (fence.c, fence_streams.c) ask of a
 * device, as an ops table: the CUDA back-ends are in fence_cuda.c, and
 * tests/unit/test_fence.c drives the fences with a fake, as
 * tests/unit/test_pool.c does the pool.
 *
 * Handles are opaque: a stream is the runtime's cudaStream_t (the legacy
 * and per-thread streams are the two constants below, as in the runtime),
 * an event whatever event_create made.  An event belongs to the device
 * that was current when it was made, and is recorded with that device
 * current.  Error codes are the runtime's numbers (0: success); nothing
 * here may leave a last error behind that the program's own call would not
 * have left. */
#ifndef PC_FENCE_OPS_H
#define PC_FENCE_OPS_H

#define PC_STREAM_LEGACY ((void *)0x1)
#define PC_STREAM_PER_THREAD ((void *)0x2)

/* The answer to "is this stream or event done?". */
enum pc_fq {
    PC_FQ_DONE,       /* complete (or never recorded) */
    PC_FQ_PENDING,    /* work in flight */
    PC_FQ_REFUSED,    /* a stream capture refused the question: says nothing */
    PC_FQ_ERROR,      /* any other error (a broken context, a bad handle) */
};

struct pc_fence_ops {
    /* The current device; 0 or an error code. */
    int (*get_device)(int *dev);
    /* Make dev current; 0 or an error code. */
    int (*set_device)(int dev);
    /* Is the current context healthy (no kernel fault broke it)?  1 or 0
     * (also 0 with no context current).  Never sets a last error. */
    int (*context_ok)(void);
    /* Context-wide fences available (decided once, may log it)? */
    int (*ctx_wide)(void);
    /* The current context, or NULL (none current, or the question failed). */
    void *(*ctx_current)(void);
    /* Record ev to capture all work of ctx; 0 or an error code. */
    int (*ctx_record)(void *ctx, void *ev);
    /* A new event on the current device; 0 or an error code. */
    int (*event_create)(void **ev);
    /* Record ev on stream s (its device current); 0 or an error code. */
    int (*event_record)(void *ev, void *s);
    /* enum pc_fq; for PC_FQ_ERROR the code in *err. */
    int (*event_query)(void *ev, int *err);
    /* enum pc_fq. */
    int (*stream_query)(void *s);
    /* A handle pincache did not see created: is it a stream, and which?
     * 0 and *nonblocking, *dev (-1 where the device cannot be told), or -1
     * when it is not a stream the runtime knows. */
    int (*stream_probe)(void *s, int *nonblocking, int *dev);
    /* May any device have streams pincache never sees created (a loaded
     * cudart of a major it has no wrappers for)? */
    int (*blind_all)(void);
};

/* The CUDA back-end (fence_cuda.c): the runtime's calls, the driver's
 * where PINCACHE_FENCE says so, cuCtxRecordEvent for context-wide fences. */
extern const struct pc_fence_ops pc_fence_cuda_ops;

/* Use ops instead (tests; before any fence is recorded). */
void pc_fence_set_ops(const struct pc_fence_ops *ops);

#endif
