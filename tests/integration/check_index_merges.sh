#!/usr/bin/env bash
# The `hamming` index as a log-structured merge (issue 11), driven by inserts alone:
# (a) an index created on an EMPTY table WITH (pending_limit = 1000) takes 200 k rows from
#     two concurrent sessions in transactions of 1,000 rows, so that the inserting backends
#     seal the pending list, write runs and merge them (a hundred times or more) while the
#     other session appends and hamming_index_check runs alongside; then 50 probes `fp <@ hamming_ball(q, 3)`
#     and `ORDER BY fp <~> q LIMIT 10`, forced through the index, must equal brute force,
#     the metapage must show few runs (the merge policy's logarithmic bound) and
#     hamming_index_check must count every row;
# (b) churn: DELETE everything, VACUUM, insert the same rows again, three times: each round
#     exact and checked, and the index under twice its size after the first load (merged-away
#     runs are recycled and their pages reused, not left to grow the file);
# (c) ALTER INDEX ... SET (pending_limit = 50000): the pending list now grows past the old
#     limit without a run being written, and the answers stay exact with 40 k pending rows
#     and after the flush that the 50,000th row triggers;
# (d) rows with NULL fingerprints, in runs and in the pending list: `ORDER BY fp <~> q`
#     returns every row, the NULL ones last, and the distances equal brute force;
# (e) an INSERT cancelled while its backend writes a run: the run's pages are nobody's,
#     lookups and the check ignore them, and VACUUM frees them all.
# The metapage and the pages' owners are read with pageinspect, at the offsets drawn in
# core/src/search/index_page.rs and src/am/page.rs.
# Own cluster in /tmp/neardup-index-merges with shared_preload_libraries = 'neardup'.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/scripts/cluster.sh"
DIR=/tmp/neardup-index-merges
T0=$SECONDS

fail() { echo "check_index_merges: $*" >&2; exit 1; }
q() { psql -XqAt -v ON_ERROR_STOP=1 "$@"; }

# No fsync: this checks answers, not durability (check_index_crash.sh does that). The
# inserting backends merge (no background workers: the path without the preload, whose
# steps (c) and (e) time); check_merge_worker.sh covers the workers.
cluster_start "$DIR" "shared_preload_libraries = 'neardup'" "autovacuum = off" "fsync = off" \
    "synchronous_commit = off" "max_wal_size = '4GB'" "checkpoint_timeout = '30min'" \
    "log_min_messages = warning" "neardup.merge_workers = 0"
workers=()
cleanup() {
    local pid
    for pid in "${workers[@]}"; do kill "$pid" 2>/dev/null || true; done
    cluster_stop "$DIR"
}
trap cleanup EXIT

# --- 200,000 fingerprints in a random order: uniform ones, 2,000 planted clusters of 20
# near copies (0-4 bits from their centre), exact duplicates and a spike of 2,000 sharing
# their top 24 bits (one long run of equal prefixes in the tables that key on those bits).
q >/dev/null -c "CREATE EXTENSION neardup" -c "CREATE EXTENSION pageinspect" -c "CREATE EXTENSION pg_freespacemap" \
    -f "$ROOT/tests/integration/fingerprint_functions.sql" -f "$ROOT/tests/integration/index_pages.sql"
q >/dev/null <<'SQL'
SELECT setseed(0.41);
CREATE TABLE centres AS SELECT row_number() OVER () AS c, rnd64() AS fp FROM generate_series(1, 2000);
CREATE TEMP TABLE gen0 AS SELECT rnd64() AS fp FROM generate_series(1, 150000);
INSERT INTO gen0 SELECT flip(c.fp, i % 5) FROM centres c, generate_series(1, 20) i;
INSERT INTO gen0 SELECT fp FROM gen0 LIMIT 8000;
INSERT INTO gen0 SELECT (x'c3a55a'::bigint << 40) | (rnd64() & ((1::bigint << 40) - 1)) FROM generate_series(1, 2000);
CREATE TABLE gen (n int PRIMARY KEY, fp bigint NOT NULL);
INSERT INTO gen SELECT row_number() OVER (ORDER BY random()), fp FROM gen0;
-- Probes: cluster centres (16 rows within 3 bits each), centres 2 bits off, rows
-- of the table (their duplicates), spike members, random fingerprints (nothing near).
CREATE TABLE probes AS
SELECT row_number() OVER () AS pid, fp FROM (
    (SELECT fp FROM centres ORDER BY random() LIMIT 20)
    UNION ALL (SELECT flip(fp, 2) FROM centres ORDER BY random() LIMIT 10)
    UNION ALL (SELECT fp FROM gen ORDER BY random() LIMIT 8)
    UNION ALL (SELECT fp FROM gen WHERE (fp >> 40) & 16777215 = x'c3a55a'::bigint LIMIT 2)
    UNION ALL (SELECT rnd64() FROM generate_series(1, 10))
) s;
CREATE TABLE docs (id bigserial PRIMARY KEY, n int, fp simhash64);
CREATE INDEX docs_fp ON docs USING hamming (fp) WITH (pending_limit = 1000);
SQL
[[ $(q -c "SELECT count(*) FROM gen") == 200000 ]] || fail "expected 200000 generated rows"
[[ $(q -c "SELECT count(*) FROM probes") == 50 ]] || fail "expected 50 probes"

