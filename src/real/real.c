/* real.c - resolution of the real CUDA runtime (and driver) functions.
 *
 * dlsym(RTLD_NEXT) finds libcudart only when it is in the global scope.  A
 * Python extension loaded with RTLD_LOCAL (torch's libtorch_cuda.so pulls in
 * libcudart.so.13 that way) still binds its references to our preloaded
 * definitions, but RTLD_NEXT cannot see its libcudart.  So we fall back to
 * walking the loaded objects for a libcudart.so.* and asking it directly.
 * Any answer that points back into this library is rejected: that is the
 * "resolved to myself" trap that would recurse forever.
 *
 * Lookups go through the C library's dlsym, never through the interposer
 * (intercept/dlsym.c).  Each cudart major a program may hold (12, 13) has
 * its own table; the default one prefers libcudart.so.13 over another
 * major that RTLD_NEXT happens to find first.  With no libcudart loaded at
 * all (static cudart, driver-API programs), the runtime calls pincache
 * makes itself get driver-built stand-ins (rtdrv.c). */
#include "config.h"
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "real/real.h"
#include "util/log.h"

void *pc_real_tab[PC_NMAJOR][PC_RIDX_COUNT];
__thread unsigned char pc_tls_major __attribute__((tls_model("initial-exec")));

static const char *const pc_real_names[PC_RIDX_COUNT] = {
#define REAL(name) #name,
#include "real/real.def"
#undef REAL
};

/* Which library defines each: 0 the runtime, 1 the driver. */
static const unsigned char pc_real_lib[PC_RIDX_COUNT] = {
#define REAL(name) 0,
#define REAL_DRV(name) 1,
#include "real/real.def"
#undef REAL_DRV
#undef REAL
};

struct pc_lib {
    const char *prefix;      /* basename prefix of the shared object */
    void *handle;            /* written once; a stale read only costs a retry */
    char path[256];
};
enum { PC_LIB_CUDART, PC_LIB_CUDA, PC_LIB_CUDART12, PC_LIB_CUDART13, PC_NLIB };
static struct pc_lib pc_libs[PC_NLIB] = {
    { "libcudart.so", NULL, "" }, { "libcuda.so", NULL, "" },
    { "libcudart.so.12", NULL, "" }, { "libcudart.so.13", NULL, "" },
};

typedef void *(*pc_dlsym_fn)(void *, const char *);
static pc_dlsym_fn pc_libc_dlsym;   /* written once (idempotent), atomics */

/* The C library's dlvsym.  libpincache exports dlvsym itself
 * (intercept/dlsym.c), and every lookup function the C library offers is
 * dlsym or dlvsym, so the real one is found in the C library's own
 * dynamic symbol table (GNU hash), read in place: no call, no allocation.
 * Before glibc 2.34 it is in libdl. */
PC_NO_SAN static size_t pc_gnu_len(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

PC_NO_SAN static uint32_t pc_gnu_hash(const char *s)
{
    uint32_t h = 5381;
    for (; *s; s++)
        h = h * 33 + (unsigned char)*s;
    return h;
}

/* String helpers of its own: this runs inside a sanitizer runtime's
 * start-up, whose string interceptors are not set up yet. */
PC_NO_SAN static int pc_starts(const char *s, const char *prefix)
{
    while (*prefix && *s == *prefix)
        s++, prefix++;
    return *prefix == 0;
}

/* name's address in the loaded object at base whose dynamic section is
 * dyn, or NULL. */
PC_NO_SAN static void *pc_elf_lookup(ElfW(Addr) base, const ElfW(Dyn) *d, const char *name)
{
    const ElfW(Sym) *sym = NULL;
    const char *str = NULL;
    const uint32_t *gh = NULL;

    for (; d && d->d_tag != DT_NULL; d++) {
        /* The loader relocates these in place on most targets, not all. */
        ElfW(Addr) a = d->d_un.d_ptr < base ? d->d_un.d_ptr + base : d->d_un.d_ptr;
        if (d->d_tag == DT_SYMTAB)
            sym = (const ElfW(Sym) *)a;
        else if (d->d_tag == DT_STRTAB)
            str = (const char *)a;
        else if (d->d_tag == DT_GNU_HASH)
            gh = (const uint32_t *)a;
    }
    if (!sym || !str || !gh)
        return NULL;
    uint32_t nbuckets = gh[0], symoffset = gh[1], bloom_size = gh[2], h = pc_gnu_hash(name);
    const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)&gh[4] + bloom_size);
    const uint32_t *chain = buckets + nbuckets;
    for (uint32_t i = nbuckets ? buckets[h % nbuckets] : 0; i >= symoffset && i != 0; i++) {
        uint32_t h2 = chain[i - symoffset];
        const char *nm = str + sym[i].st_name;
        if ((h | 1) == (h2 | 1) && sym[i].st_shndx != SHN_UNDEF && pc_starts(nm, name) &&
            nm[pc_gnu_len(name)] == 0 && ELF64_ST_TYPE(sym[i].st_info) == STT_FUNC)
            return (void *)(base + sym[i].st_value);
        if (h2 & 1)
            break;
    }
    return NULL;
}

