/* sorted.h - the one search of pincache's tables of address ranges kept
 * sorted by base (stage/fastalloc.c's fast blocks, stage/ownmem.c's own
 * memory): each entry begins with its base address. */
#ifndef PC_UTIL_SORTED_H
#define PC_UTIL_SORTED_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Index of the first of the n entries of tab (stride bytes each) whose
 * base is above p; the entry before it, if any, is the only one that can
 * contain p. */
static inline size_t pc_sorted_upper(const void *tab, size_t n, size_t stride, uintptr_t p)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uintptr_t base;

        memcpy(&base, (const char *)tab + mid * stride, sizeof base);
        if (base <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

#endif
