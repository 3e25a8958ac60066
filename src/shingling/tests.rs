// SQL tests of minhash sketches, supershingles, `%` and its GIN operator class.

#[pg_test]
fn shingling_golden_vectors_through_sql() {
    let golden = include_str!("../../tests/golden_minhash.tsv");
    let mut checked = 0;
    for line in golden.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let c: Vec<&str> = line.split('\t').collect();
        let body = c[2].replace('\'', "''");
        // The shingle column is a number of words, or c<n> for character n-grams.
        let features = match c[1].strip_prefix('c') {
            Some(n) => format!("shingle => 8, ngram => {n}"),
            None => format!("shingle => {}", c[1]),
        };
        let sketch = format!("minhash(E'{body}', num_hashes => {}, {features})", c[0]);
        assert_eq!(text(&format!("SELECT {sketch}::text")), c[3], "{line}");
        if c[4] != "-" {
            assert_eq!(text(&format!("SELECT supershingles({sketch})::text")), c[4], "{line}");
        }
        checked += 1;
    }
    assert!(checked >= 66);
}

#[pg_test]
fn shingling_character_ngram_sketches() {
    let ja = "吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。";
    let ja_edited = "吾輩は猫である。名前はもう有る。どこで生れたかとんと見当がつかぬ。";
    let zh = "我能吞下玻璃而不伤身体。这是一个用于测试的中文句子。";
    let j = |a: &str, b: &str, args: &str| {
        Spi::get_one::<f64>(&format!(
            "SELECT jaccard(minhash('{a}'{args}), minhash('{b}'{args}))"
        ))
        .unwrap()
        .unwrap()
    };
    // A two-character edit in 30 characters: most 3-grams survive; another text shares none.
    let near = j(ja, ja_edited, ", 84, 8, 3");
    assert!(near > 0.7 && near < 1.0, "{near}");
    assert_eq!(j(ja, zh, ", 84, 8, 3"), 0.0);
    assert_eq!(j("Short!", "SHORT", ", 84, 8, 5"), 1.0);
    // The text form names the features, ngram wins over shingle, and the values are not
    // those of word shingles of the same size.
    assert!(text(&format!("SELECT minhash('{ja}', 84, 8, 5)::text")).starts_with("m84c5:"));
    assert!(text(&format!("SELECT minhash('{ja}', 28, 5)::text")).starts_with("m28s5:"));
    assert!(boolean(&format!(
        "SELECT minhash('{ja}', 84, 8, 5)::text = minhash('{ja}', 84, 3, 5)::text
            AND substr(minhash('{ja}', 84, 8, 5)::text, 7)
                <> substr(minhash('{ja}', shingle => 5)::text, 7)"
    )));
    // Text form round trip; binary headers: version 1, features byte (8 for 8-word
    // shingles as before, 0x80 | 5 for 5-grams), 84 hashes as a little-endian u16.
    assert!(boolean(&format!(
        "SELECT minhash('{ja}', 84, 8, 5)::text::minhash_sketch::text = minhash('{ja}', 84, 8, 5)::text
            AND substr(minhash_sketch_send(minhash('{ja}', 84, 8, 5)), 1, 4) = '\\x01855400'::bytea
            AND substr(minhash_sketch_send(minhash('{ja}')), 1, 4) = '\\x01085400'::bytea"
    )));
    // Supershingles of n-gram sketches work like any other.
    assert_eq!(
        int(&format!(
            "SELECT b_similarity(supershingles(minhash('{ja}', 84, 8, 3)),
                                 supershingles(minhash('{ja} ', 84, 8, 3)))"
        )),
        6
    );
    for bad in [
        // Word shingles against n-grams, and n-grams of different sizes.
        "SELECT jaccard(minhash('a b c'), minhash('a b c', 84, 8, 8))",
        "SELECT jaccard(minhash('a b c', shingle => 3), minhash('a b c', 84, 8, 3))",
        "SELECT jaccard(minhash('a b c', 84, 8, 3), minhash('a b c', 84, 8, 4))",
        "SELECT minhash('x', 84, 8, 33)",
        "SELECT minhash('x', 84, 8, -1)",
    ] {
        assert_eq!(sqlstate(bad).as_deref(), Some("22023"), "{bad}");
    }
    assert_eq!(
        error_of("SELECT jaccard(minhash('a b c'), minhash('a b c', 84, 8, 8))").as_deref(),
        Some("22023 minhash sketches differ in features (8-word shingles and 8-character n-grams)")
    );
    assert_eq!(
        sqlstate("SELECT 'm1c33:00000000'::minhash_sketch").as_deref(),
        Some("22P02")
    );
}

