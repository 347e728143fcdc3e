/* node.h - the node's share of staging: the processes of one user on one
 * node (torchrun, Slurm or MPI ranks, or any processes on one GPU) divide
 * one budget of copy threads and ring chunks between them, through a small
 * shared file (node.c, nodeseg.c).  CUDA-free; share.c asks the GPU's name
 * and applies the share.
 *
 * Why: each process starts its own copy threads and ring.  Four processes
 * on one H200 (16 CPUs), each staging 256 pageable 2.5 MiB copies at once,
 * ran 4 x 16 copy threads on 16 CPUs and reached 28 GB/s together, where
 * one process alone stages at 2.8-3.8x the driver's pageable rate.
 *
 * The decisions:
 *  - One file per user per node, not per GPU: $PINCACHE_NODE_SHARE_DIR
 *    (/dev/shm)/pincache-node-v1-EUID, one slot per staging process, each
 *    slot naming its process's GPU.  Copy threads are CPUs, the node's: a
 *    file per GPU could not see that four ranks on four GPUs share 16 CPUs.
 *    The link is the GPU's: ranks of one GPU also share its budget.  So a
 *    rank's share of copy threads is
 *        min(alone, gpu / ranks on its GPU, cpus / ranks on the node), >= 1
 *    (struct pc_node_budget says what each is), and of ring chunks
 *        max(2, chunks / ranks on its GPU), <= chunks:
 *    alone, one process gets what it got before.  The name needs no GPU, so
 *    nothing CUDA is asked to find the file.
 *  - The GPU is named by its PCI address (domain, bus, device, function),
 *    asked once per device at its first staged copy (a CUDA call inside a
 *    program's own copy, as native.c's): the ordinal is not a name across
 *    processes (CUDA_VISIBLE_DEVICES renumbers), and a UUID names a MIG
 *    instance, while MIG instances of one GPU share its link.  Unknown (0):
 *    the rank counts on the node only.
 *  - Who holds a share: a process that used its copy threads (a staged
 *    copy, or a fast block's pre-fault) in the last second
 *    (PC_NODE_ACTIVE_NS).  A process joins at that first use, never
 *    earlier; one that stops staging drops out of the others' counts a
 *    second later, and counts again (bumping the generation) at its next
 *    copy.  Ranks that copy at different times each get the whole budget.
 *  - The hot path: at each staged copy's start, one load of the file's
 *    generation, a clock read (vDSO) and at most one store to the process's
 *    own slot (its own cache line).  The ranks are counted again only when
 *    the generation moved (a rank came, left, woke or changed GPU) or every
 *    PC_NODE_RECOUNT_NS; a share that changes applies from the next copy.
 *  - Who is alive: each slot is an open-file-description lock (F_OFD_SETLK)
 *    on one byte of the file, held by its process for its lifetime.  The
 *    kernel drops it when the process dies, even by SIGKILL, whatever its
 *    pid namespace, and a recycled pid cannot hold it: no pid, start time
 *    or heartbeat is trusted.  A count tests the lock of each other slot
 *    that looks active (F_OFD_GETLK, one system call per active rank) and
 *    reaps a dead one's slot; claiming a slot is taking its lock, so a dead
 *    process's slot is free again at once.  The slot's token (a random 64
 *    bits) only says "claimed" without a system call, and tells a reaper
 *    racing a new owner apart (compare-and-swap).
 *  - Fork: the child closes its copy of the descriptor at once (the
 *    parent's locks stay with the parent's) and unmaps the file.  It holds
 *    no share and never joins: a fork child passes every copy through
 *    (stage.c).  An exec'd child never sees the descriptor (O_CLOEXEC).
 *  - Creation: made complete under an unpredictable temporary name
 *    (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600), then renamed into place with
 *    RENAME_NOREPLACE: the file at the name is always whole, and a race of
 *    creators leaves one.  It is written with pwrite, never through the
 *    mapping: a full /dev/shm fails the write (ENOSPC) rather than raising
 *    SIGBUS.  Nothing is written into a file before it is checked.
 *  - Trust: the name is predictable, so another user may have made it.  It
 *    is opened O_NOFOLLOW|O_NONBLOCK and used only if it is a regular file
 *    of one link, owned by the effective uid, mode 0600, of the exact size,
 *    with the magic, version, slot count, size and uid in its header;
 *    otherwise the process stages alone, as before, with one warning.  Every
 *    value read from the file is bounded where it is used: loops run over
 *    this build's PC_NODE_SLOTS, never a count from the file; a slot's
 *    values only ever add a rank to a count (at most PC_NODE_SLOTS).  A
 *    process of the same user can still truncate the mapped file (SIGBUS)
 *    or worse, but it could ptrace us as well.
 *  - Cleanup, no daemon: each member holds a read lock on byte 0 for its
 *    lifetime; at exit a process frees its slot and, if it can then take a
 *    write lock over the whole file (no other member left), unlinks the
 *    name (still naming its file).  A joiner takes its read lock before it
 *    checks that the name still leads to its file, so it never joins a file
 *    being unlinked.  A joiner that finds itself alone (the write lock
 *    again) clears every slot: the file of processes that all died is
 *    reused as new, and removed at the exit of its last new member.
 *  - Failure: no shared-memory folder, no OFD locks (Linux < 3.15), no
 *    RENAME_NOREPLACE, every slot taken: the process stages alone, as
 *    before, and says so at PINCACHE_LOG=info. */
