/* guard.h - what every exported wrapper is made of: the thread-local guard
 * that lets a runtime calling its own entry points (and pincache's own
 * calls) pass straight through, and the PC_FORWARD macros, which are all
 * a wrapper does. */
#ifndef PC_GUARD_H
#define PC_GUARD_H
#include <errno.h>
#include "init.h"
#include "util/state.h"
#include "real/real.h"
#include "diag/diag.h"

#define PC_EXPORT __attribute__((visibility("default")))

static inline int pc_enter(void)
{
    if (pc_tls_depth)
        return 0;
    pc_tls_depth = 1;
    if (__builtin_expect(!__atomic_load_n(&pc_state.inited, __ATOMIC_ACQUIRE), 0))
        pc_init();
    return 1;
}

static inline void pc_leave(void)
{
    pc_tls_depth = 0;
}

/* A call that succeeds leaves errno as the program had it (the simulated
 * runtime's do, and CUDA gives errno no part in its API): what pincache's
 * own system calls met on the way (a memfd past RLIMIT_NOFILE, a /sys
 * file that is not there, the node's file not made yet) must not show
 * through.  A failed call leaves what happened inside it, the runtime's
 * errno included. */
#define PC_KEEP_ERRNO(r, saved)                                              \
    do {                                                                     \
        if ((r) == 0)                                                        \
            errno = (saved);                                                 \
    } while (0)

/* Forward to the real function when the guard is already held, otherwise run
 * the core function under the guard.  This is all a wrapper does. */
#define PC_FORWARD_WITH(call_real, name, core_call, ...)                     \
    do {                                                                     \
        int pc_errno_ = errno;                                               \
        if (!pc_enter())                                                     \
            return call_real(name, __VA_ARGS__);                             \
        __auto_type pc_r_ = (core_call);                                     \
        pc_leave();                                                          \
        PC_KEEP_ERRNO(pc_r_, pc_errno_);                                     \
        return pc_r_;                                                        \
    } while (0)
#define PC_FORWARD(name, core_call, ...) PC_FORWARD_WITH(PC_CALL_REAL, name, core_call, __VA_ARGS__)
#define PC_FORWARD_DRV(name, core_call, ...) PC_FORWARD_WITH(PC_CALL_DRV, name, core_call, __VA_ARGS__)

/* PC_FORWARD with the call accounted as api (bytes, ptr: see struct pc_call). */
#define PC_FORWARD_TIMED_WITH(call_real, api, bytes, ptr, name, core_call, ...)  \
    do {                                                                     \
        int pc_errno_ = errno;                                               \
        if (!pc_enter())                                                     \
            return call_real(name, __VA_ARGS__);                             \
        pc_call_begin(api, bytes, ptr);                                      \
        __auto_type pc_r_ = (core_call);                                     \
        pc_call_close(api, pc_r_ == 0);                                      \
        pc_leave();                                                          \
        PC_KEEP_ERRNO(pc_r_, pc_errno_);                                     \
        return pc_r_;                                                        \
    } while (0)
#define PC_FORWARD_TIMED(api, bytes, ptr, name, core_call, ...)              \
    PC_FORWARD_TIMED_WITH(PC_CALL_REAL, api, bytes, ptr, name, core_call, __VA_ARGS__)
/* The same for driver entry points (CUresult; CUDA_SUCCESS is 0 too). */
#define PC_DRV_TIMED(api, bytes, ptr, name, core_call, ...)                  \
    PC_FORWARD_TIMED_WITH(PC_CALL_DRV, api, bytes, ptr, name, core_call, __VA_ARGS__)

#endif
