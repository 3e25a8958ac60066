// SQL tests of src/hamming_query: hamming_ball, <@ / @>, hamming_within, its support
// function, and the planner hook's rewrite (which applies only to columns with a `hamming`
// index, keeping the bound as written beside its `hamming_within`). Included in lib.rs's `tests` schema module next
// to simhash64/tests.rs, whose helpers (text, int, boolean, is_null, sqlstate) they use. Every
// answer is compared with a bit count computed without any neardup function: PostgreSQL's
// own `bit_count((x # y)::bit(64))`.

/// The independent bit count of `x # y` (both bigint or simhash64 expressions).
fn hq_bits(x: &str, y: &str) -> String {
    format!("pg_catalog.bit_count((({x})::bigint # ({y})::bigint)::bit(64))::int")
}

/// `EXPLAIN (COSTS OFF, VERBOSE)` of `query`, all lines (VERBOSE shows target lists too).
fn hq_plan(query: &str) -> String {
    Spi::run(
        "CREATE OR REPLACE FUNCTION pg_temp.hq_plan(q text) RETURNS text LANGUAGE plpgsql AS $$
         DECLARE line text; plan text := '';
         BEGIN FOR line IN EXECUTE 'EXPLAIN (COSTS OFF, VERBOSE) ' || q LOOP plan := plan || line || E'\\n'; END LOOP;
         RETURN plan; END $$",
    )
    .unwrap();
    Spi::get_one_with_args::<String>("SELECT pg_temp.hq_plan($1)", &[query.into()])
        .unwrap()
        .unwrap()
}

/// The planner's row estimate for `query`.
fn hq_rows(query: &str) -> f64 {
    Spi::run(
        "CREATE OR REPLACE FUNCTION pg_temp.hq_rows(q text) RETURNS float8 LANGUAGE plpgsql AS $$
         DECLARE j json;
         BEGIN EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO j; RETURN (j->0->'Plan'->>'Plan Rows')::float8; END $$",
    )
    .unwrap();
    Spi::get_one_with_args::<f64>("SELECT pg_temp.hq_rows($1)", &[query.into()])
        .unwrap()
        .unwrap()
}

/// `hq(id, fp simhash64, fpi bigint)`: 1000 random centers with 10 variants each at 0 to 5
/// flipped bits (so small radii match whole clusters), plus 3 rows of NULLs; `fpi = fp`.
fn hq_fixture() {
    Spi::run(
        "SELECT setseed(0.17);
         CREATE TABLE hq (id serial PRIMARY KEY, fp simhash64, fpi bigint);
         INSERT INTO hq (fpi)
         SELECT c.v # CASE WHEN f % 5 > 0 THEN 1::bigint << (random() * 63)::int ELSE 0 END
                    # CASE WHEN f % 5 > 1 THEN 1::bigint << (random() * 63)::int ELSE 0 END
                    # CASE WHEN f % 5 > 2 THEN 1::bigint << (random() * 63)::int ELSE 0 END
                    # CASE WHEN f % 5 > 3 THEN 3::bigint << (random() * 62)::int ELSE 0 END
         FROM (SELECT g, ((random() * 2^32)::bigint << 32) # (random() * 2^32)::bigint AS v
               FROM generate_series(1, 1000) g) c, generate_series(0, 9) f
         ORDER BY c.g, f;
         INSERT INTO hq (fpi) VALUES (NULL), (NULL), (NULL);
         UPDATE hq SET fp = fpi::simhash64;
         ANALYZE hq;",
    )
    .unwrap();
}

/// The fingerprint of row `id` of `hq`, as hex.
fn hq_fp(id: i32) -> String {
    text(&format!("SELECT fp::text FROM hq WHERE id = {id}"))
}

#[pg_test]
fn hq_ball_text_io_round_trips() {
    assert_eq!(
        text("SELECT '(0123456789abcdef,3)'::hamming_ball::text"),
        "(0123456789abcdef,3)"
    );
    assert_eq!(
        text("SELECT ' ( 0X0123456789ABCDEF , 0 ) '::hamming_ball::text"),
        "(0123456789abcdef,0)"
    );
    assert_eq!(
        text("SELECT hamming_ball('00000000000000ff'::simhash64, 64)::text"),
        "(00000000000000ff,64)"
    );
    assert_eq!(
        text("SELECT hamming_ball(-1::bigint, 2147483647)::text"),
        "(ffffffffffffffff,2147483647)"
    );
    assert_eq!(
        text("SELECT hamming_ball(255, 1)::text"),
        "(00000000000000ff,1)"
    );
    assert!(is_null("SELECT hamming_ball(NULL::bigint, 3)"));
    assert!(is_null(
        "SELECT hamming_ball('0000000000000000'::simhash64, NULL)"
    ));
    assert!(is_null("SELECT NULL::hamming_ball"));
    // Stored and read back through a table (16 bytes by reference, double-aligned).
    Spi::run(
        "CREATE TABLE hq_balls (pad boolean, g int, b hamming_ball);
         INSERT INTO hq_balls SELECT true, g, hamming_ball(g::bigint * 1234567891011, g) FROM generate_series(0, 99) g;",
    )
    .unwrap();
    assert!(boolean(
        "SELECT bool_and(b::text = format('(%s,%s)', lpad(to_hex(g::bigint * 1234567891011), 16, '0'), g)) FROM hq_balls"
    ));
}

#[pg_test]
fn hq_ball_bad_input_is_22p02_and_negative_radius_22023() {
    for bad in [
        "",
        "(",
        "()",
        "(,)",
        "0123456789abcdef,3",
        "(0123456789abcdef,3",
        "0123456789abcdef,3)",
        "(0123456789abcdef)",
        "(0123456789abcdef,)",
        "(0123456789abcdef,x)",
        "(0123456789abcdef,3,4)",
        "(012345,3)",
        "(0123456789abcdeg,3)",
        "(0123456789abcdef,3)x",
        "(0123456789abcdef,1.5)",
    ] {
        let q = format!("SELECT '{bad}'::hamming_ball");
        assert_eq!(sqlstate(&q).as_deref(), Some("22P02"), "{bad:?}");
    }
    // A radius past integer's range is out of range, as int4in says, not malformed.
    assert_eq!(
        sqlstate("SELECT '(0123456789abcdef,99999999999)'::hamming_ball").as_deref(),
        Some("22003")
    );
    for bad in [
        "SELECT '(0123456789abcdef,-1)'::hamming_ball",
        "SELECT hamming_ball('0123456789abcdef'::simhash64, -1)",
        "SELECT hamming_ball(5::bigint, -2147483648)",
    ] {
        assert_eq!(sqlstate(bad).as_deref(), Some("22023"), "{bad}");
    }
}

