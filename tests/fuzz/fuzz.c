/* fuzz - a differential fuzzer for pincache (tests/fuzz/README.md).
 *
 * From a seed it generates a random, WELL-DEFINED CUDA program (a list of
 * operations), runs it and prints a hash of its transcript: every return
 * code, the last-error state where the program asks for it, and every byte
 * the program's buffers hold when it reads them.  Run plainly and under
 * LD_PRELOAD=libpincache.so, the hashes must be equal.
 *
 * The generator encodes the runtime's contract in a model (struct model):
 * vector clocks per stream "lane" (a stream as used by one thread) give the
 * happens-before order of device work, a per-thread clock what the host knows
 * to be complete, and each buffer keeps its pending device accesses.  An
 * operation that could race with one of them is preceded by a
 * synchronization (stream, event or device), or not emitted.  The same model
 * validates replayed and shrunk programs.
 *
 *   fuzz [-v] [-n OPS] [-t THREADS] SEED[:LAST]   run seeds, one hash line each
 *   fuzz [-v] --dump SEED                          print the seed's program
 *   fuzz [-v] --replay FILE                        run a saved program
 *   fuzz --shrink FILE --env 'K=V ...' [--tries N] minimize a diverging program
 *
 * -v prints one transcript line per operation (to locate a divergence);
 * -vv also each buffer's end bytes hashed by 64 KiB (which changes the
 * transcript's hash: compare -vv runs with -vv runs only).
 * With --shrink the program is run with `--replay` plainly (LD_PRELOAD and
 * PINCACHE_* removed) and with the given assignments added, and the smallest
 * valid sub-program that still diverges is printed. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include "fuzz.h"

/* The per-thread-default-stream entry points (exported by libcudart; the
 * header declares them only under CUDA_API_PER_THREAD_DEFAULT_STREAM). */
cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count);
cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
				 cudaStream_t stream);
cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream);
cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags);
cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *userData);
cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, enum cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *pGraph);
cudaError_t cudaMemcpyBatchAsync_ptsz(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
				      struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
				      cudaStream_t stream);

#define MAXT 4    /* threads */
#define MAXD 4    /* devices used */
#define NFIX (MAXD * MAXT * 2)
#define MAXL 64   /* lanes: legacy and per-thread (fixed ids), then created streams */
#define MAXB 512  /* buffers of one program */
#define MAXE 64   /* events */
#define MAXACC 32 /* pending accesses kept per buffer */
#define MAXOPS 4096
#define MAXSIZE (6u << 20)
#define KMAX (1u << 20) /* bytes a kernel or host function touches at most */

/* ---- the program */

#define OPS(X) \
	X(PHASE) X(SETDEV) X(ALLOC) X(FREE) X(BADFREE) X(FILL) X(CHECK) X(COPY) X(MEMSET) \
	X(KERNEL) X(HOSTFN) X(SCREATE) X(SDESTROY) X(SSYNC) X(SQUERY) X(ECREATE) X(EDESTROY) \
	X(ERECORD) X(EWAIT) X(ESYNC) X(EQUERY) X(DSYNC) X(RESET) X(LASTERR) X(CBEGIN) X(CEND) X(END) \
	X(REG) X(UNREG) X(QUERY) X(BATCH)
#define X_ENUM(n) OP_##n,
#define X_NAME(n) #n,
enum { OPS(X_ENUM) NOPKINDS };
static const char *const op_names[] = { OPS(X_NAME) };

/* Fields by kind (t: the thread that runs it):
 *   PHASE  a: the one thread that runs the phase, or -1 for all
 *   SETDEV a: device
 *   ALLOC  a: buffer, b: api (enum api), c: flags, len: size; d: 1 (API_MALLOC)
 *          whole pages of its own, so that it may be registered
 *   FREE, BADFREE, FILL, CHECK  a: buffer (FILL: key)
 *   COPY   a: dst, b: src, c: lane, d: 0 sync, 1 async; o1/o2: dst/src offset, len
 *   MEMSET a: buffer, c: lane, d: 0 sync, 1 async, key: value, o1, len
 *   KERNEL a: dst, b: src or -1, c: lane, key, delay, o1/o2, len
 *   HOSTFN a: dst, b: src or -1, c: lane, key, o1/o2, len
 *   SCREATE a: lane, b: non-blocking, c: api
 *   SDESTROY, SSYNC, SQUERY  c: lane
 *   ECREATE a: event, b: flags; EDESTROY, ESYNC, EQUERY a: event
 *   ERECORD, EWAIT  a: event, c: lane
 *   LASTERR a: 0 get, 1 peek
 *   CBEGIN c: lane, b: mode; CEND c: lane
 *   REG    a: buffer, c: flags (Portable, Mapped): cudaHostRegister of the
 *          whole buffer (a pageable one of whole pages: 0, or 712 when it is
 *          registered already; a pinned block: 1)
 *   UNREG  a: buffer, b: 1 the byte after its start: cudaHostUnregister (a
 *          registered base 0; interior and pinned 1; anything else 713)
 *   QUERY  a: buffer, b: 1 its middle byte, c: 0 cudaHostGetFlags, 1
 *          cudaPointerGetAttributes, 2 cudaHostGetDevicePointer: the code and
 *          the answer, pointers as their relation to the one asked about
 *   BATCH  an operand of a cudaMemcpyBatchAsync on lane c (spelt e), as COPY's
 *          a, b, o1, o2, len; d: its srcAccessOrder (1 Stream, 2 DuringApiCall,
 *          3 Any); key bit 0: the batch's last operand, bit 1: one attribute
 *          for all when their orders agree.  A thread's run of operands on
 *          one lane is one call, made before the thread's next other op
 *   END    the program's end: wait for every device, read every buffer, free
 *          everything; a new program may follow (seeds run in one process)
 * e: how the stream is spelt (0 plain, 1 the _ptsz/_ptds form, 2 the other
 * handle: cudaStreamLegacy for 0, cudaStreamPerThread for 0 in _ptsz).
 * delay, of ALLOC (cudaHostAlloc, cudaMallocHost), FREE of a pinned block,
 * COPY, REG, UNREG and QUERY but cudaPointerGetAttributes: 1 the driver's
 * form instead (cuMemHostAlloc, cuMemAllocHost, cuMemFreeHost,
 * cuMemcpyHtoD/DtoH/DtoD and their Async forms, the _ptds or _ptsz ABI
 * where e asks for it, cuMemHostRegister, cuMemHostUnregister,
 * cuMemHostGetFlags, cuMemHostGetDevicePointer), reached through
 * cudaGetDriverEntryPointByVersion as the static cudart and libraries that
 * resolve the driver by version reach it: the same semantics, the driver's
 * codes, no last error. */
struct op {
	int k, t, a, b, c, d, e;
	unsigned key, delay;
	size_t o1, o2, len;
};

enum api { API_HOSTALLOC, API_MALLOCHOST, API_MALLOC, API_DEVICE };
enum mem { MEM_PAGEABLE, MEM_PINNED, MEM_DEVICE };

struct prog {
	int ndev, nthr, n;
	struct op op[MAXOPS];
};

/* ---- the model */

typedef struct {
	uint32_t c[MAXL];
} vc_t;

enum { LK_LEGACY, LK_PTDS, LK_CREATED };

struct mlane {
	int kind, dev, thr, nb, alive, made;
	int cap, capmode, capbad; /* capturing, its mode, invalidated */
	uint32_t seq;             /* ops enqueued */
	vc_t vc, snap;            /* clock of the next op's predecessors; at the phase start */
};

struct macc {
	int lane, write;
	uint32_t seq;
};

struct mbuf {
	int made, live, api, mem, dev, flags, claim_ph, claim_t, nacc;
	int init; /* every byte written: fresh device memory holds anything */
	int pages, reg; /* pageable of whole pages; registered now (dev: where, flags: how) */
	size_t size;
	struct macc acc[MAXACC];
};

struct mev {
	int made, live, dev, thr, lane;
	uint32_t seq;
	vc_t vc;
};

struct model {
	int ndev, nthr, phase, single; /* single: the phase's thread, or -1 */
	int capturing;                 /* the lane capturing, or -1 */
	int nbuf, nlane, nev;
	struct mlane lane[MAXL];
	struct mbuf buf[MAXB];
	struct mev ev[MAXE];
	struct {
		int dev;
		vc_t h;        /* what this thread knows complete */
		int bl;        /* the lane of the batch being gathered (0: none; legacy lanes never batch) */
		uint32_t bseq; /* that lane's ops before the batch */
	} th[MAXT];
};

static int lane_fixed(int kind, int dev, int t)
{
	return (dev * MAXT + t) * 2 + (kind == LK_PTDS);
}

static void vc_join(vc_t *a, const vc_t *b)
{
	for (int i = 0; i < MAXL; i++)
		if (b->c[i] > a->c[i])
			a->c[i] = b->c[i];
}

static void m_init(struct model *m, int ndev, int nthr)
{
	memset(m, 0, sizeof(*m));
	m->ndev = ndev;
	m->nthr = nthr;
	m->single = -1;
	m->capturing = -1;
	m->nlane = NFIX;
	for (int d = 0; d < MAXD; d++)
		for (int t = 0; t < MAXT; t++)
			for (int k = LK_LEGACY; k <= LK_PTDS; k++) {
				struct mlane *l = &m->lane[lane_fixed(k, d, t)];
				l->kind = k;
				l->dev = d;
				l->thr = t;
				l->alive = d < ndev && t < nthr;
			}
}

static int acc_done(const struct model *m, int t, const struct macc *a)
{
	return m->th[t].h.c[a->lane] >= a->seq;
}

/* The clock an op enqueued on lane L by thread t will carry: its lane's
 * predecessors, and the legacy stream's implicit synchronization with the
 * blocking streams (the ones this thread used: only those it knows were
 * enqueued before).  Measured on the H200 (/work/facts/h200-order.md): a
 * legacy cudaMemcpy waits for the per-thread and blocking streams' earlier
 * work, but cudaMemcpy_ptds does not wait for the legacy stream's (a small
 * one reads its source at once): the per-thread stream gets no credit for
 * legacy work here. */
static vc_t lane_next(const struct model *m, int L)
{
	const struct mlane *l = &m->lane[L];
	vc_t v = l->vc;

	if (l->kind == LK_LEGACY) {
		for (int i = 0; i < m->nlane; i++) {
			const struct mlane *o = &m->lane[i];
			if (i != L && o->alive && o->thr == l->thr && o->dev == l->dev && !o->nb &&
			    o->kind != LK_LEGACY)
				vc_join(&v, &o->vc);
		}
	} else if (!l->nb && l->kind == LK_CREATED) {
		vc_join(&v, &m->lane[lane_fixed(LK_LEGACY, l->dev, l->thr)].vc);
	}
	v.c[L] = l->seq + 1;
	return v;
}

static uint32_t lane_commit(struct model *m, int L, const vc_t *v)
{
	m->lane[L].vc = *v;
	return ++m->lane[L].seq;
}

/* A conflict: the first pending access that the access described would race
 * with.  dev_vc NULL: a host access at the call. */
static const struct macc *m_conflict(const struct model *m, int t, int b, int write, const vc_t *dev_vc)
{
	const struct mbuf *B = &m->buf[b];

	for (int i = 0; i < B->nacc; i++) {
		const struct macc *a = &B->acc[i];
		if (!(write || a->write) || acc_done(m, t, a))
			continue;
		if (dev_vc && dev_vc->c[a->lane] >= a->seq)
			continue;
		return a;
	}
	return NULL;
}

static int m_add_acc(struct model *m, int t, int b, int lane, uint32_t seq, int write)
{
	struct mbuf *B = &m->buf[b];
	int j = 0;

	for (int i = 0; i < B->nacc; i++)
		if (!acc_done(m, t, &B->acc[i]))
			B->acc[j++] = B->acc[i];
	B->nacc = j;
	if (B->nacc == MAXACC)
		return -1;
	B->acc[B->nacc++] = (struct macc){ lane, write, seq };
	return 0;
}

/* The thread may touch buffer b: live, and (in a phase of several threads)
 * no other thread touched it in this phase. */