# meta FIELD: a field of the metapage: how many ids were taken (one per pending list and
# per run written), the open pending list's pages, the run a merge is writing (0: none),
# how many runs that merge merges table by table, the runs.
meta() {
    local at
    case $1 in
    next_id) at=12 ;; pending_pages) at=28 ;; merging) at=48 ;; inputs) at=52 ;; runs) at=60 ;;
    *) fail "unknown metapage field $1" ;;
    esac
    q -c "SELECT meta_u32('docs_fp', $at)"
}
# rows [WHERE]: counted by a seq scan (with no column needed, the planner may otherwise
# choose an index-only scan of the hamming index, which cannot return tuples).
rows() { PGOPTIONS="-c enable_indexscan=off -c enable_indexonlyscan=off -c enable_bitmapscan=off" q -c "SELECT count(*) FROM docs ${1:-}"; }
size() { q -c "SELECT pg_relation_size('docs_fp')"; }

# load FROM TO: rows n in (FROM, TO] of gen into docs, from two concurrent sessions, each
# INSERT of 1,000 rows its own transaction (so each session's inserts cross the other's
# flushes and merges). With CHECKING set, a third session runs hamming_index_check meanwhile.
load() {
    local from=$1 to=$2 s b pids=() checker=
    for s in 0 1; do
        for ((b = from + s * 1000; b < to; b += 2000)); do
            echo "INSERT INTO docs (n, fp) SELECT n, fp::simhash64 FROM gen WHERE n > $b AND n <= $((b < to - 1000 ? b + 1000 : to));"
        done >"$DIR/load_$s.sql"
        q -f "$DIR/load_$s.sql" >"$DIR/load_$s.log" 2>&1 &
        pids+=($!)
        workers+=($!)
    done
    if [[ -n ${CHECKING:-} ]]; then
        # hamming_index_check while runs are written and merged: it must never see
        # corruption (it takes a ShareLock on the table, so it runs between transactions).
        (
            while kill -0 "${pids[0]}" 2>/dev/null || kill -0 "${pids[1]}" 2>/dev/null; do
                q -c "SELECT hamming_index_check('docs_fp')" || exit 1
                sleep 0.2
            done
        ) >"$DIR/checker.log" 2>&1 &
        checker=$!
        workers+=($!)
    fi
    for s in 0 1; do
        wait "${pids[$s]}" || fail "[$STAGE] loading session $s failed: $(tail -3 "$DIR/load_$s.log")"
    done
    if [[ -n $checker ]]; then
        wait "$checker" || fail "[$STAGE] hamming_index_check during the load: $(tail -3 "$DIR/checker.log")"
        CHECKS=$(wc -l <"$DIR/checker.log")
    fi
    workers=()
}

force_index="-c enable_seqscan=off -c enable_bitmapscan=off -c enable_hashjoin=off -c enable_mergejoin=off -c enable_material=off"
force_seq="-c enable_indexscan=off -c enable_bitmapscan=off -c enable_indexonlyscan=off"
answer() { PGOPTIONS=$1 q -c "$2"; }
uses_index() { # OPTIONS SQL
    local plan
    plan=$(PGOPTIONS=$1 q -c "EXPLAIN (COSTS OFF) $2")
    grep -q "Index Scan using docs_fp" <<<"$plan" && ! grep -qE "Seq Scan on docs( |$)" <<<"$plan" ||
        fail "[$STAGE] the plan does not read docs_fp:"$'\n'"$plan"$'\n'"for: $2"
}

