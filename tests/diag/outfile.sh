#!/bin/sh
# outfile: where PINCACHE_REPORT and PINCACHE_TRACE name something other than
# a plain new file, pincache writes through it and never replaces or
# truncates what it did not create (src/outfile.c):
#   a symlink keeps its place and its target gets the file (report, trace);
#   a symlink planted at the old predictable temporary name (PATH.tmp.PID)
#   does not redirect the write;
#   /dev/stderr (and a link to /proc/self/fd/2) gets the report on stderr
#   and stays what it was, root or not;
#   a FIFO gets the report; a FIFO nobody reads gives one warning, no hang;
#   a read-only folder gives one warning and the summary on stderr.
# Runs that could damage the system with a broken library (/dev/stderr,
# /dev/null) run as nobody when the suite runs as root.
. "$top_srcdir/tests/diag/common.sh"
diag_need

chmod 755 "$SIM_TMP"           # nobody must reach the unprivileged runs' files
prog="$DIAG_BIN/scenario threads 1 4"

# unpriv CMD...: run CMD as nobody when we are root (setpriv), else as is.
# Status 77 when that cannot be done: no setpriv, or a build tree nobody
# cannot reach (a clone under a 0700 folder such as mktemp -d makes).
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
unpriv() {
	if [ "$(id -u)" != 0 ]; then
		"$@"
	elif command -v setpriv >/dev/null 2>&1 && nobody test -x "$DIAG_BIN/scenario" -a -r "$PINCACHE_LIB"; then
		nobody "$@"
	else
		return 77
	fi
}

# no_leftovers DIR N TEXT: DIR holds exactly N entries (no temporary files).
no_leftovers() {
	_n=$(ls -A "$1" | wc -l | tr -d ' ')
	tap_eq "$_n" "$2" "$3: no temporary file left in the folder"
	[ "$_n" = "$2" ] || ls -lA "$1" | sed 's/^/# /'
}

is_report() {
	jget "$1" schema_version >/dev/null 2>&1
}

# 1. A symlink to a regular file: the link stays, its target holds the report.
d=$SIM_TMP/link
mkdir "$d" "$d/real"
echo "an older report, longer than nothing at all" >"$d/real/r.json"
ln -s real/r.json "$d/r.json"
ln -s real/t.json "$d/t.json"           # dangling: the trace creates its target
PINCACHE_REPORT=$d/r.json PINCACHE_TRACE=$d/t.json run_prog shim $prog >/dev/null 2>"$SIM_TMP/err1"
tap_check $? "link: the program ran"
sed 's/^/# stderr: /' "$SIM_TMP/err1"
[ -L "$d/r.json" ] && [ "$(readlink "$d/r.json")" = real/r.json ]
tap_check $? "link: the report's symlink is still the same symlink"
is_report "$d/real/r.json"
tap_check $? "link: its target holds the report"
[ -L "$d/t.json" ] && [ "$(readlink "$d/t.json")" = real/t.json ]
tap_check $? "link: the trace's dangling symlink is still the same symlink"
"$DIAG_BIN/jcheck" trace "$d/real/t.json" >/dev/null 2>&1
tap_check $? "link: the trace was written to the link's target"
no_leftovers "$d/real" 2 "link"

# 2. Symlinks planted at the old predictable temporary names (PATH.tmp.PID:
# the shell's pid is the program's after exec) must not redirect the writes.
d=$SIM_TMP/plant
mkdir "$d"
echo precious >"$d/victim"
PINCACHE_REPORT=$d/r.json PINCACHE_TRACE=$d/t.json run_prog shim sh -c \
	'for f in "$PINCACHE_REPORT" "$PINCACHE_TRACE"; do ln -s victim "$f.tmp.$$"; ln -s victim "$f.tmp"; done
	 exec "$@"' sh $prog >/dev/null 2>"$SIM_TMP/err2"
tap_check $? "planted: the program ran"
sed 's/^/# stderr: /' "$SIM_TMP/err2"
tap_eq "$(cat "$d/victim")" precious "planted: the file the planted links point to is untouched"
is_report "$d/r.json" && [ ! -L "$d/r.json" ]
tap_check $? "planted: the report is a regular file of its own"
[ -f "$d/t.json" ] && [ ! -L "$d/t.json" ]
tap_check $? "planted: the trace is a regular file of its own"

# 3. A symlink to /proc/self/fd/2 (what /dev/stderr is, in a folder we may
# write): the report goes to stderr and the link stays.
d=$SIM_TMP/fd
mkdir "$d"
ln -s /proc/self/fd/2 "$d/err"
PINCACHE_REPORT=$d/err run_prog shim $prog >/dev/null 2>"$SIM_TMP/err3"
tap_check $? "fd link: the program ran"
[ -L "$d/err" ] && [ "$(readlink "$d/err")" = /proc/self/fd/2 ]
tap_check $? "fd link: the link to /proc/self/fd/2 is not replaced"
grep -q '"schema_version"' "$SIM_TMP/err3"
tap_check $? "fd link: the JSON report is on stderr"
no_leftovers "$d" 1 "fd link"