#[pg_test]
fn hq_ball_binary_io_round_trips() {
    assert_eq!(
        text("SELECT hamming_ball_send('(0123456789abcdef,3)')::text"),
        "\\x0123456789abcdef00000003"
    );
    Spi::run(
        "CREATE TABLE hq_src AS SELECT hamming_ball(g::bigint * -987654321987, g % 70) AS b FROM generate_series(0, 200) g;
         COPY hq_src TO '/tmp/neardup_hamming_ball.bin' (FORMAT binary);
         CREATE TABLE hq_dst (b hamming_ball);
         COPY hq_dst FROM '/tmp/neardup_hamming_ball.bin' (FORMAT binary);",
    )
    .unwrap();
    assert_eq!(
        text("SELECT string_agg(b::text, ',' ORDER BY b::text) FROM hq_src"),
        text("SELECT string_agg(b::text, ',' ORDER BY b::text) FROM hq_dst")
    );
}

#[pg_test]
fn hq_bigint_hamming_and_its_operator() {
    assert_eq!(int("SELECT hamming(0::bigint, -1::bigint)::bigint"), 64);
    assert_eq!(int("SELECT (255::bigint <~> 15::bigint)::bigint"), 4);
    assert_eq!(
        int("SELECT hamming('-9223372036854775808'::bigint, 0)::bigint"),
        1
    );
    assert!(is_null("SELECT hamming(NULL::bigint, 1)"));
    assert!(is_null("SELECT 1::bigint <~> NULL"));
    let bits = hq_bits("a", "b");
    assert!(boolean(&format!(
        "SELECT bool_and(hamming(a, b) = {bits} AND (a <~> b) = {bits} AND (b <~> a) = (a <~> b))
         FROM (SELECT ((random() * 2^32)::bigint << 32) # (random() * 2^32)::bigint AS a,
                      ((random() * 2^32)::bigint << 32) # (random() * 2^32)::bigint AS b
               FROM generate_series(1, 500)) t"
    )));
}

#[pg_test]
fn hq_untyped_literals_are_read_as_simhash64() {
    // simhash64 is in type category S, so the simhash64 overloads win for '...' literals,
    // while integers still go to the bigint ones.
    assert_eq!(
        text("SELECT hamming_ball('0123456789abcdef', 3)::text"),
        "(0123456789abcdef,3)"
    );
    assert_eq!(
        int("SELECT hamming('00000000000000ff', '000000000000000f')::bigint"),
        4
    );
    assert!(is_null("SELECT hamming(NULL, '0000000000000000')"));
    assert!(boolean(
        "SELECT hamming_within('00000000000000ff', '000000000000000f', 4)"
    ));
    assert_eq!(
        text("SELECT hamming_ball(12, 3)::text"),
        "(000000000000000c,3)"
    );
    assert_eq!(int("SELECT hamming(255, 15)::bigint"), 4);
    assert_eq!(int("SELECT hamming(255::bigint, '15')::bigint"), 4);
}

/// `hq_pairs(a bigint, b bigint, k int)`: pairs at 0 to 6 bits and random pairs, against radii
/// 0 to 8, 28 to 36 and 64, plus NULLs in every column.
fn hq_pairs() {
    Spi::run(
        "SELECT setseed(0.5);
         CREATE TABLE hq_pairs AS
         SELECT a, a # m AS b, k FROM (
             SELECT ((random() * 2^32)::bigint << 32) # (random() * 2^32)::bigint AS a,
                    CASE WHEN g % 4 = 0 THEN ((random() * 2^32)::bigint << 32) # (random() * 2^32)::bigint
                         ELSE (CASE WHEN random() < 0.6 THEN 1::bigint << (random() * 63)::int ELSE 0 END)
                            | (CASE WHEN random() < 0.6 THEN 1::bigint << (random() * 63)::int ELSE 0 END)
                            | (CASE WHEN random() < 0.6 THEN 1::bigint << (random() * 63)::int ELSE 0 END)
                            | (CASE WHEN random() < 0.6 THEN 5::bigint << (random() * 61)::int ELSE 0 END)
                            | (CASE WHEN random() < 0.3 THEN 7::bigint << (random() * 60)::int ELSE 0 END)
                    END AS m
             FROM generate_series(1, 400) g) p,
             (SELECT generate_series(0, 8) UNION ALL SELECT generate_series(28, 36) UNION ALL SELECT 64) r(k);
         INSERT INTO hq_pairs VALUES (NULL, 1, 3), (1, NULL, 3), (1, 1, NULL), (NULL, NULL, NULL);",
    )
    .unwrap();
}

#[pg_test]
fn hq_ball_operators_agree_with_bit_counts() {
    hq_pairs();
    let bits = hq_bits("a", "b");
    // Both outcomes occur, so the comparison below means something.
    assert!(boolean(&format!(
        "SELECT count(*) FILTER (WHERE {bits} <= k) > 1000 AND count(*) FILTER (WHERE {bits} > k) > 1000 FROM hq_pairs"
    )));
    for (value, center) in [("a", "b"), ("a::simhash64", "b::simhash64"), ("b", "a")] {
        let q = format!(
            "SELECT bool_and(({value} <@ hamming_ball({center}, k)) IS NOT DISTINCT FROM ({bits} <= k)
                         AND (hamming_ball({center}, k) @> {value}) IS NOT DISTINCT FROM ({bits} <= k))
             FROM hq_pairs WHERE k IS NOT NULL"
        );
        assert!(boolean(&q), "{value} <@ hamming_ball({center}, k)");
    }
    assert!(is_null("SELECT NULL::bigint <@ hamming_ball(1, 3)"));
    assert!(is_null("SELECT 1::bigint <@ NULL::hamming_ball"));
    assert!(is_null(
        "SELECT NULL::hamming_ball @> '0000000000000000'::simhash64"
    ));
    assert!(boolean(
        "SELECT '0000000000000007'::simhash64 <@ '(0000000000000000,3)'"
    ));
    assert!(!boolean(
        "SELECT '000000000000000f'::simhash64 <@ '(0000000000000000,3)'"
    ));
    assert!(boolean(
        "SELECT '(ffffffffffffffff,0)'::hamming_ball @> -1::bigint"
    ));
}

