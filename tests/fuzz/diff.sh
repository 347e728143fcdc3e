#!/bin/sh
# diff.sh - run the fuzzer's seeds plainly and under pincache in every mode,
# compare the transcript hashes, shrink divergences (tests/fuzz/README.md).
#
#   diff.sh FUZZ FIRST LAST      FUZZ: the interpreter; seeds FIRST..LAST
#
# Prints TAP: one point for the plain runs' determinism, one per mode.  A
# diverging mode lists its seeds; the first divergence (FUZZ_SHRINK of them)
# is shrunk and printed as a replayable case ("# " lines), and saved under
# FUZZ_OUT when set.  Environment:
#   PINCACHE_LIB    the library (required)
#   FUZZ_PRELOAD    what LD_PRELOAD gets in shim runs (default $PINCACHE_LIB;
#                   a sanitizer runtime goes first)
#   FUZZ_JOBS       processes at a time (default 2)
#   FUZZ_CHUNK      seeds per process (default 40)
#   FUZZ_SHRINK     divergences to shrink (default 1; 0: none)
#   FUZZ_TIMEOUT    seconds per process (default 300)
#   FUZZ_ARGS       more arguments for the interpreter (e.g. -n 300)
#   FUZZ_OUT        folder for the shrunk cases
#   FUZZ_SKIP       names of modes not to run (e.g. "plain-again")
set -u
if [ "${1:-}" = --one ]; then
	# --one MODE FIRST LAST OUT: one process of one mode
	m=$2 first=$3 last=$4 out=$5
	shift 5
	env_m=$(sed -n "$((m + 1))p" "$FUZZ_MODES_FILE" | cut -d'|' -f2)
	if [ "$m" -le 1 ]; then
		set -- env -u LD_PRELOAD
	else
		set -- env PINCACHE_REPORT=off $env_m LD_PRELOAD="$FUZZ_PRELOAD"
	fi
	t0=$(date +%s)
	# shellcheck disable=SC2086
	timeout -k 5 "$FUZZ_TIMEOUT" "$@" "$FUZZ" $FUZZ_ARGS "$first:$last" >"$out" 2>"$out.err"
	rc=$?
	[ $rc -eq 0 ] || echo "exit $rc" >>"$out"
	echo "$(( $(date +%s) - t0 ))" >"$out.time"
	exit 0
fi

FUZZ=${1:?usage: diff.sh FUZZ FIRST LAST}
first=${2:?} last=${3:?}
: "${PINCACHE_LIB:?}"
FUZZ_PRELOAD=${FUZZ_PRELOAD:-$PINCACHE_LIB}
FUZZ_JOBS=${FUZZ_JOBS:-2} FUZZ_CHUNK=${FUZZ_CHUNK:-40} FUZZ_SHRINK=${FUZZ_SHRINK:-1}
FUZZ_TIMEOUT=${FUZZ_TIMEOUT:-300} FUZZ_ARGS=${FUZZ_ARGS:-}
export FUZZ FUZZ_PRELOAD FUZZ_TIMEOUT FUZZ_ARGS
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pincache-fuzz.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
FUZZ_MODES_FILE=$tmp/modes
export FUZZ_MODES_FILE
# name|assignments (modes 0 and 1 run plainly)
cat >"$FUZZ_MODES_FILE" <<'EOF'
plain|
plain-again|
cache|
observe|PINCACHE_MODE=observe
stage-off|PINCACHE_STAGE=0
fence-runtime|PINCACHE_FENCE=runtime
fence-driver|PINCACHE_FENCE=driver
stage-small|PINCACHE_STAGE_MIN=1 PINCACHE_STAGE_FRESH_MIN=0 PINCACHE_STAGE_CHUNK=64K PINCACHE_STAGE_RING=256K PINCACHE_STAGE_PIECES=4
trim-fast|PINCACHE_MAX_CACHED=4M PINCACHE_FAST_ALLOC_MIN=0
EOF
nmodes=$(wc -l <"$FUZZ_MODES_FILE")

skipped() { case " ${FUZZ_SKIP:-} " in *" $(sed -n "$(($1 + 1))p" "$FUZZ_MODES_FILE" | cut -d'|' -f1) "*) return 0 ;; esac; return 1; }
m=0
while [ $m -lt "$nmodes" ]; do
	if [ $m -ge 1 ] && skipped $m; then m=$((m + 1)); continue; fi
	s=$first
	while [ "$s" -le "$last" ]; do
		e=$((s + FUZZ_CHUNK - 1))
		[ $e -gt "$last" ] && e=$last
		echo "$m $s $e $tmp/out.$m.$s"
		s=$((e + 1))
	done
	m=$((m + 1))
