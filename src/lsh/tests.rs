// SQL tests of lsh_bands, lsh_params, `&&` and its GIN operator class, and minhash_pairs.

/// 400 documents: families of near-copies with 0 to 60 of 200 words replaced (so the
/// resemblance within a family spreads over the whole range), unrelated texts, empty texts
/// and exact copies; `mh` is the sketch of 128 minvalues of 3-word shingles.
fn create_lsh_docs() {
    create_text_functions();
    Spi::run(
        "SELECT setseed(0.25);
         CREATE FUNCTION mutated(seed int, changes int) RETURNS text LANGUAGE sql AS $$
             SELECT string_agg(CASE WHEN random() < changes / 200.0 THEN 'x' || (random() * 1e6)::int
                                    ELSE substr(md5((seed * 100000 + i)::text), 1, 3 + i % 7) END, ' ' ORDER BY i)
             FROM generate_series(1, 200) i $$;
         CREATE TABLE lsh_docs (id bigint PRIMARY KEY, body text, mh minhash_sketch);
         INSERT INTO lsh_docs (id, body) SELECT g, CASE
                 WHEN g % 25 = 0 THEN ''
                 WHEN g % 7 = 0 THEN words(200, g)
                 WHEN g % 11 = 0 THEN words(200, 1)
                 ELSE mutated(g % 20, (g * 37) % 61) END
             FROM generate_series(1, 400) g;
         UPDATE lsh_docs SET mh = minhash(body, num_hashes => 128, shingle => 3);",
    )
    .unwrap();
}

#[pg_test]
fn lsh_bands_forms_params_and_supershingles() {
    create_text_functions();
    // Supershingles are the 6 × 14 banding of the default sketch.
    assert!(boolean(
        "SELECT supershingles(words(300, 4))::lsh_bands::text = lsh_bands(minhash(words(300, 4)), 6, 14)::text"
    ));
    assert!(boolean(
        "SELECT lsh_bands(minhash(words(300, 4)), 6, 14)::text LIKE 'b6r14:%'
            AND lsh_bands(minhash(words(300, 4)), 6, 14)::text::lsh_bands::text
                = lsh_bands(minhash(words(300, 4)), 6, 14)::text"
    ));
    // lsh_params chooses as datasketch 2.0 does (MinHashLSH(threshold=0.8, num_perm=128)
    // is 9 bands of 13 rows) and reports the error areas.
    assert_eq!(text("SELECT bands || 'x' || rows FROM lsh_params(0.8, 128)"), "9x13");
    assert_eq!(text("SELECT bands || 'x' || rows FROM lsh_params(0.5, 84)"), "16x5");
    assert!(boolean(
        "SELECT round(false_positive::numeric, 4) = 0.0253 AND round(false_negative::numeric, 4) = 0.0333
         FROM lsh_params(0.8, 128)"
    ));
    // lsh_bands(sketch, threshold) weighs false negatives 9:1: 0.9 on 84 minvalues is Alg. B.
    assert_eq!(text("SELECT bands || 'x' || rows FROM lsh_params(0.9, 84, 0.1, 0.9)"), "6x14");
    assert!(boolean(
        "SELECT lsh_bands(minhash(words(50, 2)), 0.9)::text = lsh_bands(minhash(words(50, 2)), 6, 14)::text"
    ));
    assert!(boolean("SELECT lsh_bands(minhash(words(50, 2)), 0.9) && lsh_bands(minhash(words(50, 2)), 0.9)"));
    assert!(!boolean("SELECT lsh_bands(minhash(words(50, 2)), 0.9) && lsh_bands(minhash(words(50, 3)), 0.9)"));
    for (bad, state) in [
        ("SELECT lsh_bands(minhash('x'), 9, 10)", "22023"),
        ("SELECT lsh_bands(minhash('x'), 0, 10)", "22023"),
        ("SELECT lsh_bands(minhash('x'), 1.5)", "22023"),
        ("SELECT lsh_bands(minhash('x'), 'NaN'::float8)", "22023"),
        ("SELECT * FROM lsh_params(0)", "22023"),
        ("SELECT * FROM lsh_params(0.8, 2000)", "22023"),
        ("SELECT * FROM lsh_params(0.8, 84, -1, 1)", "22023"),
        ("SELECT 'b1r1:zz'::lsh_bands", "22P02"),
        ("SELECT 'b2r2:0000000000000000:0000000000000000'::lsh_bands", "22P02"),
    ] {
        assert_eq!(sqlstate(bad).as_deref(), Some(state), "{bad}");
    }
    assert!(is_null("SELECT lsh_bands(NULL::minhash_sketch, 0.8)"));
}