#[pg_test]
fn hq_hamming_within_agrees_including_nulls_and_negative_k() {
    hq_pairs();
    Spi::run("INSERT INTO hq_pairs SELECT a, b, -k - 1 FROM hq_pairs WHERE k < 3").unwrap();
    let bits = hq_bits("a", "b");
    for (x, y) in [("a", "b"), ("a::simhash64", "b::simhash64")] {
        // `+ 0` keeps the planner hook away from the reference comparison.
        let q = format!(
            "SELECT bool_and(hamming_within({x}, {y}, k) IS NOT DISTINCT FROM ({bits} + 0 <= k)) FROM hq_pairs"
        );
        assert!(boolean(&q), "{q}");
    }
    assert!(is_null("SELECT hamming_within(NULL::bigint, 1, 3)"));
    assert!(is_null(
        "SELECT hamming_within('0000000000000000'::simhash64, NULL, 3)"
    ));
    assert!(is_null("SELECT hamming_within(1::bigint, 1, NULL)"));
    assert!(!boolean("SELECT hamming_within(1::bigint, 1, -2147483648)"));
    assert!(boolean("SELECT hamming_within(0::bigint, -1, 64)"));
    assert!(!boolean("SELECT hamming_within(0::bigint, -1, 63)"));
}

#[pg_test]
fn hq_rewrite_assumes_the_builtin_integer_operator_oids() {
    // The constants of hamming_query/rewrite.rs.
    assert!(boolean(
        "SELECT '<(int4,int4)'::regoperator = 97 AND '>(int4,int4)'::regoperator = 521
            AND '<=(int4,int4)'::regoperator = 523 AND '>=(int4,int4)'::regoperator = 525
            AND '-(int4,int4)'::regoperator = 555 AND 'int4mi'::regproc = 181
            AND 'int4larger'::regproc = 768"
    ));
}

#[pg_test]
fn hq_library_is_preloaded_for_the_planner_hook() {
    assert!(text("SHOW shared_preload_libraries").contains("neardup"));
}

/// Whether `plan` shows both the bound as written and a `hamming_within` call (in either
/// order: the planner orders quals by cost).
fn hq_kept_and_within(plan: &str) -> bool {
    plan.contains("hamming_within(") && (plan.contains("hamming(") || plan.contains("<~>"))
}

/// Index scans off, so that plans show every clause as a filter (the rewrite's text).
fn hq_index_scans(on: bool) {
    let setting = if on { "on" } else { "off" };
    Spi::run(&format!(
        "SET enable_indexscan = {setting}; SET enable_bitmapscan = {setting}"
    ))
    .unwrap();
}

#[pg_test]
fn hq_natural_forms_are_rewritten_with_the_right_bound() {
    hq_fixture();
    hq_hamming_index("fp", "simhash64_hamming_ops");
    hq_hamming_index("fpi", "int8_hamming_ops");
    hq_index_scans(false);
    let q = hq_fp(1);
    for (col, q) in [
        ("fp", format!("'{q}'::simhash64")),
        ("fpi", format!("'{q}'::simhash64::bigint")),
    ] {
        let bits = hq_bits(col, &q);
        for k in [0, 1, 3, 5, 10] {
            let expected = int(&format!("SELECT count(*) FROM hq WHERE {bits} <= {k}"));
            let (k1, km1) = (k + 1, k - 1);
            let forms = [
                (format!("hamming({col}, {q}) <= {k}"), k),
                (format!("hamming({q}, {col}) < {k1}"), k),
                (format!("{k} >= hamming({col}, {q})"), k),
                (format!("{k1} > hamming({col}, {q})"), k),
                (format!("{col} <~> {q} <= {k}"), k),
                (format!("({q} <~> {col}) < {k1}"), k),
                (format!("{k} >= {col} <~> {q}"), k),
                (format!("{k1} > {q} <~> {col}"), k),
                (format!("hamming({col}, {q}) < {k}"), km1),
            ];
            for (cond, bound) in forms {
                let query = format!("SELECT * FROM hq WHERE {cond}");
                let plan = hq_plan(&query);
                assert!(plan.contains("hamming_within("), "{cond}: {plan}");
                let shown = if bound < 0 {
                    format!("'{bound}'::integer)")
                } else {
                    format!("{bound})")
                };
                assert!(
                    plan.contains(&format!(", {shown}")),
                    "{cond}: bound {bound}: {plan}"
                );
                // The bound as written, then the call.
                assert!(hq_kept_and_within(&plan), "{cond}: {plan}");
                let want = if bound == k {
                    expected
                } else {
                    int(&format!("SELECT count(*) FROM hq WHERE {bits} <= {bound}"))
                };
                assert_eq!(
                    int(&format!("SELECT count(*) FROM hq WHERE {cond}")),
                    want,
                    "{cond}"
                );
            }
        }
        // Variants of the planted cluster are found; NULL rows are neither in nor out.
        assert!(
            int(&format!(
                "SELECT count(*) FROM hq WHERE hamming({col}, {q}) <= 5"
            )) >= 8
        );
        assert_eq!(
            int(&format!(
                "SELECT count(*) FROM hq WHERE (hamming({col}, {q}) <= 3) IS NULL"
            )),
            3
        );
        assert_eq!(
            int(&format!(
                "SELECT count(*) FROM hq WHERE NOT (hamming({col}, {q}) <= 3)"
            )),
            int(&format!("SELECT count(*) FROM hq WHERE NOT ({bits} <= 3)"))
        );
        assert_eq!(
            int(&format!(
                "SELECT count(*) FROM hq WHERE hamming({col}, NULL) <= 3"
            )),
            0
        );
    }
}