# compare: the ball of radius 3 around each probe, and its 10 nearest rows, through the
# index equal brute force (bit_count of the XOR, core PostgreSQL only).
COMPARED=0
compare() {
    local agg="SELECT count(*) || ' ' || md5(coalesce(string_agg(p.pid || ':' || d.id, ',' ORDER BY p.pid, d.id), ''))
        FROM probes p JOIN docs d"
    local ball="$agg ON d.fp <@ hamming_ball(p.fp::simhash64, 3)"
    local expected result
    expected=$(answer "$force_seq" "$agg ON bit_count((d.fp::bigint # p.fp)::bit(64)) <= 3")
    [[ ${expected%% *} -gt 300 ]] || fail "[$STAGE] only ${expected%% *} matches in all, the probes test nothing"
    COMPARED=$((COMPARED + ${expected%% *}))
    uses_index "$force_index" "$ball"
    result=$(answer "$force_index" "$ball")
    [[ $result == "$expected" ]] || fail "[$STAGE] the index finds '$result' within 3 bits, brute force '$expected'"

    # The 10 nearest: the same distances, and the same rows except among those tied at the
    # 10th distance (which the index may break otherwise).
    local knn="SELECT md5(string_agg(pid || ':' || dist || ':' || coalesce(sure::text, '?'), ',' ORDER BY pid, dist, sure))
        FROM (SELECT p.pid, x.dist, CASE WHEN x.dist < max(x.dist) OVER (PARTITION BY p.pid) THEN x.id END AS sure
              FROM probes p CROSS JOIN LATERAL (SELECT d.id, d.fp <~> p.fp::simhash64 AS dist FROM docs d
                  WHERE d.fp IS NOT NULL ORDER BY d.fp <~> p.fp::simhash64 LIMIT 10) x) s"
    expected=$(answer "$force_seq" "${knn//d.fp <~> p.fp::simhash64/bit_count((d.fp::bigint # p.fp)::bit(64))::int}")
    uses_index "$force_index" "$knn"
    result=$(answer "$force_index" "$knn")
    [[ $result == "$expected" ]] || fail "[$STAGE] ORDER BY fp <~> q LIMIT 10 through the index differs from brute force"
}

# checked: hamming_index_check passes and counts every row of the table.
checked() {
    local n total
    n=$(q -c "SELECT hamming_index_check('docs_fp')" 2>&1) || fail "[$STAGE] hamming_index_check: $n"
    total=$(rows)
    [[ $n == "$total" ]] || fail "[$STAGE] hamming_index_check counts $n rows, the table has $total"
}

# --- (a) 200 k rows into an index built empty, in 200 transactions from two sessions.
STAGE="first load"
t=$SECONDS
CHECKING=1 load 0 200000
load_time=$((SECONDS - t))
checked
[[ $(rows) == 200000 ]] || fail "[$STAGE] rows missing from the table"
ids=$(meta next_id) runs=$(meta runs)
[[ $ids -ge 0 ]] || fail "[$STAGE] block 0 is not a hamming metapage of the known layout"
# Every pending list written as a run took two ids (its successor's, the run's): 200,000
# rows in lists of 1,000 to 4,000 rows take 100 or more (a broken trigger, a handful).
((ids > 40)) || fail "[$STAGE] only $ids ids taken: the pending list was seldom written as a run"
# Runs merge as core/src/search/merge_policy.rs says: each holds several times the rows of all
# smaller ones, so 200 lists of ~1,000-1,700 rows leave a handful of runs, not hundreds
# (at most 8: slack for flushes skipped while another session held the merge lock).
((runs >= 1 && runs <= 8)) || fail "[$STAGE] $runs runs after the load: merges did not keep them few"
first_size=$(size)
echo "check_index_merges: 200000 rows in $load_time s ($CHECKS hamming_index_check meanwhile); $runs runs, $ids ids taken, index $((first_size / 8192)) pages"
((CHECKS >= 1)) || fail "[$STAGE] hamming_index_check never ran during the load"
compare

# --- (b) churn: delete all, VACUUM (bulk delete, flush, merge, recycle, sweep), reload.
for round in 1 2 3; do
    STAGE="churn round $round"
    q -c "DELETE FROM docs" -c "VACUUM docs"
    [[ $(q -c "SELECT hamming_index_check('docs_fp')") == 0 ]] || fail "[$STAGE] entries left after DELETE and VACUUM"
    load 0 200000
    checked
    compare
    s=$(size)
    echo "check_index_merges: round $round: index $((s / 8192)) pages after reloading (first load: $((first_size / 8192))), $(meta runs) runs"
    ((s < 2 * first_size)) || fail "[$STAGE] the index grew to $s bytes, over twice its $first_size after the first load"