#[pg_test]
fn gin_index_finds_exactly_the_rows_sharing_a_band() {
    create_lsh_docs();
    // A new table: an index built after an UPDATE in the same transaction would not be
    // usable by it (broken HOT chains set indcheckxmin).
    Spi::run(
        "CREATE TABLE banded AS
             SELECT id, mh, CASE WHEN id % 50 <> 1 THEN lsh_bands(mh, 0.7) END AS bands FROM lsh_docs;
         CREATE INDEX banded_bands ON banded USING gin (bands);
         ANALYZE banded;",
    )
    .unwrap();
    let join = "SELECT count(*) || ':' || coalesce(sum(a.id * 7 + b.id), 0)
                FROM banded a JOIN banded b ON a.bands && b.bands AND jaccard(a.mh, b.mh) >= 0.7 AND a.id < b.id";
    let brute = text(&join.replace("a.bands && b.bands", "lsh_share_band(a.bands, b.bands)"));
    Spi::run("SET enable_seqscan = off").unwrap();
    let plan = Spi::explain(join).unwrap().0.to_string();
    assert!(plan.contains("banded_bands"), "{plan}");
    assert_eq!(text(join), brute);
    // minhash_pairs finds the same verified pairs (its default banding is lsh_bands's).
    let batch = text(
        "SELECT count(*) || ':' || coalesce(sum(a * 7 + b), 0)
         FROM minhash_pairs('lsh_docs', 'id', 'mh', 0.7) WHERE a % 50 <> 1 AND b % 50 <> 1",
    );
    assert_eq!(batch, brute);
    let pairs: i64 = brute.split(':').next().unwrap().parse().unwrap();
    assert!(pairs > 300, "{pairs}");
}

