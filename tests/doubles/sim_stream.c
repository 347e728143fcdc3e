/* sim_stream.c - streams, their worker threads, operations and events.
 *
 * Each stream (the legacy default stream of each device, each thread's
 * per-thread default stream on each device, each created stream) has a worker
 * thread that runs its operations in order, later.  Default-stream rules
 * become dependencies taken at enqueue time:
 *   - an operation on the legacy stream waits for everything queued before it
 *     on the device's blocking streams (created without cudaStreamNonBlocking,
 *     and the per-thread default streams);
 *   - an operation on a blocking stream waits for everything queued before it
 *     on the legacy stream;
 *   - non-blocking streams wait for nothing but their own earlier work.
 * Stream and event structures are never freed (destroyed events are reused),
 * so a stale handle or an operation's dependency never points at freed memory.
 */
#include <stdlib.h>
#include <string.h>
#include "sim_internal.h"

#define STREAM_MAGIC 0x5354524dU
#define EVENT_MAGIC  0x4556544eU

/* All under sim_mu. */
static struct CUstream_st *sim_streams;
static struct CUstream_st *legacy[SIM_MAX_DEVICES];
static struct CUevent_st *sim_events, *free_events;
static unsigned long long capture_ids;

/* The calling thread's per-thread default streams; the pointers are written
 * by their own thread only, the streams themselves are under sim_mu. */
static __thread struct CUstream_st *tls_pts[SIM_MAX_DEVICES];
static __thread enum cudaStreamCaptureMode tls_capture_mode;
static __thread unsigned tls_thread_id;
static unsigned thread_ids;

static unsigned sim_thread_id(void)
{
	if (!tls_thread_id)
		tls_thread_id = __atomic_add_fetch(&thread_ids, 1, __ATOMIC_RELAXED);
	return tls_thread_id;
}
static pthread_key_t pts_key;

static void *worker_main(void *arg);

/* ---- operations */

struct sim_op *sim_op_new(enum sim_op_kind kind)
{
	struct sim_op *op = calloc(1, sizeof *op);

	if (op)
		op->kind = kind;
	return op;
}

static void op_free(struct sim_op *op)
{
	free(op->owned);
	free(op->deps);
	free(op->xdeps);
	free(op);
}

static bool dep_done(const struct sim_dep *d)
{
	return !d->s || d->s->done >= d->seq;
}

static bool deps_done(const struct sim_op *op)
{
	for (size_t i = 0; i < op->ndeps; i++)
		if (!dep_done(&op->deps[i]))
			return false;
	return true;
}

static bool op_ready(const struct sim_op *op)
{
	if (op->held)
		return false;
	for (size_t i = 0; i < op->ndeps; i++)
		if (!dep_done(&op->deps[i]))
			return false;
	for (size_t i = 0; i < op->nxdeps; i++)
		if (!dep_done(&op->xdeps[i]))
			return false;
	return dep_done(&op->wait);
}

static void op_run(struct sim_op *op)
{
	sim_sleep_us(op->delay_us);
	switch (op->kind) {
	case OP_COPY:
		/* Reads the source now, at execution: a host buffer overwritten
		 * before this point delivers the new bytes, as DMA would. */
		for (size_t r = 0; r < op->height; r++)
			memcpy((char *)op->dst + r * op->dpitch,
			       (const char *)op->src + r * op->spitch, op->width);
		break;
	case OP_MEMSET:
		for (size_t r = 0; r < op->height; r++)
			memset((char *)op->dst + r * op->dpitch, op->value, op->width);
		break;
	case OP_HOSTFN:
		op->fn(op->arg);
		break;
	case OP_FREE:
		sim_mem_free_device_now(op->dst);
		break;
	case OP_RECORD:
	case OP_WAIT:
		break;
	}
}

/* ---- streams */

static struct CUstream_st *stream_new(enum sim_stream_kind kind, int dev, unsigned flags, int prio)
{
	struct CUstream_st *s = calloc(1, sizeof *s);
	pthread_attr_t a;
	pthread_t t;
	int rc;

	if (!s)
		return NULL;
	s->magic = STREAM_MAGIC;
	s->kind = kind;
	s->dev = dev;
	s->flags = flags;
	s->priority = prio;
	s->blocking = kind != SK_LEGACY && !(flags & cudaStreamNonBlocking);
	s->capture = cudaStreamCaptureStatusNone;
	pthread_cond_init(&s->work, NULL);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &a, worker_main, s);
	pthread_attr_destroy(&a);
	if (rc) {
		pthread_cond_destroy(&s->work);
		free(s);
		return NULL;
	}
	/* Published under sim_mu by the caller's lock. */
	s->next = sim_streams;
	sim_streams = s;
	return s;
}

/* op has run on s: its stream, its event, the counters; then it is freed.
 * Caller holds sim_mu. */
