// SQL tests of bloom_signature.

fn bloom_real(q: &str) -> f64 {
    Spi::get_one::<f64>(q).unwrap().unwrap()
}

#[pg_test]
fn bloom_golden_vectors_through_sql() {
    let golden = include_str!("../../tests/golden_bloom.tsv");
    let mut checked = 0;
    for line in golden.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let c: Vec<&str> = line.split('\t').collect();
        let body = c[3].replace('\'', "''");
        let hashes = if c[2] == "default" { "NULL" } else { c[2] };
        let q = format!(
            "SELECT bloomsig(E'{body}', bits => {}, hashes => {hashes}, chunk_size => {})::text",
            c[1], c[0]
        );
        assert_eq!(text(&q), c[5], "{line}");
        let lengths = format!(
            "SELECT coalesce(string_agg(octet_length(c)::text, ',' ORDER BY n), '')
             FROM neardup_chunks(E'{body}', {}) WITH ORDINALITY AS t(c, n)",
            c[0]
        );
        assert_eq!(text(&lengths), c[4], "{line}");
        checked += 1;
    }
    assert!(checked >= 20);
}

#[pg_test]
fn bloom_containment_identity_and_edits() {
    create_text_functions();
    Spi::run(
        "CREATE TABLE docs AS SELECT
             bloomsig(words(2000, 1)) AS small,
             bloomsig(words(3000, 2) || ' ' || words(2000, 1) || ' ' || words(3000, 3)) AS large,
             bloomsig(words(2000, 4)) AS other,
             bloomsig(words(1000, 1) || ' inserted ' || words(2000, 1)) AS edited_base,
             bloomsig(words(1000, 1) || ' ' || words(2000, 1)) AS unedited_base",
    )
    .unwrap();
    // A document inside a larger page is found in it; the page is not in the document.
    assert!(bloom_real("SELECT bloom_match(small, large) FROM docs") >= 0.95);
    assert!(bloom_real("SELECT bloom_match(large, small) FROM docs") < 0.6);
    assert_eq!(bloom_real("SELECT bloom_match(small, small) FROM docs"), 1.0);
    assert_eq!(bloom_real("SELECT bloom_similarity(large, large) FROM docs"), 1.0);
    // Unrelated text of the same size: far below either.
    assert!(bloom_real("SELECT bloom_similarity(small, other) FROM docs") < 0.3);
    // One inserted word changes only the chunks around it.
    assert!(bloom_real("SELECT bloom_similarity(edited_base, unedited_base) FROM docs") > 0.95);
    // Symmetric and asymmetric measures agree with the operators.
    assert_eq!(
        Spi::get_one::<bool>(
            "SELECT bit_count(small & large) + bit_count(small | large) = bit_count(small) + bit_count(large)
                AND bloom_match(small, large) = bit_count(small & large)::float8 / bit_count(small)
                AND bloom_similarity(small, large) = bloom_similarity(large, small)
             FROM docs"
        )
        .unwrap(),
        Some(true)
    );
}

#[pg_test]
fn bloom_chunks_rebuild_the_canonical_text() {
    create_text_functions();
    let same = Spi::get_one::<bool>(
        "SELECT string_agg(c, '' ORDER BY n) = neardup_canonical(t)
         FROM (SELECT '<p>' || words(500, 9) || '</p> &amp; MORE' AS t) s,
              neardup_chunks(t, 64) WITH ORDINALITY AS x(c, n) GROUP BY t",
    )
    .unwrap();
    assert_eq!(same, Some(true));
    let mean = bloom_real(
        "SELECT avg(octet_length(c))::float8 FROM neardup_chunks(words(20000, 5)) AS c",
    );
    assert!((200.0..320.0).contains(&mean), "mean chunk {mean}");
}

#[pg_test]
fn bloom_io_defaults_and_empty_text() {
    assert!(text("SELECT bloomsig('some text')::text").starts_with("bloom:m=2048:k=6:chunk=256:"));
    assert!(text("SELECT bloomsig('x', bits => 64, hashes => 3, chunk_size => 32)::text")
        .starts_with("bloom:m=64:k=3:chunk=32:"));
    let round_trip = Spi::get_one::<bool>(
        "SELECT bloomsig('round trip text', bits => 128)::text::bloom_signature::text
                = bloomsig('round trip text', bits => 128)::text",
    )
    .unwrap();
    assert_eq!(round_trip, Some(true));
    assert_eq!(
        Spi::get_one::<bool>("SELECT bloomsig(NULL) IS NULL").unwrap(),
        Some(true)
    );
    // Empty text: no chunk, no bit; the documented comparison values.
    assert_eq!(
        Spi::get_one::<i32>("SELECT bit_count(bloomsig(''))").unwrap(),
        Some(0)
    );
    assert_eq!(bloom_real("SELECT bloom_match(bloomsig(''), bloomsig(''))"), 1.0);
    assert_eq!(bloom_real("SELECT bloom_match(bloomsig(''), bloomsig('text'))"), 0.0);
    Spi::run(
        "CREATE TABLE b AS SELECT bloomsig(g::text || ' words here') AS s FROM generate_series(1, 20) g;
         COPY b TO '/tmp/neardup_bloom_io.bin' (FORMAT binary);
         CREATE TABLE b2 (s bloom_signature);
         COPY b2 FROM '/tmp/neardup_bloom_io.bin' (FORMAT binary);",
    )
    .unwrap();
    let same = Spi::get_one::<i64>(
        "SELECT count(*) FROM (SELECT s::text FROM b INTERSECT SELECT s::text FROM b2) x",
    )
    .unwrap();
    assert_eq!(same, Some(20));
}

#[pg_test(error = "Bloom signatures built with different parameters (m=2048:k=6:chunk=256 and m=1024:k=6:chunk=256) cannot be compared")]
fn bloom_different_sizes_are_an_error() {
    Spi::run("SELECT bloom_match(bloomsig('a b c'), bloomsig('a b c', bits => 1024))").unwrap();
}

#[pg_test]
fn bloom_bad_input_has_sqlstates() {
    for (sql, state) in [
        ("SELECT bloomsig('x', bits => 100)", "22023"),
        ("SELECT bloomsig('x', hashes => 0)", "22023"),
        ("SELECT bloomsig('x', chunk_size => 1)", "22023"),
        ("SELECT bloomsig('x', bits => NULL)", "22004"),
        ("SELECT 'bloom:m=64:k=6:chunk=256:zz'::bloom_signature", "22P02"),
        ("SELECT bloomsig('a') & bloomsig('a', hashes => 2)", "22023"),
        ("SELECT neardup_chunks('x', 0)", "22023"),
    ] {
        assert_eq!(sqlstate(sql).as_deref(), Some(state), "{sql}");
    }
}
