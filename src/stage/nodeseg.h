/* nodeseg.h - the node's shared file (nodeseg.c): its layout, finding or
 * making it, the checks before it is trusted, its locks, its removal.
 * node.h says why it is made this way; node.c keeps the slots.  CUDA-free. */
#ifndef PC_STAGE_NODESEG_H
#define PC_STAGE_NODESEG_H
#include <stdint.h>
#include <sys/types.h>

#define PC_NODE_SLOTS 64                     /* staging processes per node and user */

/* Where a process stands with the node's file.  PC_NODE_LEFT: left at
 * exit, or a fork child: it never joins. */
enum { PC_NODE_OFF, PC_NODE_JOINED, PC_NODE_REFUSED, PC_NODE_UNAVAILABLE, PC_NODE_LEFT };

/* The layout's version is in the file's name (pincache-node-v1-EUID): a
 * build with another layout bumps it, and never meets this one's files. */
#define PC_NODE_MAGIC 0x317665646f6e6370ull   /* "pcnodev1" as bytes, little-endian */
#define PC_NODE_VERSION 1u

/* One staging process.  Written by its owner (holding the slot's lock),
 * read by everyone, each field an atomic 64-bit word; 64 bytes, so that
 * one rank's stores never move another rank's cache line. */
struct pc_node_slot {
    uint64_t token;      /* the owner's random token; 0: free.  Cleared by the owner, or by a
                            reaper that found the slot's lock free (compare-and-swap) */
    uint64_t last_ns;    /* CLOCK_MONOTONIC at the start of its last staged copy; 0: none yet */
    uint64_t gpu;        /* the GPU of that copy (pc_node_gpu_key); 0: unknown */
    uint64_t pid;        /* for a person reading the file; never trusted */
    uint64_t threads;    /* its share of copy threads at its last count; idem */
    uint64_t pad[3];
};

struct pc_node_file {
    uint64_t magic;      /* written last, when the rest is in place */
    uint32_t version, nslots;
    uint64_t size;       /* sizeof (struct pc_node_file) */
    uint64_t uid;        /* the effective uid of its maker */
    uint64_t pad0[4];
    uint64_t gen;        /* bumped whenever a slot is claimed, freed or reaped, or a rank wakes
                            or changes GPU: ranks count again when it moved */
    uint64_t pad1[7];
    struct pc_node_slot slot[PC_NODE_SLOTS];
};

/* Locks, on bytes of the file: byte 0 read-locked by every member for its
 * lifetime; byte 1 + i write-locked by slot i's owner. */
#define PC_NODE_LOCK_PRESENT 0
#define PC_NODE_LOCK_SLOT(i) (1 + (off_t)(i))
#define PC_NODE_LOCK_ALL (1 + (off_t)PC_NODE_SLOTS)    /* length of the whole range */

struct pc_nodeseg {
    int fd;                      /* -1: none */
    struct pc_node_file *map;
    dev_t dev;                   /* the file, to tell whether the name still leads to it */
    ino_t ino;
    char path[4096];
};

/* Open dir's file, making it if there is none, check it, and take the
 * read lock on byte 0 (a member).  PC_NODE_JOINED (s filled),
 * PC_NODE_REFUSED or PC_NODE_UNAVAILABLE, *why saying why (a constant
 * string).  Bounded: a few attempts, each at most a millisecond's wait. */
int pc_nodeseg_open(const char *dir, struct pc_nodeseg *s, const char **why);

/* An OFD lock of type (F_RDLCK, F_WRLCK, F_UNLCK) on [start, start + len),
 * never waiting.  0, or -errno (-EAGAIN: another holds a conflicting one). */
int pc_nodeseg_lock(const struct pc_nodeseg *s, short type, off_t start, off_t len);

/* Does another open file description hold a lock on byte at?  1 yes, 0 no,
 * -1 unknown (the call failed). */
int pc_nodeseg_held(const struct pc_nodeseg *s, off_t at);

/* Leave: if no other member is left (the write lock over the whole file),
 * remove the name, if it still leads to this file.  Then close (the
 * kernel drops every lock); the mapping stays. */
void pc_nodeseg_leave(struct pc_nodeseg *s);

#endif