static int m_claim(struct model *m, int t, int b)
{
	struct mbuf *B;

	if (b < 0 || b >= m->nbuf || !m->buf[b].live)
		return -1;
	B = &m->buf[b];
	if (B->claim_ph == m->phase && B->claim_t != t)
		return -1;
	B->claim_ph = m->phase;
	B->claim_t = t;
	return 0;
}

static int m_lane_ok(const struct model *m, int t, int L)
{
	const struct mlane *l;

	if (L < 0 || L >= m->nlane)
		return 0;
	l = &m->lane[L];
	return l->alive && l->thr == t && l->dev == m->th[t].dev;
}

/* The device a pinned or device buffer may be used from. */
static int m_buf_on_dev(const struct model *m, int b, int dev)
{
	const struct mbuf *B = &m->buf[b];

	if (B->mem == MEM_PAGEABLE && !B->reg)
		return 1;
	if (B->mem == MEM_DEVICE)
		return B->dev == dev;
	return B->dev == dev || (B->flags & cudaHostAllocPortable);
}

static int m_zero_copy(const struct model *m, int b, int dev)
{
	const struct mbuf *B = &m->buf[b];

	/* Registered with Mapped: the device pointer is the host address
	 * (H200, docs/runtime-facts.md, a registered block's observables). */
	return B->mem == MEM_DEVICE ? B->dev == dev
				    : (B->mem == MEM_PINNED || B->reg) && (B->flags & cudaHostAllocMapped) &&
						  m_buf_on_dev(m, b, dev);
}

static void m_complete_lane(struct model *m, int t, int L)
{
	vc_join(&m->th[t].h, &m->lane[L].vc);
}

static void m_device_sync(struct model *m, int t, int dev)
{
	for (int i = 0; i < m->nlane; i++) {
		struct mlane *l = &m->lane[i];
		if (l->dev != dev)
			continue;
		vc_join(&m->th[t].h, l->thr == t ? &l->vc : &l->snap);
	}
}

/* Returns the kinds of capture-time answers: whether a pinned allocation,
 * free or event query of thread t is refused now (900), and invalidates. */
static int m_capture_refuses(struct model *m)
{
	struct mlane *l;

	if (m->capturing < 0)
		return 0;
	l = &m->lane[m->capturing];
	if (l->capmode == cudaStreamCaptureModeRelaxed)
		return 0;
	l->capbad = 1; /* measured: 900, and the capture is invalidated */
	return 1;
}

#define CONFLICT(x)                   \
	do {                          \
		if ((cf = (x)) != NULL) { \
			if (why)          \
				*why = *cf; \
			return -2;        \
		}                         \
	} while (0)

/* Apply op o to the model.  0: well-defined (and applied); -1: invalid;
 * -2: a race with the pending access *why (nothing applied). */
static int m_apply(struct model *m, const struct op *o, struct macc *why)
{
	int t = o->t, dev, L = o->c;
	const struct macc *cf;
	struct mbuf *A, *Bf;
	vc_t v;

	if (t < 0 || t >= m->nthr)
		return -1;
	if (o->k != OP_PHASE && o->k != OP_END && m->single >= 0 && t != m->single)
		return -1;
	dev = m->th[t].dev;
	/* A batch's operands have no order among themselves (cuda.h): an
	 * operand is checked as ordered after the lane's work before its batch
	 * only.  Any other op of the thread ends the batch (the executor makes
	 * the call first). */
	if (o->k != OP_BATCH || m->th[t].bl != L)
		m->th[t].bl = 0;
	if (o->k == OP_BATCH && !m->th[t].bl && L >= 0 && L < MAXL) {
		m->th[t].bl = L;
		m->th[t].bseq = m->lane[L].seq;
	}
	if (m->capturing >= 0) {
		/* Inside a capture (one thread): only work on the capturing stream,
		 * pinned allocations and frees, event queries, the last error. */
		int ok = o->k == OP_CEND || o->k == OP_LASTERR || o->k == OP_EQUERY ||
			 (o->k == OP_ALLOC && o->b <= API_MALLOCHOST) ||
			 (o->k == OP_FREE && o->a >= 0 && o->a < m->nbuf && m->buf[o->a].mem == MEM_PINNED);
		if (!m->lane[m->capturing].capbad && L == m->capturing &&
		    (o->k == OP_KERNEL || o->k == OP_MEMSET || (o->k == OP_COPY && o->d == 1)))
			ok = 1;
		if (!ok)
			return -1;
		if (m->lane[m->capturing].capbad && o->k != OP_CEND && o->k != OP_LASTERR)
			return -1;
	}
	switch (o->k) {
	case OP_END:
		if (m->capturing >= 0)
			return -1;
		m_init(m, m->ndev, m->nthr);
		return 0;
	case OP_PHASE:
		if (m->capturing >= 0 || o->a >= m->nthr || o->a < -1)
			return -1;
		m->phase++;
		m->single = o->a;
		for (int i = 1; i < m->nthr; i++)
			vc_join(&m->th[0].h, &m->th[i].h);
		for (int i = 1; i < m->nthr; i++)
			m->th[i].h = m->th[0].h;
		for (int i = 0; i < m->nlane; i++)
			m->lane[i].snap = m->lane[i].vc;
		return 0;
	case OP_SETDEV:
		if (o->a < 0 || o->a >= m->ndev)
			return -1;
		m->th[t].dev = o->a;
		return 0;
	case OP_ALLOC:
		/* Ids, not order: threads of one phase create theirs in any order. */
		if (o->a < 0 || o->a >= MAXB || m->buf[o->a].made || o->b < 0 || o->b > API_DEVICE)
			return -1;
		A = &m->buf[o->a];
		if (o->a >= m->nbuf)
			m->nbuf = o->a + 1;
		memset(A, 0, sizeof(*A));
		A->made = 1;
		A->api = o->b;
		A->mem = o->b == API_MALLOC ? MEM_PAGEABLE : o->b == API_DEVICE ? MEM_DEVICE : MEM_PINNED;
		A->dev = dev;
		A->flags = o->b == API_HOSTALLOC ? o->c : 0;
		A->size = o->len;
		A->claim_ph = m->phase;
		A->claim_t = t;
		A->init = A->mem != MEM_DEVICE; /* the executor zeroes new host memory */
		A->pages = o->b == API_MALLOC && o->d == 1;
		A->live = !(A->mem == MEM_PINNED && m_capture_refuses(m)) && o->len;
		return 0;
	case OP_FREE:
		if (m_claim(m, t, o->a))
			return -1;
		A = &m->buf[o->a];
		if ((A->mem == MEM_DEVICE && A->dev != dev) || A->reg)
			return -1; /* a registered buffer is unregistered first */
		if (A->mem == MEM_PAGEABLE)
			CONFLICT(m_conflict(m, t, o->a, 1, NULL));
		if (A->mem == MEM_PINNED && m_capture_refuses(m))
			A->live = 0; /* refused: the block is left alone (leaked) */
		A->live = 0;
		return 0;
	case OP_BADFREE: /* cudaFreeHost of an interior or non-pinned pointer: 1 */
		if (m_claim(m, t, o->a) || m->buf[o->a].size < 2)
			return -1;
		return 0;
	case OP_FILL:
	case OP_CHECK:
		if (m_claim(m, t, o->a))
			return -1;
		A = &m->buf[o->a];
		if (A->mem == MEM_DEVICE && A->dev != dev)
			return -1;
		CONFLICT(m_conflict(m, t, o->a, o->k == OP_FILL, NULL));
		if (A->mem == MEM_DEVICE && (o->k == OP_FILL || !A->init))
			return -1;
		return 0;
	case OP_COPY:
	case OP_BATCH: {
		int batch = o->k == OP_BATCH, ms, md, sync = !batch && o->d == 0, lane;
		int stream_order = batch && o->d == cudaMemcpySrcAccessOrderStream;
		uint32_t seq;
		vc_t vchk;

		if (m_claim(m, t, o->a) || m_claim(m, t, o->b) || o->a == o->b)
			return -1;
		A = &m->buf[o->a];
		Bf = &m->buf[o->b];
		/* Registered memory is pinned while it stays registered. */
		md = A->reg ? MEM_PINNED : A->mem;
		ms = Bf->reg ? MEM_PINNED : Bf->mem;
		if (!m_buf_on_dev(m, o->a, dev) || !m_buf_on_dev(m, o->b, dev))
			return -1;
		if (!((ms != MEM_DEVICE && md == MEM_DEVICE) || (ms == MEM_DEVICE)))
			return -1;
		if (o->o1 + o->len > A->size || o->o2 + o->len > Bf->size || !o->len || !Bf->init)
			return -1;
		if (batch && (o->d < cudaMemcpySrcAccessOrderStream || o->d > cudaMemcpySrcAccessOrderAny))
			return -1;
		lane = sync ? lane_fixed(o->e == 1 ? LK_PTDS : LK_LEGACY, dev, t) : L;
		if (!m_lane_ok(m, t, lane))
			return -1;
		/* A batch on the legacy stream is refused with 1 before anything
		 * is queued (H200, docs/runtime-facts.md "Batched copies"), and
		 * so is one of the _ptsz form given stream 0 (runtime 13.0: seeds
		 * 7205, 7310, 7397 on an H100). */
		if (batch && (m->capturing >= 0 || m->lane[lane].kind == LK_LEGACY ||
			      (m->lane[lane].kind == LK_PTDS && o->e == 1)))
			return m->capturing >= 0 ? -1 : 0;
		if (m->capturing >= 0) {
			if (ms == MEM_PAGEABLE || md == MEM_PAGEABLE)
				return -1;
			return 0; /* captured, never run */
		}
		/* An asynchronous H2D copy from pinned memory on the legacy stream
		 * is ordered after that stream's own work only: H200, seed 4028, a
		 * 4 KiB cudaMemcpyAsync on stream 0 got the bytes from before a
		 * zero-copy kernel the thread queued just before on its per-thread
		 * stream (3 runs of 4), though a legacy kernel waited for one.  On
		 * a blocking created stream likewise for the legacy stream's work
		 * (an H100 under load, seed 9381: a cudaMemcpyAsync from pinned
		 * memory on a blocking stream read bytes a zero-copy kernel queued
		 * just before on the legacy stream had or had not written yet, 3
		 * runs of 8, docs/runs.md run 101): so on any stream. */
		/* A batch's pageable source under srcAccessOrder Stream is read at
		 * the call once the stream's earlier work is done (H200): ordered
		 * after the stream's own work only, which is all the model
		 * credits it with. */
		if ((!sync && ms == MEM_PINNED) || (stream_order && ms == MEM_PAGEABLE)) {
			v = m->lane[lane].vc;
			v.c[lane] = m->lane[lane].seq + 1;
		} else {
			v = lane_next(m, lane);
		}
		/* Pageable async H2D reads its source at the call, and a pageable
		 * destination may be written at the call: host accesses.  A
		 * synchronous copy waits for the stream's earlier work first. */
		vchk = v;
		if (batch)
			vchk.c[lane] = m->th[t].bseq;
		if (ms == MEM_PAGEABLE && !sync && !stream_order)
			CONFLICT(m_conflict(m, t, o->b, 0, NULL));
		else
			CONFLICT(m_conflict(m, t, o->b, 0, &vchk));
		if (md == MEM_PAGEABLE && !sync)
			CONFLICT(m_conflict(m, t, o->a, 1, NULL));
		else
			CONFLICT(m_conflict(m, t, o->a, 1, &vchk));
		if (batch && (o->key & 1))
			m->th[t].bl = 0;
		seq = lane_commit(m, lane, &v);
		A->init |= o->o1 == 0 && o->len == A->size;
		if (sync && (md != MEM_DEVICE || ms == MEM_PINNED)) {
			/* D2H and pinned H2D return when complete. */
			vc_join(&m->th[t].h, &v);
			return 0;
		}
		if (!((sync || stream_order) && ms == MEM_PAGEABLE) && m_add_acc(m, t, o->b, lane, seq, 0))
			return -1;
		return m_add_acc(m, t, o->a, lane, seq, 1);
	}
	case OP_MEMSET: {
		int lane = o->d == 0 ? lane_fixed(o->e == 1 ? LK_PTDS : LK_LEGACY, dev, t) : L;

		if (m_claim(m, t, o->a) || m->buf[o->a].mem != MEM_DEVICE || m->buf[o->a].dev != dev ||
		    !m_lane_ok(m, t, lane) || o->o1 + o->len > m->buf[o->a].size || !o->len)
			return -1;
		if (m->capturing >= 0)
			return o->d == 1 ? 0 : -1;
		v = lane_next(m, lane);
		CONFLICT(m_conflict(m, t, o->a, 1, &v));
		m->buf[o->a].init |= o->o1 == 0 && o->len == m->buf[o->a].size;
		return m_add_acc(m, t, o->a, lane, lane_commit(m, lane, &v), 1);
	}
	case OP_KERNEL:
	case OP_HOSTFN: {
		int host = o->k == OP_HOSTFN;
		uint32_t seq;

		if (!m_lane_ok(m, t, L) || m_claim(m, t, o->a) || o->a == o->b || !o->len || o->len > KMAX)
			return -1;
		if (o->b >= 0 && m_claim(m, t, o->b))
			return -1;
		if (host ? m->buf[o->a].mem == MEM_DEVICE || (o->b >= 0 && m->buf[o->b].mem == MEM_DEVICE)
			 : !m_zero_copy(m, o->a, dev) || (o->b >= 0 && !m_zero_copy(m, o->b, dev)))
			return -1;
		if (o->o1 + o->len > m->buf[o->a].size || (o->b >= 0 && o->o2 + o->len > m->buf[o->b].size))
			return -1;
		if (o->b >= 0 && !m->buf[o->b].init)
			return -1;
		if (m->capturing >= 0)
			return host ? -1 : 0;
		v = lane_next(m, L);
		CONFLICT(m_conflict(m, t, o->a, 1, &v));
		if (o->b >= 0)
			CONFLICT(m_conflict(m, t, o->b, 0, &v));
		seq = lane_commit(m, L, &v);
		m->buf[o->a].init |= o->o1 == 0 && o->len == m->buf[o->a].size;
		if (o->b >= 0 && m_add_acc(m, t, o->b, L, seq, 0))
			return -1;
		return m_add_acc(m, t, o->a, L, seq, 1);
	}
	case OP_SCREATE:
		if (o->a < NFIX || o->a >= MAXL || m->lane[o->a].made)
			return -1;
		if (o->a >= m->nlane)
			m->nlane = o->a + 1;
		m->lane[o->a] = (struct mlane){ .kind = LK_CREATED, .dev = dev, .thr = t, .nb = !!o->b, .alive = 1, .made = 1 };
		return 0;
	case OP_SDESTROY:
	case OP_SSYNC:
	case OP_SQUERY:
		if (!m_lane_ok(m, t, L) || m->lane[L].cap)
			return -1;
		if (o->k == OP_SDESTROY) {
			if (m->lane[L].kind != LK_CREATED)
				return -1;
			m->lane[L].alive = 0;
		} else if (o->k == OP_SSYNC) {
			m_complete_lane(m, t, L);
		}
		return 0;
	case OP_ECREATE:
		if (o->a < 0 || o->a >= MAXE || m->ev[o->a].made)
			return -1;
		if (o->a >= m->nev)
			m->nev = o->a + 1;
		m->ev[o->a] = (struct mev){ .made = 1, .live = 1, .dev = dev, .thr = t, .lane = -1 };
		return 0;
	case OP_EDESTROY:
	case OP_ESYNC:
	case OP_EQUERY:
	case OP_ERECORD:
	case OP_EWAIT: {
		struct mev *E;

		if (o->a < 0 || o->a >= m->nev || !m->ev[o->a].live || m->ev[o->a].thr != t)
			return -1;
		E = &m->ev[o->a];
		if (o->k == OP_EDESTROY)
			E->live = 0;
		else if (o->k == OP_ESYNC)
			vc_join(&m->th[t].h, &E->vc);
		else if (o->k == OP_EQUERY)
			m_capture_refuses(m);
		else if (!m_lane_ok(m, t, L) || E->dev != dev || m->lane[L].cap)
			return -1;
		else if (o->k == OP_ERECORD) {
			v = lane_next(m, L);
			E->seq = lane_commit(m, L, &v);
			E->vc = v;
			E->lane = L;
		} else {
			/* A stream op itself: a query may see it pending. */
			v = lane_next(m, L);
			vc_join(&v, &E->vc);
			lane_commit(m, L, &v);
		}
		return 0;
	}
	case OP_DSYNC:
		m_device_sync(m, t, dev);
		return 0;
	case OP_RESET:
		/* One thread; nothing of another device may still use this one's
		 * memory, and the device's own work is waited for first. */
		if (m->single != t)
			return -1;
		for (int b = 0; b < m->nbuf; b++) {
			struct mbuf *B = &m->buf[b];
			if (!B->live)
				continue;
			if (B->reg)
				return -1; /* what a reset does to registrations: not measured */
			for (int i = 0; i < B->nacc; i++)
				if (!acc_done(m, t, &B->acc[i]) &&
				    ((B->mem != MEM_PAGEABLE && B->dev == dev) || m->lane[B->acc[i].lane].dev == dev))
					return -1;
		}
		for (int b = 0; b < m->nbuf; b++)
			if (m->buf[b].mem != MEM_PAGEABLE && m->buf[b].dev == dev)
				m->buf[b].live = 0;
		for (int i = NFIX; i < m->nlane; i++)
			if (m->lane[i].dev == dev)
				m->lane[i].alive = 0;
		for (int i = 0; i < m->nev; i++)
			if (m->ev[i].dev == dev)
				m->ev[i].live = 0;
		return 0;
	case OP_LASTERR:
		return 0;
	case OP_QUERY:
		return m_claim(m, t, o->a) || (o->b && m->buf[o->a].size < 2) || o->c < 0 || o->c > 2 ? -1 : 0;
	case OP_REG:
	case OP_UNREG:
		/* Measured on the H200 (tests/gpu/gpu_errors.cu): a registration
		 * inside a pinned block is refused with 1, and so is an
		 * unregistration of a pinned block's base or interior or of a
		 * registered range's interior.  Across devices nothing was
		 * measured: only where the block or the registration may be used. */
		if (m_claim(m, t, o->a))
			return -1;
		A = &m->buf[o->a];
		if (A->mem == MEM_DEVICE || (o->k == OP_REG && (o->c & ~(cudaHostRegisterPortable | cudaHostRegisterMapped))) ||
		    (o->k == OP_UNREG && o->b && A->size < 2))
			return -1;
		if (A->mem == MEM_PINNED)
			return m_buf_on_dev(m, o->a, dev) ? 0 : -1;
		if (o->k == OP_REG && !A->pages)
			return -1; /* pages shared with other data: not modelled */
		if (A->reg && A->dev != dev)
			return -1;
		if (o->k == OP_REG ? A->reg : !A->reg || o->b)
			return 0; /* 712, 713 or 1: nothing changes */
		/* No access in flight across the change of kind. */
		CONFLICT(m_conflict(m, t, o->a, 1, NULL));
		A->reg = o->k == OP_REG;
		A->dev = dev;
		A->flags = A->reg ? o->c : 0;
		return 0;
	case OP_CBEGIN:
		if (m->single != t || m->capturing >= 0 || !m_lane_ok(m, t, L) ||
		    m->lane[L].kind != LK_CREATED || o->b < 0 || o->b > 2)
			return -1;
		m->capturing = L;
		m->lane[L].cap = 1;
		m->lane[L].capmode = o->b;
		m->lane[L].capbad = 0;
		return 0;
	case OP_CEND:
		if (m->capturing != L)
			return -1;
		m->capturing = -1;
		m->lane[L].cap = 0;
		return 0;
	}
	return -1;
}