#[pg_test]
fn minhash_pairs_are_the_verified_candidates_each_once() {
    create_lsh_docs();
    for (threshold, bands, rows) in [(0.5, 25, 5), (0.8, 9, 13), (0.95, 4, 2)] {
        // Brute force: every pair sharing a band of the given banding, with the estimate.
        let brute = text(&format!(
            "SELECT count(*) || ':' || coalesce(sum(a.id * 7 + b.id), 0) || ':' || coalesce(round(sum(jaccard(a.mh, b.mh))::numeric, 6), 0)
             FROM lsh_docs a JOIN lsh_docs b ON a.id < b.id
                 AND lsh_bands(a.mh, {bands}, {rows}) && lsh_bands(b.mh, {bands}, {rows})
                 AND jaccard(a.mh, b.mh) >= {threshold}"
        ));
        let batch = text(&format!(
            "SELECT count(*) || ':' || coalesce(sum(a * 7 + b), 0) || ':' || coalesce(round(sum(jaccard)::numeric, 6), 0)
             FROM minhash_pairs('lsh_docs', 'id', 'mh', {threshold}, bands => {bands}, rows => {rows})
             WHERE a < b"
        ));
        assert_eq!(batch, brute, "threshold {threshold}");
        let pairs: i64 = brute.split(':').next().unwrap().parse().unwrap();
        assert!(pairs > 100, "threshold {threshold}: {pairs}");
    }
    // Exact copies and the empty texts: every pair of each group, once.
    assert_eq!(
        int("SELECT count(*) FROM minhash_pairs('lsh_docs', 'id', 'mh', 1.0) p
             JOIN lsh_docs a ON a.id = p.a JOIN lsh_docs b ON b.id = p.b WHERE a.body = b.body"),
        int("SELECT count(*) FROM lsh_docs a JOIN lsh_docs b ON a.body = b.body AND a.id < b.id")
    );
    assert_eq!(int("SELECT count(*) FROM minhash_pairs(NULL, 'id', 'mh', 0.8)"), 0);
}

#[pg_test]
fn band_keys_as_bigint_and_the_first_shared_key() {
    create_lsh_docs();
    // the keys are the text form's, band 0 first, as bigint (their 64 bits)
    assert_eq!(
        int("SELECT count(*) FROM lsh_docs WHERE lsh_band_keys(lsh_bands(mh, 9, 13))
             IS DISTINCT FROM (SELECT array_agg(('x' || k)::bit(64)::bigint ORDER BY n)
                               FROM unnest((string_to_array(lsh_bands(mh, 9, 13)::text, ':'))[2:]) WITH ORDINALITY u(k, n))"),
        0
    );
    assert_eq!(int("SELECT cardinality(lsh_band_keys(lsh_bands(mh, 9, 13))) FROM lsh_docs WHERE id = 1"), 9);
    // the first shared key: NULL exactly when the bands share none, else the key of the
    // lowest band both have, which each has at that position
    assert_eq!(
        int("WITH b AS (SELECT id, lsh_bands(mh, 9, 13) AS bands, lsh_band_keys(lsh_bands(mh, 9, 13)) AS keys FROM lsh_docs)
             SELECT count(*) FROM b x JOIN b y ON x.id < y.id
             WHERE (lsh_first_shared_key(x.bands, y.bands) IS NOT NULL) <> (x.bands && y.bands)
                OR lsh_first_shared_key(x.bands, y.bands) IS DISTINCT FROM
                   (SELECT x.keys[i] FROM generate_series(1, 9) i WHERE x.keys[i] = y.keys[i] ORDER BY i LIMIT 1)"),
        0
    );
    assert!(int("SELECT count(*) FROM lsh_docs x JOIN lsh_docs y ON x.id < y.id
                 WHERE lsh_first_shared_key(lsh_bands(x.mh, 9, 13), lsh_bands(y.mh, 9, 13)) IS NOT NULL") > 100);
    assert!(is_null("SELECT lsh_band_keys(NULL)"));
    assert!(is_null("SELECT lsh_first_shared_key(NULL, lsh_bands(minhash('x'), 1, 1))"));
}

/// Without Citus (no pg_dist_partition), minhash_pairs_distributed is minhash_pairs: the
/// same rows at a threshold and with a banding, nothing for NULL arguments, its errors.
#[pg_test]
fn minhash_pairs_distributed_is_minhash_pairs_off_citus() {
    create_lsh_docs();
    for args in ["0.5", "0.8, 9, 13"] {
        assert_eq!(
            text(&format!("SELECT count(*) || ':' || md5(string_agg(a || ':' || b || ':' || jaccard, ',' ORDER BY a, b))
                           FROM minhash_pairs_distributed('lsh_docs', 'id', 'mh', {args})")),
            text(&format!("SELECT count(*) || ':' || md5(string_agg(a || ':' || b || ':' || jaccard, ',' ORDER BY a, b))
                           FROM minhash_pairs('lsh_docs', 'id', 'mh', {args})")),
            "{args}"
        );
    }
    assert!(int("SELECT count(*) FROM minhash_pairs_distributed('lsh_docs', 'id', 'mh', 0.5)") > 100);
    assert_eq!(int("SELECT count(*) FROM minhash_pairs_distributed(NULL, 'id', 'mh', 0.8)"), 0);
    assert_eq!(int("SELECT count(*) FROM minhash_pairs_distributed('lsh_docs', 'id', 'mh', NULL)"), 0);
    assert_eq!(
        sqlstate("SELECT * FROM minhash_pairs_distributed('lsh_docs', 'id', 'mh', 1.5)").as_deref(),
        Some("22023")
    );
}

#[pg_test]
fn minhash_pairs_errors_and_limits() {
    create_lsh_docs();
    Spi::run(
        "CREATE TABLE mixed (id bigint, mh minhash_sketch);
         INSERT INTO mixed VALUES (1, minhash('a b c')), (2, minhash('a b c', num_hashes => 100)), (3, NULL);
         CREATE TABLE nulls (id bigint, mh minhash_sketch);
         INSERT INTO nulls VALUES (NULL, minhash('a b c'));
         CREATE TABLE empty (id bigint, mh minhash_sketch);",
    )
    .unwrap();
    for (bad, state) in [
        ("SELECT * FROM minhash_pairs('lsh_docs', 'id', 'mh', 0)", "22023"),
        ("SELECT * FROM minhash_pairs('lsh_docs', 'id', 'mh', 0.8, bands => 9)", "22023"),
        ("SELECT * FROM minhash_pairs('lsh_docs', 'id', 'mh', 0.8, bands => 20, rows => 20)", "22023"),
        ("SELECT * FROM minhash_pairs('mixed', 'id', 'mh', 0.8)", "22023"),
        ("SELECT * FROM minhash_pairs('nulls', 'id', 'mh', 0.8)", "22004"),
        ("SELECT * FROM minhash_pairs('lsh_docs', 'id', 'body', 0.8)", "42804"),
        ("SELECT * FROM minhash_pairs('lsh_docs', 'id', 'nope', 0.8)", "42703"),
    ] {
        assert_eq!(sqlstate(bad).as_deref(), Some(state), "{bad}");
    }
    assert_eq!(int("SELECT count(*) FROM minhash_pairs('empty', 'id', 'mh', 0.8)"), 0);
    // 3,000 sketches of 128 minvalues hold 1.5 MB: past the 1 MB allowed.
    Spi::run(
        "CREATE TABLE big AS SELECT g::bigint AS id, minhash(g::text, 128) AS mh FROM generate_series(1, 3000) g;
         SET maintenance_work_mem = '1MB'",
    )
    .unwrap();
    assert_eq!(
        sqlstate("SELECT * FROM minhash_pairs('big', 'id', 'mh', 0.8)").as_deref(),
        Some("53200")
    );
    assert_eq!(
        sqlstate("SELECT * FROM neardup_clusters('big', 'id', 'mh', 0.8)").as_deref(),
        Some("53200")
    );
}

#[pg_test]
fn lsh_golden_vectors_through_sql() {
    let mut checked = 0;
    for line in include_str!("../../tests/golden_lsh.tsv").lines().filter(|l| !l.starts_with('#')) {
        let c: Vec<&str> = line.split('\t').collect();
        let keys = text(&format!("SELECT lsh_bands('{}'::minhash_sketch, {}, {})::text", c[0], c[1], c[2]));
        assert_eq!(keys, c[3], "{line}");
        checked += 1;
    }
    assert!(checked >= 20);
    // The banding a threshold picks, seen through the keys' count and the text form.
    for line in include_str!("../../tests/golden_lsh_params.tsv").lines().filter(|l| !l.starts_with('#')) {
        let c: Vec<&str> = line.split('\t').collect();
        let header = text(&format!(
            "SELECT split_part(lsh_bands(minhash('golden', num_hashes => {}), {}::float8)::text, ':', 1)",
            c[1], c[0]
        ));
        assert_eq!(header, format!("b{}r{}", c[2], c[3]), "{line}");
    }
}
