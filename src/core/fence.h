/* fence.h - "is a freed block safe to hand out again?"
 *
 * The real cudaFreeHost waits for all device work.  A cached free gives the
 * same guarantee without waiting: it records events that cover every stream
 * the process can have used, and the block is reused only once they have
 * completed.
 *
 * By default (PINCACHE_FENCE=context) that is one cuCtxRecordEvent per used
 * device: the event captures all work of the context, on every stream,
 * including streams pincache never saw created (driver API, other
 * libraries) and streams destroyed while busy.  It is dropped at once when a
 * query says it is already complete (nothing in flight).
 *
 * Where the driver lacks it (before CUDA 12.5) or refuses it, and with
 * PINCACHE_FENCE=runtime|driver: one event on each used device's legacy
 * default stream covers that stream, every blocking stream and every
 * per-thread default stream (they all synchronize with the legacy stream);
 * each known non-blocking stream that a query finds busy is watched, not
 * recorded on: the fence completes once a later query finds it idle (an
 * event behind the program's work would be work of its stream, and the
 * program's own cudaStreamQuery would see it); streams destroyed while busy
 * stay covered through an event recorded at destroy time, when the program
 * can no longer ask.
 *
 * Fences are numbered in the order they are recorded, and completion is
 * monotonic: fence k complete implies every fence j < k is complete, so a
 * single watermark answers most checks without any CUDA call.
 *
 * fence.c holds the algorithm, fence_streams.c what it must know of
 * streams, devices and captures (fence_int.h: their shared state).  Neither
 * makes a CUDA call: they ask the device through the ops table of
 * fence_ops.h (fence_cuda.c; a fake in tests/unit/test_fence.c). */
#ifndef PC_FENCE_H
#define PC_FENCE_H
#include <stdint.h>

/* Record a fence covering all GPU work enqueued so far.  *seq is 0 when the
 * device was idle (nothing to wait for); *busy says whether work was in flight
 * before the fence's own events were recorded.
 * Returns 0, or -1 when no fence can be had (stream capture under way, event
 * failure, a broken context: pc_fence_context_ok): the caller must then not
 * cache the block. */
int pc_fence_record(uint64_t *seq, int *busy);

/* Is the current context healthy?  0 after a kernel fault (the sticky
 * error) or with no context current: the caller then leaves the call to
 * the real function, whose answer and last error are the runtime's.  One
 * driver query (the last error is left alone); 1 where there is no driver
 * to ask.  Not during a stream capture: the query could invalidate it. */
int pc_fence_context_ok(void);

/* Complete already known (no CUDA call)? */
int pc_fence_known(uint64_t seq);
/* Poll pending fences up to seq (CUDA event queries). */
int pc_fence_poll(uint64_t seq);
/* Wait (polling, sleeping between polls) up to timeout_ns for fence seq. */
int pc_fence_wait(uint64_t seq, uint64_t timeout_ns);
/* Every fence recorded so far complete? */
int pc_fence_idle(void);
/* Has every piece of device work queued so far completed?  A fence over
 * everything, waited for up to wait_ns; 0 when none can be had (a capture,
 * a broken context).  Before a release, which waits for all device work. */
int pc_fence_quiet(uint64_t wait_ns);
/* Is GPU work in flight right now?  Stream and event queries only: no
 * fence, no event recorded (sync attribution). */
int pc_fence_busy_now(void);
/* Set on a thread once the program itself used its per-thread default
 * stream: only then does pc_fence_busy_now ask about it.  Asking brings the
 * stream into being, and a fork() child of a process holding one that the
 * program never made crashes in the driver at exit (H200, PyTorch). */
extern __thread int pc_tls_ptstream;

/* A stream the program created (s: its cudaStream_t). */
void pc_fence_stream_created(void *s, int nonblocking);
/* A stream handle reached an interposed call: one pincache did not see
 * created makes its device blind if it is non-blocking. */
void pc_fence_stream_seen(void *s);
/* Device dev (-1: one pincache cannot name, so every device) may have
 * non-blocking streams pincache cannot see.  Where fences go stream by
 * stream, frees there are then not cached (pc_fence_record fails, with one
 * warning): the caller frees for real, and the runtime waits.
 * Context-wide fences (PINCACHE_FENCE=context) cover unseen streams and
 * are not affected. */
void pc_fence_blind(int dev);
void pc_fence_stream_destroying(void *s);
void pc_fence_device_used(int dev);
/* A capture about to begin (counted), and one ended or refused by the
 * runtime (uncounted). */
void pc_fence_capture_begin(void);
void pc_fence_capture_end(void);
/* Number of stream captures under way (staging passes copies through then). */
int pc_fence_capturing(void);

/* Forget every event and stream without any CUDA call: in a forked child
 * (the parent's CUDA state is not ours). */
void pc_fence_forget_all(void);
/* Forget device dev's events and streams without any CUDA call: its
 * context is about to be destroyed (a device reset), and with it they are;
 * work it had in flight no longer holds any fence.  Other devices' fences,
 * events and streams stay. */
void pc_fence_forget_device(int dev);

/* The calling thread's current device (cudaGetDevice's answer), without
 * asking the runtime again while the same context is current: 0, or the
 * runtime's error.  And: a context was reset, released or destroyed (what
 * was learned of contexts is forgotten). */
int pc_fence_current_device(int *dev);
void pc_fence_contexts_changed(void);

/* A CUDA error other than "not ready" came back from a fence operation. */
extern int pc_fence_broken;

#endif
