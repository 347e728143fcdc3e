#!/bin/sh
# hostpool: pinned memory that never passes through cudaHostAlloc (issue
# 17).  hostpool.c allocates from host memory pools (runtime, and driver
# through cuGetProcAddress) and host VMM, next to cudaHostAlloc and
# cudaHostRegister, frees some, and says what it pinned by source; the
# report's "pinned" object must say exactly that, live and peak.  Bad input
# gets the same codes plain and shimmed (the program checks them in both);
# mode off passes everything through.
. "$top_srcdir/tests/driver/common.sh"

tap_program "plain" plain "$DRV_BIN/hostpool"
if ! have_shim; then
	tap_skip "shim: libpincache.so not built"
	tap_done
	exit 0
fi

# check_sources REPORT LABEL: the report's pinned bytes by source against
# the program's "expect SOURCE LIVE PEAK" lines (in $SIM_TMP/out).
check_sources() {
	sed -n 's/^expect //p' "$SIM_TMP/out" >"$SIM_TMP/expect"
	[ -s "$SIM_TMP/expect" ]
	tap_check $? "$2: the program said what it pinned"
	while read -r src live peak; do
		tap_eq "$(jget "$1" "pinned.$src.live")" "$live" "$2: $src live"
		tap_eq "$(jget "$1" "pinned.$src.peak")" "$peak" "$2: $src peak"
	done <"$SIM_TMP/expect"
}

for redirect in 0 1; do
	label=shim
	[ $redirect = 1 ] && label="shim, cudaMallocAsync from the host pool"
	SIM_ASYNC_HOST_POOL=$redirect drv_shim "$label" "$SIM_TMP/pool$redirect.json" "$DRV_BIN/hostpool"
	if jcheck_ok && report_ok "$SIM_TMP/pool$redirect.json"; then
		check_sources "$SIM_TMP/pool$redirect.json" "$label"
	else
		tap_skip "report checks need tests/diag/jcheck (jansson)"
	fi
done
# Mode off: nothing counted, everything forwarded.
PINCACHE_MODE=off PINCACHE_LIB_EXPECTED=1 PINCACHE_REPORT=off tap_program "mode off" shim "$DRV_BIN/hostpool"
tap_done
