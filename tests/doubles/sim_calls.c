/* sim_calls.c - SIM_CALLS=1: count the calls that enter the simulated
 * runtime from outside it (the program, or a shim in front of it), per
 * entry point.  The sim is built with -finstrument-functions; this hook
 * keeps a call whose call site lies outside the sim's own object, so that
 * the sim's calls to itself (and to its inlined helpers) are not counted.
 * A shim's own CUDA calls are what it adds to the program's: run the same
 * program plainly and under the shim and compare (tests/diag/callcount.sh).
 * Off (the default) the hook costs one load per function entry. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "sim_internal.h"

#define NOI __attribute__((no_instrument_function))
#define SIM_CALLS_SLOTS 1024u

struct sim_call_slot {
	_Atomic(uintptr_t) fn;
	atomic_ullong n;
};

static struct sim_call_slot sim_calls_tab[SIM_CALLS_SLOTS];
static atomic_int sim_calls_on;   /* 0: not read yet, 1: off, 2: on */
static void *sim_calls_base;      /* the sim's own load address (dladdr) */

void __cyg_profile_func_enter(void *fn, void *site) NOI __attribute__((visibility("hidden")));
void __cyg_profile_func_exit(void *fn, void *site) NOI __attribute__((visibility("hidden")));

static NOI int sim_calls_enabled(void)
{
	int on = atomic_load_explicit(&sim_calls_on, memory_order_acquire);
	Dl_info self;

	if (on)
		return on == 2;
	const char *v = getenv("SIM_CALLS");
	if (v && *v && strcmp(v, "0") != 0 && dladdr((void *)sim_calls_enabled, &self))
		sim_calls_base = self.dli_fbase;
	on = sim_calls_base ? 2 : 1;
	atomic_store_explicit(&sim_calls_on, on, memory_order_release);
	return on == 2;
}

void __cyg_profile_func_enter(void *fn, void *site)
{
	Dl_info from;
	uintptr_t f = (uintptr_t)fn;

	if (!sim_calls_enabled())
		return;
	if (dladdr(site, &from) && from.dli_fbase == sim_calls_base)
		return;              /* the sim calling itself */
	for (unsigned i = (unsigned)(f >> 4) % SIM_CALLS_SLOTS, k = 0; k < SIM_CALLS_SLOTS;
	     k++, i = (i + 1) % SIM_CALLS_SLOTS) {
		uintptr_t cur = atomic_load(&sim_calls_tab[i].fn);
		if (cur == 0 && atomic_compare_exchange_strong(&sim_calls_tab[i].fn, &cur, f))
			cur = f;
		if (cur == f) {
			atomic_fetch_add(&sim_calls_tab[i].n, 1);
			return;
		}
	}
}

void __cyg_profile_func_exit(void *fn, void *site)
{
}

/* The exported name of fn, or the driver entry point it stands for. */
static NOI const char *sim_call_name(uintptr_t fn)
{
	Dl_info d;

	if (dladdr((void *)fn, &d) && d.dli_sname && (uintptr_t)d.dli_saddr == fn)
		return d.dli_sname;
	return sim_drv_name((void *)fn);
}

SIM_API NOI int simCalls(struct sim_call *out, int max)
{
	int n = 0;

	for (unsigned i = 0; i < SIM_CALLS_SLOTS; i++) {
		uintptr_t f = atomic_load(&sim_calls_tab[i].fn);
		const char *name;

		if (!f || !(name = sim_call_name(f)) || strncmp(name, "cu", 2) != 0)
			continue;    /* the sim's own extras (simCalls, simLaunch) are not CUDA calls */
		if (n < max && out) {
			out[n].name = name;
			out[n].calls = atomic_load(&sim_calls_tab[i].n);
		}
		n++;
	}
	return n;
}