#[pg_test]
fn hq_bounds_known_only_at_run_time_are_exact() {
    hq_fixture();
    hq_hamming_index("fp", "simhash64_hamming_ops");
    let q = hq_fp(11);
    let bits = hq_bits("fp", &format!("'{q}'::simhash64"));
    Spi::run(
        "CREATE TABLE hq_k (k int);
         INSERT INTO hq_k VALUES (-2147483648), (-1), (0), (1), (2), (3), (5), (64), (65), (2147483647), (NULL);",
    )
    .unwrap();
    // A column of another table: one count per k, with the rewrite against without.
    for op in ["<", "<="] {
        let rewritten = format!(
            "SELECT string_agg(coalesce(k::text, 'null') || ':' || n, ',' ORDER BY k) FROM (
               SELECT k, (SELECT count(*) FROM hq WHERE hamming(fp, '{q}') {op} hq_k.k) n FROM hq_k) s"
        );
        let reference = format!(
            "SELECT string_agg(coalesce(k::text, 'null') || ':' || n, ',' ORDER BY k) FROM (
               SELECT k, (SELECT count(*) FROM hq WHERE {bits} {op} hq_k.k) n FROM hq_k) s"
        );
        hq_index_scans(false);
        assert!(
            hq_plan(&rewritten).contains("hamming_within("),
            "{}",
            hq_plan(&rewritten)
        );
        let reference = text(&reference);
        assert_eq!(text(&rewritten), reference, "{op}");
        hq_index_scans(true);
        assert_eq!(text(&rewritten), reference, "{op}, index scans on");
    }
    let join = format!("SELECT count(*) FROM hq JOIN hq_k ON hamming(fp, '{q}') < hq_k.k");
    hq_index_scans(false);
    let plan = hq_plan(&join);
    assert!(
        plan.contains("int4larger(") && plan.contains("hamming_within("),
        "{plan}"
    );
    let reference = int(&format!(
        "SELECT count(*) FROM hq JOIN hq_k ON {bits} < hq_k.k"
    ));
    assert_eq!(int(&join), reference);
    hq_index_scans(true);
    assert_eq!(int(&join), reference, "index scans on");
    // Parameters, in generic plans (k stays a Param) and custom ones (k becomes a Const).
    Spi::run(&format!(
        "PREPARE hq_lt(simhash64, int) AS SELECT count(*) FROM hq WHERE hamming(fp, $1) < $2;
         PREPARE hq_ref(simhash64, int) AS SELECT count(*) FROM hq WHERE {} < $2;",
        hq_bits("fp", "$1")
    ))
    .unwrap();
    for (mode, scans) in [
        ("force_generic_plan", false),
        ("force_custom_plan", false),
        ("force_generic_plan", true),
        ("force_custom_plan", true),
    ] {
        Spi::run(&format!("SET plan_cache_mode = {mode}")).unwrap();
        hq_index_scans(scans);
        for k in ["-2147483648", "-1", "0", "1", "4", "6", "64", "2147483647"] {
            assert_eq!(
                int(&format!("EXECUTE hq_lt('{q}', {k})")),
                int(&format!("EXECUTE hq_ref('{q}', {k})")),
                "{mode} index scans {scans} k = {k}"
            );
        }
        assert!(is_null(&format!(
            "SELECT (hamming('{q}'::simhash64, fp) < NULL::int) FROM hq LIMIT 1"
        )));
    }
    Spi::run("RESET plan_cache_mode; DEALLOCATE hq_lt; DEALLOCATE hq_ref").unwrap();
}

#[pg_test]
fn hq_rewrite_reaches_subqueries_ctes_sublinks_targets_and_joins() {
    hq_fixture();
    hq_hamming_index("fp", "simhash64_hamming_ops");
    hq_index_scans(false);
    let q = hq_fp(21);
    let bits = hq_bits("fp", &format!("'{q}'::simhash64"));
    let expected = int(&format!("SELECT count(*) FROM hq WHERE {bits} <= 4"));
    assert!(expected >= 5);
    let within = format!("hamming(fp, '{q}') <= 4");
    for query in [
        format!("SELECT count(*) FROM (SELECT * FROM hq WHERE {within} OFFSET 0) s"),
        format!("WITH c AS MATERIALIZED (SELECT * FROM hq WHERE {within}) SELECT count(*) FROM c"),
        format!("SELECT count(*) FROM hq h WHERE EXISTS (SELECT 1 FROM hq u WHERE u.id = h.id AND hamming(u.fp, '{q}') < 5)"),
        format!("SELECT count(*) FILTER (WHERE {within}) FROM hq"),
        format!("SELECT sum(CASE WHEN {within} THEN 1 ELSE 0 END) FROM hq"),
        format!("SELECT count(*) FROM hq WHERE id > 0 AND ({within} OR false)"),
        format!("SELECT count(*) FROM hq a JOIN hq b ON a.id = b.id AND hamming(a.fp, '{q}') <= 4"),
        format!("SELECT count(*) FROM hq a LEFT JOIN hq b ON a.id = b.id WHERE hamming(b.fp, '{q}') <= 4"),
        format!("SELECT count(*) FROM (SELECT * FROM hq WHERE id < 100000 UNION ALL SELECT * FROM hq WHERE false) s WHERE {within}"),
    ] {
        let plan = hq_plan(&query);
        assert!(hq_kept_and_within(&plan), "{query}: {plan}");
        assert_eq!(int(&query), expected, "{query}");
        hq_index_scans(true);
        assert_eq!(int(&query), expected, "{query}, index scans on");
        hq_index_scans(false);
    }
    // A view's body and a function's SQL are planned through the hook too.
    Spi::run(&format!(
        "CREATE VIEW hq_near AS SELECT * FROM hq WHERE {within}"
    ))
    .unwrap();
    assert!(hq_plan("SELECT * FROM hq_near").contains("hamming_within("));
    assert_eq!(int("SELECT count(*) FROM hq_near"), expected);

    // Self-joins on both types: every pair within 3 bits, against the bit count.
    Spi::run(
        "CREATE TABLE hq_small AS SELECT * FROM hq WHERE id <= 600 OR fp IS NULL;
         CREATE INDEX ON hq_small USING hamming (fp);
         CREATE INDEX ON hq_small USING hamming (fpi int8_hamming_ops);",
    )
    .unwrap();
    let pairs = int(&format!(
        "SELECT count(*) FROM hq_small a JOIN hq_small b ON {} <= 3",
        hq_bits("a.fp", "b.fp")
    ));
    assert!(pairs > 600, "{pairs}");
    for join in [
        "SELECT count(*) FROM hq_small a JOIN hq_small b ON hamming(a.fp, b.fp) <= 3",
        "SELECT count(*) FROM hq_small a JOIN hq_small b ON a.fp <~> b.fp < 4",
        "SELECT count(*) FROM hq_small a, hq_small b WHERE 3 >= hamming(a.fpi, b.fpi)",
        "SELECT count(*) FROM hq_small a JOIN hq_small b ON 4 > b.fpi <~> a.fpi",
    ] {
        assert!(hq_plan(join).contains("hamming_within("), "{join}");
        assert_eq!(int(join), pairs, "{join}");
        hq_index_scans(true);
        assert_eq!(int(join), pairs, "{join}, index scans on");
        hq_index_scans(false);
    }
}