/* The C library's (or libdl's) definition of name.  The loader's list of
 * objects is read directly: dl_iterate_phdr and dlopen are intercepted by
 * sanitizer runtimes, which are not set up yet when they first call dlsym. */
PC_NO_SAN static void *pc_libc_symbol(const char *name)
{
    for (const struct link_map *m = _r_debug.r_map; m; m = m->l_next) {
        const char *base = m->l_name;
        void *f;

        for (const char *c = base; c && *c; c++)
            if (*c == '/')
                base = c + 1;
        if (!base || (!pc_starts(base, "libc.so") && !pc_starts(base, "libdl.so")))
            continue;
        if ((f = pc_elf_lookup(m->l_addr, m->l_ld, name)) != NULL)
            return f;
    }
    return NULL;
}

typedef void *(*pc_dlvsym_fn)(void *, const char *, const char *);
static pc_dlvsym_fn pc_libc_dlvsym;   /* written once (idempotent), atomics */

PC_NO_SAN void *pc_real_dlvsym_fn(void)
{
    pc_dlvsym_fn f = __atomic_load_n(&pc_libc_dlvsym, __ATOMIC_ACQUIRE);

    if (!f && (f = (pc_dlvsym_fn)pc_libc_symbol("dlvsym")) != NULL)
        __atomic_store_n(&pc_libc_dlvsym, f, __ATOMIC_RELEASE);
    return (void *)f;
}

/* RTLD_NEXT from here names the first dlsym after libpincache (never
 * libpincache's own). */
PC_NO_SAN void *pc_real_dlsym_fn(void)
{
    static const char *const vers[] = { "GLIBC_2.34", "GLIBC_2.17", "GLIBC_2.2.5" };
    pc_dlsym_fn f = __atomic_load_n(&pc_libc_dlsym, __ATOMIC_ACQUIRE);
    pc_dlvsym_fn v = (pc_dlvsym_fn)pc_real_dlvsym_fn();

    for (size_t i = 0; v && !f && i < sizeof vers / sizeof vers[0]; i++) {
        f = (pc_dlsym_fn)v(RTLD_NEXT, "dlsym", vers[i]);
        if (f)
            __atomic_store_n(&pc_libc_dlsym, f, __ATOMIC_RELEASE);
    }
    return (void *)f;
}

PC_NO_SAN void *pc_real_dlsym(void *handle, const char *name)
{
    pc_dlsym_fn f = (pc_dlsym_fn)pc_real_dlsym_fn();
    return f ? f(handle, name) : NULL;
}

PC_NO_SAN int pc_is_self(void *addr)
{
    Dl_info self, other;
    if (!dladdr((void *)pc_is_self, &self) || !dladdr(addr, &other))
        return 0;
    return self.dli_fbase == other.dli_fbase;
}

struct pc_find { const char *prefix; char *path; size_t n; int *major_seen; };

static int pc_find_lib_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    struct pc_find *f = data;
    const char *name = info->dlpi_name, *base;
    if (!name || !*name)
        return 0;
    base = strrchr(name, '/');
    base = base ? base + 1 : name;
    if (strncmp(base, f->prefix, strlen(f->prefix)) != 0)
        return 0;
    if (f->major_seen) {
        /* libcudart.so.N with N not a major pincache has wrappers for */
        int n = atoi(base + 13);   /* after "libcudart.so." */
        if (strncmp(base, "libcudart.so.", 13) == 0 && n != 12 && n != 13) {
            *f->major_seen = n;
            return 1;
        }
        return 0;
    }
    if (f->path && strlen(name) >= f->n)
        return 0;
    if (f->path)
        memcpy(f->path, name, strlen(name) + 1);
    return 1;
}

int pc_loaded_path(const char *prefix, char *path, size_t n)
{
    struct pc_find f = { prefix, path, n, NULL };
    return dl_iterate_phdr(pc_find_lib_cb, &f) != 0;
}