done

# --- (c) a larger pending_limit takes effect at once.
STAGE="pending_limit = 50000"
q -c "ALTER INDEX docs_fp SET (pending_limit = 50000)"
ids=$(meta next_id)
pages=$(meta pending_pages)
# 40,000 rows 1-2 bits off existing ones (so the probes find them): with the old limit they
# would have made ~35 runs; with the new one they stay pending.
q -c "INSERT INTO docs (n, fp) SELECT n, flip(fp, 1 + n % 2)::simhash64 FROM gen WHERE n <= 40000"
[[ $(meta next_id) == "$ids" ]] || fail "[$STAGE] a run was written below the new limit ($ids -> $(meta next_id) ids)"
((pages + 40000 / 582 <= $(meta pending_pages))) ||
    fail "[$STAGE] the pending list has $(meta pending_pages) pages, expected $pages + 40000 rows' worth"
checked
compare
# Past 50,000 pending rows the inserter writes them as a run.
q -c "INSERT INTO docs (n, fp) SELECT n, flip(fp, 3)::simhash64 FROM gen WHERE n > 40000 AND n <= 60000"
(($(meta next_id) > ids)) || fail "[$STAGE] no run written after 60,000 pending rows"
checked
compare

# --- (d) NULL fingerprints: some merged into runs (small limit again), some pending.
STAGE="NULL fingerprints"
q -c "ALTER INDEX docs_fp SET (pending_limit = 1000)"
q -c "INSERT INTO docs (n, fp) SELECT n, CASE WHEN n % 7 = 0 THEN NULL ELSE flip(fp, 4)::simhash64 END FROM gen WHERE n <= 5000"
q -c "ALTER INDEX docs_fp RESET (pending_limit)"
q -c "INSERT INTO docs (n, fp) SELECT n, CASE WHEN n % 3 = 0 THEN NULL ELSE rnd64()::simhash64 END FROM gen WHERE n <= 300"
checked
compare
nulls=$(rows "WHERE fp IS NULL")
total=$(rows)
((nulls == 5000 / 7 + 100)) || fail "[$STAGE] $nulls NULL fingerprints, expected $((5000 / 7 + 100))"
# The whole table in distance order from a constant probe: every row once, NULL distances
# (NULL rows) last, and the sequence of distances that of a sort by brute force.
for pid in 1 21 45; do
    fp="'$(q -c "SELECT fp FROM probes WHERE pid = $pid")'::bigint"
    order="SELECT count(*) || ' ' || count(*) FILTER (WHERE dist IS NULL) || ' '
            || coalesce(min(pos) FILTER (WHERE dist IS NULL), 0) || ' '
            || md5(string_agg(coalesce(dist::text, 'N'), ',' ORDER BY pos))
        FROM (SELECT dist, row_number() OVER () AS pos FROM
              (SELECT d.fp <~> $fp::simhash64 AS dist FROM docs d ORDER BY d.fp <~> $fp::simhash64) s) t"
    plan=$(PGOPTIONS=$force_index q -c "EXPLAIN (COSTS OFF) $order")
    grep -q "Index Scan using docs_fp" <<<"$plan" || fail "[$STAGE] the full ORDER BY does not read docs_fp:"$'\n'"$plan"
    result=$(answer "$force_index" "$order")
    expected=$(answer "$force_seq" "${order//d.fp <~> $fp::simhash64/bit_count((d.fp::bigint # $fp)::bit(64))::int}")
    [[ $result == "$total $nulls $((total - nulls + 1)) "* ]] ||
        fail "[$STAGE] probe $pid: ORDER BY fp <~> q gives (rows, NULLs, first NULL at) '${result% *}', expected $total $nulls $((total - nulls + 1))"
    [[ $result == "$expected" ]] || fail "[$STAGE] probe $pid: the distances in index order differ from brute force"
done
# LIMIT reaching into the NULL rows: all the others first, then NULLs.
result=$(answer "$force_index" "SELECT count(*) FILTER (WHERE fp IS NULL) FROM (SELECT fp FROM docs
    ORDER BY fp <~> $fp::simhash64 LIMIT $((total - nulls + 10))) s")
[[ $result == 10 ]] || fail "[$STAGE] LIMIT (non-NULL rows + 10) returns $result NULL rows, expected 10"

