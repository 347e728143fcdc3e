/* stage.h - staging of pageable host<->device copies through a pinned ring. */
#ifndef PC_STAGE_H
#define PC_STAGE_H
#include <stddef.h>
#include <stdint.h>
#include "real/cudart_ext.h"
#include "core/copyhow.h"

/* Would staging look at a copy of n bytes (on, and not too small)?  The
 * copy policy classifies the host side only where someone will. */
int pc_stage_considers(size_t n);
/* Does staging take copies of device dev (on; and with auto, dev does not
 * read pageable memory itself: native.c)?  Its first question of a device
 * asks the runtime: call with no error pending. */
int pc_stage_on_device(int dev);

/* Does the runtime's own copy hold the calling thread until the work queued
 * ahead of it on its stream is done (pincache(7) PAGEABLE COPIES)?  A
 * synchronous copy and a copy into pageable memory: yes.  An asynchronous
 * one from pageable memory: only beyond the runtime's 2 MiB staging buffer
 * (plan.c).  From or into pinned memory, asynchronous: no.  sync: cudaMemcpy
 * or _ptds; pageable: its host side. */
int pc_rt_copy_waits(int h2d, int sync, int pageable, size_t n);

/* What pc_stage_copy did with a copy. */
enum { PC_STAGE_NO, PC_STAGE_PASS, PC_STAGE_DONE };
struct pc_staged {
    int h2d;                 /* direction (PASS, DONE) */
    cudaError_t err;         /* DONE: the result of the staged part */
    size_t redo;             /* DONE: the runtime must copy [redo, n) (n: nothing) ... */
    enum pc_copy_how how;    /* ... as this call */
    cudaStream_t stream;
    int elsewhere;           /* DONE: it stopped at a slot busy with another stream's DMA */
    int fresh_asked;         /* PASS, DONE: the fresh-source rule looked at its faults */
    uint64_t t0;
};

/* Try to stage the 1D copy c (its sides classified at most once by the
 * runtime, c->clean: no error pending; never sides c->cheap says the
 * accounting classified).  PC_STAGE_NO: the caller passes the call to the real
 * runtime unchanged (not pageable, too small, staging off, ...).
 * PC_STAGE_PASS: a pageable copy staging leaves to the runtime (ring
 * unavailable, capture, another thread staging, ...): the caller makes it,
 * timed, and reports it with pc_stage_passed.  PC_STAGE_DONE: staged; the
 * caller copies the rest (st->redo) and reports with pc_stage_done. */
int pc_stage_copy(struct pc_copy *c, struct pc_staged *st);
void pc_stage_passed(const struct pc_staged *st, size_t n, uint64_t ns);
void pc_stage_done(const struct pc_staged *st, size_t n);

/* In a forked child: forget the rings and events without CUDA calls (the
 * copy threads are stage_threads.h's). */
void pc_stage_after_fork_child(void);

/* At exit: leave the node's share of staging (node.h): the file goes with
 * the node's last staging process.  No CUDA call. */
void pc_stage_at_exit(void);

/* Device dev's primary context is destroyed (a device reset): its ring
 * (pinned chunks and events) dies with it; forget it. */
void pc_stage_forget_device(int dev);
/* Out of pinned memory for the program: the staging rings' chunks go back,
 * once their copies and DMAs are done (ring.h).  Returns the bytes given
 * back. */
size_t pc_stage_shed(void);

/* The devices (bit N: device N) whose copies PINCACHE_STAGE=auto left to
 * the runtime because they read pageable memory natively (native.c), for
 * the report; no CUDA call. */
uint64_t pc_stage_native_devices(void);

/* Run fn(arg, i) for i in [0, n) on the copy threads and the caller (the
 * fast block's pre-fault, stage/fastalloc.c), starting the threads if no
 * copy has yet: 1.  lock_held: the caller already holds the staging lock (a
 * ring chunk made during a copy).  wide: up to the node's share of threads
 * for this process before its cap of 8 (share.c), those beyond the pool
 * parked helpers of their own (xfer_help.h).  0: another thread is
 * staging now and nothing ran (the caller does the work itself, never
 * waits for it). */
int pc_stage_parallel(void (*fn)(void *arg, uint64_t i), void *arg, uint64_t n, int lock_held, int wide);

#endif
