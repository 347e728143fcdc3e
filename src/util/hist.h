/* hist.h - the call-duration histogram: quarter-octave buckets of
 * nanoseconds.  Pure arithmetic, shared by the library (which counts into
 * buckets with one atomic add), the report and the CLI (which read
 * percentiles back out).
 *
 * Values below 8 ns get a bucket each; above, every power of two is split
 * into 4 buckets, so a bucket's upper bound is at most 1.25x its lower
 * bound: a percentile read back as a bucket's middle is within 12%.  The last bucket also takes everything past
 * 2^39 ns (about 9 minutes). */
#ifndef PC_HIST_H
#define PC_HIST_H
#include <stdint.h>

#define PC_HIST_SUB 4                              /* buckets per power of two */
#define PC_HIST_MAXSHIFT 39
#define PC_HIST_BUCKETS ((PC_HIST_MAXSHIFT - 1) * PC_HIST_SUB + PC_HIST_SUB)

static inline unsigned pc_hist_bucket(uint64_t ns)
{
    unsigned msb, idx;

    if (ns < 8)
        return (unsigned)ns;
    msb = 63u - (unsigned)__builtin_clzll(ns);     /* 2^msb <= ns */
    if (msb > PC_HIST_MAXSHIFT)
        return PC_HIST_BUCKETS - 1;
    /* the two bits below the top one pick the quarter */
    idx = (msb - 1) * PC_HIST_SUB + (unsigned)((ns >> (msb - 2)) & 3);
    return idx < PC_HIST_BUCKETS ? idx : PC_HIST_BUCKETS - 1;
}

/* Smallest value that lands in bucket i. */
static inline uint64_t pc_hist_lower(unsigned i)
{
    unsigned msb, q;

    if (i < 8)
        return i;
    msb = i / PC_HIST_SUB + 1;
    q = i % PC_HIST_SUB;
    return ((uint64_t)(4 + q)) << (msb - 2);
}

/* One past the largest value of bucket i (the last bucket is open). */
static inline uint64_t pc_hist_upper(unsigned i)
{
    return i + 1 < PC_HIST_BUCKETS ? pc_hist_lower(i + 1) : UINT64_MAX;
}

/* The value below which a fraction q (0..1) of the n counted calls lie,
 * given as the middle of its bucket and never above max (the largest value
 * seen).  0 when nothing was counted. */
static inline uint64_t pc_hist_quantile(const uint64_t *h, uint64_t max, double q)
{
    uint64_t n = 0, seen = 0, rank;
    unsigned i;

    for (i = 0; i < PC_HIST_BUCKETS; i++)
        n += h[i];
    if (!n)
        return 0;
    rank = (uint64_t)(q * (double)n + 0.999999);   /* the ceil(q*n)-th call */
    if (rank < 1)
        rank = 1;
    for (i = 0; i < PC_HIST_BUCKETS; i++) {
        seen += h[i];
        if (seen >= rank) {
            uint64_t lo = pc_hist_lower(i), hi = pc_hist_upper(i);
            uint64_t mid = hi == UINT64_MAX ? lo : lo + (hi - 1 - lo) / 2;
            return max && mid > max ? max : mid;
        }
    }
    return max;
}

#endif
