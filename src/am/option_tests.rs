// SQL tests of the `hamming` index's options once the index is built: ALTER INDEX ... SET
// cannot see the metapage, so an option it accepts must not make inserts or VACUUM fail.

/// The ids of `table`'s rows within `k` of the code of row `id`, by the natural bound
/// `hamming(col, q) <= k` through the index (its plan asserted) and by a seq scan.
fn natural_bound_both_ways(table: &str, col: &str, id: i64, k: i32) -> (String, String) {
    let query = format!(
        "SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM {table}
         WHERE hamming({col}, (SELECT {col} FROM {table} WHERE id = {id})) <= {k}"
    );
    Spi::run("SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off").unwrap();
    let plan = plan_of(&query);
    assert!(plan.contains("Index Cond"), "{plan}");
    let by_index = Spi::get_one::<String>(&query).unwrap().unwrap();
    Spi::run("SET LOCAL enable_seqscan = on; SET LOCAL enable_indexscan = off").unwrap();
    let brute = Spi::get_one::<String>(&query).unwrap().unwrap();
    Spi::run("RESET enable_seqscan; RESET enable_indexscan; RESET enable_bitmapscan").unwrap();
    (by_index, brute)
}

/// Issue 38: an index built at max_distance 7, then `ALTER INDEX ... SET (max_distance = 3,
/// blocks = 4)`. 4 blocks do not fit the distance 7 the metapage keeps until a REINDEX
/// (blocks must exceed it): every insert that filled the pending list, and every VACUUM,
/// failed until a REINDEX. Runs are now laid out as with blocks = 0, and the index stays
/// exact; a REINDEX applies both options.
#[pg_test]
fn altered_options_keep_bigint_inserts_and_vacuum_working() {
    hamming_fixture("src", 3000, "bigint");
    Spi::run(
        "CREATE TABLE docs (id bigint, fp bigint);
         CREATE INDEX docs_fp ON docs USING hamming (fp int8_hamming_ops)
             WITH (max_distance = 7, pending_limit = 1000);
         ALTER INDEX docs_fp SET (max_distance = 3, blocks = 4)",
    )
    .unwrap();
    // About 1,800 rows a statement: each fills the pending list at least once.
    insert_in_batches("src", "docs", 3);
    let rows = row_count("docs");
    crate::am::vacuum_cleanup("docs_fp");
    let m = crate::am::meta_of("docs_fp");
    assert_eq!((m.max_distance, m.pending.pages), (7, 0), "{m:?}");
    assert!(m.runs.len() > 1, "{m:?}");
    // Distance 7 needs more than 7 blocks: every run's layout was chosen for its rows.
    assert!(m.runs.iter().all(|r| r.blocks > 7), "{m:?}");
    assert_eq!(
        Spi::get_one::<i64>("SELECT hamming_index_check('docs_fp')").unwrap(),
        Some(rows)
    );
    assert_index_exact("docs", "bigint");
    for (id, k) in [(5, 3), (77, 7), (301, 12)] {
        let (index, brute) = natural_bound_both_ways("docs", "fp", id, k);
        assert_eq!(index, brute, "id {id} k {k}");
    }
    // More inserts (written as runs and merged) and another VACUUM after the first.
    Spi::run("INSERT INTO docs SELECT id + 100000, fp FROM src WHERE id % 2 = 0").unwrap();
    crate::am::vacuum_cleanup("docs_fp");
    assert_eq!(
        Spi::get_one::<i64>("SELECT hamming_index_check('docs_fp')").unwrap(),
        Some(row_count("docs"))
    );
    assert_index_exact("docs", "bigint");
    Spi::run("REINDEX INDEX docs_fp").unwrap();
    let m = crate::am::meta_of("docs_fp");
    assert_eq!(m.max_distance, 3, "{m:?}");
    assert!(m.runs.iter().all(|r| r.blocks == 4), "{m:?}");
    assert_index_exact("docs", "bigint");
}

