fn text(sql: &str) -> String {
    Spi::get_one::<String>(sql).unwrap().unwrap()
}

fn int(sql: &str) -> i64 {
    Spi::get_one::<i64>(sql).unwrap().unwrap()
}

fn boolean(sql: &str) -> bool {
    Spi::get_one::<bool>(sql).unwrap().unwrap()
}

fn is_null(sql: &str) -> bool {
    Spi::get_one::<bool>(&format!("SELECT ({sql}) IS NULL")).unwrap().unwrap()
}

/// The SQLSTATE that `sql` fails with (NULL when it succeeds), caught in PL/pgSQL.
fn sqlstate(sql: &str) -> Option<String> {
    Spi::run(
        "CREATE OR REPLACE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
         BEGIN EXECUTE q; RETURN NULL; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE; END $$",
    )
    .unwrap();
    Spi::get_one_with_args::<String>("SELECT pg_temp.sqlstate_of($1)", &[sql.into()]).unwrap()
}

/// `SQLSTATE message` of the ERROR `sql` raises, or None.
fn error_of(sql: &str) -> Option<String> {
    Spi::run(
        "CREATE OR REPLACE FUNCTION pg_temp.error_of(q text) RETURNS text LANGUAGE plpgsql AS $$
         BEGIN EXECUTE q; RETURN NULL; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ' ' || SQLERRM; END $$",
    )
    .unwrap();
    Spi::get_one_with_args::<String>("SELECT pg_temp.error_of($1)", &[sql.into()]).unwrap()
}

/// Test texts in SQL: `words(n, seed)`, n pseudo-random words (distinct seeds give unrelated
/// texts, and `words(m, s)` is a prefix of `words(n, s)` for m < n); `edited(n, seed, at)`,
/// the same text with the word at position `at` replaced.
fn create_text_functions() {
    Spi::run(
        "CREATE FUNCTION words(n int, seed int) RETURNS text LANGUAGE sql IMMUTABLE AS $$
             SELECT string_agg(substr(md5((seed * 100000 + i)::text), 1, 3 + i % 7), ' ' ORDER BY i)
             FROM generate_series(1, n) i $$;
         CREATE FUNCTION edited(n int, seed int, at int) RETURNS text LANGUAGE sql IMMUTABLE AS $$
             SELECT string_agg(CASE WHEN i = at THEN 'edited' ELSE substr(md5((seed * 100000 + i)::text), 1, 3 + i % 7) END,
                               ' ' ORDER BY i)
             FROM generate_series(1, n) i $$;",
    )
    .unwrap();
}

#[pg_test]
fn text_form_round_trips() {
    assert_eq!(text("SELECT '0123456789abcdef'::simhash64::text"), "0123456789abcdef");
    assert_eq!(text("SELECT '0X0123456789ABCDEF'::simhash64::text"), "0123456789abcdef");
    assert_eq!(text("SELECT ' ffffffffffffffff '::simhash64::text"), "ffffffffffffffff");
    assert!(is_null("SELECT NULL::simhash64"));
}

#[pg_test]
fn bad_text_is_22p02() {
    for bad in ["", "0x", "abc", "0123456789abcdef0", "0123456789abcdeg", "-123456789abcdef", "0x 123456789abcde"] {
        let q = format!("SELECT '{bad}'::simhash64");
        assert_eq!(sqlstate(&q).as_deref(), Some("22P02"), "{bad:?}");
    }
}

#[pg_test]
fn bigint_casts_are_bit_identical() {
    assert_eq!(int("SELECT 'ffffffffffffffff'::simhash64::bigint"), -1);
    assert_eq!(int("SELECT '8000000000000000'::simhash64::bigint"), i64::MIN);
    assert_eq!(text("SELECT (-2)::bigint::simhash64::text"), "fffffffffffffffe");
    assert_eq!(text("SELECT 255::bigint::simhash64::text"), "00000000000000ff");
    assert!(boolean(
        "SELECT bool_and(v::simhash64::bigint = v) FROM (VALUES (0::bigint), (1), (-1), (9223372036854775807), (-9223372036854775808)) t(v)"
    ));
}

#[pg_test]
fn bit_cast_shows_bits_most_significant_first() {
    assert_eq!(
        text("SELECT '8000000000000001'::simhash64::bit(64)::text"),
        format!("1{}1", "0".repeat(62))
    );
    assert_eq!(int("SELECT length('0123456789abcdef'::simhash64::bit(64))"), 64);
}