#[pg_test]
fn hq_other_comparisons_are_left_alone() {
    hq_fixture();
    hq_hamming_index("fp", "simhash64_hamming_ops");
    for query in [
        "SELECT * FROM hq WHERE hamming(fp, '0123456789abcdef') >= 3",
        "SELECT * FROM hq WHERE 3 <= hamming(fp, '0123456789abcdef')",
        "SELECT * FROM hq WHERE hamming(fp, '0123456789abcdef') = 3",
        "SELECT * FROM hq WHERE hamming(fp, '0123456789abcdef') + 0 <= 3",
        "SELECT * FROM hq WHERE hamming(fp, '0123456789abcdef')::bigint <= 3::bigint",
        "SELECT * FROM hq WHERE bit_count(fp) <= 3",
        "SELECT hamming(fp, '0123456789abcdef') FROM hq ORDER BY 1 LIMIT 3",
    ] {
        assert!(!hq_plan(query).contains("hamming_within("), "{query}");
    }
}

#[pg_test]
fn hq_selectivity_of_small_and_large_radii() {
    Spi::run(
        "SELECT setseed(0.3);
         CREATE TABLE hq_sel AS SELECT g AS id,
             (((random() * 2^32)::bigint << 32) # (random() * 2^32)::bigint)::simhash64 AS fp
         FROM generate_series(1, 10000) g;
         ALTER TABLE hq_sel ADD COLUMN fpi bigint; UPDATE hq_sel SET fpi = fp::bigint;
         CREATE INDEX ON hq_sel USING hamming (fp);
         CREATE INDEX ON hq_sel USING hamming (fpi int8_hamming_ops); ANALYZE hq_sel;",
    )
    .unwrap();
    let q = "'0123456789abcdef'";
    for small in [
        format!("hamming_within(fp, {q}, 3)"),
        format!("hamming_within(fpi, {q}::simhash64::bigint, 3)"),
        format!("hamming(fp, {q}) <= 3"),
        format!("{q} <~> fp < 4"),
        format!("fp <@ hamming_ball({q}::simhash64, 3)"),
        format!("hamming_ball({q}::simhash64, 3) @> fp"),
        format!("fp <@ '({}, 3)'", &q[1..17]),
        format!("fpi <@ hamming_ball({q}::simhash64::bigint, 3)"),
    ] {
        let rows = hq_rows(&format!("SELECT * FROM hq_sel WHERE {small}"));
        assert!(rows < 100.0, "{small}: {rows}");
    }
    for large in [
        format!("hamming_within(fp, {q}, 40)"),
        format!("fp <@ hamming_ball({q}::simhash64, 40)"),
        format!("hamming_ball({q}::simhash64::bigint, 40) @> fpi"),
    ] {
        let rows = hq_rows(&format!("SELECT * FROM hq_sel WHERE {large}"));
        assert!(rows > 5000.0, "{large}: {rows}");
    }
    // The bound kept beside the rewrite caps the estimate at its own, PostgreSQL's default
    // for an inequality on an expression without statistics (1/3); see rewrite.rs.
    let rows = hq_rows(&format!(
        "SELECT * FROM hq_sel WHERE hamming(fpi, {q}::simhash64::bigint) <= 40"
    ));
    assert!((3000.0..=3400.0).contains(&rows), "{rows}");
    assert!(
        hq_rows(&format!(
            "SELECT * FROM hq_sel WHERE hamming_within(fp, {q}, 64)"
        )) > 9999.0
    );
    assert!(
        hq_rows(&format!(
            "SELECT * FROM hq_sel WHERE hamming_within(fp, {q}, -1)"
        )) <= 1.0
    );
    // Joins: about one match per row at k = 3 (duplicates floor), most pairs at k = 40.
    let join = |k: i32| {
        hq_rows(&format!(
            "SELECT * FROM hq_sel a JOIN hq_sel b ON hamming(a.fp, b.fp) <= {k}"
        ))
    };
    assert!(join(3) < 100_000.0, "{}", join(3));
    assert!(join(40) > 30_000_000.0, "{}", join(40)); // the kept bound's 1/3, as above
    let ball_join =
        hq_rows("SELECT * FROM hq_sel a JOIN hq_sel b ON a.fp <@ hamming_ball(b.fp, 3)");
    assert!(ball_join < 100_000.0, "{ball_join}");
}

#[pg_test]
fn hq_indexes_of_other_access_methods_are_not_given_ball_conditions() {
    hq_fixture();
    Spi::run("CREATE INDEX hq_btree ON hq (fp); SET enable_seqscan = off").unwrap();
    let q = hq_fp(31);
    let expected = int(&format!(
        "SELECT count(*) FROM hq WHERE {} <= 3",
        hq_bits("fp", &format!("'{q}'::simhash64"))
    ));
    for cond in [
        format!("hamming(fp, '{q}') <= 3"),
        format!("hamming_within(fp, '{q}', 3)"),
    ] {
        let query = format!("SELECT count(*) FROM hq WHERE {cond}");
        let plan = hq_plan(&query);
        assert!(!plan.contains("<@"), "{plan}");
        assert_eq!(int(&query), expected, "{cond}");
    }
}

/// Creates the `hamming` index on `hq.{col}` with operator class `{opclass}`.
fn hq_hamming_index(col: &str, opclass: &str) {
    Spi::run(&format!(
        "CREATE INDEX hq_{col}_hamming ON hq USING hamming ({col} {opclass}); ANALYZE hq"
    ))
    .unwrap();
}

#[pg_test]
fn hq_hamming_index_serves_every_natural_form() {
    hq_fixture();
    hq_hamming_index("fp", "simhash64_hamming_ops");
    hq_hamming_index("fpi", "int8_hamming_ops");
    Spi::run("SET enable_seqscan = off").unwrap();
    let q = hq_fp(41);
    for (col, q) in [
        ("fp", format!("'{q}'::simhash64")),
        ("fpi", format!("'{q}'::simhash64::bigint")),
    ] {
        let bits = hq_bits(col, &q);
        for k in [0, 3, 6] {
            let expected = int(&format!("SELECT count(*) FROM hq WHERE {bits} <= {k}"));
            let k1 = k + 1;
            for cond in [
                format!("hamming({col}, {q}) <= {k}"),
                format!("{k1} > {q} <~> {col}"),
                format!("hamming_within({q}, {col}, {k})"),
                format!("{col} <@ hamming_ball({q}, {k})"),
            ] {
                let query = format!("SELECT count(*) FROM hq WHERE {cond}");
                let plan = hq_plan(&query);
                assert!(
                    plan.contains(&format!("hq_{col}_hamming")),
                    "{cond}: {plan}"
                );
                assert!(
                    plan.contains(&format!("Index Cond: (hq.{col} <@ ")),
                    "{cond}: {plan}"
                );
                assert_eq!(int(&query), expected, "{cond}");
            }
        }
    }
    // Exact for a constant k: no recheck of the call (the bound as written is a filter).
    let plan = hq_plan(&format!("SELECT * FROM hq WHERE hamming(fp, '{q}') <= 3"));
    assert!(
        !plan.contains("hamming_within(") && !plan.contains("Recheck"),
        "{plan}"
    );
    assert!(
        plan.contains(&format!("Filter: (hamming(hq.fp, '{q}'::simhash64) <= 3)")),
        "{plan}"
    );
    // A negative constant k needs no index: the call is false for every row.
    assert_eq!(
        int(&format!(
            "SELECT count(*) FROM hq WHERE hamming_within(fp, '{q}', -1)"
        )),
        0
    );
    // k known only at run time: clamped to >= 0 in the ball, then rechecked.
    Spi::run(&format!(
        "SET plan_cache_mode = force_generic_plan;
         PREPARE hq_ix(int) AS SELECT count(*) FROM hq WHERE hamming(fp, '{q}') <= $1;"
    ))
    .unwrap();
    for k in [-2147483648, -1, 0, 3, 70] {
        let expected = int(&format!(
            "SELECT count(*) FROM hq WHERE {} <= {k}",
            hq_bits("fp", &format!("'{q}'::simhash64"))
        ));
        assert_eq!(int(&format!("EXECUTE hq_ix({k})")), expected, "k = {k}");
    }
    assert!(hq_plan("EXECUTE hq_ix(3)").contains("int4larger($1, 0)"));
    Spi::run("DEALLOCATE hq_ix; RESET plan_cache_mode").unwrap();
    // A join probes the index once per outer row (parameterized by the outer fingerprint).
    Spi::run("CREATE TABLE hq_probe AS SELECT id, fp FROM hq WHERE id % 97 = 0").unwrap();
    let join = "SELECT count(*) FROM hq_probe p JOIN hq ON hamming(hq.fp, p.fp) <= 3";
    let plan = hq_plan(join);
    assert!(
        plan.contains("hq_fp_hamming") && plan.contains("(hq.fp <@ hamming_ball(p.fp, 3))"),
        "{plan}"
    );
    assert_eq!(
        int(join),
        int(&format!(
            "SELECT count(*) FROM hq_probe p JOIN hq ON {} <= 3",
            hq_bits("hq.fp", "p.fp")
        ))
    );
    // Both arguments from the indexed table: no index condition possible.
    let plan = hq_plan("SELECT * FROM hq WHERE hamming_within(fp, fp, 3)");
    assert!(!plan.contains("<@"), "{plan}");
}

#[pg_test]
fn hq_bounds_over_a_grouped_distance_keep_their_meaning() {
    hq_fixture();
    hq_hamming_index("fp", "simhash64_hamming_ops");
    let q = hq_fp(51);
    let d = format!("hamming(fp, '{q}')");
    // Each query against the same one with `+ 0`, which the hook cannot touch. ROLLUP's total
    // row has a NULL distance, so the bound must stay NULL there.
    for query in [
        format!("SELECT {d} <= 30 AS near, count(*) FROM hq GROUP BY ROLLUP ({d})"),
        format!("SELECT {d} AS dist, count(*) FROM hq GROUP BY ROLLUP ({d}) HAVING {d} < 30 OR {d} IS NULL"),
        format!("SELECT fp, (SELECT {d} <= 30) FROM hq GROUP BY CUBE (fp)"),
        format!("SELECT {d} <= 30, count(*) FROM hq GROUP BY {d}"),
        format!("SELECT {d} <= 30 AS near, count(*) FROM hq WHERE {d} <= 34 GROUP BY ROLLUP ({d} <= 30)"),
    ] {
        let reference = query.replace(&d, &format!("({d} + 0)"));
        let answer = |sql: &str| {
            text(&format!(
                "SELECT string_agg(r::text, ';' ORDER BY r::text) FROM ({sql}) r"
            ))
        };
        assert_eq!(answer(&query), answer(&reference), "{query}");
    }
    // Below the grouping (WHERE), the bound is still rewritten.
    hq_index_scans(false);
    let plan = hq_plan(&format!(
        "SELECT {d}, count(*) FROM hq WHERE {d} <= 3 GROUP BY ROLLUP ({d})"
    ));
    assert!(plan.contains("hamming_within("), "{plan}");
}

#[pg_test]
fn hq_index_search_assumes_the_pg_inherits_oids() {
    // The constants of hamming_query/catalog.rs.
    assert!(boolean(
        "SELECT 'pg_inherits'::regclass = 2611 AND 'pg_inherits_parent_index'::regclass = 2187
            AND (SELECT attnum FROM pg_attribute
                 WHERE attrelid = 'pg_inherits'::regclass AND attname = 'inhparent') = 2
            AND (SELECT attnum FROM pg_attribute
                 WHERE attrelid = 'pg_inherits'::regclass AND attname = 'inhrelid') = 1"
    ));
}

/// Adds 300 rows to `hq` whose fingerprints have 0 to 6 bits set, so that bounds on
/// `hamming(fpi, 0::bigint)` select some rows; `fp = fpi` for them too.
fn hq_near_zero() {
    Spi::run(
        "INSERT INTO hq (fpi)
         SELECT (SELECT coalesce(bit_or(1::bigint << ((g * 13 + i * 17) % 63)), 0)
                 FROM generate_series(1, g % 7) i)
         FROM generate_series(1, 300) g;
         UPDATE hq SET fp = fpi::simhash64 WHERE fp IS NULL AND fpi IS NOT NULL;
         ANALYZE hq;",
    )
    .unwrap();
}

/// `string_agg` of the ids `hq` rows `cond` selects, the comparable answer of a query.
fn hq_ids(table: &str, cond: &str) -> String {
    text(&format!(
        "SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM {table} WHERE {cond}"
    ))
}

#[pg_test]
fn hq_rewrite_only_where_a_hamming_index_is() {
    hq_fixture();
    hq_index_scans(false);
    let q = hq_fp(61);
    let expected = hq_ids(
        "hq",
        &format!("{} <= 3", hq_bits("fp", &format!("'{q}'::simhash64"))),
    );
    assert!(expected.contains(','), "{expected}");
    let cond = format!("hamming(fp, '{q}') <= 3");
    // The plan of `cond` on `table`: as written, or rewritten; the answer is checked too.
    let planned = |table: &str, rewritten: bool| {
        let plan = hq_plan(&format!("SELECT id FROM {table} WHERE {cond}"));
        assert_eq!(hq_ids(table, &cond), expected, "{table}");
        let written = format!("'{q}'::simhash64) <= 3)");
        let within = format!("'{q}'::simhash64, 3)");
        assert!(plan.contains(&written), "{table}: {plan}");
        assert_eq!(
            plan.contains(&format!("fp, {within}")),
            rewritten,
            "{table}: {plan}"
        );
        assert_eq!(
            plan.contains("hamming_within("),
            rewritten,
            "{table}: {plan}"
        );
    };
    let as_written = |table: &str| planned(table, false);
    let rewritten = |table: &str| planned(table, true);
    as_written("hq");
    // Neither an index of our access method on another column nor a btree on this one helps.
    hq_hamming_index("fpi", "int8_hamming_ops");
    Spi::run("CREATE INDEX hq_fp_btree ON hq (fp)").unwrap();
    as_written("hq");
    // Creating and dropping the index is seen at once (relcache invalidation).
    hq_hamming_index("fp", "simhash64_hamming_ops");
    rewritten("hq");
    Spi::run("DROP INDEX hq_fp_hamming").unwrap();
    as_written("hq");
    // Views and subqueries are seen through, to the table under them.
    Spi::run(
        "CREATE VIEW hq_view AS SELECT id, fp FROM hq;
         CREATE VIEW hq_union AS SELECT id, fp FROM hq WHERE id <= 5000
                           UNION ALL SELECT id, fp FROM hq WHERE id > 5000;",
    )
    .unwrap();
    as_written("hq_view");
    as_written("hq_union");
    hq_hamming_index("fp", "simhash64_hamming_ops");
    rewritten("hq_view");
    rewritten("hq_union");
    // A partitioned table: an index on one partition only, where the column has another
    // number, is enough.
    Spi::run(
        "CREATE TABLE hq_parts (id int, fp simhash64) PARTITION BY RANGE (id);
         CREATE TABLE hq_part1 PARTITION OF hq_parts FOR VALUES FROM (MINVALUE) TO (5000);
         CREATE TABLE hq_part2 (fp simhash64, id int);
         ALTER TABLE hq_parts ATTACH PARTITION hq_part2 FOR VALUES FROM (5000) TO (MAXVALUE);
         INSERT INTO hq_parts SELECT id, fp FROM hq;",
    )
    .unwrap();
    as_written("hq_parts");
    Spi::run("CREATE INDEX hq_part2_fp ON hq_part2 USING hamming (fp)").unwrap();
    rewritten("hq_parts");
    // Inheritance: an index on a grandchild.
    Spi::run(
        "CREATE TABLE hq_base (id int, fp simhash64);
         CREATE TABLE hq_kid () INHERITS (hq_base);
         CREATE TABLE hq_grandkid (extra int) INHERITS (hq_kid);
         INSERT INTO hq_base SELECT id, fp FROM hq WHERE id % 3 = 0;
         INSERT INTO hq_kid SELECT id, fp FROM hq WHERE id % 3 = 1;
         INSERT INTO hq_grandkid SELECT id, fp, 0 FROM hq WHERE id % 3 = 2 OR id IS NULL;",
    )
    .unwrap();
    as_written("hq_base");
    Spi::run("CREATE INDEX ON hq_grandkid USING hamming (fp)").unwrap();
    rewritten("hq_base");
}

/// The distance to 0 by bit count, for bounds on `hamming(fpi, 0::bigint)`.
fn hq_bits0() -> String {
    hq_bits("fpi", "0")
}

#[pg_test]
fn hq_btree_expression_and_partial_indexes_on_the_distance_are_still_used() {
    hq_fixture();
    hq_near_zero();
    Spi::run(
        "CREATE INDEX hq_dist ON hq (hamming(fpi, 0::bigint));
         CREATE INDEX hq_near0 ON hq (id) WHERE hamming(fpi, 0::bigint) <= 3;
         ANALYZE hq; SET enable_seqscan = off; SET enable_sort = off;",
    )
    .unwrap();
    let bits = hq_bits0();
    // Rows come in the btree's order only from the btree: the plan must use it.
    let ordered = "SELECT string_agg(id::text, ',' ORDER BY hamming(fpi, 0::bigint), id)
                   FROM (SELECT id, fpi FROM hq WHERE hamming(fpi, 0::bigint) <= 3
                         ORDER BY hamming(fpi, 0::bigint) OFFSET 0) s";
    let ordered_expected = text(&format!(
        "SELECT string_agg(id::text, ',' ORDER BY {bits}, id) FROM hq WHERE {bits} <= 3"
    ));
    assert!(
        ordered_expected.matches(',').count() > 50,
        "{ordered_expected}"
    );
    // The partial index is the only one that gives id order without scanning every row.
    let partial = "SELECT string_agg(id::text, ',') FROM
                   (SELECT id FROM hq WHERE hamming(fpi, 0::bigint) <= 3 ORDER BY id OFFSET 0) s";
    let partial_expected = text(&format!(
        "SELECT string_agg(id::text, ',' ORDER BY id) FROM hq WHERE {bits} <= 3"
    ));
    for with_hamming_index in [false, true] {
        if with_hamming_index {
            hq_hamming_index("fpi", "int8_hamming_ops");
        }
        let plan = hq_plan(ordered);
        assert!(
            plan.contains("Index Scan using hq_dist on public.hq")
                && plan.contains("Index Cond: (hamming(hq.fpi, '0'::bigint) <= 3)"),
            "hamming index {with_hamming_index}: {plan}"
        );
        assert_eq!(
            hq_plan(ordered).contains("hamming_within("),
            with_hamming_index
        );
        // The btree's answer of the range is exact, but check against a brute-force count.
        let row_ids: String = text(ordered);
        let mut got: Vec<&str> = row_ids.split(',').collect();
        let mut want: Vec<&str> = ordered_expected.split(',').collect();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want, "hamming index {with_hamming_index}");
        let plan = hq_plan(partial);
        assert!(
            plan.contains("Scan using hq_near0 on public.hq"),
            "hamming index {with_hamming_index}: {plan}"
        );
        assert_eq!(
            text(partial),
            partial_expected,
            "hamming index {with_hamming_index}"
        );
    }
}

