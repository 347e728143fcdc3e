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

uint64_t pc_alloc_cost_ns(const struct pc_alloc_cost *c, size_t size)
{
    return c->fixed_ns + c->per_mib_ns * (uint64_t)(size >> 20);
}

void pc_alloc_cost_learn(struct pc_alloc_cost *c, size_t size, uint64_t ns)
{
    uint64_t mib = size >> 20;

    if (mib == 0)
        c->fixed_ns = (c->fixed_ns * 7 + ns) / 8;
    else if (ns > c->fixed_ns)
        c->per_mib_ns = (c->per_mib_ns * 7 + (ns - c->fixed_ns) / mib) / 8;
}

#define PC_HEADROOM_FLOOR ((size_t)32 << 20)

size_t pc_hold_bound(size_t peak, size_t live, size_t size, unsigned pct)
{
    size_t limit = peak > live ? peak : live, h = limit / 100 * pct;

    if (h < PC_HEADROOM_FLOOR)
        h = PC_HEADROOM_FLOOR;
    return limit + (h > size ? h : size);
}
