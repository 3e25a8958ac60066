// SQL tests of the wide codes (hash256, hash128): forms, errors, order, distance and all pairs.

/// `wide(n)`: n hash256 codes in groups: a random center, near-copies about 8, 16 and 32 bits
/// off it (random masks ANDed together flip each bit with probability 1/32, 1/16 or 1/8),
/// an exact duplicate, and codes sharing their second 64 bits but for one bit.
fn wide_fixture(table: &str, groups: i64) {
    Spi::run(&format!(
        "CREATE FUNCTION pg_temp.rbits(seed int) RETURNS bit(256) LANGUAGE sql IMMUTABLE AS $$
             SELECT ('x' || md5(seed::text) || md5((seed + 7777777)::text))::bit(256) $$;
         CREATE TABLE {table} (id bigserial PRIMARY KEY, code hash256);
         INSERT INTO {table} (code)
         SELECT (CASE v
                     WHEN 0 THEN pg_temp.rbits(g)
                     WHEN 1 THEN pg_temp.rbits(g) # (pg_temp.rbits(g * 10 + 1) & pg_temp.rbits(g * 10 + 2)
                                 & pg_temp.rbits(g * 10 + 3) & pg_temp.rbits(g * 10 + 4) & pg_temp.rbits(g * 10 + 5))
                     WHEN 2 THEN pg_temp.rbits(g) # (pg_temp.rbits(g * 10 + 6) & pg_temp.rbits(g * 10 + 7)
                                 & pg_temp.rbits(g * 10 + 8) & pg_temp.rbits(g * 10 + 9))
                     WHEN 3 THEN pg_temp.rbits(g) # (pg_temp.rbits(-g) & pg_temp.rbits(-g - 1000000)
                                 & pg_temp.rbits(-g - 2000000))
                     WHEN 4 THEN pg_temp.rbits(g)
                     ELSE substring(pg_temp.rbits(g + 5000000) FROM 1 FOR 64)
                          || (x'0123456789abcdef' # (B'1'::bit(64) >> (g % 64)::int))
                          || substring(pg_temp.rbits(g + 5000000) FROM 129 FOR 128)
                 END)::bit(256)::hash256
         FROM generate_series(1, {groups}) g, generate_series(0, 5) v"
    ))
    .unwrap();
}

