#!/usr/bin/env bash
# Merges under a long-running scan (issue 23): a session keeps a cursor open on an index
# scan (REPEATABLE READ, so its snapshot and its copy of the metapage live as long as the
# cursor) while another inserts 120,000 rows with pending_limit = 200, so that hundreds of
# seals and merges leave garbage that nothing may recycle meanwhile. Then:
#   (a) every insert went through (in 0.5.0 garbage lived in the 8 kB metapage: merges
#       stopped once it was full, and the pending list grew without bound, or an insert
#       failed on "metapage overflow"); the garbage went to registry pages chained after
#       block 1, and once the background workers catch up the runs are few and the
#       pending list small;
#   (b) the cursor's rows, fetched after all those merges from the pages its metapage
#       named, are exactly what its snapshot saw;
#   (c) once the cursor closes, the next merge recycles all of it (the registry empties),
#       later inserts reuse the pages, and hamming_index_check and probes are exact.
# Own cluster in /tmp/neardup-long-snapshot.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/scripts/cluster.sh"
DIR=/tmp/neardup-long-snapshot
T0=$SECONDS

fail() { echo "check_index_long_snapshot: $*" >&2; exit 1; }
q() { psql -XqAt -v ON_ERROR_STOP=1 "$@"; }

cluster_start "$DIR" "autovacuum = off" "fsync = off" "synchronous_commit = off" \
    "log_min_messages = warning"
holder=
cleanup() {
    touch "$DIR/go"
    [[ -z $holder ]] || kill "$holder" 2>/dev/null || true
    cluster_stop "$DIR"
}
trap cleanup EXIT

q >/dev/null -c "CREATE EXTENSION neardup" -c "CREATE EXTENSION pageinspect" \
    -f "$ROOT/tests/integration/fingerprint_functions.sql"
q >/dev/null <<'SQL'
SELECT setseed(0.23);
CREATE TABLE gen AS SELECT g AS n, rnd64() AS fp FROM generate_series(1, 130000) g;
CREATE TABLE docs (n int, fp simhash64);
CREATE INDEX docs_fp ON docs USING hamming (fp) WITH (pending_limit = 200);
INSERT INTO docs SELECT n, fp::simhash64 FROM gen WHERE n <= 5000;
-- Registry pages (kind 5) and the bytes of records they hold; the metapage's run count.
CREATE FUNCTION registry_pages(OUT pages bigint, OUT bytes bigint) LANGUAGE sql AS
$$ SELECT count(*), coalesce(sum(h.lower - 24), 0)
   FROM generate_series(1, pg_relation_size('docs_fp') / 8192 - 1) b,
        LATERAL get_raw_page('docs_fp', b::int) p, LATERAL page_header(p) h
   WHERE h.upper <> 0 AND get_byte(p, h.special + 8) = 5 $$;
CREATE FUNCTION runs() RETURNS int LANGUAGE sql AS
$$ SELECT get_byte(p, 24 + 60) + (get_byte(p, 24 + 61) << 8) FROM get_raw_page('docs_fp', 0) p $$;
SQL

# The holder: a cursor on an index scan, open across everything below. It reports the
# rows its snapshot sees, then waits for the word to fetch the rest of the cursor.
rm -f "$DIR/go"
(
    {
        echo "BEGIN ISOLATION LEVEL REPEATABLE READ;"
        echo "SET enable_seqscan = off; SET enable_bitmapscan = off;"
        echo "SELECT 'seen', count(*), sum(n) FROM docs WHERE fp <@ hamming_ball('0000000000000000', 64);"
        echo "DECLARE c CURSOR FOR SELECT n FROM docs WHERE fp <@ hamming_ball('0000000000000000', 64);"
        echo "FETCH 10 FROM c;"
        echo "\\echo ready"
        echo "\\! while [ ! -e $DIR/go ]; do sleep 0.1; done"
        echo "\\echo fetch-start"
        echo "FETCH ALL FROM c;"
        echo "\\echo fetch-end"
        echo "COMMIT;"
    } | stdbuf -oL psql -XAt -v ON_ERROR_STOP=1 >"$DIR/holder.out" 2>&1
) &
holder=$!
for _ in $(seq 100); do grep -q ready "$DIR/holder.out" 2>/dev/null && break; sleep 0.1; done
grep -q ready "$DIR/holder.out" || fail "the cursor did not open: $(cat "$DIR/holder.out")"
seen=$(grep '^seen' "$DIR/holder.out" | cut -d'|' -f2)
[[ $seen == 5000 ]] || fail "the cursor's snapshot sees $seen rows, not 5000"

