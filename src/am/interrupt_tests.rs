// SQL tests of merges stopped at each step by an ERROR (a cancel's, injected with
// `neardup.error_at`), for every code width: lookups stay exact and `hamming_index_check`
// passes in the state each leaves, and the next merge finishes what it left.

/// `30_000` codes of `ty` and a copy of each with `i % 24` bits flipped, in `table (id, c)`,
/// with a hamming index `{table}_c` whose pending list takes 16,000 rows.
fn interrupt_fixture(table: &str, ty: &str) {
    interrupt_fixture_with(table, ty, "");
}

/// `interrupt_fixture`, running `setup` (SQL) once the table exists, before any row.
fn interrupt_fixture_with(table: &str, ty: &str, setup: &str) {
    Spi::run(&format!(
        "CREATE TABLE {table} (id int, c {ty});
         {setup}
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
    insert_stopped_at(table, ty, (first, first + 15_999), point, true);
}

/// Inserts rows `ids` (inclusive) in a statement that the ERROR injected at `point` may
/// stop (must, if `must`).
fn insert_stopped_at(table: &str, ty: &str, (first, last): (i64, i64), point: &str, must: bool) {
    let unstopped = match must {
        true => format!("RAISE EXCEPTION 'the insert was not stopped at {point}';"),
        false => String::new(),
    };
    Spi::run(&format!(
        "SET neardup.error_at = '{point}';
         DO $$ BEGIN
             INSERT INTO {table} SELECT i, {code} FROM generate_series({first}, {last}) i;
             {unstopped}
         EXCEPTION WHEN query_canceled THEN NULL;
         END $$;
         RESET neardup.error_at",
        code = interrupt_flipped(ty, "i"),
    ))
    .unwrap();
}

/// For 40 rows' codes and each radius, the rows within it found by the index (an index
/// scan rescanned under a nested loop, and a bitmap scan) against a sequential scan's.
fn assert_interrupted_lookups_exact(table: &str, radii: &[u32], context: &str) {
    let brute = lookups_brute(table, radii);
    assert_lookups_equal(table, radii, &brute, &[INDEX_SCAN, BITMAP_SCAN], context);
}

/// The 40 rows' codes of `assert_interrupted_lookups_exact`.
fn lookup_centers(table: &str) -> String {
    format!("(SELECT c FROM {table} WHERE id % 1500 = 1) a")
}

/// The rows within each radius of the 40 rows' codes, by a sequential scan.
fn lookups_brute(table: &str, radii: &[u32]) -> Vec<i64> {
    Spi::run(SEQ_SCAN).unwrap();
    let counts = radii
        .iter()
        .map(|r| format!("(count(*) FILTER (WHERE d <= {r}))::text"))
        .collect::<Vec<_>>()
        .join(" || ',' || ");
    let centers = lookup_centers(table);
    let brute = text(&format!(
        "SELECT {counts} FROM (SELECT hamming(b.c, a.c) AS d FROM {centers}, {table} b) x"
    ));
    Spi::run("RESET enable_seqscan; RESET enable_indexscan; RESET enable_bitmapscan").unwrap();
    brute.split(',').map(|n| n.parse().unwrap()).collect()
}

/// The rows within each radius of the 40 rows' codes through the index, in each plan of
/// `plans` (settings that force it), equal `brute`.
fn assert_lookups_equal(table: &str, radii: &[u32], brute: &[i64], plans: &[&str], context: &str) {
    let centers = lookup_centers(table);
    for (r, &brute) in radii.iter().zip(brute) {
        assert!(brute >= 40, "{context}: {brute} rows within {r}");
        for set in plans {
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
/// cost, or at 200 and 400, where rings read part of the order and then the runs whole). A merge
/// table by table leaves a row's table 0 in one run and its other tables in another:
/// reading some of its runs by rings and others whole returned 15 rows twice in these
/// 2,000 (the model test found it), so rings read them as one (`ordered::ring_units`).
fn assert_interrupted_order_exact(table: &str, ty: &str, context: &str) {
    assert_order_equal(table, ty, &order_brute(table, None), context);
}

/// The nearest-first queries of `assert_interrupted_order_exact` (the query code, the
/// LIMIT), with `far` if any, and their answers by brute force.
fn order_brute(table: &str, far: Option<&str>) -> Vec<(String, i64, String)> {
    let near = format!("(SELECT c FROM {table} WHERE id = 7)");
    let flipped = format!("(SELECT c FROM {table} WHERE id = 30011)");
    let mut queries = vec![(near.clone(), 10), (near, 1000), (flipped.clone(), 10), (flipped, 1000)];
    queries.extend(far.map(|far| (far.to_string(), 100)));
    (queries.into_iter())
        .map(|(q, limit)| {
            let brute = knn_brute_on(table, "c", &q, Some(limit));
            (q, limit, brute)
        })
        .collect()
}

/// The answers of `queries` (of `order_brute`) through the index equal brute force's.
fn assert_order_equal(table: &str, ty: &str, queries: &[(String, i64, String)], context: &str) {
    // Wide codes are never read by rings.
    let budgets: &[&str] = if ty == "simhash64" { &["0", "200", "400", "1e12"] } else { &["0"] };
    for budget in budgets {
        Spi::run(&format!("SET LOCAL neardup.ring_budget = {budget}")).unwrap();
        for (q, limit, brute) in queries {
            let by_index = knn_by_index_on(table, "c", q, Some(*limit));
            let context = format!("{context}: budget {budget}, q = {q}, LIMIT {limit}");
            assert_eq!(&by_index, brute, "{context}");
            assert_eq!(by_index.split(',').count() as i64, *limit, "{context}");
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

/// The trees a merge table by table has left to write: its inputs' trees not yet empty.
fn trees_left(index: &str) -> usize {
    let m = crate::am::meta_of(index);
    let inputs = m.runs.iter().filter(|r| m.merge_inputs.contains(&r.id));
    let empty = neardup_core::search::index_page::Tree::EMPTY;
    inputs.flat_map(|r| &r.trees).filter(|t| **t != empty).count()
}

/// A merge table by table stopped after each of its trees in turn (the next insert goes
/// on with it, and is stopped after the next tree), for every code width: in each state
/// (each table moved part by part to the new run) lookups (by an index scan and a bitmap
/// scan in turn) and the nearest rows equal brute force's, the latter on 64-bit codes with
/// the merge's runs read whole, by rings at any cost, and at budgets where rings give up
/// part way (`ordered::ring_units`: rings read the runs of such a merge as one). Reading
/// them one by one, or only the first of them in either the rings or the whole read that
/// follows a give-up, fails it.
#[pg_test]
fn a_merge_stopped_after_each_of_its_trees_leaves_lookups_exact() {
    for (ty, radii) in [
        ("simhash64", &[3, 5][..]),
        ("hash128", &[31][..]),
        ("hash256", &[31][..]),
    ] {
        let (table, index) = (format!("t_{ty}"), format!("t_{ty}_c"));
        // Every fourth bit of the 64-bit codes is zero, so that a query with those bits set
        // is 16 bits from every row, as far in each table's leading block: its rings,
        // expecting uniform rows, give up part way (at budget 200) and read the unread
        // rows of the merge's runs whole, and the nearest are among those.
        let (setup, far) = match ty {
            "simhash64" => (
                format!(
                    "CREATE FUNCTION sparse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
                         NEW.c := (NEW.c::bigint & x'7777777777777777'::bigint)::simhash64;
                         RETURN NEW;
                     END $$;
                     CREATE TRIGGER sparse BEFORE INSERT ON {table}
                         FOR EACH ROW EXECUTE FUNCTION sparse();"
                ),
                Some(format!(
                    "(SELECT (c::bigint | x'8888888888888888'::bigint)::simhash64 FROM {table} WHERE id = 7)"
                )),
            ),
            _ => (String::new(), None),
        };
        interrupt_fixture_with(&table, ty, &setup);
        insert_interrupted_at(&table, ty, 100_001, "merge_table");
        // From now on every insert merges, and so goes on with the merge.
        Spi::run(&format!("ALTER INDEX {index} SET (pending_limit = 1)")).unwrap();
        // The rows stay those of the fixture until the merge ends: each insert is undone.
        let (lookups, order) = (lookups_brute(&table, radii), order_brute(&table, far.as_deref()));
        let (mut states, mut next) = (0, 200_001);
        while crate::am::meta_of(&index).merging != 0 {
            let left = trees_left(&index);
            let context = format!("{ty}: {left} trees left to merge");
            // An index scan and a bitmap scan in turn: the states are many, the plans alike.
            let plan = [INDEX_SCAN, BITMAP_SCAN][states % 2];
            assert_lookups_equal(&table, radii, &lookups, &[plan], &context);
            assert_order_equal(&table, ty, &order, &context);
            insert_stopped_at(&table, ty, (next, next), "merge_table", false);
            next += 1;
            states += 1;
            let m = crate::am::meta_of(&index);
            assert!(m.merging == 0 || trees_left(&index) < left, "{context}: {m:?}");
        }
        assert!(states >= 8, "{ty}: the merge stopped in {states} states");
        assert_interrupted_lookups_exact(&table, radii, &format!("{ty}: merged"));
        // The last insert, which the merge's end did not stop, added its row.
        let rows = Spi::get_one::<i64>(&format!("SELECT count(*) FROM {table}"));
        assert_eq!(index_check(&index), rows.unwrap().unwrap(), "{ty}");
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

/// `crate::am::compact` as SQL, so that a test can stop it with an ERROR inside a DO
/// block's subtransaction (which releases what the compaction held).
#[pg_extern]
fn compact_index_for_tests(index: &str) -> bool {
    crate::am::compact(index)
}

/// A worker's compaction stopped by an ERROR at each of its steps (before it looks, after
/// sealing the pending list, before publishing its run, before recycling) leaves every
/// lookup and ordered scan exact and the index checking clean, for every code width; the
/// next compaction makes it one run.
#[pg_test]
fn compactions_stopped_at_every_step_leave_lookups_exact() {
    for (ty, radii) in [
        ("hash256", &[0, 10, 31][..]),
        ("hash128", &[0, 10, 31][..]),
        ("simhash64", &[0, 3, 5][..]),
    ] {
        let (table, index) = (format!("k_{ty}"), format!("k_{ty}_c"));
        interrupt_fixture(&table, ty);
        // Pending rows, under the limit: a compaction merges them with the run into one.
        Spi::run(&format!(
            "INSERT INTO {table} SELECT i, {code} FROM generate_series(60001, 70000) i",
            code = interrupt_flipped(ty, "i"),
        ))
        .unwrap();
        for point in ["compaction", "after_seal", "before_publish", "before_recycle"] {
            Spi::run(&format!(
                "SET neardup.error_at = '{point}';
                 DO $$ BEGIN
                     PERFORM tests.compact_index_for_tests('{index}');
                     RAISE EXCEPTION 'the compaction was not stopped at {point}';
                 EXCEPTION WHEN query_canceled THEN NULL;
                 END $$;
                 RESET neardup.error_at"
            ))
            .unwrap();
            let context = format!("{ty} compaction stopped at {point}");
            assert_interrupted_lookups_exact(&table, radii, &context);
            assert_interrupted_order_exact(&table, ty, &context);
            assert_eq!(index_check(&index), 70_000, "{context}");
        }
        assert!(Spi::get_one::<bool>(&format!(
            "SELECT tests.compact_index_for_tests('{index}')"
        ))
        .unwrap()
        .unwrap());
        let m = crate::am::meta_of(&index);
        assert_eq!((m.runs.len(), m.sealed.id, m.merging), (1, 0, 0), "{ty}: {m:?}");
        assert_interrupted_lookups_exact(&table, radii, &format!("{ty} compacted"));
        assert_eq!(index_check(&index), 70_000, "{ty}");
    }
}
