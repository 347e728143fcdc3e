/* clock.c - durations from the TSC where it can be trusted (clock.h). */
#include "config.h"
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include "util/clock.h"
#include "util/fdsafe.h"
#include "util/log.h"
#include "util/options.h"
#include "util/stats.h"

uint64_t pc_tick_mult;
int pc_tick_pending;
/* The calibration's origin: written by pc_tick_begin before pc_tick_pending
 * is set (release), read after it is seen set (acquire). */
static uint64_t pc_tick_ns0, pc_tick_t0;

int pc_tick_usable(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    char src[16];

    /* Invariant TSC: CPUID 0x80000007, EDX bit 8. */
    if (!__get_cpuid(0x80000007, &a, &b, &c, &d) || !(d & (1u << 8)))
        return 0;
    pc_read_small("/sys/devices/system/clocksource/clocksource0/current_clocksource", src, sizeof src);
    return strncmp(src, "tsc\n", 4) == 0;
#else
    return 0;
#endif
}

/* Both clocks at one moment: the TSC read on either side of
 * CLOCK_MONOTONIC, kept when the two TSC readings are less than
 * PC_TICK_BRACKET apart (nothing, a preemption say, came between them:
 * 2000 ticks is under 2 us at any TSC rate of 1 GHz or more, against the
 * 10 ms of the calibration).  0, or -1 when four tries failed. */
#define PC_TICK_BRACKET 2000u
static int pc_tick_pair(uint64_t *ns, uint64_t *t)
{
    for (int i = 0; i < 4; i++) {
        uint64_t a = pc_tick(), n = pc_now_ns(), b = pc_tick();

        if (b > a && b - a < PC_TICK_BRACKET) {
            *ns = n;
            *t = a + (b - a) / 2;
            return 0;
        }
    }
    return -1;
}

void pc_tick_begin(void)
{
    __atomic_store_n(&pc_tick_mult, 0, __ATOMIC_RELAXED);
    if (pc_tick_pair(&pc_tick_ns0, &pc_tick_t0) == 0)
        __atomic_store_n(&pc_tick_pending, 1, __ATOMIC_RELEASE);
}

void pc_tick_learn(uint64_t now_ns)
{
    uint64_t ns, t;

    if (!__atomic_load_n(&pc_tick_pending, __ATOMIC_ACQUIRE) || now_ns < pc_tick_ns0 + PC_TICK_CAL_NS ||
        pc_tick_pair(&ns, &t) != 0 || t <= pc_tick_t0)
        return;
    /* Threads that get here together each store a rate as good as the other. */
    __atomic_store_n(&pc_tick_mult, (uint64_t)(((unsigned __int128)(ns - pc_tick_ns0) << 32) / (t - pc_tick_t0)),
                     __ATOMIC_RELAXED);
    __atomic_store_n(&pc_tick_pending, 0, __ATOMIC_RELAXED);
}

void pc_clock_start(void)
{
    if (pc_opt.clock == PC_CLOCK_AUTO && !pc_opt.trace && pc_opt.cupti == PC_CUPTI_OFF && pc_tick_usable()) {
        pc_tick_begin();
        if (__atomic_load_n(&pc_tick_pending, __ATOMIC_RELAXED))
            pc_info("call durations: from the TSC (clock source tsc), its rate measured over the first %llu ms",
                    (unsigned long long)(PC_TICK_CAL_NS / 1000000));
    }
}
