/* real.c - resolution of the real CUDA runtime (and driver) functions.
 *
 * dlsym(RTLD_NEXT) finds libcudart only when it is in the global scope.  A
 * Python extension loaded with RTLD_LOCAL (torch's libtorch_cuda.so pulls in
 * libcudart.so.13 that way) still binds its references to our preloaded
 * definitions, but RTLD_NEXT cannot see its libcudart.  So we fall back to
 * walking the loaded objects for a libcudart.so.* and asking it directly.
 * Any answer that points back into this library is rejected: that is the
 * "resolved to myself" trap that would recurse forever. */
#include "config.h"
#include <dlfcn.h>
#include <link.h>
#include <string.h>
#include "real.h"
#include "log.h"

void *pc_real_tab[PC_RIDX_COUNT];

static const char *const pc_real_names[PC_RIDX_COUNT] = {
#define REAL(name) #name,
#include "real.def"
#undef REAL
};

/* Which library defines each: 0 the runtime, 1 the driver. */
static const unsigned char pc_real_lib[PC_RIDX_COUNT] = {
#define REAL(name) 0,
#define REAL_DRV(name) 1,
#include "real.def"
#undef REAL_DRV
#undef REAL
};

struct pc_lib {
    const char *prefix;      /* basename prefix of the shared object */
    void *handle;            /* written once; a stale read only costs a retry */
    char path[256];
};
static struct pc_lib pc_libs[2] = { { "libcudart.so", NULL, "" }, { "libcuda.so", NULL, "" } };

int pc_is_self(void *addr)
{
    Dl_info self, other;
    if (!dladdr((void *)pc_is_self, &self) || !dladdr(addr, &other))
        return 0;
    return self.dli_fbase == other.dli_fbase;
}

struct pc_find { const char *prefix; char *path; size_t n; };

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
    if (f->path && strlen(name) >= f->n)
        return 0;
    if (f->path)
        memcpy(f->path, name, strlen(name) + 1);
    return 1;
}

int pc_loaded_path(const char *prefix, char *path, size_t n)
{
    struct pc_find f = { prefix, path, n };
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

void *pc_real_resolve(int idx)
{
    const char *name;
    void *f, *h;

    if (idx < 0 || idx >= PC_RIDX_COUNT)
        return NULL;
    name = pc_real_names[idx];
    f = dlsym(RTLD_NEXT, name);
    if (f && pc_is_self(f))
        f = NULL;
    if (!f && (h = pc_loaded_lib(&pc_libs[pc_real_lib[idx]])) != NULL) {
        f = dlsym(h, name);
        if (f && pc_is_self(f))
            f = NULL;
    }
    if (f)
        __atomic_store_n(&pc_real_tab[idx], f, __ATOMIC_RELEASE);
    else
        pc_debug("no real %s found in the loaded CUDA runtime", name);
    return f;
}

const char *pc_real_source(void)
{
    return pc_libs[0].path[0] ? pc_libs[0].path : NULL;
}
