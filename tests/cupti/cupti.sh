#!/bin/sh
# cupti: pincache's use of CUPTI, with no GPU.  cupti_prog runs on the
# simulated device with a fake libcupti.so.13 (both in tests/doubles) that
# records who called what.  Each scenario checks the program's own TAP and the
# JSON report (with python3; skipped without it).
#   handover     no CUPTI call at start; activity kinds, never a subscriber, at
#                the first CUDA call; flush+disable before the program's own
#                registration is forwarded; nothing from pincache afterwards,
#                not even at exit; the report says handed over
#   foreign      the program subscribed first: pincache never takes CUPTI
#   auto+tool    CUDA_INJECTION64_PATH set: auto leaves CUPTI alone
#   off          PINCACHE_CUPTI=off leaves CUPTI alone
#   refused      CUPTI refuses to enable: nothing stays enabled, the report
#                says unavailable
#   unavailable  PINCACHE_CUPTI=on and no libcupti to load: the program's
#                output and status are unchanged, the report says unavailable
#   attrib       observe mode: the CUPTI-based waited count agrees with the
#                fence-based one; the stall is the free's entry to the kernel's
#                end as the program measured it (not the free's return, which
#                a loaded machine delays), and never more than the free took;
#                copy bytes by kind
#   local        a profiler-like library linking libcupti, loaded RTLD_LOCAL
#                (torch's layout): its calls bind to pincache's wrappers, which
#                find the local libcupti; "first": before any CUDA call
#   fork         no CUPTI call in a fork() child, and the exit flush happens
#                in the parent
# cupti-nohandover.sh (XFAIL) runs "handover" with the hand-over switched
# off, to prove this test sees a missing hand-over.
. "$top_srcdir/tests/sim/common.sh"

PROG=$top_builddir/tests/cupti/cupti_prog

if ! have_shim; then
	tap_skip "libpincache.so not built"
	tap_done
	exit 0
fi
unset PINCACHE_CUPTI PINCACHE_CUPTI_LIB PINCACHE_MODE PINCACHE_TEST_CUPTI_NO_HANDOVER
unset CUDA_INJECTION64_PATH NVTX_INJECTION64_PATH NSYS_PROFILING_SESSION_ID FAKE_CUPTI_FAIL_ENABLE
have_py=0
command -v python3 >/dev/null 2>&1 && have_py=1

# jcheck FILE LABEL EXPR...: each EXPR is Python over the report r (a dict),
# s = r["stats"], a = r["apis"], summary = the summary lines joined.
jcheck() {
	_f=$1
	_label=$2
	shift 2
	if [ "$have_py" = 0 ]; then
		tap_skip "$_label: no python3 to read the report"
		return
	fi
	for _e in "$@"; do
		python3 - "$_f" "$_e" <<'EOF'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print("# cannot read the report: %s" % e)
    sys.exit(1)
s, a, summary = r["stats"], r["apis"], "\n".join(r["summary"])
ok = eval(sys.argv[2])
if not ok:
    print("# false: " + sys.argv[2])
    for k in sorted(s):
        if "cupti" in k or "gpu" in k or "would_sync" in k:
            print("#   %s = %s" % (k, s[k]))
    print("#   apis.cudaFreeHost = %s" % a["cudaFreeHost"])
    for l in r["summary"]:
        print("#   | " + l)
sys.exit(0 if ok else 1)
EOF
		tap_check $? "$_label report: $_e"
	done
}

# scenario LABEL MODE [VAR=VALUE...]: run cupti_prog MODE under the shim with
# the variables set, its report in $SIM_TMP/LABEL.json, the fake's log in
# $SIM_TMP/LABEL.log.
scenario() {
	_label=$1
	_mode=$2
	shift 2
	rm -f "$SIM_TMP/$_label.json" "$SIM_TMP/$_label.log"
	for _kv in "$@"; do
		export "$_kv"
	done
	PINCACHE_REPORT=$SIM_TMP/$_label.json
	FAKE_CUPTI_LOG=$SIM_TMP/$_label.log
	export PINCACHE_REPORT FAKE_CUPTI_LOG
	tap_program "$_label" shim "$PROG" "$_mode"
	for _kv in "$@"; do
		unset "${_kv%%=*}"
	done
	unset PINCACHE_REPORT FAKE_CUPTI_LOG
}

