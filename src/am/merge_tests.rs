// SQL tests of the `hamming` index as inserts build it up: pending lists written as runs,
// runs merged, in one transaction (VACUUM, page reuse, crashes and standbys are in
// tests/integration/check_index_merges.sh, check_index_crash.sh, check_index_standby.sh).

/// Loads `hamming_fixture`'s rows into `target` (same columns), which has an index already,
/// in `batches` INSERT statements.
fn insert_in_batches(source: &str, target: &str, batches: i64) {
    for b in 0..batches {
        Spi::run(&format!(
            "INSERT INTO {target} (id, fp) SELECT id, fp FROM {source} WHERE id % {batches} = {b} ORDER BY id"
        ))
        .unwrap();
    }
}

/// `docs (id, fp)`: `hamming_fixture`'s `rows` 64-bit rows inserted in 9 statements under a
/// hamming index whose pending list takes 500 rows (several runs and a pending list).
fn docs_in_runs(rows: i64) {
    hamming_fixture("src", rows, "simhash64");
    Spi::run(
        "CREATE TABLE docs (id bigint, fp simhash64);
         CREATE INDEX docs_fp ON docs USING hamming (fp) WITH (pending_limit = 500)",
    )
    .unwrap();
    insert_in_batches("src", "docs", 9);
}

fn row_count(table: &str) -> i64 {
    Spi::get_one::<i64>(&format!("SELECT count(*) FROM {table}")).unwrap().unwrap()
}

#[pg_test]
fn an_index_grown_by_inserts_merges_runs_and_stays_exact() {
    hamming_fixture("src", 4000, "simhash64");
    Spi::run(
        "CREATE TABLE docs (id bigint, fp simhash64);
         CREATE INDEX docs_fp ON docs USING hamming (fp) WITH (pending_limit = 600)",
    )
    .unwrap();
    insert_in_batches("src", "docs", 12);
    let m = crate::am::meta_of("docs_fp");
    let rows = row_count("docs");
    // Every full pending list became a run; runs merged as the policy says.
    assert!(!m.runs.is_empty(), "{m:?}");
    assert!(m.runs.windows(2).all(|w| w[0].rows >= w[1].rows), "{m:?}");
    // No scan was open: each merge gave the pages it left behind back at once (its own
    // transaction's snapshot notwithstanding), and the next ones reused them.
    assert!(m.garbage.is_empty(), "{m:?}");
    let registry = crate::am::garbage_of("docs_fp");
    assert!(registry.is_empty(), "{registry:?}");
    let pending = (rows as u64).saturating_sub(m.run_rows());
    assert!(pending < 2 * 600 + 582, "{pending} rows still pending: {m:?}");
    let sizes: Vec<u64> = m.runs.iter().map(|r| r.rows).collect();
    assert_eq!(neardup_core::search::merge_policy::merge_from(&sizes), None, "{sizes:?}");
    assert_index_exact("docs", "simhash64");
    for q in ["'0123456789abcdef'::simhash64", "(SELECT fp FROM docs WHERE id = 77)"] {
        let (index, brute) = knn_both_ways("docs", q, Some(40));
        assert_eq!(index, brute, "{q}");
    }
    assert_eq!(Spi::get_one::<i64>("SELECT hamming_index_check('docs_fp')").unwrap(), Some(rows));
    // 300 lookups as rescans of one scan (a nested loop): past 256, the rows of the small
    // runs and the pending rows are sorted into tables in memory.
    assert!(m.runs.iter().any(|r| r.rows <= 16384), "a small run: {m:?}");
    let lateral = |condition: &str| {
        format!(
            "SELECT string_agg(x.c::text, ',' ORDER BY p.id) FROM (SELECT id, fp FROM src ORDER BY id LIMIT 300) p,
             LATERAL (SELECT count(*) AS c FROM docs d WHERE {condition}) x"
        )
    };
    let nested = lateral("d.fp <@ hamming_ball(p.fp, 3)");
    Spi::run("SET LOCAL enable_bitmapscan = off").unwrap();
    let plan = explain(&nested);
    assert!(plan.contains("Index Cond") && plan.contains("Nested Loop"), "{plan}");
    let by_index = Spi::get_one::<String>(&format!(
        "SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; {nested}"
    ))
    .unwrap();
    let brute = Spi::get_one::<String>(&format!(
        "SET LOCAL enable_seqscan = on; SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off; {}",
        lateral("hamming(d.fp, p.fp) + 0 <= 3")
    ))
    .unwrap();
    assert_eq!(by_index, brute);
    Spi::run("RESET enable_seqscan; RESET enable_indexscan; RESET enable_bitmapscan").unwrap();
    Spi::run("CREATE INDEX docs_fresh ON docs USING hamming (fp)").unwrap();
    let pages = |index: &str| {
        Spi::get_one::<i64>(&format!("SELECT pg_relation_size('{index}') / 8192"))
            .unwrap()
            .unwrap()
    };
    // The pages in use: the last merge's inputs are free (reused by the next one).
    let in_use = pages("docs_fp") - crate::am::free_pages_of("docs_fp") as i64;
    let ratio = in_use as f64 / pages("docs_fresh") as f64;
    // Small: the pending list and the spare pages weigh in (bench/ingest.sh measures 1 M rows).
    assert!(ratio < 2.0, "grown index {ratio}× a fresh build");
}