/* The loaded object of that kind, even if it is only in a local scope. */
static void *pc_loaded_lib(struct pc_lib *lib)
{
    char path[sizeof lib->path];
    void *h = __atomic_load_n(&lib->handle, __ATOMIC_ACQUIRE);
    if (h)
        return h;
    if (!pc_loaded_path(lib->prefix, path, sizeof path))
        return NULL;
    /* NOLOAD: never load a library the program did not load itself. */
    h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (h) {
        memcpy(lib->path, path, sizeof lib->path);
        __atomic_store_n(&lib->handle, h, __ATOMIC_RELEASE);
    }
    return h;
}

static void *pc_lookup_in(struct pc_lib *lib, const char *name)
{
    void *h = pc_loaded_lib(lib), *f = h ? pc_real_dlsym(h, name) : NULL;
    return f && !pc_is_self(f) ? f : NULL;
}

PC_NO_SAN int pc_real_major_of(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strncmp(base, "libcudart.so.12", 15) == 0)
        return PC_MAJOR_12;
    return PC_MAJOR_DEFAULT;
}

/* A loaded cudart of a major without versioned wrappers: its references
 * bind past pincache to the real library.  Said once.  Looked for at the
 * first resolution of a runtime function. */
static int pc_unknown_major;   /* atomic: that major, or 0 */

static void pc_warn_unknown_major(void)
{
    static int checked, once;
    int n = 0;
    struct pc_find f = { "libcudart.so.", NULL, 0, &n };

    if (__atomic_exchange_n(&checked, 1, __ATOMIC_RELAXED))
        return;
    if (dl_iterate_phdr(pc_find_lib_cb, &f) && n) {
        __atomic_store_n(&pc_unknown_major, n, __ATOMIC_RELAXED);
        pc_log_once(&once, PC_LOG_WARN,
                    "libcudart.so.%d is loaded: pincache has wrappers for majors 12 and 13 only, so that "
                    "runtime's calls pass through uncached", n);
    }
}

int pc_real_unknown_major(void)
{
    return __atomic_load_n(&pc_unknown_major, __ATOMIC_RELAXED);
}

static void *pc_resolve_runtime(int major, const char *name)
{
    Dl_info info;
    void *f;

    if (major == PC_MAJOR_12)
        return pc_lookup_in(&pc_libs[PC_LIB_CUDART12], name);
    f = pc_real_dlsym(RTLD_NEXT, name);
    if (f && pc_is_self(f))
        f = NULL;
    /* RTLD_NEXT found another major first: the default is .so.13. */
    if (f && dladdr(f, &info) && info.dli_fname && pc_real_major_of(info.dli_fname) == PC_MAJOR_12) {
        void *f13 = pc_lookup_in(&pc_libs[PC_LIB_CUDART13], name);
        if (f13)
            f = f13;
    }
    if (!f)
        f = pc_lookup_in(&pc_libs[PC_LIB_CUDART], name);
    return f;
}

/* The driver-built stand-ins (rtdrv.c), which sit above this table: init.c
 * hands them over at start-up. */
static void *(*pc_real_standin)(const char *name);

void pc_real_set_standin(void *(*standin)(const char *name))
{
    pc_real_standin = standin;
}

/* Driver entry points handed out by cuGetProcAddress or the runtime's
 * cudaGetDriverEntryPoint* for which pincache substituted its wrapper
 * (procaddr.c), by the name asked: the real function behind a wrapper when
 * no libcuda is loaded to look it up in (the simulated device's runtime
 * hands out its own).  No CUDA call is made to find them. */
#define PC_REAL_NOTED 96
static struct { char name[48]; void *fn; } pc_noted[PC_REAL_NOTED];
static unsigned pc_nnoted;                  /* atomic: entries published */
static pthread_mutex_t pc_noted_lock = PTHREAD_MUTEX_INITIALIZER;