#[pg_test]
fn hq_constraint_exclusion_by_a_check_on_the_distance() {
    hq_fixture();
    hq_near_zero();
    let bits = hq_bits0();
    Spi::run(&format!(
        "CREATE TABLE hq_far (id int, fpi bigint CHECK (hamming(fpi, 0::bigint) > 10));
         INSERT INTO hq_far SELECT id, fpi FROM hq WHERE {bits} > 10;
         ANALYZE hq_far; SET constraint_exclusion = on;"
    ))
    .unwrap();
    for with_hamming_index in [false, true] {
        if with_hamming_index {
            Spi::run("CREATE INDEX ON hq_far USING hamming (fpi int8_hamming_ops)").unwrap();
        }
        let query = "SELECT count(*) FROM hq_far WHERE hamming(fpi, 0::bigint) <= 3";
        let plan = hq_plan(query);
        assert!(
            plan.contains("One-Time Filter: false") && !plan.contains("Scan"),
            "hamming index {with_hamming_index}: {plan}"
        );
        assert_eq!(int(query), 0);
        // Not excluded where the CHECK does not refute the bound.
        let query = "SELECT count(*) FROM hq_far WHERE hamming(fpi, 0::bigint) <= 20";
        assert!(hq_plan(query).contains("hq_far"));
        let expected = int(&format!("SELECT count(*) FROM hq_far WHERE {bits} <= 20"));
        assert!(expected > 0);
        assert_eq!(int(query), expected, "hamming index {with_hamming_index}");
    }
}