#[pg_test]
fn a_merge_past_maintenance_work_mem_sorts_externally_and_stays_exact() {
    // 1 MB holds about 43 k rows of an in-memory merge; the last merges are larger.
    Spi::run(
        "SET maintenance_work_mem = '1MB';
         SELECT setseed(0.5);
         CREATE TABLE docs (id bigserial, fp simhash64);
         CREATE INDEX docs_fp ON docs USING hamming (fp) WITH (pending_limit = 20000);",
    )
    .unwrap();
    for _ in 0..4 {
        Spi::run(
            "INSERT INTO docs (fp) SELECT ((random() * 2^62)::bigint # ((random() * 3)::bigint << 62))::simhash64
             FROM generate_series(1, 20000)",
        )
        .unwrap();
    }
    let m = crate::am::meta_of("docs_fp");
    assert!(m.runs.iter().any(|r| r.rows > 45_000), "{m:?}");
    // The check holds every row in memory: give it room.
    Spi::run("RESET maintenance_work_mem").unwrap();
    assert_index_exact("docs", "simhash64");
    assert_eq!(
        Spi::get_one::<i64>("SELECT hamming_index_check('docs_fp')").unwrap(),
        Some(row_count("docs"))
    );
}

#[pg_test]
fn runs_of_different_layouts_merge_into_one() {
    hamming_fixture("src", 3000, "simhash64");
    Spi::run(
        "CREATE TABLE docs (id bigint, fp simhash64);
         CREATE INDEX docs_fp ON docs USING hamming (fp) WITH (pending_limit = 1000)",
    )
    .unwrap();
    Spi::run("INSERT INTO docs SELECT id, fp FROM src WHERE id <= 2000").unwrap();
    let before = crate::am::meta_of("docs_fp");
    assert!(before.runs.iter().all(|r| r.blocks == 4), "{before:?}");
    // Runs written from now on have 6 blocks (20 tables); merges mix the two layouts.
    Spi::run("ALTER INDEX docs_fp SET (blocks = 6)").unwrap();
    Spi::run("INSERT INTO docs SELECT id, fp FROM src WHERE id > 2000").unwrap();
    let after = crate::am::meta_of("docs_fp");
    assert!(after.runs.iter().any(|r| r.blocks == 6), "{after:?}");
    assert_index_exact("docs", "simhash64");
    assert_eq!(
        Spi::get_one::<i64>("SELECT hamming_index_check('docs_fp')").unwrap(),
        Some(row_count("docs"))
    );
}

