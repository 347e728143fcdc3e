/* sizeclass.c - the cache's size classes (sizeclass.h). */
#include "config.h"
#include "core/sizeclass.h"

size_t pc_size_class(size_t n, unsigned *idx)
{
    unsigned shift;
    size_t step, size;

    if (n == 0)
        return 0;
    if (n <= PC_CLASS_SMALL) {
        size = (n + PC_CLASS_PAGE - 1) & ~(size_t)(PC_CLASS_PAGE - 1);
        *idx = (unsigned)(size / PC_CLASS_PAGE) - 1;
        return size;
    }
    shift = 63 - (unsigned)__builtin_clzll((unsigned long long)(n - 1)); /* 2^shift < n <= 2^(shift+1) */
    if (shift >= PC_CLASS_MAXSHIFT)
        return 0;
    step = (size_t)1 << (shift - 3);
    size = (n + step - 1) & ~(step - 1);
    *idx = 16 + (shift - 16) * 8 + (unsigned)((size - ((size_t)1 << shift)) / step) - 1;
    return size;
}
