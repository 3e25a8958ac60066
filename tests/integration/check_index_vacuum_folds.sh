#!/usr/bin/env bash
# VACUUM folds a hamming index's pending list into runs (as GIN's VACUUM folds its fast-update
# list), whatever its size, and the index stays exact: the metapage (read raw through
# pageinspect; its layout is drawn in core/src/search/index_page.rs) shows the pending pages before
# and none after, with the rows in runs.
set -euo pipefail
psql -qX -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS vacuum_folds" -c "CREATE DATABASE vacuum_folds" >/dev/null
run() { psql -qXAt -d vacuum_folds -v ON_ERROR_STOP=1 "$@"; }
fail() { echo "check_index_vacuum_folds: $*" >&2; exit 1; }
# u32 at byte OFFSET of the metapage's contents (after the 24-byte page header).
meta_u32() {
    run -c "SELECT sum(get_byte(p, 24 + $1 + i) << (8 * i)) FROM get_raw_page('d_fp', 0) p, generate_series(0, 3) i"
}
pending_pages() { meta_u32 28; }
runs() { meta_u32 60; }
run -c "CREATE EXTENSION neardup" -c "CREATE EXTENSION pageinspect" \
    -c "CREATE TABLE d (fp simhash64)" \
    -c "INSERT INTO d SELECT (random() * 2^62)::bigint::simhash64 FROM generate_series(1, 20000)" \
    -c "CREATE INDEX d_fp ON d USING hamming (fp)" \
    -c "INSERT INTO d SELECT (random() * 2^62)::bigint::simhash64 FROM generate_series(1, 5000)" >/dev/null
[[ $(runs) == 1 && $(pending_pages) -ge 8 ]] || fail "before VACUUM: $(runs) runs, $(pending_pages) pending pages"
run -c "VACUUM d"
[[ $(pending_pages) == 0 ]] || fail "after VACUUM: $(pending_pages) pending pages"
# 5,000 rows are a quarter of 20,000 (core/src/search/merge_policy.rs): merged into one.
[[ $(runs) == 1 ]] || fail "after VACUUM: $(runs) runs"
[[ $(run -c "SELECT hamming_index_check('d_fp')") == 25000 ]] || fail "check count"
probe="SELECT count(*) FROM d, (SELECT fp AS q FROM d TABLESAMPLE SYSTEM (1) REPEATABLE (3) LIMIT 20) p WHERE"
by_index=$(run -c "SET enable_seqscan = off" -c "$probe d.fp <@ hamming_ball(p.q, 3)")
brute=$(run -c "SET enable_indexscan = off" -c "SET enable_bitmapscan = off" -c "$probe hamming(d.fp, p.q) + 0 <= 3")
[[ $by_index == "$brute" && $by_index -ge 20 ]] || fail "lookups after VACUUM: index $by_index, brute force $brute"

# The same on wide codes (entries of 38 bytes): VACUUM removes the deleted rows' entries
# from every substring table and folds the pending rows in, and lookups stay exact.
run -c "CREATE TABLE w (id int, code hash256)" \
    -c "INSERT INTO w SELECT g, ('x' || md5(g::text) || md5((g + 7777777)::text))::bit(256)::hash256 FROM generate_series(1, 20000) g" \
    -c "INSERT INTO w SELECT 100000 + id, (code::bit(256) # (B'1'::bit(256) >> (id % 256)))::hash256 FROM w WHERE id % 10 = 0" \
    -c "CREATE INDEX w_code ON w USING hamming (code)" \
    -c "INSERT INTO w SELECT 200000 + id, (code::bit(256) # (B'11'::bit(256) >> (id % 200)))::hash256 FROM w WHERE id % 7 = 0" \
    -c "DELETE FROM w WHERE id % 3 = 0" >/dev/null
run -c "VACUUM w"
rows=$(run -c "SELECT count(*) FROM w")
[[ $(run -c "SELECT hamming_index_check('w_code')") == "$rows" ]] || fail "wide: check count after VACUUM"
wprobe="SELECT count(*) FROM w, (SELECT code AS q FROM w WHERE id % 97 = 1) p WHERE"
by_index=$(run -c "SET enable_seqscan = off" -c "$wprobe w.code <@ hamming_ball(p.q, 31)")
brute=$(run -c "SET enable_indexscan = off" -c "SET enable_bitmapscan = off" -c "$wprobe hamming(w.code, p.q) + 0 <= 31")
[[ $by_index == "$brute" && $by_index -ge 100 ]] || fail "wide lookups after VACUUM: index $by_index, brute force $brute"
echo "check_index_vacuum_folds: ok"