# --- (e) an ERROR in the middle of a merge: the inserting backend that writes a run is
# cancelled while it writes one whole (a merge of up to 65,536 rows, published only at the
# end). Its INSERT rolls back; the run's pages, owned by an id nothing refers to, must not
# disturb lookups or the check, and VACUUM must forget the merge and free every one.
STAGE="cancel during a merge"
# (lists of 20,000 rows: each written as a run whole, which takes long enough to be caught)
q -c "ALTER INDEX docs_fp SET (pending_limit = 20000)"
q >/dev/null <<'SQL'
CREATE TABLE cancels (merge bigint, pid int);
-- Cancels the session running INSERT into docs once a merge that writes its run whole
-- has been seen in three polls a millisecond apart (so cancelled while it writes).
CREATE PROCEDURE cancel_during_merge() LANGUAGE plpgsql AS $$
DECLARE
    seen bigint := 0;
    polls int := 0;
    merge bigint;
    inserter int;
    deadline timestamptz := clock_timestamp() + interval '30 s';
BEGIN
    LOOP
        merge := CASE WHEN meta_u32('docs_fp', 52) = 0 THEN meta_u32('docs_fp', 48) ELSE 0 END;
        polls := CASE WHEN merge = seen THEN polls + 1 ELSE 1 END;
        IF merge > 0 AND polls >= 3 THEN
            SELECT pid INTO inserter FROM pg_stat_activity WHERE query LIKE 'INSERT INTO docs%' AND state = 'active';
            IF inserter IS NOT NULL AND pg_cancel_backend(inserter) THEN
                INSERT INTO cancels VALUES (merge, inserter);
                RETURN;
            END IF;
        END IF;
        EXIT WHEN clock_timestamp() > deadline;
        seen := merge;
        COMMIT;
        PERFORM pg_sleep(0.001);
    END LOOP;
END $$;
SQL
# The cancel may come just after the merge ended (then the metapage names none, or a merge
# table by table that the backend began next, which the next INSERT finishes): again.
before=$(rows)
for attempt in 1 2 3 4 5 6; do
    q -c "TRUNCATE cancels"
    q -c "CALL cancel_during_merge()" >"$DIR/cancel.log" 2>&1 &
    canceller=$!
    workers+=($!)
    sleep 0.5
    # 200,000 rows in one statement, so that it writes and merges runs as it goes.
    q -c "INSERT INTO docs (n, fp) SELECT n, flip(fp, 1)::simhash64 FROM gen" >"$DIR/cancelled.log" 2>&1 &&
        fail "[$STAGE] the INSERT was not cancelled (no merge seen writing a whole run)"
    wait "$canceller" || fail "[$STAGE] $(cat "$DIR/cancel.log")"
    workers=()
    grep -q "canceling statement due to user request" "$DIR/cancelled.log" ||
        fail "[$STAGE] the INSERT failed otherwise: $(cat "$DIR/cancelled.log")"
    [[ $(rows) == "$before" ]] || fail "[$STAGE] rows of the cancelled INSERT are visible"
    merge=$(meta merging)
    echo "check_index_merges: attempt $attempt: cancelled while merge $(q -c "SELECT merge FROM cancels") was writing;" \
        "the metapage names merge $merge ($(meta inputs) runs merged table by table)"
    ((merge > 0)) && [[ $(meta inputs) == 0 ]] && break
    ((attempt < 6)) || fail "[$STAGE] six cancels, none while a merge was writing a run whole"
done
q -c "CREATE TABLE orphans AS SELECT blkno FROM page_owners('docs_fp') WHERE owner = $merge"
orphans=$(q -c "SELECT count(*) FROM orphans")
echo "check_index_merges: merge $merge had written $orphans pages"
checked
compare
q -c "VACUUM docs"
[[ $(meta merging) == 0 ]] || fail "[$STAGE] VACUUM did not forget the cancelled merge $merge"
left=$(q -c "SELECT count(*) FROM orphans o JOIN page_owners('docs_fp') p USING (blkno)
    WHERE p.owner = $merge AND pg_freespace('docs_fp', o.blkno) = 0")
[[ $left == 0 ]] || fail "[$STAGE] $left of the $orphans pages the cancelled merge $merge wrote are neither reused nor free after VACUUM"
checked
compare

# No warning from the server all along (0.6.0's first cut released a merge lock it had not
# taken whenever another backend held it: thousands of "you don't own a lock").
warnings=$(grep -c "WARNING" "$DIR/server.log" || true)
((warnings == 0)) || fail "the server logged $warnings warnings: $(grep -m3 WARNING "$DIR/server.log")"
echo "check_index_merges: ok in $((SECONDS - T0)) s ($COMPARED (probe, row) matches compared)"
