// SQL tests of how the batch functions treat resources, privileges and the text they are
// given (issue 10): memory limits, expressions that stay expressions, true labels.

fn hardening_fixture() {
    Spi::run(
        "CREATE TABLE victim (x int);
         CREATE TABLE docs (id bigint PRIMARY KEY, fp simhash64, rank int, url text);
         INSERT INTO docs SELECT i, ((i / 3) * 1000003)::bigint::simhash64, i % 5, repeat('u', i % 7)
             FROM generate_series(1, 60) i;",
    )
    .unwrap();
}

fn hardening_count(sql: &str) -> i64 {
    Spi::get_one::<i64>(sql).unwrap().unwrap()
}

#[pg_test]
fn hardening_priority_is_checked_as_sort_keys_before_it_runs() {
    hardening_fixture();
    // Statements, clauses and row-changing expressions are refused before anything runs.
    for (priority, code) in [
        ("1; DROP TABLE victim; SELECT 1", "42601"),
        ("rank) FROM victim; --", "42601"),
        ("rank LIMIT 1", "42601"),
        ("rank FOR UPDATE", "42601"),
        ("rank /*", "42601"),
        ("generate_series(1, 2)", "0A000"),
        ("(SELECT max(x) FROM victim)", "0A000"),
        ("count(*)", "0A000"),
        ("row_number() OVER ()", "0A000"),
        ("no_such_column", "42703"),
    ] {
        let sql = format!(
            "SELECT count(*) FROM neardup_clusters('docs', 'id', 'fp', 1, '{}')",
            priority.replace('\'', "''")
        );
        assert_eq!(sqlstate(&sql).as_deref(), Some(code), "{priority}");
    }
    assert_eq!(hardening_count("SELECT count(*) FROM victim"), 0, "victim is still there");
    // What the README and users write keeps working, with the rows counted once.
    for priority in ["rank DESC", "length(url), id", "rank DESC NULLS LAST, url", "rank -- why\n"] {
        let sql = format!(
            "SELECT count(*) FROM neardup_clusters('docs', 'id', 'fp', 1, '{priority}')"
        );
        assert_eq!(hardening_count(&sql), 60, "{priority}");
    }
    let representative = Spi::get_one::<String>(
        "SELECT string_agg(id::text, ',' ORDER BY id) FROM neardup_clusters('docs', 'id', 'fp', 0, 'rank DESC')
         WHERE is_representative AND id <= 6",
    )
    .unwrap()
    .unwrap();
    // Clusters {1,2}, {3,4,5}, {6,...}: the highest rank (i % 5) of each.
    assert_eq!(representative, "2,4");
}

#[pg_test]
fn hardening_duplicate_ids_and_non_integer_edges_are_refused() {
    Spi::run(
        "CREATE TABLE dup (id bigint, fp simhash64);
         INSERT INTO dup VALUES (1, '0000000000000000'), (1, '0000000000000001'), (2, NULL);",
    )
    .unwrap();
    assert_eq!(
        sqlstate("SELECT count(*) FROM neardup_clusters('dup', 'id', 'fp', 1)").as_deref(),
        Some("23505")
    );
    assert_eq!(
        sqlstate("SELECT count(*) FROM neardup_components('SELECT 1.5, 2.7')").as_deref(),
        Some("42804")
    );
    assert_eq!(
        sqlstate("SELECT count(*) FROM neardup_components('SELECT ''a''::text, 1')").as_deref(),
        Some("42804")
    );
    // One query returning rows, nothing else, is run.
    assert!(sqlstate("SELECT count(*) FROM neardup_components('SELECT 1, 2; DROP TABLE dup')").is_some());
    assert!(sqlstate("SELECT count(*) FROM neardup_components('DELETE FROM dup RETURNING id, id')").is_some());
    assert_eq!(hardening_count("SELECT count(*) FROM dup"), 3);
    // Integers of every width are nodes.
    let components = Spi::get_one::<String>(
        "SELECT string_agg(node || ':' || component, ',' ORDER BY node)
         FROM neardup_components('SELECT 5::smallint, 3::int UNION ALL SELECT 9::bigint, 5::smallint')",
    )
    .unwrap()
    .unwrap();
    assert_eq!(components, "3:3,5:3,9:3");
}