#[pg_test]
fn hq_partitions_by_the_distance_are_pruned() {
    hq_fixture();
    hq_near_zero();
    let bits = hq_bits0();
    // NULL distances would need a default partition; they are left out.
    Spi::run(
        "CREATE TABLE hq_byd (id int, fpi bigint) PARTITION BY RANGE (hamming(fpi, 0::bigint));
         CREATE TABLE hq_byd_near PARTITION OF hq_byd FOR VALUES FROM (0) TO (11);
         CREATE TABLE hq_byd_far PARTITION OF hq_byd FOR VALUES FROM (11) TO (65);
         INSERT INTO hq_byd SELECT id, fpi FROM hq WHERE fpi IS NOT NULL;
         ANALYZE hq_byd;",
    )
    .unwrap();
    for with_hamming_index in [false, true] {
        if with_hamming_index {
            // A partitioned index: on the parent and, through it, on every partition.
            Spi::run("CREATE INDEX ON hq_byd USING hamming (fpi int8_hamming_ops)").unwrap();
        }
        for k in [3, 10] {
            let query = format!("SELECT count(*) FROM hq_byd WHERE hamming(fpi, 0::bigint) <= {k}");
            let plan = hq_plan(&query);
            assert!(
                plan.contains("hq_byd_near") && !plan.contains("hq_byd_far"),
                "hamming index {with_hamming_index}: {plan}"
            );
            assert_eq!(
                plan.contains("hamming_within("),
                with_hamming_index,
                "{plan}"
            );
            assert_eq!(
                int(&query),
                int(&format!("SELECT count(*) FROM hq WHERE {bits} <= {k}")),
                "hamming index {with_hamming_index}"
            );
        }
        // At run time too, for a parameter of a generic plan.
        Spi::run(
            "SET plan_cache_mode = force_generic_plan;
             PREPARE hq_prune(int) AS SELECT count(*) FROM hq_byd WHERE hamming(fpi, 0::bigint) <= $1;",
        )
        .unwrap();
        assert!(
            hq_plan("EXECUTE hq_prune(3)").contains("Subplans Removed: 1"),
            "{}",
            hq_plan("EXECUTE hq_prune(3)")
        );
        for k in [-1, 3, 20] {
            assert_eq!(
                int(&format!("EXECUTE hq_prune({k})")),
                int(&format!("SELECT count(*) FROM hq WHERE {bits} <= {k}")),
                "hamming index {with_hamming_index}, k = {k}"
            );
        }
        Spi::run("DEALLOCATE hq_prune; RESET plan_cache_mode").unwrap();
    }
}