#[pg_test]
fn order_is_unsigned_like_the_hex_text() {
    assert!(boolean("SELECT '8000000000000000'::simhash64 > '7fffffffffffffff'::simhash64"));
    assert!(boolean("SELECT 'ffffffffffffffff'::simhash64 > '0000000000000000'::simhash64"));
    assert!(boolean("SELECT '0000000000000001'::simhash64 <= '0000000000000001'::simhash64"));
    assert!(boolean("SELECT '0000000000000001'::simhash64 <> '0000000000000002'::simhash64"));
    let sorted = text(
        "SELECT string_agg(v::text, ',' ORDER BY v) FROM (VALUES ('ffffffffffffffff'::simhash64),
         ('0000000000000000'), ('8000000000000000'), ('7fffffffffffffff')) t(v)",
    );
    assert_eq!(sorted, "0000000000000000,7fffffffffffffff,8000000000000000,ffffffffffffffff");
}

#[pg_test]
fn btree_and_hash_opclasses_serve_grouping_joins_and_indexes() {
    Spi::run(
        "CREATE TABLE fp AS SELECT g AS id, (g % 100)::bigint::simhash64 AS h FROM generate_series(1, 2000) g;
         CREATE INDEX ON fp (h); CREATE INDEX fp_hash ON fp USING hash (h); ANALYZE fp;",
    )
    .unwrap();
    assert_eq!(int("SELECT count(DISTINCT h) FROM fp"), 100);
    assert_eq!(int("SELECT count(*) FROM (SELECT h FROM fp GROUP BY h) g"), 100);
    Spi::run("SET enable_mergejoin = off; SET enable_nestloop = off").unwrap();
    assert_eq!(int("SELECT count(*) FROM fp a JOIN fp b ON a.h = b.h"), 100 * 20 * 20);
    Spi::run("SET enable_seqscan = off; SET enable_bitmapscan = off").unwrap();
    assert_eq!(int("SELECT count(*) FROM fp WHERE h = '0000000000000005'"), 20);
    assert_eq!(int("SELECT count(*) FROM fp WHERE h < '000000000000000a'"), 200);
    let plan = text("EXPLAIN (COSTS OFF) SELECT * FROM fp WHERE h = '0000000000000005'");
    assert!(plan.contains("Index"), "{plan}");
}

#[pg_test]
fn hamming_and_bitwise_operators() {
    assert_eq!(int("SELECT hamming('0000000000000000', 'ffffffffffffffff')::bigint"), 64);
    assert_eq!(int("SELECT ('00000000000000ff'::simhash64 <~> '000000000000000f')::bigint"), 4);
    assert_eq!(int("SELECT bit_count('f0f0000000000001'::simhash64)::bigint"), 9);
    assert_eq!(text("SELECT ('ff00ff0000000000'::simhash64 & '0ff0000000000000')::text"), "0f00000000000000");
    assert_eq!(text("SELECT ('ff00000000000000'::simhash64 | '00000000000000ff')::text"), "ff000000000000ff");
    assert_eq!(text("SELECT ('ffff000000000000'::simhash64 # 'ff00000000000001')::text"), "00ff000000000001");
    assert_eq!(text("SELECT (~'0f0f0f0f0f0f0f0f'::simhash64)::text"), "f0f0f0f0f0f0f0f0");
    assert!(boolean(
        "SELECT bool_and(hamming(a, b) = bit_count(a # b) AND (a <~> b) = (b <~> a))
         FROM (SELECT (random() * 9e18)::bigint::simhash64 a, (random() * -9e18)::bigint::simhash64 b
               FROM generate_series(1, 200)) t"
    ));
    assert!(is_null("SELECT hamming(NULL, '0000000000000000')"));
}

#[pg_test]
fn simhash_of_a_literal_and_null() {
    assert_eq!(text("SELECT simhash('some text')::text").len(), 16);
    assert!(is_null("SELECT simhash(NULL::text)"));
    assert_eq!(text("SELECT simhash('')::text"), "0000000000000000");
    assert_eq!(text("SELECT simhash('  ...!!! --- ')::text"), "0000000000000000");
    assert!(boolean("SELECT simhash('Hello, World!') = simhash('hello world')"));
    assert!(boolean("SELECT simhash('Straße') = simhash('STRASSE')"));
    assert!(boolean("SELECT simhash('Straße', fold_case => false) <> simhash('STRASSE', fold_case => false)"));
}