scenario handover handover PINCACHE_CUPTI=on
jcheck "$SIM_TMP/handover.json" handover \
	's["cupti_enabled"] == 1' 's["cupti_handed_over"] == 1' '"handed over" in summary'
# After the program's first call, no line of pincache's: no exit flush either.
awk '$2 == "A" && !a { a = NR } $2 == "P" && a { bad++ } END { exit !(a && !bad) }' \
	"$SIM_TMP/handover.log" 2>/dev/null
tap_check $? "handover: pincache made no CUPTI call after the program's first, at exit included"

scenario foreign foreign PINCACHE_CUPTI=on
jcheck "$SIM_TMP/foreign.json" foreign 's["cupti_enabled"] == 0' 's["cupti_declined"] == 1' \
	'"left alone" in summary'

scenario auto-tool quiet PINCACHE_CUPTI=auto CUDA_INJECTION64_PATH=/nonexistent/libinjection.so
jcheck "$SIM_TMP/auto-tool.json" auto+tool 's["cupti_enabled"] == 0' 's["cupti_declined"] == 1'

scenario off quiet PINCACHE_CUPTI=off
jcheck "$SIM_TMP/off.json" off 's["cupti_enabled"] == 0' 's["cupti_declined"] == 1'

# auto with no driver loaded (the simulated runtime): silently nothing
scenario auto quiet PINCACHE_CUPTI=auto
jcheck "$SIM_TMP/auto.json" auto 's["cupti_enabled"] == 0' '"timeline" not in summary'

scenario refused refused PINCACHE_CUPTI=on FAKE_CUPTI_FAIL_ENABLE=1
jcheck "$SIM_TMP/refused.json" refused 's["cupti_unavailable"] == 1' 's["cupti_enabled"] == 0' \
	'"CUPTI unavailable" in summary'

# No libcupti to be found: hello (which does not link the fake) runs as ever.
mkdir -p "$SIM_TMP/empty"
run_prog plain "$SIM_BIN/hello" >"$SIM_TMP/plain.out" 2>/dev/null
prc=$?
PINCACHE_CUPTI=on PINCACHE_CUPTI_LIB="$SIM_TMP/empty" PINCACHE_REPORT="$SIM_TMP/unavail.json" \
	run_prog shim "$SIM_BIN/hello" >"$SIM_TMP/shim.out" 2>"$SIM_TMP/shim.err"
src=$?
sed 's/^/# stderr: /' "$SIM_TMP/shim.err"
[ "$prc" -eq 7 ] && [ "$src" -eq 7 ] && cmp -s "$SIM_TMP/plain.out" "$SIM_TMP/shim.out"
tap_check $? "unavailable: the program's output and exit status are unchanged (plain $prc, shim $src)"
jcheck "$SIM_TMP/unavail.json" unavailable 's["cupti_unavailable"] == 1' '"CUPTI unavailable" in summary'

scenario attrib attrib PINCACHE_CUPTI=on PINCACHE_MODE=observe
# The free's entry to the kernel's end, as the program measured it (0: not
# printed, and the check below fails).  The stall runs from the free's
# entry, so it is held to the frees' time inside the call (their entry to
# their return), not to would_sync_ns, which starts after the observe
# mode's busy probe: under ThreadSanitizer that probe took more than the
# 1 ms of slack (CI, 2026-12-05).
E=$(sed -n 's/^# entry-to-kernel-end-ns \([0-9]*\)$/\1/p' "$SIM_TMP/out")
jcheck "$SIM_TMP/attrib.json" attrib \
	's["cupti_enabled"] == 1 and s["cupti_handed_over"] == 0' \
	's["would_sync"] == 1' \
	's["cupti_sync_calls"] == 2' \
	's["cupti_sync_calls_waited"] == s["would_sync"]' \
	'a["cudaFreeHost"]["gpu_waited"] == 1' \
	"${E:-0} > 0 and ${E:-0} - 5e6 <= s[\"cupti_sync_stall_ns\"] <= ${E:-0} + 1e6" \
	's["cupti_sync_stall_ns"] <= a["cudaFreeHost"]["ns"] + 1e6' \
	'a["cudaFreeHost"]["gpu_stall_ns"] == s["cupti_sync_stall_ns"]' \
	's["gpu_kernels"] == 2 and s["gpu_memcpys"] == 2' \
	's["gpu_memcpy_pageable_bytes"] == 1048576 and s["gpu_memcpy_pinned_bytes"] == 2097152' \
	'4000000 <= s["gpu_idle_after_sync_ns"] <= 60000000' \
	's["gpu_busy_ns"] >= 100000000' \
	'"timeline: CUPTI" in summary'