/* Whether an event or stream query's answer is known (then it goes into the
 * transcript as is; otherwise NotReady and success read the same). */
static int m_query_known(const struct model *m, const struct op *o)
{
	int t = o->t;

	if (o->k == OP_EQUERY) {
		const struct mev *E = &m->ev[o->a];
		return E->lane < 0 || m->th[t].h.c[E->lane] >= E->seq;
	}
	return m->lane[o->c].kind != LK_LEGACY && m->th[t].h.c[o->c] >= m->lane[o->c].seq;
}

/* ---- the generator */

static uint64_t rng_s;

/* splitmix64's next value of the stream *s. */
static uint64_t mix_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rnd(void)
{
	return mix_next(&rng_s);
}

/* With one device, a reset where one may go is emitted 1 time in
 * reset_div (FUZZ_RESET_DIV, default 3).  On a GPU a reset and the context
 * the next call makes cost ~180 ms: run-gpu.sh asks for fewer. */
static unsigned reset_div = 3;

static unsigned rn(unsigned n)
{
	return n ? (unsigned)(rnd() % n) : 0;
}

/* The driver forms (the op's delay, above) are drawn from a stream of their
 * own, so that a seed's program is the one it was before they came, some of
 * its operations spelt the driver's way. */
static uint64_t drv_s;

static int g_drv_form(void)
{
	return (mix_next(&drv_s) & 3) == 0;
}

struct gen {
	struct prog *p;
	struct model m;
	size_t sizes[16]; /* recent sizes, so that the cache reuses blocks */
	int nsizes;
	/* Each thread's recently used buffers and stream: operations that
	 * follow each other on the same data and stream find more bugs. */
	int recent[MAXT][4], last_lane[MAXT];
	size_t next_size; /* a freed block's size, asked for again soon */
};

static int g_push(struct gen *g, struct op o)
{
	struct model save;

	if (g->p->n >= MAXOPS - 1)
		return -1;
	save = g->m;
	if (m_apply(&g->m, &o, NULL)) {
		g->m = save;
		return -1;
	}
	if ((o.k == OP_ALLOC && o.b <= API_MALLOCHOST) || o.k == OP_COPY || o.k == OP_REG || o.k == OP_UNREG ||
	    (o.k == OP_QUERY && o.c != 1) || (o.k == OP_FREE && g->m.buf[o.a].mem == MEM_PINNED))
		o.delay = (unsigned)g_drv_form();
	g->p->op[g->p->n++] = o;
	if (o.k >= OP_ALLOC && o.k <= OP_HOSTFN) {
		int *r = g->recent[o.t];
		memmove(r + 1, r, 3 * sizeof(*r));
		r[0] = o.a;
		if (o.k >= OP_COPY && o.b >= 0) {
			memmove(r + 1, r, 3 * sizeof(*r));
			r[0] = o.b;
		}
	}
	if (o.k >= OP_COPY && o.k <= OP_HOSTFN && o.c >= NFIX)
		g->last_lane[o.t] = o.c;
	return 0;
}

static size_t g_size(struct gen *g)
{
	size_t s;

	if (g->next_size) {
		s = g->next_size;
		g->next_size = 0;
		return s;
	}
	if (g->nsizes && rn(10) < 4)
		return g->sizes[rn(g->nsizes)];
	switch (rn(4)) {
	case 0: s = 1 + rn(4096); break;
	case 1: s = 4096 + rn(256 << 10); break;
	case 2: s = (256u << 10) + rn(1u << 20); break;
	default: s = (1u << 20) + rn(MAXSIZE - (1u << 20)); break;
	}
	if (rn(2))
		s = (s + 4095) & ~(size_t)4095;
	if (s > MAXSIZE)
		s = MAXSIZE;
	g->sizes[g->nsizes < 16 ? (unsigned)g->nsizes++ : rn(16)] = s;
	return s;
}

/* A live buffer the thread may touch, matching mask (1 << mem), or -1.
 * ANYDEV in mask: pinned memory of any device (a free may come from one). */
#define ANYDEV 0x100u
static int g_on_dev(struct gen *g, int b, int t, unsigned mask)
{
	if ((mask & ANYDEV) && g->m.buf[b].mem == MEM_PINNED)
		return 1;
	return m_buf_on_dev(&g->m, b, g->m.th[t].dev);
}

