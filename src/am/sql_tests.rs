// SQL tests of the `hamming` index: every answer compared with brute force.

/// Fills `t(id, fp)` with the shapes that break careless indexes: uniform random rows,
/// planted clusters (1–6 flipped bits), exact duplicates and a dense spike of rows sharing
/// their top 24 bits (Manku §4.2).
fn hamming_fixture(table: &str, rows: i64, ty: &str) {
    Spi::run(&format!(
        "SELECT setseed(0.42);
         CREATE TABLE {table} (id bigserial PRIMARY KEY, fp {ty});
         INSERT INTO {table} (fp) SELECT ((random() * 2^63)::bigint # (random() * 2^62)::bigint << 1)::{ty}
             FROM generate_series(1, {rows});
         INSERT INTO {table} (fp) SELECT (c.fp::bigint # (1::bigint << (random() * 63)::int)
                                          # CASE WHEN f > 1 THEN 1::bigint << (random() * 63)::int ELSE 0 END
                                          # CASE WHEN f > 3 THEN 7::bigint << (random() * 60)::int ELSE 0 END)::{ty}
             FROM (SELECT fp FROM {table} ORDER BY id LIMIT {c}) c, generate_series(1, 6) f;
         INSERT INTO {table} (fp) SELECT fp FROM {table} ORDER BY id LIMIT {c};
         INSERT INTO {table} (fp) SELECT ((x'abcdef'::bigint << 40) | (random() * 2^40)::bigint)::{ty}
             FROM generate_series(1, {c});",
        c = rows / 10
    ))
    .unwrap();
}

/// The whole plan of `query`, one line per plan node.
fn plan_of(query: &str) -> String {
    Spi::connect(|c| {
        c.select(&format!("EXPLAIN (COSTS OFF) {query}"), None, &[])
            .unwrap()
            .map(|r| r.get::<String>(1).unwrap().unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n")
    })
}

/// The plan of `query` with sequential scans disabled.
fn explain(query: &str) -> String {
    Spi::run("SET LOCAL enable_seqscan = off").unwrap();
    plan_of(query)
}

/// The ids within `k` of `q`, through whatever plan the current settings give.
fn ids_within(table: &str, q: &str, k: i32, ty: &str) -> String {
    Spi::get_one::<String>(&format!(
        "SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM {table} WHERE fp <@ hamming_ball('{q}'::{ty}, {k})"
    ))
    .unwrap()
    .unwrap()
}

/// The ids within each radius 0..=5 of `q` by a seq scan, one string per radius: one
/// statement for all six (each statement launches a parallel worker in this suite).
fn brute_ids_within_each_radius(table: &str, q: &str, ty: &str) -> Vec<String> {
    Spi::run("SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off").unwrap();
    Spi::connect(|c| {
        c.select(
            &format!(
                "SELECT coalesce(string_agg(id::text, ',' ORDER BY id) FILTER (WHERE hamming(fp, '{q}'::{ty}) + 0 <= k), '')
                 FROM generate_series(0, 5) k CROSS JOIN {table} GROUP BY k ORDER BY k"
            ),
            None,
            &[],
        )
        .unwrap()
        .map(|r| r.get::<String>(1).unwrap().unwrap())
        .collect()
    })
}

fn probes(table: &str) -> Vec<String> {
    Spi::connect(|c| {
        c.select(
            &format!(
                "(SELECT fp::bigint::text FROM {table} WHERE fp IS NOT NULL ORDER BY id DESC LIMIT 10)
                 UNION ALL (SELECT fp::bigint::text FROM {table} WHERE fp IS NOT NULL AND id % 97 = 0 LIMIT 12)
                 UNION ALL SELECT ((random() * 2^63)::bigint)::text FROM generate_series(1, 3)"
            ),
            None,
            &[],
        )
        .unwrap()
        .map(|r| r.get::<String>(1).unwrap().unwrap())
        .collect()
    })
}

/// Index answers equal brute force for every probe and k = 0..=5 (beyond max_distance 3
/// too), through index scans and bitmap scans.
fn assert_index_exact(table: &str, ty: &str) {
    for q in probes(table) {
        let q_text = Spi::get_one::<String>(&format!("SELECT ({q})::bigint::{ty}::text")).unwrap().unwrap();
        let brute = brute_ids_within_each_radius(table, &q_text, ty);
        assert_eq!(brute.len(), 6, "{brute:?}");
        for (index_scan, bitmap_scan) in [("on", "off"), ("off", "on")] {
            Spi::run(&format!(
                "SET enable_seqscan = off; SET enable_indexscan = {index_scan}; SET enable_bitmapscan = {bitmap_scan}"
            ))
            .unwrap();
            for (k, brute) in (0..=5).zip(&brute) {
                assert_eq!(
                    &ids_within(table, &q_text, k, ty),
                    brute,
                    "{table} q={q_text} k={k} index={index_scan} bitmap={bitmap_scan}"
                );
            }
            Spi::run("RESET enable_seqscan; RESET enable_indexscan; RESET enable_bitmapscan").unwrap();
        }
    }
}

#[pg_test]
fn hamming_index_is_exact_on_hard_data() {
    hamming_fixture("docs", 3000, "simhash64");
    Spi::run("CREATE INDEX docs_fp ON docs USING hamming (fp) WITH (max_distance = 3)").unwrap();
    let plan = explain("SELECT id FROM docs WHERE fp <@ hamming_ball('0123456789abcdef', 3)");
    assert!(plan.contains("docs_fp"), "{plan}");
    assert_index_exact("docs", "simhash64");
    let rows = Spi::get_one::<i64>("SELECT count(*) FROM docs").unwrap().unwrap();
    assert_eq!(Spi::get_one::<i64>("SELECT hamming_index_check('docs_fp')").unwrap(), Some(rows));
}

#[pg_test]
fn hamming_index_stays_exact_through_inserts_deletes_updates_and_vacuum() {
    hamming_fixture("docs", 2000, "simhash64");
    Spi::run("CREATE INDEX docs_fp ON docs USING hamming (fp)").unwrap();
    // Rows after the build land in the pending pages.
    hamming_fixture_more("docs");
    assert_index_exact("docs", "simhash64");
    Spi::run(
        "DELETE FROM docs WHERE id % 5 = 0;
         UPDATE docs SET fp = (fp::bigint # 1)::simhash64 WHERE id % 7 = 0;",
    )
    .unwrap();
    assert_index_exact("docs", "simhash64");
    // VACUUM cannot run inside the test's transaction: tests/integration/check_index_crash.sh
    // compares index and seq scan after it.
    // Dead rows keep their entries until VACUUM, so the index holds at least the live rows.
    let rows = Spi::get_one::<i64>("SELECT count(*) FROM docs").unwrap().unwrap();
    let checked = Spi::get_one::<i64>("SELECT hamming_index_check('docs_fp')").unwrap().unwrap();
    assert!(checked >= rows, "{checked} < {rows}");
    Spi::run("REINDEX INDEX docs_fp").unwrap();
    assert_index_exact("docs", "simhash64");
}

fn hamming_fixture_more(table: &str) {
    Spi::run(&format!(
        "INSERT INTO {table} (fp) SELECT (fp::bigint # (1::bigint << (id % 60)::int))::simhash64 FROM {table} WHERE id % 3 = 0;
         INSERT INTO {table} (fp) SELECT (random() * 2^62)::bigint::simhash64 FROM generate_series(1, 500);"
    ))
    .unwrap();
}

#[pg_test]
fn hamming_index_on_an_empty_table_then_inserts() {
    Spi::run("CREATE TABLE docs (id bigserial PRIMARY KEY, fp simhash64); CREATE INDEX docs_fp ON docs USING hamming (fp)").unwrap();
    assert_eq!(ids_within("docs", "0000000000000000", 3, "simhash64"), "");
    hamming_fixture_more_into_empty();
    assert_index_exact("docs", "simhash64");
}

fn hamming_fixture_more_into_empty() {
    Spi::run(
        "INSERT INTO docs (fp) SELECT (random() * 2^62)::bigint::simhash64 FROM generate_series(1, 1500);
         INSERT INTO docs (fp) SELECT (fp::bigint # 3)::simhash64 FROM docs WHERE id % 4 = 0;
         INSERT INTO docs (fp) VALUES (NULL), (NULL);",
    )
    .unwrap();
}

#[pg_test]
fn bigint_columns_use_int8_hamming_ops() {
    hamming_fixture("phash", 2000, "bigint");
    Spi::run("CREATE INDEX phash_fp ON phash USING hamming (fp int8_hamming_ops)").unwrap();
    assert_index_exact("phash", "bigint");
}

#[pg_test]
fn order_by_distance_is_exact_nearest_first() {
    hamming_fixture("docs", 2000, "simhash64");
    Spi::run("CREATE INDEX docs_fp ON docs USING hamming (fp); INSERT INTO docs (fp) SELECT fp FROM docs WHERE id < 50").unwrap();
    for q in probes("docs").iter().take(10) {
        for limit in [1, 10, 200] {
            let query = format!("SELECT string_agg(d::text, ',') FROM (SELECT fp <~> ({q})::bigint::simhash64 AS d FROM docs ORDER BY fp <~> ({q})::bigint::simhash64 LIMIT {limit}) s");
            let plan = explain(&query);
            assert!(plan.contains("Index Scan using docs_fp"), "{plan}");
            let by_index = Spi::get_one::<String>(&format!("SET LOCAL enable_seqscan = off; {query}")).unwrap();
            let brute = Spi::get_one::<String>(&format!("SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off; {query}")).unwrap();
            assert_eq!(by_index, brute, "q={q} limit={limit} plan={plan}");
        }
    }
}

#[pg_test]
fn batch_pairs_equal_the_brute_force_self_join() {
    hamming_fixture("docs", 1500, "simhash64");
    for k in [0, 3, 5] {
        let batch = Spi::get_one::<String>(&format!(
            "SELECT md5(coalesce(string_agg(a || '-' || b || ':' || distance, ',' ORDER BY a, b), '')) FROM hamming_pairs('docs', 'id', 'fp', {k})"
        ))
        .unwrap();
        let brute = Spi::get_one::<String>(&format!(
            "SELECT md5(coalesce(string_agg(a.id || '-' || b.id || ':' || hamming(a.fp, b.fp), ',' ORDER BY a.id, b.id), ''))
             FROM docs a JOIN docs b ON a.id < b.id AND hamming(a.fp, b.fp) + 0 <= {k}"
        ))
        .unwrap();
        assert_eq!(batch, brute, "k = {k}");
    }
}

#[pg_test]
fn unlogged_tables_and_options() {
    Spi::run(
        "CREATE UNLOGGED TABLE u (fp simhash64);
         INSERT INTO u SELECT (random() * 2^62)::bigint::simhash64 FROM generate_series(1, 100);
         CREATE INDEX u_fp ON u USING hamming (fp) WITH (max_distance = 5, blocks = 8);",
    )
    .unwrap();
    assert_eq!(Spi::get_one::<i64>("SELECT hamming_index_check('u_fp')").unwrap(), Some(100));
    let bad = |opts: &str| {
        Spi::run(&format!(
            "CREATE OR REPLACE FUNCTION pg_temp.try_index() RETURNS text LANGUAGE plpgsql AS $$
             BEGIN CREATE INDEX ON u USING hamming (fp) WITH ({opts}); RETURN NULL;
             EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE; END $$"
        ))
        .unwrap();
        Spi::get_one::<String>("SELECT pg_temp.try_index()").unwrap()
    };
    assert_eq!(bad("max_distance = 9").as_deref(), Some("22023"));
    assert_eq!(bad("max_distance = 3, blocks = 3").as_deref(), Some("22023"));
    assert_eq!(bad("max_distance = 6, blocks = 16").as_deref(), Some("22023"));
}

#[pg_test]
fn order_by_returns_null_fingerprints_last_and_honours_every_key() {
    Spi::run(
        "CREATE TABLE t (id int, fp simhash64);
         INSERT INTO t VALUES (1, '0123456789abcdef'), (2, NULL), (3, 'ffffffffffffffff');
         CREATE INDEX t_fp ON t USING hamming (fp);
         INSERT INTO t VALUES (4, NULL), (5, '0123456789abcdee');
         CREATE TABLE m (id int, fp simhash64);
         INSERT INTO m SELECT i, (1::bigint << (i - 1))::simhash64 FROM generate_series(1, 64) i;
         CREATE INDEX m_fp ON m USING hamming (fp);",
    )
    .unwrap();
    let ordered = |q: &str| {
        let plan = explain(q);
        assert!(plan.contains("Index Scan using"), "{plan}");
        let by_index = Spi::get_one::<String>(&format!("SET LOCAL enable_seqscan = off; {q}")).unwrap();
        let brute = Spi::get_one::<String>(&format!(
            "SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off; {q}"
        ))
        .unwrap();
        // back to the defaults for the next query (18 no longer prefers the cheaper of two
        // disabled plans by a margin of disable_cost: it counts disabled nodes)
        Spi::run("RESET enable_seqscan; RESET enable_indexscan; RESET enable_bitmapscan").unwrap();
        assert_eq!(by_index, brute, "{q}");
        by_index.unwrap()
    };
    assert_eq!(
        ordered("SELECT string_agg(id::text, ',') FROM (SELECT id FROM t ORDER BY fp <~> '0123456789abcdef') s"),
        "1,5,3,2,4"
    );
    assert_eq!(
        ordered(
            "SELECT string_agg(id::text, ',') FROM (SELECT id FROM m
             ORDER BY fp <~> '0000000000000000', fp <~> 'ff00000000000000' LIMIT 3) s"
        ),
        "57,58,59"
    );
    assert_eq!(Spi::get_one::<i64>("SELECT hamming_index_check('t_fp')").unwrap(), Some(5));
}

#[pg_test]
fn planner_uses_the_index_for_small_radii_and_joins_and_a_seq_scan_for_large_ones() {
    // No enable_* settings: the cost model alone decides.
    Spi::run(
        "CREATE TABLE p (id bigserial PRIMARY KEY, fp simhash64);
         INSERT INTO p (fp) SELECT (random() * 2^62)::bigint::simhash64 FROM generate_series(1, 20000);
         CREATE INDEX p_fp ON p USING hamming (fp); ANALYZE p;",
    )
    .unwrap();
    let plan = plan_of;
    let lookup = plan("SELECT id FROM p WHERE hamming(fp, '0123456789abcdef') <= 3");
    assert!(lookup.contains("p_fp"), "{lookup}");
    let join = plan("SELECT a.id, b.id FROM p a JOIN p b ON hamming(a.fp, b.fp) <= 3 AND a.id < b.id");
    assert!(join.contains("Nested Loop") && join.contains("Index Cond: (fp <@ hamming_ball(a.fp, 3))"), "{join}");
    let wide = plan("SELECT id FROM p WHERE hamming(fp, '0123456789abcdef') <= 40");
    assert!(wide.contains("Seq Scan on p") && !wide.contains("p_fp"), "{wide}");
    let nearest = plan("SELECT id FROM p ORDER BY fp <~> '0123456789abcdef' LIMIT 10");
    assert!(nearest.contains("Index Scan using p_fp"), "{nearest}");
}

/// `ORDER BY fp <~> q` through the index and by brute force (`hamming(fp, q) + 0`, ties by
/// ctid as the index breaks them, NULL distances last), as `id:distance` lists.
fn knn_both_ways(table: &str, q: &str, limit: Option<i64>) -> (String, String) {
    knn_both_ways_on(table, "fp", q, limit)
}

/// `knn_both_ways` on column `column` of `table` (any code width).
fn knn_both_ways_on(table: &str, column: &str, q: &str, limit: Option<i64>) -> (String, String) {
    let by_index = knn_by_index_on(table, column, q, limit);
    (by_index, knn_brute_on(table, column, q, limit))
}

/// The `id:distance` list of `knn_both_ways_on` through a forced index scan.
fn knn_by_index_on(table: &str, column: &str, q: &str, limit: Option<i64>) -> String {
    let by_index = knn_list(table, column, q, &format!("{column} <~> {q}"), limit);
    Spi::run("SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = on; SET LOCAL enable_bitmapscan = off").unwrap();
    let plan = plan_of(&by_index);
    assert!(plan.contains("Index Scan using"), "{plan}");
    let index_answer = Spi::get_one::<String>(&by_index).unwrap().unwrap();
    Spi::run("RESET enable_seqscan; RESET enable_indexscan; RESET enable_bitmapscan").unwrap();
    index_answer
}

/// The `id:distance` list of `knn_both_ways_on` by a sequential scan and a sort.
fn knn_brute_on(table: &str, column: &str, q: &str, limit: Option<i64>) -> String {
    let order = format!("hamming({column}, {q}) + 0, ctid");
    let brute = knn_list(table, column, q, &order, limit);
    Spi::run("SET LOCAL enable_seqscan = on; SET LOCAL enable_indexscan = off").unwrap();
    let brute = Spi::get_one::<String>(&brute).unwrap().unwrap();
    Spi::run("RESET enable_seqscan; RESET enable_indexscan; RESET enable_bitmapscan").unwrap();
    brute
}

/// The query of `table`'s rows `id:distance`, ordered by `order`.
fn knn_list(table: &str, column: &str, q: &str, order: &str, limit: Option<i64>) -> String {
    let limit = limit.map_or(String::new(), |n| format!("LIMIT {n}"));
    format!(
        "SELECT coalesce(string_agg(id || ':' || coalesce(d::text, 'null'), ','), '') FROM
         (SELECT id, {column} <~> {q} AS d FROM {table} ORDER BY {order} {limit}) s"
    )
}

/// Queries whose nearest row is 8–15 bits away: rows of `table` with 8–15 bits flipped,
/// kept only if brute force confirms the nearest distance (flipping may land nearer).
fn knn_far_queries(table: &str, n: i64) -> Vec<String> {
    Spi::connect(|c| {
        c.select(
            &format!(
                "WITH flipped AS (
                     SELECT (SELECT bit_xor(1::bigint << b) FROM
                                (SELECT DISTINCT (random() * 63)::int AS b FROM generate_series(1, 8 + t.id % 8)) bits
                            ) # t.fp::bigint AS q
                     FROM (SELECT id, fp FROM {table} WHERE fp IS NOT NULL ORDER BY md5(id::text) LIMIT {n} * 10) t)
                 SELECT q::text FROM flipped f
                 WHERE (SELECT min(hamming(fp::bigint, f.q) + 0) FROM {table}) BETWEEN 8 AND 15
                 LIMIT {n}"
            ),
            None,
            &[],
        )
        .unwrap()
        .map(|r| format!("({})::bigint::simhash64", r.get::<String>(1).unwrap().unwrap()))
        .collect()
    })
}

#[pg_test]
fn knn_order_by_beyond_max_distance_equals_brute_force() {
    // The hard fixture, and uniform random rows where every query's nearest row is 8–15
    // bits away; both with rows in the pending pages (NULL ones too) after the build. The
    // uniform table is large enough that a full order takes several passes.
    hamming_fixture("docs", 2000, "simhash64");
    uniform_indexed_table(0.17, 20000);
    Spi::run(
        "CREATE INDEX docs_fp ON docs USING hamming (fp);
         INSERT INTO docs (fp) SELECT (fp::bigint # 1)::simhash64 FROM docs WHERE id % 9 = 0;
         INSERT INTO uni (fp) SELECT ((random() * 2^63)::bigint # (random() * 2^62)::bigint << 1)::simhash64
             FROM generate_series(1, 700);
         INSERT INTO docs (fp) VALUES (NULL), (NULL);
         INSERT INTO uni (fp) VALUES (NULL);
         ANALYZE docs; ANALYZE uni;",
    )
    .unwrap();
    for table in ["docs", "uni"] {
        let rows = Spi::get_one::<i64>(&format!("SELECT count(*) FROM {table}")).unwrap().unwrap();
        let mut queries = knn_far_queries(table, 4);
        assert_eq!(queries.len(), 4, "{table}: queries 8-15 bits from their nearest row");
        queries.push("'0123456789abcdef'::simhash64".into());
        for q in &queries {
            for limit in [Some(1), Some(10), Some(1000), Some(rows), None] {
                let (by_index, brute) = knn_both_ways(table, q, limit);
                assert_eq!(by_index, brute, "{table} q={q} limit={limit:?}");
                let returned = by_index.split(',').count() as i64;
                assert_eq!(returned, limit.unwrap_or(rows).min(rows), "{table} q={q}");
            }
        }
    }
    // The cost model alone picks the index for a nearest-first LIMIT.
    let q = &knn_far_queries("uni", 1)[0];
    let plan = plan_of(&format!("SELECT id FROM uni ORDER BY fp <~> {q} LIMIT 10"));
    assert!(plan.contains("Index Scan using uni_fp"), "{plan}");
}

/// Nearest-first passes that read runs by rings (`neardup.ring_budget`): never (0); where
/// the rings a uniform table would need fit the budget, reading a run whole once they cost
/// more (1,500 and 20,000 passes' worth, which this size of table takes at rings 5 and 6);
/// always (1e12). Every budget gives brute force's rows, on the hard fixture (clustered,
/// duplicated, shared prefixes; two runs, pending and NULL rows) and on uniform rows, for
/// queries near rows, 8–15 bits from them, and far from the clusters. Rings read other
/// blocks than a pass over table 0.
#[pg_test]
fn knn_by_rings_equals_brute_force_at_every_budget() {
    docs_in_runs(3000);
    uniform_indexed_table(0.31, 20000);
    Spi::run(
        "INSERT INTO docs SELECT -i, NULL FROM generate_series(1, 3) i;
         INSERT INTO uni (fp) SELECT ((random() * 2^63)::bigint # (random() * 2^62)::bigint << 1)::simhash64
             FROM generate_series(1, 300);
         INSERT INTO uni (fp) VALUES (NULL);
         ANALYZE docs; ANALYZE uni;",
    )
    .unwrap();
    assert!(crate::am::meta_of("docs_fp").runs.len() >= 2, "several runs");
    // The index blocks a LIMIT 10 scan reads (its transaction's count before and after).
    let blocks = |table: &str, q: &str| {
        let fetched = || {
            let sql = format!("SELECT pg_stat_get_xact_blocks_fetched('{table}_fp'::regclass)");
            Spi::get_one::<i64>(&sql).unwrap().unwrap()
        };
        let before = fetched();
        knn_both_ways(table, q, Some(10));
        fetched() - before
    };
    for table in ["docs", "uni"] {
        let rows = Spi::get_one::<i64>(&format!("SELECT count(*) FROM {table}")).unwrap().unwrap();
        let mut queries = knn_far_queries(table, 2);
        assert_eq!(queries.len(), 2, "{table}: queries 8-15 bits from their nearest row");
        queries.extend([
            format!("(SELECT fp FROM {table} WHERE id = 7)"),
            format!("(SELECT (~fp::bigint)::simhash64 FROM {table} WHERE id = 1)"),
            "'0123456789abcdef'::simhash64".into(),
        ]);
        let mut fetched = Vec::new();
        for budget in ["0", "1500", "20000", "1e12"] {
            Spi::run(&format!("SET LOCAL neardup.ring_budget = {budget}")).unwrap();
            for q in &queries {
                // Rings at any cost would read every prefix of every table in each of a
                // full order's passes: the unbounded order only where they are bounded.
                let unbounded = (budget != "1e12").then_some(None);
                for limit in [Some(1), Some(10), Some(40), Some(1000)].into_iter().chain(unbounded) {
                    let (by_index, brute) = knn_both_ways(table, q, limit);
                    assert_eq!(by_index, brute, "{table} budget {budget} q={q} limit={limit:?}");
                    let returned = by_index.split(',').count() as i64;
                    assert_eq!(returned, limit.unwrap_or(rows).min(rows), "{table} q={q}");
                }
            }
            fetched.push(blocks(table, &queries[0]));
        }
        assert_ne!(fetched[0], fetched[3], "{table}: rings read other blocks: {fetched:?}");
    }
    Spi::run("RESET neardup.ring_budget").unwrap();
}

/// `uni(id, fp)`: `rows` uniformly random fingerprints (seeded), indexed with `hamming`
/// while it holds only them, so that rows added later go to the pending list.
fn uniform_indexed_table(seed: f64, rows: i64) {
    Spi::run(&format!(
        "SELECT setseed({seed});
         CREATE TABLE uni (id bigserial PRIMARY KEY, fp simhash64);
         INSERT INTO uni (fp) SELECT ((random() * 2^63)::bigint # (random() * 2^62)::bigint << 1)::simhash64
             FROM generate_series(1, {rows});
         CREATE INDEX uni_fp ON uni USING hamming (fp);"
    ))
    .unwrap();
}

#[pg_test]
fn knn_lateral_join_of_20_probes_equals_brute_force() {
    uniform_indexed_table(0.23, 8000);
    Spi::run(
        "INSERT INTO uni (fp) SELECT (fp::bigint # 2)::simhash64 FROM uni WHERE id % 50 = 0;
         ANALYZE uni;",
    )
    .unwrap();
    let queries = knn_far_queries("uni", 16);
    assert_eq!(queries.len(), 16);
    let values = queries
        .iter()
        .chain(["'0123456789abcdef'::simhash64".to_string(), "'ffffffffffffffff'::simhash64".into()].iter())
        .chain(["(SELECT fp FROM uni WHERE id = 100)".to_string(), "(SELECT fp FROM uni WHERE id = 8001)".into()].iter())
        .enumerate()
        .map(|(i, q)| format!("({i}, {q})"))
        .collect::<Vec<_>>()
        .join(", ");
    Spi::run(&format!("CREATE TABLE probes AS SELECT * FROM (VALUES {values}) v(pid, q)")).unwrap();
    assert_eq!(Spi::get_one::<i64>("SELECT count(*) FROM probes").unwrap(), Some(20));
    for limit in [1, 7, 300] {
        let join = |order: &str| {
            format!(
                "SELECT string_agg(p.pid || '>' || x.id || ':' || x.d, ',' ORDER BY p.pid, x.n) FROM probes p,
                 LATERAL (SELECT id, fp <~> p.q AS d, row_number() OVER () AS n FROM
                          (SELECT id, fp FROM uni ORDER BY {order} LIMIT {limit}) o) x"
            )
        };
        let by_index = join("fp <~> p.q");
        Spi::run("SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = on").unwrap();
        let plan = plan_of(&by_index);
        assert!(plan.contains("Index Scan using uni_fp"), "{plan}");
        let index_answer = Spi::get_one::<String>(&by_index).unwrap();
        Spi::run("SET LOCAL enable_seqscan = on; SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off").unwrap();
        let brute = Spi::get_one::<String>(&join("hamming(fp, p.q) + 0, ctid")).unwrap();
        Spi::run("RESET enable_seqscan; RESET enable_indexscan; RESET enable_bitmapscan").unwrap();
        assert_eq!(index_answer, brute, "limit {limit}");
    }
}

/// A backend reads a pass's leaves through the buffers where it last found them; in one
/// backend, nearest codes stay exact while merges write new runs, a DELETE and REINDEX
/// give the index new storage, and TRUNCATE empties it, each under the hints the queries
/// before left. The index's leaves (columns, format 6) pass the checker each time.
#[pg_test]
fn knn_stays_exact_as_the_leaves_it_read_before_are_replaced() {
    uniform_indexed_table(0.31, 6000);
    Spi::run("ALTER INDEX uni_fp SET (pending_limit = 600); ANALYZE uni").unwrap();
    let queries = knn_far_queries("uni", 3);
    assert_eq!(queries.len(), 3);
    let exact = |step: &str| {
        let rows = Spi::get_one::<i64>("SELECT count(*) FROM uni").unwrap().unwrap();
        // (Rows this transaction deleted stay in the index, as in any index, until VACUUM.)
        let checked = Spi::get_one::<i64>("SELECT hamming_index_check('uni_fp')").unwrap().unwrap();
        assert!(checked >= rows, "{step}: {checked} rows checked of {rows}");
        for q in &queries {
            for limit in [Some(10), Some(300)] {
                let (by_index, brute) = knn_both_ways("uni", q, limit);
                assert_eq!(by_index, brute, "{step}: q={q} limit={limit:?}");
                assert_eq!(by_index.split(',').count() as i64, limit.unwrap().min(rows), "{step}");
            }
        }
    };
    exact("built");
    exact("built, read again");
    Spi::run(
        "INSERT INTO uni (fp) SELECT ((random() * 2^63)::bigint # (random() * 2^62)::bigint << 1)::simhash64
             FROM generate_series(1, 3000)",
    )
    .unwrap();
    exact("merged");
    Spi::run("DELETE FROM uni WHERE id % 3 = 0; REINDEX INDEX uni_fp").unwrap();
    // The index's statistics count the leaves read through a hint as those read through
    // the buffer mapping table (the first query after REINDEX: its hints are stale).
    let blocks_read = || {
        let stats = "SELECT pg_stat_get_xact_blocks_fetched('uni_fp'::regclass) || '/' || pg_stat_get_xact_blocks_hit('uni_fp'::regclass)";
        let before = Spi::get_one::<String>(stats).unwrap().unwrap();
        Spi::run("SET LOCAL enable_seqscan = off").unwrap();
        let nearest = format!("SELECT count(*) FROM (SELECT id FROM uni ORDER BY fp <~> {} LIMIT 10) s", queries[0]);
        assert_eq!(Spi::get_one::<i64>(&nearest).unwrap(), Some(10));
        Spi::run("RESET enable_seqscan").unwrap();
        let after = Spi::get_one::<String>(stats).unwrap().unwrap();
        let counts = |s: &str| s.split('/').map(|n| n.parse::<i64>().unwrap()).collect::<Vec<_>>();
        let (b, a) = (counts(&before), counts(&after));
        (a[0] - b[0], a[1] - b[1])
    };
    let (first, again) = (blocks_read(), blocks_read());
    let leaves = Spi::get_one::<i64>("SELECT pg_relation_size('uni_fp') / 8192 / 20").unwrap().unwrap();
    assert!(first.0 >= leaves && first.1 >= leaves, "{first:?} blocks read, {leaves} expected at least");
    assert_eq!(again, first, "blocks (fetched, hit) by the same query through hints");
    exact("reindexed");
    Spi::run(
        "TRUNCATE uni;
         INSERT INTO uni (fp) SELECT ((random() * 2^63)::bigint # (random() * 2^62)::bigint << 1)::simhash64
             FROM generate_series(1, 5000);
         REINDEX INDEX uni_fp",
    )
    .unwrap();
    exact("truncated and filled anew");
}

#[pg_test]
fn knn_wide_bitmap_scans_add_every_match_in_chunks() {
    // A radius far beyond max_distance matches thousands of rows: the bitmap gets them a
    // chunk at a time and must still hold each one.
    uniform_indexed_table(0.31, 6000);
    Spi::run("INSERT INTO uni (fp) SELECT (fp::bigint # 4)::simhash64 FROM uni WHERE id % 3 = 0")
        .unwrap();
    for k in [30, 34, 64] {
        let q = "'0f0f0f0f0f0f0f0f'::simhash64";
        let sql = |cond: &str| {
            format!("SELECT count(*) || ' ' || md5(string_agg(id::text, ',' ORDER BY id)) FROM uni WHERE {cond}")
        };
        let by_bitmap = sql(&format!("fp <@ hamming_ball({q}, {k})"));
        Spi::run("SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = on").unwrap();
        assert!(plan_of(&by_bitmap).contains("Bitmap Index Scan on uni_fp"));
        let bitmap = Spi::get_one::<String>(&by_bitmap).unwrap();
        Spi::run("SET LOCAL enable_seqscan = on; SET LOCAL enable_bitmapscan = off").unwrap();
        let brute = Spi::get_one::<String>(&sql(&format!("hamming(fp, {q}) + 0 <= {k}"))).unwrap();
        Spi::run("RESET enable_seqscan; RESET enable_indexscan; RESET enable_bitmapscan").unwrap();
        assert_eq!(bitmap, brute, "k = {k}");
        let count: i64 = bitmap.unwrap().split(' ').next().unwrap().parse().unwrap();
        assert!(count > 1024 || k < 34, "k = {k}: {count} matches, fewer than one chunk");
    }
}

#[pg_test]
fn index_scans_are_counted_in_the_statistics() {
    Spi::run(&format!("SET {} = off", crate::FORCE_PARALLEL)).unwrap();
    Spi::run(
        "CREATE TABLE counted (id int, fp simhash64);
         INSERT INTO counted SELECT g, (g * 2654435761)::bigint::simhash64 FROM generate_series(1, 2000) g;
         CREATE INDEX counted_fp ON counted USING hamming (fp);
         SET enable_seqscan = off;",
    )
    .unwrap();
    let scans = || int("SELECT pg_stat_get_xact_numscans('counted_fp'::regclass)");
    let before = scans();
    // A bitmap scan, then a plain index scan (ORDER BY <~>): idx_scan counts each, as it
    // does for btree and GIN.
    Spi::run("SELECT count(*) FROM counted WHERE hamming(fp, '0000000000000000') <= 3").unwrap();
    Spi::run("SET enable_bitmapscan = off").unwrap();
    Spi::run("SELECT id FROM counted ORDER BY fp <~> '0000000000000000' LIMIT 3").unwrap();
    assert_eq!(scans() - before, 2);
}