/// The pairs within `radius` by a self-join counting the bits of the XOR of bit strings.
fn brute_wide_pairs(table: &str, bits: i32, radius: i32) -> String {
    text(&format!(
        "SELECT coalesce(string_agg(format('%s-%s:%s', a, b, d), ',' ORDER BY a, b), '')
         FROM (SELECT x.id AS a, y.id AS b, bit_count(x.code::bit({bits}) # y.code::bit({bits})) AS d
               FROM {table} x JOIN {table} y ON x.id < y.id OFFSET 0) p
         WHERE d <= {radius}"
    ))
}

fn wide_pairs(table: &str, radius: i32) -> String {
    text(&format!(
        "SELECT coalesce(string_agg(format('%s-%s:%s', a, b, distance), ',' ORDER BY a, b), '')
         FROM hamming_pairs('{table}', 'id', 'code', {radius})"
    ))
}

#[pg_test]
fn wide_codes_text_binary_and_bit_forms_round_trip() {
    let pdq = "f8f8f0cee0f4a84f06370a22038f63f0b36e2ed596621e1d33e6b39c4e9c9b22";
    assert_eq!(text(&format!("SELECT '{pdq}'::hash256::text")), pdq);
    assert_eq!(text(&format!("SELECT ' 0X{}'::hash256::text", pdq.to_uppercase())), pdq);
    assert_eq!(text(&format!("SELECT '{}'::hash128::text", &pdq[..32])), &pdq[..32]);
    assert_eq!(text(&format!("SELECT encode('{pdq}'::hash256::bytea, 'hex')")), pdq);
    assert_eq!(text(&format!("SELECT decode('{pdq}', 'hex')::hash256::text")), pdq);
    assert_eq!(text(&format!("SELECT encode(hash256_send('{pdq}'), 'hex')")), pdq);
    // the first bit of the bit string is the most significant one of the first hex digit
    assert!(text(&format!("SELECT '{pdq}'::hash256::bit(256)::text")).starts_with("11111000"));
    assert_eq!(text(&format!("SELECT ('x' || '{pdq}')::bit(256)::hash256::text")), pdq);
    assert_eq!(text(&format!("SELECT '{pdq}'::hash256::bit(256)::hash256::text")), pdq);
    // an untyped literal beside a wide code takes its type (and alone stays a simhash64)
    assert_eq!(int(&format!("SELECT hamming('{pdq}'::hash256, '{}')", "0".repeat(64))), 128);
    assert!(is_null("SELECT NULL::hash256"));
    assert!(is_null("SELECT hamming(NULL::hash128, NULL::hash128)"));
}

#[pg_test]
fn wide_codes_bad_input_has_sqlstates() {
    for bad in ["", "abc", &"0".repeat(63), &"0".repeat(65), &format!("{}g", "0".repeat(63))] {
        assert_eq!(sqlstate(&format!("SELECT '{bad}'::hash256")).as_deref(), Some("22P02"), "{bad:?}");
    }
    assert_eq!(sqlstate(&format!("SELECT '{}'::hash128", "0".repeat(64))).as_deref(), Some("22P02"));
    assert_eq!(sqlstate("SELECT '\\x0102'::bytea::hash256").as_deref(), Some("22026"));
    assert_eq!(sqlstate("SELECT repeat('1', 255)::bit(255)::hash256").as_deref(), Some("22026"));
    assert_eq!(sqlstate("SELECT repeat('1', 256)::bit(256)::hash128").as_deref(), Some("22026"));
    assert_eq!(
        error_of(&format!("SELECT '{}'::hash256", "0".repeat(63))).as_deref(),
        Some(&*format!(
            "22P02 invalid input syntax for type hash256: \"{}\" (expected 64 hex digits, found 63)",
            "0".repeat(63)
        ))
    );
}

#[pg_test]
fn wide_codes_order_hash_and_hamming_agree_with_their_bits() {
    wide_fixture("w", 40);
    // order: the text order; equality through a btree and a hash index and a hash join
    assert!(boolean(
        "SELECT array_agg(code ORDER BY code)::text[] = array_agg(code::text ORDER BY code::text COLLATE \"C\") FROM w"
    ));
    Spi::run("SET LOCAL enable_seqscan = off").unwrap();
    for method in ["btree", "hash"] {
        Spi::run(&format!("CREATE INDEX w_{method} ON w USING {method} (code)")).unwrap();
        let plan = plan_of("SELECT id FROM w WHERE code = (SELECT code FROM w WHERE id = 5)");
        assert!(plan.contains(&format!("w_{method}")), "{plan}");
        assert_eq!(int("SELECT count(*) FROM w x WHERE code = (SELECT code FROM w WHERE id = 5)"), 2);
        Spi::run(&format!("DROP INDEX w_{method}")).unwrap();
    }
    Spi::run("RESET enable_seqscan; SET LOCAL enable_mergejoin = off; SET LOCAL enable_nestloop = off").unwrap();
    assert_eq!(int("SELECT count(*) FROM w x JOIN w y ON x.code = y.code AND x.id < y.id"), 40);
    // the distance: the bits of the bit strings' XOR, for every pair
    assert!(boolean(
        "SELECT bool_and(hamming(x.code, y.code) = bit_count(x.code::bit(256) # y.code::bit(256))
                         AND x.code <~> y.code = hamming(x.code, y.code)
                         AND hamming(x.code::bit(256)::bit(128)::hash128, y.code::bit(256)::bit(128)::hash128)
                             = bit_count(x.code::bit(256)::bit(128) # y.code::bit(256)::bit(128)))
         FROM w x, w y"
    ));
    assert_eq!(int("SELECT max(hamming(x.code, y.code)) FROM w x, w y"), int("SELECT max(bit_count(x.code::bit(256) # y.code::bit(256))) FROM w x, w y"));
}

/// hamming_within on wide codes is hamming(a, b) <= k for every k, false for a negative k
/// and NULL when an argument is NULL, like the 64-bit one (0.6.0 said false for a NULL k).
#[pg_test]
fn wide_hamming_within_agrees_including_nulls_and_negative_k() {
    wide_fixture("w", 10);
    for (ty, bits) in [("hash256", 256), ("hash128", 128)] {
        let code = |side: &str| format!("{side}.code::bit(256)::bit({bits})::{ty}");
        // `+ 0` keeps the planner hook away from the reference comparison.
        let q = format!(
            "SELECT bool_and(hamming_within({x}, {y}, k) IS NOT DISTINCT FROM (hamming({x}, {y}) + 0 <= k))
             FROM w x, w y, (VALUES (-2147483648), (-1), (0), (8), (31), ({bits}), (NULL)) r(k)",
            x = code("x"),
            y = code("y")
        );
        assert!(boolean(&q), "{q}");
        let zero = format!("'{}'::{ty}", "0".repeat(bits / 4));
        assert!(is_null(&format!("SELECT hamming_within({zero}, {zero}, NULL)")));
        assert!(is_null(&format!("SELECT hamming_within(NULL, {zero}, 3)")));
        assert!(!boolean(&format!("SELECT hamming_within({zero}, {zero}, -1)")));
    }
}

#[pg_test]
fn wide_pairs_equal_the_brute_force_self_join() {
    wide_fixture("w", 60);
    for radius in [0, 3, 12, 24, 31, 40] {
        assert_eq!(wide_pairs("w", radius), brute_wide_pairs("w", 256, radius), "radius {radius}");
    }
    // near-copies are found at PDQ's threshold: the groups are not all exact duplicates
    assert!(int("SELECT count(*) FROM hamming_pairs('w', 'id', 'code', 31) WHERE distance BETWEEN 1 AND 31") > 60);
    Spi::run(
        "CREATE TABLE w128 AS SELECT id, code::bit(256)::bit(128)::hash128 AS code FROM w;
         INSERT INTO w128 VALUES (100000, NULL)",
    )
    .unwrap();
    for radius in [0, 10, 20] {
        assert_eq!(wide_pairs("w128", radius), brute_wide_pairs("w128", 128, radius), "hash128, radius {radius}");
    }
    for bad in ["'w', 'id', 'code', 256", "'w128', 'id', 'code', 128", "'w', 'id', 'code', -1"] {
        let error = error_of(&format!("SELECT count(*) FROM hamming_pairs({bad})"));
        assert!(error.as_deref().is_some_and(|e| e.starts_with("22023")), "{bad}: {error:?}");
    }
    Spi::run("SET LOCAL maintenance_work_mem = '1MB'; INSERT INTO w (code) SELECT code FROM w, generate_series(1, 12)").unwrap();
    let error = error_of("SELECT count(*) FROM hamming_pairs('w', 'id', 'code', 31)");
    assert!(error.as_deref().is_some_and(|e| e.starts_with("53200")), "{error:?}");
}

/// `neardup_clusters` as (id:cluster:representative), by brute force over every pair: the
/// components of the pairs within `radius`, or the greedy stars with rows taken in `order`.
fn brute_wide_clusters(table: &str, radius: u32, stars: bool, order: &str) -> String {
    let rows: Vec<(i64, Option<Vec<u8>>)> = Spi::connect(|client| {
        client
            .select(&format!("SELECT id, code::bytea FROM {table} ORDER BY {order}"), None, &[])
            .unwrap()
            .map(|row| (row.get::<i64>(1).unwrap().unwrap(), row.get::<Vec<u8>>(2).unwrap()))
            .collect()
    });
    let near = |a: usize, b: usize| match (&rows[a].1, &rows[b].1) {
        (Some(x), Some(y)) => x.iter().zip(y).map(|(p, q)| (p ^ q).count_ones()).sum::<u32>() <= radius,
        _ => a == b,
    };
    let mut representative: Vec<usize> = (0..rows.len()).collect();
    if stars {
        let mut taken = vec![false; rows.len()];
        for r in 0..rows.len() {
            if !taken[r] {
                for m in r..rows.len() {
                    if !taken[m] && near(r, m) {
                        taken[m] = true;
                        representative[m] = r;
                    }
                }
            }
        }
    } else {
        // Labels spread to a fixed point: each row takes the smallest label of its neighbours.
        let mut changed = true;
        while changed {
            changed = false;
            for a in 0..rows.len() {
                for b in 0..rows.len() {
                    if near(a, b) && representative[b] < representative[a] {
                        representative[a] = representative[b];
                        changed = true;
                    }
                }
            }
        }
    }
    // A cluster's label is its smallest id.
    let mut label = vec![i64::MAX; rows.len()];
    for (r, &rep) in representative.iter().enumerate() {
        label[rep] = label[rep].min(rows[r].0);
    }
    let mut out: Vec<(i64, String)> = (0..rows.len())
        .map(|r| (rows[r].0, format!("{}:{}:{}", rows[r].0, label[representative[r]], representative[r] == r)))
        .collect();
    out.sort();
    out.into_iter().map(|(_, row)| row).collect::<Vec<_>>().join(",")
}

fn wide_clusters(table: &str, radius: i32, priority: &str, method: &str) -> String {
    text(&format!(
        "SELECT string_agg(id || ':' || cluster_id || ':' || is_representative, ',' ORDER BY id)
         FROM neardup_clusters('{table}', 'id', 'code', {radius}, {priority}, '{method}')"
    ))
}

#[pg_test]
fn wide_clusters_equal_brute_force_components_and_stars() {
    wide_fixture("w", 25);
    Spi::run("INSERT INTO w (code) VALUES (NULL)").unwrap();
    for radius in [0, 12, 31, 40] {
        let brute = |stars, order| brute_wide_clusters("w", radius as u32, stars, order);
        assert_eq!(wide_clusters("w", radius, "NULL", "components"), brute(false, "id"), "radius {radius}");
        assert_eq!(wide_clusters("w", radius, "NULL", "representatives"), brute(true, "id"), "stars, radius {radius}");
        assert_eq!(wide_clusters("w", radius, "'id % 7, id DESC'", "representatives"), brute(true, "id % 7, id DESC"), "stars by priority, radius {radius}");
    }
    // near-copies do cluster at PDQ's threshold; the five-argument form is the components
    assert!(int("SELECT count(DISTINCT cluster_id) FROM neardup_clusters('w', 'id', 'code', 31)") < 120);
    assert_eq!(
        text("SELECT string_agg(id || ':' || cluster_id, ',' ORDER BY id) FROM neardup_clusters('w', 'id', 'code', 31)"),
        text("SELECT string_agg(id || ':' || cluster_id, ',' ORDER BY id) FROM neardup_clusters('w', 'id', 'code', 31, NULL, 'components')")
    );
    Spi::run("CREATE TABLE w128 AS SELECT id, code::bit(256)::bit(128)::hash128 AS code FROM w").unwrap();
    for radius in [0, 16] {
        assert_eq!(wide_clusters("w128", radius, "NULL", "components"), brute_wide_clusters("w128", radius as u32, false, "id"), "hash128, radius {radius}");
    }
    for bad in ["'w', 'id', 'code', 256", "'w128', 'id', 'code', 128", "'w', 'id', 'code', -1"] {
        let error = error_of(&format!("SELECT count(*) FROM neardup_clusters({bad})"));
        assert!(error.as_deref().is_some_and(|e| e.starts_with("22023")), "{bad}: {error:?}");
    }
    // 151 rows, 31 times: 1.5 MB held
    Spi::run("SET LOCAL maintenance_work_mem = '1MB'; INSERT INTO w (code) SELECT code FROM w, generate_series(1, 30)").unwrap();
    let error = error_of("SELECT count(*) FROM neardup_clusters('w', 'id', 'code', 31)");
    assert!(error.as_deref().is_some_and(|e| e.starts_with("53200")), "{error:?}");
}

#[pg_test]
fn wide_gin_lookups_on_hamming_keys_equal_brute_force() {
    wide_fixture("w", 60);
    Spi::run(
        "INSERT INTO w (code) VALUES (NULL);
         CREATE INDEX w_keys16 ON w USING gin (hamming_keys(code, 16));
         CREATE INDEX w_keys11 ON w USING gin (hamming_keys(code, 11));
         CREATE TABLE w128 AS SELECT id, code::bit(256)::bit(128)::hash128 AS code FROM w;
         CREATE INDEX ON w128 USING gin (hamming_keys(code, 8));
         ANALYZE w; ANALYZE w128;
         SET LOCAL enable_seqscan = off",
    )
    .unwrap();
    // every code of the table as the probe, through the index (a nested loop of bitmap
    // scans), against every pair by brute force
    for (table, bits, substrings, radius) in [("w", 256, 16, 31), ("w", 256, 16, 0), ("w", 256, 11, 24), ("w128", 128, 8, 20)] {
        let indexed = format!(
            "SELECT coalesce(string_agg(a.id || '-' || b.id, ',' ORDER BY a.id, b.id), '')
             FROM {table} a JOIN {table} b
               ON hamming_keys(b.code, {substrings}) && hamming_probe_keys(a.code, {radius}, {substrings})
                  AND hamming(a.code, b.code) <= {radius}"
        );
        let plan = plan_of(&indexed);
        assert!(plan.contains("Bitmap Index Scan"), "{table} {substrings}: {plan}");
        let brute = text(&format!(
            "SELECT coalesce(string_agg(a.id || '-' || b.id, ',' ORDER BY a.id, b.id), '')
             FROM {table} a JOIN {table} b ON bit_count(a.code::bit({bits}) # b.code::bit({bits})) <= {radius} OFFSET 0"
        ));
        assert_eq!(text(&indexed), brute, "{table}, {substrings} substrings, radius {radius}");
    }
    assert!(int("SELECT count(*) FROM w a JOIN w b ON hamming(a.code, b.code) BETWEEN 1 AND 31") > 100);
    // the keys: one a substring, tagged with its number; the probe's are sorted and distinct
    assert_eq!(int("SELECT cardinality(hamming_keys(code, 16)) FROM w WHERE id = 1"), 16);
    assert_eq!(int("SELECT count(DISTINCT k >> 32) FROM w, unnest(hamming_keys(code, 11)) k WHERE id = 1"), 11);
    assert_eq!(int("SELECT cardinality(hamming_probe_keys(code, 31, 16)) FROM w WHERE id = 1"), 16 * 17);
    assert_eq!(text("SELECT hamming_keys('00000000000000000000000000000001'::hash128, 4)::text"), "{0,4294967296,8589934592,12884901889}");
    for bad in [
        "hamming_keys(code, 0)",
        "hamming_keys(code, 4)",
        "hamming_keys(code, 257)",
        "hamming_probe_keys(code, -1, 16)",
        "hamming_probe_keys(code, 256, 16)",
        "hamming_probe_keys(code::bit(256)::bit(128)::hash128, 128, 8)",
    ] {
        assert_eq!(sqlstate(&format!("SELECT {bad} FROM w WHERE id = 1")).as_deref(), Some("22023"), "{bad}");
    }
    let error = error_of("SELECT hamming_probe_keys(code, 255, 8) FROM w WHERE id = 1");
    assert!(error.as_deref().is_some_and(|e| e.starts_with("54000")), "{error:?}");
}

fn index_check(index: &str) -> i64 {
    Spi::get_one::<i64>(&format!("SELECT hamming_index_check('{index}')"))
        .unwrap()
        .unwrap()
}

/// The runs of an index of wide codes: a build in memory and one sorting externally, pending
/// rows written as runs, merges in memory and table by table, and a compaction leave every
/// row in every substring table of one run with its code, or pending
/// (`hamming_index_check`, which reads each table back to the code and compares it with
/// the heap's); lookups stay exact through all of it.
#[pg_test]
fn wide_runs_hold_every_row_in_every_substring_table() {
    wide_fixture("w", 100);
    Spi::run(
        "INSERT INTO w (code) SELECT pg_temp.rbits(g + 9000000)::hash256
             FROM generate_series(1, 24000) g;
         INSERT INTO w (code) VALUES (NULL);
         CREATE TABLE w128 AS SELECT id, code::bit(256)::bit(128)::hash128 AS code FROM w",
    )
    .unwrap();
    let rows = Spi::get_one::<i64>("SELECT count(*) FROM w").unwrap().unwrap();
    // 1 MB holds about 10,000 rows of 256 bits and their sorted copy: the larger build
    // sorts externally, through bytea tuplesorts.
    for (memory, options, substrings) in [
        ("64MB", "max_distance = 8", None),
        ("1MB", "max_distance = 8, blocks = 16", Some(16)),
    ] {
        Spi::run(&format!(
            "SET LOCAL maintenance_work_mem = '{memory}';
             CREATE INDEX w_built ON w USING hamming (code) WITH ({options});
             CREATE INDEX w128_built ON w128 USING hamming (code) WITH ({options});
             RESET maintenance_work_mem"
        ))
        .unwrap();
        for index in ["w_built", "w128_built"] {
            assert_eq!(index_check(index), rows, "{index} {options}");
            let m = crate::am::meta_of(index);
            assert_eq!(m.runs.len(), 1, "{m:?}");
            assert_eq!(m.runs[0].rows, rows as u64 - 1, "{m:?}");
            if let Some(count) = substrings {
                assert_eq!(m.runs[0].blocks, count, "{m:?}");
            }
        }
        Spi::run("DROP INDEX w_built; DROP INDEX w128_built").unwrap();
    }
    // Grown by inserts: each full pending list becomes a run, runs merge, and a compaction
    // makes one run (table by table: more than 65,536 rows).
    Spi::run(
        "CREATE TABLE g (id bigint, code hash256);
         CREATE INDEX g_code ON g USING hamming (code)
             WITH (max_distance = 8, blocks = 16, pending_limit = 3000)",
    )
    .unwrap();
    let mut inserted = 0;
    for copy in 0..3 {
        for part in 0..4 {
            Spi::run(&format!(
                "INSERT INTO g SELECT id + {copy} * 1000000, code FROM w WHERE id % 4 = {part}"
            ))
            .unwrap();
            inserted += Spi::get_one::<i64>(&format!("SELECT count(*) FROM w WHERE id % 4 = {part}"))
                .unwrap()
                .unwrap();
            assert_eq!(index_check("g_code"), inserted, "copy {copy} part {part}");
            assert_wide_lookups_exact("g", "hash256", &[(9, 24), (77, 31)]);
        }
    }
    assert!(crate::am::meta_of("g_code").runs.len() > 1);
    assert!(crate::am::compact("g_code"));
    let m = crate::am::meta_of("g_code");
    assert_eq!((m.runs.len(), m.pending.pages), (1, 0), "{m:?}");
    assert_eq!(m.runs[0].rows, inserted as u64 - 3, "{m:?}");
    assert_eq!(index_check("g_code"), inserted);
    assert_wide_lookups_exact("g", "hash256", &[(9, 24), (77, 31)]);
}

/// The ids of the rows of `table` that `condition` selects, in id order, with the plan
/// the settings `set` leave (a brute force when they turn index scans off).
fn wide_ids(table: &str, condition: &str, set: &str) -> String {
    Spi::run(set).unwrap();
    let ids = text(&format!(
        "SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM {table} WHERE {condition}"
    ));
    Spi::run("RESET enable_seqscan; RESET enable_indexscan; RESET enable_bitmapscan").unwrap();
    ids
}

const INDEX_SCAN: &str =
    "SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_indexscan = on";
const BITMAP_SCAN: &str =
    "SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = on";
const SEQ_SCAN: &str =
    "SET LOCAL enable_seqscan = on; SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off";

/// Lookups through the index of `table`'s `code` (an index scan and a bitmap scan, by
/// `<@ hamming_ball` and `hamming_within`) equal a brute force, for the code of row `id`
/// at each `(id, radius)`, at radius 0 and beyond, and for a code of no row.
fn assert_wide_lookups_exact(table: &str, ty: &str, probes: &[(i64, i32)]) {
    for &(id, radius) in probes {
        let q = format!("(SELECT code FROM {table} WHERE id = {id})");
        for r in [0, radius, radius + 9, 3 * radius] {
            let brute = wide_ids(table, &format!("hamming(code, {q}) + 0 <= {r}"), SEQ_SCAN);
            for set in [INDEX_SCAN, BITMAP_SCAN] {
                let ball = format!("code <@ hamming_ball({q}, {r})");
                Spi::run(set).unwrap();
                let plan = plan_of(&format!("SELECT id FROM {table} WHERE {ball}"));
                assert!(plan.contains("Index Cond"), "{plan}");
                assert_eq!(wide_ids(table, &ball, set), brute, "{table} {id} {r}");
                let within = format!("hamming_within(code, {q}, {r})");
                assert_eq!(wide_ids(table, &within, set), brute, "{table} {id} {r} within");
                // The planner hook's rewrite of the natural bound (as `<~>` too).
                for natural in [
                    format!("hamming(code, {q}) <= {r}"),
                    format!("code <~> {q} < {}", r + 1),
                ] {
                    Spi::run(set).unwrap();
                    let plan = plan_of(&format!("SELECT id FROM {table} WHERE {natural}"));
                    assert!(plan.contains("Index Cond"), "{natural}: {plan}");
                    assert_eq!(wide_ids(table, &natural, set), brute, "{table} {natural}");
                }
            }
        }
    }
    let far = format!("'{}'::{ty}", "0".repeat(if ty == "hash256" { 64 } else { 32 }));
    let brute = wide_ids(table, &format!("hamming(code, {far}) + 0 <= 60"), SEQ_SCAN);
    let index = wide_ids(table, &format!("code <@ hamming_ball({far}, 60)"), INDEX_SCAN);
    assert_eq!(index, brute);
}

/// `ORDER BY code <~> q LIMIT n` through the index: the distances in order equal a brute
/// force's, each row's distance is its own, and no row is missed below the last distance.
fn assert_wide_nearest_exact(table: &str, q: &str, limit: i64) {
    let nearest = |set: &str| {
        Spi::run(set).unwrap();
        let rows = text(&format!(
            "SELECT coalesce(string_agg(id || ':' || coalesce(d::text, 'null'), ',' ORDER BY n), '')
             FROM (SELECT id, code <~> {q} AS d, row_number() OVER () AS n
                   FROM (SELECT id, code FROM {table} ORDER BY code <~> {q} LIMIT {limit}) s) t"
        ));
        Spi::run("RESET enable_seqscan; RESET enable_indexscan; RESET enable_bitmapscan").unwrap();
        rows
    };
    Spi::run(INDEX_SCAN).unwrap();
    let plan = plan_of(&format!(
        "SELECT id FROM {table} ORDER BY code <~> {q} LIMIT {limit}"
    ));
    assert!(plan.contains("Order By"), "{plan}");
    let by_index = nearest(INDEX_SCAN);
    let brute = nearest(SEQ_SCAN);
    let parse = |rows: &str| -> Vec<(i64, Option<i64>)> {
        rows.split(',')
            .filter(|r| !r.is_empty())
            .map(|r| {
                let (id, d) = r.split_once(':').unwrap();
                (id.parse().unwrap(), d.parse().ok())
            })
            .collect()
    };
    let (index, brute) = (parse(&by_index), parse(&brute));
    let distances = |rows: &[(i64, Option<i64>)]| rows.iter().map(|r| r.1).collect::<Vec<_>>();
    assert_eq!(distances(&index), distances(&brute), "{q} {limit}");
    // Ties at the last distance may be any of the tied rows; every nearer row is there.
    let last = index.last().map(|r| r.1);
    let nearer = |rows: &[(i64, Option<i64>)]| {
        let mut ids: Vec<i64> = rows.iter().filter(|r| Some(r.1) != last).map(|r| r.0).collect();
        ids.sort();
        ids
    };
    assert_eq!(nearer(&index), nearer(&brute), "{q} {limit}");
}

/// Lookups and nearest codes through `hamming` indexes of `hash256` and `hash128` codes
/// equal brute force on clustered, duplicated and shared-substring codes, with rows in
/// several runs and pending, and NULL codes.
#[pg_test]
fn wide_index_lookups_and_nearest_equal_brute_force() {
    wide_fixture("w", 150);
    Spi::run(
        "INSERT INTO w (code) SELECT pg_temp.rbits(g + 8000000)::hash256 FROM generate_series(1, 2000) g;
         INSERT INTO w (code) VALUES (NULL), (NULL);
         CREATE TABLE w128 AS SELECT id, code::bit(256)::bit(128)::hash128 AS code FROM w WHERE id % 3 <> 0;
         CREATE INDEX ON w USING hamming (code) WITH (pending_limit = 400);
         CREATE INDEX ON w128 USING hamming (code) WITH (pending_limit = 400);
         INSERT INTO w (code) SELECT code FROM w WHERE id % 5 = 0;
         INSERT INTO w128 SELECT id, code::bit(256)::bit(128)::hash128 FROM w WHERE id % 3 = 0",
    )
    .unwrap();
    for (table, ty) in [("w", "hash256"), ("w128", "hash128")] {
        let m = crate::am::meta_of(&format!("{table}_code_idx"));
        assert!(m.runs.len() + (m.pending.pages > 0) as usize > 1, "{m:?}");
        assert_wide_lookups_exact(table, ty, &[(1, 31), (2, 16), (5, 40), (6, 8), (901, 31)]);
        for (id, limit) in [(3, 10), (4, 100), (900, 5)] {
            let q = format!("(SELECT code FROM {table} WHERE id = {id})");
            assert_wide_nearest_exact(table, &q, limit);
        }
        // Past every distance: all rows, the NULL codes last.
        let q = format!("(SELECT code FROM {table} WHERE id = 7)");
        let rows = Spi::get_one::<i64>(&format!("SELECT count(*) FROM {table}")).unwrap().unwrap();
        assert_wide_nearest_exact(table, &q, rows + 5);
    }
    // More rows than the passes that read every row keep (256, 1,024, 4,096, then 16,384):
    // each such pass stops at the distance where its target is reached, the next one goes
    // on from there.
    Spi::run(
        "CREATE TABLE many AS SELECT g AS id, pg_temp.rbits(g + 7000000)::hash256 AS code
             FROM generate_series(1, 9000) g;
         CREATE INDEX ON many USING hamming (code)",
    )
    .unwrap();
    assert_wide_nearest_exact("many", "(SELECT code FROM many WHERE id = 3)", 7000);
}

/// `code <@@ hamming_batch(keys, codes, r)` through the index (index and bitmap scans, the
/// plan asserted) equals a brute force with each row once, and `hamming_batch_keys` names
/// the balls holding each row: a few centers (each probing the large run) and hundreds (runs
/// read whole once), pending rows, repeated centers and keys, NULL codes, both widths.
#[pg_test]
fn wide_batch_lookups_equal_brute_force() {
    wide_fixture("w", 150);
    Spi::run(
        "INSERT INTO w (code) SELECT pg_temp.rbits(g + 8000000)::hash256 FROM generate_series(1, 20000) g;
         INSERT INTO w (code) VALUES (NULL);
         CREATE TABLE w128 AS SELECT id, code::bit(256)::bit(128)::hash128 AS code FROM w;
         CREATE INDEX ON w USING hamming (code) WITH (pending_limit = 3000);
         CREATE INDEX ON w128 USING hamming (code) WITH (pending_limit = 3000);
         INSERT INTO w (code) SELECT code FROM w WHERE id % 7 = 0 AND id < 4000;
         INSERT INTO w128 SELECT id + 100000, code FROM w128 WHERE id % 7 = 0 AND id < 4000",
    )
    .unwrap();
    for table in ["w", "w128"] {
        let m = crate::am::meta_of(&format!("{table}_code_idx"));
        assert!(m.runs.len() > 1 || m.pending.pages > 0, "{m:?}");
        // (centers, radius): ids `id % modulus = 1` below `below`, keyed by id % 50
        for (modulus, below, radius) in [(400, 1200, 0), (400, 1200, 8), (997, 20000, 20), (70, 21000, 31)] {
            let centers = format!("FROM {table} WHERE id % {modulus} = 1 AND id < {below}");
            let batch = format!("(SELECT hamming_batch(array_agg(id % 50), array_agg(code), {radius}) {centers})");
            let brute = wide_ids(
                table,
                &format!(
                    "EXISTS (SELECT 1 FROM {table} c WHERE c.id % {modulus} = 1 AND c.id < {below}
                                 AND hamming(c.code, {table}.code) + 0 <= {radius})"
                ),
                SEQ_SCAN,
            );
            assert!(!brute.is_empty(), "{table} {radius}");
            for set in [INDEX_SCAN, BITMAP_SCAN] {
                let within = format!("code <@@ {batch}");
                Spi::run(set).unwrap();
                let plan = plan_of(&format!("SELECT id FROM {table} WHERE {within}"));
                assert!(plan.contains("Index Cond"), "{plan}");
                assert_eq!(wide_ids(table, &within, set), brute, "{table} {modulus} {radius}");
            }
            // as a filter of a sequential scan (the operator's function)
            let filtered = wide_ids(table, &format!("{batch} @@> code"), SEQ_SCAN);
            assert_eq!(filtered, brute, "{table} {radius} filter");
            let keys = |sql: &str| {
                Spi::run(INDEX_SCAN).unwrap();
                let keys = text(sql);
                Spi::run("RESET enable_seqscan; RESET enable_indexscan; RESET enable_bitmapscan").unwrap();
                keys
            };
            let by_index = keys(&format!(
                "SELECT coalesce(string_agg(id || ':' || k, ',' ORDER BY id, k), '')
                 FROM {table}, unnest(hamming_batch_keys({batch}, code)) k WHERE code <@@ {batch}"
            ));
            let brute_keys = text(&format!(
                "SELECT coalesce(string_agg(id || ':' || k, ',' ORDER BY id, k), '')
                 FROM (SELECT DISTINCT o.id, c.id % 50 AS k FROM {table} o JOIN {table} c
                       ON c.id % {modulus} = 1 AND c.id < {below} AND hamming(c.code, o.code) + 0 <= {radius}) p"
            ));
            assert_eq!(by_index, brute_keys, "{table} {radius} keys");
        }
    }
    // Forms and bad input.
    let code = "0123456789abcdef".repeat(4);
    assert_eq!(
        text(&format!("SELECT hamming_batch(ARRAY[7, -1], ARRAY['{code}'::hash256, NULL], 31)::text")),
        format!("r31:7={code}")
    );
    assert_eq!(
        text(&format!("SELECT 'r3:7={code}'::hash256_batch::text")),
        format!("r3:7={code}")
    );
    // the binary form: a 16-byte header, then per ball the key and the code's 32 bytes
    let sent = format!(
        "SELECT encode(hash256_batch_send(hamming_batch(ARRAY[1], ARRAY['{code}'::hash256], 2)), 'hex')"
    );
    let sent = text(&sent);
    assert_eq!(sent.len(), 2 * (16 + 40), "{sent}");
    assert_eq!(&sent[..16], "0100020001000000");
    assert_eq!(&sent[32..], format!("0100000000000000{code}"));
    for (bad, state) in [
        (format!("SELECT hamming_batch(ARRAY[NULL::bigint], ARRAY['{code}'::hash256], 3)"), "22004"),
        (format!("SELECT hamming_batch(ARRAY[1, 2], ARRAY['{code}'::hash256], 3)"), "22023"),
        (format!("SELECT hamming_batch(ARRAY[1], ARRAY['{code}'::hash256], -1)"), "22023"),
        (format!("SELECT hamming_batch(ARRAY[1], ARRAY['{code}'::hash256], 257)"), "22023"),
        ("SELECT 'r3:1=0123456789abcdef'::hash256_batch".to_string(), "22P02"),
        (format!("SELECT 'r3:1={code}'::hash128_batch"), "22P02"),
    ] {
        assert_eq!(sqlstate(&bad).as_deref(), Some(state), "{bad}");
    }
}

/// A wide index grown by inserts cuts its runs for the whole index's rows, so the runs of
/// its pending lists share the large run's cut and can merge into it table by table. (Cut
/// for their own rows, runs of 2,000 rows had 19 or more substrings against the large
/// run's 16, every merge into the large run rewrote it whole, and the index stayed about
/// twice a fresh one: `CODE=hash256 bench/ingest_batched.sh` measures the size, which a
/// test cannot, as it runs in one transaction and freed pages are reused only after it.)
#[pg_test]
fn a_grown_wide_index_cuts_its_runs_alike() {
    Spi::run(
        "CREATE TABLE g (id bigserial, code hash256);
         CREATE INDEX g_code ON g USING hamming (code) WITH (pending_limit = 2000)",
    )
    .unwrap();
    for step in 0..25 {
        Spi::run(&format!(
            "INSERT INTO g (code)
             SELECT ('x' || md5(g::text) || md5((g + 99999999)::text))::bit(256)::hash256
             FROM generate_series({}, {}) g",
            step * 2000 + 1,
            step * 2000 + 2000
        ))
        .unwrap();
    }
    let m = crate::am::meta_of("g_code");
    assert!(m.runs.len() > 1, "{m:?}");
    assert!(m.runs.iter().all(|r| r.blocks == 16), "{m:?}");
    assert_eq!(index_check("g_code"), 50_000);
    assert_wide_lookups_exact("g", "hash256", &[(7, 31), (40_000, 20)]);
}

/// The planner estimates a wide ball's rows from the column's statistics, as it does a
/// 64-bit ball's: about one row per distinct code at PDQ's radius (P[Bin(256, 1/2) <= 31]
/// is about 1e-36, below an equality's share; `contsel` said 0.1 % of the table), most rows
/// near half the width; a constant batch of three codes about three rows.
#[pg_test]
fn wide_ball_estimates_follow_the_column_statistics() {
    Spi::run(
        "CREATE TABLE e AS SELECT g AS id,
             ('x' || md5(g::text) || md5((g + 5555555)::text))::bit(256)::hash256 AS code
         FROM generate_series(1, 20000) g;
         CREATE TABLE e128 AS SELECT id, code::bit(256)::bit(128)::hash128 AS code FROM e;
         CREATE INDEX ON e USING hamming (code); -- (the planner hook rewrites the natural form)
         ANALYZE e; ANALYZE e128",
    )
    .unwrap();
    let codes: Vec<String> = (1..=3)
        .map(|id| text(&format!("SELECT code::text FROM e WHERE id = {id}")))
        .collect();
    let code = &codes[0];
    let rows = |table: &str, cond: &str| hq_rows(&format!("SELECT id FROM {table} WHERE {cond}"));
    for cond in [
        format!("code <@ hamming_ball('{code}'::hash256, 31)"),
        format!("hamming_ball('{code}'::hash256, 31) @> code"),
        format!("hamming_within(code, '{code}', 31)"),
        format!("hamming(code, '{code}') <= 31"),
    ] {
        let estimate = rows("e", &cond);
        assert!(estimate <= 2.0, "{cond}: {estimate}");
    }
    let half = rows("e", &format!("code <@ hamming_ball('{code}'::hash256, 140)"));
    assert!(half > 15_000.0, "{half}");
    let narrow = rows("e128", &format!("code <@ hamming_ball('{}'::hash128, 15)", &code[..32]));
    assert!(narrow <= 2.0, "{narrow}");
    let batch = format!("'r31:1={},2={},3={}'::hash256_batch", codes[0], codes[1], codes[2]);
    let estimate = rows("e", &format!("code <@@ {batch}"));
    assert!((2.0..=4.0).contains(&estimate), "{estimate}");
}

/// Cluster tracking on `hash128` and on a domain over `hash256` (the randomized comparisons
/// on `hash256` are cluster_tracking's tests): after inserts, deletes and updates that move
/// rows to another family, the tracked clusters equal `neardup_clusters` of the table; a
/// distance of the width or more is refused at install (22023), leaving nothing behind.
#[pg_test]
fn cluster_tracking_takes_hash128_and_domains_over_wide_codes() {
    Spi::run(
        "SELECT setseed(0.61);
         CREATE DOMAIN pdq AS hash256;
         CREATE TABLE photos (id bigint PRIMARY KEY, code128 hash128, d pdq);
         CREATE INDEX ON photos USING hamming (code128);
         CREATE INDEX ON photos USING hamming (d);
         -- b with n random bits flipped (a bit may flip twice)
         CREATE FUNCTION near_bits(b bit varying, n int) RETURNS bit varying LANGUAGE plpgsql AS $$
             DECLARE p int;
             BEGIN
                 FOR i IN 1 .. n LOOP
                     p := (random() * (length(b) - 1))::int;
                     b := set_bit(b, p, 1 - get_bit(b, p));
                 END LOOP;
                 RETURN b;
             END $$;
         CREATE FUNCTION fam128(f bigint, n int) RETURNS hash128 LANGUAGE sql
             RETURN near_bits(('x' || md5(f::text))::bit(128), n)::bit(128)::hash128;
         CREATE FUNCTION fam256(f bigint, n int) RETURNS pdq LANGUAGE sql
             RETURN near_bits(('x' || md5(f::text) || md5(f::text || 'x'))::bit(256), n)::bit(256)::pdq;",
    )
    .unwrap();
    let call = "SELECT neardup_cluster_tracking('photos', 'g128', 'id', 'code128', 128)";
    assert_eq!(sqlstate(call).as_deref(), Some("22023"));
    let left = Spi::get_one::<i64>(
        "SELECT (SELECT count(*) FROM pg_class WHERE relname = 'g128')
              + (SELECT count(*) FROM pg_trigger WHERE tgrelid = 'photos'::regclass)",
    )
    .unwrap();
    assert_eq!(left, Some(0));
    Spi::run(
        "INSERT INTO photos SELECT g, fam128(g % 5, (random() * 12)::int), fam256(g % 5, (random() * 24)::int)
             FROM generate_series(1, 30) g;
         SELECT neardup_cluster_tracking('photos', 'g128', 'id', 'code128', 16);
         SELECT neardup_cluster_tracking('photos', 'gd', 'id', 'd', 31);",
    )
    .unwrap();
    let same = |step: &str| {
        for (groups, column, k) in [("g128", "code128", 16), ("gd", "d", 31)] {
            let tracked = Spi::get_one::<String>(&format!(
                "SELECT string_agg(id || ':' || cluster_id || ':' || is_representative, ',' ORDER BY id) FROM {groups}"
            ))
            .unwrap();
            let batch = Spi::get_one::<String>(&format!(
                "SELECT string_agg(id || ':' || cluster_id || ':' || is_representative, ',' ORDER BY id)
                 FROM neardup_clusters('photos', 'id', '{column}', {k})"
            ))
            .unwrap();
            assert_eq!(tracked, batch, "{groups} after {step}");
        }
    };
    same("the install");
    for (step, statement) in [
        (
            "inserts",
            "INSERT INTO photos SELECT g, fam128(g % 5, (random() * 12)::int), fam256(g % 5, (random() * 24)::int)
                 FROM generate_series(31, 90) g;
             INSERT INTO photos VALUES (91, NULL, NULL), (92, fam128(1, 0), fam256(1, 0))",
        ),
        ("deletes", "DELETE FROM photos WHERE id % 4 = 1"),
        (
            "moves to another family",
            "UPDATE photos SET code128 = fam128(id % 5 + 1, 3), d = fam256(id % 5 + 1, 3) WHERE id % 7 = 2",
        ),
        ("more deletes", "DELETE FROM photos WHERE id % 5 = 3"),
    ] {
        Spi::run(statement).unwrap();
        same(step);
    }
    let clustered = Spi::get_one::<i64>(
        "SELECT count(*) FROM gd WHERE cluster_id IN (SELECT cluster_id FROM gd GROUP BY 1 HAVING count(*) > 2)",
    )
    .unwrap()
    .unwrap();
    assert!(clustered >= 20, "families form clusters ({clustered} rows)");
}
