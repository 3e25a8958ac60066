#!/usr/bin/env bash
# A user's upgrade of the package under existing indexes, release by release: the library of
# each earlier release that has the hamming index (0.2.0 on; each release's commit is its
# last where known, else the one that set its version in Cargo.toml: see release_commit;
# built once per machine by scripts/release_build.sh)
# creates the extension and grows indexes on simhash64 and bigint (built rows, merged runs,
# pending rows, NULLs, deleted rows) in a private copy of the server (scripts/private_pg.sh);
# the server is stopped, or killed with kill -9 after more inserts since the last
# checkpoint, and the newest library is installed over the old one; then, before any ALTER
# EXTENSION UPDATE:
#   - a sequential count and every plan that only costs the index work, whatever its format;
#   - an index of a format this build reads in place (2 on) answers exactly as brute force
#     does (index scans, bitmap scans, nearest codes, also read by rings), takes inserts
#     that merge with the old runs, deletes and VACUUM, and stays exact;
#   - an index of a format it does not read (format 1: 0.2.0) is retired by the first write
#     (a WARNING; inserts, deletes and VACUUM go on without it) and its scans fail with
#     55000 naming REINDEX (0.2.0's update to 0.3.0 rebuilds it);
# and after ALTER EXTENSION neardup UPDATE every index answers exactly and passes
# hamming_index_check. PostgreSQL 15 only: the releases before 0.6.0 built for 15 alone.
# Usage: tests/integration/check_release_indexes.sh   (in run.sh's environment, or alone;
#        NEARDUP_RELEASES="0.5.0 0.6.0" checks those releases only)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/scripts/cluster.sh"
DIR=/tmp/neardup-release-indexes
PORT=5442
fail() { echo "check_release_indexes: $*" >&2; exit 1; }
if ((PG_MAJOR != 15)); then
    echo "check_release_indexes: the earlier releases were built for PostgreSQL 15 only (this is $PG_MAJOR)"
    exit 0
fi
SYSTEM_CONFIG=$PG_CONFIG
NEW_STAGE=$("$ROOT/scripts/stage.sh" "$SYSTEM_CONFIG")