static int g_buf(struct gen *g, int t, unsigned mask)
{
	int cand[MAXB], n = 0;

	for (int i = 0; i < 4 && rn(5) < 3; i++) {
		int b = g->recent[t][rn(4)];
		struct mbuf *B = &g->m.buf[b];
		if (B->live && (mask & (1u << B->mem)) && (B->claim_ph != g->m.phase || B->claim_t == t) &&
		    g_on_dev(g, b, t, mask))
			return b;
	}
	for (int b = 0; b < g->m.nbuf; b++) {
		struct mbuf *B = &g->m.buf[b];
		if (B->live && (mask & (1u << B->mem)) && (B->claim_ph != g->m.phase || B->claim_t == t) &&
		    g_on_dev(g, b, t, mask))
			cand[n++] = b;
	}
	return n ? cand[rn(n)] : -1;
}

/* A stream lane of thread t on its device. */
static int g_lane(struct gen *g, int t, int *spell)
{
	int cand[MAXL], n = 0, dev = g->m.th[t].dev;

	if (rn(2) && m_lane_ok(&g->m, t, g->last_lane[t]) && !g->m.lane[g->last_lane[t]].cap) {
		*spell = (int)rn(2);
		return g->last_lane[t];
	}
	cand[n++] = lane_fixed(LK_LEGACY, dev, t);
	cand[n++] = lane_fixed(LK_PTDS, dev, t);
	for (int i = NFIX; i < g->m.nlane; i++)
		if (m_lane_ok(&g->m, t, i) && !g->m.lane[i].cap)
			cand[n++] = i, cand[n++] = i;
	n = cand[rn(n)];
	*spell = g->m.lane[n].kind == LK_CREATED ? (int)rn(2) : (int)rn(3);
	return n;
}

static int g_event(struct gen *g, int t, int dev)
{
	for (int i = 0; i < g->m.nev; i++)
		if (g->m.ev[i].live && g->m.ev[i].thr == t && (dev < 0 || g->m.ev[i].dev == dev) && rn(2))
			return i;
	if (dev >= 0 && dev != g->m.th[t].dev)
		return -1;
	if (g_push(g, (struct op){ .k = OP_ECREATE, .t = t, .a = g->m.nev, .b = (int)rn(3) }))
		return -1;
	return g->m.nev - 1;
}

/* Make the access race-free: synchronize with the pending access *a in one
 * of the ways the runtime orders work, chosen at random. */
static int g_fix(struct gen *g, int t, const struct macc *a, int dev_lane)
{
	struct mlane *l = &g->m.lane[a->lane];
	int here = g->m.th[t].dev, own = l->thr == t && l->alive && l->dev == here && !l->cap;
	int ev, r = (int)rn(10);

	if (own && r < 4)
		return g_push(g, (struct op){ .k = OP_SSYNC, .t = t, .c = a->lane,
					      .e = l->kind == LK_CREATED ? (int)rn(2) : (int)rn(3) });
	if (own && r < 8 && (ev = g_event(g, t, l->dev)) >= 0) {
		if (g_push(g, (struct op){ .k = OP_ERECORD, .t = t, .a = ev, .c = a->lane, .e = (int)rn(2) }))
			return -1;
		if (dev_lane >= 0 && g->m.lane[dev_lane].dev == l->dev && rn(2))
			return g_push(g, (struct op){ .k = OP_EWAIT, .t = t, .a = ev, .c = dev_lane, .e = (int)rn(2) });
		return g_push(g, (struct op){ .k = OP_ESYNC, .t = t, .a = ev });
	}
	if (l->dev != here) {
		if (g_push(g, (struct op){ .k = OP_SETDEV, .t = t, .a = l->dev }) ||
		    g_push(g, (struct op){ .k = OP_DSYNC, .t = t }))
			return -1;
		return g_push(g, (struct op){ .k = OP_SETDEV, .t = t, .a = here });
	}
	return g_push(g, (struct op){ .k = OP_DSYNC, .t = t });
}

/* Push o, first synchronizing whatever it would race with. */
static int g_emit(struct gen *g, struct op o)
{
	for (int tries = 0; tries < 8; tries++) {
		struct model save = g->m;
		struct macc why;
		int r = m_apply(&g->m, &o, &why);

		g->m = save;
		if (r == -1)
			return -1;
		if (r == 0)
			return g_push(g, o);
		if (g->m.capturing >= 0)
			return -1;
		if (g_fix(g, o.t, &why, o.k == OP_KERNEL || o.k == OP_HOSTFN || o.k == OP_MEMSET ||
							  (o.k == OP_COPY && o.d)
						  ? o.c
						  : -1))
			return -1;
	}
	return -1;
}

static void g_range(struct gen *g, int dst, int src, struct op *o, size_t cap)
{
	size_t ds = g->m.buf[dst].size, ss = src >= 0 ? g->m.buf[src].size : ds, n = ds < ss ? ds : ss;

	if (n > cap)
		n = cap;
	o->len = rn(3) ? n : 1 + rn((unsigned)n);
	o->o1 = rn((unsigned)(ds - o->len + 1));
	o->o2 = src >= 0 ? rn((unsigned)(ss - o->len + 1)) : 0;
}

static const unsigned host_flags[] = {
	cudaHostAllocDefault, cudaHostAllocMapped, cudaHostAllocPortable, cudaHostAllocWriteCombined,
	cudaHostAllocMapped | cudaHostAllocPortable, cudaHostAllocMapped | cudaHostAllocWriteCombined,
	cudaHostAllocMapped | cudaHostAllocPortable | cudaHostAllocWriteCombined,
};

/* The buffers of a copy of one of COPY's kinds (H2D from pageable or
 * pinned memory, D2H into either, D2D) that thread t may use, or -1. */
static void g_copy_pair(struct gen *g, int t, int *d, int *s, unsigned *smask, unsigned *dmask)
{
	int kind = (int)rn(5);

	*smask = kind == 0 ? 1u << MEM_PAGEABLE : kind == 1 ? 1u << MEM_PINNED : 1u << MEM_DEVICE;
	*dmask = kind < 2 || kind == 4 ? 1u << MEM_DEVICE : kind == 2 ? 1u << MEM_PAGEABLE : 1u << MEM_PINNED;
	*s = g_buf(g, t, *smask);
	*d = g_buf(g, t, *dmask);
}

/* A cudaMemcpyBatchAsync of 1 to 4 operands on one stream, no buffer used
 * twice (the operands have no order among themselves); now and then on
 * the legacy stream, which the runtime refuses. */
static void g_batch(struct gen *g, int t)
{
	int used[8], nused = 0, e, L = g_lane(g, t, &e), n = 1 + (int)rn(4), order = 1 + (int)rn(3);
	unsigned one = rn(3) == 0 ? 2u : 0u, sm, dm;

	if (g->m.lane[L].kind == LK_LEGACY && rn(4))
		return;
	for (int i = 0, tries = 0; i < n && tries < 4 * n; tries++) {
		int d, s, clash = 0;
		struct op o = { .k = OP_BATCH, .t = t, .c = L, .e = e, .key = one | (i == n - 1) };

		g_copy_pair(g, t, &d, &s, &sm, &dm);
		for (int k = 0; k < nused; k++)
			clash |= used[k] == d || used[k] == s;
		if (s < 0 || d < 0 || s == d || clash)
			continue;
		o.a = d, o.b = s, o.d = one ? order : 1 + (int)rn(3);
		g_range(g, d, s, &o, MAXSIZE);
		if (g_emit(g, o) == 0) {
			used[nused++] = d;
			used[nused++] = s;
			i++;
		}
	}
}