#[pg_test]
fn simhash_options_and_their_errors() {
    assert!(boolean("SELECT simhash('a b c d e', shingle => 1) <> simhash('a b c d e', shingle => 2)"));
    assert!(boolean("SELECT simhash('abcdef', ngram => 3) <> simhash('abcdef')"));
    for bad in ["shingle => 0", "shingle => 17", "ngram => -1", "ngram => 33"] {
        assert_eq!(sqlstate(&format!("SELECT simhash('x', {bad})")).as_deref(), Some("22023"), "{bad}");
    }
}

/// Loads the committed Debian descriptions sample into table `sample`.
fn load_sample() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/pg_test_data/debian_descriptions_sample.tsv");
    Spi::run(&format!(
        "CREATE TABLE sample (id bigint, package text, body text); COPY sample FROM '{path}'"
    ))
    .unwrap();
}

#[pg_test]
fn one_word_edits_of_long_descriptions_stay_within_3_bits() {
    // Each description of 300+ tokens, edited at 13 word positions in turn (PostgreSQL regexes count to 255).
    load_sample();
    let (within, total) = Spi::get_two::<f64, i64>(
        r"WITH long AS (SELECT body FROM sample WHERE cardinality(neardup_tokens(body)) >= 300),
              pairs AS (SELECT simhash(body) a,
                               simhash(regexp_replace(body, '^((\S+\s+){' || w || '})\S+', '\1neardupedit')) b
                        FROM long, generate_series(10, 250, 20) w)
         SELECT avg((hamming(a, b) <= 3)::int)::float8, count(*) FROM pairs",
    )
    .unwrap();
    let (within, total) = (within.unwrap(), total.unwrap());
    assert!(total >= 300, "only {total} edits");
    assert!(within >= 0.95, "{within} of {total} edits within 3 bits");
}

#[pg_test]
fn unrelated_descriptions_are_far_apart() {
    // Single words (the default) put unrelated descriptions ~27 bits apart (common words
    // pull fingerprints together); 3-word shingles put them at the ideal ~32.
    load_sample();
    let stats = |options: &str| {
        Spi::get_two::<f64, i64>(&format!(
            "SELECT avg(d)::float8, count(*) FILTER (WHERE d <= 3)
             FROM (SELECT hamming(simhash(a.body{options}), simhash(b.body{options})) d
                   FROM sample a JOIN sample b ON b.id = a.id + 5000 WHERE a.id % 7 = 0) t"
        ))
        .unwrap()
    };
    let (mean, close) = stats("");
    let (mean, close) = (mean.unwrap(), close.unwrap());
    assert!((25.0..=34.0).contains(&mean), "mean distance {mean}");
    assert_eq!(close, 0, "unrelated pairs within 3 bits");
    let mean3 = stats(", shingle => 3").0.unwrap();
    assert!((30.0..=34.0).contains(&mean3), "3-shingle mean distance {mean3}");
}

#[pg_test]
fn markup_does_not_change_the_signature() {
    load_sample();
    assert!(boolean(
        "SELECT bool_and(simhash(body) = simhash('<html><body><p>' || replace(body, E'\n', '<br>') || '</p></body></html>'))
         FROM sample WHERE id % 50 = 0"
    ));
}

#[pg_test]
fn weighted_features() {
    // Features hashed as given: unit weights over the tokens equal the unigram simhash.
    assert!(boolean(
        "SELECT simhash(neardup_tokens(t), array_fill(1::real, ARRAY[cardinality(neardup_tokens(t))]))
              = simhash(t, shingle => 1)
         FROM (VALUES ('The quick brown fox jumps over the lazy dog, again and again')) v(t)"
    ));
    assert!(boolean(
        "SELECT simhash(ARRAY['a','b'], ARRAY[10, 1]::real[]) <> simhash(ARRAY['a','b'], ARRAY[1, 10]::real[])"
    ));
    assert_eq!(text("SELECT simhash('{}'::text[], '{}'::real[])::text"), "0000000000000000");
    assert_eq!(sqlstate("SELECT simhash(ARRAY['a','b'], ARRAY[1]::real[])").as_deref(), Some("22023"));
    assert_eq!(sqlstate("SELECT simhash(ARRAY['a'], ARRAY['NaN']::real[])").as_deref(), Some("22023"));
    assert_eq!(sqlstate("SELECT simhash(ARRAY['a', NULL], ARRAY[1, 1]::real[])").as_deref(), Some("22004"));
    assert!(is_null("SELECT simhash(NULL::text[], ARRAY[1]::real[])"));
}