static void op_done_locked(struct CUstream_st *s, struct sim_op *op)
{
	s->done = op->seq;
	if (op->kind == OP_RECORD && op->ev->s == s && op->ev->seq == op->seq) {
		op->ev->stamped = true;
		op->ev->t_ms = sim_now_ms();
	}
	sim_ctr.ops_executed++;
	if (op->kind == OP_COPY) {
		sim_ctr.copies++;
		sim_ctr.pageable_copies += op->pageable;
	}
	pthread_cond_broadcast(&sim_progress);
	op_free(op);
}

/* A worker runs its stream's operations in order until the stream is
 * destroyed and drained.  Detached: the process may exit with workers waiting. */
static void *worker_main(void *arg)
{
	struct CUstream_st *s = arg;

	pthread_mutex_lock(&sim_mu);
	for (;;) {
		struct sim_op *op;

		while (!s->head && !s->destroyed)
			pthread_cond_wait(&s->work, &sim_mu);
		if (!s->head)
			break;
		op = s->head;
		while (!op_ready(op))
			pthread_cond_wait(&sim_progress, &sim_mu);
		pthread_mutex_unlock(&sim_mu);
		op_run(op);
		pthread_mutex_lock(&sim_mu);
		s->head = op->next;
		if (!s->head)
			s->tail = NULL;
		op_done_locked(s, op);
	}
	pthread_mutex_unlock(&sim_mu);
	return NULL;
}

/* Thread exit: the per-thread default streams drain and their workers end. */
static void pts_destructor(void *unused)
{
	pthread_mutex_lock(&sim_mu);
	for (int d = 0; d < SIM_MAX_DEVICES; d++) {
		if (tls_pts[d]) {
			tls_pts[d]->destroyed = true;
			pthread_cond_signal(&tls_pts[d]->work);
			tls_pts[d] = NULL;
		}
	}
	pthread_mutex_unlock(&sim_mu);
}

void sim_streams_init(void)
{
	pthread_key_create(&pts_key, pts_destructor);
	pthread_mutex_lock(&sim_mu);
	for (int d = 0; d < sim_cfg.devices; d++)
		legacy[d] = stream_new(SK_LEGACY, d, 0, 0);
	pthread_mutex_unlock(&sim_mu);
}

struct CUstream_st *sim_legacy_stream(int dev)
{
	return legacy[dev];
}

/* Caller holds sim_mu. */
static struct CUstream_st *per_thread_stream(int dev)
{
	if (!tls_pts[dev]) {
		tls_pts[dev] = stream_new(SK_PER_THREAD, dev, 0, 0);
		sim_ctr.per_thread_streams++;
		pthread_setspecific(pts_key, (void *)1);
	}
	return tls_pts[dev];
}

/* Caller holds sim_mu. */
static struct CUstream_st *resolve_locked(cudaStream_t h, bool per_thread_zero)
{
	int dev = sim_current_device();
	struct CUstream_st *s;

	if (h == 0)
		return per_thread_zero ? per_thread_stream(dev) : legacy[dev];
	if (h == cudaStreamLegacy)
		return legacy[dev];
	if (h == cudaStreamPerThread)
		return per_thread_stream(dev);
	if ((uintptr_t)h < 4096)
		return NULL;
	s = (struct CUstream_st *)h;
	if (s->magic != STREAM_MAGIC || s->kind != SK_CREATED || s->destroyed)
		return NULL;
	return s;
}

struct CUstream_st *sim_stream_resolve(cudaStream_t h, bool per_thread_zero)
{
	struct CUstream_st *s;

	pthread_mutex_lock(&sim_mu);
	s = resolve_locked(h, per_thread_zero);
	pthread_mutex_unlock(&sim_mu);
	return s;
}

/* A blocking stream of dev that is capturing, if any.  Caller holds sim_mu. */
static struct CUstream_st *capturing_blocking(int dev)
{
	for (struct CUstream_st *t = sim_streams; t; t = t->next)
		if (t->dev == dev && t->blocking && !t->destroyed &&
		    t->capture != cudaStreamCaptureStatusNone)
			return t;
	return NULL;
}