/* One random operation of thread t. */
static void g_step(struct gen *g, int t)
{
	struct model *m = &g->m;
	struct op o = { .t = t, .b = -1 };
	int r = (int)rn(110), dev = m->th[t].dev, b;

	if (m->capturing >= 0) {
		int L = m->capturing;
		if (r < 15 || m->lane[L].capbad) {
			g_push(g, (struct op){ .k = OP_CEND, .t = t, .c = L, .e = (int)rn(2) });
			return;
		}
		if (r < 35) {
			o.k = OP_ALLOC, o.a = m->nbuf, o.b = (int)rn(2), o.c = (int)host_flags[rn(7)], o.len = g_size(g);
		} else if (r < 50 && (b = g_buf(g, t, 1u << MEM_PINNED)) >= 0) {
			o.k = OP_FREE, o.a = b;
		} else if (r < 60 && m->nev) {
			o.k = OP_EQUERY, o.a = (int)rn(m->nev);
		} else if (r < 65) {
			o.k = OP_LASTERR, o.a = (int)rn(2);
		} else if ((b = g_buf(g, t, 1u << MEM_DEVICE | 1u << MEM_PINNED)) >= 0) {
			o.k = OP_KERNEL, o.a = b, o.c = L, o.e = (int)rn(2), o.key = (unsigned)rnd(), o.b = g_buf(g, t, 1u << MEM_DEVICE);
			g_range(g, b, o.b, &o, KMAX);
		}
		g_push(g, o);
		return;
	}
	if (r >= 106) { /* what the runtime says of a buffer */
		if ((b = g_buf(g, t, 7)) >= 0)
			g_push(g, (struct op){ .k = OP_QUERY, .t = t, .a = b, .b = (int)rn(2), .c = (int)rn(3) });
		return;
	}
	if (r >= 100) { /* registration: mostly of whole pages, now and then an error */
		if ((b = g_buf(g, t, 1u << MEM_PAGEABLE | 1u << MEM_PINNED)) < 0)
			return;
		if (m->buf[b].mem == MEM_PAGEABLE && !m->buf[b].pages && rn(4)) {
			g_push(g, (struct op){ .k = OP_ALLOC, .t = t, .a = m->nbuf, .b = API_MALLOC, .d = 1, .len = g_size(g) });
			return;
		}
		if (m->buf[b].reg ? rn(3) == 0 : rn(4) != 0)
			g_emit(g, (struct op){ .k = OP_REG, .t = t, .a = b, .c = (int)rn(4) });
		else
			g_emit(g, (struct op){ .k = OP_UNREG, .t = t, .a = b, .b = rn(6) == 0 });
		return;
	}
	if (r < 10) { /* allocate */
		unsigned api = rn(10);
		o.k = OP_ALLOC;
		o.a = m->nbuf;
		o.b = api < 5 ? API_HOSTALLOC : api < 6 ? API_MALLOCHOST : api < 8 ? API_MALLOC : API_DEVICE;
		o.c = (int)host_flags[rn(7)];
		o.d = o.b == API_MALLOC && rn(2);
		o.len = g_size(g);
		if (g_push(g, o))
			return;
		if (o.b == API_DEVICE) {
			struct op ms = { .k = OP_MEMSET, .t = t, .a = o.a, .d = (int)rn(2), .key = rn(256), .len = o.len };
			ms.c = g_lane(g, t, &ms.e);
			if (!ms.d) {
				ms.e = (int)rn(2);
				ms.c = lane_fixed(ms.e ? LK_PTDS : LK_LEGACY, dev, t);
			}
			g_emit(g, ms);
		} else if (rn(3))
			g_emit(g, (struct op){ .k = OP_FILL, .t = t, .a = o.a, .key = (unsigned)rnd() });
		return;
	}
	if (r < 17) { /* free, with the pending work still running (the runtime waits) */
		/* Often a buffer another thread used last (a hand-over across a
		 * phase barrier, maybe from another device). */
		int u = (int)rn(m->nthr), c = g->recent[u][rn(4)];
		if (u != t && c < m->nbuf && m->buf[c].live && m->buf[c].mem == MEM_PINNED &&
		    (m->buf[c].claim_ph != m->phase || m->buf[c].claim_t == t) && rn(2))
			b = c;
		else if ((b = g_buf(g, t, 7 | ANYDEV)) < 0)
			return;
		if (rn(3) == 0)
			g_emit(g, (struct op){ .k = OP_CHECK, .t = t, .a = b });
		if (m->buf[b].reg)
			g_emit(g, (struct op){ .k = OP_UNREG, .t = t, .a = b });
		if (g_emit(g, (struct op){ .k = OP_FREE, .t = t, .a = b }) == 0 && rn(2))
			g->next_size = m->buf[b].size;
		return;
	}
	if (r < 19) {
		if ((b = g_buf(g, t, 7)) >= 0)
			g_emit(g, (struct op){ .k = OP_BADFREE, .t = t, .a = b, .b = (int)rn(2) });
		return;
	}
	if (r < 25) {
		if ((b = g_buf(g, t, 3)) >= 0)
			g_emit(g, (struct op){ .k = OP_FILL, .t = t, .a = b, .key = (unsigned)rnd() });
		return;
	}
	if (r < 31) {
		if ((b = g_buf(g, t, 7)) >= 0)
			g_emit(g, (struct op){ .k = OP_CHECK, .t = t, .a = b });
		return;
	}
	if (r < 54) { /* copy */
		int s, d;
		unsigned smask, dmask;

		if (rn(4) == 0) {
			g_batch(g, t);
			return;
		}
		g_copy_pair(g, t, &d, &s, &smask, &dmask);
		if (s < 0 || d < 0 || s == d) {
			unsigned need = s < 0 ? smask : dmask;
			o.k = OP_ALLOC, o.a = m->nbuf, o.len = g_size(g), o.c = (int)host_flags[rn(7)];
			o.b = need == 1u << MEM_PAGEABLE ? API_MALLOC : need == 1u << MEM_DEVICE ? API_DEVICE : API_HOSTALLOC;
			if (o.b != API_DEVICE)
				g_push(g, o);
			return;
		}
		o.k = OP_COPY, o.a = d, o.b = s, o.d = (int)rn(2);
		o.c = g_lane(g, t, &o.e);
		if (!o.d)
			o.e = (int)rn(2);
		g_range(g, d, s, &o, MAXSIZE);
		g_emit(g, o);
		return;
	}
	if (r < 57) {
		if ((b = g_buf(g, t, 1u << MEM_DEVICE)) < 0)
			return;
		o.k = OP_MEMSET, o.a = b, o.d = (int)rn(2), o.key = rn(256);
		o.c = g_lane(g, t, &o.e);
		if (!o.d) {
			o.e = (int)rn(2);
			o.c = lane_fixed(o.e ? LK_PTDS : LK_LEGACY, dev, t);
		}
		g_range(g, b, -1, &o, MAXSIZE);
		g_emit(g, o);
		return;
	}
	if (r < 66) { /* kernel, zero-copy (pinned or registered memory) or on device memory */
		unsigned km = 1u << MEM_PINNED | 1u << MEM_DEVICE | (rn(3) ? 0u : 1u << MEM_PAGEABLE);
		if ((b = g_buf(g, t, km)) < 0 || !m_zero_copy(m, b, dev))
			return;
		o.k = OP_KERNEL, o.a = b, o.key = (unsigned)rnd(), o.delay = rn(4) ? rn(3000) : 0;
		if (rn(10) == 0)
			o.delay = 10000 + rn(10000); /* a long one: wide race windows */
		o.b = g_buf(g, t, km);
		if (o.b == b || (o.b >= 0 && !m_zero_copy(m, o.b, dev)) || rn(4) == 0)
			o.b = -1;
		o.c = g_lane(g, t, &o.e);
		g_range(g, b, o.b, &o, KMAX);
		g_emit(g, o);
		return;
	}
	if (r < 72) { /* host function writing host memory */
		if ((b = g_buf(g, t, 3)) < 0)
			return;
		o.k = OP_HOSTFN, o.a = b, o.key = (unsigned)rnd();
		o.b = rn(2) ? g_buf(g, t, 3) : -1;
		if (o.b == b)
			o.b = -1;
		o.c = g_lane(g, t, &o.e);
		g_range(g, b, o.b, &o, KMAX);
		if (rn(3) == 0) {
			/* A slow producer: a kernel of 1-3 ms queued first on the
			 * stream, so that a consumer that does not wait for the host
			 * function reads the bytes from before it. */
			int kb = g_buf(g, t, 1u << MEM_DEVICE);
			struct op k = { .k = OP_KERNEL, .t = t, .a = kb, .b = -1, .c = o.c, .e = o.e,
					.key = (unsigned)rnd(), .delay = 1000 + rn(2000), .len = 1 };
			if (kb >= 0 && m_zero_copy(m, kb, dev))
				g_emit(g, k);
		}
		if (g_emit(g, o) == 0 && rn(2)) {
			/* A consumer right behind the producer: a copy of what the
			 * host function writes, synchronous or not, or a batch's
			 * operand in any source order. */
			int d = g_buf(g, t, 1u << MEM_DEVICE);
			struct op c = { .k = OP_COPY, .t = t, .a = d, .b = b, .d = (int)rn(2), .c = o.c, .e = o.e };
			if (d < 0)
				return;
			if (rn(3) == 0)
				c.k = OP_BATCH, c.d = 1 + (int)rn(3), c.key = 1;
			else if (!c.d)
				c.e = g->m.lane[o.c].kind == LK_PTDS;
			c.len = o.len;
			c.o2 = o.o1;
			if (c.len > g->m.buf[d].size)
				c.len = g->m.buf[d].size;
			g_emit(g, c);
		}
		return;
	}
	if (r < 76) {
		if (m->nlane < MAXL && rn(2))
			g_push(g, (struct op){ .k = OP_SCREATE, .t = t, .a = m->nlane, .b = (int)rn(2), .c = (int)rn(3) });
		else {
			int e, L = g_lane(g, t, &e);
			if (m->lane[L].kind == LK_CREATED)
				g_push(g, (struct op){ .k = OP_SDESTROY, .t = t, .c = L });
		}
		return;
	}
	if (r < 84) { /* synchronizations and queries, at random */
		int e, L = g_lane(g, t, &e), ev = g_event(g, t, -1);
		switch (rn(7)) {
		case 0: g_push(g, (struct op){ .k = OP_SSYNC, .t = t, .c = L, .e = e }); break;
		case 1: g_push(g, (struct op){ .k = OP_SQUERY, .t = t, .c = L, .e = e }); break;
		case 2: g_push(g, (struct op){ .k = OP_DSYNC, .t = t }); break;
		case 3: g_push(g, (struct op){ .k = OP_ERECORD, .t = t, .a = ev, .c = L, .e = e > 1 ? 1 : e }); break;
		case 4: g_push(g, (struct op){ .k = OP_EWAIT, .t = t, .a = ev, .c = L, .e = e > 1 ? 1 : e }); break;
		case 5: g_push(g, (struct op){ .k = OP_EQUERY, .t = t, .a = ev }); break;
		default: g_push(g, (struct op){ .k = rn(4) ? OP_ESYNC : OP_EDESTROY, .t = t, .a = ev }); break;
		}
		return;
	}
	if (r < 88) {
		g_push(g, (struct op){ .k = OP_LASTERR, .t = t, .a = (int)rn(2) });
		return;
	}
	if (r < 93) {
		if (m->ndev > 1)
			g_push(g, (struct op){ .k = OP_SETDEV, .t = t, .a = (int)rn(m->ndev) });
		return;
	}
	if (r < 97) { /* capture, one thread at a time */
		int e, L = g_lane(g, t, &e);
		if (m->single == t && m->lane[L].kind == LK_CREATED)
			g_push(g, (struct op){ .k = OP_CBEGIN, .t = t, .c = L, .b = (int)rn(3), .e = e });
		return;
	}
	if (m->single == t && (m->ndev > 1 || rn(reset_div) == 0)) {
		/* Device reset: first wait for whatever still uses the device's
		 * memory (on any device), and read what the device's buffers hold. */
		if (g_push(g, (struct op){ .k = OP_DSYNC, .t = t }))
			return;
		for (int i = 0; i < m->nbuf; i++)
			if (m->buf[i].live && m->buf[i].reg)
				g_emit(g, (struct op){ .k = OP_UNREG, .t = t, .a = i });
		for (int i = 0; i < m->nbuf; i++) {
			struct mbuf *B = &m->buf[i];
			if (!B->live || B->mem == MEM_PAGEABLE || B->dev != dev)
				continue;
			for (int j = 0; j < B->nacc; j++)
				if (!acc_done(m, t, &B->acc[j]) && g_fix(g, t, &B->acc[j], -1))
					return;
			if (rn(2))
				g_emit(g, (struct op){ .k = OP_CHECK, .t = t, .a = i });
		}
		g_push(g, (struct op){ .k = OP_RESET, .t = t });
	}
}

static void generate(struct prog *p, uint64_t seed, int nops, int ndev, int nthr)
{
	static struct gen g; /* large: not on a worker's stack */

	memset(&g, 0, sizeof(g));
	rng_s = seed * 0x2545f4914f6cdd1dull + 1;
	drv_s = seed * 0x9e3779b97f4a7c15ull + 7;
	p->ndev = ndev;
	p->nthr = nthr;
	p->n = 0;
	g.p = p;
	m_init(&g.m, ndev, nthr);
	while (p->n < nops) {
		int single = nthr == 1 || rn(3) == 0 ? (int)rn(nthr) : -1;
		int len = 4 + (int)rn(40);

		if (g.m.capturing >= 0)
			g_push(&g, (struct op){ .k = OP_CEND, .t = g.m.single, .c = g.m.capturing });
		if (g_push(&g, (struct op){ .k = OP_PHASE, .a = single }))
			break;
		for (int i = 0; i < len && p->n < nops; i++)
			g_step(&g, single >= 0 ? single : (int)rn(nthr));
	}
	if (g.m.capturing >= 0)
		g_push(&g, (struct op){ .k = OP_CEND, .t = g.m.single, .c = g.m.capturing });
	g_push(&g, (struct op){ .k = OP_END });
}

/* The model's verdict on a whole program (replayed or shrunk). */
static int validate(const struct prog *p, struct model *m)
{
	m_init(m, p->ndev, p->nthr);
	for (int i = 0; i < p->n; i++)
		if (m_apply(m, &p->op[i], NULL))
			return i + 1;
	return m->capturing >= 0 ? p->n + 1 : 0;
}

/* ---- the program's text form (one op a line) */

static void prog_write_ops(FILE *f, const struct prog *p)
{
	for (int i = 0; i < p->n; i++) {
		const struct op *o = &p->op[i];
		fprintf(f, "%s %d %d %d %d %d %d %u %u %zu %zu %zu\n", op_names[o->k], o->t, o->a, o->b, o->c,
			o->d, o->e, o->key, o->delay, o->o1, o->o2, o->len);
	}
}

static void prog_write(FILE *f, const struct prog *p)
{
	fprintf(f, "# pincache fuzz case (tests/fuzz/README.md)\ndevices %d\nthreads %d\n", p->ndev, p->nthr);
	prog_write_ops(f, p);
}

static int prog_read(const char *path, struct prog *p)
{
	FILE *f = fopen(path, "r");
	char line[512], name[32];

	if (!f)
		return -1;
	memset(p, 0, sizeof(*p));
	p->ndev = p->nthr = 1;
	while (fgets(line, sizeof(line), f)) {
		struct op o = { 0 };
		int k;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "devices %d", &p->ndev) == 1 || sscanf(line, "threads %d", &p->nthr) == 1)
			continue;
		if (p->n >= MAXOPS) {
			fprintf(stderr, "fuzz: %s: more than %d operations\n", path, MAXOPS);
			fclose(f);
			return -1;
		}
		if (sscanf(line, "%31s %d %d %d %d %d %d %u %u %zu %zu %zu", name, &o.t, &o.a, &o.b, &o.c, &o.d,
			   &o.e, &o.key, &o.delay, &o.o1, &o.o2, &o.len) != 12)
			goto bad;
		for (k = 0; k < NOPKINDS && strcmp(name, op_names[k]); k++)
			;
		if (k == NOPKINDS)
			goto bad;
		o.k = k;
		p->op[p->n++] = o;
	}
	fclose(f);
	return p->nthr < 1 || p->nthr > MAXT || p->ndev < 1 || p->ndev > MAXD ? -1 : 0;
bad:
	fprintf(stderr, "fuzz: %s: bad line: %s", path, line);
	fclose(f);
	return -1;
}

