/* The CUPTI entry points through which another component (a profiler such
 * as torch.profiler's Kineto, or the program) takes CUPTI: pincache hands it
 * over first (cupti.c), then forwards to the real function of the loaded
 * libcupti.  Types are spelt here as CUPTI's ABI has them (enums are int,
 * handles pointers) so that no CUPTI header is needed. */
#include "config.h"
#include "intercept/guard.h"
#include "diag/cupti.h"

typedef int pc_cupti_result;

/* Start-up first: what is handed over depends on the options. */
static void *pc_cupti_real(const char *name)
{
    if (!__atomic_load_n(&pc_state.inited, __ATOMIC_ACQUIRE))
        pc_init();
    return pc_cupti_hand_over(name);
}

#define PC_CUPTI_FORWARD(name, params, ...)                                  \
    do {                                                                     \
        pc_cupti_result (*f_) params = (pc_cupti_result (*) params)pc_cupti_real(#name); \
        return f_ ? f_(__VA_ARGS__) : PC_CUPTI_ERROR_NOT_INITIALIZED;       \
    } while (0)

PC_EXPORT pc_cupti_result cuptiActivityRegisterCallbacks(void *requested, void *completed)
{
    PC_CUPTI_FORWARD(cuptiActivityRegisterCallbacks, (void *, void *), requested, completed);
}

PC_EXPORT pc_cupti_result cuptiActivityEnable(int kind)
{
    PC_CUPTI_FORWARD(cuptiActivityEnable, (int), kind);
}

PC_EXPORT pc_cupti_result cuptiActivityEnableContext(void *context, int kind)
{
    PC_CUPTI_FORWARD(cuptiActivityEnableContext, (void *, int), context, kind);
}

PC_EXPORT pc_cupti_result cuptiActivityEnableAndDump(int kind)
{
    PC_CUPTI_FORWARD(cuptiActivityEnableAndDump, (int), kind);
}

PC_EXPORT pc_cupti_result cuptiActivityRegisterTimestampCallback(void *fn)
{
    PC_CUPTI_FORWARD(cuptiActivityRegisterTimestampCallback, (void *), fn);
}

PC_EXPORT pc_cupti_result cuptiSubscribe(void *subscriber, void *callback, void *userdata)
{
    PC_CUPTI_FORWARD(cuptiSubscribe, (void *, void *, void *), subscriber, callback, userdata);
}

PC_EXPORT pc_cupti_result cuptiSubscribe_v2(void *subscriber, void *callback, void *userdata, void *params)
{
    PC_CUPTI_FORWARD(cuptiSubscribe_v2, (void *, void *, void *, void *), subscriber, callback, userdata,
                     params);
}

PC_EXPORT pc_cupti_result cuptiFinalize(void)
{
    pc_cupti_result (*f)(void) = (pc_cupti_result (*)(void))pc_cupti_real("cuptiFinalize");
    return f ? f() : PC_CUPTI_ERROR_NOT_INITIALIZED;
}
