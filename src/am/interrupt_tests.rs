// SQL tests of merges stopped at each step by an ERROR (a cancel's, injected with
// `neardup.error_at`), for every code width: lookups stay exact and `hamming_index_check`
// passes in the state each leaves, and the next merge finishes what it left.

/// `30_000` codes of `ty` and a copy of each with `i % 24` bits flipped, in `table (id, c)`,
/// with a hamming index `{table}_c` whose pending list takes 16,000 rows.
fn interrupt_fixture(table: &str, ty: &str) {
    Spi::run(&format!(
        "CREATE TABLE {table} (id int, c {ty});
         INSERT INTO {table} SELECT i, {code} FROM generate_series(1, 30000) i;
         INSERT INTO {table} SELECT i + 30000, {flipped} FROM generate_series(1, 30000) i;
         CREATE INDEX {table}_c ON {table} USING hamming (c) WITH (pending_limit = 16000)",
        code = interrupt_code(ty, "i"),
        flipped = interrupt_flipped(ty, "i"),
    ))
    .unwrap();
}

/// Row `i`'s random code of `ty` (an SQL expression of the integer expression `i`).
fn interrupt_code(ty: &str, i: &str) -> String {
    match ty {
        "simhash64" => format!("('x' || substr(md5({i}::text), 1, 16))::bit(64)::bigint::simhash64"),
        _ => {
            let bits = if ty == "hash256" { 256 } else { 128 };
            format!("('x' || md5({i}::text) || md5(({i} + 7777777)::text))::bit({bits})::{ty}")
        }
    }
}

/// Row `i`'s code with its first `i % 24` bits flipped.
fn interrupt_flipped(ty: &str, i: &str) -> String {
    let code = interrupt_code(ty, i);
    match ty {
        "simhash64" => format!("({code}::bigint # ((1::bigint << ({i} % 24)) - 1))::simhash64"),
        _ => {
            let bits = if ty == "hash256" { 256 } else { 128 };
            format!(
                "({code}::bit({bits}) # (repeat('1', {i} % 24) || repeat('0', {bits} - {i} % 24))::bit({bits}))::{ty}"
            )
        }
    }
}

/// Inserts 16,000 more rows (ids from `first`) in a statement that the ERROR injected at
/// `point` stops; fails if it was not stopped there.
fn insert_interrupted_at(table: &str, ty: &str, first: i64, point: &str) {
    Spi::run(&format!(
        "SET neardup.error_at = '{point}';
         DO $$ BEGIN
             INSERT INTO {table} SELECT i, {code} FROM generate_series({first}, {last}) i;
             RAISE EXCEPTION 'the insert was not stopped at {point}';
         EXCEPTION WHEN query_canceled THEN NULL;
         END $$;
         RESET neardup.error_at",
        code = interrupt_flipped(ty, "i"),
        last = first + 15_999,
    ))
    .unwrap();
}

/// For 40 rows' codes and each radius, the rows within it found by the index (an index
/// scan rescanned under a nested loop, and a bitmap scan) against a sequential scan's.
fn assert_interrupted_lookups_exact(table: &str, radii: &[u32], context: &str) {
    let centers = format!("(SELECT c FROM {table} WHERE id % 1500 = 1) a");
    Spi::run(SEQ_SCAN).unwrap();
    let counts = radii
        .iter()
        .map(|r| format!("count(*) FILTER (WHERE d <= {r})"))
        .collect::<Vec<_>>()
        .join(" || ',' || ");
    let brute = text(&format!(
        "SELECT {counts} FROM (SELECT hamming(b.c, a.c) AS d FROM {centers}, {table} b) x"
    ));
    let brute: Vec<i64> = brute.split(',').map(|n| n.parse().unwrap()).collect();
    for (r, brute) in radii.iter().zip(brute) {
        assert!(brute >= 40, "{context}: {brute} rows within {r}");
        for set in [INDEX_SCAN, BITMAP_SCAN] {
            Spi::run(set).unwrap();
            let found = Spi::get_one::<i64>(&format!(
                "SELECT count(*) FROM {centers},
                     LATERAL (SELECT 1 FROM {table} b WHERE b.c <@ hamming_ball(a.c, {r})) x"
            ))
            .unwrap()
            .unwrap();
            assert_eq!(found, brute, "{context}: radius {r}, {set}");
        }
    }
    Spi::run("RESET enable_seqscan; RESET enable_indexscan; RESET enable_bitmapscan").unwrap();
}