/* Caller holds sim_mu. */
static cudaError_t enqueue_locked(struct CUstream_st *s, struct sim_op *op, uint64_t *seq)
{
	size_t n = 0;

	*seq = 0;
	if (s->destroyed) {
		op_free(op);
		return cudaErrorInvalidResourceHandle;
	}
	if (s->capture != cudaStreamCaptureStatusNone) {
		/* Captured into the graph, which the sim never runs. */
		op_free(op);
		return cudaSuccess;
	}
	if (s->kind == SK_LEGACY) {
		struct CUstream_st *c = capturing_blocking(s->dev);

		if (c) {
			/* The legacy stream may not depend on a capturing stream. */
			c->capture = cudaStreamCaptureStatusInvalidated;
			op_free(op);
			return cudaErrorStreamCaptureImplicit;
		}
		for (struct CUstream_st *t = sim_streams; t; t = t->next)
			n += t->dev == s->dev && t->blocking && t->enq > t->done;
		if (n) {
			op->deps = calloc(n, sizeof *op->deps);
			if (!op->deps) {
				op_free(op);
				return cudaErrorMemoryAllocation;
			}
			for (struct CUstream_st *t = sim_streams; t; t = t->next)
				if (t->dev == s->dev && t->blocking && t->enq > t->done)
					op->deps[op->ndeps++] = (struct sim_dep){ t, t->enq };
		}
	} else if (s->blocking) {
		struct CUstream_st *l = legacy[s->dev];

		if (l->enq > l->done) {
			op->deps = calloc(1, sizeof *op->deps);
			if (!op->deps) {
				op_free(op);
				return cudaErrorMemoryAllocation;
			}
			op->deps[op->ndeps++] = (struct sim_dep){ l, l->enq };
		}
	}
	op->seq = ++s->enq;
	*seq = op->seq;
	sim_ctr.ops_enqueued++;
	/* SIM_INLINE_OPS (benchmarks): an instant copy, memset or wait on an
	 * idle stream (its worker holds no op), with nothing to wait for, runs
	 * here at once, as the worker would have run it next, without the
	 * hand-over to the worker and back that costs microseconds.  Not an
	 * event record: its caller sets the event up after queueing it. */
	if (sim_cfg.inline_ops && !s->head && op->delay_us <= 0 && op_ready(op) &&
	    (op->kind == OP_COPY || op->kind == OP_MEMSET || op->kind == OP_WAIT)) {
		op_run(op);
		op_done_locked(s, op);
		return cudaSuccess;
	}
	if (s->tail)
		s->tail->next = op;
	else
		s->head = op;
	s->tail = op;
	pthread_cond_signal(&s->work);
	return cudaSuccess;
}

cudaError_t sim_enqueue(struct CUstream_st *s, struct sim_op *op, uint64_t *seq)
{
	cudaError_t e;

	pthread_mutex_lock(&sim_mu);
	e = enqueue_locked(s, op, seq);
	pthread_mutex_unlock(&sim_mu);
	return e;
}

void sim_wait_seq(struct CUstream_st *s, uint64_t seq)
{
	pthread_mutex_lock(&sim_mu);
	while (s->done < seq)
		pthread_cond_wait(&sim_progress, &sim_mu);
	pthread_mutex_unlock(&sim_mu);
}

bool sim_ahead_done(const struct CUstream_st *s, const struct sim_op *op)
{
	return s->done + 1 >= op->seq && deps_done(op);
}

void sim_wait_ahead(struct CUstream_st *s, const struct sim_op *op, bool deps)
{
	pthread_mutex_lock(&sim_mu);
	while (s->done + 1 < op->seq || (deps && !deps_done(op)))
		pthread_cond_wait(&sim_progress, &sim_mu);
	pthread_mutex_unlock(&sim_mu);
}

void sim_op_release(struct sim_op *op)
{
	pthread_mutex_lock(&sim_mu);
	op->held = false;
	pthread_cond_broadcast(&sim_progress);
	pthread_mutex_unlock(&sim_mu);
}

bool sim_wait_device(int dev)
{
	bool waited = false;

	pthread_mutex_lock(&sim_mu);
	/* Work queued later is not waited for: each stream's target is fixed
	 * now, and streams are only ever prepended to the list. */
	for (struct CUstream_st *t = sim_streams; t; t = t->next) {
		uint64_t target = t->enq;

		if (dev >= 0 && t->dev != dev)
			continue;
		waited |= t->done < target;
		while (t->done < target)
			pthread_cond_wait(&sim_progress, &sim_mu);
	}
	if (waited)
		sim_ctr.device_waits++;
	pthread_mutex_unlock(&sim_mu);
	return waited;
}

/* ---- stream API */

static cudaError_t stream_create(cudaStream_t *p, unsigned flags, int prio)
{
	cudaError_t e = sim_enter();
	struct CUstream_st *s;

	if (e)
		return sim_ret(e);
	if (!p || (flags & ~(unsigned)cudaStreamNonBlocking))
		return sim_ret(cudaErrorInvalidValue);
	prio = prio > 0 ? 0 : prio < -5 ? -5 : prio;
	pthread_mutex_lock(&sim_mu);
	s = stream_new(SK_CREATED, sim_current_device(), flags, prio);
	if (s)
		sim_ctr.streams_created++;
	pthread_mutex_unlock(&sim_mu);
	if (!s)
		return sim_ret(cudaErrorMemoryAllocation);
	*p = s;
	return cudaSuccess;
}

SIM_API cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
	return stream_create(pStream, cudaStreamDefault, 0);
}

SIM_API cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
	return stream_create(pStream, flags, 0);
}

SIM_API cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority)
{
	return stream_create(pStream, flags, priority);
}

SIM_API cudaError_t simStreamCreateUnseen(cudaStream_t *pStream, unsigned int flags)
{
	return stream_create(pStream, flags, 0);
}

