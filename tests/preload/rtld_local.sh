#!/bin/sh
# rtld_local: a runtime loaded RTLD_LOCAL (as by a Python extension) is found
# and served by the cache.  Without the fallback in real.c every call fails.
. "$top_srcdir/tests/sim/common.sh"
ext=$top_builddir/tests/preload/libext.so
tap_program "plain" plain "$top_builddir/tests/preload/rtld_local" "$ext" plain
if have_shim; then
	tap_program "shim" shim "$top_builddir/tests/preload/rtld_local" "$ext" shim
else
	tap_skip "shim: libpincache.so not built"
fi
tap_done
