/* fake_cupti.c - a test double of libcupti.so.13: the few Activity and
 * Callback API entry points pincache and its tests use, recording every call
 * and who made it (libpincache or anyone else).
 *
 * Records are made by the test program (fakeCuptiKernel, fakeCuptiMemcpy),
 * kept while their kind is enabled, and delivered through the registered
 * buffer callbacks on cuptiActivityFlushAll, as CUPTI does.  Timestamps are
 * CLOCK_REALTIME nanoseconds, CUPTI's default clock on Linux.
 *
 * With FAKE_CUPTI_LOG=PATH every call is also appended to PATH as one line
 * "PID WHO FUNCTION ARG" (WHO: P = libpincache, A = anyone else), so a
 * script can see what happened at exit and in forked children. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "fake_cupti.h"

#define EXPORT __attribute__((visibility("default")))
#define REC_SIZE 64
#define MAX_PENDING 1024
#define MAX_LOG 256

typedef void (*req_fn)(uint8_t **buf, size_t *size, size_t *max_records);
typedef void (*comp_fn)(void *ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static req_fn cb_req;
static comp_fn cb_comp;
static unsigned long long enabled;          /* bit per activity kind */
static void *subscriber_cb;
static int subscribers;
static uint8_t pending[MAX_PENDING][REC_SIZE];
static int npending;
static struct fake_call calls[MAX_LOG];
static int ncalls;

/* A call from libpincache's own code.  A return address inside one of its
 * exported cupti* wrappers is a call it forwards for someone else (when the
 * wrapper does not tail-call, as under the sanitizers). */
static int by_pincache(void *ret)
{
    const ElfW(Sym) *sym = NULL;
    Dl_info info;

    if (!dladdr1(ret, &info, (void **)&sym, RTLD_DL_SYMENT) || !info.dli_fname ||
        !strstr(info.dli_fname, "libpincache"))
        return 0;
    return !(sym && info.dli_sname && !strncmp(info.dli_sname, "cupti", 5) &&
             (char *)ret < (char *)info.dli_saddr + sym->st_size);
}

static void note(const char *fn, long long arg, void *ret)
{
    int p = by_pincache(ret);
    const char *path = getenv("FAKE_CUPTI_LOG");

    pthread_mutex_lock(&lock);
    if (ncalls < MAX_LOG) {
        calls[ncalls].fn = fn;
        calls[ncalls].by_pincache = p;
        calls[ncalls].arg = arg;
        ncalls++;
    }
    pthread_mutex_unlock(&lock);
    if (path && *path) {
        char line[160];
        int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        int n = snprintf(line, sizeof line, "%d %c %s %lld\n", (int)getpid(), p ? 'P' : 'A', fn, arg);
        if (fd >= 0) {
            if (write(fd, line, (size_t)n) < 0) {
            }
            close(fd);
        }
    }
}

#define NOTE(fn, arg) note(fn, (long long)(arg), __builtin_return_address(0))

EXPORT int cuptiActivityRegisterCallbacks(req_fn req, comp_fn comp)
{
    NOTE("cuptiActivityRegisterCallbacks", 0);
    if (!req || !comp)
        return 1;
    pthread_mutex_lock(&lock);
    cb_req = req;
    cb_comp = comp;
    pthread_mutex_unlock(&lock);
    return 0;
}

static int set_kind(int kind, int on)
{
    if (kind <= 0 || kind >= 64)
        return 21;                          /* CUPTI_ERROR_INVALID_KIND */
    pthread_mutex_lock(&lock);
    if (on)
        enabled |= 1ull << kind;
    else
        enabled &= ~(1ull << kind);
    pthread_mutex_unlock(&lock);
    return 0;
}

EXPORT int cuptiActivityEnable(int kind)
{
    const char *fail = getenv("FAKE_CUPTI_FAIL_ENABLE");

    NOTE("cuptiActivityEnable", kind);
    if (fail && *fail == '1')
        return 1;                           /* CUPTI_ERROR_INVALID_PARAMETER */
    return set_kind(kind, 1);
}

EXPORT int cuptiActivityEnableContext(void *ctx, int kind)
{
    NOTE("cuptiActivityEnableContext", kind);
    return set_kind(kind, 1);
}

EXPORT int cuptiActivityEnableAndDump(int kind)
{
    NOTE("cuptiActivityEnableAndDump", kind);
    return set_kind(kind, 1);
}

EXPORT int cuptiActivityDisable(int kind)
{
    NOTE("cuptiActivityDisable", kind);
    return set_kind(kind, 0);
}

/* Deliver the pending records through the registered callbacks, in buffers
 * of whatever size the client gives. */
EXPORT int cuptiActivityFlushAll(uint32_t flag)
{
    uint8_t *buf;
    size_t size, max, valid;
    int i = 0, n;

    NOTE("cuptiActivityFlushAll", flag);
    if (!cb_req || !cb_comp)
        return 17;                          /* CUPTI_ERROR_INVALID_OPERATION */
    for (;;) {
        pthread_mutex_lock(&lock);
        n = npending;
        pthread_mutex_unlock(&lock);
        if (i >= n)
            break;
        buf = NULL;
        size = max = 0;
        cb_req(&buf, &size, &max);
        if (!buf || size < REC_SIZE)
            return 0;                       /* declined: the records stay */
        valid = 0;
        pthread_mutex_lock(&lock);
        while (i < npending && valid + REC_SIZE <= size) {
            memcpy(buf + valid, pending[i++], REC_SIZE);
            valid += REC_SIZE;
        }
        pthread_mutex_unlock(&lock);
        cb_comp(NULL, 0, buf, size, valid);
    }
    pthread_mutex_lock(&lock);
    npending = 0;
    pthread_mutex_unlock(&lock);
    return 0;
}