/* Returns at once; queued work still runs, then the worker ends. */
SIM_API cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
	cudaError_t e = sim_enter();
	struct CUstream_st *s;

	if (e)
		return sim_ret(e);
	pthread_mutex_lock(&sim_mu);
	s = resolve_locked(stream, false);
	if (s && s->kind == SK_CREATED) {
		s->destroyed = true;
		sim_ctr.streams_destroyed++;
		pthread_cond_signal(&s->work);
	}
	pthread_mutex_unlock(&sim_mu);
	return s && s->kind == SK_CREATED ? cudaSuccess : sim_ret(cudaErrorInvalidResourceHandle);
}

/* Querying or waiting on a capturing stream is refused and breaks the capture. */
static cudaError_t capture_refuses(struct CUstream_st *s)
{
	if (s->capture == cudaStreamCaptureStatusNone)
		return cudaSuccess;
	s->capture = cudaStreamCaptureStatusInvalidated;
	return cudaErrorStreamCaptureUnsupported;
}

/* Measured on an H200: cudaStreamQuery(0) reports not ready while a blocking
 * stream has work, so the legacy stream counts the blocking streams' work as
 * its own.  Caller holds sim_mu. */
static bool stream_idle(const struct CUstream_st *s)
{
	if (s->done < s->enq)
		return false;
	if (s->kind == SK_LEGACY)
		for (struct CUstream_st *t = sim_streams; t; t = t->next)
			if (t->dev == s->dev && t->blocking && t->done < t->enq)
				return false;
	return true;
}

static cudaError_t stream_query(cudaStream_t stream, bool ptz)
{
	cudaError_t e = sim_enter();
	struct CUstream_st *s;

	if (e)
		return sim_ret(e);
	pthread_mutex_lock(&sim_mu);
	s = resolve_locked(stream, ptz);
	e = !s ? cudaErrorInvalidResourceHandle : capture_refuses(s);
	if (!e && !stream_idle(s))
		e = cudaErrorNotReady;
	pthread_mutex_unlock(&sim_mu);
	return sim_ret(e);
}

SIM_API cudaError_t cudaStreamQuery(cudaStream_t stream) { return stream_query(stream, false); }
SIM_API cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream) { return stream_query(stream, true); }

static cudaError_t stream_sync(cudaStream_t stream, bool ptz)
{
	cudaError_t e = sim_enter();
	struct CUstream_st *s;

	if (e)
		return sim_ret(e);
	pthread_mutex_lock(&sim_mu);
	s = resolve_locked(stream, ptz);
	e = !s ? cudaErrorInvalidResourceHandle : capture_refuses(s);
	if (!e) {
		/* The legacy stream's work includes the blocking streams' (see
		 * stream_idle); each stream's target is fixed now. */
		for (struct CUstream_st *t = sim_streams; t; t = t->next) {
			uint64_t target = t->enq;

			if (t == s || (s->kind == SK_LEGACY && t->dev == s->dev && t->blocking))
				while (t->done < target)
					pthread_cond_wait(&sim_progress, &sim_mu);
		}
	}
	pthread_mutex_unlock(&sim_mu);
	return sim_ret(e);
}

SIM_API cudaError_t cudaStreamSynchronize(cudaStream_t stream) { return stream_sync(stream, false); }
SIM_API cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) { return stream_sync(stream, true); }

static cudaError_t stream_get(cudaStream_t stream, bool ptz, unsigned *flags, int *dev, int *prio)
{
	cudaError_t e = sim_enter();
	struct CUstream_st *s;

	if (e)
		return sim_ret(e);
	if (!flags && !dev && !prio)
		return sim_ret(cudaErrorInvalidValue);
	pthread_mutex_lock(&sim_mu);
	s = resolve_locked(stream, ptz);
	if (s) {
		if (flags)
			*flags = s->flags;
		if (dev)
			*dev = s->dev;
		if (prio)
			*prio = s->priority;
	}
	pthread_mutex_unlock(&sim_mu);
	return s ? cudaSuccess : sim_ret(cudaErrorInvalidResourceHandle);
}

SIM_API cudaError_t cudaStreamGetFlags(cudaStream_t s, unsigned int *flags) { return stream_get(s, false, flags, NULL, NULL); }
SIM_API cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t s, unsigned int *flags) { return stream_get(s, true, flags, NULL, NULL); }
SIM_API cudaError_t cudaStreamGetDevice(cudaStream_t s, int *device) { return stream_get(s, false, NULL, device, NULL); }
SIM_API cudaError_t cudaStreamGetDevice_ptsz(cudaStream_t s, int *device) { return stream_get(s, true, NULL, device, NULL); }
SIM_API cudaError_t cudaStreamGetPriority(cudaStream_t s, int *priority) { return stream_get(s, false, NULL, NULL, priority); }
SIM_API cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t s, int *priority) { return stream_get(s, true, NULL, NULL, priority); }

/* ---- host functions and simulated kernels */

