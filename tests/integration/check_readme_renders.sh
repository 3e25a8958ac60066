#!/usr/bin/env bash
# Keeps the README rendering as written on GitHub (needs no database):
#   - a table is a header row, a delimiter row (|---|) and rows up to the first blank line;
#     a `|` row anywhere else shows as loose text (typically a table cut in two by a blank
#     line, or a header without its delimiter row), and a text line right under a table
#     becomes one of its rows;
#   - every row has as many cells as its header: cells split on `|` but not on `\|`; a bare
#     `|` inside a `code span` is reported too, since GitHub splits the cell there as well;
#   - ``` fences balance (a ```lang line inside a block means that block's closing fence is
#     missing) and no ```sql block is empty.
# Usage: check_readme_renders.sh [FILE...]   (default: README.md and docs/*.md)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
(($#)) || set -- "$ROOT/README.md" "$ROOT"/docs/*.md

status=0
for file in "$@"; do
    awk -v file="$file" '
    function problem(at, msg) { printf "%s:%d: %s\n", file, at, msg; bad = 1 }
    function is_row(s) { return s ~ /^ ? ? ?\|/ }
    function is_delimiter(s) { return s ~ /^ *\|? *:?-+:? *(\| *:?-+:? *)*\|? *$/ && s ~ /\|/ }
    function is_fence(s) { return s ~ /^ ? ? ?```/ }
    # cells(s, at): the number of cells of the table row s (line at).
    function cells(s, at,    n, i, c, len, run, j, stop, body) {
        sub(/^ *\|/, "", s)
        if (s ~ /\| *$/ && s !~ /\\\| *$/) sub(/\| *$/, "", s)
        n = 1
        len = length(s)
        for (i = 1; i <= len; i++) {
            c = substr(s, i, 1)
            if (c == "\\") { i++; continue }
            if (c == "|") { n++; continue }
            if (c != "`") continue
            run = "`"
            while (substr(s, i + length(run), 1) == "`") run = run "`"
            # a code span ends at the next run of exactly as many backticks
            stop = 0
            for (j = i + length(run); j + length(run) - 1 <= len; j++) {
                if (substr(s, j, length(run)) == run && substr(s, j + length(run), 1) != "`" && substr(s, j - 1, 1) != "`") {
                    stop = j
                    break
                }
            }
            if (!stop) { i += length(run) - 1; continue }
            body = substr(s, i + length(run), stop - i - length(run))
            if (body ~ /(^|[^\\])\|/)
                problem(at, "a bare | inside the code span " run body run " splits the cell on GitHub: write \\|")
            i = stop + length(run) - 1
        }
        return n
    }
    { line[NR] = $0 }
    END {
        columns = 0
        for (i = 1; i <= NR; i++) {
            s = line[i]
            if (is_fence(s)) {
                columns = 0
                fence = s
                sub(/^ */, "", fence)
                match(fence, /^`+/)
                lang = substr(fence, RLENGTH + 1)
                fence = substr(fence, 1, RLENGTH)
                sub(/^ */, "", lang)
                sub(/[ {].*/, "", lang)
                opened = i
                body = ""
                for (i++; i <= NR; i++) {
                    s = line[i]
                    if (s ~ /^ ? ? ?```+ *$/ && index(s, fence)) break
                    if (is_fence(s) && s ~ /```[^` ]/)
                        problem(i, "a fence with an info string inside the block opened on line " opened ": that block lacks its closing ```")
                    body = body s
                }
                if (i > NR) problem(opened, "this ``` fence is never closed")
                else if (lang == "sql" && body !~ /[^ \t]/) problem(opened, "empty ```sql block")
                continue
            }
            if (columns && is_row(s)) {
                n = cells(s, i)
                if (n != columns) problem(i, "this row has " n " cells, its header (line " header ") " columns)
                continue
            }
            if (columns && s !~ /^[ \t]*$/ && s !~ /^ ? ? ?([#>*+-]|[0-9]+[.)] |<)/)
                problem(i, "a text line right under a table becomes one of its rows: leave a blank line above it")
            columns = 0
            if (!is_row(s)) continue
            if (i < NR && is_delimiter(line[i + 1]) && !is_delimiter(s)) {
                columns = cells(s, i)
                header = i
                n = cells(line[i + 1], i + 1)
                if (n != columns) problem(i + 1, "the delimiter row has " n " cells, its header " columns)
                i++
            } else if (is_delimiter(s)) {
                problem(i, "a delimiter row without a header row above it")
            } else {
                # one report for the whole run of loose rows
                for (last = i; last < NR && is_row(line[last + 1]); last++);
                problem(i, (last > i ? "lines " i "-" last ": " last - i + 1 " table rows" : "a table row") \
                    " outside any table: " (i > 1 && line[i - 1] ~ /^[ \t]*$/ ? "a blank line above cuts the table in two, or " : "") \
                    "the header lacks its |---| row")
                i = last
            }
        }
        exit bad
    }' "$file" || status=1
done
((status == 0)) || echo "check_readme_renders: the lines above do not render as intended" >&2
exit $status
