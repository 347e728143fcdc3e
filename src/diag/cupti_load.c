/* cupti_load.c - finding libcupti and what pincache calls in it (see
 * cupti_load.h).  Never linked: dlopen'd, sharing the copy the process
 * loaded, if any; nothing here is ever unloaded. */
#include "config.h"
#include <dlfcn.h>
#include <string.h>
#include <sys/stat.h>
#include "diag/cupti_load.h"
#include "util/log.h"
#include "util/options.h"
#include "real/real.h"

static void *pc_cupti_try_open(const char *path)
{
    void *h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);

    if (h)
        pc_debug("CUPTI: loaded %s", path);
    return h;
}

/* The libcupti the process loaded (any libcupti.so*): share that copy. */
static void *pc_cupti_open_loaded(void)
{
    char path[512];

    if (!pc_loaded_path("libcupti.so", path, sizeof path))
        return NULL;
    return dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
}

/* dir/libcupti.so.13, dir/libcupti.so */
static void *pc_cupti_open_in(const char *dir)
{
    static const char *const names[] = { "libcupti.so.13", "libcupti.so" };
    char path[768];
    void *h;
    size_t i;

    for (i = 0; i < 2; i++) {
        if ((size_t)pc_fmt(path, sizeof path, "%s/%s", dir, names[i]) >= sizeof path)
            return NULL;
        if ((h = pc_cupti_try_open(path)) != NULL)
            return h;
    }
    return NULL;
}

/* Load a libcupti: the one PINCACHE_CUPTI_LIB names, else the CUDA install
 * next to the loaded libcudart (its own folder, as in pip's nvidia/cu13/lib;
 * the toolkit's extras/CUPTI/lib64 seen from lib64/ or from
 * targets/<arch>/lib/; pip's nvidia/cuda_cupti/lib beside
 * nvidia/cuda_runtime/lib), else the default search path. */
static void *pc_cupti_open_new(void)
{
    static const char *const beside[] = { ".", "../extras/CUPTI/lib64", "../../../extras/CUPTI/lib64",
                                          "../../cuda_cupti/lib" };
    const char *opt = pc_opt.cupti_lib;
    char rt[512], dir[768];
    struct stat st;
    char *slash;
    void *h;
    size_t i;

    if (opt && *opt) {
        if (stat(opt, &st) == 0 && S_ISDIR(st.st_mode))
            return pc_cupti_open_in(opt);
        return pc_cupti_try_open(opt);
    }
    if (pc_loaded_path("libcudart.so", rt, sizeof rt) && (slash = strrchr(rt, '/')) != NULL) {
        *slash = '\0';
        for (i = 0; i < sizeof beside / sizeof beside[0]; i++) {
            if ((size_t)pc_fmt(dir, sizeof dir, "%s/%s", rt, beside[i]) >= sizeof dir)
                continue;
            if ((h = pc_cupti_open_in(dir)) != NULL)
                return h;
        }
    }
    if ((h = pc_cupti_try_open("libcupti.so.13")) != NULL)
        return h;
    return pc_cupti_try_open("libcupti.so");
}

void *pc_cupti_open(void)
{
    void *h = pc_cupti_open_loaded();

    return h ? h : pc_cupti_open_new();
}

void *pc_cupti_lookup(void *h, void **callers, const char *name)
{
    void *f = NULL;

    if (h)
        f = dlsym(h, name);
    if (!f || pc_is_self(f)) {
        f = dlsym(RTLD_NEXT, name);
        if (f && pc_is_self(f))
            f = NULL;
    }
    if (!f && !h) {
        /* The caller's own libcupti; its handle is kept (one reference). */
        h = __atomic_load_n(callers, __ATOMIC_ACQUIRE);
        if (!h && (h = pc_cupti_open_loaded()) != NULL)
            __atomic_store_n(callers, h, __ATOMIC_RELEASE);
        if (h && (f = dlsym(h, name)) != NULL && pc_is_self(f))
            f = NULL;
    }
    return f;
}

#define PC_RESOLVE(field, name) (*(void **)&fn->field = dlsym(h, name)) != NULL && \
                                !pc_is_self(*(void **)&fn->field)

int pc_cupti_resolve(void *h, struct pc_cupti_fns *fn)
{
    return PC_RESOLVE(register_callbacks, "cuptiActivityRegisterCallbacks") &&
           PC_RESOLVE(enable, "cuptiActivityEnable") && PC_RESOLVE(disable, "cuptiActivityDisable") &&
           PC_RESOLVE(flush_all, "cuptiActivityFlushAll") &&
           PC_RESOLVE(next_record, "cuptiActivityGetNextRecord") &&
           PC_RESOLVE(dropped, "cuptiActivityGetNumDroppedRecords") &&
           PC_RESOLVE(timestamp, "cuptiGetTimestamp");
}

/* A loaded object that shows a tool using CUPTI: Nsight Systems' and Nsight
 * Compute's injection libraries, compute-sanitizer's; and XLA (JAX) and
 * TensorFlow, whose profilers look CUPTI's functions up in their own handle,
 * past the wrappers that would hand CUPTI over. */
const char *pc_cupti_tool_loaded(void)
{
    static const char *const names[] = { "libToolsInjection", "libInterceptorInjection",
                                         "libsanitizer-collection", "libsanitizer-public",
                                         "libcuda-injection", "xla_extension", "libtensorflow" };
    size_t i;

    for (i = 0; i < sizeof names / sizeof names[0]; i++)
        if (pc_loaded_path(names[i], NULL, 0))
            return names[i];
    return NULL;
}