static cudaError_t launch(cudaStream_t stream, bool ptz, void (*fn)(void *), void *arg, double delay_us)
{
	cudaError_t e = sim_enter();
	struct CUstream_st *s;
	struct sim_op *op;
	uint64_t seq;

	if (e)
		return sim_ret(e);
	if (!fn)
		return sim_ret(cudaErrorInvalidValue);
	s = sim_stream_resolve(stream, ptz);
	if (!s)
		return sim_ret(cudaErrorInvalidResourceHandle);
	op = sim_op_new(OP_HOSTFN);
	if (!op)
		return sim_ret(cudaErrorMemoryAllocation);
	op->fn = fn;
	op->arg = arg;
	op->delay_us = delay_us;
	return sim_ret(sim_enqueue(s, op, &seq));
}

SIM_API cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
	return launch(stream, false, fn, userData, sim_cfg.hostfn_us);
}

SIM_API cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
	return launch(stream, true, fn, userData, sim_cfg.hostfn_us);
}

SIM_API cudaError_t simLaunch(cudaStream_t stream, void (*fn)(void *), void *arg, unsigned delay_us)
{
	return launch(stream, false, fn, arg, delay_us);
}

/* The faulting kernel: its device's context breaks when it runs. */
struct sim_fault_arg { int dev; cudaError_t code; };

static void fault_fn(void *arg)
{
	struct sim_fault_arg *f = arg;

	sim_fault(f->dev, f->code);
	free(f);
}

SIM_API cudaError_t simLaunchFault(cudaStream_t stream, cudaError_t code)
{
	struct sim_fault_arg *f = malloc(sizeof *f);
	cudaError_t e;

	if (!f)
		return sim_ret(cudaErrorMemoryAllocation);
	f->dev = sim_current_device();
	f->code = code;
	e = launch(stream, false, fault_fn, f, 0);
	if (e)
		free(f);
	return e;
}

SIM_API int simDeviceIdle(void)
{
	int idle = 1;

	pthread_mutex_lock(&sim_mu);
	for (struct CUstream_st *t = sim_streams; t; t = t->next)
		if (t->done < t->enq)
			idle = 0;
	pthread_mutex_unlock(&sim_mu);
	return idle;
}

/* ---- events */

/* Caller holds sim_mu. */
static struct CUevent_st *event_locked(cudaEvent_t h)
{
	struct CUevent_st *ev = h;

	if (!ev || (uintptr_t)ev < 4096 || ev->magic != EVENT_MAGIC || !ev->live)
		return NULL;
	return ev;
}

struct CUevent_st *sim_event_resolve(cudaEvent_t h)
{
	struct CUevent_st *ev;

	pthread_mutex_lock(&sim_mu);
	ev = event_locked(h);
	pthread_mutex_unlock(&sim_mu);
	return ev;
}

static cudaError_t event_create(cudaEvent_t *event, unsigned flags)
{
	const unsigned valid = cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
	cudaError_t e = sim_enter();
	struct CUevent_st *ev;

	if (e)
		return sim_ret(e);
	if (!event || (flags & ~valid) ||
	    ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming)))
		return sim_ret(cudaErrorInvalidValue);
	pthread_mutex_lock(&sim_mu);
	ev = free_events;
	if (ev) {
		free_events = ev->next_free;
	} else if ((ev = calloc(1, sizeof *ev))) {
		ev->magic = EVENT_MAGIC;
		ev->next = sim_events;
		sim_events = ev;
	}
	if (ev) {
		ev->live = true;
		ev->dev = sim_current_device();
		ev->flags = flags;
		ev->s = NULL;
		ev->seq = 0;
		ev->ncdeps = 0;
		ev->stamped = false;
		sim_ctr.events_created++;
	}
	pthread_mutex_unlock(&sim_mu);
	if (!ev)
		return sim_ret(cudaErrorMemoryAllocation);
	*event = ev;
	return cudaSuccess;
}

SIM_API cudaError_t cudaEventCreate(cudaEvent_t *event)
{
	return event_create(event, cudaEventDefault);
}

SIM_API cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
	return event_create(event, flags);
}

/* Destroying an event whose record is pending is allowed; the record still
 * completes, and a reuse of the structure never matches its number. */
SIM_API cudaError_t cudaEventDestroy(cudaEvent_t event)
{
	cudaError_t e = sim_enter();
	struct CUevent_st *ev;

	if (e)
		return sim_ret(e);
	pthread_mutex_lock(&sim_mu);
	ev = event_locked(event);
	if (ev) {
		ev->live = false;
		ev->s = NULL;
		ev->next_free = free_events;
		free_events = ev;
		sim_ctr.events_destroyed++;
	}
	pthread_mutex_unlock(&sim_mu);
	return ev ? cudaSuccess : sim_ret(cudaErrorInvalidResourceHandle);
}

/* Would an operation on s run at once?  Caller holds sim_mu. */
static bool record_unblocked_locked(const struct CUstream_st *s)
{
	if (s->kind == SK_LEGACY) {
		if (capturing_blocking(s->dev))
			return false;        /* enqueue_locked reports the capture error */
		for (struct CUstream_st *t = sim_streams; t; t = t->next)
			if (t->dev == s->dev && t->blocking && t->enq > t->done)
				return false;
	} else if (s->blocking) {
		const struct CUstream_st *l = legacy[s->dev];
		if (l->enq > l->done)
			return false;
	}
	return true;
}

