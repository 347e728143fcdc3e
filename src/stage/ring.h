/* ring.h - the pinned rings of staging, one per device, and their slots
 * (ring.c).  Not included outside src/stage/. */
#ifndef PC_STAGE_RING_H
#define PC_STAGE_RING_H
#include <pthread.h>
#include <stdint.h>
#include "stage/plan.h"

struct pc_slot {
    char *buf;               /* chunk bytes of pinned memory */
    cudaEvent_t ev;          /* recorded after the last DMA that used buf */
    int pending;             /* ev recorded and not yet seen complete */
    cudaStream_t on;         /* the stream of that DMA (resolved: never 0) */
    pthread_t by;            /* the thread that queued it (per-thread streams) */
};

struct pc_ring {             /* one per device: events belong to a device */
    int broken;              /* a slot's state is unknown: never used again */
    int dev;                 /* its device */
    unsigned nslot, nalloc;  /* slots wanted, slots allocated (lazily) */
    unsigned head;           /* first slot of the next copy: least recently used */
    size_t chunk;
    uint64_t retry_ns;       /* no allocation attempt before this time */
    struct pc_slot *slot;
    char **bufs;             /* slot[i].buf, for the copy threads */
    unsigned *left;          /* per-slot slice counters of the copy threads */
    struct pc_ring *abandoned_next;
};

/* pc_rings.lock guards the rings, and the copy threads' share (share.c).
 * It is only ever try-locked by a copy: a thread that finds another staging passes its copy to the
 * runtime instead of waiting, so staging never makes one thread wait for
 * another thread's stream (which could deadlock a program whose GPU work
 * waits for host progress). */
extern struct pc_rings {
    pthread_mutex_t lock;
    struct pc_ring *ring[PC_STAGE_MAX_DEV];
    struct pc_ring *abandoned;   /* dropped rings: never used or freed again */
} pc_rings;

/* The rest, pc_rings.lock held. */
/* dev's ring, made (without slots) on first use; NULL: out of memory. */
struct pc_ring *pc_ring_get(int dev);
/* Allocate slots up to want; returns the slots available. */
unsigned pc_ring_grow(struct pc_ring *r, unsigned want);
/* r, or a new ring where r's memory died with a device reset not made through us. */
struct pc_ring *pc_ring_check(struct pc_ring *r, int dev);
/* A slot's state is unknown: the ring is never used again. */
void pc_ring_break(struct pc_ring *r, const char *what, cudaError_t err);

/* Is slot s free for p's copy (see ring.c)? */
#define PC_SLOT_ELSEWHERE (-2)
int pc_slot_free(const struct pc_plan *p, struct pc_slot *s, size_t read, int block,
                 cudaError_t *err);

/* Drop device dev's ring (a device reset), taking pc_rings.lock. */
void pc_ring_forget(int dev);
/* In a forked child: forget every ring. */
void pc_ring_after_fork_child(void);

#endif