#[pg_test]
fn null_fingerprints_move_with_their_runs_and_come_last() {
    Spi::run(
        "CREATE TABLE t (id int, fp simhash64);
         CREATE INDEX t_fp ON t USING hamming (fp) WITH (pending_limit = 600);
         INSERT INTO t SELECT i, CASE WHEN i % 10 = 0 THEN NULL ELSE (i * 2654435761)::bigint::simhash64 END
             FROM generate_series(1, 5000) i;",
    )
    .unwrap();
    let m = crate::am::meta_of("t_fp");
    assert!(m.runs.iter().any(|r| r.nulls_pages > 0), "{m:?}");
    let (index, brute) = knn_both_ways("t", "'0123456789abcdef'::simhash64", None);
    assert_eq!(index, brute);
    assert!(index.ends_with(":null"), "NULL rows last");
    assert_eq!(index.matches(":null").count(), 500);
    assert_eq!(Spi::get_one::<i64>("SELECT hamming_index_check('t_fp')").unwrap(), Some(5000));
}

#[pg_test]
fn pending_limit_is_checked_and_can_change_without_rebuilding() {
    Spi::run("CREATE TABLE t (id int, fp simhash64)").unwrap();
    let error = error_of("CREATE INDEX ON t USING hamming (fp) WITH (pending_limit = 0)").unwrap();
    assert!(error.starts_with("22023"), "{error}");
    Spi::run(
        "CREATE INDEX t_fp ON t USING hamming (fp);
         INSERT INTO t SELECT i, (i * 2654435761)::bigint::simhash64 FROM generate_series(1, 3000) i;",
    )
    .unwrap();
    // Below the default limit: all pending.
    assert!(crate::am::meta_of("t_fp").runs.is_empty());
    Spi::run(
        "ALTER INDEX t_fp SET (pending_limit = 100);
         INSERT INTO t SELECT i, (i * 2654435761)::bigint::simhash64 FROM generate_series(3001, 4000) i;",
    )
    .unwrap();
    let m = crate::am::meta_of("t_fp");
    assert!(m.run_rows() >= 3000, "{m:?}");
    assert_index_exact("t", "simhash64");
    assert_eq!(Spi::get_one::<i64>("SELECT hamming_index_check('t_fp')").unwrap(), Some(4000));
}

#[pg_test]
fn a_count_planned_as_an_index_only_scan_counts_every_row() {
    // A query that needs no column may be planned as an index-only scan of the index; the
    // scan must then form index tuples (before 0.3.0: "no data returned for index-only scan").
    Spi::run(
        "CREATE TABLE t (fp simhash64, pad text);
         INSERT INTO t SELECT CASE WHEN i % 50 = 0 THEN NULL ELSE (i * 2654435761)::bigint::simhash64 END,
                              repeat('x', 200) FROM generate_series(1, 5000) i;
         CREATE INDEX t_fp ON t USING hamming (fp) WITH (pending_limit = 600);
         INSERT INTO t SELECT (i * 40503)::bigint::simhash64, 'y' FROM generate_series(1, 2000) i;
         ANALYZE t;",
    )
    .unwrap();
    Spi::run("SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off").unwrap();
    let count = "SELECT count(*) FROM t";
    let plan = plan_of(count);
    assert!(plan.contains("Index Only Scan"), "{plan}");
    assert_eq!(Spi::get_one::<i64>(count).unwrap(), Some(7000));
    Spi::run("SET LOCAL enable_seqscan = on; SET LOCAL enable_indexscan = off").unwrap();
    assert_eq!(Spi::get_one::<i64>(count).unwrap(), Some(7000));
}

#[pg_test]
fn a_lowered_pending_limit_acts_at_the_next_insert() {
    Spi::run(
        "CREATE TABLE t (id int, fp simhash64);
         CREATE INDEX t_fp ON t USING hamming (fp) WITH (pending_limit = 1000000);
         INSERT INTO t SELECT i, (i * 2654435761)::bigint::simhash64 FROM generate_series(1, 9000) i;",
    )
    .unwrap();
    let m = crate::am::meta_of("t_fp");
    assert!(m.runs.is_empty() && m.pending.pages >= 15, "{m:?}");
    // One row after the limit came down: the 9,000 pending rows are written as a run then,
    // not when the list next needs a page (0.5.0).
    Spi::run(
        "ALTER INDEX t_fp SET (pending_limit = 1000);
         INSERT INTO t VALUES (9001, '0123456789abcdef');",
    )
    .unwrap();
    let m = crate::am::meta_of("t_fp");
    assert!(m.run_rows() >= 9000 && m.pending.pages <= 1, "{m:?}");
    assert_index_exact("t", "simhash64");
    assert_eq!(Spi::get_one::<i64>("SELECT hamming_index_check('t_fp')").unwrap(), Some(9001));
}

