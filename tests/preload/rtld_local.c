/* rtld_local - loads ext (which needs the CUDA runtime) with RTLD_LOCAL, as
 * Python loads extension modules, and churns pinned blocks through it.
 * Usage: rtld_local LIBEXT plain|shim.  Under the shim the cache must serve
 * the churn: pincache has to find the runtime without RTLD_NEXT. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "tap.h"

int main(int argc, char **argv)
{
    int (*churn)(int, unsigned long long *);
    unsigned long long real = 0;
    void *h;
    int shim, errors;

    if (argc != 3)
        return 2;
    shim = strcmp(argv[2], "shim") == 0;
    h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    ok(h != NULL, "dlopen %s RTLD_LOCAL", argv[1]);
    if (!h) {
        diag("%s", dlerror());
        return done_testing();
    }
    ok(dlsym(RTLD_DEFAULT, "simCounters") == NULL, "the runtime is not in the global scope");
    churn = (int (*)(int, unsigned long long *))dlsym(h, "ext_churn");
    errors = churn ? churn(50, &real) : -1;
    is_int(errors, 0, "50 alloc/free pairs through the RTLD_LOCAL runtime succeed");
    if (shim)
        ok(real < 25, "served from the cache: %llu real allocations for 50 requests", real);
    else
        is_int(real, 50, "without the shim every request reaches the runtime");
    return done_testing();
}
