#!/usr/bin/env bash
# The extension installed in a schema that is not on search_path, called under a
# search_path whose first schema holds look-alikes of the built-in and neardup functions
# and operators our SQL uses (each raises if it is ever called): cluster tracking (set up,
# inserts, updates, deletes), batch clusters with a priority, batch pairs, components,
# lookups through the index with the natural form, and the index checker all work, and
# give the answers they give in a plain install.
set -euo pipefail
DB=any_schema
psql -qX -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
psql -qX -d $DB -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
CREATE SCHEMA ext;
CREATE EXTENSION neardup SCHEMA ext;
CREATE SCHEMA hostile;
CREATE FUNCTION hostile.trap() RETURNS void LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'a look-alike in schema hostile was called'; END $$;
CREATE FUNCTION hostile.quote_ident(text) RETURNS text LANGUAGE plpgsql AS $$ BEGIN PERFORM hostile.trap(); RETURN $1; END $$;
CREATE FUNCTION hostile.quote_literal(text) RETURNS text LANGUAGE plpgsql AS $$ BEGIN PERFORM hostile.trap(); RETURN $1; END $$;
CREATE FUNCTION hostile.parse_ident(text, boolean DEFAULT true) RETURNS text[] LANGUAGE plpgsql AS $$ BEGIN PERFORM hostile.trap(); RETURN NULL; END $$;
CREATE FUNCTION hostile.to_regclass(text) RETURNS regclass LANGUAGE plpgsql AS $$ BEGIN PERFORM hostile.trap(); RETURN NULL; END $$;
CREATE FUNCTION hostile.concat_ws(text, text, text, text, text, text) RETURNS text LANGUAGE plpgsql AS $$ BEGIN PERFORM hostile.trap(); RETURN NULL; END $$;
CREATE FUNCTION hostile.pg_advisory_xact_lock(integer, integer) RETURNS void LANGUAGE plpgsql AS $$ BEGIN PERFORM hostile.trap(); END $$;
CREATE FUNCTION hostile.unnest(bigint[], bigint[]) RETURNS SETOF record LANGUAGE plpgsql AS $$ BEGIN PERFORM hostile.trap(); END $$;
CREATE FUNCTION hostile.neardup_clusters(regclass, text, text, integer, text)
    RETURNS TABLE (id bigint, cluster_id bigint, is_representative boolean)
    LANGUAGE plpgsql AS $$ BEGIN PERFORM hostile.trap(); END $$;
CREATE FUNCTION hostile.hamming_ball(ext.simhash64, integer) RETURNS ext.hamming_ball LANGUAGE plpgsql AS $$ BEGIN PERFORM hostile.trap(); RETURN NULL; END $$;
CREATE FUNCTION hostile.eq(bigint, bigint) RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN PERFORM hostile.trap(); RETURN false; END $$;
CREATE OPERATOR hostile.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = hostile.eq);
CREATE FUNCTION hostile.lt(bigint, bigint) RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN PERFORM hostile.trap(); RETURN false; END $$;
CREATE OPERATOR hostile.<> (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = hostile.lt);

CREATE TABLE docs (id bigint PRIMARY KEY, body text, fp ext.simhash64);
INSERT INTO docs SELECT i, 'document ' || (i / 4) || ' about ' || repeat('topic ' || (i / 4) || ' ', 30),
                        ext.simhash('document ' || (i / 4) || ' about ' || repeat('topic ' || (i / 4) || ' ', 30))
    FROM generate_series(1, 400) i;
UPDATE docs SET fp = (fp::bigint # (1::bigint << (id % 60)::int))::ext.simhash64 WHERE id % 3 = 0;
CREATE INDEX docs_fp ON docs USING hamming (fp);
ANALYZE docs;
SQL

hostile() { psql -qAtX -d $DB -v ON_ERROR_STOP=1 -c "SET search_path = hostile, pg_catalog, public" "$@"; }
plain() { psql -qAtX -d $DB -v ON_ERROR_STOP=1 -c "SET search_path = public, ext" "$@"; }

hostile -c "SELECT ext.neardup_cluster_tracking('docs', 'public.docs_clusters', 'id', 'fp', 3, 'length(body) DESC')" >/dev/null
hostile -c "INSERT INTO docs SELECT id + 1000, body, fp FROM docs WHERE id <= 40" \
        -c "UPDATE docs SET fp = (fp::bigint # 255)::ext.simhash64 WHERE id BETWEEN 41 AND 60" \
        -c "DELETE FROM docs WHERE id BETWEEN 100 AND 130" \
        -c "UPDATE docs SET body = body || ' more' WHERE id BETWEEN 200 AND 220" >/dev/null
tracked=$(plain -c "SELECT md5(string_agg(id || ':' || cluster_id || ':' || is_representative, ',' ORDER BY id)) FROM docs_clusters")
batch_hostile=$(hostile -c "SELECT md5(string_agg(id || ':' || cluster_id || ':' || is_representative, ',' ORDER BY id)) FROM ext.neardup_clusters('docs', 'id', 'fp', 3, 'length(body) DESC')")
batch_plain=$(plain -c "SELECT md5(string_agg(id || ':' || cluster_id || ':' || is_representative, ',' ORDER BY id)) FROM neardup_clusters('docs', 'id', 'fp', 3, 'length(body) DESC')")
[[ $tracked == "$batch_plain" && $batch_hostile == "$batch_plain" ]] \
    || { echo "clusters differ: tracked $tracked, batch $batch_plain, batch under hostile path $batch_hostile"; exit 1; }

pairs_hostile=$(hostile -c "SELECT count(*) FROM ext.hamming_pairs('docs', 'id', 'fp', 3)")
pairs_plain=$(plain -c "SELECT count(*) FROM docs a JOIN docs b ON a.id < b.id AND hamming(a.fp, b.fp) + 0 <= 3")
[[ $pairs_hostile == "$pairs_plain" && $pairs_plain -gt 100 ]] || { echo "pairs $pairs_hostile vs $pairs_plain"; exit 1; }
components=$(hostile -c "SELECT count(DISTINCT component) FROM ext.neardup_components('SELECT a, b FROM ext.hamming_pairs(''docs'', ''id'', ''fp'', 3)')")
[[ $components -gt 10 ]] || { echo "components: $components"; exit 1; }

q=$(plain -c "SELECT fp FROM docs WHERE id = 7")
plan=$(hostile -c "SET enable_seqscan = off" -c "EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE ext.hamming(fp, '$q'::ext.simhash64) <= 3")
grep -q "docs_fp" <<<"$plan" || { echo "the natural form does not use the index: $plan"; exit 1; }
found=$(hostile -c "SET enable_seqscan = off" -c "SELECT string_agg(id::text, ',' ORDER BY id) FROM docs WHERE ext.hamming(fp, '$q'::ext.simhash64) <= 3")
brute=$(plain -c "SELECT string_agg(id::text, ',' ORDER BY id) FROM docs WHERE hamming(fp, '$q'::simhash64) + 0 <= 3")
[[ -n $found && $found == "$brute" ]] || { echo "lookup $found != $brute"; exit 1; }
checked=$(hostile -c "SELECT ext.hamming_index_check('docs_fp')")
[[ $checked == $(plain -c "SELECT count(*) FROM docs") ]] || { echo "index check: $checked"; exit 1; }
echo "any schema: tracking, batch clusters, pairs, components, lookups and the checker under a hostile search_path"
