/* share.h - how many copy threads and ring chunks a staged copy may use
 * (share.c): this process's own budget (PINCACHE_STAGE_THREADS, the CPUs,
 * the launcher's count of local processes), or its share of the node's
 * (PINCACHE_NODE_SHARE: node.h).  Not included outside src/stage/. */
#ifndef PC_STAGE_SHARE_H
#define PC_STAGE_SHARE_H
#include <stdint.h>

/* At a staged copy's start on device dev (staging lock held, no CUDA error
 * pending): the copy threads it may use, the caller included (the pool
 * started or grown to them), and the most ring chunks.  The first call
 * decides (joins the node's file); a device's first asks its PCI address. */
void pc_share_copy(int dev, unsigned *threads, unsigned *chunks);

/* The copy threads of a job that is not a copy (a fast block's pre-fault),
 * deciding as a first copy would; the job counts as staging, on the last
 * copy's GPU (staging lock held). */
unsigned pc_share_threads(void);

/* stage.h's pc_stage_parallel: fn on this process's share of the threads;
 * wide: on the share before the per-process cap (PC_SHARE_PROC_CAP), the
 * threads beyond the pool parked helpers of their own (xfer_help.h). */
int pc_share_parallel(void (*fn)(void *arg, uint64_t i), void *arg, uint64_t n, int lock_held, int wide);

/* At exit: leave the node's file (node.h). */
void pc_share_at_exit(void);

/* In a forked child: forget the decision and the devices; the file is
 * closed (the child stages nothing). */
void pc_share_after_fork_child(void);

#endif
