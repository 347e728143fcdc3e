/* xfer.c - one transfer of staging (xfer.h): its pieces and slices, and
 * the copying of one slice.  No threads, no CUDA: stage_threads.c hands the
 * slices to the copy threads and the caller. */
#include "config.h"
#include <string.h>
#include "stage/xfer.h"
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#define PC_XFER_SLICE_MIN (64u << 10)   /* below this a slice costs more to hand out than to copy */

void pc_xfer_init(struct pc_xfer *x, int to_slots, char *host, size_t n, size_t piece,
                  char *const *slot, unsigned *left, unsigned nslot, unsigned head,
                  unsigned threads)
{
    size_t most;
    unsigned spp;

    memset(x, 0, sizeof *x);
    x->to_slots = to_slots;
    x->host = host;
    x->n = n;
    x->piece = piece ? piece : 1;
    x->slot = slot;
    x->left = left;
    x->nslot = nslot ? nslot : 1;
    x->head = head % x->nslot;
    x->npieces = pc_xfer_count(n, x->piece);
    x->nfull = x->npieces;
    if (n && x->npieces > (n + x->piece - 1) / x->piece) {
        size_t last = n - (x->npieces - 2) * x->piece;
        x->nfull = x->npieces - 2;
        x->half = ((last / 2) + 4095) & ~(size_t)4095;
    }
    /* Twice as many slices as threads evens out the end of each piece. */
    spp = threads > 1 ? 2 * threads : 1;
    most = x->piece / PC_XFER_SLICE_MIN;
    if (most < 1)
        most = 1;
    if (spp > most)
        spp = (unsigned)most;
    x->spp = spp;
    x->nslices = x->npieces * spp;
    x->seats = threads > 1 ? threads - 1 : 0;
}

uint64_t pc_xfer_count(size_t n, size_t piece)
{
    uint64_t m;

    if (!piece)
        piece = 1;
    m = (n + piece - 1) / piece;
    return m + (m && n - (m - 1) * piece >= PC_XFER_SPLIT_MIN);
}

/* Start of slice s of a piece of len bytes: proportional, 64-byte aligned. */
static size_t pc_slice_start(size_t len, unsigned s, unsigned spp)
{
    if (s >= spp)
        return len;
    return (size_t)((uint64_t)len * s / spp) & ~(size_t)63;
}

/* memcpy with non-temporal stores: the bytes go to memory, not to this
 * core's cache, where the DMA engine's reads would have to snoop them out
 * line by line.  x86-64 only (SSE2 is part of it); elsewhere plain memcpy.
 * The caller fences (pc_xfer_copy_slice) before it publishes the slice. */
static void pc_copy_stream(char *dst, const char *src, size_t n)
{
#if defined(__x86_64__)
    size_t head = (size_t)(-(uintptr_t)dst & 15);

    if (n < 256) {
        memcpy(dst, src, n);
        return;
    }
    memcpy(dst, src, head);
    dst += head;
    src += head;
    n -= head;
    for (; n >= 64; n -= 64, dst += 64, src += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)src);
        __m128i b = _mm_loadu_si128((const __m128i *)(src + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(src + 32));
        __m128i d = _mm_loadu_si128((const __m128i *)(src + 48));
        _mm_stream_si128((__m128i *)dst, a);
        _mm_stream_si128((__m128i *)(dst + 16), b);
        _mm_stream_si128((__m128i *)(dst + 32), c);
        _mm_stream_si128((__m128i *)(dst + 48), d);
    }
    memcpy(dst, src, n);
#else
    memcpy(dst, src, n);
#endif
}

void pc_xfer_copy_slice(struct pc_xfer *x, uint64_t i)
{
    uint64_t k = i / x->spp;
    unsigned s = (unsigned)(i % x->spp), slot = pc_xfer_slot(x, k);
    size_t len, a, b;
    char *host, *buf;

    if (x->fn) {             /* pc_xfer_run's job: one slot, counted down */
        x->fn(x->arg, i);
        __atomic_fetch_sub(&x->left[0], 1, __ATOMIC_RELEASE);
        return;
    }
    len = pc_xfer_piece_len(x, k);
    a = pc_slice_start(len, s, x->spp);
    b = pc_slice_start(len, s + 1, x->spp);
    host = x->host + pc_xfer_piece_off(x, k) + a;
    buf = x->slot[slot] + a;
    if (b > a) {
        if (x->to_slots && x->stream_stores) {
            pc_copy_stream(buf, host, b - a);
#if defined(__x86_64__)
            _mm_sfence();    /* non-temporal stores are not ordered by the release below */
#endif
        } else if (x->to_slots) {
            memcpy(buf, host, b - a);
        } else {
            memcpy(host, buf, b - a);
        }
    }
    /* Release: the caller's acquire load of 0 sees every byte copied. */
    __atomic_fetch_sub(&x->left[slot], 1, __ATOMIC_RELEASE);
}