#[pg_test]
fn a_stale_free_space_map_is_neither_corruption_nor_reused() {
    hamming_fixture("src", 3000, "simhash64");
    Spi::run(
        "CREATE TABLE docs (id bigint, fp simhash64);
         CREATE INDEX docs_fp ON docs USING hamming (fp) WITH (pending_limit = 300);
         INSERT INTO docs SELECT id, fp FROM src WHERE id <= 2000;",
    )
    .unwrap();
    // After a crash the free space map may list pages merges took before it (it is not
    // WAL-logged): here it lists every page of the index.
    let listed = crate::am::list_every_page_free("docs_fp");
    assert!(listed > 10, "{listed} pages");
    assert_eq!(Spi::get_one::<i64>("SELECT hamming_index_check('docs_fp')").unwrap(), Some(2000));
    // Merges offered pages in use skip them: nothing is overwritten.
    Spi::run("INSERT INTO docs SELECT id, fp FROM src WHERE id > 2000").unwrap();
    assert_index_exact("docs", "simhash64");
    assert_eq!(
        Spi::get_one::<i64>("SELECT hamming_index_check('docs_fp')").unwrap(),
        Some(row_count("docs"))
    );
}

#[pg_test]
fn compaction_rewrites_the_largest_run_only_for_enough_new_rows() {
    // 160,000 rows in one run: 1/128 of it is 1,250 rows. A pending page holds 582.
    Spi::run(
        "CREATE TABLE c (id int, fp simhash64);
         INSERT INTO c SELECT i, (i * 2654435761)::bigint::simhash64 FROM generate_series(1, 160000) i;
         CREATE INDEX c_fp ON c USING hamming (fp) WITH (pending_limit = 600);",
    )
    .unwrap();
    let add = |from: i64, to: i64| {
        Spi::run(&format!(
            "INSERT INTO c SELECT i, (i * 2654435761)::bigint::simhash64 FROM generate_series({from}, {to}) i"
        ))
        .unwrap()
    };
    // Answers for 40 probes (with near copies of them, inserted first) against a seq
    // scan's, and every row checked.
    Spi::run(
        "INSERT INTO c SELECT 0, (fp::bigint # (1::bigint << (i * 13 % 64)))::simhash64
         FROM c, generate_series(1, 3) i WHERE id % 4000 = 0",
    )
    .unwrap();
    let check = |what: &str| {
        let counts = |settings: &str| {
            Spi::get_one::<String>(&format!(
                "{settings} SELECT string_agg(n::text, ',' ORDER BY p.id) FROM c p,
                 LATERAL (SELECT count(*) AS n FROM c WHERE fp <@ hamming_ball(p.fp, 3)) x
                 WHERE p.id % 4000 = 0 AND p.id > 0"
            ))
            .unwrap()
            .unwrap()
        };
        let by_index = counts("SET LOCAL enable_seqscan = off;");
        let by_seq = counts("SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off;");
        Spi::run("RESET enable_seqscan; RESET enable_indexscan; RESET enable_bitmapscan").unwrap();
        assert_eq!(by_index, by_seq, "{what}");
        assert_eq!(
            Spi::get_one::<i64>("SELECT hamming_index_check('c_fp')").unwrap(),
            Some(row_count("c")),
            "{what}"
        );
    };
    // The near copies (120 rows) are pending. With 380 more, beside the one run: left
    // pending (comparing them is cheaper than probing a run of them).
    add(160001, 160380);
    assert!(crate::am::compact("c_fp"));
    let m = crate::am::meta_of("c_fp");
    assert!(m.runs.len() == 1 && m.pending.pages == 1, "{m:?}");
    check("pending rows beside one run");
    // A full pending list became a second run (600 rows), and 480 rows are pending after
    // it: less than 1/128 of the largest together. Folded into one run beside it, the
    // largest untouched.
    add(160381, 160960);
    let m = crate::am::meta_of("c_fp");
    assert!(m.runs.len() == 2 && m.pending.pages == 1, "{m:?}");
    let largest = m.runs[0].id;
    assert!(crate::am::compact("c_fp"));
    let m = crate::am::meta_of("c_fp");
    assert!(m.runs.len() == 2 && m.runs[0].id == largest, "{m:?}");
    assert!(m.pending.pages == 0 && m.runs[1].rows == 1080, "{m:?}");
    check("folded beside the largest run");
    // Past 1/128: one run, as a fresh build.
    add(160961, 162500);
    assert!(crate::am::compact("c_fp"));
    let m = crate::am::meta_of("c_fp");
    assert!(m.runs.len() == 1 && m.pending.pages == 0, "{m:?}");
    assert_eq!(m.run_rows() as i64, row_count("c"));
    check("compacted into one run");
}

