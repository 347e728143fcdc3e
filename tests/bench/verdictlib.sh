# verdictlib.sh - sourced by the benchmarks' verdict tests
# (coldalloc-verdicts.sh, xover-verdicts.sh, cuptitax-verdicts.sh): TAP
# points, and a benchmark script's report rendered from the made-up runs in
# $D.  Set V_SCRIPT (the script under tests/bench) and V_ONLY (its
# REPORT_ONLY variable) first; D is made here and removed at exit.
: "${top_srcdir:?run this through make check}"
: "${top_builddir:?run this through make check}"
D=$(mktemp -d "${TMPDIR:-/tmp}/pincache-verdicts.XXXXXX") || exit 99
trap 'rm -rf "$D"' EXIT
n=0
# point STATUS TEXT: one TAP line
point() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi
}
# render: the report of the runs in $D, in $D/report.md
render() {
	env "$V_ONLY=1" bash "$top_srcdir/tests/bench/$V_SCRIPT" "$top_builddir" "$D" >"$D/report.md" 2>&1
}
# expect RC FAILS TEXT WHAT: render; exit status RC, FAILS FAIL lines, the
# one FAIL line (if any) containing TEXT
expect() {
	render
	rc=$?
	f=$(grep -c '^FAIL: ' "$D/report.md")
	[ "$rc" = "$1" ] && [ "$f" = "$2" ] && { [ "$2" = 0 ] || grep '^FAIL: ' "$D/report.md" | grep -q "$3"; }
	point $? "$4 (exit $rc, $f FAIL)"
	[ "$rc" = "$1" ] && [ "$f" = "$2" ] || sed 's/^/# /' "$D/report.md"
}