done >"$tmp/jobs"
xargs -P "$FUZZ_JOBS" -L 1 sh "$0" --one <"$tmp/jobs"

# One file per mode, seeds in order.
m=0
while [ $m -lt "$nmodes" ]; do
	awk -v m=$m '$1 == m { print $4 }' "$tmp/jobs" | while read -r f; do
		cat "$f"
	done >"$tmp/mode.$m"
	m=$((m + 1))
done

n=0 shrunk=0 bad=0
# The seeds whose line differs from plain's (or missing: a crash or a hang).
differ() {
	awk 'NR == FNR { if ($1 == "seed") h[$2] = $4; next }
	     $1 == "seed" { seen[$2] = 1; if (h[$2] != $4) print $2 }
	     $1 == "exit" { print "exit-status-" $2 }
	     END { for (s in h) if (!(s in seen)) print s }' "$tmp/mode.0" "$1" | sort -n | tr '\n' ' '
}
m=1
while [ $m -lt "$nmodes" ]; do
	if skipped $m; then m=$((m + 1)); continue; fi
	name=$(sed -n "$((m + 1))p" "$FUZZ_MODES_FILE" | cut -d'|' -f1)
	assign=$(sed -n "$((m + 1))p" "$FUZZ_MODES_FILE" | cut -d'|' -f2)
	n=$((n + 1))
	d=$(differ "$tmp/mode.$m")
	# A plain run that failed (a crash, a hang, a sanitizer report) fails its mode too.
	grep -q '^exit ' "$tmp/mode.0" && d="$d plain-exit-status-$(sed -n 's/^exit //p' "$tmp/mode.0" | head -1)"
	d=$(echo $d)
	total=$((last - first + 1))
	slow=$(cat "$tmp"/out.$m.*.time 2>/dev/null | sort -n | tail -1)
	if [ -z "$d" ]; then
		echo "ok $n - $name: $total seeds, transcripts identical to plain (slowest process ${slow:-?} s)"
	else
		bad=$((bad + 1))
		cnt=$(echo "$d" | wc -w)
		echo "not ok $n - $name: $cnt of $total seeds diverge from plain: $d"
		sed 's/^/# /' "$tmp"/out.$m.*.err 2>/dev/null | head -20
		s=$(echo "$d" | tr ' ' '\n' | grep -E '^[0-9]+$' | head -1)
		if [ "$shrunk" -lt "$FUZZ_SHRINK" ] && [ "$m" -ge 2 ] && [ -n "$s" ]; then
			shrunk=$((shrunk + 1))
			# Alone if it diverges alone, else after the fewest of the seeds its
			# process ran before it (1, 2, 4, ... back to the chunk's first) that
			# make it diverge in one replay and fit in one case (fuzz --dump
			# refuses more than a case holds).
			c0=$(( first + (s - first) / FUZZ_CHUNK * FUZZ_CHUNK ))
			starts=$s k=1
			while [ $((s - k)) -gt "$c0" ]; do
				starts="$starts $((s - k))"
				k=$((k * 2))
			done
			[ "$c0" -lt "$s" ] && starts="$starts $c0"
			found=
			for from in $starts; do
				# shellcheck disable=SC2086
				"$FUZZ" $FUZZ_ARGS --dump "$from:$s" >"$tmp/case" 2>/dev/null || continue
				env PINCACHE_REPORT=off $assign LD_PRELOAD="$FUZZ_PRELOAD" "$FUZZ" --replay "$tmp/case" >"$tmp/h1" 2>/dev/null
				env -u LD_PRELOAD "$FUZZ" --replay "$tmp/case" >"$tmp/h0" 2>/dev/null
				cmp -s "$tmp/h0" "$tmp/h1" && continue
				found=1
				echo "# shrinking seeds $from..$s under $name"
				"$FUZZ" --shrink "$tmp/case" --env "PINCACHE_REPORT=off $assign LD_PRELOAD=$FUZZ_PRELOAD" \
					>"$tmp/min" 2>"$tmp/min.err"
				sed 's/^/# /' "$tmp/min.err"
				if [ -s "$tmp/min" ]; then
					echo "# replay: $assign fuzz --replay CASE"
					sed 's/^/#   /' "$tmp/min"
					if [ -n "${FUZZ_OUT:-}" ]; then
						mkdir -p "$FUZZ_OUT"
						{ echo "# mode: $assign"; cat "$tmp/min"; } >"$FUZZ_OUT/$name-seed$s.case"
					fi
				fi
				break
			done
			[ -n "$found" ] ||
				echo "# seed $s: no case of seeds $c0..$s that fits diverges in one replay (not shrunk)"
		fi
	fi
	m=$((m + 1))
done
echo "1..$n"
exit 0
