#!/bin/sh
# cuptitax-verdicts.sh - cuptitax.sh's PASS/FAIL lines, fed made-up runs
# (CUPTITAX_REPORT_ONLY=1, no CUDA): every criterion passes on good figures;
# each fails alone when its figure moves just past 1.02x, or when an auto
# run did not have CUPTI enabled.  TAP.
V_SCRIPT=cuptitax.sh V_ONLY=CUPTITAX_REPORT_ONLY
. "$top_srcdir/tests/bench/verdictlib.sh"
# runs NAME HOW KEY VALUE [ENABLED]: NAME's three HOW runs, KEY=VALUE, and
# their reports (cupti_enabled ENABLED, default 1 for auto and 0 for off)
runs() {
	e=${5:-$([ "$2" = auto ] && echo 1 || echo 0)}
	for r in 1 2 3; do
		printf 'RESULT test=x epoch=1 ms=5\nRESULT test=x %s=%s\n' "$3" "$4" >"$D/$1.$2.$r.out"
		printf '{\n  "stats": {\n    "cupti_enabled": %s\n  }\n}\n' "$e" >"$D/$1.$2.$r.json"
	done
}
good() {
	rm -f "$D"/*
	printf "rounds='3'\nsizes='1'\ntrain='--pin 1'\n" >"$D/config.txt"
	runs churn1 off ms_per_batch 1.000
	runs churn1 auto ms_per_batch 1.019
	runs train off step_ms 10.0
	runs train auto step_ms 10.2
}
good
expect 0 0 "" "good figures (1.9% and 2.0% dearer): every criterion passes"
[ "$(grep -c '^PASS: ' "$D/report.md")" = 3 ]
point $? "three criteria"
good
runs churn1 auto ms_per_batch 1.021
expect 1 1 "churn, 1 MB (ms per batch): auto/off 1.021" "churn 2.1% dearer fails"
good
runs train auto step_ms 10.21
expect 1 1 "median step ms): auto/off 1.021" "a training step 2.1% dearer fails"
good
runs train auto step_ms 10.0 0
expect 1 1 "CUPTI enabled in every auto run (3 of 6" "auto runs without CUPTI fail"
good
rm -f "$D"/train.auto.*
expect 1 1 "auto/off ?" "no auto training runs fail"
# The breakdown by kind (CUPTITAX_KINDS): a table, no verdict.
good
sed -i "s/^train=.*/&\nkinds='none kernels copies'/" "$D/config.txt"
runs churn1 knone ms_per_batch 1.001
runs churn1 kkernels ms_per_batch 1.015
runs churn1 kcopies ms_per_batch 1.004
runs train knone step_ms 10.0
runs train kkernels step_ms 11.5
runs train kcopies step_ms 10.1
expect 0 0 "" "the breakdown by kind adds no verdict"
grep -q '^| churn, 1 MB (ms per batch) | 1 | 1.001 (1.001) | 1.015 (1.015) | 1.004 (1.004) | 1.019 (1.019) |$' "$D/report.md"
point $? "the breakdown: off, each kind alone and all, each against off"
grep -q '^| train.py --pin 1 (median step ms) | 10 | 10 (1.000) | 11.5 (1.150) | 10.1 (1.010) | 10.2 (1.020) |$' "$D/report.md"
point $? "... for the training step too"
echo "1..$n"