#[pg_test]
fn a_merge_table_by_table_needs_room_for_one_tree_more_not_one_table() {
    // 4 tables (distance 3, up to 2^25 rows), each stored as 4 trees over quarters of the
    // key space (random fingerprints fill them alike): 100,000 rows built,
    // 40,000 pending (below the limit, so that no merge of small runs makes room first; the
    // limit is lowered after, as the merges set aside spare pages for 4 pending lists).
    Spi::run(
        "CREATE TABLE g (fp simhash64);
         INSERT INTO g SELECT ('x' || md5(i::text))::bit(64)::bigint::simhash64 FROM generate_series(1, 100000) i;
         CREATE INDEX g_fp ON g USING hamming (fp) WITH (pending_limit = 100000);
         INSERT INTO g SELECT ('x' || md5(i::text))::bit(64)::bigint::simhash64 FROM generate_series(100001, 140000) i;
         ALTER INDEX g_fp SET (pending_limit = 8192);",
    )
    .unwrap();
    let m = crate::am::meta_of("g_fp");
    assert!(m.runs.len() == 1 && m.runs[0].trees.len() == 16, "{m:?}");
    // The pending rows become a run of their own, then the two runs merge into one, tree
    // by tree (more than SMALL_MERGE rows).
    assert!(crate::am::compact("g_fp"));
    let m = crate::am::meta_of("g_fp");
    // (Exact answers through merges tree by tree: tests/integration/check_index_merges.sh.)
    assert!(m.runs.len() == 1 && m.run_rows() == 140000, "{m:?}");
    // Room for one table more (240 pages; the 69 pending pages freed first cover part of
    // it) made it 1.25 times a fresh build with one tree per table; one tree more (60
    // pages) makes it 1.09.
    let ratio = Spi::get_one::<f64>(
        "CREATE TABLE fresh AS SELECT fp FROM g;
         CREATE INDEX fresh_fp ON fresh USING hamming (fp);
         SELECT pg_relation_size('g_fp')::float8 / pg_relation_size('fresh_fp')",
    )
    .unwrap()
    .unwrap();
    assert!(ratio < 1.15, "the merged index is {ratio} times a fresh build");
}

