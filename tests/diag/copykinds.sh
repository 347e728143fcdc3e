#!/bin/sh
# copykinds.sh - small copies (never staged) whose host memory pincache
# classifies for its report alone, without asking the runtime where it
# knows the memory (core/hostkind.h): the copies table counts a cache block
# and a registered range (inside them too) as pinned, a malloc'd buffer as
# pageable, before its registration and after its unregistration too; and
# their sync attribution: behind a kernel, a pageable async H2D of 64 KiB
# and a pinned async one are not synced (they return at once), a pageable
# D2H and a cudaMemcpy are (scenario kinds).  In cache mode (staging on and
# off) and in observe mode (the program's real pinned blocks), CUPTI off.
. "$top_srcdir/tests/diag/common.sh"
diag_need

for m in cache:auto cache:off observe:auto; do
	mode=${m%%:*} stage=${m#*:}
	name=$mode-stage-$stage
	PINCACHE_MODE=$mode PINCACHE_STAGE=$stage PINCACHE_CUPTI=off PINCACHE_REPORT=$SIM_TMP/$name.json \
		run_prog shim "$DIAG_BIN/scenario" kinds >"$SIM_TMP/$name.exp" 2>"$SIM_TMP/$name.err"
	rc=$?
	tap_check $rc "$name: the program ran without CUDA errors"
	[ $rc = 0 ] || sed 's/^/# /' "$SIM_TMP/$name.err"
	expect_tap "$name" "$SIM_TMP/$name.json" "$SIM_TMP/$name.exp"
done
tap_done