/* ---- the executor */

struct xbuf {
	unsigned char *p; /* host address, or device pointer */
	unsigned char *dp; /* device pointer of mapped pinned memory */
	size_t size;
	int mem, api, gone; /* gone: freed, or its device reset */
};

struct hargs {
	unsigned char *dst;
	const unsigned char *src;
	size_t n;
	unsigned key;
};

static struct exec {
	const struct prog *p;
	struct model m; /* replayed alongside, for the query rule */
	struct xbuf buf[MAXB];
	cudaStream_t stream[MAXL];
	cudaEvent_t ev[MAXE];
	void *args[MAXOPS]; /* kernel and host function arguments, freed at the end */
	int verbose;
	/* Each thread's transcript of the current phase. */
	struct tlog {
		char *s;
		size_t n, cap;
	} log[MAXT];
	uint64_t hash;
	/* The worker threads and the phase they run. */
	pthread_barrier_t go, done;
	int from, to, quit;
} X;

static void tlog_add(int t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tlog_add(int t, const char *fmt, ...)
{
	struct tlog *l = &X.log[t];
	va_list ap;
	int n;

	if (l->cap - l->n < 256) {
		l->cap = l->cap * 2 + 4096;
		l->s = realloc(l->s, l->cap);
		if (!l->s)
			abort();
	}
	va_start(ap, fmt);
	n = vsnprintf(l->s + l->n, l->cap - l->n, fmt, ap);
	va_end(ap);
	if (n > 0)
		l->n += (size_t)n < l->cap - l->n ? (size_t)n : l->cap - l->n - 1;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ c[i]) * 0x100000001b3ull;
	return h;
}

static void flush_logs(void)
{
	for (int t = 0; t < MAXT; t++) {
		struct tlog *l = &X.log[t];
		X.hash = fnv(X.hash, l->s ? l->s : "", l->n);
		if (X.verbose && l->n)
			fwrite(l->s, 1, l->n, stdout);
		l->n = 0;
	}
}

static void fill_bytes(unsigned char *p, size_t n, unsigned key)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(key * 31u + i * 7u + (i >> 8) * 13u);
}

static void CUDART_CB hostfn(void *arg)
{
	struct hargs *h = arg;

	for (size_t i = 0; i < h->n; i++)
		h->dst[i] = h->src ? (unsigned char)((h->src[i] ^ h->key) + 1u) : (unsigned char)(h->key + i * 3u);
}

/* The stream handle of lane L, as op o spells it; *ptsz: use the _ptsz form. */
static cudaStream_t x_stream(const struct op *o, int L, int *ptsz)
{
	const struct mlane *l = &X.m.lane[L];

	*ptsz = o->e == 1;
	if (l->kind == LK_CREATED)
		return X.stream[L];
	if (l->kind == LK_LEGACY)
		return o->e ? cudaStreamLegacy : (cudaStream_t)0;
	if (o->e == 0)
		return cudaStreamPerThread;
	*ptsz = 1;
	return o->e == 1 ? (cudaStream_t)0 : cudaStreamPerThread;
}

static enum cudaMemcpyKind x_kind(int md, int ms)
{
	if (md == MEM_DEVICE)
		return ms == MEM_DEVICE ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice;
	return cudaMemcpyDeviceToHost;
}

/* The driver forms, from the runtime's cudaGetDriverEntryPointByVersion
 * ([1]: asked for with cudaEnablePerThreadDefaultStream, the _ptds and
 * _ptsz ABIs). */
static struct {
	CUresult (*host_alloc)(void **, size_t, unsigned int);
	CUresult (*alloc_host)(void **, size_t);
	CUresult (*free_host)(void *);
	CUresult (*htod[2])(CUdeviceptr, const void *, size_t);
	CUresult (*dtoh[2])(void *, CUdeviceptr, size_t);
	CUresult (*dtod[2])(CUdeviceptr, CUdeviceptr, size_t);
	CUresult (*htod_async[2])(CUdeviceptr, const void *, size_t, CUstream);
	CUresult (*dtoh_async[2])(void *, CUdeviceptr, size_t, CUstream);
	CUresult (*dtod_async[2])(CUdeviceptr, CUdeviceptr, size_t, CUstream);
	CUresult (*reg)(void *, size_t, unsigned int);
	CUresult (*unreg)(void *);
	CUresult (*get_flags)(unsigned int *, void *);
	CUresult (*dev_ptr)(CUdeviceptr *, void *, unsigned int);
} XD;

static void x_drv_get(const char *name, int pt, void *fn)
{
	enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
	void *f = NULL;

	if (cudaGetDriverEntryPointByVersion(name, &f, 12000,
					     pt ? cudaEnablePerThreadDefaultStream : cudaEnableLegacyStream, &st) ||
	    st != cudaDriverEntryPointSuccess || !f) {
		fprintf(stderr, "fuzz: the driver's %s%s could not be had\n", name, pt ? " (per-thread)" : "");
		exit(2);
	}
	memcpy(fn, &f, sizeof(f));
}

static void x_drv_resolve(void)
{
	x_drv_get("cuMemHostAlloc", 0, &XD.host_alloc);
	x_drv_get("cuMemAllocHost", 0, &XD.alloc_host);
	x_drv_get("cuMemFreeHost", 0, &XD.free_host);
	x_drv_get("cuMemHostRegister", 0, &XD.reg);
	x_drv_get("cuMemHostUnregister", 0, &XD.unreg);
	x_drv_get("cuMemHostGetFlags", 0, &XD.get_flags);
	x_drv_get("cuMemHostGetDevicePointer", 0, &XD.dev_ptr);
	for (int pt = 0; pt < 2; pt++) {
		x_drv_get("cuMemcpyHtoD", pt, &XD.htod[pt]);
		x_drv_get("cuMemcpyDtoH", pt, &XD.dtoh[pt]);
		x_drv_get("cuMemcpyDtoD", pt, &XD.dtod[pt]);
		x_drv_get("cuMemcpyHtoDAsync", pt, &XD.htod_async[pt]);
		x_drv_get("cuMemcpyDtoHAsync", pt, &XD.dtoh_async[pt]);
		x_drv_get("cuMemcpyDtoDAsync", pt, &XD.dtod_async[pt]);
	}
}

/* A COPY's driver form: synchronous (async 0) or on stream s. */
static int x_drv_copy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, int pt, int async,
		      cudaStream_t s)
{
	CUdeviceptr d = (CUdeviceptr)(uintptr_t)dst, sr = (CUdeviceptr)(uintptr_t)src;
	CUstream st = (CUstream)s;

	if (kind == cudaMemcpyHostToDevice)
		return async ? XD.htod_async[pt](d, src, n, st) : XD.htod[pt](d, src, n);
	if (kind == cudaMemcpyDeviceToHost)
		return async ? XD.dtoh_async[pt](dst, sr, n, st) : XD.dtoh[pt](dst, sr, n);
	return async ? XD.dtod_async[pt](d, sr, n, st) : XD.dtod[pt](d, sr, n);
}

/* B's bytes where the host can read them: B->p, or for device memory a
 * copy the caller frees (x_bytes_done); *e the copy's code. */
static unsigned char *x_bytes(const struct xbuf *B, cudaError_t *e)
{
	unsigned char *tmp;

	*e = cudaSuccess;
	if (B->mem != MEM_DEVICE)
		return B->p;
	tmp = malloc(B->size);
	if (!tmp)
		abort();
	*e = cudaMemcpy(tmp, B->p, B->size, cudaMemcpyDeviceToHost);
	return tmp;
}

static void x_bytes_done(const struct xbuf *B, unsigned char *bytes)
{
	if (bytes != B->p)
		free(bytes);
}

static uint64_t hash_buf(const struct xbuf *B, cudaError_t *e)
{
	unsigned char *bytes = x_bytes(B, e);
	uint64_t h = fnv(0xcbf29ce484222325ull, bytes, B->size);

	x_bytes_done(B, bytes);
	return h;
}

/* A pointer the runtime answered, as what it is to the one asked about q
 * and its buffer's start b (addresses differ from run to run). */
static unsigned x_rel(const void *p, const unsigned char *q, const unsigned char *b)
{
	return !p ? 0 : p == (const void *)q ? 1 : p == (const void *)b ? 2 : 3;
}

/* OP_QUERY: the runtime's code, its answer packed into *h. */
static cudaError_t x_query(const struct xbuf *A, const struct op *o, uint64_t *h)
{
	unsigned char *q = A->p + (o->b ? A->size / 2 : 0);
	struct cudaPointerAttributes at;
	unsigned flags = 0;
	void *dp = NULL;
	cudaError_t e;

	switch (o->c) {
	case 0:
		/* Not the Portable bit: the H200 answers a block under 2 MiB with
		 * that of the 2 MiB chunk the driver carved it from, whichever
		 * earlier allocation made that chunk (docs/runtime-facts.md,
		 * "cudaHostGetFlags and the driver's 2 MiB chunks"), and pincache's
		 * own allocations move the carving. */
		e = o->delay ? (cudaError_t)XD.get_flags(&flags, q) : cudaHostGetFlags(&flags, q);
		*h = flags & ~(unsigned)cudaHostAllocPortable;
		break;
	case 1:
		memset(&at, 0, sizeof(at));
		e = cudaPointerGetAttributes(&at, q);
		*h = (uint64_t)(unsigned)at.type | (uint64_t)(unsigned)(at.device + 16) << 8 |
		     (uint64_t)x_rel(at.devicePointer, q, A->p) << 16 | (uint64_t)x_rel(at.hostPointer, q, A->p) << 20;
		break;
	default:
		if (o->delay) {
			CUdeviceptr d = 0;

			e = (cudaError_t)XD.dev_ptr(&d, q, 0);
			dp = (void *)(uintptr_t)d;
		} else {
			e = cudaHostGetDevicePointer(&dp, q, 0);
		}
		*h = x_rel(dp, q, A->p);
		break;
	}
	return e;
}

/* A thread's batch operands, gathered until the call (OP_BATCH). */
#define XBMAX 8
static struct xbatch {
	int n, L, e, one, first;
	void *d[XBMAX];
	const void *s[XBMAX];
	size_t z[XBMAX];
	int ord[XBMAX];
} XB[MAXT];

static void x_batch_flush(int t)
{
	struct xbatch *b = &XB[t];
	struct cudaMemcpyAttributes at[XBMAX];
	size_t idx[XBMAX], na = (size_t)b->n;
	struct op o = { .e = b->e };
	int ptsz = 0, same = 1;
	cudaStream_t s;
	cudaError_t e;

	if (!b->n)
		return;
	for (int i = 0; i < b->n; i++) {
		memset(&at[i], 0, sizeof(at[i]));
		at[i].srcAccessOrder = (enum cudaMemcpySrcAccessOrder)b->ord[i];
		idx[i] = (size_t)i;
		same &= b->ord[i] == b->ord[0];
	}
	if (b->one && same)
		na = 1;
	s = x_stream(&o, b->L, &ptsz);
	e = (ptsz ? cudaMemcpyBatchAsync_ptsz : cudaMemcpyBatchAsync)(b->d, b->s, b->z, (size_t)b->n, at, idx, na, s);
	tlog_add(t, "%d t%d batch of %d rc=%d\n", b->first, t, b->n, (int)e);
	b->n = 0;
}

