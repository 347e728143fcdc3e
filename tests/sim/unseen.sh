#!/bin/sh
# unseen: zero-copy work on a non-blocking stream the shim did not see
# created (dlvsym; a path no shim sees) is never read from a reused block,
# with context-wide fences (the default) and with stream-by-stream ones
# (PINCACHE_FENCE=runtime): there the shim hooks dlvsym, and a stream it
# learns of too late makes it stop caching frees, with one warning and the
# fence_blind counter.  -n (nothing reaches the shim) is covered by
# context-wide fences only: that run is the limit, checked under context,
# and under runtime fences with a cudart major the shim has no wrappers for
# loaded (the shim then stops caching frees).
. "$top_srcdir/tests/sim/common.sh"
tap_program "plain -v" plain "$SIM_BIN/unseen" -v
tap_program "plain -c" plain "$SIM_BIN/unseen" -c
if have_shim; then
	for f in context runtime; do
		for how in v c; do
			PINCACHE_FENCE=$f tap_program "shim $f -$how" shim "$SIM_BIN/unseen" -$how
		done
	done
	PINCACHE_FENCE=context tap_program "shim context -n" shim "$SIM_BIN/unseen" -n
	# A cudart of a major the shim has no wrappers for (any library so
	# named) may make streams it never sees: under runtime fences, -n too
	# must then be safe.
	lib11=$top_builddir/tests/driver/libnext_b.so
	if [ -f "$lib11" ]; then
		cp "$lib11" "$SIM_TMP/libcudart.so.11"
		PINCACHE_FENCE=runtime PINCACHE_PRELOAD_EXTRA="$SIM_TMP/libcudart.so.11" \
			tap_program "shim runtime -n, libcudart.so.11 loaded" shim "$SIM_BIN/unseen" -n
	else
		tap_skip "no library to load as libcudart.so.11"
	fi
	PINCACHE_FENCE=runtime PINCACHE_REPORT="$SIM_TMP/r.json" run_prog shim "$SIM_BIN/unseen" -c \
		>/dev/null 2>"$SIM_TMP/err"
	n=$(grep -c 'did not see created' "$SIM_TMP/err")
	[ "$n" -eq 1 ]
	tap_check $? "runtime -c: one warning ($n)"
	b=$(sed -n 's/.*"fence_blind": *\([0-9]*\).*/\1/p' "$SIM_TMP/r.json")
	[ "${b:-0}" -ge 50 ]
	tap_check $? "runtime -c: the report counts the frees passed to the runtime (fence_blind=${b:-?})"
else
	tap_skip "shim: libpincache.so not built"
fi
tap_done
