/* clock.h - how long a call took, cheaply (diag.h's call record).
 *
 * pc_now_ns (stats.h) reads CLOCK_MONOTONIC through the vDSO: 22 ns on the
 * 2-core CI machine, 26-41 ns on the H200's host (tests/bench/callcost.cu),
 * and a cache hit pair reads it four times.  Where the kernel's own clock is
 * the TSC (clocksource "tsc": constant rate, synchronized across cores, or
 * the kernel would not use it), a call's duration comes from the TSC
 * instead (rdtsc: 10 ns on the CI machine), converted at a rate measured
 * against CLOCK_MONOTONIC over the process's first PC_TICK_CAL_NS.  Only
 * durations: a time that meets another clock (the trace, CUPTI's
 * timeline) is CLOCK_MONOTONIC, so the TSC is not used while either is on,
 * nor with PINCACHE_CLOCK=monotonic. */
#ifndef PC_CLOCK_H
#define PC_CLOCK_H
#include <stdint.h>

#define PC_TICK_CAL_NS 10000000ull   /* 10 ms: a 1 ns reading error is 1e-7 of it */

/* ns per tick, as a 32.32 fixed-point number; 0 while durations are read
 * with pc_now_ns (not calibrated yet, or no usable TSC).  Atomic. */
extern uint64_t pc_tick_mult;
/* 1 while a calibration is waiting for its first late enough reading.  Atomic. */
extern int pc_tick_pending;

static inline uint64_t pc_tick(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __builtin_ia32_rdtsc();
#else
    return 0;
#endif
}

/* The rate to time a call with (0: use pc_now_ns). */
static inline uint64_t pc_tick_rate(void)
{
    return __atomic_load_n(&pc_tick_mult, __ATOMIC_RELAXED);
}

/* ticks -> ns at rate mult. */
static inline uint64_t pc_tick_ns(uint64_t ticks, uint64_t mult)
{
    return (ticks >> 32) * mult + (((ticks & 0xffffffffull) * mult) >> 32);
}

/* Can durations be read from the TSC here (the CPU and the kernel's clock)? */
int pc_tick_usable(void);
/* Start calibrating: the origin is now. */
void pc_tick_begin(void);
/* now_ns, just read with pc_now_ns: once PC_TICK_CAL_NS have passed since
 * the origin, the rate is measured (from a reading of its own) and set, and
 * durations are read from the TSC. */
void pc_tick_learn(uint64_t now_ns);
static inline void pc_tick_maybe_learn(uint64_t now_ns)
{
    if (__builtin_expect(__atomic_load_n(&pc_tick_pending, __ATOMIC_RELAXED), 0))
        pc_tick_learn(now_ns);
}

/* Start-up: the TSC for durations when PINCACHE_CLOCK allows it, it is
 * usable, and neither the trace nor CUPTI is on. */
void pc_clock_start(void);

#endif
