/* registry.c - pointer -> block, exact and interior. */
#include "config.h"
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
/* The table's keys are block addresses (page-aligned): a multiplicative
 * hash of the one word instead of uthash's byte-wise default, which every
 * free pays twice.  Only this file hashes the table. */
static inline unsigned pc_ptr_hash(const void *key)
{
    uintptr_t p;

    memcpy(&p, key, sizeof p);
    return (unsigned)(((uint64_t)p * 0x9E3779B97F4A7C15ull) >> 32);
}
#define HASH_FUNCTION(keyptr, keylen, hashv) ((hashv) = pc_ptr_hash(keyptr))
#include "core/registry.h"

/* Index of the first block whose ptr is > p. */
static size_t pc_upper_bound(const struct pc_registry *r, const void *p)
{
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)r->by_addr[mid]->ptr <= (uintptr_t)p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int pc_registry_add(struct pc_registry *r, struct pc_block *b)
{
    size_t i;
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 64;
        struct pc_block **v = realloc(r->by_addr, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        r->by_addr = v;
        r->cap = cap;
    }
    i = pc_upper_bound(r, b->ptr);
    memmove(&r->by_addr[i + 1], &r->by_addr[i], (r->n - i) * sizeof *r->by_addr);
    r->by_addr[i] = b;
    r->n++;
    HASH_ADD_PTR(r->by_ptr, ptr, b);
    return 0;
}

void pc_registry_del(struct pc_registry *r, struct pc_block *b)
{
    size_t i = pc_upper_bound(r, b->ptr);
    if (i > 0 && r->by_addr[i - 1] == b) {
        memmove(&r->by_addr[i - 1], &r->by_addr[i], (r->n - i) * sizeof *r->by_addr);
        r->n--;
    }
    HASH_DEL(r->by_ptr, b);
}

struct pc_block *pc_registry_find(const struct pc_registry *r, const void *p)
{
    struct pc_block *b = NULL;
    HASH_FIND_PTR(r->by_ptr, &p, b);
    return b;
}

struct pc_block *pc_registry_find_interior(const struct pc_registry *r, const void *p)
{
    size_t i = pc_upper_bound(r, p);
    struct pc_block *b;
    if (i == 0)
        return NULL;
    b = r->by_addr[i - 1];
    return (uintptr_t)p - (uintptr_t)b->ptr < b->size ? b : NULL;
}
