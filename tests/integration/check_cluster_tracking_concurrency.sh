#!/usr/bin/env bash
# Cluster tracking under concurrency, with real connections:
#  1. a session inserting a near-duplicate of a row another session has inserted but not yet
#     committed waits for it, then joins its cluster (one cluster, not two);
#  2. four sessions inserting, deleting and re-ranking rows at once end in exactly the
#     clusters the batch function computes on the final table;
#  3. with signature updates too (tier 1 makes the documented approximations), every row keeps
#     exactly one cluster, labelled by its smallest member, with one representative;
#  4. REPEATABLE READ is refused with SQLSTATE 0A000.
set -euo pipefail
DB=cluster_tracking
psql -qX -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
run() { psql -qX -d $DB -v ON_ERROR_STOP=1 "$@" 2>&1; }
fail() { echo "check_cluster_tracking_concurrency: $*"; exit 1; }

run -c "CREATE EXTENSION neardup" \
    -c "CREATE TABLE pages (id bigint PRIMARY KEY, fp simhash64, rank int NOT NULL DEFAULT 0)" \
    -c "CREATE INDEX ON pages USING hamming (fp)" \
    -c "SELECT neardup_cluster_tracking('pages', 'page_clusters', 'id', 'fp', 3, 'rank DESC')" \
    -c "CREATE FUNCTION family_fp() RETURNS simhash64 LANGUAGE sql AS \$\$
            SELECT ((ARRAY[0, 1229782938247303441, -6148914691236517206, 81985529216486895,
                           -81985529216486896, 6148914691236517205])[1 + (random() * 5)::int]
                    # (1::bigint << (random() * 9)::int) # (1::bigint << (random() * 9)::int))::simhash64 \$\$" >/dev/null

# 1. Session A holds an uncommitted row; session B's near-duplicate waits, then joins it.
run -c "BEGIN" -c "INSERT INTO pages VALUES (1, '0000000000000000')" -c "SELECT pg_sleep(2)" -c "COMMIT" >/dev/null &
sleep 0.5
start=$(date +%s%N)
run -c "INSERT INTO pages VALUES (2, '0000000000000001')" >/dev/null
waited_ms=$((($(date +%s%N) - start) / 1000000))
wait
((waited_ms >= 1000)) || fail "session B did not wait for session A (${waited_ms} ms)"
pair=$(run -At -c "SELECT string_agg(id || ':' || cluster_id, ',' ORDER BY id) FROM page_clusters")
[[ $pair == "1:1,2:1" ]] || fail "two sessions' near-duplicates are not one cluster: $pair"

compare_with_batch() { # LABEL
    local diff
    diff=$(run -At -c "(SELECT id, cluster_id, is_representative FROM page_clusters
                         EXCEPT SELECT * FROM neardup_clusters('pages', 'id', 'fp', 3, 'rank DESC'))
                        UNION ALL
                        (SELECT * FROM neardup_clusters('pages', 'id', 'fp', 3, 'rank DESC')
                         EXCEPT SELECT id, cluster_id, is_representative FROM page_clusters)")
    [[ -z $diff ]] || fail "$1: tracked clusters differ from the batch clusters: $(head -5 <<<"$diff")"
}

# 2. Four sessions of single-row and batch statements, each its own transaction.
workload() { # SESSION WITH_SIGNATURE_UPDATES
    local s=$1 base=$(($1 * 1000000))
    for i in $(seq 1 120); do
        local id=$((base + i * 10))
        echo "INSERT INTO pages VALUES ($id, family_fp(), (random() * 9)::int);"
        echo "INSERT INTO pages SELECT $id + g, family_fp(), (random() * 9)::int FROM generate_series(1, 4) g;"
        if ((i % 3 == 0)); then
            echo "DELETE FROM pages WHERE id IN (SELECT id FROM pages WHERE id % 7 = $((i % 7)) ORDER BY random() LIMIT 2);"
            echo "UPDATE pages SET rank = (random() * 9)::int WHERE id IN (SELECT id FROM pages ORDER BY random() LIMIT 3);"
        fi
        if [[ $2 == yes ]] && ((i % 4 == 0)); then
            echo "UPDATE pages SET fp = family_fp() WHERE id IN (SELECT id FROM pages ORDER BY random() LIMIT 2);"
        fi
    done
}
for s in 1 2 3 4; do
    workload $s no | psql -qX -d $DB -v ON_ERROR_STOP=1 >/dev/null 2>"/tmp/cluster_tracking_$s.err" &
done
wait || fail "a workload session failed: $(cat /tmp/cluster_tracking_*.err)"
rows=$(run -At -c "SELECT count(*) FROM pages")
big=$(run -At -c "SELECT count(*) FROM (SELECT cluster_id FROM page_clusters GROUP BY 1 HAVING count(*) > 1) c")
((rows > 1500 && big > 3)) || fail "workload too small ($rows rows, $big clusters)"
compare_with_batch "inserts, deletes and re-ranking"

# 3. With signature updates (tier 1 may keep a row the batch would split off): invariants.
for s in 5 6 7 8; do
    workload $s yes | psql -qX -d $DB -v ON_ERROR_STOP=1 >/dev/null 2>"/tmp/cluster_tracking_$s.err" &
done
wait || fail "a workload session failed: $(cat /tmp/cluster_tracking_*.err)"
broken=$(run -At -c "
    SELECT 'untracked ' || count(*) FROM pages p WHERE NOT EXISTS (SELECT 1 FROM page_clusters c WHERE c.id = p.id) HAVING count(*) > 0
    UNION ALL SELECT 'stale ' || count(*) FROM page_clusters c WHERE NOT EXISTS (SELECT 1 FROM pages p WHERE p.id = c.id) HAVING count(*) > 0
    UNION ALL SELECT 'label ' || cluster_id FROM page_clusters GROUP BY cluster_id HAVING min(id) <> cluster_id
    UNION ALL SELECT 'representatives ' || cluster_id FROM page_clusters GROUP BY cluster_id
              HAVING count(*) FILTER (WHERE is_representative) <> 1")
[[ -z $broken ]] || fail "invariants broken after signature updates: $(head -5 <<<"$broken")"

# 4. REPEATABLE READ cannot see a concurrent session's rows, so it is refused.
out=$(psql -qX -d $DB -c "\set VERBOSITY verbose" -c "BEGIN ISOLATION LEVEL REPEATABLE READ" \
           -c "INSERT INTO pages VALUES (-1, NULL)" -c "ROLLBACK" 2>&1 || true)
grep -q "0A000: neardup_track_clusters needs READ COMMITTED isolation" <<<"$out" || fail "REPEATABLE READ: $out"
