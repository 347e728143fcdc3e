/* real.c - resolution of the real CUDA runtime functions.
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

/* Written once under the resolution path; a stale read only costs a retry. */
static void *pc_cudart_handle;
static char pc_cudart_path[256];

static int pc_is_self(void *addr)
{
    Dl_info self, other;
    if (!dladdr((void *)pc_is_self, &self) || !dladdr(addr, &other))
        return 0;
    return self.dli_fbase == other.dli_fbase;
}

static int pc_find_cudart_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    const char *name = info->dlpi_name, *base;
    if (!name || !*name)
        return 0;
    base = strrchr(name, '/');
    base = base ? base + 1 : name;
    if (strncmp(base, "libcudart.so", 12) != 0)
        return 0;
    strncpy((char *)data, name, sizeof pc_cudart_path - 1);
    return 1;
}

static void *pc_cudart(void)
{
    char path[sizeof pc_cudart_path] = "";
    void *h = __atomic_load_n(&pc_cudart_handle, __ATOMIC_ACQUIRE);
    if (h)
        return h;
    if (!dl_iterate_phdr(pc_find_cudart_cb, path))
        return NULL;
    /* NOLOAD: never load a runtime the program did not load itself. */
    h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (h) {
        memcpy(pc_cudart_path, path, sizeof path);
        __atomic_store_n(&pc_cudart_handle, h, __ATOMIC_RELEASE);
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
    if (!f && (h = pc_cudart()) != NULL) {
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
    return pc_cudart_path[0] ? pc_cudart_path : NULL;
}
