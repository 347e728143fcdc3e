/* real.h - the real CUDA runtime entry points, resolved in one place.
 * Use PC_CALL_REAL(name, args...): it resolves on first use and returns
 * cudaErrorInitializationError when no runtime defines the symbol. */
#ifndef PC_REAL_H
#define PC_REAL_H
#include "real/cudart_ext.h"

enum {
#define REAL(name) PC_RIDX_##name,
#include "real/real.def"
#undef REAL
    PC_RIDX_COUNT
};

/* Which cudart the real functions come from (pc_tls_major).  A program can
 * hold several majors at once (a libcudart.so.12 plugin next to .so.13);
 * each major's versioned wrappers (intercept/major.c) select theirs for
 * the length of the call.  PC_MAJOR_DEFAULT is the cudart found first, for
 * unversioned references and the library's own threads. */
enum { PC_MAJOR_DEFAULT, PC_MAJOR_12, PC_MAJOR_13, PC_NMAJOR };
extern __thread unsigned char pc_tls_major __attribute__((tls_model("initial-exec")));

/* Resolved pointers; NULL until resolved.  Written with release stores by
 * pc_real_resolve(), read with acquire loads: a resolution is idempotent, so
 * racing resolvers store the same value. */
extern void *pc_real_tab[PC_NMAJOR][PC_RIDX_COUNT];

void *pc_real_resolve(int major, int idx);

static inline void *pc_real_fn(int idx)
{
    unsigned m = pc_tls_major;
    void *f = __atomic_load_n(&pc_real_tab[m][idx], __ATOMIC_ACQUIRE);
    return f ? f : pc_real_resolve((int)m, idx);
}

#define PC_REAL(name) ((__typeof__(&name))pc_real_fn(PC_RIDX_##name))
#define PC_CALL_REAL(name, ...)                                              \
    ({ __typeof__(&name) pc_f_ = PC_REAL(name);                              \
       pc_f_ ? pc_f_(__VA_ARGS__) : cudaErrorInitializationError; })
/* The same for driver entry points, which return CUresult. */
#define PC_CALL_DRV(name, ...)                                               \
    ({ __typeof__(&name) pc_f_ = PC_REAL(name);                              \
       pc_f_ ? pc_f_(__VA_ARGS__) : CUDA_ERROR_NOT_INITIALIZED; })

/* Not instrumented by sanitizers: the dlsym path (intercept/dlsym.c and
 * what it calls here) runs inside a preloaded sanitizer runtime's own
 * start-up, before its shadow memory exists. */
#define PC_NO_SAN __attribute__((no_sanitize("address", "thread", "undefined")))

/* The C library's dlsym, never the interposer (intercept/dlsym.c).
 * RTLD_NEXT through it means "after libpincache". */
PC_NO_SAN void *pc_real_dlsym(void *handle, const char *name);
/* That dlsym itself (NULL if it cannot be found). */
PC_NO_SAN void *pc_real_dlsym_fn(void);
/* The C library's dlvsym (NULL if it cannot be found). */
PC_NO_SAN void *pc_real_dlvsym_fn(void);

/* Is addr inside libpincache itself?  (The "resolved to myself" trap.) */
PC_NO_SAN int pc_is_self(void *addr);
/* Path of a loaded object whose base name starts with prefix, even one loaded
 * RTLD_LOCAL; 1 when found (path may be NULL). */
int pc_loaded_path(const char *prefix, char *path, size_t n);

/* A driver entry point from the loaded libcuda (name, e.g. a REAL_DRV
 * entry), or else through the runtime's cudaGetDriverEntryPointByVersion
 * (sym, since CUDA version ver; the simulated device has no libcuda).  NULL
 * when neither has it. */
void *pc_real_drv_entry(void *from_libcuda, const char *sym, unsigned int ver);

/* The real driver function handed out under name (per_thread: its _ptds or
 * _ptsz ABI) where pincache's wrapper took its place
 * (intercept/procaddr.c): PC_REAL's answer for it when no libcuda is
 * loaded. */
void pc_real_note_drv(const char *name, int per_thread, void *fn);

/* The major of a loaded libcudart pincache has no wrappers for (seen at
 * the first resolution of a runtime function), or 0: its streams may be
 * ones pincache never sees created. */
int pc_real_unknown_major(void);

/* Name of the object the runtime was resolved from (for the report), or NULL. */
const char *pc_real_source(void);

/* The cudart major (PC_MAJOR_*) of a loaded object's path: PC_MAJOR_12 for
 * libcudart.so.12*, PC_MAJOR_DEFAULT for anything else. */
PC_NO_SAN int pc_real_major_of(const char *path);

/* The stand-ins for the runtime calls pincache itself makes, used when the
 * process has no libcudart at all (rtdrv.c; init.c hands them over). */
void pc_real_set_standin(void *(*standin)(const char *name));

#endif
