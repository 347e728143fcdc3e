/* registry.h - every real pinned block the cache owns, live or idle.
 * Exact lookups go through a uthash table; interior lookups (a pointer into
 * a block) through an address-sorted array.  Both change only when a real
 * block is allocated or released, never on the cache's hit path.
 * Not thread-safe: the pool's lock protects it. */
#ifndef PC_REGISTRY_H
#define PC_REGISTRY_H
#include <stddef.h>
#include <stdint.h>
#include <uthash.h>

/* A block's state word: a version above the state (PC_ST_*).  Every change
 * of state moves the version, so a word seen once is never seen again: a
 * thread that parked a block (core/park.c) takes it back with one
 * compare-and-swap against the word it left, which fails if anything
 * happened to the block meanwhile.  Read and written atomically only. */
#define PC_ST_NONE 0u              /* not a block of the pool (a spare struct) */
#define PC_ST_LIVE 1u              /* the program's */
#define PC_ST_IDLE 2u              /* on the pool's idle lists */
#define PC_ST_PARKED 3u            /* idle, held by one thread for its next allocation */
#define PC_ST_OF(w) ((unsigned)((w) & 3u))
#define PC_ST_NEXT(w, st) (((((w) >> 2) + 1) << 2) | (uint64_t)(st))

/* Structs are never freed while the pool lives (a released block's goes to
 * its spare list), so a stale pointer to one is always safe to look at. */
struct pc_block {
    uint64_t st;               /* state word (above); first, kept when a struct is reused */
    void *ptr;
    size_t size;               /* bytes really allocated: the size class */
    size_t req;                /* bytes the program asked for (while live) */
    unsigned key;              /* flags that change behaviour, and home device (PC_KEY) */
    unsigned cls;              /* size-class index */
    uint64_t fence;            /* fence recorded at free; 0 = nothing to wait for */
    struct pc_block *prev, *next;         /* idle list of its bucket */
    struct pc_block *lru_prev, *lru_next; /* all idle blocks, least recent first */
    UT_hash_handle hh;
};

struct pc_registry {
    struct pc_block *by_ptr;   /* uthash, keyed by ptr */
    struct pc_block **by_addr; /* sorted by ptr */
    size_t n, cap;
};

int pc_registry_add(struct pc_registry *r, struct pc_block *b);  /* 0 or -ENOMEM */
void pc_registry_del(struct pc_registry *r, struct pc_block *b);
struct pc_block *pc_registry_find(const struct pc_registry *r, const void *p);
/* The block whose [ptr, ptr+size) contains p, or NULL. */
struct pc_block *pc_registry_find_interior(const struct pc_registry *r, const void *p);

#endif
