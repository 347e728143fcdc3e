#!/bin/sh
# xover-verdicts.sh - xover.sh's PASS/FAIL lines, fed made-up runs
# (XOVER_REPORT_ONLY=1, no CUDA): every criterion passes on good figures,
# each fails alone when one figure moves just past its bound, a missing
# run or a different checksum fails; then the measuring path on the
# simulated runtime, where nvcc works.  TAP.
V_SCRIPT=xover.sh V_ONLY=XOVER_REPORT_ONLY
. "$top_srcdir/tests/bench/verdictlib.sh"

# copies HOW ROUND US [SUM]: one run's points, every one US µs
copies() {
	for b in 65536 1048576; do
		for src in warm fresh; do
			for dir in H2D D2H; do
				echo "RESULT src=$src dir=$dir bytes=$b us=$3 p10=1 p90=9 reps=5"
			done
		done
	done >"$D/copies.$1.$2.out"
	echo "CHECK sum=${4:-00000000000000aa}" >>"$D/copies.$1.$2.out"
}
# churn HOW MS: both rounds of the churn at MS ms per batch
churn() {
	for r in 1 2; do
		echo "RESULT churn variant=pageable size_mb=1 batches=9 reps=5 ms_per_batch=$2 fill_ms=0 api_ms=0" \
			>"$D/churn.$1.$r.out"
	done
}
good() {
	rm -f "$D"/*
	printf "sizes='64K 1M'\nreps='5'\nrounds='2'\nchurn='on'\n" >"$D/config.txt"
	copies plain 1 100
	copies plain 2 100
	copies pc 1 103
	copies pc 2 103
	churn plain 0.1
	churn pc 0.103
}

good
expect 0 0 "" "good figures (3% slower everywhere): every criterion passes"
[ "$(grep -c '^PASS: ' "$D/report.md")" = 3 ]
point $? "three criteria"
good
copies pc 1 105
copies pc 2 105
expect 1 1 "64K H2D warm 1.050" "points 5% slower fail"
good
sed -i 's/^\(RESULT src=fresh dir=D2H bytes=1048576\) us=103/\1 us=104/' "$D"/copies.pc.*.out
expect 1 1 "1M D2H fresh 1.040" "one point 4% slower fails, by its name"
good
churn pc 0.104
expect 1 1 "churn no slower than plain (1.040x)" "a churn 4% slower fails"
good
rm -f "$D"/copies.pc.2.out
expect 1 1 "same bytes (3 checksums" "a missing run fails"
good
copies pc 2 103 00000000000000ab
expect 1 1 "2 distinct" "a different checksum fails"
good
rm -f "$D"/copies.pc.*.out
expect 1 2 "64K H2D warm ?" "no pincache runs fail"

# The measuring path on the simulated runtime (as coldalloc-verdicts.sh):
# nvcc's xover linked with simreg.c, pointed at the sim's libcudart.
. "$top_srcdir/tests/bench/simnvcc.sh"
if sim_nvcc "$D"; then
	NVCC=$D/cuda/bin/nvcc XOVER_SIZES="64K 1M" XOVER_REPS=3 XOVER_ROUNDS=2 XOVER_CHURN=off \
		bash "$top_srcdir/tests/bench/xover.sh" "$top_builddir" "$D/run" >"$D/sim.md" 2>"$D/sim.err"
	rc=$?
	[ $rc -le 1 ] && [ "$(grep -c '^PASS: \|^FAIL: ' "$D/sim.md")" = 2 ] && ! grep -q '| ? |' "$D/sim.md" &&
		grep -q '^PASS: every run copied the same bytes (4 checksums, 1 distinct)' "$D/sim.md" &&
		[ "$(ls "$D"/run/*.json | wc -l)" = 2 ]
	rc=$?
	point $rc "the simulated device: every run, every figure, the same bytes, two reports"
	[ $rc = 0 ] || sed 's/^/# /' "$D/sim.md" "$D/sim.err"
else
	n=$((n + 1))
	echo "ok $n # SKIP no nvcc, simulated runtime or library, or a sanitizer build"
fi
echo "1..$n"
