#!/usr/bin/env bash
# pg_upgrade from the system PostgreSQL 15 to the server $PG_CONFIG names (16 or 18; on 15
# itself there is nothing to upgrade to, and the check says so). The 15 cluster holds every
# neardup type, a `hamming` index grown past its pending limit (runs and pending rows,
# asserted with pageinspect), one on bigint, GIN indexes on supershingles and LSH bands,
# tracked clusters and a materialized view of clusters. Its answers, through the indexes
# and by brute force, are written down; after pg_upgrade (neardup installed on both, no
# REINDEX) the new server must give the same answers both ways, recompute every signature
# byte for byte, pass hamming_index_check, and stay exact while the index takes inserts
# that merge with the runs 15 wrote, deletes and a VACUUM.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/scripts/cluster.sh"
NEW_BIN=$PG_BIN NEW_MAJOR=$PG_MAJOR NEW_CONFIG=$PG_CONFIG
OLD_CONFIG=/usr/lib/postgresql/15/bin/pg_config
OLD_BIN=$("$OLD_CONFIG" --bindir)
DIR=/tmp/neardup-pg-upgrade
fail() { echo "check_pg_upgrade: $*" >&2; exit 1; }
if ((NEW_MAJOR == 15)); then
    echo "check_pg_upgrade: on 15 there is no later server to upgrade to (runs with PG_CONFIG of 16 and 18)"
    exit 0
fi

PG_CONFIG=$OLD_CONFIG "$ROOT/scripts/install.sh" >/dev/null
start() { # BIN DATA
    sudo -u postgres "$1/pg_ctl" -D "$2" -l "$2/../server.log" -w -t 60 start >/dev/null
}
stop() { # BIN DATA
    [[ ! -f $2/postmaster.pid ]] || sudo -u postgres "$1/pg_ctl" -D "$2" -m fast -w stop >/dev/null
}
cleanup() {
    stop "$OLD_BIN" "$DIR/old/data" 2>/dev/null || true
    stop "$NEW_BIN" "$DIR/new/data" 2>/dev/null || true
}
trap cleanup EXIT
cleanup
rm -rf "$DIR"
mkdir -p "$DIR/old" "$DIR/new"
chown -R postgres: "$DIR"
init() { # BIN DATA [initdb options...]
    local bin=$1 data=$2
    shift 2
    sudo -u postgres "$bin/initdb" -D "$data" --auth=trust --encoding=UTF8 --locale=C.UTF-8 "$@" >/dev/null
    {
        echo "listen_addresses = ''"
        echo "unix_socket_directories = '$DIR'"
        echo "port = 5440"
        echo "shared_preload_libraries = 'neardup'"
    } >>"$data/postgresql.conf"
}
q() { "$OLD_BIN/psql" -XqAt -v ON_ERROR_STOP=1 -h "$DIR" -p 5440 -U postgres -d upgrade "$@"; }
qn() { "$NEW_BIN/psql" -XqAt -v ON_ERROR_STOP=1 -h "$DIR" -p 5440 -U postgres -d upgrade "$@"; }

init "$OLD_BIN" "$DIR/old/data"
# The inserting backends merge on 15, so the index ends as the load left it (runs and pending
# rows): a background worker could merge the last pending rows before they are counted.
echo "neardup.merge_workers = 0" >>"$DIR/old/data/postgresql.conf"
start "$OLD_BIN" "$DIR/old/data"
"$OLD_BIN/psql" -XqAt -h "$DIR" -p 5440 -U postgres -d postgres -c "CREATE DATABASE upgrade"
# Groups of five rows share a center fingerprint, each one bit off it (two bits apart from
# each other), and a body that differs by one word: near-duplicates for every signature.
q <<'SQL'
CREATE EXTENSION neardup;
CREATE EXTENSION pageinspect;
CREATE TABLE docs (id bigint PRIMARY KEY, body text, fp simhash64, ph bigint, sh simhash64,
                   mh minhash_sketch, ss supershingle_vector, bl bloom_signature);
