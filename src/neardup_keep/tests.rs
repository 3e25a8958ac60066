// SQL tests of the neardup_keep aggregates.

#[pg_test]
fn neardup_keep_drops_near_duplicates_of_better_results() {
    Spi::run(
        "CREATE TABLE results (id bigint, score float8, fp simhash64);
         INSERT INTO results VALUES
             (1, 0.9, '0000000000000000'), (2, 0.8, '0000000000000003'), (3, 0.7, 'ffffffffffffffff'),
             (4, 0.6, NULL), (5, 0.5, 'fffffffffffffff0'), (6, 0.4, '00000000000000ff'),
             (7, 0.95, 'ffffffffffffff7f');",
    )
    .unwrap();
    // 7 is best; 3 is 1 bit from it; 2 is 2 bits from 1; 5 is 4 bits from 3 and 7.
    assert_eq!(
        text("SELECT neardup_keep(id, fp, 3 ORDER BY score DESC)::text FROM results"),
        "{7,1,4,5,6}"
    );
    assert_eq!(
        text("SELECT neardup_keep(id, fp, 0 ORDER BY score DESC)::text FROM results"),
        "{7,1,2,3,4,5,6}"
    );
    // The top 3 distinct results.
    assert_eq!(
        text("SELECT (neardup_keep(id, fp, 3 ORDER BY score DESC))[1:3]::text FROM results"),
        "{7,1,4}"
    );
    assert!(is_null("SELECT neardup_keep(id, fp, 3 ORDER BY score) FROM results WHERE false"));
    assert_eq!(
        sqlstate("SELECT neardup_keep(id, fp, NULL ORDER BY score) FROM results").as_deref(),
        Some("22004")
    );
    assert_eq!(
        sqlstate("SELECT neardup_keep(id, fp, id::int ORDER BY score) FROM results").as_deref(),
        Some("22023")
    );
}

#[pg_test]
fn neardup_keep_with_supershingles_and_bloom_signatures() {
    create_text_functions();
    Spi::run(
        "CREATE TABLE pages (id bigint, rank int, body text);
         INSERT INTO pages VALUES
             (1, 1, words(2000, 1)),
             (2, 2, words(2000, 1) || ' and a footer'),
             (3, 3, words(2000, 3)),
             (4, 4, words(1500, 4) || ' ' || words(2000, 3) || ' ' || words(1000, 5)),
             (5, 5, words(2000, 5));",
    )
    .unwrap();
    // 2 is a near-copy of 1 (B-similar); the rest are different texts.
    assert_eq!(
        text("SELECT neardup_keep(id, supershingles(body), 2 ORDER BY rank)::text FROM pages"),
        "{1,3,4,5}"
    );
    // Containment: page 3 lies inside page 4. Ranked first, the small page keeps the large
    // one (most of 4 is not in 3); ranked after it, the small page is dropped.
    assert_eq!(
        text("SELECT neardup_keep(id, bloomsig(body), 0.9 ORDER BY rank)::text FROM pages"),
        "{1,3,4,5}"
    );
    assert_eq!(
        text("SELECT neardup_keep(id, bloomsig(body), 0.9 ORDER BY rank DESC)::text FROM pages"),
        "{5,4,2}"
    );
    // A NaN threshold is named as such, not as a threshold that changes between rows.
    assert_eq!(
        error_of("SELECT neardup_keep(id, bloomsig(body), 'NaN' ORDER BY rank) FROM pages").as_deref(),
        Some("22023 neardup_keep: the threshold must be a number, not NaN")
    );
}