#[pg_test]
fn hq_negative_radius_from_a_stable_expression_selects_nothing() {
    hq_fixture();
    let q = hq_fp(71);
    let bits = hq_bits("fp", "$1");
    Spi::run(&format!(
        "SET my.k = '3';
         PREPARE hq_le(simhash64) AS
             SELECT count(*) FROM hq WHERE hamming(fp, $1) <= current_setting('my.k')::int;
         PREPARE hq_lt(simhash64) AS
             SELECT count(*) FROM hq WHERE $1 <~> fp < current_setting('my.k')::int;
         PREPARE hq_within(simhash64) AS
             SELECT count(*) FROM hq WHERE hamming_within(fp, $1, current_setting('my.k')::int);
         PREPARE hq_ball(simhash64) AS
             SELECT count(*) FROM hq WHERE fp <@ hamming_ball($1, current_setting('my.k')::int);
         PREPARE hq_le_ref(simhash64) AS
             SELECT count(*) FROM hq WHERE {bits} <= current_setting('my.k')::int;
         PREPARE hq_lt_ref(simhash64) AS
             SELECT count(*) FROM hq WHERE {bits} < current_setting('my.k')::int;"
    ))
    .unwrap();
    for with_hamming_index in [false, true] {
        if with_hamming_index {
            hq_hamming_index("fp", "simhash64_hamming_ops");
            Spi::run("SET enable_seqscan = off").unwrap();
        }
        for mode in ["force_generic_plan", "force_custom_plan"] {
            Spi::run(&format!("SET plan_cache_mode = {mode}")).unwrap();
            // The first execution plans with k = 3; then k changes under the plan.
            for k in ["3", "-1", "0", "5", "-2147483648", "64", "3"] {
                Spi::run(&format!("SET my.k = '{k}'")).unwrap();
                let what = format!("index {with_hamming_index}, {mode}, k = {k}");
                let le = int(&format!("EXECUTE hq_le_ref('{q}')"));
                assert_eq!(int(&format!("EXECUTE hq_le('{q}')")), le, "{what}");
                assert_eq!(int(&format!("EXECUTE hq_within('{q}')")), le, "{what}");
                let lt = int(&format!("EXECUTE hq_lt_ref('{q}')"));
                assert_eq!(int(&format!("EXECUTE hq_lt('{q}')")), lt, "{what}");
                // The ball's own constructor refuses a negative radius, however it comes.
                if k.starts_with('-') {
                    let state = sqlstate(&format!("EXECUTE hq_ball('{q}')"));
                    assert_eq!(state.as_deref(), Some("22023"), "{what}");
                } else {
                    assert_eq!(int(&format!("EXECUTE hq_ball('{q}')")), le, "{what}");
                }
            }
            if with_hamming_index {
                let plan = hq_plan(&format!("EXECUTE hq_le('{q}')"));
                assert!(
                    plan.contains("int4larger((current_setting('my.k'::text))::integer, 0)"),
                    "{mode}: {plan}"
                );
            }
        }
    }
    Spi::run("RESET plan_cache_mode; RESET my.k").unwrap();
}
