/* real.h - the real CUDA runtime entry points, resolved in one place.
 * Use PC_CALL_REAL(name, args...): it resolves on first use and returns
 * cudaErrorInitializationError when no runtime defines the symbol. */
#ifndef PC_REAL_H
#define PC_REAL_H
#include "cudart_ext.h"

enum {
#define REAL(name) PC_RIDX_##name,
#include "real.def"
#undef REAL
    PC_RIDX_COUNT
};

/* Resolved pointers; NULL until resolved.  Written with release stores by
 * pc_real_resolve(), read with acquire loads: a resolution is idempotent, so
 * racing resolvers store the same value. */
extern void *pc_real_tab[PC_RIDX_COUNT];

void *pc_real_resolve(int idx);

static inline void *pc_real_fn(int idx)
{
    void *f = __atomic_load_n(&pc_real_tab[idx], __ATOMIC_ACQUIRE);
    return f ? f : pc_real_resolve(idx);
}

#define PC_REAL(name) ((__typeof__(&name))pc_real_fn(PC_RIDX_##name))
#define PC_CALL_REAL(name, ...)                                              \
    ({ __typeof__(&name) pc_f_ = PC_REAL(name);                              \
       pc_f_ ? pc_f_(__VA_ARGS__) : cudaErrorInitializationError; })
/* The same for driver entry points, which return CUresult. */
#define PC_CALL_DRV(name, ...)                                               \
    ({ __typeof__(&name) pc_f_ = PC_REAL(name);                              \
       pc_f_ ? pc_f_(__VA_ARGS__) : CUDA_ERROR_NOT_INITIALIZED; })

/* Is addr inside libpincache itself?  (The "resolved to myself" trap.) */
int pc_is_self(void *addr);
/* Path of a loaded object whose base name starts with prefix, even one loaded
 * RTLD_LOCAL; 1 when found (path may be NULL). */
int pc_loaded_path(const char *prefix, char *path, size_t n);

/* Name of the object the runtime was resolved from (for the report), or NULL. */
const char *pc_real_source(void);

#endif