void pc_real_note_drv(const char *name, int per_thread, void *fn)
{
    char key[sizeof pc_noted[0].name];
    unsigned n;

    if (!name || !fn || strlen(name) + 3 >= sizeof key)
        return;
    snprintf(key, sizeof key, "%s%s", name, per_thread ? "_pt" : "");
    name = key;
    pthread_mutex_lock(&pc_noted_lock);
    n = pc_nnoted;
    for (unsigned i = 0; i < n; i++) {
        if (!strcmp(pc_noted[i].name, name)) {
            n = PC_REAL_NOTED;              /* known already */
            break;
        }
    }
    if (n < PC_REAL_NOTED) {
        strcpy(pc_noted[n].name, name);
        pc_noted[n].fn = fn;
        __atomic_store_n(&pc_nnoted, n + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&pc_noted_lock);
}

/* The runtime's answer for the driver's sym (version ver, flags: which
 * default stream), or NULL. */
static void *pc_real_entry(const char *sym, unsigned int ver, unsigned long long flags)
{
    enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
    void *f = NULL;

    if (PC_CALL_REAL(cudaGetDriverEntryPointByVersion, sym, &f, ver, flags, &st) != cudaSuccess ||
        st != cudaDriverEntryPointSuccess)
        return NULL;
    return f;
}

/* The length of a table name's base, the name a resolver is asked
 * (cuMemcpyHtoD of cuMemcpyHtoD_v2_ptds): without a _ptds or _ptsz suffix
 * (*pt set) and a _vN one. */
static size_t pc_drv_base_len(const char *name, int *pt)
{
    size_t len = strlen(name);

    *pt = len > 5 && (!strcmp(name + len - 5, "_ptds") || !strcmp(name + len - 5, "_ptsz"));
    if (*pt)
        len -= 5;
    if (len > 3 && name[len - 3] == '_' && name[len - 2] == 'v' && name[len - 1] >= '2' && name[len - 1] <= '9')
        len -= 3;
    return len;
}

/* A table name (cuMemHostRegister_v2, cuMemcpyHtoD_v2_ptds) against the
 * names asked (cuMemHostRegister, cuMemcpyHtoD noted per-thread). */
static void *pc_real_noted(const char *name)
{
    unsigned n = __atomic_load_n(&pc_nnoted, __ATOMIC_ACQUIRE);
    int pt;
    size_t len = pc_drv_base_len(name, &pt);

    for (unsigned i = 0; i < n; i++) {
        const char *k = pc_noted[i].name;
        size_t kl = strlen(k);

        if (kl == len + (pt ? 3 : 0) && !strncmp(k, name, len) && (!pt || !strcmp(k + len, "_pt")))
            return pc_noted[i].fn;
    }
    return NULL;
}

/* A driver function the program never asked for, in a process that reaches
 * the driver through the runtime's entry points only (it noted some, and no
 * libcuda is loaded: the simulated device): the newest ABI of name's base
 * (cuCtxGetDevice for a driver-API allocation's device), per-thread for a
 * _ptds or _ptsz name. */
static void *pc_real_drv_by_name(const char *name)
{
    char base[sizeof pc_noted[0].name];
    int pt;
    size_t len = pc_drv_base_len(name, &pt);

    if (len >= sizeof base)
        return NULL;
    memcpy(base, name, len);
    base[len] = 0;
    return pc_real_entry(base, CUDART_VERSION, pt ? cudaEnablePerThreadDefaultStream : cudaEnableLegacyStream);
}

void *pc_real_resolve(int major, int idx)
{
    const char *name;
    void *f;

    if (idx < 0 || idx >= PC_RIDX_COUNT || major < 0 || major >= PC_NMAJOR)
        return NULL;
    name = pc_real_names[idx];
    if (pc_real_lib[idx] == 1) {
        f = pc_real_dlsym(RTLD_NEXT, name);
        if (f && pc_is_self(f))
            f = NULL;
        if (!f)
            f = pc_lookup_in(&pc_libs[PC_LIB_CUDA], name);
        if (!f && !pc_loaded_path("libcuda.so", NULL, 0))
            f = pc_real_noted(name);
        if (!f && __atomic_load_n(&pc_nnoted, __ATOMIC_ACQUIRE) > 0 && !pc_loaded_path("libcuda.so", NULL, 0))
            f = pc_real_drv_by_name(name);
    } else {
        pc_warn_unknown_major();
        f = pc_resolve_runtime(major, name);
        if (!f && major != PC_MAJOR_DEFAULT)     /* that major is not loaded */
            return pc_real_resolve(PC_MAJOR_DEFAULT, idx);
        /* No runtime in the process at all: the driver-built stand-in. */
        if (!f && !pc_loaded_path("libcudart.so", NULL, 0) && pc_loaded_path("libcuda.so", NULL, 0))
            f = pc_real_standin ? pc_real_standin(name) : NULL;
    }
    if (f)
        __atomic_store_n(&pc_real_tab[major][idx], f, __ATOMIC_RELEASE);
    else
        pc_debug("no real %s found in the loaded CUDA runtime", name);
    return f;
}

void *pc_real_drv_entry(void *from_libcuda, const char *sym, unsigned int ver)
{
    return from_libcuda ? from_libcuda : pc_real_entry(sym, ver, cudaEnableDefault);
}

const char *pc_real_source(void)
{
    return pc_libs[0].path[0] ? pc_libs[0].path : NULL;
}