#[pg_test]
fn hardening_distances_beyond_the_batch_search_are_named_as_such() {
    hardening_fixture();
    let message = error_of("SELECT count(*) FROM hamming_pairs('docs', 'id', 'fp', 16)");
    assert_eq!(
        message.as_deref(),
        Some("22023 hamming_pairs: max_distance must be between 0 and 15 (got 16)")
    );
    assert_eq!(
        hardening_count("SELECT count(*) FROM hamming_pairs('docs', 'id', 'fp', 15)"),
        hardening_count(
            "SELECT count(*) FROM docs a JOIN docs b ON a.id < b.id AND hamming(a.fp, b.fp) + 0 <= 15"
        )
    );
}

#[pg_test]
fn hardening_batch_functions_stop_at_maintenance_work_mem_before_allocating() {
    Spi::run(
        "CREATE TABLE big (id bigint PRIMARY KEY, fp bigint);
         INSERT INTO big SELECT i, 0 FROM generate_series(1, 100000) i;
         SET LOCAL maintenance_work_mem = '1MB';",
    )
    .unwrap();
    for sql in [
        "SELECT count(*) FROM hamming_pairs('big', 'id', 'fp', 3)",
        "SELECT count(*) FROM neardup_clusters('big', 'id', 'fp', 3)",
        "SELECT count(*) FROM neardup_components('SELECT id, id + 1 FROM big')",
    ] {
        assert_eq!(sqlstate(sql).as_deref(), Some("53200"), "{sql}");
    }
    // 100,000 rows sharing one fingerprint: one cluster, found without the 5·10⁹ pairs.
    Spi::run("SET LOCAL maintenance_work_mem = '64MB'").unwrap();
    assert_eq!(
        hardening_count(
            "SELECT count(DISTINCT cluster_id) FROM neardup_clusters('big', 'id', 'fp', 3)"
        ),
        1
    );
}

#[pg_test]
fn hardening_index_check_is_not_public_and_needs_select_on_the_table() {
    Spi::run(
        "CREATE TABLE checked (id int, fp simhash64);
         INSERT INTO checked SELECT i, (i * 7919)::bigint::simhash64 FROM generate_series(1, 100) i;
         CREATE INDEX checked_fp ON checked USING hamming (fp);
         CREATE ROLE neardup_nobody;
         CREATE ROLE neardup_checker;
         GRANT EXECUTE ON FUNCTION hamming_index_check(regclass) TO neardup_checker;
         GRANT USAGE ON SCHEMA tests TO neardup_nobody, neardup_checker;",
    )
    .unwrap();
    let public_can = Spi::get_one::<bool>(
        "SELECT has_function_privilege('neardup_nobody', 'hamming_index_check(regclass)', 'EXECUTE')",
    )
    .unwrap()
    .unwrap();
    assert!(!public_can);
    // The SQLSTATE of a statement run as `role` (the helper is created before the switch).
    sqlstate("SELECT 1");
    let as_role = |role: &str, sql: &str| {
        Spi::run(&format!("SET LOCAL ROLE {role}")).unwrap();
        let code =
            Spi::get_one_with_args::<String>("SELECT pg_temp.sqlstate_of($1)", &[sql.into()])
                .unwrap();
        Spi::run("RESET ROLE").unwrap();
        code
    };
    // Granted EXECUTE, but not SELECT on the table: refused before the table is locked.
    assert_eq!(
        as_role("neardup_checker", "SELECT hamming_index_check('checked_fp')").as_deref(),
        Some("42501")
    );
    assert_eq!(
        as_role("neardup_nobody", "SELECT hamming_index_check('checked_fp')").as_deref(),
        Some("42501")
    );
    Spi::run("GRANT SELECT ON checked TO neardup_checker").unwrap();
    assert_eq!(as_role("neardup_checker", "SELECT hamming_index_check('checked_fp')"), None);
    // Under row-level security the count it returns would say how many rows the policies
    // hide from the role: refused for a role the policies apply to, not for the owner.
    Spi::run(
        "ALTER TABLE checked ENABLE ROW LEVEL SECURITY;
         CREATE POLICY few ON checked FOR SELECT USING (id <= 10)",
    )
    .unwrap();
    assert_eq!(
        as_role("neardup_checker", "SELECT hamming_index_check('checked_fp')").as_deref(),
        Some("42501")
    );
    assert_eq!(hardening_count("SELECT hamming_index_check('checked_fp')"), 100);
    Spi::run("ALTER TABLE checked DISABLE ROW LEVEL SECURITY").unwrap();
    // The functions that read a table by name check SELECT too, before anything about the
    // table: `checked` has no unique index on id, and a text column, which a role that
    // may not read it must not learn (42P16 or 42804 here would tell).
    Spi::run("ALTER TABLE checked ADD COLUMN name text DEFAULT 'x'").unwrap();
    for sql in [
        "SELECT count(*) FROM hamming_pairs('checked', 'id', 'fp', 3)",
        "SELECT count(*) FROM hamming_pairs('checked', 'name', 'fp', 3)",
        "SELECT count(*) FROM neardup_clusters('checked', 'id', 'fp', 3)",
        "SELECT count(*) FROM neardup_clusters('checked', 'name', 'fp', 3)",
        "SELECT neardup_cluster_tracking('checked', 'checked_clusters', 'id', 'fp', 3)",
    ] {
        assert_eq!(as_role("neardup_nobody", sql).as_deref(), Some("42501"), "{sql}");
    }
    // Allowed to read, a text key column is named with its type (not a failed cast).
    assert_eq!(
        sqlstate("SELECT count(*) FROM hamming_pairs('checked', 'name', 'fp', 3)").as_deref(),
        Some("42804")
    );
    assert_eq!(hardening_count("SELECT hamming_index_check('checked_fp')"), 100);
}