static cudaError_t event_record(cudaEvent_t event, cudaStream_t stream, bool ptz, unsigned flags)
{
	cudaError_t e = sim_enter();
	struct CUevent_st *ev;
	struct CUstream_st *s;
	struct sim_op *op;
	uint64_t seq;

	if (e)
		return sim_ret(e);
	if (flags & ~(unsigned)cudaEventRecordExternal)
		return sim_ret(cudaErrorInvalidValue);
	op = sim_op_new(OP_RECORD);
	if (!op)
		return sim_ret(cudaErrorMemoryAllocation);
	pthread_mutex_lock(&sim_mu);
	ev = event_locked(event);
	s = resolve_locked(stream, ptz);
	if (!ev || !s || ev->dev != s->dev) {
		/* An event belongs to the device current at its creation. */
		free(op);
		e = cudaErrorInvalidResourceHandle;
	} else if (s->capture == cudaStreamCaptureStatusNone && !s->destroyed &&
		   s->enq == s->done && record_unblocked_locked(s)) {
		/* Measured on the H200: an event recorded on a stream with nothing
		 * in flight (for the legacy stream: nor on any blocking stream)
		 * reports complete at once, 2,000 times out of 2,000. */
		free(op);
		ev->s = s;
		ev->seq = s->done;
		ev->ncdeps = 0;
		ev->stamped = true;
		ev->t_ms = sim_now_ms();
		sim_ctr.events_recorded++;
	} else {
		op->ev = ev;
		e = enqueue_locked(s, op, &seq);
		if (!e && seq) {
			ev->s = s;
			ev->seq = seq;
			ev->ncdeps = 0;
			ev->stamped = false;
			sim_ctr.events_recorded++;
		}
	}
	pthread_mutex_unlock(&sim_mu);
	return sim_ret(e);
}

SIM_API cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
	return event_record(event, stream, false, 0);
}

SIM_API cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream)
{
	return event_record(event, stream, true, 0);
}

SIM_API cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags)
{
	return event_record(event, stream, false, flags);
}

SIM_API cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream, unsigned int flags)
{
	return event_record(event, stream, true, flags);
}

/* Caller holds sim_mu. */
static bool event_done(const struct CUevent_st *ev)
{
	for (size_t i = 0; i < ev->ncdeps; i++)
		if (!dep_done(&ev->cdeps[i]))
			return false;
	return !ev->s || ev->s->done >= ev->seq;
}

cudaError_t sim_ctx_record_event(int dev, cudaEvent_t event)
{
	cudaError_t e = sim_enter();
	struct CUevent_st *ev;
	size_t n = 0, capturing = 0;

	if (e)
		return e;
	pthread_mutex_lock(&sim_mu);
	ev = event_locked(event);
	if (!ev || ev->dev != dev) {
		pthread_mutex_unlock(&sim_mu);
		return cudaErrorInvalidResourceHandle;
	}
	for (struct CUstream_st *t = sim_streams; t; t = t->next) {
		if (t->dev != dev)
			continue;
		if (t->capture == cudaStreamCaptureStatusActive) {
			t->capture = cudaStreamCaptureStatusInvalidated;
			capturing++;
		}
		if (t->enq > t->done)
			n++;
	}
	if (capturing) {
		pthread_mutex_unlock(&sim_mu);
		return cudaErrorStreamCaptureUnsupported;
	}
	free(ev->cdeps);
	ev->cdeps = n ? calloc(n, sizeof *ev->cdeps) : NULL;
	if (n && !ev->cdeps) {
		pthread_mutex_unlock(&sim_mu);
		return cudaErrorMemoryAllocation;
	}
	ev->ncdeps = 0;
	for (struct CUstream_st *t = sim_streams; t; t = t->next)
		if (t->dev == dev && t->enq > t->done && (t->blocking || !sim_cfg.test_ctx_partial))
			ev->cdeps[ev->ncdeps++] = (struct sim_dep){ t, t->enq };
	/* Nothing in flight: complete at once, as a stream record is. */
	ev->s = NULL;
	ev->seq = 0;
	ev->stamped = ev->ncdeps == 0;
	ev->t_ms = sim_now_ms();
	sim_ctr.events_recorded++;
	sim_ctr.ctx_records++;
	pthread_mutex_unlock(&sim_mu);
	return cudaSuccess;
}

