#!/usr/bin/env bash
# Why a hamming index of wide codes keeps the whole code in each of its substring tables
# (613 bytes a row for hash256 at r = 31) instead of once, with short postings that point to
# it: the pages a lookup would then have to read at random. On N uniform hash256 codes, in
# one run:
#   - the index's lookups within R bits of 21 codes with no row within R (median), and the
#     pages each reads (EXPLAIN BUFFERS);
#   - for each cut of a code into m substrings (Norouzi et al.'s radii, as the index cuts
#     them), the bytes a row of a layout with the code once (32 bytes and a 6-byte TID) and
#     a 4-byte pointer a posting (the substring's value left implicit), and the pages a
#     lookup must read in it at the least: one posting leaf per value probed in each table,
#     one page per candidate's code (the candidates uniform codes yield); a model that
#     leaves out everything but page reads (no descent, no binary search, no test);
#   - the time of reading that many pages at random (bench/page_reads: each page pinned
#     through the buffer this backend last found it in, share-locked, 32 bytes read) in a
#     relation the size of that layout (the index's first blocks stand in), after one pass
#     over them all, as in a pooled session; for the cut with the fewest pages among those
#     within LIMIT bytes a row (the issue's goal, 160), and for the cut of 16 substrings.
# A floor above today's lookup time (ratio over 1) means a layout that small cannot answer
# as fast as today's index, whatever else it does well (docs/benchmarks.md, "Why each
# substring table keeps the whole code").
# Usage (as root): N=10000000 bench/wide_size_floor.sh   (SKIP_INSTALL=1 keeps the installed
# build; HUGE_PAGES=on puts the shared buffers in huge pages, reserved beforehand)
source "$(dirname "$0")/lib.sh"
DIR=/tmp/neardup-bench-wide-size
N=${N:-1000000}
R=${R:-31}
LIMIT=${LIMIT:-160}
trap 'cluster_stop "$DIR"' EXIT
q() { psql -qAtX -v ON_ERROR_STOP=1 "$@"; }
failed=0
fail() { echo "   FAIL: $*"; failed=1; }

[[ -n ${SKIP_INSTALL:-} ]] || install_extension
# the measuring tool, built outside the tree
tool=$(mktemp -d)
cp "$ROOT"/bench/page_reads/* "$tool/"
make -s -C "$tool" PG_CONFIG="$PG_CONFIG" install >/dev/null
rm -rf "$tool"

buffers=2GB
((N <= 2000000)) || buffers=8GB
cluster_start "$DIR" "shared_buffers = '$buffers'" "maintenance_work_mem = '4GB'" "jit = off" \
    "max_wal_size = '20GB'" "checkpoint_timeout = '1h'" "huge_pages = ${HUGE_PAGES:-off}"
export PGOPTIONS="-c max_parallel_workers_per_gather=0"
q -c "CREATE EXTENSION neardup" -c "CREATE EXTENSION pg_prewarm" -c "CREATE EXTENSION page_reads"
q -c "CREATE TABLE u AS SELECT g AS id, ('x' || md5(g::text) || md5((g + 977777777)::text))::bit(256)::hash256 AS code FROM generate_series(1, $N) g" \
    -c "VACUUM ANALYZE u"
build_ms=$(wall_ms "CREATE INDEX u_code ON u USING hamming (code) WITH (max_distance = $R)")
echo "   $N uniform codes indexed in $build_ms ms"
bytes=$(q -c "SELECT pg_relation_size('u_code') / count(*) FROM u")
result "hamming index bytes a row" "$bytes" B "the code" 32
q -c "SELECT pg_prewarm('u_code')" >/dev/null

far() { echo "('x' || md5('far ' || $1) || md5('away ' || $1))::bit(256)::hash256"; }
[[ $(q -c "SELECT min(hamming(code, $(far 1))) FROM u") -gt $R ]] || fail "a far code has a row within $R bits"
lookup() { echo "SELECT id FROM u WHERE code <@ hamming_ball($(far "$1"), $R)"; }
[[ $(q -c "EXPLAIN $(lookup 1)") == *u_code* ]] || fail "the lookup does not use the index"
[[ $(q -c "SELECT count(*) FROM ($(lookup 1)) s") == 0 ]] || fail "the lookup of a far code found rows"
# each far code twice in one session, the second run kept: its time and the pages it read
runs=$(for i in $(seq 1 21); do
    for _ in 1 2; do echo "EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) $(lookup "$i");"; done
done | psql -AtX | awk '
    /^ *Buffers: shared/ && !seen { pages = 0; for (f = 1; f <= NF; f++) if ($f ~ /^(hit|read)=/) { split($f, a, "="); pages += a[2] }; seen = 1 }
    /^Execution Time:/ { if (++n % 2 == 0) print $3, pages; seen = 0 }')
lookup_ms=$(awk '{print $1}' <<<"$runs" | median)
lookup_pages=$(awk '{print $2}' <<<"$runs" | median)
result "lookup within $R, 21 far codes, median" "$lookup_ms" ms
result "pages the lookup reads" "$lookup_pages" pages

# m, bytes a row, pages, blocks of the layout: the cut with the fewest pages within LIMIT
# bytes a row, then the cut of 16
mapfile -t cuts < <(python3 - "$N" "$R" "$LIMIT" <<'PY'
import sys
from math import comb, exp
n, r, limit = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
page = 8192 - 24 - 16        # a page's bytes for entries
code = 32 + 6                # the code and its TID, once
posting = 4                  # a pointer to it
def cut(m):
    a, b = divmod(r, m)      # r = a m + b: b + 1 substrings within a, the rest within a - 1
    base, wider = divmod(256, m)
    widths = [base + 1] * wider + [base] * (m - wider)
    return widths, [a] * (b + 1) + [a - 1] * (m - b - 1)
def pages(m):
    widths, radii = cut(m)
    leaves = n * posting / page
    codes = n * code / page
    probed = candidates = 0.0
    for w, rad in zip(widths, radii):
        if rad < 0:
            continue
        values = sum(comb(w, d) for d in range(rad + 1))
        probed += leaves * (1 - exp(-values / leaves))
        candidates += values * n / 2 ** w
    return probed + codes * (1 - exp(-candidates / codes))
def row(m):
    size = m * posting + code
    print(m, size, round(pages(m)), int(n * size / page) + 1)
fits = [m for m in range(8, 257) if m * posting + code <= limit]  # 8: 32-bit substrings
row(min(fits, key=pages))
row(16)
PY
)
for line in "${cuts[@]}"; do
    read -r m size floor_pages blocks <<<"$line"
    times=$(q -c "SELECT array_to_string(page_reads('u_code', $floor_pages, $blocks, 7), ' ')")
    floor_ms=$(tr ' ' '\n' <<<"$times" | tail -n 7 | median)
    result "$m substrings, $size B a row: $floor_pages pages" "$floor_ms" ms "lookup within $R" "$lookup_ms"
done
echo
print_summary
exit $failed