static void x_op(int i)
{
	const struct op *o = &X.p->op[i];
	int t = o->t, ptsz = 0, known = 0;
	cudaError_t e = cudaSuccess, e2 = cudaSuccess;
	struct xbuf *A = o->a >= 0 && o->a < MAXB ? &X.buf[o->a] : NULL;
	struct xbuf *B = o->b >= 0 && o->b < MAXB ? &X.buf[o->b] : NULL;
	cudaStream_t s = 0;
	uint64_t h = 0;
	void *p = NULL;

	/* The model runs in program order; threads of one phase touch disjoint
	 * parts of it, but it is one structure: serialize. */
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&mu);
	if (o->k == OP_EQUERY || o->k == OP_SQUERY)
		known = m_query_known(&X.m, o);
	pthread_mutex_unlock(&mu);
	if (o->k != OP_BATCH || (XB[t].n && (XB[t].L != o->c || XB[t].e != o->e)))
		x_batch_flush(t);

	switch (o->k) {
	case OP_SETDEV: e = cudaSetDevice(o->a); break;
	case OP_ALLOC:
		A->size = o->len;
		A->api = o->b;
		A->mem = o->b == API_MALLOC ? MEM_PAGEABLE : o->b == API_DEVICE ? MEM_DEVICE : MEM_PINNED;
		switch (o->b) {
		case API_HOSTALLOC:
			e = o->delay ? (cudaError_t)XD.host_alloc(&p, o->len, (unsigned)o->c)
				     : cudaHostAlloc(&p, o->len, (unsigned)o->c);
			break;
		case API_MALLOCHOST:
			e = o->delay ? (cudaError_t)XD.alloc_host(&p, o->len) : cudaMallocHost(&p, o->len);
			break;
		case API_MALLOC:
			if (o->d != 1)
				p = malloc(o->len ? o->len : 1);
			else if (posix_memalign(&p, 4096, (o->len + 4095) / 4096 * 4096 + !o->len * 4096))
				p = NULL;
			if (!p)
				abort();
			break;
		default: e = cudaMalloc(&p, o->len); break;
		}
		A->p = e ? NULL : p;
		A->gone = !A->p;
		if (A->p && A->mem == MEM_PINNED && (o->c & cudaHostAllocMapped) && o->b == API_HOSTALLOC) {
			e2 = cudaHostGetDevicePointer((void **)&A->dp, A->p, 0);
		}
		if (A->p && A->mem != MEM_DEVICE)
			memset(A->p, 0, o->len);
		break;
	case OP_FREE:
		if (A->gone)
			break;
		if (A->mem == MEM_PINNED)
			e = o->delay ? (cudaError_t)XD.free_host(A->p) : cudaFreeHost(A->p);
		else if (A->mem == MEM_DEVICE)
			e = cudaFree(A->p);
		else
			free(A->p);
		if (!e)
			A->gone = 1;
		else
			A->gone = 2; /* leaked: freed at the end */
		break;
	case OP_BADFREE:
		if (A->gone)
			break;
		e = cudaFreeHost(A->mem == MEM_PINNED || o->b ? A->p + 1 : A->p);
		break;
	case OP_FILL:
		if (!A->gone)
			fill_bytes(A->p, A->size, o->key);
		break;
	case OP_CHECK:
		if (!A->gone)
			h = hash_buf(A, &e);
		break;
	case OP_COPY:
		if (A->gone || B->gone)
			break;
		if (o->d == 0 && o->delay)
			e = (cudaError_t)x_drv_copy(A->p + o->o1, B->p + o->o2, o->len, x_kind(A->mem, B->mem), o->e == 1,
						    0, NULL);
		else if (o->d == 0)
			e = (o->e == 1 ? cudaMemcpy_ptds : cudaMemcpy)(A->p + o->o1, B->p + o->o2, o->len,
									 x_kind(A->mem, B->mem));
		else {
			s = x_stream(o, o->c, &ptsz);
			e = o->delay ? (cudaError_t)x_drv_copy(A->p + o->o1, B->p + o->o2, o->len, x_kind(A->mem, B->mem),
							       ptsz, 1, s)
				     : (ptsz ? cudaMemcpyAsync_ptsz : cudaMemcpyAsync)(A->p + o->o1, B->p + o->o2, o->len,
										       x_kind(A->mem, B->mem), s);
		}
		break;
	case OP_MEMSET:
		if (A->gone)
			break;
		if (o->d == 0)
			e = (o->e == 1 ? cudaMemset_ptds : cudaMemset)(A->p + o->o1, (int)o->key, o->len);
		else {
			s = x_stream(o, o->c, &ptsz);
			e = (ptsz ? cudaMemsetAsync_ptsz : cudaMemsetAsync)(A->p + o->o1, (int)o->key, o->len, s);
		}
		break;
	case OP_KERNEL: {
		struct fz_kargs *k = calloc(1, sizeof(*k));
		if (!k)
			abort();
		X.args[i] = k;
		if (A->gone || (B && B->gone))
			break;
		k->dst = (A->mem == MEM_DEVICE ? A->p : A->dp) + o->o1;
		k->src = B ? (B->mem == MEM_DEVICE ? B->p : B->dp) + o->o2 : NULL;
		k->n = o->len;
		k->key = o->key;
		s = x_stream(o, o->c, &ptsz);
		if (ptsz && s == 0)
			s = cudaStreamPerThread; /* kernels have no _ptsz form here */
		e = fz_kernel(s, k, o->delay);
		break;
	}
	case OP_HOSTFN: {
		struct hargs *k = calloc(1, sizeof(*k));
		if (!k)
			abort();
		X.args[i] = k;
		if (A->gone || (B && B->gone))
			break;
		*k = (struct hargs){ A->p + o->o1, B ? B->p + o->o2 : NULL, o->len, o->key };
		s = x_stream(o, o->c, &ptsz);
		e = (ptsz ? cudaLaunchHostFunc_ptsz : cudaLaunchHostFunc)(s, hostfn, k);
		break;
	}
	case OP_SCREATE:
		if (o->c == 0 && !o->b)
			e = cudaStreamCreate(&X.stream[o->a]);
		else if (o->c == 2)
			e = cudaStreamCreateWithPriority(&X.stream[o->a], o->b ? cudaStreamNonBlocking : 0, -1);
		else
			e = cudaStreamCreateWithFlags(&X.stream[o->a], o->b ? cudaStreamNonBlocking : 0);
		break;
	case OP_SDESTROY: e = cudaStreamDestroy(X.stream[o->c]); break;
	case OP_SSYNC:
		s = x_stream(o, o->c, &ptsz);
		e = (ptsz ? cudaStreamSynchronize_ptsz : cudaStreamSynchronize)(s);
		break;
	case OP_SQUERY:
		s = x_stream(o, o->c, &ptsz);
		e = (ptsz ? cudaStreamQuery_ptsz : cudaStreamQuery)(s);
		break;
	case OP_ECREATE:
		e = cudaEventCreateWithFlags(&X.ev[o->a], o->b == 0 ? cudaEventDefault
						 : o->b == 1 ? cudaEventDisableTiming
							     : cudaEventBlockingSync);
		break;
	case OP_EDESTROY: e = cudaEventDestroy(X.ev[o->a]); break;
	case OP_ERECORD:
		s = x_stream(o, o->c, &ptsz);
		e = (ptsz ? cudaEventRecord_ptsz : cudaEventRecord)(X.ev[o->a], s);
		break;
	case OP_EWAIT:
		s = x_stream(o, o->c, &ptsz);
		e = (ptsz ? cudaStreamWaitEvent_ptsz : cudaStreamWaitEvent)(s, X.ev[o->a], 0);
		break;
	case OP_ESYNC: e = cudaEventSynchronize(X.ev[o->a]); break;
	case OP_EQUERY: e = cudaEventQuery(X.ev[o->a]); break;
	case OP_DSYNC: e = cudaDeviceSynchronize(); break;
	case OP_RESET: e = cudaDeviceReset(); break;
	case OP_LASTERR: e = o->a ? cudaPeekAtLastError() : cudaGetLastError(); break;
	case OP_REG:
		if (!A->gone &&
		    (e = o->delay ? (cudaError_t)XD.reg(A->p, A->size, (unsigned)o->c)
				  : cudaHostRegister(A->p, A->size, (unsigned)o->c)) == cudaSuccess &&
		    A->mem == MEM_PAGEABLE && (o->c & cudaHostRegisterMapped))
			e2 = cudaHostGetDevicePointer((void **)&A->dp, A->p, 0);
		break;
	case OP_UNREG:
		if (!A->gone &&
		    (e = o->delay ? (cudaError_t)XD.unreg(o->b ? A->p + 1 : A->p)
				  : cudaHostUnregister(o->b ? A->p + 1 : A->p)) == cudaSuccess &&
		    A->mem == MEM_PAGEABLE)
			A->dp = NULL;
		break;
	case OP_QUERY:
		if (!A->gone)
			e = x_query(A, o, &h);
		break;
	case OP_BATCH: {
		struct xbatch *b = &XB[t];
		if (A->gone || B->gone)
			break;
		if (!b->n) {
			b->L = o->c, b->e = o->e, b->first = i;
			b->one = !!(o->key & 2);
		}
		b->d[b->n] = A->p + o->o1;
		b->s[b->n] = B->p + o->o2;
		b->z[b->n] = o->len;
		b->ord[b->n++] = o->d;
		if ((o->key & 1) || b->n == XBMAX)
			x_batch_flush(t);
		break;
	}
	case OP_CBEGIN:
		s = x_stream(o, o->c, &ptsz);
		e = (ptsz ? cudaStreamBeginCapture_ptsz : cudaStreamBeginCapture)(s, (enum cudaStreamCaptureMode)o->b);
		break;
	case OP_CEND: {
		cudaGraph_t g = NULL;
		s = x_stream(o, o->c, &ptsz);
		e = (ptsz ? cudaStreamEndCapture_ptsz : cudaStreamEndCapture)(s, &g);
		if (g)
			fz_graph_destroy(g);
		e2 = g != NULL;
		break;
	}
	}
	if ((o->k == OP_EQUERY || o->k == OP_SQUERY) && !known && e == cudaErrorNotReady)
		e = cudaSuccess; /* a timing, not a result */
	tlog_add(t, "%d t%d %s rc=%d", i, t, op_names[o->k], (int)e);
	if (e2)
		tlog_add(t, " rc2=%d", (int)e2);
	if (o->k == OP_CHECK || o->k == OP_QUERY)
		tlog_add(t, " h=%016llx", (unsigned long long)h);
	tlog_add(t, "\n");

	pthread_mutex_lock(&mu);
	m_apply(&X.m, o, NULL);
	pthread_mutex_unlock(&mu);
}

/* FUZZ_SLOW_MS=N: ops that take N ms or more are named on stderr (where a
 * real GPU spends its time). */
static double slow_ms = -1;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void x_op_timed(int i)
{
	double t0, dt;

	if (slow_ms < 0) {
		x_op(i);
		return;
	}
	t0 = now_ms();
	x_op(i);
	dt = now_ms() - t0;
	if (dt >= slow_ms)
		fprintf(stderr, "fuzz: slow op %d %s len %zu delay %u: %.1f ms\n", i, op_names[X.p->op[i].k],
			X.p->op[i].len, X.p->op[i].delay, dt);
}

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;

	for (;;) {
		pthread_barrier_wait(&X.go);
		if (X.quit)
			return NULL;
		if (X.from == X.to) {
			/* A new program: device 0, no pending error. */
			cudaSetDevice(0);
			cudaGetLastError();
		}
		for (int i = X.from; i < X.to; i++)
			if (X.p->op[i].t == t && X.p->op[i].k != OP_PHASE && X.p->op[i].k != OP_END)
				x_op_timed(i);
		x_batch_flush(t);
		pthread_barrier_wait(&X.done);
	}
}

static pthread_t workers[MAXT];

static void workers_start(void)
{
	pthread_barrier_init(&X.go, NULL, MAXT + 1);
	pthread_barrier_init(&X.done, NULL, MAXT + 1);
	for (int t = 0; t < MAXT; t++)
		if (pthread_create(&workers[t], NULL, worker, (void *)(intptr_t)t))
			abort();
}

static void workers_stop(void)
{
	X.quit = 1;
	pthread_barrier_wait(&X.go);
	for (int t = 0; t < MAXT; t++)
		pthread_join(workers[t], NULL);
}

/* -vv: buffer b's bytes hashed by 64 KiB, to name the range (and so the
 * op) where two transcripts' end hashes differ. */
static void x_chunks(const struct xbuf *B, int b)
{
	const size_t chunk = 64u << 10;
	cudaError_t e;
	unsigned char *bytes = x_bytes(B, &e);

	for (size_t o = 0; !e && o < B->size; o += chunk) {
		size_t n = o + chunk < B->size ? chunk : B->size - o;

		tlog_add(0, "end buf%d [%zu,%zu) h=%016llx\n", b, o, o + n,
			 (unsigned long long)fnv(0xcbf29ce484222325ull, bytes + o, n));
	}
	x_bytes_done(B, bytes);
}

