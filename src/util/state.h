/* state.h - the process's state that every layer reads: whether start-up
 * finished, the mode, whether this is a fork child, whether the program
 * used CUDA through pincache.  Written by init.c only. */
#ifndef PC_STATE_H
#define PC_STATE_H
#include <stdint.h>

struct pc_state {
    int inited;        /* pc_init() finished */
    int mode;          /* PC_MODE_*; fixed after init */
    int forked_child;  /* we are a child of fork(): pass everything through */
    int cuda_used;     /* this process made CUDA calls through us */
    uint64_t start_ns;
};

/* Written during init and in the fork child handler (single-threaded moments);
 * read without locks elsewhere. */
extern struct pc_state pc_state;

/* Note that the program made a CUDA call through us (read at exit). */
static inline void pc_mark_used(void)
{
    if (!__atomic_load_n(&pc_state.cuda_used, __ATOMIC_RELAXED))
        __atomic_store_n(&pc_state.cuda_used, 1, __ATOMIC_RELAXED);
}

/* The interposition guard (intercept/guard.h): set while a wrapper runs,
 * so that a runtime that calls its own exported entry points (or our own
 * calls) pass straight through.  init.c holds it while writing the report. */
extern __thread int pc_tls_depth __attribute__((tls_model("initial-exec")));

#endif