CREATE FUNCTION add_docs(first bigint, last bigint) RETURNS void LANGUAGE sql AS $$
    INSERT INTO docs (id, body, fp, ph)
    SELECT g, 'page ' || g / 5 || repeat(' about the subject of group ' || g / 5, 12) || ' variant ' || g % 5,
           (('x' || substr(md5((g / 5)::text), 1, 16))::bit(64)::bigint # (1::bigint << (g % 5 * 7)::int))::simhash64,
           ('x' || substr(md5((g / 5)::text), 17, 16))::bit(64)::bigint # (1::bigint << (g % 5 * 11)::int)
    FROM generate_series(first, last) g;
    UPDATE docs SET sh = simhash(body), mh = minhash(body, num_hashes => 128), ss = supershingles(body),
                    bl = bloomsig(body)
    WHERE id BETWEEN first AND last;
$$;
SELECT add_docs(1, 1000);
CREATE INDEX docs_fp ON docs USING hamming (fp) WITH (pending_limit = 250);
CREATE INDEX docs_ph ON docs USING hamming (ph int8_hamming_ops);
-- (GIN's own pending list would make every probe of the joins below read all of it)
CREATE INDEX docs_ss ON docs USING gin (ss) WITH (fastupdate = off);
CREATE INDEX docs_bands ON docs USING gin (lsh_bands(mh, 0.8)) WITH (fastupdate = off);
SELECT neardup_cluster_tracking('docs', 'live_clusters', 'id', 'fp', 3);
SELECT add_docs(first, first + 149) FROM generate_series(1001, 3850, 150) first;
SELECT add_docs(3851, 3950);
DELETE FROM docs WHERE id % 97 = 0;
CREATE MATERIALIZED VIEW doc_clusters AS SELECT * FROM neardup_clusters('docs', 'id', 'fp', 3);
CREATE UNIQUE INDEX ON doc_clusters (id);
ANALYZE docs;
SQL
pending=$(q -c "SELECT get_byte(p, 24 + 28) + (get_byte(p, 24 + 29) << 8) FROM get_raw_page('docs_fp', 0) p")
runs=$(q -c "SELECT get_byte(p, 24 + 60) + (get_byte(p, 24 + 61) << 8) FROM get_raw_page('docs_fp', 0) p")
((runs >= 2 && pending > 0)) || fail "the 15 index is not grown: $runs runs, $pending pending rows"
q -c "DROP EXTENSION pageinspect"

# The answers: lookups, a join, nearest neighbours, supershingle and LSH joins, the stored
# signatures, the tracked clusters and the materialized view.
ANSWERS=$(cat <<'SQL'
SELECT 'ball', c.id, string_agg(d.id::text, ',' ORDER BY d.id)
  FROM docs c JOIN docs d ON hamming(d.fp, c.fp) <= 3 WHERE c.id IN (7, 1234, 2503, 3949) GROUP BY c.id ORDER BY c.id;
SELECT 'within', count(*) FROM docs d WHERE d.fp <@ hamming_ball((SELECT fp FROM docs WHERE id = 2222), 6);
SELECT 'bigint', string_agg(id::text, ',' ORDER BY id) FROM docs WHERE hamming(ph, (SELECT ph FROM docs WHERE id = 1666)) <= 2;
SELECT 'pairs', count(*), sum(hamming(a.fp, b.fp)) FROM docs a JOIN docs b ON hamming(a.fp, b.fp) <= 3 AND a.id < b.id;
SELECT 'knn', string_agg(bits::text, ',') FROM (SELECT fp <~> (SELECT fp FROM docs WHERE id = 1111) AS bits FROM docs ORDER BY fp <~> (SELECT fp FROM docs WHERE id = 1111) LIMIT 12) k;
SELECT 'supershingles', count(*) FROM docs a JOIN docs b ON a.id < b.id AND a.ss % b.ss;
SELECT 'lsh', count(*) FROM docs a JOIN docs b ON a.id < b.id AND lsh_bands(a.mh, 0.8) && lsh_bands(b.mh, 0.8) AND jaccard(a.mh, b.mh) >= 0.8;
SELECT 'signatures', md5(string_agg(concat_ws('|', fp, ph, sh, mh, ss, bl), ',' ORDER BY id)) FROM docs;
SELECT 'tracked', md5(string_agg(concat_ws(':', id, cluster_id, is_representative), ',' ORDER BY id)) FROM live_clusters;
SELECT 'matview', md5(string_agg(concat_ws(':', id, cluster_id, is_representative), ',' ORDER BY id)) FROM doc_clusters;
SQL
)
INDEXED="SET enable_seqscan = off; SET enable_bitmapscan = on; SET enable_indexscan = on;"
BRUTE="SET enable_seqscan = on; SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;"
answers() { # PSQL-FUNCTION PLAN-SETTINGS
    "$1" <<<"$2 $ANSWERS"
}
answers q "$INDEXED" >"$DIR/old-indexed.txt"
answers q "$BRUTE" >"$DIR/old-brute.txt"
diff -u "$DIR/old-brute.txt" "$DIR/old-indexed.txt" >&2 || fail "on 15, the indexes' answers are not brute force's"
grep -q "^pairs|[1-9]" "$DIR/old-indexed.txt" || fail "no pairs found on 15: the data is not what the check needs"
# the plans do use the indexes
for probe in "SELECT id FROM docs WHERE hamming(fp, '0123456789abcdef') <= 3:docs_fp" \
    "SELECT id FROM docs WHERE hamming(ph, 42::bigint) <= 2:docs_ph" \
    "SELECT a.id FROM docs a JOIN docs b ON lsh_bands(a.mh, 0.8) && lsh_bands(b.mh, 0.8):docs_bands"; do
    q -c "$INDEXED EXPLAIN (COSTS OFF) ${probe%:*}" | grep -q "${probe##*:}" || fail "15 does not plan ${probe##*:} for ${probe%:*}"
done
old_checked=$(q -c "SELECT hamming_index_check('docs_fp')")
# PostgreSQL 15.20 (Debian 15.20-0+deb12u1, November 2026) marks every user column with an
# attribute option, pg_attver, which the earlier minor releases of 16 and 18 reachable here
# (16.2, 18.6) do not know: their pg_dump copies it into the new cluster, which rejects it,
# for any table, neardup's or not. A minor release of 16 or 18 from the same month as 15.20
# or later is what an upgrade of a real 15.20 cluster needs; here the option is removed
# from the old catalog (a superuser's direct update) so that the upgrade can be tested.
q -c "UPDATE pg_attribute SET attoptions = (SELECT array_agg(o) FROM unnest(attoptions) o WHERE o NOT LIKE 'pg_attver=%')
      WHERE attrelid >= 16384 AND attoptions::text LIKE '%pg_attver=%'" >/dev/null
stop "$OLD_BIN" "$DIR/old/data"

# 18's initdb turns data checksums on by default; pg_upgrade wants them as the old cluster has them
checksums=()
((NEW_MAJOR < 18)) || checksums=(--no-data-checksums)
init "$NEW_BIN" "$DIR/new/data" "${checksums[@]}"
(cd "$DIR" && sudo -u postgres "$NEW_BIN/pg_upgrade" -b "$OLD_BIN" -B "$NEW_BIN" -d "$DIR/old/data" \
    -D "$DIR/new/data" -s "$DIR" >"$DIR/pg_upgrade.log" 2>&1) || {
    tail -40 "$DIR/pg_upgrade.log" >&2
    find "$DIR/new/data" -name '*.txt' -path '*pg_upgrade_output*' -exec tail -20 {} + >&2 || true
    fail "pg_upgrade from 15 to $NEW_MAJOR failed"
}
start "$NEW_BIN" "$DIR/new/data"
[[ $(qn -c "SHOW server_version_num") == "$NEW_MAJOR"* ]] || fail "the upgraded server is not $NEW_MAJOR"
answers qn "$INDEXED" >"$DIR/new-indexed.txt"
answers qn "$BRUTE" >"$DIR/new-brute.txt"
diff -u "$DIR/old-indexed.txt" "$DIR/new-indexed.txt" >&2 || fail "$NEW_MAJOR's index answers differ from 15's"
diff -u "$DIR/old-brute.txt" "$DIR/new-brute.txt" >&2 || fail "$NEW_MAJOR's brute-force answers differ from 15's"
[[ $(qn -c "SELECT hamming_index_check('docs_fp')") == "$old_checked" ]] || fail "hamming_index_check on $NEW_MAJOR"
# the signatures recomputed by the new server are the stored ones, byte for byte
[[ $(qn -c "SELECT count(*) FROM docs WHERE sh IS DISTINCT FROM simhash(body)
    OR mh::text IS DISTINCT FROM minhash(body, num_hashes => 128)::text
    OR ss::text IS DISTINCT FROM supershingles(body)::text OR bl::text IS DISTINCT FROM bloomsig(body)::text") == 0 ]] ||
    fail "$NEW_MAJOR computes signatures that differ from 15's"
for probe in "SELECT id FROM docs WHERE hamming(fp, '0123456789abcdef') <= 3:docs_fp" \
    "SELECT a.id FROM docs a JOIN docs b ON lsh_bands(a.mh, 0.8) && lsh_bands(b.mh, 0.8):docs_bands"; do
    qn -c "$INDEXED EXPLAIN (COSTS OFF) ${probe%:*}" | grep -q "${probe##*:}" || fail "$NEW_MAJOR does not plan ${probe##*:}"
done

# The upgraded index grows: inserts past the pending limit merge with 15's runs; deletes,
# VACUUM, the tracked clusters' trigger and the materialized view's refresh all work.
qn -c "SELECT add_docs(first, first + 149) FROM generate_series(3951, 4850, 150) first" \
    -c "DELETE FROM docs WHERE id % 89 = 0" -c "VACUUM docs" -c "REFRESH MATERIALIZED VIEW CONCURRENTLY doc_clusters" >/dev/null
answers qn "$INDEXED" >"$DIR/grown-indexed.txt"
answers qn "$BRUTE" >"$DIR/grown-brute.txt"
diff -u "$DIR/grown-brute.txt" "$DIR/grown-indexed.txt" >&2 || fail "after growing on $NEW_MAJOR, the indexes' answers are not brute force's"
[[ $(qn -c "SELECT hamming_index_check('docs_fp')") == $(qn -c "SELECT count(*) FROM docs") ]] ||
    fail "hamming_index_check after growing on $NEW_MAJOR"
[[ $(qn -c "SELECT count(*) FROM docs d JOIN live_clusters c USING (id)") == $(qn -c "SELECT count(*) FROM docs") ]] ||
    fail "the tracked clusters miss rows inserted on $NEW_MAJOR"
mismatched=$(qn -c "SELECT count(*) FROM (SELECT * FROM neardup_clusters('docs', 'id', 'fp', 3)) f
    FULL JOIN doc_clusters m USING (id) WHERE f.cluster_id IS DISTINCT FROM m.cluster_id")
[[ $mismatched == 0 ]] || fail "the refreshed materialized view differs from neardup_clusters in $mismatched rows"
echo "check_pg_upgrade: 15 -> $NEW_MAJOR: $(grep -c . "$DIR/old-indexed.txt") answers the same through the indexes and by brute force, $old_checked rows checked, exact after growing"
