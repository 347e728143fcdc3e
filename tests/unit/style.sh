#!/bin/sh
# style.sh - the STYLE.md rules a grep can hold, over the library's C code
# (comments and string literals removed first):
#   1. getenv only in src/util/options.c;
#   2. no exit, _exit, abort or assert;
#   3. nothing written to stdout (printf, puts, putchar, stdout).
top_srcdir=${top_srcdir:-.}

strip() {   # C source without comments and string/char literals
    awk '
    BEGIN { inc = 0 }
    {
        line = $0; out = ""; i = 1; n = length(line)
        while (i <= n) {
            c = substr(line, i, 1); d = substr(line, i, 2)
            if (inc) { if (d == "*/") { inc = 0; i += 2 } else i++; continue }
            if (d == "/*") { inc = 1; i += 2; continue }
            if (d == "//") break
            if (c == "\"" || c == "\047") {
                q = c; i++
                while (i <= n && substr(line, i, 1) != q) { if (substr(line, i, 1) == "\\") i++; i++ }
                i++; out = out q q; continue
            }
            out = out c; i++
        }
        print out
    }' "$1" | sed 's/format[[:space:]]*([[:space:]]*printf/format(FMT/g'
}

# The library's C files: every .c under src/ but the CLI's (tools may print).
files=$(find "$top_srcdir/src" -name '*.c' ! -path '*/cli/*' 2>/dev/null | sort)
check() {   # check N NAME REGEX [EXCLUDED-FILE]
    hits=
    for f in $files; do
        [ -n "${4:-}" ] && [ "$f" = "$4" ] && continue
        h=$(strip "$f" | grep -nE "$3" | sed "s|^|${f#$top_srcdir/}:|")
        [ -n "$h" ] && hits="$hits$h
"
    done
    if [ -z "$hits" ]; then
        echo "ok $1 - $2"
    else
        echo "not ok $1 - $2"
        printf '%s' "$hits" | sed 's/^/#   /'
    fi
}

if [ -z "$files" ]; then
    echo "1..0 # SKIP no library sources under $top_srcdir/src"
    exit 0
fi
echo "1..3"
check 1 "getenv only in src/util/options.c" \
    '(^|[^A-Za-z0-9_])(secure_)?getenv[[:space:]]*\(' "$top_srcdir/src/util/options.c"
check 2 "no exit, _exit, abort or assert in the library" \
    '(^|[^A-Za-z0-9_])(exit|_exit|_Exit|abort|assert)[[:space:]]*\('
check 3 "nothing printed to stdout by the library" \
    '(^|[^A-Za-z0-9_])(printf|vprintf|puts|putchar|stdout)([^A-Za-z0-9_]|$)'
