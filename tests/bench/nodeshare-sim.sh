#!/bin/sh
# nodeshare-sim.sh - nodeshare.sh (issue 19's benchmark) run whole on the
# simulated runtime, where nvcc works: tiny rows, one and three processes,
# one trial.  Every run must succeed with its bytes right, every row of the
# table get its figure, the pincache runs with the share hold a share of
# the budget, those without it none.  TAP.  nvcc's program runs on the
# sim through simnvcc.sh's wrapper, which nodeshare.sh takes for nvcc (as
# coldalloc.sh does in coldalloc-verdicts.sh).
: "${top_srcdir:?run this through make check}"
: "${top_builddir:?run this through make check}"
D=$(mktemp -d "${TMPDIR:-/tmp}/pincache-nodeb.XXXXXX") || exit 99
trap 'rm -rf "$D"' EXIT
. "$top_srcdir/tests/bench/simnvcc.sh"
if ! sim_nvcc "$D"; then
	echo "1..0 # SKIP no nvcc, simulated runtime or library, or a sanitizer build"
	exit 0
fi
n=0
point() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi
}
mkdir -p "$D/shm" || exit 99
# A build folder of its own: the program is built into BUILDDIR/tests/bench.
mkdir -p "$D/build/src/.libs" && ln -s "$PINCACHE_LIB" "$D/build/src/.libs/libpincache.so"
NVCC=$D/cuda/bin/nvcc NODESHARE_PROCS="1 3" NODESHARE_TRIALS=1 NODESHARE_ROWS=6 NODESHARE_ROW=1048576 \
	NODESHARE_TARGET=0 PINCACHE_NODE_SHARE_DIR=$D/shm PINCACHE_STAGE_THREADS=6 \
	bash "$top_srcdir/tests/bench/nodeshare.sh" "$D/build" "$D/run" >"$D/report.md" 2>"$D/err"
rc=$?
point $rc "nodeshare.sh ran on the simulated device (exit $rc)"
for p in 1 3; do
	for what in "plain" "pincache, node share on" "pincache, node share off"; do
		grep "^| $p | $what | " "$D/report.md" | grep -qv 'no figure'
		point $? "$p process(es), $what: a figure (every process's bytes right)"
	done
done
# Each process's last share, taken when it last copied (the others may have
# come or gone by then: tests/stage/node.sh holds them together): between
# the budget over three and the budget.
row=$(grep "^| 3 | pincache, node share on | " "$D/report.md" | awk -F'|' '{ print $7 }')
echo "$row" | awk '{ if (NF != 3) exit 1; for (i = 1; i <= NF; i++) if ($i < 2 || $i > 6) exit 1 }'
point $? "three processes with the share (budget 6): copy threads$row, each 2 to 6"
grep "^| 3 | pincache, node share off | " "$D/report.md" | awk -F'|' '{ print $7 }' | grep -q '^ *0 0 0 *$'
point $? "three processes without it: no share"
grep -q '^PASS: 3 processes' "$D/report.md"
point $? "one verdict line, for the largest count"
[ -z "$(ls -A "$D/shm")" ]
point $? "the node's file is gone"
sed 's/^/# /' "$D/report.md"
[ $rc = 0 ] || sed 's/^/# stderr: /' "$D/err"
echo "1..$n"
