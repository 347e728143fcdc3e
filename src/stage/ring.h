/* ring.h - the pinned rings of staging, one per device, and their slots
 * (ring.c).  Not included outside src/stage/. */
#ifndef PC_STAGE_RING_H
#define PC_STAGE_RING_H
#include <pthread.h>
#include <stdint.h>
#include "stage/plan.h"

/* A slot's DMA is followed by a checkpoint: an event recorded on the DMA's
 * stream after it, in the event of the slot whose DMA came last.  One
 * checkpoint covers every slot a copy filled since its previous one (H2D:
 * usually the whole copy; D2H: each piece, whose landing it tells), so a
 * copy records one event and asks about each earlier copy once, not one of
 * each per piece.  A checkpoint's event is recorded again only once its
 * slot is free, which it is once the checkpoint was seen complete, and
 * that frees every slot it covers (pc_slot_free). */
struct pc_slot {
    char *buf;               /* chunk bytes of pinned memory */
    cudaEvent_t ev;          /* this slot's checkpoint, when it holds one */
    uint64_t ev_seq;         /* the checkpoint ev holds (0: none yet) ... */
    unsigned first, count, mod;  /* ... and the slots it covers: (first + k) % mod, k < count */
    int pending;             /* buf's last DMA is not yet seen done ... */
    unsigned cover;          /* ... and the slot whose checkpoint comes after it, */
    uint64_t seq;            /* ... that checkpoint */
    cudaStream_t on;         /* the stream of that DMA (resolved: never 0) */
    pthread_t by;            /* the thread that queued it (per-thread streams) */
    int held;                /* the copy that queued it held its caller for the stream's
                                work ahead, as the runtime's would (pc_rt_held_for_stream) */
};

struct pc_ring {             /* one per device: events belong to a device */
    int broken;              /* a slot's state is unknown: never used again */
    int dev;                 /* its device */
    unsigned nslot, nalloc;  /* slots wanted, slots allocated (lazily) */
    unsigned head;           /* first slot of the next copy: least recently used */
    uint64_t seq;            /* checkpoints recorded */
    uint64_t copy_seq;       /* seq when the copy under way began: its own checkpoints come after */
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

/* Is slot i free for p's copy (see ring.c)? */
#define PC_SLOT_ELSEWHERE (-2)
int pc_slot_free(const struct pc_plan *p, struct pc_ring *r, unsigned i, size_t read, int block,
                 cudaError_t *err);
/* The DMAs of count slots from first on (modulo nslot) are queued on p's
 * stream, the last just now: record the checkpoint after them.  0: done;
 * -1: the record failed (*err), the slots' state is unknown. */
int pc_ring_checkpoint(struct pc_ring *r, const struct pc_plan *p, unsigned first, unsigned count,
                       unsigned nslot, cudaError_t *err);
/* Wait for the checkpoint after slot i's DMA (a sync copy's last).  0: done;
 * -1: *err, the runtime's answer. */
int pc_slot_wait(struct pc_ring *r, unsigned i, cudaError_t *err);

/* Out of pinned memory for the program: give back the chunks of every ring,
 * once a copy staging now has ended and their DMAs are done (waited for),
 * keeping their events; a ring grows again no sooner than a failed growth
 * would retry.  Takes pc_rings.lock.  Returns the bytes given back. */
size_t pc_ring_shed(void);
/* Drop device dev's ring (a device reset), taking pc_rings.lock. */
void pc_ring_forget(int dev);
/* In a forked child: forget every ring. */
void pc_ring_after_fork_child(void);

#endif