#ifndef PC_STAGE_NODE_H
#define PC_STAGE_NODE_H
#include <stdint.h>
#include "stage/nodeseg.h"   /* PC_NODE_SLOTS, the PC_NODE_* states */

#define PC_NODE_ACTIVE_NS 1000000000ull      /* a rank holds a share this long after a copy */
#define PC_NODE_RECOUNT_NS 100000000ull      /* count the ranks again at least this often */

/* One process's budget: the same in every process started with the same
 * options on the same node. */
struct pc_node_budget {
    unsigned alone;    /* copy threads this process uses alone (PINCACHE_STAGE_THREADS, or
                          min(16, the CPUs it may run on)) */
    unsigned gpu;      /* copy threads the ranks of one GPU share (PINCACHE_STAGE_THREADS, or
                          min(16, the node's CPUs)) */
    unsigned cpus;     /* copy threads all the node's ranks share (its CPUs, at least gpu) */
    unsigned chunks;   /* ring chunks the ranks of one GPU share (PINCACHE_STAGE_RING / CHUNK) */
};

/* Active ranks (this one included): on this process's GPU, on the node. */
struct pc_node_count {
    unsigned gpu, node;
};

struct pc_node_share {
    unsigned threads, chunks;
};

/* The share of a rank that counts c (pure; see the top). */
struct pc_node_share pc_node_policy(const struct pc_node_budget *b, struct pc_node_count c);

/* The key of a GPU from its PCI bus id ("0000:3b:00.0", as cudaDeviceGetPCIBusId
 * writes it); 0 when it does not parse. */
uint64_t pc_node_gpu_key(const char *pci_bus_id);

/* Join the node's file in dir: find or make it, check it, claim a slot.
 * PC_NODE_JOINED, PC_NODE_REFUSED (a file is there that is not one we can
 * trust: one warning), PC_NODE_UNAVAILABLE (no file can be had: an info
 * line); the states are nodeseg.h's.  Called once, by the first staged
 * copy (staging lock held). */
int pc_node_join(const char *dir);

/* At a staged copy's start (staging lock held), now its time: mark this
 * rank active on gpu (a pc_node_gpu_key) and fill *c with the active ranks.
 * 1: counted afresh; 0: *c is the last count (nothing moved); -1: not
 * joined.  No system call unless it counts. */
int pc_node_tick(uint64_t now, uint64_t gpu, struct pc_node_count *c);

/* Write this rank's share of threads in its slot, for a person reading
 * the file (nothing reads it back). */
void pc_node_note_threads(unsigned threads);

/* At exit: free the slot, and remove the file when no other member is left.
 * No allocation, no lock but the file's own; the mapping stays (a copy on
 * another thread may still touch it). */
void pc_node_leave(void);

/* In a forked child: close the descriptor (the parent's locks stay the
 * parent's), unmap, forget; the child never joins. */
void pc_node_after_fork_child(void);

#endif
