/* state.c - the process's state (state.h). */
#include "config.h"
#include "util/state.h"

struct pc_state pc_state;
__thread int pc_tls_depth __attribute__((tls_model("initial-exec")));