/// `max_distance` is frozen in the metapage at build: after `ALTER INDEX ... SET`, merges
/// still write runs for the metapage's distance (runs written for another one would be read
/// with other tables than they were written with), until a REINDEX.
#[pg_test]
fn an_altered_max_distance_waits_for_a_reindex() {
    hamming_fixture("src", 3000, "simhash64");
    Spi::run(
        "CREATE TABLE docs (id bigint, fp simhash64);
         CREATE INDEX docs_fp ON docs USING hamming (fp) WITH (pending_limit = 500);
         ALTER INDEX docs_fp SET (max_distance = 5)",
    )
    .unwrap();
    insert_in_batches("src", "docs", 6);
    let m = crate::am::meta_of("docs_fp");
    assert_eq!(m.max_distance, 3, "{m:?}");
    assert!(!m.runs.is_empty(), "{m:?}");
    assert_eq!(
        Spi::get_one::<i64>("SELECT hamming_index_check('docs_fp')").unwrap(),
        Some(row_count("docs"))
    );
    assert_index_exact("docs", "simhash64");
    Spi::run("REINDEX INDEX docs_fp").unwrap();
    assert_eq!(crate::am::meta_of("docs_fp").max_distance, 5);
    assert_index_exact("docs", "simhash64");
}

/// The subtransaction ids this backend holds in its PGPROC's cache (those of the open
/// transaction's subtransactions that committed, and of the open ones).
fn cached_subxids() -> u8 {
    // SAFETY: this backend's own PGPROC.
    unsafe { (*pg_sys::MyProc).subxidStatus.count }
}

