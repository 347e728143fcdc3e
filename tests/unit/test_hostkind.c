/* test_hostkind.c - what the copy accounting knows of host memory without
 * CUDA (core/hostkind.h) alone: the followed ranges (interior lookups,
 * removal, replacement, forgetting), and the pages remembered as pageable
 * (per thread, forgotten at every change, a change made while the runtime
 * answered not missed). */
#include "config.h"
#include <pthread.h>
#include <stdint.h>
#include "core/hostkind.h"
#include "tap.h"

#define P(a) ((const void *)(uintptr_t)(a))

static void test_ranges(void)
{
    ok(!pc_hostkind_pinned(P(0x10000)), "nothing followed: not pinned");
    pc_hostkind_add(P(0x10000), 0x3000);
    pc_hostkind_add(P(0x40000), 0x1000);
    pc_hostkind_add(P(0x20000), 0x100);
    ok(pc_hostkind_pinned(P(0x10000)) && pc_hostkind_pinned(P(0x12fff)), "a range's start and its last byte");
    ok(!pc_hostkind_pinned(P(0x13000)) && !pc_hostkind_pinned(P(0xffff)), "... and not around it");
    ok(pc_hostkind_pinned(P(0x200ff)) && !pc_hostkind_pinned(P(0x20100)), "a range added out of order");
    ok(pc_hostkind_pinned(P(0x40800)) && !pc_hostkind_pinned(P(0x50000)), "the last range");
    pc_hostkind_remove(P(0x10001));
    ok(pc_hostkind_pinned(P(0x10000)), "removing an interior pointer removes nothing");
    pc_hostkind_remove(P(0x10000));
    ok(!pc_hostkind_pinned(P(0x10000)) && !pc_hostkind_pinned(P(0x12000)), "removed");
    ok(pc_hostkind_pinned(P(0x20000)) && pc_hostkind_pinned(P(0x40000)), "the others stay");
    pc_hostkind_add(P(0x20000), 0x2000);
    ok(pc_hostkind_pinned(P(0x21000)), "a second add of a start replaces its range");
    pc_hostkind_forget_device(0);
    ok(!pc_hostkind_pinned(P(0x20000)) && !pc_hostkind_pinned(P(0x40000)), "a device's loss forgets them all");
    for (uintptr_t i = 0; i < 100; i++)
        pc_hostkind_add(P(0x100000 + i * 0x2000), 0x1000);
    ok(pc_hostkind_pinned(P(0x100000 + 57 * 0x2000 + 5)) && !pc_hostkind_pinned(P(0x100000 + 57 * 0x2000 + 0x1000)),
       "100 ranges: inside one, and in the gap after it");
    pc_hostkind_forget_device(0);
}

static void *other_thread(void *arg)
{
    *(int *)arg = pc_hostkind_pageable(P(0x7000));
    return NULL;
}

static void test_pageable(void)
{
    unsigned e;
    pthread_t t;
    int seen = -1;

    ok(!pc_hostkind_pageable(P(0x7000)), "a page never noted is not known");
    pc_hostkind_note_pageable(P(0x7010), pc_hostkind_epoch());
    ok(pc_hostkind_pageable(P(0x7000)) && pc_hostkind_pageable(P(0x7fff)), "noted: its whole page");
    ok(!pc_hostkind_pageable(P(0x8000)), "... not the next one");
    pthread_create(&t, NULL, other_thread, &seen);
    pthread_join(t, NULL);
    is_int(seen, 0, "another thread does not know it");
    pc_hostkind_changed();
    ok(!pc_hostkind_pageable(P(0x7000)), "forgotten once memory may have been pinned");
    e = pc_hostkind_epoch();
    pc_hostkind_changed();                 /* while the runtime answered */
    pc_hostkind_note_pageable(P(0x7000), e);
    ok(!pc_hostkind_pageable(P(0x7000)), "an answer older than a change is not kept");
    pc_hostkind_note_pageable(P(0x7000), pc_hostkind_epoch());
    pc_hostkind_note_pageable(P(0x8000), pc_hostkind_epoch());
    ok(pc_hostkind_pageable(P(0x7000)) && pc_hostkind_pageable(P(0x8000)), "two pages noted: both known");
}

int main(void)
{
    test_ranges();
    test_pageable();
    return done_testing();
}
