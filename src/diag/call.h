/* call.h - the record of one interposed call, as the accounting (diag.c),
 * the trace and the CUPTI timeline read it. */
#ifndef PC_CALL_H
#define PC_CALL_H
#include <stdint.h>

/* What happened inside the call (pc_call.notes). */
#define PC_NOTE_HIT     0x01u  /* the cache served it: no real call */
#define PC_NOTE_MISS    0x02u  /* it needed a new real block */
#define PC_NOTE_REAL    0x04u  /* the runtime's function ran */
#define PC_NOTE_BUSY    0x08u  /* GPU work it waits for was in flight at entry */
#define PC_NOTE_AVOIDED 0x10u  /* GPU work was in flight; the real call would have waited */
#define PC_NOTE_TIMED   0x20u  /* a copy that returns only once the data has arrived */
#define PC_NOTE_BATCH   0x40u  /* a batched copy: its operands' kinds are accounted one by one */
#define PC_NOTE_WAITS   0x80u  /* its only work is waiting for the GPU: PC_NOTE_BUSY from its duration */
#define PC_NOTE_SLOW    0x100u /* a cache call that went beyond a hit (pc_call_slow) */

/* The cache's own calls (cudaHostAlloc, cudaMallocHost, cudaFreeHost and
 * their driver forms) as timed by sample (diag.h): how many of a thread's
 * calls of one kind share one timed call's duration. */
#define PC_HIT_SAMPLE   16u

/* The interposed call in flight on this thread.  The guard (pc_enter) lets a
 * thread run one at a time, so one thread-local record is enough.
 * api < 0: not accounted (mode off, or no call open). */
struct pc_call {
    uint64_t t0;           /* entry: CLOCK_MONOTONIC ns, or TSC ticks when tick_mult */
    uint64_t tick_mult;    /* the TSC's rate t0 was read at (util/clock.h), or 0 */
    uint64_t bytes;
    void *ptr;             /* the block (free, register), or the out-pointer (allocations) */
    int api;               /* PC_API_* */
    int copy;              /* PC_COPY_* or -1 */
    unsigned notes;        /* PC_NOTE_* */
    int untimed;           /* 1: no clock read at entry (a hit by sample, diag.h) */
    unsigned hit_seq[3];   /* this thread's cache calls per kind, for the sample */
    uint64_t hit_ns[3];    /* the last timed hit's duration, per cache call kind (0: none yet) */
    unsigned hit_bucket[3]; /* ... and its histogram bucket (util/hist.h) */
    int cupti_asked;       /* CUPTI left IDLE after a call of this thread's: a hit need not ask */
};

#endif
