/* print_options.c - run pc_options_init with the caller's environment, so
 * that PINCACHE_HELP=1 / PINCACHE_VERBOSE=1 print what the library would. */
#include "config.h"
#include "util/options.h"

int main(void)
{
    pc_options_init();
    return 0;
}