#[pg_test]
fn jaccard_estimates_the_shingle_resemblance() {
    create_text_functions();
    // Exact Jaccard of the 8-word shingle sets, computed in SQL from the tokens (OFFSET 0 and
    // MATERIALIZED keep each text tokenized once, not once per shingle and per reference).
    Spi::run(
        "CREATE FUNCTION shingle_set(t text) RETURNS text[] LANGUAGE sql IMMUTABLE AS $$
             SELECT array_agg(DISTINCT array_to_string(tok[i:i + 7], ' '))
             FROM (SELECT neardup_tokens(t) AS tok OFFSET 0) s, generate_series(1, cardinality(tok) - 7) i $$;
         CREATE TABLE pairs AS
             SELECT g, words(400, g) AS a,
                    concat_ws(' ', words(400 - 40 * (g % 8), g), words(40 * (g % 8), 1000 + g)) AS b
             FROM generate_series(1, 40) g;",
    )
    .unwrap();
    let error = Spi::get_one::<f64>(
        "WITH sets AS MATERIALIZED (SELECT a, b, shingle_set(a) AS sa, shingle_set(b) AS sb FROM pairs),
              exact AS (SELECT a, b,
                               (SELECT count(*) FROM (SELECT unnest(sa) INTERSECT SELECT unnest(sb)) i)::float8
                               / (SELECT count(*) FROM (SELECT unnest(sa) UNION SELECT unnest(sb)) u) AS j
                        FROM sets)
         SELECT avg(abs(jaccard(minhash(a), minhash(b)) - j)) FROM exact",
    )
    .unwrap()
    .unwrap();
    // One agreeing entry in 84 is a 0.012 step; the estimator's spread is about 0.05.
    assert!(error < 0.06, "mean absolute error {error}");
    assert_eq!(
        Spi::get_one::<f64>("SELECT jaccard(minhash(a), minhash(a)) FROM pairs LIMIT 1").unwrap(),
        Some(1.0)
    );
    assert_eq!(
        sqlstate("SELECT jaccard(minhash('a b c'), minhash('a b c', num_hashes => 100))").as_deref(),
        Some("22023")
    );
    assert_eq!(
        sqlstate("SELECT jaccard(minhash('a b c'), minhash('a b c', shingle => 3))").as_deref(),
        Some("22023")
    );
}

#[pg_test]
fn supershingles_b_similarity_and_the_threshold_setting() {
    create_text_functions();
    assert!(boolean(
        "SELECT supershingles(words(300, 1))::text = supershingles(minhash(words(300, 1)))::text"
    ));
    assert_eq!(
        int("SELECT b_similarity(supershingles(words(300, 1)), supershingles(words(300, 1)))"),
        6
    );
    assert_eq!(
        int("SELECT b_similarity(supershingles(words(300, 1)), supershingles(words(300, 2)))"),
        0
    );
    assert!(boolean("SELECT supershingles(words(300, 1)) % supershingles(words(300, 1))"));
    assert!(!boolean("SELECT supershingles(words(300, 1)) % supershingles(words(300, 2))"));
    // Short and empty texts: one shingle of all tokens; the empty set's sketch.
    assert!(boolean("SELECT jaccard(minhash('two words'), minhash('TWO words!')) = 1.0"));
    assert!(boolean("SELECT jaccard(minhash(''), minhash('')) = 1.0"));
    assert!(boolean("SELECT jaccard(minhash(''), minhash('some words')) = 0.0"));
    // The threshold is a setting, like pg_trgm.similarity_threshold.
    Spi::run("SET neardup.b_similarity_threshold = 6").unwrap();
    assert!(boolean("SELECT supershingles(words(300, 1)) % supershingles(words(300, 1))"));
    assert_eq!(sqlstate("SET neardup.b_similarity_threshold = 0").as_deref(), Some("22023"));
    Spi::run("RESET neardup.b_similarity_threshold").unwrap();
    assert_eq!(
        sqlstate("SELECT supershingles(minhash('a b', num_hashes => 30))").as_deref(),
        Some("22023")
    );
    for (bad, state) in [
        ("SELECT 'm84s8:zz'::minhash_sketch", "22P02"),
        ("SELECT '0123'::supershingle_vector", "22P02"),
        ("SELECT minhash('x', num_hashes => 0)", "22023"),
        ("SELECT minhash('x', shingle => 17)", "22023"),
    ] {
        assert_eq!(sqlstate(bad).as_deref(), Some(state), "{bad}");
    }
    assert!(boolean(
        "SELECT minhash('round trip', num_hashes => 28, shingle => 2)::text::minhash_sketch::text
                = minhash('round trip', num_hashes => 28, shingle => 2)::text
            AND supershingles('round trip')::text::supershingle_vector::text = supershingles('round trip')::text"
    ));
}

#[pg_test]
fn gin_index_finds_exactly_the_b_similar_rows() {
    create_text_functions();
    // Families of near-copies (one word edited at a random place), unrelated texts and
    // empty texts; 600 rows.
    Spi::run(
        "SELECT setseed(0.5);
         CREATE TABLE docs (id int PRIMARY KEY, ss supershingle_vector);
         INSERT INTO docs SELECT g, supershingles(CASE
                 WHEN g % 10 = 0 THEN ''
                 WHEN g % 3 = 0 THEN words(300, g)
                 ELSE edited(300, g % 30, 1 + (random() * 299)::int) END)
             FROM generate_series(1, 600) g;
         CREATE INDEX docs_ss ON docs USING gin (ss);
         ANALYZE docs;",
    )
    .unwrap();
    for threshold in 1..=6 {
        Spi::run(&format!("SET neardup.b_similarity_threshold = {threshold}")).unwrap();
        let brute = text(&format!(
            "SELECT count(*) || ':' || coalesce(sum(a.id * 7 + b.id), 0)
             FROM docs a JOIN docs b ON b_similarity(a.ss, b.ss) >= {threshold}"
        ));
        Spi::run("SET enable_seqscan = off").unwrap();
        let plan = Spi::explain("SELECT count(*) FROM docs a JOIN docs b ON a.ss % b.ss")
            .unwrap()
            .0
            .to_string();
        assert!(plan.contains("docs_ss"), "threshold {threshold}: {plan}");
        let indexed = text(
            "SELECT count(*) || ':' || coalesce(sum(a.id * 7 + b.id), 0)
             FROM docs a JOIN docs b ON a.ss % b.ss",
        );
        Spi::run("RESET enable_seqscan").unwrap();
        assert_eq!(indexed, brute, "threshold {threshold}");
        let pairs: i64 = brute.split(':').next().unwrap().parse().unwrap();
        // Every row matches itself; the families and the empty texts add pairs.
        assert!(pairs > 600, "threshold {threshold}: {pairs}");
    }
}
