/* timeline.h - the GPU timeline CUPTI delivers, and the synchronizing host
 * calls measured against it.  Pure bookkeeping: no CUDA, no CUPTI, no
 * allocation (fixed arrays); cupti.c feeds it, the unit tests drive it
 * directly.  All times are pc_now_ns() nanoseconds (CLOCK_MONOTONIC): the
 * caller converts CUPTI's timestamps first.
 *
 * GPU intervals (kernels, copies, memsets, any stream, any device) are merged
 * into a sorted ring of disjoint busy intervals.  A synchronizing call
 * [entry, exit] waited when a busy interval overlaps it; its stall runs from
 * entry to the end of the last such interval (at most exit); the GPU idle gap
 * after it runs from there to the next busy interval.  Calls are resolved
 * late (when their ring is full, when the intervals they need leave theirs,
 * or at pc_tl_finish) because CUPTI delivers records in buffers, out of
 * order across streams. */
#ifndef PC_TIMELINE_H
#define PC_TIMELINE_H
#include <stdint.h>

/* Capacities (powers of two). */
#define PC_TL_BUSY_MAX  32768u   /* merged busy intervals: 16 bytes each */
#define PC_TL_CALLS_MAX 4096u    /* synchronizing calls awaiting resolution: 24 bytes each */

/* Kinds of GPU activity (also the trace's names). */
enum pc_gpu_kind { PC_GPU_KERNEL, PC_GPU_MEMCPY, PC_GPU_MEMSET };
/* The host side of a copy, from CUPTI's srcKind/dstKind. */
enum pc_gpu_mem { PC_GPU_MEM_OTHER, PC_GPU_MEM_PAGEABLE, PC_GPU_MEM_PINNED };

/* One GPU activity (for the trace). */
struct pc_gpu_ev {
    uint64_t start, end;     /* monotonic ns */
    uint64_t bytes;          /* copies and memsets */
    uint32_t device, stream; /* CUPTI's ids */
    uint8_t kind;            /* pc_gpu_kind */
    uint8_t mem;             /* pc_gpu_mem, copies only */
    uint8_t pad[6];
};

/* Every entry point below takes the timeline's own lock (a mutex), except
 * pc_tl_trace_each (exit only).  Never call CUPTI while holding it. */

/* A GPU activity.  Counted in the gpu_* statistics; a timed one (start and
 * end nonzero) joins the busy intervals and the trace ring. */
void pc_tl_add_gpu(const struct pc_gpu_ev *ev);

/* A batch of activities under one lock: begin, pc_tl_add_gpu_locked..., end. */
void pc_tl_lock(void);
void pc_tl_add_gpu_locked(const struct pc_gpu_ev *ev);
void pc_tl_unlock(void);

/* A synchronizing call of PC_API api that ran from t0 to t1. */
void pc_tl_add_call(int api, uint64_t t0, uint64_t t1);

/* Resolve every pending call with what has arrived and add the remaining busy
 * time to gpu_busy_ns.  Later calls and activities still count. */
void pc_tl_finish(void);

/* The trace ring: the latest n activities (n rounded up to a power of two,
 * at most 1<<24); 0 or -errno.  Without it, no activity is kept. */
int pc_tl_trace_init(unsigned long n);
/* Call fn on each kept activity, oldest first; returns how many.  At exit,
 * once no more activities arrive (no lock taken). */
unsigned long pc_tl_trace_each(void (*fn)(void *arg, const struct pc_gpu_ev *ev), void *arg);

/* Forget everything (a forked child; the tests). */
void pc_tl_reset(void);

#endif