/* Caller holds sim_mu. */
static cudaError_t capture_prohibits_locked(void)
{
	unsigned me = sim_thread_id();
	bool hit = false;

	if (tls_capture_mode == cudaStreamCaptureModeRelaxed)
		return cudaSuccess;
	/* An invalidated capture prohibits as before until it ends (measured:
	 * capfree's drv_then_rt, after the driver's refusal the runtime's). */
	for (struct CUstream_st *t = sim_streams; t; t = t->next) {
		if (t->capture == cudaStreamCaptureStatusNone)
			continue;
		if (t->capture_thread == me ? t->capture_mode != cudaStreamCaptureModeRelaxed
					    : t->capture_mode == cudaStreamCaptureModeGlobal &&
						      tls_capture_mode == cudaStreamCaptureModeGlobal) {
			t->capture = cudaStreamCaptureStatusInvalidated;
			hit = true;
		}
	}
	return hit ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

cudaError_t sim_capture_prohibits(void)
{
	cudaError_t e;

	pthread_mutex_lock(&sim_mu);
	e = capture_prohibits_locked();
	pthread_mutex_unlock(&sim_mu);
	return e;
}

/* cudaErrorNotReady is not recorded as the last error (sim_ret). */
SIM_API cudaError_t cudaEventQuery(cudaEvent_t event)
{
	cudaError_t e = sim_enter();
	struct CUevent_st *ev;

	if (e)
		return sim_ret(e);
	pthread_mutex_lock(&sim_mu);
	if ((e = capture_prohibits_locked()) != cudaSuccess) {
		pthread_mutex_unlock(&sim_mu);
		return sim_ret(e);
	}
	ev = event_locked(event);
	e = !ev ? cudaErrorInvalidResourceHandle : event_done(ev) ? cudaSuccess : cudaErrorNotReady;
	pthread_mutex_unlock(&sim_mu);
	return sim_ret(e);
}

SIM_API cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
	cudaError_t e = sim_enter();
	struct CUevent_st *ev;

	if (e)
		return sim_ret(e);
	pthread_mutex_lock(&sim_mu);
	ev = event_locked(event);
	/* Refused by a capture as cudaEventQuery is (measured, capfree). */
	if (ev && (e = capture_prohibits_locked()) != cudaSuccess) {
		pthread_mutex_unlock(&sim_mu);
		return sim_ret(e);
	}
	if (ev) {
		while (!event_done(ev))
			pthread_cond_wait(&sim_progress, &sim_mu);
	}
	pthread_mutex_unlock(&sim_mu);
	return ev ? cudaSuccess : sim_ret(cudaErrorInvalidResourceHandle);
}

SIM_API cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
	cudaError_t e = sim_enter();
	struct CUevent_st *a, *b;

	if (e)
		return sim_ret(e);
	if (!ms)
		return sim_ret(cudaErrorInvalidValue);
	pthread_mutex_lock(&sim_mu);
	a = event_locked(start);
	b = event_locked(end);
	if (!a || !b || ((a->flags | b->flags) & cudaEventDisableTiming) || !a->s || !b->s)
		e = cudaErrorInvalidResourceHandle;
	else if (!event_done(a) || !event_done(b))
		e = cudaErrorNotReady;
	else
		*ms = (float)(b->t_ms - a->t_ms);
	pthread_mutex_unlock(&sim_mu);
	return sim_ret(e);
}

static cudaError_t stream_wait_event(cudaStream_t stream, cudaEvent_t event, unsigned flags, bool ptz)
{
	cudaError_t e = sim_enter();
	struct CUevent_st *ev;
	struct CUstream_st *s;
	struct sim_op *op;
	uint64_t seq;

	if (e)
		return sim_ret(e);
	if (flags & ~(unsigned)cudaEventWaitExternal)
		return sim_ret(cudaErrorInvalidValue);
	op = sim_op_new(OP_WAIT);
	if (!op)
		return sim_ret(cudaErrorMemoryAllocation);
	pthread_mutex_lock(&sim_mu);
	ev = event_locked(event);
	s = resolve_locked(stream, ptz);
	if (!ev || !s) {
		free(op);
		e = cudaErrorInvalidResourceHandle;
	} else {
		/* The wait is for the record as of now (never recorded: no wait). */
		op->wait = (struct sim_dep){ ev->s, ev->seq };
		if (ev->ncdeps) {
			op->xdeps = malloc(ev->ncdeps * sizeof *op->xdeps);
			if (!op->xdeps) {
				free(op);
				pthread_mutex_unlock(&sim_mu);
				return sim_ret(cudaErrorMemoryAllocation);
			}
			memcpy(op->xdeps, ev->cdeps, ev->ncdeps * sizeof *op->xdeps);
			op->nxdeps = ev->ncdeps;
		}
		e = enqueue_locked(s, op, &seq);
	}
	pthread_mutex_unlock(&sim_mu);
	return sim_ret(e);
}

SIM_API cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
	return stream_wait_event(stream, event, flags, false);
}

SIM_API cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
	return stream_wait_event(stream, event, flags, true);
}

/* ---- stream capture (minimal: captured work is dropped, the graph is a token) */

static char sim_graph_token;