/// The same on 256-bit codes, whose substrings may have at most 32 bits: 4 substrings of 64
/// bits fit no distance, so every run is cut as with blocks = 0; lookups stay exact at
/// radii below, at and beyond the frozen 7.
#[pg_test]
fn altered_options_keep_hash256_inserts_and_vacuum_working() {
    wide_fixture("w", 200);
    Spi::run(
        "INSERT INTO w (code) SELECT pg_temp.rbits(g + 9000000)::hash256 FROM generate_series(1, 3000) g;
         CREATE TABLE g (id bigint, code hash256);
         CREATE INDEX g_code ON g USING hamming (code) WITH (max_distance = 7, pending_limit = 1000);
         ALTER INDEX g_code SET (max_distance = 3, blocks = 4)",
    )
    .unwrap();
    // About 1,050 rows a statement: each fills the pending list.
    for part in 0..4 {
        Spi::run(&format!("INSERT INTO g SELECT id, code FROM w WHERE id % 4 = {part}")).unwrap();
    }
    crate::am::vacuum_cleanup("g_code");
    let m = crate::am::meta_of("g_code");
    assert_eq!((m.max_distance, m.pending.pages), (7, 0), "{m:?}");
    assert!(!m.runs.is_empty(), "{m:?}");
    assert!(m.runs.iter().all(|r| r.blocks != 4), "{m:?}");
    assert_eq!(index_check("g_code"), row_count("g"));
    assert_wide_lookups_exact("g", "hash256", &[(9, 7), (77, 31)]);
    for (id, k) in [(13, 3), (61, 24)] {
        let (index, brute) = natural_bound_both_ways("g", "code", id, k);
        assert_eq!(index, brute, "id {id} k {k}");
    }
    // A build refuses options that do not fit (4 substrings of 64 bits), as CREATE INDEX does.
    let refused = error_of("REINDEX INDEX g_code");
    assert!(refused.as_deref().is_some_and(|e| e.starts_with("22023")), "{refused:?}");
    Spi::run("ALTER INDEX g_code SET (blocks = 16); REINDEX INDEX g_code").unwrap();
    let m = crate::am::meta_of("g_code");
    assert_eq!(m.max_distance, 3, "{m:?}");
    assert!(m.runs.iter().all(|r| r.blocks == 16), "{m:?}");
    assert_eq!(index_check("g_code"), row_count("g"));
}

/// `SQLSTATE message / detail` of the ERROR `sql` raises, or None (the detail's first line:
/// a debug build appends where Rust passed the ERROR on).
fn error_with_detail(sql: &str) -> Option<String> {
    Spi::run(
        "CREATE OR REPLACE FUNCTION pg_temp.error_with_detail(q text) RETURNS text LANGUAGE plpgsql AS $$
         DECLARE detail text;
         BEGIN EXECUTE q; RETURN NULL;
         EXCEPTION WHEN OTHERS THEN
             GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
             RETURN SQLSTATE || ' ' || SQLERRM || ' / ' || split_part(detail, E'\\n', 1);
         END $$",
    )
    .unwrap();
    Spi::get_one_with_args::<String>("SELECT pg_temp.error_with_detail($1)", &[sql.into()]).unwrap()
}

/// `max_distance` takes 0 to 255, and the message says so: -1, which it took before, is
/// the reloption's internal "not set" (the codes' default), not a value to write.
#[pg_test]
fn altered_options_take_max_distance_0_to_255_not_minus_1() {
    Spi::run(
        "CREATE TABLE m (fp simhash64);
         CREATE TABLE m256 (code hash256);
         CREATE INDEX m_fp ON m USING hamming (fp);
         CREATE INDEX m256_code ON m256 USING hamming (code)",
    )
    .unwrap();
    let refused = Some(
        "22023 value -1 out of bounds for option \"max_distance\" / Valid values are between \"0\" and \"255\"."
            .to_string(),
    );
    for sql in [
        "CREATE INDEX ON m USING hamming (fp) WITH (max_distance = -1)",
        "CREATE INDEX ON m256 USING hamming (code) WITH (max_distance = -1)",
        "ALTER INDEX m_fp SET (max_distance = -1)",
        "ALTER INDEX m256_code SET (max_distance = -1)",
    ] {
        assert_eq!(error_with_detail(sql), refused, "{sql}");
    }
    // Not set: the codes' default.
    assert_eq!(crate::am::meta_of("m_fp").max_distance, 3);
    assert_eq!(crate::am::meta_of("m256_code").max_distance, 31);
    Spi::run(
        "CREATE INDEX m_zero ON m USING hamming (fp) WITH (max_distance = 0);
         CREATE INDEX m256_widest ON m256 USING hamming (code) WITH (max_distance = 255)",
    )
    .unwrap();
    assert_eq!(crate::am::meta_of("m_zero").max_distance, 0);
    assert_eq!(crate::am::meta_of("m256_widest").max_distance, 255);
}
