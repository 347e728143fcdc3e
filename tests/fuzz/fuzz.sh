#!/bin/sh
# fuzz.sh - the differential fuzzer against the simulated device: a fixed
# set of seeds, plainly and under pincache in every mode, with one and with
# two devices, and the saved cases in tests/fuzz/cases (tests/fuzz/README.md).
#   PINCACHE_FUZZ_SEEDS=N   seeds per device count (default 36; 4 under TSan)
#   PINCACHE_FUZZ_FIRST=S   the first seed (default 1)
# Host functions last 1 ms (SIM_HOSTFN_US): a copy queued behind one must
# wait for it, and a copy that does not is seen.
. "$top_srcdir/tests/sim/common.sh"
FUZZ=$top_builddir/tests/fuzz/fuzz
SIM_HOSTFN_US=${SIM_HOSTFN_US:-1000}
export SIM_HOSTFN_US

if ! have_shim; then
	echo "1..0 # SKIP libpincache.so not built"
	exit 0
fi
pre=$PINCACHE_LIB
rt=$(san_runtime "$FUZZ")
[ -n "$rt" ] && pre="$rt $pre"
case $rt in *tsan*) n=${PINCACHE_FUZZ_SEEDS:-4} ;; *) n=${PINCACHE_FUZZ_SEEDS:-36} ;; esac
first=${PINCACHE_FUZZ_FIRST:-1}
last=$((first + n - 1))

# Every seed's program, and every saved case, must be one the model accepts.
# (one seed at a time: together they hold more than one case may).
rc=0
for s in $(seq "$first" "$last"); do
	"$FUZZ" --dump "$s" >"$SIM_TMP/one.case" 2>"$SIM_TMP/err" || { rc=1; cat "$SIM_TMP/err"; }
done
tap_check $rc "seeds $first..$last generate well-defined programs"
# Seeds whose programs do not fit in one case are refused, not cut short
# (diff.sh then shrinks from fewer of the seeds before a divergence).
"$FUZZ" -n 3000 --dump 1:2 >"$SIM_TMP/big.case" 2>"$SIM_TMP/err"
[ $? = 2 ] && grep -q "more than .* operations for one case" "$SIM_TMP/err"
tap_check $? "a dump of more operations than one case holds is refused"

# 1 and 2 devices, and one device with 40 MiB of pinned memory: plainly
# no seed's program runs out of it, and pincache's idle blocks, its
# staging ring and its size classes must not make it run out either.
# (With registrations in the programs, 32 MiB reached the class rounding's
# limit in seed 17, one run in ten under load: tests/fuzz/README.md.)
for dev in 1 2 1:40M; do
	lim=${dev#*:}
	[ "$lim" = "$dev" ] && lim=
	dev=${dev%%:*}
	SIM_PINNED_LIMIT=$lim SIM_DEVICES=$dev FUZZ_PRELOAD=$pre FUZZ_JOBS=2 FUZZ_CHUNK=$n FUZZ_SHRINK=0 \
		FUZZ_TIMEOUT=$SIM_TIMEOUT sh "$top_srcdir/tests/fuzz/diff.sh" "$FUZZ" "$first" "$last" \
		>"$SIM_TMP/out" 2>&1
	while IFS= read -r line; do
		case $line in
		"ok "*" - "*) tap_check 0 "SIM_DEVICES=$dev${lim:+ SIM_PINNED_LIMIT=$lim} ${line#* - }" ;;
		"not ok "*" - "*) tap_check 1 "SIM_DEVICES=$dev${lim:+ SIM_PINNED_LIMIT=$lim} ${line#* - }" ;;
		"#"*) echo "$line" ;;
		esac
	done <"$SIM_TMP/out"
done

# The saved cases: each a divergence once found (its header says which);
# replayed plainly and under its mode, the hashes must be equal.
for c in "$top_srcdir"/tests/fuzz/cases/*.case; do
	[ -f "$c" ] || continue
	name=$(basename "$c" .case)
	assign=$(sed -n 's/^# mode: //p' "$c")
	env=$(sed -n 's/^# env: //p' "$c")    # the device's, for both runs
	devs=$(sed -n 's/^devices //p' "$c")
	# shellcheck disable=SC2086
	h0=$(export SIM_DEVICES=$devs $env; run_prog plain "$FUZZ" --replay "$c" 2>"$SIM_TMP/case.err")
	case $h0 in
	"replay hash "*) ;;
	*) tap_check 1 "case $name runs plainly: $h0 $(cat "$SIM_TMP/case.err")"; continue ;;
	esac
	ok=0
	for try in 1 2 3; do
		# shellcheck disable=SC2086
		h1=$(export SIM_DEVICES=$devs PINCACHE_REPORT=off $env $assign; run_prog shim "$FUZZ" --replay "$c" 2>"$SIM_TMP/case.err")
		[ "$h0" = "$h1" ] || ok=1
	done
	tap_check $ok "case $name replays identically under ${assign:-the default mode}"
	[ $ok -eq 0 ] || echo "# plain: $h0; pincache: $h1 $(cat "$SIM_TMP/case.err")"
done
tap_done