# 4. PINCACHE_REPORT=/dev/stderr itself, and /dev/null (unprivileged: a
# library that replaced them would break them for everyone).
before=$(stat -c '%F %N' /dev/stderr /dev/null 2>&1 | tr '\n' ';')
PINCACHE_REPORT=/dev/stderr unpriv env LD_PRELOAD="$PINCACHE_LIB" $prog >/dev/null 2>"$SIM_TMP/err4"
rc=$?
if [ "$rc" = 77 ]; then
	tap_skip "/dev/stderr: running as root without setpriv, or the build is out of nobody's reach"
else
	tap_check $rc "/dev/stderr: the program ran"
	sed 's/^/# stderr: /' "$SIM_TMP/err4" | grep -v '^# stderr: [ {}"]' | head -n 5
	grep -q '"schema_version"' "$SIM_TMP/err4"
	tap_check $? "/dev/stderr: the JSON report is on stderr"
	n=$(grep -c 'warning' "$SIM_TMP/err4")
	tap_eq "$n" 0 "/dev/stderr: no warning"
	PINCACHE_REPORT=/dev/null unpriv env LD_PRELOAD="$PINCACHE_LIB" $prog >/dev/null 2>"$SIM_TMP/err5"
	tap_check $? "/dev/null: the program ran"
	n=$(grep -c 'warning' "$SIM_TMP/err5")
	tap_eq "$n" 0 "/dev/null: no warning (written through)"
	after=$(stat -c '%F %N' /dev/stderr /dev/null 2>&1 | tr '\n' ';')
	tap_eq "$after" "$before" "/dev/stderr and /dev/null are what they were"
fi

# 5. A FIFO with a reader gets the report, and stays a FIFO.
d=$SIM_TMP/fifo
mkdir "$d"
mkfifo "$d/r.json"
cat "$d/r.json" >"$SIM_TMP/fifo.got" &
reader=$!
PINCACHE_REPORT=$d/r.json run_prog shim $prog >/dev/null 2>"$SIM_TMP/err6"
tap_check $? "fifo: the program ran"
sed 's/^/# stderr: /' "$SIM_TMP/err6"
i=0
while kill -0 "$reader" 2>/dev/null && [ $i -lt 50 ]; do
	sleep 0.1
	i=$((i + 1))
done
if kill -0 "$reader" 2>/dev/null; then
	kill "$reader"
	tap_check 1 "fifo: the reader got the end of the report (it still waits after 5 s)"
else
	tap_check 0 "fifo: the reader got the end of the report"
fi
wait "$reader" 2>/dev/null
is_report "$SIM_TMP/fifo.got"
tap_check $? "fifo: what the reader got is the JSON report"
[ -p "$d/r.json" ]
tap_check $? "fifo: still a FIFO"

# 6. A FIFO nobody reads: one warning, the summary, no hang at exit.
SIM_TIMEOUT=60 PINCACHE_REPORT=$d/r.json run_prog shim $prog >/dev/null 2>"$SIM_TMP/err7"
tap_check $? "fifo without a reader: the program exits, status 0"
sed 's/^/# stderr: /' "$SIM_TMP/err7"
tap_eq "$(grep -c 'warning' "$SIM_TMP/err7")" 1 "fifo without a reader: one warning"
grep -q "warning: cannot write the report to $d/r.json" "$SIM_TMP/err7"
tap_check $? "fifo without a reader: the warning names the FIFO"
[ -p "$d/r.json" ]
tap_check $? "fifo without a reader: still a FIFO"

# 7. A folder pincache may not write: one warning, then the summary.
d=$SIM_TMP/ro
mkdir "$d"
chmod 555 "$d"
PINCACHE_REPORT=$d/r.json unpriv env LD_PRELOAD="$PINCACHE_LIB" $prog >/dev/null 2>"$SIM_TMP/err8"
rc=$?
if [ "$rc" = 77 ]; then
	tap_skip "read-only folder: running as root without setpriv, or the build is out of nobody's reach"
else
	tap_check $rc "read-only folder: the program ran"
	sed 's/^/# stderr: /' "$SIM_TMP/err8"
	tap_eq "$(grep -c 'warning' "$SIM_TMP/err8")" 1 "read-only folder: exactly one warning"
	grep -q "warning: cannot write the report to $d/r.json: Permission denied" "$SIM_TMP/err8"
	tap_check $? "read-only folder: the warning names the report's path and the reason"
	grep -q 'exit report' "$SIM_TMP/err8"
	tap_check $? "read-only folder: the summary is on stderr instead"
	no_leftovers "$d" 0 "read-only folder"
fi
tap_done