# (a) 120,000 rows in 60 statements while the cursor is open.
for ((b = 5000; b < 125000; b += 2000)); do
    echo "INSERT INTO docs SELECT n, fp::simhash64 FROM gen WHERE n > $b AND n <= $((b + 2000));"
done | q >/dev/null || fail "inserts failed under the long scan"
# The background workers seal and merge after the inserts return, so the runs and the
# pending list are only bounded once they catch up: give them 60 s (in 0.5.0 merges
# stopped for as long as the cursor stayed open; here they catch up in a second or two,
# but CI once read 15 runs the moment the inserts returned).
pending() { q -c "SELECT get_byte(p, 24 + 28) + (get_byte(p, 24 + 29) << 8) FROM get_raw_page('docs_fp', 0) p"; }
# wait_for CONDITION: until the command CONDITION succeeds, or for 60 s
wait_for() { local t=$SECONDS; until "$1" || ((SECONDS - t >= 60)); do sleep 0.2; done; }
merged() { (($(q -c "SELECT runs()") <= 8 && $(pending) <= 2)); }
T1=$SECONDS first_runs=$(q -c "SELECT runs()")
wait_for merged
runs=$(q -c "SELECT runs()")
read -r pages bytes < <(q -F' ' -c "SELECT * FROM registry_pages()")
echo "   under the open cursor: registry $pages pages ($bytes bytes of garbage records)," \
    "$first_runs runs as the inserts returned, $runs after $((SECONDS - T1)) s"
((pages > 1)) || fail "the garbage of hundreds of merges fits in block 1 ($bytes bytes)?"
((runs <= 8)) || fail "$runs runs after 60 s: merges stopped under the long scan"
pending=$(pending)
((pending <= 2)) || fail "the pending list has $pending pages after 60 s: merges stopped"

# (b) The cursor, read to its end from the pages its metapage named.
touch "$DIR/go"
wait "$holder" || fail "the cursor failed: $(tail -3 "$DIR/holder.out")"
holder=
cursor=$(($(sed -n '/^fetch-start$/,/^fetch-end$/p' "$DIR/holder.out" | grep -c '^[0-9]') + 10))
[[ $cursor == 5000 ]] || fail "the cursor returned $cursor rows, its snapshot saw 5000"

# (c) The next merge recycles everything; later inserts reuse the pages.
size_before=$(q -c "SELECT pg_relation_size('docs_fp')")
q >/dev/null -c "INSERT INTO docs SELECT n, fp::simhash64 FROM gen WHERE n > 125000 AND n <= 126000"
# (the merge is the workers', after the INSERT returns: waited for, as in (a))
recycled() { [[ $(q -c "SELECT bytes FROM registry_pages()") == 0 ]]; }
wait_for recycled
bytes=$(q -c "SELECT bytes FROM registry_pages()")
((bytes == 0)) || fail "$bytes bytes of garbage left in the registry 60 s after the cursor closed"
q >/dev/null -c "INSERT INTO docs SELECT n, fp::simhash64 FROM gen WHERE n > 126000"
echo "   after the cursor closed: $(q -c "SELECT runs()") runs, index $((size_before / 8192)) -> $(($(q -c "SELECT pg_relation_size('docs_fp')") / 8192)) pages"
size_after=$(q -c "SELECT pg_relation_size('docs_fp')")
# (A pending page or two may come from a new block: the spare pages ran out under the
# cursor. A merge that did not reuse the freed pages would add hundreds.)
((size_after - size_before <= 64 * 8192)) ||
    fail "the index grew from $size_before to $size_after bytes with free pages to reuse"
checked=$(q -c "SELECT hamming_index_check('docs_fp')")
[[ $checked == 130000 ]] || fail "hamming_index_check counts $checked rows"
bad=$(q -c "SET enable_seqscan = off; SET enable_bitmapscan = off;
    SELECT count(*) FROM gen g WHERE g.n % 500 = 0 AND
      (SELECT count(*) FROM docs d WHERE d.fp <@ hamming_ball(g.fp::simhash64, 3))
      <> (SELECT count(*) FROM gen h WHERE hamming(h.fp::simhash64, g.fp::simhash64) + 0 <= 3)")
[[ $bad == 0 ]] || fail "$bad probes differ from brute force"
echo "check_index_long_snapshot: ok ($((SECONDS - T0)) s)"
