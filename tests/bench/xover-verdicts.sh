#!/bin/sh
# xover-verdicts.sh - xover.sh's PASS/FAIL lines, fed made-up runs
# (XOVER_REPORT_ONLY=1, no CUDA): every criterion passes on good figures,
# each fails alone when one figure moves just past its bound, a missing
# run or a different checksum fails; then the measuring path on the
# simulated runtime, where nvcc works.  TAP.
V_SCRIPT=xover.sh V_ONLY=XOVER_REPORT_ONLY
. "$top_srcdir/tests/bench/verdictlib.sh"

# copies HOW ROUND US [SUM [US_1M]]: one run's points, every one US µs (the
# 1 MiB ones US_1M µs when given)
copies() {
	for b in 65536 1048576; do
		us=$3
		[ $b = 1048576 ] && us=${5:-$3}
		for src in warm fresh; do
			for dir in H2D D2H; do
				echo "RESULT src=$src dir=$dir bytes=$b us=$us p10=1 p90=9 reps=5"
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
	printf "sizes='64K 1M'\nreps='5'\nrounds='2'\nchurn='on'\nforced='on'\n" >"$D/config.txt"
	copies plain 1 100
	copies plain 2 100
	copies pc 1 103
	copies pc 2 103
	copies forced 1 103
	copies forced 2 103
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
expect 1 1 "same bytes (5 checksums" "a missing run fails"
good
rm -f "$D"/copies.forced.1.out
expect 1 1 "same bytes (5 checksums" "a missing run of every size staged fails"
good
copies pc 2 103 00000000000000ab
expect 1 1 "2 distinct" "a different checksum fails"
good
rm -f "$D"/copies.pc.*.out
expect 1 2 "64K H2D warm ?" "no pincache runs fail"

# The crossover lines: staging every size against the driver, by direction
# and kind (information: no verdict moves).
good
copies forced 1 110 00000000000000aa 90
copies forced 2 110 00000000000000aa 90
expect 0 0 "" "staging slower at 64K, faster at 1M: still every criterion passes"
grep -q '^- H2D warm: staging no slower from 1M up$' "$D/report.md" &&
	grep -q '^- D2H fresh: staging no slower from 1M up$' "$D/report.md" &&
	grep -q '| 64K | H2D | warm | 100 | 103 | 1.030 | 110 | 1.100 |' "$D/report.md"
point $? "the crossover of each direction and kind: the smallest size staging wins from"
good
copies forced 1 90 00000000000000aa 110
copies forced 2 90 00000000000000aa 110
expect 0 0 "" "staging faster at 64K, slower at 1M"
[ "$(grep -c '^- [HD]2[DH] [a-z]*: the driver faster at the largest size$' "$D/report.md")" = 4 ]
point $? "a crossover needs staging to win at every larger size too"
good
sed -i "s/^forced='on'/forced='off'/" "$D/config.txt"
rm -f "$D"/copies.forced.*
expect 0 0 "" "XOVER_FORCED=off: no runs of every size staged, none expected"
! grep -q 'Crossover\|every size staged' "$D/report.md"
point $? "XOVER_FORCED=off: neither the column nor the crossover"

# The measuring path on the simulated runtime (as coldalloc-verdicts.sh):
# nvcc's xover linked with simreg.c, pointed at the sim's libcudart.
. "$top_srcdir/tests/bench/simnvcc.sh"
if sim_nvcc "$D"; then
	NVCC=$D/cuda/bin/nvcc XOVER_SIZES="64K 1M" XOVER_REPS=3 XOVER_ROUNDS=2 XOVER_CHURN=off \
		bash "$top_srcdir/tests/bench/xover.sh" "$top_builddir" "$D/run" >"$D/sim.md" 2>"$D/sim.err"
	rc=$?
	[ $rc -le 1 ] && [ "$(grep -c '^PASS: \|^FAIL: ' "$D/sim.md")" = 2 ] && ! grep -q '| ? |' "$D/sim.md" &&
		grep -q '^PASS: every run copied the same bytes (6 checksums, 1 distinct)' "$D/sim.md" &&
		[ "$(ls "$D"/run/*.json | wc -l)" = 4 ] && [ "$(grep -c '^- [HD]2[DH] \(warm\|fresh\): ' "$D/sim.md")" = 4 ]
	rc=$?
	point $rc "the simulated device: every run, every figure, the same bytes, four reports, four crossovers"
	[ $rc = 0 ] || sed 's/^/# /' "$D/sim.md" "$D/sim.err"
else
	n=$((n + 1))
	echo "ok $n # SKIP no nvcc, simulated runtime or library, or a sanitizer build"
fi
echo "1..$n"
