#!/bin/sh
# coldalloc-verdicts.sh - coldalloc.sh's PASS/FAIL lines, fed made-up runs
# (COLDALLOC_REPORT_ONLY=1, no CUDA): every criterion of issue 18 passes on
# good figures, and each fails alone when its figure is moved just past its
# target; a missing run fails, missing fast_alloc_* counters do not.  TAP.
V_SCRIPT=coldalloc.sh V_ONLY=COLDALLOC_REPORT_ONLY
. "$top_srcdir/tests/bench/verdictlib.sh"

# alloc SIZE BYTES HOW MS: both rounds of SIZE under HOW, every call MS ms
alloc() {
	for r in 1 2; do
		echo "COLDALLOC alloc size=$2 reps=3 median_ms=$4 min_ms=$4 max_ms=$4 ms=$4,$4,$4" >"$D/alloc.$1.$3.$r.out"
		echo "COLDALLOC free size=$2 reps=3 median_ms=1 min_ms=1 max_ms=1 ms=1,1,1" >>"$D/alloc.$1.$3.$r.out"
	done
}
# rates HOW GBPS_64K_D2H: the three rate runs of HOW, 50 GB/s but one figure
rates() {
	for r in 1 2 3; do
		for sd in 65536:h2d:50 65536:d2h:$2 1073741824:h2d:55 1073741824:d2h:55; do
			IFS=: read -r b dir g <<EOF
$sd
EOF
			for t in dev host; do
				echo "COLDALLOC rate size=$b dir=$dir timing=$t copies=1 median_gbps=$g min_gbps=1 max_gbps=99 late=0"
			done
		done >"$D/rates.$1.$r.out"
	done
}
# varsize_run HOW ROUND SECONDS HELD: one run's RESULT line (peak request
# 1000000) and report
varsize_run() {
	echo "RESULT varsize ops=20000 peak_live_requested_bytes=1000000 seconds=$3" >"$D/varsize.$1.$2.out"
	printf '{\n  "stats": {\n    "real_alloc_calls": 7,\n    "held_bytes_peak": %s\n  }\n}\n' "$4" >"$D/varsize.$1.$2.json"
}
# varsize HOW SECONDS HELD: all three rounds of HOW alike
varsize() {
	for r in 1 2 3; do
		varsize_run "$1" $r "$2" "$3"
	done
}
good() {
	rm -f "$D"/*
	cat >"$D/config.txt" <<'EOF'
sizes='64M:5:4 1G:3:5 4G:1:-'
rounds='2'
rate_sizes='64K 1G'
rate_rounds='3'
rate_reps='15'
varsize='--ops 20000 --max-live 48'
varsize_rounds='3'
EOF
	alloc 64M 67108864 plain 30
	alloc 64M 67108864 on 7.4
	alloc 64M 67108864 off 30
	alloc 1G 1073741824 plain 500
	alloc 1G 1073741824 on 99.9
	alloc 1G 1073741824 off 500
	alloc 4G 4294967296 plain 1800
	alloc 4G 4294967296 on 1799
	alloc 4G 4294967296 off 1800
	rates plain 50
	rates on 49.1
	varsize off 20
	varsize on 9.9 1150000
	printf '{\n  "stats": {\n    "fast_alloc_calls": 3,\n    "fast_alloc_saved_ns": 1200000000,\n    "real_alloc_calls": 0\n  }\n}\n' \
		>"$D/alloc.1G.on.1.json"
}

good
expect 0 0 "" "good figures: every criterion passes"
[ "$(grep -c '^PASS: ' "$D/report.md")" = 5 ]
point $? "five criteria"
grep -q '^| alloc.1G.on.1 | 3 | - | 1200000000 | 0 | - |$' "$D/report.md"
point $? "counters from a report, '-' for the absent ones"

good
alloc 64M 67108864 on 7.6
expect 1 1 "cold 64 MiB: plain/pincache 3.947x" "64 MiB at 3.95x fails"
good
alloc 1G 1073741824 on 100.1
expect 1 1 "cold 1 GiB: plain/pincache 4.995x" "1 GiB at 4.995x fails (the ratio is not rounded up to pass)"
good
rates on 48.9
expect 1 1 "64 KiB d2h 0.978" "a rate 2.2% slower fails"
good
rates on 51.1
expect 1 1 "64 KiB d2h 1.022" "a rate 2.2% faster fails too (within 2%, both ways)"
good
varsize on 10.1 1150000
expect 1 1 "varsize before/after (medians) 1.980x" "varsize at 1.98x fails"
good
varsize_run on 2 30 1150000
varsize_run off 3 5 1150000
expect 0 0 "" "varsize: one slow round of each kind moves no median"
good
varsize_run on 1 10.1 1150000
varsize_run on 3 10.1 1150000
expect 1 1 "varsize before/after (medians) 1.980x" "varsize: two slow rounds of three fail"
good
varsize_run on 2 9.9 1150100
expect 1 1 "varsize held/peak with the fast path, worst run 1.150" "held/peak 1.1501 in one round fails"
good
rm -f "$D"/varsize.on.2.json
expect 1 1 "worst run (no figure)" "a fast-path run without a report fails held/peak"
good
rm -f "$D"/alloc.1G.on.*.out
expect 1 1 "cold 1 GiB: plain/pincache (no figure)x" "no pincache run at 1 GiB fails"
good
rm -f "$D"/rates.on.*.out
expect 1 1 "64 KiB h2d (no figure)" "no pincache rate runs fail"

# The measuring path on the simulated runtime, where nvcc works: tiny sizes,
# nvcc's programs linked with simreg.c and pointed at the sim's libcudart by
# a wrapper that coldalloc.sh takes for nvcc.  Every run must succeed and
# every criterion get its line (the sim has no fast path to pass them).
# Not in sanitizer builds: nvcc's programs cannot load their runtimes first.
. "$top_srcdir/tests/bench/simnvcc.sh"
if sim_nvcc "$D"; then
	rm -rf "$D/run"
	NVCC=$D/cuda/bin/nvcc COLDALLOC_SIZES="4M:3:4 8M:2:5" COLDALLOC_BIG=16M:1:- COLDALLOC_ROUNDS=2 \
		COLDALLOC_RATE_SIZES="64K 4M" COLDALLOC_RATE_REPS=3 COLDALLOC_RATE_ROUNDS=2 \
		COLDALLOC_VARSIZE="--ops 400 --max-live 16" COLDALLOC_VARSIZE_ROUNDS=2 \
		bash "$top_srcdir/tests/bench/coldalloc.sh" "$top_builddir" "$D/run" >"$D/sim.md" 2>"$D/sim.err"
	[ $? -le 1 ] && [ "$(grep -c '^PASS: \|^FAIL: ' "$D/sim.md")" = 5 ] && ! grep -q 'run(s) failed' "$D/sim.md" &&
		! grep -q 'no figure' "$D/sim.md" && [ "$(ls "$D"/run/*.json | wc -l)" = 18 ]
	rc=$?
	point $rc "the simulated device: every run, every figure, five verdicts, 18 reports (rates: a process per size)"
	[ $rc = 0 ] || sed 's/^/# /' "$D/sim.md" "$D/sim.err"
else
	n=$((n + 1))
	echo "ok $n # SKIP no nvcc, simulated runtime or library, or a sanitizer build"
fi
echo "1..$n"