static cudaError_t begin_capture(cudaStream_t stream, enum cudaStreamCaptureMode mode, bool ptz)
{
	cudaError_t e = sim_enter();
	struct CUstream_st *s;

	if (e)
		return sim_ret(e);
	pthread_mutex_lock(&sim_mu);
	s = resolve_locked(stream, ptz);
	if (!s)
		e = cudaErrorInvalidResourceHandle;
	else if (s->kind == SK_LEGACY)
		e = cudaErrorStreamCaptureUnsupported;
	else if (s->capture != cudaStreamCaptureStatusNone)
		e = cudaErrorIllegalState;
	else if ((unsigned)mode > cudaStreamCaptureModeRelaxed)
		e = cudaErrorInvalidValue;
	else {
		s->capture = cudaStreamCaptureStatusActive;
		s->capture_id = ++capture_ids;
		s->capture_mode = mode;
		s->capture_thread = sim_thread_id();
	}
	pthread_mutex_unlock(&sim_mu);
	return sim_ret(e);
}

SIM_API cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
	return begin_capture(stream, mode, false);
}

SIM_API cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
	return begin_capture(stream, mode, true);
}

static cudaError_t end_capture(cudaStream_t stream, cudaGraph_t *graph, bool ptz)
{
	cudaError_t e = sim_enter();
	struct CUstream_st *s;

	if (e)
		return sim_ret(e);
	if (!graph)
		return sim_ret(cudaErrorInvalidValue);
	*graph = NULL;
	pthread_mutex_lock(&sim_mu);
	s = resolve_locked(stream, ptz);
	if (!s)
		e = cudaErrorInvalidResourceHandle;
	else if (s->capture == cudaStreamCaptureStatusNone)
		e = cudaErrorIllegalState;
	else if (s->capture == cudaStreamCaptureStatusInvalidated)
		e = cudaErrorStreamCaptureInvalidated;
	else
		*graph = (cudaGraph_t)(void *)&sim_graph_token;
	if (s)
		s->capture = cudaStreamCaptureStatusNone;
	pthread_mutex_unlock(&sim_mu);
	return sim_ret(e);
}

SIM_API cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph)
{
	return end_capture(stream, pGraph, false);
}

SIM_API cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *pGraph)
{
	return end_capture(stream, pGraph, true);
}

static cudaError_t capture_info(cudaStream_t stream, bool ptz, enum cudaStreamCaptureStatus *status,
				unsigned long long *id)
{
	cudaError_t e = sim_enter();
	struct CUstream_st *s;

	if (e)
		return sim_ret(e);
	if (!status)
		return sim_ret(cudaErrorInvalidValue);
	pthread_mutex_lock(&sim_mu);
	s = resolve_locked(stream, ptz);
	if (!s) {
		e = cudaErrorInvalidResourceHandle;
	} else if (s->kind == SK_LEGACY && capturing_blocking(s->dev)) {
		e = cudaErrorStreamCaptureImplicit;
	} else {
		*status = s->capture;
		if (id)
			*id = s->capture_id;
	}
	pthread_mutex_unlock(&sim_mu);
	return sim_ret(e);
}

SIM_API cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus)
{
	return capture_info(stream, false, pCaptureStatus, NULL);
}

SIM_API cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus)
{
	return capture_info(stream, true, pCaptureStatus, NULL);
}

static cudaError_t get_capture_info(cudaStream_t stream, bool ptz, enum cudaStreamCaptureStatus *status,
				    unsigned long long *id, cudaGraph_t *graph,
				    const cudaGraphNode_t **deps, const cudaGraphEdgeData **edges, size_t *ndeps)
{
	if (graph)
		*graph = NULL;
	if (deps)
		*deps = NULL;
	if (edges)
		*edges = NULL;
	if (ndeps)
		*ndeps = 0;
	return capture_info(stream, ptz, status, id);
}

SIM_API cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, enum cudaStreamCaptureStatus *captureStatus_out,
					     unsigned long long *id_out, cudaGraph_t *graph_out,
					     const cudaGraphNode_t **dependencies_out,
					     const cudaGraphEdgeData **edgeData_out, size_t *numDependencies_out)
{
	return get_capture_info(stream, false, captureStatus_out, id_out, graph_out, dependencies_out,
				edgeData_out, numDependencies_out);
}

SIM_API cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t stream, enum cudaStreamCaptureStatus *captureStatus_out,
						  unsigned long long *id_out, cudaGraph_t *graph_out,
						  const cudaGraphNode_t **dependencies_out,
						  const cudaGraphEdgeData **edgeData_out, size_t *numDependencies_out)
{
	return get_capture_info(stream, true, captureStatus_out, id_out, graph_out, dependencies_out,
				edgeData_out, numDependencies_out);
}

SIM_API cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode)
{
	enum cudaStreamCaptureMode old;
	cudaError_t e = sim_enter();

	if (e)
		return sim_ret(e);
	if (!mode || (unsigned)*mode > cudaStreamCaptureModeRelaxed)
		return sim_ret(cudaErrorInvalidValue);
	old = tls_capture_mode;
	tls_capture_mode = *mode;
	*mode = old;
	return cudaSuccess;
}
