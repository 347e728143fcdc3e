/* The dlsym interposer: a lookup on a libcuda or libcudart handle
 * (ctypes, Numba, the cudart that nvcc links statically asking for
 * cuGetProcAddress_v2) gets pincache's wrapper instead of the real entry
 * point, for exact names pincache serves; every other lookup is the C
 * library's answer, untouched.
 *
 * It runs inside whatever called dlsym, possibly before pincache is
 * initialized (even inside a sanitizer runtime's start-up: PC_NO_SAN): no
 * locks, no allocation, no initialization of the cache.
 * RTLD_NEXT depends on who called, so that case jumps straight to the real
 * dlsym with the caller's return address intact (assembly below).
 *
 * dlvsym gets the same substitution: a program that asks for
 * dlvsym(handle, "cudaStreamCreateWithFlags", "libcudart.so.13") would
 * otherwise create streams the fences never see.  (The static cudart uses
 * it for versioned glibc symbols, which the hook leaves alone; real.c finds
 * the C library's dlvsym in its symbol table.) */
#include "config.h"
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include "intercept/guard.h"
#include "real/real.h"
#include "intercept/intercept.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"   /* cudaGetDriverEntryPoint */

struct pc_hook {
    const char *name;
    void *fn;          /* the wrapper (for runtime names: libcudart.so.13's) */
    void *fn12;        /* runtime names: the libcudart.so.12 twin; NULL for driver names */
};

/* Sorted by name once (pc_hooks_sort, a constructor); until then a linear
 * scan gives the same answers. */
static struct pc_hook pc_hooks[] = {
#define PC_RT(name, params, args) { #name, (void *)name, (void *)pc12_##name },
/* CUDA 13 only: no libcudart.so.12 defines it, so fn12 is never handed out */
#define PC_RT13(name, params, args) { #name, (void *)name, (void *)name },
#include "intercept/cudart.def"
#undef PC_RT13
#undef PC_RT
#define PC_DRV(name, fn) { #name, (void *)fn, NULL },
#include "intercept/driver.def"
#undef PC_DRV
};
#define PC_NHOOK (sizeof pc_hooks / sizeof pc_hooks[0])
static int pc_hooks_sorted;

PC_NO_SAN static int pc_hook_cmp(const void *a, const void *b)
{
    return strcmp(((const struct pc_hook *)a)->name, ((const struct pc_hook *)b)->name);
}

PC_NO_SAN static const struct pc_hook *pc_hook_find(const char *name)
{
    if (__atomic_load_n(&pc_hooks_sorted, __ATOMIC_ACQUIRE)) {
        struct pc_hook key = { name, NULL, NULL };
        return bsearch(&key, pc_hooks, PC_NHOOK, sizeof pc_hooks[0], pc_hook_cmp);
    }
    for (size_t i = 0; i < PC_NHOOK; i++)
        if (strcmp(pc_hooks[i].name, name) == 0)
            return &pc_hooks[i];
    return NULL;
}

PC_NO_SAN void *pc_hook_symbol(const char *name, void *real)
{
    const struct pc_hook *h;
    const char *base;
    Dl_info info;

    /* Everything pincache serves starts with "cu"; cudnn*, cublas*,
     * curl_* then miss the exact match. */
    if (!real || !name || name[0] != 'c' || name[1] != 'u' || (h = pc_hook_find(name)) == NULL)
        return real;
    if (pc_is_self(real) || !dladdr(real, &info) || !info.dli_fname)
        return real;
    base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    if (!h->fn12)
        return strncmp(base, "libcuda.so", 10) == 0 ? h->fn : real;
    if (strncmp(base, "libcudart.so", 12) != 0)
        return real;
    return pc_real_major_of(info.dli_fname) == PC_MAJOR_12 ? h->fn12 : h->fn;
}

/* Called for every handle but RTLD_NEXT. */
__attribute__((visibility("hidden"), used)) PC_NO_SAN void *pc_dlsym_hook(void *handle, const char *name)
{
    return pc_hook_symbol(name, pc_real_dlsym(handle, name));
}

__attribute__((visibility("hidden"), used)) PC_NO_SAN void *pc_dlvsym_hook(void *handle, const char *name,
                                                                          const char *version)
{
    void *(*f)(void *, const char *, const char *) = (void *(*)(void *, const char *, const char *))pc_real_dlvsym_fn();
    return f ? pc_hook_symbol(name, f(handle, name, version)) : NULL;
}

/* The real dlsym and dlvsym, for the RTLD_NEXT jump; NULL until first needed. */
__attribute__((visibility("hidden"), used)) void *pc_dlsym_next;
__attribute__((visibility("hidden"), used)) void *pc_dlvsym_next;