#[pg_test]
fn canonical_form_and_tokens_explain_the_input() {
    assert_eq!(
        text("SELECT neardup_canonical('<p>Stra&szlig;e — “Quoted” https://www.Debian.org/doc</p>')"),
        "strasse quoted https www debian org doc"
    );
    assert_eq!(text("SELECT neardup_canonical('ÉTÉ Straße', fold_case => false)"), "ÉTÉ Straße");
    assert_eq!(text("SELECT array_to_string(neardup_tokens('日本語 text'), '|')"), "日|本|語|text");
    assert_eq!(int("SELECT cardinality(neardup_tokens('...'))::bigint"), 0);
    assert!(is_null("SELECT neardup_tokens(NULL)"));
}

#[pg_test]
fn golden_vectors_through_sql() {
    let golden = include_str!("../../tests/golden_simhash.tsv");
    let mut checked = 0;
    for line in golden.lines().filter(|l| !l.starts_with('#')) {
        let c: Vec<&str> = line.split('\t').collect();
        // E'' strings take the file's \n, \t and \\ escapes as they are.
        let body = c[3].replace('\'', "''");
        let q = format!(
            "SELECT simhash(E'{body}', shingle => {}, ngram => {}, fold_case => {})::text",
            c[0], c[1], c[2] == "t"
        );
        assert_eq!(text(&q), c[4], "{line}");
        checked += 1;
    }
    assert!(checked >= 30);
}

#[pg_test]
fn binary_io_round_trips() {
    assert_eq!(text("SELECT simhash64_send('0123456789abcdef')::text"), "\\x0123456789abcdef");
    Spi::run(
        "CREATE TABLE src AS SELECT (g * 7919)::bigint::simhash64 AS h FROM generate_series(-50, 50) g;
         COPY src TO '/tmp/neardup_binary_io.bin' (FORMAT binary);
         CREATE TABLE dst (h simhash64);
         COPY dst FROM '/tmp/neardup_binary_io.bin' (FORMAT binary);",
    )
    .unwrap();
    assert_eq!(int("SELECT count(*) FROM src JOIN dst USING (h)"), 101);
}

#[pg_test]
fn functions_are_strict_immutable_and_parallel_safe() {
    let offenders = text(
        "SELECT coalesce(string_agg(p.oid::regprocedure::text, ', '), '')
         FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass
         JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'neardup'
         WHERE p.pronamespace <> 'tests'::regnamespace
           -- These read or write tables (or build an index AM; the *_pairs_distributed
           -- functions create and drop one), or read a setting (b_similar, the % operator, like
           -- pg_trgm's), so they are rightly not immutable.
           AND p.proname NOT IN ('hamming_pairs', 'hamming_pairs_distributed', 'hamming_pair_parts',
                                 'minhash_pairs', 'minhash_pairs_distributed',
                                 'hamming_index_check', 'hamming_amhandler',
                                 'neardup_components', 'neardup_clusters', 'neardup_track_clusters',
                                 'neardup_cluster_tracking', 'neardup_cluster_tracking_install', 'b_similar')
           AND NOT (p.provolatile = 'i' AND p.proparallel = 's'
                    -- bloomsig reads a NULL hashes as the default, and returns NULL for a
                    -- NULL body itself; aggregates and their transitions start from a NULL
                    -- state. hamming_within on wide codes is SQL the planner inlines into
                    -- the indexable `a <@ hamming_ball(b, k)`, which it may not do for a
                    -- STRICT function with a non-strict body (`k >= 0 AND ...`).
                    AND (p.proisstrict OR p.prokind = 'a' OR p.proname = 'bloomsig'
                         OR p.proname LIKE 'neardup\\_keep\\_%\\_step'
                         OR (p.proname = 'hamming_within' AND p.prolang = (SELECT oid FROM pg_language WHERE lanname = 'sql'))))",
    );
    assert_eq!(offenders, "");
}

#[pg_test]
fn large_text_is_accepted() {
    // 20 MB in one value: the pipeline streams it without per-token allocation.
    let d = int("SELECT hamming(simhash(repeat('lorem ipsum dolor sit amet ', 800000)),
                                simhash(repeat('lorem ipsum dolor sit amet ', 800001)))::bigint");
    assert_eq!(d, 0);
}