# PINCACHE_TEST_CUPTI_KINDS (for tests/bench/cuptitax.sh's breakdown of
# CUPTI's cost): pincache enables only the kinds it names (MEMCPY 1, MEMSET
# 2, CONCURRENT_KERNEL 10), and still takes CUPTI.
for k in all:1,2,10 kernels:10 copies:1,2 none:; do
	kinds=${k%%:*}
	scenario "kinds-$kinds" start PINCACHE_CUPTI=on PINCACHE_TEST_CUPTI_KINDS=$kinds
	got=$(awk '$2 == "P" && $3 == "cuptiActivityEnable" { print $4 }' "$SIM_TMP/kinds-$kinds.log" | sort -n |
		paste -sd, -)
	[ "$got" = "${k#*:}" ]
	tap_check $? "PINCACHE_TEST_CUPTI_KINDS=$kinds: pincache enabled kinds ${got:-none} (want ${k#*:})"
	jcheck "$SIM_TMP/kinds-$kinds.json" "kinds-$kinds" 's["cupti_enabled"] == 1'
done

# The torch.profiler layout: the profiler links libcupti and is loaded
# RTLD_LOCAL; its calls bind to pincache's wrappers, which must find the
# local libcupti (and not themselves).
PINCACHE_CUPTI=on PINCACHE_REPORT=$SIM_TMP/local.json FAKE_CUPTI_LOG=$SIM_TMP/local.log
export PINCACHE_CUPTI PINCACHE_REPORT FAKE_CUPTI_LOG
tap_program local shim "$top_builddir/tests/cupti/local_prog" "$top_builddir/tests/cupti/cupti_user.so"
unset PINCACHE_CUPTI PINCACHE_REPORT FAKE_CUPTI_LOG
sed 's/^/# log: /' "$SIM_TMP/local.log" 2>/dev/null
awk '$2 == "P" && $3 == "cuptiActivityEnable" { en = NR } $2 == "P" && $3 == "cuptiActivityDisable" { dis = NR }
     $2 == "A" && $3 == "cuptiActivityRegisterCallbacks" && !a { a = NR }
     END { exit !(en && dis && a && en < dis && dis < a) }' "$SIM_TMP/local.log" 2>/dev/null
tap_check $? "local: pincache enabled CUPTI, then handed it over before the profiler's registration"
jcheck "$SIM_TMP/local.json" local 's["cupti_handed_over"] == 1'

PINCACHE_CUPTI=on PINCACHE_REPORT=$SIM_TMP/local1.json FAKE_CUPTI_LOG=$SIM_TMP/local1.log
export PINCACHE_CUPTI PINCACHE_REPORT FAKE_CUPTI_LOG
tap_program local-first shim "$top_builddir/tests/cupti/local_prog" "$top_builddir/tests/cupti/cupti_user.so" first
unset PINCACHE_CUPTI PINCACHE_REPORT FAKE_CUPTI_LOG
! grep -q ' P ' "$SIM_TMP/local1.log" 2>/dev/null && grep -q ' A cuptiActivityEnable' "$SIM_TMP/local1.log"
tap_check $? "local-first: the profiler's calls reached CUPTI, and pincache made none"
jcheck "$SIM_TMP/local1.json" local-first 's["cupti_declined"] == 1 and s["cupti_enabled"] == 0'

scenario fork fork PINCACHE_CUPTI=on
if [ -f "$SIM_TMP/fork.json" ] && [ "$have_py" = 1 ]; then
	ppid_=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$SIM_TMP/fork.json")
	awk -v p="$ppid_" '$1 != p && $2 == "P" { bad++ } END { exit bad ? 1 : 0 }' "$SIM_TMP/fork.log"
	tap_check $? "fork: no CUPTI call by pincache in the child"
	tail -n 1 "$SIM_TMP/fork.log" | grep -q "^$ppid_ P cuptiActivityFlushAll"
	tap_check $? "fork: the parent's last CUPTI calls are pincache's exit flush"
else
	tap_skip "fork: no report or no python3"
fi
sed 's/^/# log: /' "$SIM_TMP/fork.log" 2>/dev/null | tail -n 5
tap_done