__attribute__((visibility("hidden"), used)) PC_NO_SAN void *pc_dlsym_init(void)
{
    void *f = pc_real_dlsym_fn();
    __atomic_store_n(&pc_dlsym_next, f, __ATOMIC_RELEASE);
    return f;
}

__attribute__((visibility("hidden"), used)) PC_NO_SAN void *pc_dlvsym_init(void)
{
    void *f = pc_real_dlvsym_fn();
    __atomic_store_n(&pc_dlvsym_next, f, __ATOMIC_RELEASE);
    return f;
}

__attribute__((constructor(101))) static void pc_hooks_sort(void)
{
    qsort(pc_hooks, PC_NHOOK, sizeof pc_hooks[0], pc_hook_cmp);
    __atomic_store_n(&pc_hooks_sorted, 1, __ATOMIC_RELEASE);
    pc_dlsym_init();
    pc_dlvsym_init();
}

/* name(handle, ...): RTLD_NEXT ((void *)-1) tail-jumps to the real one,
 * which then sees the original caller; everything else goes to
 * pc_<name>_hook.  Up to three arguments are kept across the first
 * lookup of the real function. */
#if defined(__x86_64__)
#define PC_DL_TRAMPOLINE(name)                                               \
    __asm__(".text\n"                                                        \
            ".globl " #name "\n"                                             \
            ".type " #name ", @function\n"                                   \
            #name ":\n"                                                      \
            "  .cfi_startproc\n"                                             \
            "  endbr64\n"                                                    \
            "  cmpq $-1, %rdi\n"                                             \
            "  jne pc_" #name "_hook\n"                                      \
            "  movq pc_" #name "_next(%rip), %rax\n"                         \
            "  testq %rax, %rax\n"                                           \
            "  jne 1f\n"                                                     \
            "  pushq %rdi\n"                                                 \
            "  .cfi_adjust_cfa_offset 8\n"                                   \
            "  pushq %rsi\n"                                                 \
            "  .cfi_adjust_cfa_offset 8\n"                                   \
            "  pushq %rdx\n"                                                 \
            "  .cfi_adjust_cfa_offset 8\n"                                   \
            "  call pc_" #name "_init\n"                                     \
            "  popq %rdx\n"                                                  \
            "  .cfi_adjust_cfa_offset -8\n"                                  \
            "  popq %rsi\n"                                                  \
            "  .cfi_adjust_cfa_offset -8\n"                                  \
            "  popq %rdi\n"                                                  \
            "  .cfi_adjust_cfa_offset -8\n"                                  \
            "  testq %rax, %rax\n"                                           \
            "  je pc_" #name "_hook\n"                                       \
            "1:\n"                                                           \
            "  jmp *%rax\n"                                                  \
            "  .cfi_endproc\n"                                               \
            ".size " #name ", .-" #name "\n");
PC_DL_TRAMPOLINE(dlsym)
PC_DL_TRAMPOLINE(dlvsym)
#elif defined(__aarch64__)
#define PC_DL_TRAMPOLINE(name)                                               \
    __asm__(".text\n"                                                        \
            ".globl " #name "\n"                                             \
            ".type " #name ", %function\n"                                   \
            ".p2align 2\n"                                                   \
            #name ":\n"                                                      \
            "  hint #34\n"                                                   \
            "  cmn x0, #1\n"                                                 \
            "  b.ne pc_" #name "_hook\n"                                     \
            "  adrp x16, pc_" #name "_next\n"                                \
            "  ldr x16, [x16, #:lo12:pc_" #name "_next]\n"                   \
            "  cbnz x16, 1f\n"                                               \
            "  stp x29, x30, [sp, #-48]!\n"                                  \
            "  mov x29, sp\n"                                                \
            "  stp x0, x1, [sp, #16]\n"                                      \
            "  str x2, [sp, #32]\n"                                          \
            "  bl pc_" #name "_init\n"                                       \
            "  mov x16, x0\n"                                                \
            "  ldp x0, x1, [sp, #16]\n"                                      \
            "  ldr x2, [sp, #32]\n"                                          \
            "  ldp x29, x30, [sp], #48\n"                                    \
            "  cbnz x16, 1f\n"                                               \
            "  b pc_" #name "_hook\n"                                        \
            "1:\n"                                                           \
            "  br x16\n"                                                     \
            ".size " #name ", .-" #name "\n");
PC_DL_TRAMPOLINE(dlsym)
PC_DL_TRAMPOLINE(dlvsym)
#else
/* Elsewhere RTLD_NEXT lookups are answered as if made from libpincache. */
PC_EXPORT void *dlsym(void *handle, const char *name)
{
    return pc_dlsym_hook(handle, name);
}

PC_EXPORT void *dlvsym(void *handle, const char *name, const char *version)
{
    return pc_dlvsym_hook(handle, name, version);
}
#endif