# Each release with a hamming index: the commit that set its version, oldest first.
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$ROOT/Cargo.toml" | head -1)
mapfile -t versions < <(
    for f in "$ROOT"/sql/neardup--*.sql; do
        f=${f##*/neardup--}
        [[ $f == *--* ]] || echo "${f%.sql}"
    done
    echo "$version"
)
# (0.1.0 had no index; NEARDUP_RELEASES="0.5.0 ..." checks only those)
mapfile -t versions < <(printf '%s\n' "${versions[@]}" | sort -uV | awk '$0 != "0.1.0"')
[[ -z ${NEARDUP_RELEASES:-} ]] || read -ra versions <<<"$NEARDUP_RELEASES"
# The commit a release's users have: its last one where that is known (0.5.0: the commit
# before 0.6.0's bump, writing format 3; 0.6.0 and 0.7.0: the last commit CI landed as that
# release, the one its frozen install script names, format 4), else the commit that set its
# version (0.2.0: format 1, 0.3.0 and 0.4.0: format 2; and the version in development). A
# 0.6.0 database made by an earlier commit of 0.6.0 lacks objects the 0.6.0 -> 0.7.0 script
# replaces.
declare -A LAST_COMMIT=([0.5.0]=6f77d99 [0.6.0]=7c40ec5 [0.7.0]=7b56549)
release_commit() { # VERSION
    if [[ -n ${LAST_COMMIT[$1]:-} ]]; then
        git -C "$ROOT" rev-parse --verify "${LAST_COMMIT[$1]}^{commit}"
    else
        git -C "$ROOT" log --reverse --format=%H -G"^version = \"$1\"" -- Cargo.toml | sed -n 1p
    fi
}

PRIVATE=$DIR/pg
BIN=
data=$DIR/data
q() { "$BIN/psql" -XqAt -v ON_ERROR_STOP=1 -h "$DIR" -p $PORT -U postgres -d releases "$@"; }
stop() { [[ ! -f $data/postmaster.pid ]] || sudo -u postgres "$BIN/pg_ctl" -D "$data" -m fast -w stop >/dev/null; }
trap 'stop 2>/dev/null || true' EXIT
install_stage() { # STAGE: its files into the private copy, at the same paths under it
    (cd "$1" && find . -type f ! -name .built -print0 | while IFS= read -r -d '' f; do
        mkdir -p "$(dirname "$PRIVATE/$f")"
        cp "$f" "$PRIVATE/$f.new" && mv -f "$PRIVATE/$f.new" "$PRIVATE/$f"
    done)
}

# The rows: groups of four codes one bit apart from a center (two from each other), every
# 50th code NULL; add(first, last) inserts, on simhash64 and on bigint alike.
SETUP=$(cat <<'SQL'
CREATE EXTENSION neardup;
CREATE TABLE t (id int PRIMARY KEY, fp simhash64, f8 bigint);
CREATE FUNCTION add(first int, last int) RETURNS void LANGUAGE sql AS $$
    INSERT INTO t SELECT g, CASE WHEN g % 50 <> 0 THEN c::simhash64 END, c
    FROM generate_series(first, last) g,
         LATERAL (SELECT ('x' || substr(md5((g / 4)::text), 1, 16))::bit(64)::bigint # (1::bigint << (g % 4 * 9)) AS c) s;
$$;
SELECT add(1, 6000);
SQL
)
# Lookups at radii 0 to 6 from 40 centers, nearest codes, a self-join's pair count; run
# through the indexes and by a sequential scan, the two must be equal.
KNN="SELECT 'knn', c.id, (SELECT string_agg((fp <~> c.fp)::text, ',') FROM (SELECT fp FROM t ORDER BY fp <~> c.fp LIMIT 8) k)
  FROM t c WHERE c.id % 600 = 11 ORDER BY 2;"
ANSWERS=$(cat <<SQL
SELECT 'ball', c.id, r, (SELECT count(*) FROM t WHERE t.fp <@ hamming_ball(c.fp, r)),
       (SELECT count(*) FROM t WHERE t.f8 <@ hamming_ball(c.f8, r)),
       (SELECT count(*) FROM t WHERE hamming(t.fp, c.fp) <= r)
  FROM t c, generate_series(0, 6, 3) r WHERE c.id % 150 = 7 ORDER BY 2, 3;
$KNN
SELECT 'pairs', count(*) FROM t a JOIN t b ON hamming(a.fp, b.fp) <= 2 AND a.id < b.id;
SELECT 'rows', count(*), count(fp) FROM t;
SQL
)
ROWS="SELECT count(*), md5(string_agg(id || ':' || coalesce(fp::text, '-') || ':' || f8, ',' ORDER BY id)) FROM t;"
INDEXED="SET enable_seqscan = off; SET enable_bitmapscan = on; SET enable_indexscan = on;"
BITMAP="SET enable_seqscan = off; SET enable_bitmapscan = on; SET enable_indexscan = off;"
BRUTE="SET enable_seqscan = on; SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;"
exact() { # WHEN: the answers through the indexes (index and bitmap scans) are brute force's
    q <<<"$BRUTE $ANSWERS" >"$DIR/brute.txt"
    q <<<"$INDEXED $ANSWERS" >"$DIR/indexed.txt"
    q <<<"$BITMAP $ANSWERS" >"$DIR/bitmap.txt"
    diff -u "$DIR/brute.txt" "$DIR/indexed.txt" >&2 || fail "$1: index scans are not brute force"
    diff -u "$DIR/brute.txt" "$DIR/bitmap.txt" >&2 || fail "$1: bitmap scans are not brute force"
    # the nearest codes with every run read by rings, whatever they cost (runs of old formats)
    PGOPTIONS="-c neardup.ring_budget=1e12" q <<<"$INDEXED $KNN" >"$DIR/rings.txt"
    diff -u <(grep "^knn|" "$DIR/brute.txt") "$DIR/rings.txt" >&2 || fail "$1: nearest codes by rings are not brute force"
    [[ -s $DIR/rings.txt ]] || fail "$1: no nearest codes"
    grep -q "^pairs|[1-9]" "$DIR/brute.txt" || fail "$1: no pairs: the data is not what the check needs"
    # (the ball is the form every release's operator classes have; a catalog older than
    # hamming_within has hamming(a, b) <= k looked up without the index)
    q -c "$INDEXED EXPLAIN (COSTS OFF) SELECT id FROM t WHERE fp <@ hamming_ball('000000000000002a', 3)" | grep -q "t_fp" ||
        fail "$1: the lookup does not use the index"
    q -c "$INDEXED EXPLAIN (COSTS OFF) SELECT id FROM t ORDER BY f8 <~> 42 LIMIT 3" | grep -q "t_f8" ||
        fail "$1: the nearest codes are not found through the index"
}
format() { # INDEX: the format its metapage names (bytes 4 to 7 of its contents)
    q -c "CREATE EXTENSION IF NOT EXISTS pageinspect" \
        -c "SELECT sum(get_byte(p, 28 + i)::bigint << (8 * i)) FROM get_raw_page('$1', 0) p, generate_series(0, 3) i"
}

summary=()
for release in "${versions[@]}"; do
    commit=$(release_commit "$release")
    [[ -n $commit ]] || fail "no commit sets version $release in Cargo.toml"
    OLD_STAGE=$("$ROOT/scripts/release_build.sh" "$commit" "$SYSTEM_CONFIG")
    for ending in stop crash; do
        what="$release ($ending)"
        PRIVATE_CONFIG=$("$ROOT/scripts/private_pg.sh" "$SYSTEM_CONFIG" "$PRIVATE")
        BIN=$("$PRIVATE_CONFIG" --bindir)
        install_stage "$OLD_STAGE"
        rm -rf "$data"
        mkdir -p "$DIR"
        chown postgres: "$DIR"
        sudo -u postgres "$BIN/initdb" -D "$data" --auth=trust --encoding=UTF8 --locale=C.UTF-8 >/dev/null
        printf '%s\n' "listen_addresses = ''" "unix_socket_directories = '$DIR'" "port = $PORT" \
            "shared_preload_libraries = 'neardup'" >>"$data/postgresql.conf"
        sudo -u postgres "$BIN/pg_ctl" -D "$data" -l "$DIR/server.log" -w -t 60 start >/dev/null
        "$BIN/psql" -XqAt -h "$DIR" -p $PORT -U postgres -d postgres -c "CREATE DATABASE releases"
        q <<<"$SETUP" >/dev/null
        # the release's own options: pending_limit came in 0.3.0
        options=
        q -c "SELECT 1 FROM pg_extension WHERE extversion = '0.2.0'" | grep -q 1 || options="WITH (pending_limit = 500)"
        q -c "CREATE INDEX t_fp ON t USING hamming (fp) $options" \
            -c "CREATE INDEX t_f8 ON t USING hamming (f8 int8_hamming_ops) $options" >/dev/null
        for first in 6001 6401 6801 7201 7601 8001; do q -c "SELECT add($first, $((first + 399)))" >/dev/null; done
        q -c "DELETE FROM t WHERE id % 97 = 0" -c "SELECT add(8401, 8650)" >/dev/null
        old_format=$(format t_fp)
        # what the rows are, as a sequential scan reads them (the release's own index answers
        # are not this check's business: 0.2.0's ordered scans fail on its pending pages)
        q <<<"$BRUTE $ROWS" >"$DIR/before.txt"
        if [[ $ending == crash ]]; then
            # rows the release wrote after the last checkpoint: replayed from WAL by the server
            # running the newest library
            q -c "CHECKPOINT" -c "SELECT add(8651, 9400)" -c "DELETE FROM t WHERE id % 89 = 0" >/dev/null
            q <<<"$BRUTE $ROWS" >"$DIR/before.txt"
            cluster_crash "$data"
        else
            stop
        fi
        install_stage "$NEW_STAGE"
        # (after kill -9, pg_ctl warns that the stale postmaster.pid may belong to a running
        # server: it does not)
        sudo -u postgres "$BIN/pg_ctl" -D "$data" -l "$DIR/server.log" -w -t 120 start >/dev/null 2>"$DIR/start.err" ||
            fail "$what: the newest library's server did not start: $(cat "$DIR/start.err")"
        [[ $(q -c "SELECT extversion FROM pg_extension WHERE extname = 'neardup'") == "$release" ]] ||
            fail "$what: the catalog is not $release's"

        # before ALTER EXTENSION UPDATE: counts and plans that only cost the index never fail
        q <<<"$BRUTE $ROWS" >"$DIR/after.txt"
        diff -u "$DIR/before.txt" "$DIR/after.txt" >&2 || fail "$what: rows differ after the newest library started"
        q -c "SELECT count(*) FROM t" -c "EXPLAIN SELECT id FROM t WHERE hamming(fp, '000000000000002a'::simhash64) <= 3" \
            -c "SELECT count(*) FROM t WHERE id < 100" >/dev/null || fail "$what: a query that does not scan the index failed"
        if ((old_format >= 2)); then
            exact "$what, the newest library"
            q -c "SELECT add(9401, 10600)" -c "DELETE FROM t WHERE id % 83 = 0" -c "VACUUM t" -c "SELECT add(10601, 10700)" >/dev/null
            exact "$what, grown by the newest library"
        else
            # writes go on: the first one retires the index (a WARNING), the others skip it
            q -c "SELECT add(9401, 9600)" -c "DELETE FROM t WHERE id % 83 = 0" -c "VACUUM t" \
                -c "SELECT add(9601, 9700)" 2>"$DIR/warnings.txt" >/dev/null || fail "$what: writes failed"
            grep -q 't_fp.* has format 1, .*retired' "$DIR/warnings.txt" || fail "$what: no WARNING retired the index"
            [[ $(format t_fp) == 4294967295 ]] || fail "$what: the metapage does not say the index is retired"
            # the planner passes it by, whatever the settings; what reads it fails
            q <<<"$BRUTE $ANSWERS" >"$DIR/brute.txt"
            q <<<"$INDEXED $ANSWERS" >"$DIR/indexed.txt"
            diff -u "$DIR/brute.txt" "$DIR/indexed.txt" >&2 || fail "$what: answers differ with the index retired"
            ! q -c "$INDEXED EXPLAIN (COSTS OFF) SELECT id FROM t WHERE fp <@ hamming_ball('000000000000002a', 3)" |
                grep -q "t_fp" || fail "$what: a plan uses the retired index"
            err=$(q -c "SELECT hamming_index_check('t_fp')" 2>&1) && fail "$what: a retired index was read"
            [[ $err == *retired*REINDEX* ]] || fail "$what: reading a retired index failed with: $err"
        fi
        q -c "ALTER EXTENSION neardup UPDATE" >/dev/null
        [[ $(q -c "SELECT extversion FROM pg_extension WHERE extname = 'neardup'") == "$version" ]] ||
            fail "$what: ALTER EXTENSION UPDATE did not reach $version"
        exact "$what, after ALTER EXTENSION UPDATE"
        rows=$(q -c "SELECT count(*) FROM t")
        for index in t_fp t_f8; do
            [[ $(q -c "SELECT hamming_index_check('$index')") == "$rows" ]] || fail "$what: hamming_index_check('$index')"
        done
        summary+=("$what: format $old_format -> $(format t_fp)")
        stop
    done
done
((${#summary[@]} > 0)) || fail "no release with a hamming index was checked"
echo "check_release_indexes: exact under the newest library, before and after ALTER EXTENSION UPDATE:"
printf '  %s\n' "${summary[@]}"