#[pg_test]
fn hardening_tracking_needs_a_unique_id_and_a_short_enough_name() {
    Spi::run(
        "CREATE TABLE loose (id bigint, fp simhash64);
         CREATE TABLE keyed (id bigint PRIMARY KEY, fp simhash64);
         CREATE INDEX ON keyed USING hamming (fp);",
    )
    .unwrap();
    assert_eq!(
        sqlstate("SELECT neardup_cluster_tracking('loose', 'loose_clusters', 'id', 'fp', 2)")
            .as_deref(),
        Some("42P16")
    );
    let long_name = "c".repeat(60);
    assert_eq!(
        sqlstate(&format!(
            "SELECT neardup_cluster_tracking('keyed', '{long_name}', 'id', 'fp', 2)"
        ))
        .as_deref(),
        Some("42622")
    );
    assert_eq!(
        sqlstate("SELECT neardup_cluster_tracking('keyed', 'keyed_clusters', 'id', 'fp', 2, 'generate_series(1,2)')")
            .as_deref(),
        Some("0A000")
    );
}

#[pg_test]
fn hardening_functions_that_read_tables_are_not_parallel_safe() {
    let labels = Spi::get_one::<String>(
        "SELECT string_agg(DISTINCT proname || ':' || provolatile::text || proparallel::text, ',')
         FROM pg_proc WHERE proname IN ('hamming_pairs', 'minhash_pairs', 'hamming_index_check', 'neardup_clusters',
                                        'neardup_components', 'neardup_cluster_tracking',
                                        'neardup_cluster_tracking_install')",
    )
    .unwrap()
    .unwrap();
    assert_eq!(
        labels,
        "hamming_index_check:vr,hamming_pairs:sr,minhash_pairs:sr,neardup_cluster_tracking:vu,\
         neardup_cluster_tracking_install:vu,neardup_clusters:su,neardup_components:vu"
    );
    // The whole suite runs with force_parallel_mode = regress (see pg_test in lib.rs).
    assert_eq!(
        Spi::get_one::<String>(&format!("SHOW {}", crate::FORCE_PARALLEL))
            .unwrap()
            .as_deref(),
        Some("regress")
    );
    // A parallel plan over hamming_pairs runs it in the leader.
    hardening_fixture();
    Spi::run(
        "SET LOCAL parallel_setup_cost = 0; SET LOCAL parallel_tuple_cost = 0;
         SET LOCAL min_parallel_table_scan_size = 0; SET LOCAL max_parallel_workers_per_gather = 2;",
    )
    .unwrap();
    assert_eq!(
        hardening_count(
            "SELECT count(*) FROM docs d JOIN hamming_pairs('docs', 'id', 'fp', 0) p ON p.a = d.id"
        ),
        58
    );
}

#[pg_test]
fn hardening_an_index_built_past_maintenance_work_mem_is_exact() {
    // 1 MB holds 32,768 rows in memory: 45,000 rows go through the external sorts.
    hamming_fixture("spilled", 25_000, "simhash64");
    Spi::run(
        "INSERT INTO spilled (fp) VALUES (NULL), (NULL);
         SET LOCAL maintenance_work_mem = '1MB';
         CREATE INDEX spilled_fp ON spilled USING hamming (fp);
         RESET maintenance_work_mem;",
    )
    .unwrap();
    assert!(hardening_count("SELECT count(*) FROM spilled") > 45_000);
    assert_index_exact("spilled", "simhash64");
    assert_eq!(
        hardening_count("SELECT hamming_index_check('spilled_fp')"),
        hardening_count("SELECT count(*) FROM spilled")
    );
}
