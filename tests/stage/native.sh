#!/bin/sh
# native: PINCACHE_STAGE=auto leaves the pageable copies of a device that
# reads pageable memory through the host's page tables (SIM_PAGEABLE_ACCESS=ats)
# to the runtime, and says so in the report; it stages them on HMM (hmm) and
# where the device cannot read pageable memory at all (none, the H200);
# PINCACHE_STAGE=on stages them anyway and asks nothing, off stages nothing.
# The bytes are right in every case, the attributes are asked once per device
# (again after a cudaDeviceReset), and the program's last error is its own.
. "$top_srcdir/tests/sim/common.sh"

NT=$top_builddir/tests/stage/native
SIM_DEVICES=2
export SIM_DEVICES
unset PINCACHE_STAGE PINCACHE_STAGE_MIN PINCACHE_MODE SIM_PAGEABLE_ACCESS
PINCACHE_REPORT=off
export PINCACHE_REPORT
# Staging's mechanics: copies from freshly mapped sources staged too
# (PINCACHE_STAGE_FRESH_MIN=0; tests/stage/fresh.sh tests the rule).
PINCACHE_STAGE_FRESH_MIN=0
export PINCACHE_STAGE_FRESH_MIN

for m in none hmm ats; do
	SIM_PAGEABLE_ACCESS=$m tap_program "plain $m" plain "$NT" -e runtime
done
if ! have_shim; then
	tap_skip "shim: libpincache.so not built"
	tap_done
	exit 0
fi

# Two devices asked twice each, device 0 again after its reset: 6.
for m in none hmm; do
	SIM_PAGEABLE_ACCESS=$m SIM_CALLS=1 tap_program "shim $m" shim "$NT" -e staged -q 6
done
SIM_PAGEABLE_ACCESS=ats SIM_CALLS=1 PINCACHE_REPORT=$SIM_TMP/ats.json \
	tap_program "shim ats" shim "$NT" -e runtime -q 6
j=$SIM_TMP/ats.json
grep -q '"native_devices": \[0, 1\]' "$j"
tap_check $? "ats: the JSON report names both devices (staging.native_devices)"
for k in stage_h2d_calls stage_d2h_calls stage_h2d_driver_calls stage_d2h_driver_calls; do
	v=$(report_stat $k "$j")
	[ "$v" = 0 ]
	tap_check $? "ats: the copies were the runtime's, unstaged and untimed ($k = ${v:-missing})"
done
SIM_PAGEABLE_ACCESS=ats PINCACHE_REPORT=stderr run_prog shim "$NT" -e runtime >/dev/null 2>"$SIM_TMP/ats.err"
for d in 0 1; do
	n=$(grep -c "^pincache\[[0-9]*\]: .*staging off on device $d: it reads pageable memory natively (PageableMemoryAccessUsesHostPageTables)\$" "$SIM_TMP/ats.err")
	[ "$n" = 1 ]
	tap_check $? "ats: the text report says why for device $d (got $n lines)"
done
SIM_PAGEABLE_ACCESS=hmm PINCACHE_REPORT=$SIM_TMP/hmm.json tap_program "shim hmm report" shim "$NT" -e staged
grep -q '"native_devices": \[\]' "$SIM_TMP/hmm.json"
tap_check $? "hmm: no native device in the JSON report"
# The CLI reads the field back: report and merge say it too.
cli=${PINCACHE_CLI:-$top_builddir/scripts/pincache}
if [ -x "$top_builddir/src/cli/pincache-json" ]; then
	n=$("$cli" report "$j" 2>&1 | grep -c "staging off on device [01]: it reads pageable memory natively")
	[ "$n" = 2 ]
	tap_check $? "pincache report: the two lines from the JSON (got $n)"
	"$cli" merge --json "$SIM_TMP/hmm.json" "$j" 2>/dev/null | grep -q '"native_devices": \[0, 1\]'
	tap_check $? "pincache merge: the devices of either report"
else
	tap_skip "pincache-json not built (needs jansson)"
fi

# Forced on: staged, nothing asked; the old boolean spellings too.
for v in on yes 1; do
	PINCACHE_STAGE=$v SIM_PAGEABLE_ACCESS=ats SIM_CALLS=1 tap_program "shim ats PINCACHE_STAGE=$v" shim \
		"$NT" -e staged -q 0
done
for v in off 0; do
	PINCACHE_STAGE=$v SIM_PAGEABLE_ACCESS=none SIM_CALLS=1 tap_program "shim PINCACHE_STAGE=$v" shim \
		"$NT" -e runtime -q 0
done

# PINCACHE_VERBOSE shows the choice; a bad value warns once and keeps auto.
for a in auto:auto yes:on 0:off banana:auto; do
	PINCACHE_STAGE=${a%%:*} PINCACHE_VERBOSE=1 run_prog shim "$NT" >/dev/null 2>"$SIM_TMP/v.err"
	grep -q "^pincache\[[0-9]*\]:   PINCACHE_STAGE=${a#*:}" "$SIM_TMP/v.err"
	tap_check $? "PINCACHE_STAGE=${a%%:*} is ${a#*:}"
done
n=$(grep -c "warning: .*PINCACHE_STAGE" "$SIM_TMP/v.err")
[ "$n" = 1 ]
tap_check $? "PINCACHE_STAGE=banana: one warning (got $n)"

# The sim's own variable: one warning, then none.
SIM_PAGEABLE_ACCESS=grace run_prog plain "$NT" -e runtime >"$SIM_TMP/g.out" 2>"$SIM_TMP/g.err"
rc=$?
n=$(grep -c "sim: ignoring SIM_PAGEABLE_ACCESS=grace" "$SIM_TMP/g.err")
[ "$rc" = 0 ] && [ "$n" = 1 ] && ! grep -q "^not ok" "$SIM_TMP/g.out"
tap_check $? "SIM_PAGEABLE_ACCESS=grace: one warning, then none (exit $rc, $n warnings)"
tap_done