/// A load whose garbage is stamped past any id the WAL holds (a subtransaction of the
/// loading transaction took an id after it, and is not current: as another session's
/// running transaction would be) is recycled all the same: its first recycling takes one
/// subtransaction id, at or above the stamps, and later stamps (one past that id) need
/// none. An ERROR in that subtransaction releases it: an outer exception block then rolls
/// its own subtransaction back and the transaction goes on at its own level.
#[pg_test]
fn a_recycling_past_the_ids_in_the_wal_takes_one_subtransaction_id_and_releases_it_on_error() {
    assert_eq!(Spi::get_one::<String>("SHOW wal_level").unwrap().as_deref(), Some("replica"));
    let level = || unsafe { pg_sys::GetCurrentTransactionNestLevel() };
    let level_before = level();
    Spi::run(
        "CREATE TABLE docs (id bigint, fp simhash64);
         CREATE INDEX docs_fp ON docs USING hamming (fp) WITH (pending_limit = 600);
         CREATE TABLE scratch (i int);",
    )
    .unwrap();
    let load = |from: i64, to: i64| {
        format!(
            "BEGIN INSERT INTO scratch VALUES ({from}); EXCEPTION WHEN division_by_zero THEN NULL; END;
             INSERT INTO docs SELECT i, ((i * 2654435761) # (i << 40))::simhash64 FROM generate_series({from}, {to}) i;"
        )
    };
    let before = cached_subxids();
    Spi::run(&format!("DO $$ BEGIN {} END $$", load(1, 3000))).unwrap();
    let m = crate::am::meta_of("docs_fp");
    assert!(m.runs.len() >= 2 || m.runs.iter().any(|r| r.rows > 600), "merged: {m:?}");
    assert!(crate::am::garbage_of("docs_fp").is_empty(), "everything recycled");
    // The block's subtransaction, and one taken by the first recycling (more only if
    // another test's transaction took an id between two merges).
    let taken = cached_subxids() - before;
    assert!((2..16).contains(&taken), "{taken} subtransaction ids");
    assert_eq!(level(), level_before);

    // The same load, with an ERROR where the recycling's subtransaction has its id, inside
    // an exception block.
    Spi::run(&format!(
        "SET LOCAL neardup.error_at = 'recycle_xid';
         DO $$ BEGIN
             BEGIN {} EXCEPTION WHEN query_canceled THEN
                 PERFORM set_config('neardup_test.caught', SQLERRM, true);
             END;
             INSERT INTO scratch VALUES (0);
         END $$;
         RESET neardup.error_at;",
        load(3001, 6000)
    ))
    .unwrap();
    let caught = Spi::get_one::<String>("SELECT current_setting('neardup_test.caught', true)")
        .unwrap()
        .unwrap_or_default();
    assert!(caught.contains("recycle_xid"), "the ERROR was raised and caught: {caught:?}");
    assert_eq!(level(), level_before, "no subtransaction left open");
    assert_eq!(row_count("docs"), 3000, "the block's rows rolled back");
    assert_eq!(row_count("scratch"), 2);
    // The index goes on: the garbage the interrupted merge left is recycled by the next.
    Spi::run(&format!("DO $$ BEGIN {} END $$", load(6001, 9000))).unwrap();
    assert!(crate::am::garbage_of("docs_fp").is_empty(), "everything recycled");
    assert_eq!(
        Spi::get_one::<i64>("SELECT hamming_index_check('docs_fp')").unwrap(),
        Some(6000)
    );
    assert_index_exact("docs", "simhash64");
}

/// `ORDER BY fp <~> q` over several runs, pending rows and NULL rows, with work_mem at its
/// minimum so that a pass keeps about a thousand rows and a full order takes many passes:
/// every LIMIT, deep ones included, gives brute force's rows (ids and distances, ties by
/// ctid), each once, on random, clustered, duplicated and shared-prefix rows; an ERROR in
/// the middle of a pass (a cancel's, `neardup.error_at`) leaves the next scans exact.
#[pg_test]
fn knn_passes_over_runs_pending_and_nulls_equal_brute_force_at_small_work_mem() {
    docs_in_runs(3000);
    Spi::run(
        "INSERT INTO docs SELECT -i, NULL FROM generate_series(1, 30) i;
         INSERT INTO docs SELECT -100 - id, (fp::bigint # 4)::simhash64 FROM src WHERE id % 40 = 0;
         ANALYZE docs",
    )
    .unwrap();
    let m = crate::am::meta_of("docs_fp");
    let rows = row_count("docs");
    assert!(m.runs.len() >= 2, "several runs: {m:?}");
    assert!(m.run_rows() < rows as u64, "rows pending: {m:?}");
    // A pass keeps at most 64 kB / 2 of rows (1,365) or the first pass's 1,024.
    Spi::run("SET LOCAL work_mem = '64kB'").unwrap();
    let mut queries = knn_far_queries("docs", 3);
    assert_eq!(queries.len(), 3, "queries 8-15 bits from their nearest row");
    queries.extend([
        "'0123456789abcdef'::simhash64".to_string(),
        "(SELECT fp FROM src WHERE id = 40)".into(),
        "(SELECT ((x'abcdef'::bigint << 40) | 12345)::simhash64)".into(),
    ]);
    for q in &queries {
        for limit in [Some(1), Some(10), Some(1100), Some(3000), None] {
            let (by_index, brute) = knn_both_ways("docs", q, limit);
            assert_eq!(by_index, brute, "q={q} limit={limit:?}");
            let ids: std::collections::HashSet<&str> =
                by_index.split(',').map(|e| e.split(':').next().unwrap()).collect();
            assert_eq!(ids.len() as i64, limit.unwrap_or(rows).min(rows), "q={q}: each row once");
        }
    }
    // A pass stopped by a cancel's ERROR after it read the runs; the next scans are exact.
    Spi::run(
        "SET LOCAL neardup.error_at = 'ordered_pass';
         SET LOCAL enable_seqscan = off;
         DO $$ BEGIN
             PERFORM id FROM docs ORDER BY fp <~> '0123456789abcdef'::simhash64 LIMIT 2000;
             RAISE EXCEPTION 'the scan was not stopped in its pass';
         EXCEPTION WHEN query_canceled THEN
             PERFORM set_config('neardup_test.caught', SQLERRM, true);
         END $$;
         RESET neardup.error_at; RESET enable_seqscan;",
    )
    .unwrap();
    let caught = Spi::get_one::<String>("SELECT current_setting('neardup_test.caught', true)")
        .unwrap()
        .unwrap_or_default();
    assert!(caught.contains("ordered_pass"), "stopped in the pass: {caught:?}");
    for q in &queries[..2] {
        let (by_index, brute) = knn_both_ways("docs", q, Some(1500));
        assert_eq!(by_index, brute, "after the ERROR: q={q}");
    }
    assert_eq!(Spi::get_one::<i64>("SELECT hamming_index_check('docs_fp')").unwrap(), Some(rows));
}