/* The program's end: wait for every device, read every buffer; then free
 * everything (not in the transcript) for the next program. */
static void x_end(int upto)
{
	const struct prog *p = X.p;

	for (int d = 0; d < p->ndev; d++) {
		cudaError_t e = cudaSetDevice(d), e2 = cudaDeviceSynchronize();
		tlog_add(0, "end dev%d rc=%d rc2=%d\n", d, (int)e, (int)e2);
	}
	for (int b = 0; b < X.m.nbuf; b++) {
		struct xbuf *B = &X.buf[b];
		cudaError_t e;
		uint64_t h;

		if (B->gone || !X.m.buf[b].live || !X.m.buf[b].init)
			continue;
		if (B->mem == MEM_DEVICE)
			cudaSetDevice(X.m.buf[b].dev);
		h = hash_buf(B, &e);
		tlog_add(0, "end buf%d rc=%d h=%016llx\n", b, (int)e, (unsigned long long)h);
		if (X.verbose > 1)
			x_chunks(B, b);
	}
	flush_logs();
	for (int b = 0; b < X.m.nbuf; b++) {
		struct xbuf *B = &X.buf[b];
		if (B->gone == 1 || !B->p || (B->mem != MEM_PAGEABLE && !X.m.buf[b].live && !B->gone))
			continue; /* freed, or its device reset */
		/* Each on its own device: a free from another device is a case
		 * the generated programs cover (and found a divergence). */
		if (B->mem == MEM_PINNED) {
			cudaSetDevice(X.m.buf[b].dev);
			cudaFreeHost(B->p);
		} else if (B->mem == MEM_DEVICE) {
			cudaSetDevice(X.m.buf[b].dev);
			cudaFree(B->p);
		} else {
			if (X.m.buf[b].reg) {
				cudaSetDevice(X.m.buf[b].dev);
				cudaHostUnregister(B->p);
			}
			free(B->p);
		}
	}
	for (int L = NFIX; L < X.m.nlane; L++)
		if (X.m.lane[L].alive) {
			cudaSetDevice(X.m.lane[L].dev);
			cudaStreamDestroy(X.stream[L]);
		}
	for (int e = 0; e < X.m.nev; e++)
		if (X.m.ev[e].live)
			cudaEventDestroy(X.ev[e]);
	for (int k = 0; k < upto; k++) {
		free(X.args[k]);
		X.args[k] = NULL;
	}
	memset(X.buf, 0, sizeof(X.buf));
	cudaSetDevice(0);
	cudaGetLastError();
}

/* A new program: every worker on device 0 with no pending error. */
static void x_begin(void)
{
	X.from = X.to = 0;
	pthread_barrier_wait(&X.go);
	pthread_barrier_wait(&X.done);
}

/* Run the program (one or more, each closed by END); return the hash of its
 * transcript. */
static uint64_t execute(const struct prog *p, int verbose)
{
	static int drv_resolved;
	int i = 0;

	if (!drv_resolved++)
		x_drv_resolve();
	X.p = p;
	X.verbose = verbose;
	X.hash = 0xcbf29ce484222325ull;
	memset(X.buf, 0, sizeof(X.buf));
	memset(X.args, 0, sizeof(X.args));
	m_init(&X.m, p->ndev, p->nthr);
	x_begin();
	while (i < p->n) {
		int j = i + 1;

		if (p->op[i].k == OP_END) {
			x_end(i);
			m_apply(&X.m, &p->op[i], NULL);
			x_begin();
			i++;
			continue;
		}
		while (j < p->n && p->op[j].k != OP_PHASE && p->op[j].k != OP_END)
			j++;
		if (p->op[i].k == OP_PHASE)
			m_apply(&X.m, &p->op[i], NULL);
		X.from = i;
		X.to = j;
		pthread_barrier_wait(&X.go);
		pthread_barrier_wait(&X.done);
		flush_logs();
		i = j;
	}
	if (p->n && p->op[p->n - 1].k != OP_END)
		x_end(p->n);
	for (int k = 0; k < p->n; k++) {
		free(X.args[k]);
		X.args[k] = NULL;
	}
	return X.hash;
}

/* ---- shrinking */

static const char *shrink_env;
static int shrink_tries = 3;
extern char **environ;

/* Run `fuzz --replay path` in the given environment; its hash, or 0. */
static uint64_t run_replay(const char *path, int shim)
{
	static char self[4096];
	char *argv[] = { "timeout", "-k", "5", "120", self, "--replay", (char *)path, NULL };
	char *envp[512], buf[4096], *envcopy = NULL;
	int n = 0, fd[2], st;
	posix_spawn_file_actions_t fa;
	unsigned long long h = 0;
	ssize_t got;
	size_t len = 0;
	pid_t pid;

	if (!self[0] && readlink("/proc/self/exe", self, sizeof(self) - 1) <= 0)
		return 1;
	for (char **e = environ; *e && n < 400; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) && strncmp(*e, "PINCACHE_", 9))
			envp[n++] = *e;
	if (shim && shrink_env) {
		envcopy = strdup(shrink_env);
		for (char *tok = strtok(envcopy, " "); tok && n < 510; tok = strtok(NULL, " "))
			envp[n++] = tok;
	}
	envp[n] = NULL;
	if (pipe(fd))
		return 0;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
	posix_spawn_file_actions_addclose(&fa, fd[0]);
	if (posix_spawnp(&pid, "timeout", &fa, NULL, argv, envp)) {
		pid = -1;
	}
	posix_spawn_file_actions_destroy(&fa);
	close(fd[1]);
	while (pid > 0 && len < sizeof(buf) - 1 && (got = read(fd[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)got;
	buf[len] = 0;
	close(fd[0]);
	if (pid > 0)
		waitpid(pid, &st, 0);
	free(envcopy);
	if (pid <= 0 || !WIFEXITED(st) || WEXITSTATUS(st) || sscanf(buf, "replay hash %llx", &h) != 1)
		return 1; /* a crash or a hang: not a hash any run gives */
	return h;
}

static int diverges(const struct prog *p, const char *tmp)
{
	FILE *f = fopen(tmp, "w");
	uint64_t plain;

	if (!f)
		return 0;
	prog_write(f, p);
	fclose(f);
	plain = run_replay(tmp, 0);
	for (int i = 0; i < shrink_tries; i++)
		if (run_replay(tmp, 1) != plain)
			return 1;
	return 0;
}

/* Delta debugging over the op list; only candidates the model accepts. */
static int shrink(const char *path)
{
	static struct prog p, c;
	static struct model m;
	char tmp[] = "/tmp/fuzz-shrink.XXXXXX";
	int fd = mkstemp(tmp), gran = 2, tests = 0;

	if (fd < 0 || prog_read(path, &p))
		return 2;
	close(fd);
	if (validate(&p, &m) || !diverges(&p, tmp)) {
		fprintf(stderr, "fuzz: %s: %s\n", path, validate(&p, &m) ? "not a valid program" : "does not diverge");
		unlink(tmp);
		return 1;
	}
	while (p.n >= 2) {
		int chunk = (p.n + gran - 1) / gran, done = 0;

		for (int s = 0; s < p.n && !done; s += chunk) {
			c = p;
			c.n = 0;
			for (int i = 0; i < p.n; i++)
				if (i < s || i >= s + chunk)
					c.op[c.n++] = p.op[i];
			if (validate(&c, &m))
				continue;
			tests++;
			if (diverges(&c, tmp)) {
				p = c;
				gran = gran > 2 ? gran - 1 : 2;
				done = 1;
			}
		}
		if (!done) {
			if (gran >= p.n)
				break;
			gran = gran * 2 < p.n ? gran * 2 : p.n;
		}
	}
	unlink(tmp);
	fprintf(stderr, "fuzz: shrunk to %d ops (%d runs of candidates)\n", p.n, tests);
	prog_write(stdout, &p);
	return 0;
}

/* ---- main */

static int device_count(void)
{
	int n = 0;

	if (cudaGetDeviceCount(&n) || n < 1)
		return 0;
	return n > MAXD ? MAXD : n;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "dump", no_argument, NULL, 'D' },    { "replay", required_argument, NULL, 'R' },
		{ "shrink", required_argument, NULL, 'S' }, { "env", required_argument, NULL, 'E' },
		{ "tries", required_argument, NULL, 'T' }, { NULL, 0, NULL, 0 },
	};
	static struct prog p;
	static struct model m;
	int verbose = 0, nops = 150, nthr = 0, dump = 0, dumped = 0, c, ndev, bad;
	const char *replay = NULL, *shrink_path = NULL;
	unsigned long long first = 0, last = 0;

	while ((c = getopt_long(argc, argv, "vn:t:", longopts, NULL)) != -1) {
		switch (c) {
		case 'v': verbose++; break;
		case 'n': nops = atoi(optarg); break;
		case 't': nthr = atoi(optarg); break;
		case 'D': dump = 1; break;
		case 'R': replay = optarg; break;
		case 'S': shrink_path = optarg; break;
		case 'E': shrink_env = optarg; break;
		case 'T': shrink_tries = atoi(optarg); break;
		default: goto usage;
		}
	}
	if (nops < 1 || nops > MAXOPS - 64 || nthr < 0 || nthr > MAXT)
		goto usage;
	if (getenv("FUZZ_SLOW_MS"))
		slow_ms = atof(getenv("FUZZ_SLOW_MS"));
	if (getenv("FUZZ_RESET_DIV") && atoi(getenv("FUZZ_RESET_DIV")) > 0)
		reset_div = (unsigned)atoi(getenv("FUZZ_RESET_DIV"));
	if (shrink_path)
		return shrink(shrink_path);
	if (!replay) {
		char *end;
		if (optind != argc - 1)
			goto usage;
		first = last = strtoull(argv[optind], &end, 0);
		if (*end == ':')
			last = strtoull(end + 1, &end, 0);
		if (*end || last < first)
			goto usage;
	}
	ndev = device_count();
	if (!ndev) {
		printf("fuzz: no CUDA device\n");
		return 77;
	}
	if (replay) {
		if (prog_read(replay, &p))
			return 2;
		if ((bad = validate(&p, &m))) {
			fprintf(stderr, "fuzz: %s: op %d is not well-defined\n", replay, bad - 1);
			return 2;
		}
		if (p.ndev > ndev) {
			printf("fuzz: the case needs %d devices\n", p.ndev);
			return 77;
		}
		workers_start();
		printf("replay hash %016llx\n", (unsigned long long)execute(&p, verbose));
		workers_stop();
		return 0;
	}
	if (!dump)
		workers_start();
	for (unsigned long long s = first; s <= last; s++) {
		int t = nthr ? nthr : 1 + (int)(s % 3);

		generate(&p, s, nops, ndev, t);
		if ((bad = validate(&p, &m))) {
			fprintf(stderr, "fuzz: seed %llu: the generator emitted an invalid op %d\n", s, bad - 1);
			return 2;
		}
		if (dump) {
			/* Several seeds: one program after the other, as a batch runs them,
			 * as long as they fit in one case (--replay reads MAXOPS). */
			if ((dumped += p.n) > MAXOPS) {
				fprintf(stderr, "fuzz: seeds %llu..%llu: more than %d operations for one case\n", first, s,
					MAXOPS);
				return 2;
			}
			if (s == first)
				printf("# pincache fuzz case (tests/fuzz/README.md)\ndevices %d\nthreads %d\n", p.ndev, MAXT);
			prog_write_ops(stdout, &p);
			continue;
		}
		printf("seed %llu hash %016llx ops %d\n", s, (unsigned long long)execute(&p, verbose), p.n);
		fflush(stdout);
	}
	if (!dump)
		workers_stop();
	return 0;
usage:
	fprintf(stderr, "usage: fuzz [-v] [-n OPS] [-t THREADS] SEED[:LAST] | --dump SEED | --replay FILE |\n"
			"       --shrink FILE --env 'K=V ...' [--tries N]\n");
	return 2;
}
