/* cupti.h - the CUPTI source of the GPU timeline (PINCACHE_CUPTI).
 *
 * libcupti is never linked: cupti.c dlopens it (sharing the copy the process
 * already loaded, if any) and uses only the Activity API: buffer callbacks,
 * CONCURRENT_KERNEL, MEMCPY and MEMSET records, flushes and timestamps.  It
 * never takes a subscriber (cuptiSubscribe), of which a process has one.
 *
 * It starts lazily, after the first accounted CUDA call returned (so the
 * runtime is initialised), and in auto mode only when no other tool is known
 * to use CUPTI.  When another component of the process calls one of the
 * CUPTI entry points src/intercept/cupti.c exports, pincache hands CUPTI
 * over: it flushes its buffers, disables its activity kinds, resolves what it
 * measured, and forwards the call to the real function.  Sync attribution
 * then comes from the fences alone.  At exit pc_cupti_at_exit flushes: the
 * life cycle (init.c) registers it with atexit once CUPTI is enabled, so
 * that it runs before CUPTI's and the runtime's teardown; the report,
 * written later by a destructor, only reads counters.  Nothing here runs in
 * a fork() child. */
#ifndef PC_CUPTI_H
#define PC_CUPTI_H
#include <stdint.h>

/* The slice of CUPTI's ABI pincache relies on (cupti_activity.h, CUPTI 13;
 * stable across versions).  cupti.c checks it against the real header when
 * the build has one. */
#define PC_CUPTI_SUCCESS 0
#define PC_CUPTI_ERROR_MAX_LIMIT_REACHED 12
#define PC_CUPTI_ERROR_NOT_INITIALIZED 15
#define PC_CUPTI_KIND_MEMCPY 1
#define PC_CUPTI_KIND_MEMSET 2
#define PC_CUPTI_KIND_KERNEL 3
#define PC_CUPTI_KIND_CONCURRENT_KERNEL 10
#define PC_CUPTI_FLUSH_FORCED 1u
#define PC_CUPTI_MEMKIND_PAGEABLE 1
#define PC_CUPTI_MEMKIND_PINNED 2
/* Record offsets: every kind starts with a 32-bit kind. */
#define PC_CUPTI_KERNEL_START 16     /* uint64 start, end; uint32 deviceId @40, streamId @48 */
#define PC_CUPTI_KERNEL_END 24
#define PC_CUPTI_KERNEL_DEVICE 40
#define PC_CUPTI_KERNEL_STREAM 48
#define PC_CUPTI_MEMCPY_SRCKIND 5    /* uint8 srcKind, dstKind @6 */
#define PC_CUPTI_MEMCPY_DSTKIND 6
#define PC_CUPTI_COPY_BYTES 8        /* memcpy and memset: uint64 bytes, start @16, end @24, */
#define PC_CUPTI_COPY_START 16       /* uint32 deviceId @32, streamId @40 */
#define PC_CUPTI_COPY_END 24
#define PC_CUPTI_COPY_DEVICE 32
#define PC_CUPTI_COPY_STREAM 40

/* The states of pincache's use of CUPTI (pc_cupti_state()). */
enum pc_cupti_state {
    PC_CUPTI_IDLE,         /* not tried yet */
    PC_CUPTI_ENABLING,
    PC_CUPTI_ACTIVE,       /* collecting */
    PC_CUPTI_HANDED_OVER,  /* another component took it */
    PC_CUPTI_DECLINED,     /* left alone: off, another tool, or no driver (auto) */
    PC_CUPTI_UNAVAILABLE,  /* libcupti missing or refused */
    PC_CUPTI_FINISHED,     /* flushed at exit */
};
int pc_cupti_state(void);

/* diag.c, when an accounted call ends: the first one starts CUPTI (if it
 * should start), and synchronizing calls are measured against the timeline. */
void pc_cupti_call_end(int api, unsigned notes, uint64_t t0, uint64_t t1, int ok);

/* The life cycle (init.c).  fn, set at start-up, is called (C's lock held)
 * when CUPTI has just been enabled, after CUPTI initialised: init.c registers
 * pc_cupti_at_exit then.  pc_cupti_at_exit delivers every buffer and stops
 * collecting, if collecting; pc_cupti_after_fork_child forgets the parent's
 * session in a fork child. */
void pc_cupti_set_on_start(void (*fn)(void));
void pc_cupti_at_exit(void);
void pc_cupti_after_fork_child(void);

/* The exported CUPTI wrappers: hand CUPTI over if pincache holds it (or make
 * sure it never takes it), then return the real function of that name from
 * the loaded libcupti, or NULL. */
void *pc_cupti_hand_over(const char *name);

#endif
