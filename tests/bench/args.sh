# args.sh - sourced (bash) by the tests/bench scripts run as SCRIPT BUILDDIR
# OUTDIR (coldalloc.sh, synctax.sh), their arguments unchanged: sets cmdline,
# builddir, out (made if need be) and lib (the build's libpincache.so), or
# ends the script with status 2 and a line on stderr.
# shellcheck shell=bash

cmdline="$0 $*"
[ $# -eq 2 ] || { echo "usage: ${0##*/} BUILDDIR OUTDIR" >&2; exit 2; }
builddir=$(cd "$1" 2>/dev/null && pwd) || { echo "${0##*/}: no build folder $1" >&2; exit 2; }
mkdir -p "$2" && out=$(cd "$2" && pwd) || exit 2
lib=$builddir/src/.libs/libpincache.so