EXPORT int cuptiActivityGetNextRecord(uint8_t *buf, size_t valid, void **record)
{
    uint8_t *next = *record ? (uint8_t *)*record + REC_SIZE : buf;

    if (!buf)
        return 1;
    if (next + REC_SIZE > buf + valid)
        return 12;                          /* CUPTI_ERROR_MAX_LIMIT_REACHED */
    *record = next;
    return 0;
}

EXPORT int cuptiActivityGetNumDroppedRecords(void *ctx, uint32_t stream, size_t *dropped)
{
    if (!dropped)
        return 1;
    *dropped = 0;
    return 0;
}

EXPORT int cuptiGetTimestamp(uint64_t *ts)
{
    if (!ts)
        return 1;
    *ts = fakeCuptiNow();
    return 0;
}

EXPORT int cuptiActivityRegisterTimestampCallback(void *fn)
{
    NOTE("cuptiActivityRegisterTimestampCallback", 0);
    return 0;
}

EXPORT int cuptiSubscribe(void **subscriber, void *callback, void *userdata)
{
    NOTE("cuptiSubscribe", 0);
    pthread_mutex_lock(&lock);
    if (subscribers) {
        pthread_mutex_unlock(&lock);
        return 39;                          /* CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED */
    }
    subscribers = 1;
    subscriber_cb = callback;
    pthread_mutex_unlock(&lock);
    if (subscriber)
        *subscriber = &subscriber_cb;
    return 0;
}

EXPORT int cuptiSubscribe_v2(void **subscriber, void *callback, void *userdata, void *params)
{
    NOTE("cuptiSubscribe_v2", 0);
    return cuptiSubscribe(subscriber, callback, userdata);
}

EXPORT int cuptiUnsubscribe(void *subscriber)
{
    NOTE("cuptiUnsubscribe", 0);
    pthread_mutex_lock(&lock);
    subscribers = 0;
    pthread_mutex_unlock(&lock);
    return 0;
}

EXPORT int cuptiFinalize(void)
{
    NOTE("cuptiFinalize", 0);
    return 0;
}

/* --- the test side (FAKE_1.0) --- */

EXPORT uint64_t fakeCuptiNow(void)
{
    struct timespec t;

    clock_gettime(CLOCK_REALTIME, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void put64(uint8_t *r, unsigned off, uint64_t v)
{
    memcpy(r + off, &v, sizeof v);
}

static void put32(uint8_t *r, unsigned off, uint32_t v)
{
    memcpy(r + off, &v, sizeof v);
}

/* Keep a record if its kind is enabled; 1 if kept. */
static int keep(const uint8_t *r, int kind)
{
    int kept = 0;

    pthread_mutex_lock(&lock);
    if ((enabled & (1ull << kind)) && npending < MAX_PENDING) {
        memcpy(pending[npending++], r, REC_SIZE);
        kept = 1;
    }
    pthread_mutex_unlock(&lock);
    return kept;
}

EXPORT int fakeCuptiKernel(uint64_t start, uint64_t end, uint32_t stream)
{
    uint8_t r[REC_SIZE];
    int kind = (enabled & (1ull << 10)) ? 10 : 3;   /* CONCURRENT_KERNEL, else KERNEL */

    memset(r, 0, sizeof r);
    put32(r, 0, (uint32_t)kind);
    put64(r, 16, start);
    put64(r, 24, end);
    put32(r, 40, 0);
    put32(r, 48, stream);
    return keep(r, kind);
}

EXPORT int fakeCuptiMemcpy(uint64_t start, uint64_t end, uint64_t bytes, int src_kind, int dst_kind,
                           uint32_t stream)
{
    uint8_t r[REC_SIZE];

    memset(r, 0, sizeof r);
    put32(r, 0, 1);                         /* MEMCPY */
    r[4] = src_kind == 3 && dst_kind == 3 ? 8 : src_kind == 3 ? 2 : 1;   /* copyKind DtoH / HtoD */
    r[5] = (uint8_t)src_kind;
    r[6] = (uint8_t)dst_kind;
    put64(r, 8, bytes);
    put64(r, 16, start);
    put64(r, 24, end);
    put32(r, 40, stream);
    return keep(r, 1);
}

EXPORT int fakeCuptiCalls(struct fake_call *out, int max)
{
    int n;

    pthread_mutex_lock(&lock);
    n = ncalls < max ? ncalls : max;
    memcpy(out, calls, (size_t)n * sizeof *out);
    pthread_mutex_unlock(&lock);
    return n;
}

EXPORT int fakeCuptiOwnsCallbacks(void *req, void *comp)
{
    int r;

    pthread_mutex_lock(&lock);
    r = cb_req == (req_fn)req && cb_comp == (comp_fn)comp;
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT unsigned long long fakeCuptiEnabled(void)
{
    unsigned long long e;

    pthread_mutex_lock(&lock);
    e = enabled;
    pthread_mutex_unlock(&lock);
    return e;
}