/// The nearest rows to two rows' codes (one with bits flipped from another's), in order, equal
/// brute force's, whatever `neardup.ring_budget` (64-bit runs read whole, by rings at any
/// cost, or at 400, where the largest input of the merge table by table stopped at
/// `merge_table` would be read by rings and the new run whole). A merge table by table
/// leaves a row's table 0 in one run and its other tables in another: reading some of its
/// runs by rings and others whole returned 15 rows twice in these 2,000 (the model test
/// found it), so they are all read whole.
fn assert_interrupted_order_exact(table: &str, ty: &str, context: &str) {
    let near = format!("(SELECT c FROM {table} WHERE id = 7)");
    let flipped = format!("(SELECT c FROM {table} WHERE id = 30011)");
    // Wide codes are never read by rings.
    let budgets: &[&str] = if ty == "simhash64" { &["0", "400", "1e12"] } else { &["0"] };
    for budget in budgets {
        Spi::run(&format!("SET LOCAL neardup.ring_budget = {budget}")).unwrap();
        for q in [&near, &flipped] {
            for limit in [10, 1000] {
                let (by_index, brute) = knn_both_ways_on(table, "c", q, Some(limit));
                let context = format!("{context}: budget {budget}, q = {q}, LIMIT {limit}");
                assert_eq!(by_index, brute, "{context}");
                assert_eq!(by_index.split(',').count() as i64, limit, "{context}");
            }
        }
    }
    Spi::run("RESET neardup.ring_budget").unwrap();
}

/// A merge stopped by an ERROR at each of its steps (after sealing, before publishing,
/// before recycling, and between two trees of a merge table by table, which leaves the
/// inputs without table 0 and the new run with only it) leaves every lookup exact, for
/// 64-bit, 128-bit and 256-bit codes; `hamming_index_check`, which looks rows up through
/// the scans' plans, passes; the next merge finishes the interrupted one.
#[pg_test]
fn merges_stopped_at_every_step_leave_lookups_exact() {
    for (ty, radii) in [
        ("hash256", &[0, 10, 20, 31, 63][..]),
        ("hash128", &[0, 10, 20, 31][..]),
        ("simhash64", &[0, 2, 3, 5][..]),
    ] {
        let table = format!("i_{ty}");
        interrupt_fixture(&table, ty);
        let mut next = 100_001;
        for point in ["merge_table", "after_seal", "before_publish", "before_recycle"] {
            insert_interrupted_at(&table, ty, next, point);
            next += 16_000;
            if point == "merge_table" {
                let m = crate::am::meta_of(&format!("{table}_c"));
                assert!(m.merging != 0 && m.merge_inputs.len() > 1, "{ty}: {m:?}");
            }
            let context = format!("{ty} stopped at {point}");
            assert_interrupted_lookups_exact(&table, radii, &context);
            assert_interrupted_order_exact(&table, ty, &context);
            assert_eq!(index_check(&format!("{table}_c")), 60_000, "{context}");
        }
        // The next insert finishes the merge; nothing is left half done.
        Spi::run(&format!(
            "INSERT INTO {table} SELECT i, {code} FROM generate_series({next}, {last}) i",
            code = interrupt_flipped(ty, "i"),
            last = next + 15_999,
        ))
        .unwrap();
        let m = crate::am::meta_of(&format!("{table}_c"));
        assert_eq!((m.merging, m.merge_inputs.len()), (0, 0), "{ty}: {m:?}");
        assert_interrupted_lookups_exact(&table, radii, &format!("{ty} after the next insert"));
        assert_eq!(index_check(&format!("{table}_c")), 76_000, "{ty}");
    }
}

/// A lookup far past the radius a wide index's tables are cut for, on wide substrings
/// (`blocks = 8`: 32 bits each), plans its runs whole from the count of its probes: it
/// enumerated them first, 8 times C(32, <= 15) at r = 120 on hash256, 53 s without a check
/// for interrupts (statement_timeout fired only after), to read the run whole in the end
/// (found by the model test, tests/model, at r = 80 after ALTER INDEX ... SET (blocks = 8)).
/// Through an index scan and a bitmap scan, within a timeout that the old plan overran.
#[pg_test]
fn a_wide_lookup_far_past_its_cut_plans_from_the_count_of_its_probes() {
    Spi::run(&format!(
        "CREATE TABLE far (id int, c hash256);
         INSERT INTO far SELECT i, {code} FROM generate_series(1, 1000) i;
         INSERT INTO far SELECT i + 1000, {flipped} FROM generate_series(1, 1000) i;
         CREATE INDEX far_c ON far USING hamming (c) WITH (blocks = 8)",
        code = interrupt_code("hash256", "i"),
        flipped = interrupt_flipped("hash256", "i"),
    ))
    .unwrap();
    let query = "SELECT count(*) FROM far WHERE c <@ hamming_ball((SELECT c FROM far WHERE id = 7), 120)";
    Spi::run(SEQ_SCAN).unwrap();
    let brute = Spi::get_one::<i64>(query).unwrap().unwrap();
    assert!(brute >= 2, "{brute}");
    for set in [INDEX_SCAN, BITMAP_SCAN] {
        Spi::run(set).unwrap();
        Spi::run("SET LOCAL statement_timeout = '5s'").unwrap();
        assert!(plan_of(query).contains("far_c"), "{set}: {}", plan_of(query));
        assert_eq!(Spi::get_one::<i64>(query).unwrap().unwrap(), brute, "{set}");
    }
    Spi::run("RESET statement_timeout; RESET enable_seqscan; RESET enable_indexscan; RESET enable_bitmapscan")
        .unwrap();
}
