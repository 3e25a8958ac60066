#!/usr/bin/env bash
# The upgrade path through every release: in one database CREATE EXTENSION neardup VERSION
# '0.1.0' (the frozen sql/neardup--0.1.0.sql), a table holding every type of the extension
# computed by the 0.1.0 functions, hamming indexes (simhash64 and bigint) with rows both
# built and pending, a GIN supershingle index and a btree; then ALTER EXTENSION neardup
# UPDATE, which runs the chain of upgrade scripts sql/neardup--A--B.sql release by release
# (0.1.0 -> 0.2.0 -> ... -> the newest frozen release -> Cargo.toml's version), after which
#   - the update path PostgreSQL took is exactly that chain, with no release skipped;
#   - the version is the control file's default (Cargo.toml's);
#   - every stored value is byte-identical (send function) to the value the current version
#     computes now;
#   - index answers equal brute force, before and after more inserts, and
#     hamming_index_check passes;
#   - a cluster table whose triggers 0.1.0 installed stays equal to batch clustering through
#     inserts, deletes and updates, and so does one set up after the update;
#   - the extension's objects and their definitions (functions with volatility, strictness,
#     parallel label, support function, body and privileges; aggregates; types; operators;
#     operator classes and families with their members; casts; access methods; comments)
#     equal those of a fresh CREATE EXTENSION neardup in another database: this is what
#     fails, printing the difference, when an upgrade script is incomplete, typically the
#     newest one (sql/neardup--<newest frozen release>--<Cargo.toml's version>.sql).
# Runs in the cluster of run.sh (PGHOST etc. set), or any other with neardup installed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FROM=0.1.0
OLD_DB=upgrade_from_${FROM//./_}
NEW_DB=upgrade_fresh

fail() { echo "check_upgrade: $*" >&2; exit 1; }
q() { local db=$1; shift; psql -XqAt -v ON_ERROR_STOP=1 -d "$db" "$@"; }

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$ROOT/Cargo.toml" | head -1)
# The releases, from their frozen install scripts sql/neardup--X.sql (not the upgrade
# scripts neardup--A--B.sql), oldest first; the update must step through each from $FROM on.
releases=()
for f in "$ROOT"/sql/neardup--*.sql; do
    f=${f##*/neardup--}
    [[ $f == *--* ]] || releases+=("${f%.sql}")
done
mapfile -t releases < <(printf '%s\n' "${releases[@]}" | sort -V | awk -v from="$FROM" '$0 == from { on = 1 } on')
[[ ${#releases[@]} -gt 0 && ${releases[0]} == "$FROM" ]] || fail "no frozen sql/neardup--$FROM.sql"
[[ ${releases[-1]} != "$version" ]] ||
    fail "sql/neardup--$version.sql exists: Cargo.toml's version $version is frozen already, bump it"
expected_path=$(printf '%s--' "${releases[@]}")$version # as pg_extension_update_paths shows it
newest_step=sql/neardup--${releases[-1]}--$version.sql
[[ -f $ROOT/$newest_step ]] || fail "no upgrade script $newest_step from the newest release to $version"
psql -XqAt -v ON_ERROR_STOP=1 -d postgres -c "SET client_min_messages = warning" \
    -c "DROP DATABASE IF EXISTS $OLD_DB" -c "CREATE DATABASE $OLD_DB" \
    -c "DROP DATABASE IF EXISTS $NEW_DB" -c "CREATE DATABASE $NEW_DB" >/dev/null
[[ $(q postgres -c "SELECT count(*) FROM pg_available_extension_versions WHERE name = 'neardup' AND version = '$FROM'") == 1 ]] ||
    fail "neardup $FROM is not installed (scripts/install.sh installs sql/neardup--$FROM.sql)"
# ALTER EXTENSION UPDATE takes the shortest path: a script skipping releases would be taken
# instead of the chain, and a missing step (not installed, or misnamed) leaves no path at all
got=$(q postgres -c "SELECT coalesce(path, '(none)') FROM pg_extension_update_paths('neardup') WHERE source = '$FROM' AND target = '$version'")
[[ $got == "$expected_path" ]] ||
    fail "the installed update path from $FROM to $version is '$got', expected $expected_path (is $newest_step installed?)"

# The 0.1.0 database. Its C functions name symbols of the installed (newer) library; should
# one have gone, the error shows when the function is called, not at CREATE EXTENSION.
q "$OLD_DB" -f "$ROOT/tests/integration/fingerprint_functions.sql" >/dev/null
q "$OLD_DB" >/dev/null <<SQL
SET check_function_bodies = off;
CREATE EXTENSION neardup VERSION '$FROM';
RESET check_function_bodies;
SELECT setseed(0.5);
CREATE TABLE vocab AS SELECT i, substr(md5(i::text), 1, 3 + i % 7) AS w FROM generate_series(1, 700) i;
CREATE TABLE docs (id bigint PRIMARY KEY, body text);
INSERT INTO docs VALUES (0, ''), (1, NULL), (2, 'Ünïcode, MIXED case… and   spaces'), (3, repeat('long text ', 5000));
INSERT INTO docs SELECT d, (SELECT string_agg(w, ' ') FROM (SELECT w FROM vocab ORDER BY random() LIMIT 20 + d % 120) s)
    FROM generate_series(10, 1509) d;
-- near-duplicates: one word replaced, a sentence appended, an exact copy
INSERT INTO docs SELECT 10000 + id, regexp_replace(body, '\S+', 'changed', 1, 3) FROM docs WHERE id BETWEEN 10 AND 400;
INSERT INTO docs SELECT 20000 + id, body || ' and one more thing' FROM docs WHERE id BETWEEN 200 AND 600;
INSERT INTO docs SELECT 30000 + id, body FROM docs WHERE id BETWEEN 500 AND 700;
CREATE TABLE sig (
    id bigint PRIMARY KEY, body text, canonical text, tokens text[],
    fp simhash64, fp3 simhash64, fpn simhash64, fpw simhash64, fp8 bigint,
    mh minhash_sketch, mh28 minhash_sketch, ss supershingle_vector, ss_text supershingle_vector,
    bs bloom_signature, bs512 bloom_signature, ball hamming_ball, ball8 hamming_ball);
CREATE FUNCTION fill(lo bigint, hi bigint) RETURNS void LANGUAGE sql AS \$\$
    INSERT INTO sig SELECT id, body, neardup_canonical(body), neardup_tokens(body, false),
        simhash(body), simhash(body, shingle => 3), simhash(body, ngram => 4),
        simhash(string_to_array(body, ' '), array_fill(1.5::real, ARRAY[coalesce(cardinality(string_to_array(body, ' ')), 0)])),
        simhash(body)::bigint, minhash(body), minhash(body, 28, 4), supershingles(minhash(body)),
        supershingles(body), bloomsig(body), bloomsig(body, 512, 3, 64),
        hamming_ball(simhash(body), (id % 5)::int), hamming_ball(simhash(body)::bigint, (id % 4)::int)
    FROM docs WHERE id BETWEEN lo AND hi
\$\$;
SELECT fill(0, 15000);
CREATE INDEX sig_fp ON sig USING hamming (fp);
CREATE INDEX sig_fp8 ON sig USING hamming (fp8 int8_hamming_ops);
CREATE INDEX sig_ss ON sig USING gin (ss);
CREATE INDEX sig_fp_btree ON sig (fp);
SELECT fill(15001, 40000); -- into the hamming indexes' pending pages
-- cluster tracking set up by 0.1.0, its triggers to go on working under the update
CREATE TABLE tracked (id bigint PRIMARY KEY, fp simhash64);
INSERT INTO tracked SELECT id, fp FROM sig WHERE id < 12000;
CREATE INDEX tracked_fp ON tracked USING hamming (fp);
SELECT neardup_cluster_tracking('tracked', 'tracked_clusters', 'id', 'fp', 3);
SQL

# one line per stored column: how many rows differ from what the running version computes
stale_values() {
    q "$OLD_DB" <<'SQL'
SELECT c || ': ' || n FROM (SELECT
    count(*) FILTER (WHERE canonical IS DISTINCT FROM neardup_canonical(body)) AS canonical,
    count(*) FILTER (WHERE tokens IS DISTINCT FROM neardup_tokens(body, false)) AS tokens,
    count(*) FILTER (WHERE simhash64_send(fp) IS DISTINCT FROM simhash64_send(simhash(body))) AS fp,
    count(*) FILTER (WHERE simhash64_send(fp3) IS DISTINCT FROM simhash64_send(simhash(body, shingle => 3))) AS fp3,
    count(*) FILTER (WHERE simhash64_send(fpn) IS DISTINCT FROM simhash64_send(simhash(body, ngram => 4))) AS fpn,
    count(*) FILTER (WHERE simhash64_send(fpw) IS DISTINCT FROM simhash64_send(simhash(string_to_array(body, ' '),
        array_fill(1.5::real, ARRAY[coalesce(cardinality(string_to_array(body, ' ')), 0)])))) AS fpw,
    count(*) FILTER (WHERE fp8 IS DISTINCT FROM simhash(body)::bigint) AS fp8,
    count(*) FILTER (WHERE minhash_sketch_send(mh) IS DISTINCT FROM minhash_sketch_send(minhash(body))) AS mh,
    count(*) FILTER (WHERE minhash_sketch_send(mh28) IS DISTINCT FROM minhash_sketch_send(minhash(body, 28, 4))) AS mh28,
    count(*) FILTER (WHERE supershingle_vector_send(ss) IS DISTINCT FROM supershingle_vector_send(supershingles(minhash(body)))) AS ss,
    count(*) FILTER (WHERE supershingle_vector_send(ss_text) IS DISTINCT FROM supershingle_vector_send(supershingles(body))) AS ss_text,
    count(*) FILTER (WHERE bloom_signature_send(bs) IS DISTINCT FROM bloom_signature_send(bloomsig(body))) AS bs,
    count(*) FILTER (WHERE bloom_signature_send(bs512) IS DISTINCT FROM bloom_signature_send(bloomsig(body, 512, 3, 64))) AS bs512,
    count(*) FILTER (WHERE hamming_ball_send(ball) IS DISTINCT FROM hamming_ball_send(hamming_ball(simhash(body), (id % 5)::int))) AS ball,
    count(*) FILTER (WHERE hamming_ball_send(ball8) IS DISTINCT FROM hamming_ball_send(hamming_ball(simhash(body)::bigint, (id % 4)::int))) AS ball8,
    count(*) FILTER (WHERE fp::text IS DISTINCT FROM simhash(body)::text OR mh::text IS DISTINCT FROM minhash(body)::text
        OR ss::text IS DISTINCT FROM supershingles(minhash(body))::text OR bs::text IS DISTINCT FROM bloomsig(body)::text) AS text_forms
    FROM sig) counts
CROSS JOIN LATERAL (VALUES ('canonical', canonical), ('tokens', tokens), ('fp', fp), ('fp3', fp3), ('fpn', fpn),
    ('fpw', fpw), ('fp8', fp8), ('mh', mh), ('mh28', mh28), ('ss', ss), ('ss_text', ss_text), ('bs', bs),
    ('bs512', bs512), ('ball', ball), ('ball8', ball8), ('text forms', text_forms)) v(c, n)
WHERE n > 0;
SQL
}
stale=$(stale_values) || fail "computing the values back in $FROM failed"
[[ -z $stale ]] || fail "in $FROM itself stored values differ from recomputed ones: $stale"

q "$OLD_DB" -c "ALTER EXTENSION neardup UPDATE" >/dev/null || fail "ALTER EXTENSION neardup UPDATE failed"
q "$NEW_DB" -c "CREATE EXTENSION neardup" >/dev/null
got=$(q "$OLD_DB" -c "SELECT extversion FROM pg_extension WHERE extname = 'neardup'")
[[ $got == "$version" ]] || fail "after the update the version is '$got', Cargo.toml says '$version'"
got=$(q "$NEW_DB" -c "SELECT extversion FROM pg_extension WHERE extname = 'neardup'")
[[ $got == "$version" ]] || fail "a fresh CREATE EXTENSION makes version '$got', Cargo.toml says '$version'"

stale=$(stale_values) || fail "recomputing the stored values after the update failed"
[[ -z $stale ]] || fail "stored $FROM values differ from what $version computes (rows per column):"$'\n'"$stale"

# index answers against brute force: probes near stored fingerprints and random ones
force_index="-c enable_seqscan=off -c enable_bitmapscan=off"
force_bitmap="-c enable_seqscan=off -c enable_indexscan=off"
force_seq="-c enable_indexscan=off -c enable_bitmapscan=off -c enable_indexonlyscan=off"
q "$OLD_DB" >/dev/null <<'SQL'
SELECT setseed(0.7);
CREATE TABLE probes AS
    SELECT row_number() OVER () AS pid, fp FROM (
        SELECT flip(fp8, (id % 4)::int) AS fp FROM sig WHERE id % 37 = 0 AND fp8 IS NOT NULL
        UNION ALL SELECT rnd64() FROM generate_series(1, 20)) s;
CREATE TABLE ss_probes AS SELECT id AS pid, ss FROM sig WHERE id % 23 = 0 AND ss IS NOT NULL;
SQL
answers() { # OPTIONS SQL-WITH-CONDITION
    PGOPTIONS=$1 q "$OLD_DB" -c "$2"
}
uses() { # OPTIONS SQL PLAN-TEXT
    local plan
    plan=$(PGOPTIONS=$1 q "$OLD_DB" -c "EXPLAIN (COSTS OFF) $2")
    grep -q "$3" <<<"$plan" || fail "[$STAGE] the plan does not use $3:"$'\n'"$plan"
}
compare_indexes() {
    local agg="SELECT count(*) || ' ' || md5(coalesce(string_agg(p.pid || ':' || k || ':' || s.id, ',' ORDER BY p.pid, k, s.id), ''))
        FROM probes p CROSS JOIN generate_series(0, 3) AS k JOIN sig s"
    local brute="$agg ON bit_count((s.fp8 # p.fp)::bit(64)) <= k"
    local by_fp="$agg ON s.fp <@ hamming_ball(p.fp::simhash64, k)"
    local by_fp8="$agg ON s.fp8 <@ hamming_ball(p.fp, k)"
    local hook="SELECT count(*) || ' ' || md5(coalesce(string_agg(p.pid || ':' || s.id, ',' ORDER BY p.pid, s.id), ''))
        FROM probes p JOIN sig s ON hamming(s.fp, p.fp::simhash64) <= 2"
    local hook_brute=${hook//hamming(s.fp, p.fp::simhash64)/bit_count((s.fp8 # p.fp)::bit(64))}
    local gin="SELECT count(*) || ' ' || md5(coalesce(string_agg(p.pid || ':' || s.id, ',' ORDER BY p.pid, s.id), ''))
        FROM ss_probes p JOIN sig s ON s.ss % p.ss"
    local gin_brute=${gin//s.ss % p.ss/b_similarity(s.ss, p.ss) >= 2}
    local expected
    expected=$(answers "$force_seq" "$brute")
    [[ ${expected%% *} -gt 100 ]] || fail "[$STAGE] only ${expected%% *} matches: the probes test nothing"
    uses "$force_index" "$by_fp" "Index Scan using sig_fp\\b"
    uses "$force_index" "$by_fp8" "Index Scan using sig_fp8"
    uses "$force_bitmap" "$by_fp" "Bitmap Index Scan on sig_fp\\b"
    uses "$force_index" "$hook" "Index Scan using sig_fp\\b"
    uses "$force_bitmap" "$gin" "Bitmap Index Scan on sig_ss"
    [[ $(answers "$force_index" "$by_fp") == "$expected" ]] || fail "[$STAGE] index scan of sig_fp differs from brute force"
    [[ $(answers "$force_bitmap" "$by_fp") == "$expected" ]] || fail "[$STAGE] bitmap scan of sig_fp differs from brute force"
    [[ $(answers "$force_index" "$by_fp8") == "$expected" ]] || fail "[$STAGE] index scan of sig_fp8 differs from brute force"
    [[ $(answers "$force_index" "$hook") == "$(answers "$force_seq" "$hook_brute")" ]] ||
        fail "[$STAGE] hamming(fp, q) <= 2 through sig_fp differs from brute force"
    expected=$(answers "$force_seq" "$gin_brute")
    [[ ${expected%% *} -gt 50 ]] || fail "[$STAGE] only ${expected%% *} B-similar pairs: the probes test nothing"
    [[ $(answers "$force_bitmap" "$gin") == "$expected" ]] || fail "[$STAGE] GIN sig_ss answers differ from brute force"
    local index out
    for index in sig_fp sig_fp8; do
        out=$(q "$OLD_DB" -c "SELECT hamming_index_check('$index')" 2>&1) || fail "[$STAGE] hamming_index_check('$index'): $out"
    done
    out=$(q "$OLD_DB" -c "SELECT count(*) FROM sig WHERE fp IS NOT NULL") 
    [[ $(PGOPTIONS=$force_index q "$OLD_DB" -c "SELECT count(*) FROM sig WHERE fp >= '0000000000000000'") == "$out" ]] ||
        fail "[$STAGE] the btree on fp misses rows"
}
STAGE="after the update" compare_indexes
q "$OLD_DB" >/dev/null <<'SQL'
INSERT INTO docs SELECT 50000 + id, 'new ' || body FROM docs WHERE id BETWEEN 10 AND 300;
SELECT fill(50000, 60000);
DELETE FROM sig WHERE id % 11 = 0;
VACUUM sig;
SQL
STAGE="after inserts, deletes and VACUUM under $version" compare_indexes

# tracked_clusters, kept by the triggers 0.1.0 installed, through writes under the update,
# and a tracking set up by the updated neardup_cluster_tracking, equal batch clustering
q "$OLD_DB" >/dev/null <<'SQL'
INSERT INTO tracked SELECT id, fp FROM sig WHERE id >= 12000;
DELETE FROM tracked WHERE id % 7 = 0;
UPDATE tracked SET fp = fp # 'f000000000000001'::simhash64 WHERE id % 13 = 0;
CREATE TABLE tracked_new (id bigint PRIMARY KEY, fp simhash64);
INSERT INTO tracked_new SELECT id, fp FROM sig WHERE id % 3 = 0;
CREATE INDEX tracked_new_fp ON tracked_new USING hamming (fp);
SELECT neardup_cluster_tracking('tracked_new', 'tracked_new_clusters', 'id', 'fp', 3);
INSERT INTO tracked_new SELECT id, fp FROM sig WHERE id % 3 = 1;
SQL
for t in tracked tracked_new; do
    got=$(q "$OLD_DB" -c "SELECT (SELECT count(*) FROM $t) || ' rows, ' || count(*) || ' differences' FROM (
        (SELECT id, cluster_id, is_representative FROM ${t}_clusters EXCEPT SELECT * FROM neardup_clusters('$t', 'id', 'fp', 3))
        UNION ALL
        (SELECT * FROM neardup_clusters('$t', 'id', 'fp', 3) EXCEPT SELECT id, cluster_id, is_representative FROM ${t}_clusters)) d")
    [[ $got == *" rows, 0 differences" && $got != "0 rows"* ]] ||
        fail "${t}_clusters after the update against neardup_clusters: $got"
done

# The extension's objects, each with its definition, in names rather than OIDs.
objects() {
    q "$1" <<'SQL'
WITH members AS (
    SELECT d.classid, d.objid FROM pg_depend d JOIN pg_extension e ON d.refobjid = e.oid
    WHERE d.refclassid = 'pg_extension'::regclass AND e.extname = 'neardup' AND d.deptype = 'e'
)
SELECT pg_describe_object(m.classid, m.objid, 0) || ' => ' || translate(coalesce(CASE m.classid
    WHEN 'pg_proc'::regclass THEN (SELECT CASE WHEN p.prokind = 'a' THEN
            format('aggregate %s kind %s trans %s(%s) final %s extra %s modify %s combine %s serial %s deserial %s init %s sortop %s parallel %s',
                p.oid::regprocedure, a.aggkind, a.aggtransfn::regprocedure, a.aggtranstype::regtype,
                a.aggfinalfn::regprocedure, a.aggfinalextra, a.aggfinalmodify, a.aggcombinefn::regprocedure,
                a.aggserialfn::regprocedure, a.aggdeserialfn::regprocedure, a.agginitval,
                a.aggsortop::regoperator, p.proparallel)
            ELSE pg_get_functiondef(p.oid) END
            || format(' cost %s rows %s leakproof %s owner-acl %s', p.procost, p.prorows, p.proleakproof,
                coalesce(p.proacl::text, 'default'))
        FROM pg_proc p LEFT JOIN pg_aggregate a ON a.aggfnoid = p.oid WHERE p.oid = m.objid)
    WHEN 'pg_type'::regclass THEN (SELECT format('len %s byval %s type %s category %s preferred %s delim %s in %s out %s recv %s send %s typmodin %s typmodout %s analyze %s subscript %s elem %s align %s storage %s default %s acl %s',
            t.typlen, t.typbyval, t.typtype, t.typcategory, t.typispreferred, t.typdelim,
            t.typinput::regprocedure, t.typoutput::regprocedure, t.typreceive::regprocedure, t.typsend::regprocedure,
            t.typmodin::regprocedure, t.typmodout::regprocedure, t.typanalyze::regprocedure, t.typsubscript::regprocedure,
            t.typelem::regtype, t.typalign, t.typstorage, t.typdefault, coalesce(t.typacl::text, 'default'))
        FROM pg_type t WHERE t.oid = m.objid)
    WHEN 'pg_operator'::regclass THEN (SELECT format('%s kind %s result %s function %s commutator %s negator %s restrict %s join %s merges %s hashes %s',
            o.oid::regoperator, o.oprkind, o.oprresult::regtype, o.oprcode::regprocedure, o.oprcom::regoperator,
            o.oprnegate::regoperator, o.oprrest::regprocedure, o.oprjoin::regprocedure, o.oprcanmerge, o.oprcanhash)
        FROM pg_operator o WHERE o.oid = m.objid)
    WHEN 'pg_opclass'::regclass THEN (SELECT format('method %s type %s default %s key %s family %s',
            am.amname, c.opcintype::regtype, c.opcdefault, c.opckeytype::regtype, f.opfname)
        FROM pg_opclass c JOIN pg_am am ON am.oid = c.opcmethod JOIN pg_opfamily f ON f.oid = c.opcfamily
        WHERE c.oid = m.objid)
    WHEN 'pg_opfamily'::regclass THEN (SELECT format('method %s operators [%s] functions [%s]', am.amname,
            (SELECT string_agg(format('%s %s(%s,%s) %s %s', o.amopstrategy, o.amoppurpose, o.amoplefttype::regtype,
                o.amoprighttype::regtype, o.amopopr::regoperator, coalesce(sf.opfname, '-')), '; ' ORDER BY 1)
             FROM pg_amop o LEFT JOIN pg_opfamily sf ON sf.oid = o.amopsortfamily WHERE o.amopfamily = f.oid),
            (SELECT string_agg(format('%s (%s,%s) %s', pr.amprocnum, pr.amproclefttype::regtype,
                pr.amprocrighttype::regtype, pr.amproc::regprocedure), '; ' ORDER BY 1)
             FROM pg_amproc pr WHERE pr.amprocfamily = f.oid))
        FROM pg_opfamily f JOIN pg_am am ON am.oid = f.opfmethod WHERE f.oid = m.objid)
    WHEN 'pg_cast'::regclass THEN (SELECT format('function %s context %s method %s',
            c.castfunc::regprocedure, c.castcontext, c.castmethod) FROM pg_cast c WHERE c.oid = m.objid)
    WHEN 'pg_am'::regclass THEN (SELECT format('type %s handler %s', a.amtype, a.amhandler::regprocedure)
        FROM pg_am a WHERE a.oid = m.objid)
    WHEN 'pg_class'::regclass THEN (SELECT format('kind %s columns [%s] acl %s', c.relkind,
            (SELECT string_agg(format('%s %s', at.attname, format_type(at.atttypid, at.atttypmod)), ', ' ORDER BY at.attnum)
             FROM pg_attribute at WHERE at.attrelid = c.oid AND at.attnum > 0 AND NOT at.attisdropped),
            coalesce(c.relacl::text, 'default')) FROM pg_class c WHERE c.oid = m.objid)
    END, '') || coalesce(' comment: ' || (SELECT description FROM pg_description
        WHERE objoid = m.objid AND classoid = m.classid AND objsubid = 0), ''), E'\n', E'\x01')
FROM members m
UNION ALL
SELECT format('extension: relocatable %s schema %s config %s', extrelocatable, extnamespace::regnamespace, extconfig)
FROM pg_extension WHERE extname = 'neardup'
ORDER BY 1;
SQL
}
# one line per object, its definition's line breaks as \x01
upgraded=$(objects "$OLD_DB")
fresh=$(objects "$NEW_DB")
[[ $(wc -l <<<"$fresh") -gt 50 ]] || fail "only $(wc -l <<<"$fresh") objects found in a fresh install"
if [[ $upgraded != "$fresh" ]]; then
    # which objects are missing, left over or different, then the definitions diffed
    awk -v FS=' => ' -v from="$FROM" -v to="$version" '
        FNR == NR { old[$1] = $0; next }
        { new[$1] = $0 }
        END {
            for (o in new) if (!(o in old)) print "missing after the update: " o
            for (o in old) if (!(o in new)) print "left over from " from ", not in a fresh " to ": " o
            for (o in new) if ((o in old) && old[o] != new[o]) print "differs: " o
        }' <(echo "$upgraded") <(echo "$fresh") | sort >&2
    diff -u --label "updated from $FROM" --label "fresh $version" <(tr '\001' '\n' <<<"$upgraded") <(tr '\001' '\n' <<<"$fresh") >&2 || true
    fail "the updated extension's objects differ from a fresh CREATE EXTENSION (above): complete the upgrade scripts ($expected_path), most likely $newest_step"
fi
psql -XqAt -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE $OLD_DB" -c "DROP DATABASE $NEW_DB" >/dev/null
