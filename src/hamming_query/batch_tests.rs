// SQL tests of hamming_batch (src/hamming_query/batch.rs), the hamming index's strategy 3,
// and the join keys (src/join_keys.rs). Included in lib.rs's `tests` module after
// hamming_query/tests.rs, whose fixture and independent bit count (hq_fixture, hq_bits,
// hq_plan) they use. Every answer is compared with brute force over the same rows.

/// `hb_probes(key, fp)`: 400 probes (members of hq's clusters, 1-4 bits off members, and
/// random), `hb` = hq copied with a hamming index (CTAS, so the index is usable at once).
fn hb_fixture() {
    hq_fixture();
    Spi::run(
        "SELECT setseed(0.29);
         CREATE TABLE hb AS SELECT id, fp, fpi FROM hq;
         CREATE INDEX hb_fp ON hb USING hamming (fp);
         CREATE INDEX hb_fpi ON hb USING hamming (fpi int8_hamming_ops);
         CREATE TABLE hb_probes AS
             SELECT 1000 + id AS key, fp FROM hq WHERE id % 37 = 0 AND fp IS NOT NULL
             UNION ALL
             SELECT 2000 + id, (fpi # (1::bigint << (id % 64)) # (3::bigint << (id % 50)))::simhash64
             FROM hq WHERE id % 41 = 0 AND fp IS NOT NULL
             UNION ALL
             SELECT 3000 + g, (((random() * 2^32)::bigint << 32) # (random() * 2^32)::bigint)::simhash64
             FROM generate_series(1, 150) g;
         ANALYZE hb; ANALYZE hb_probes;",
    )
    .unwrap();
}

/// `hb_truth(key, id, distance)`: every (probe key, row id) pair within 5 bits, by brute
/// force over hq with an independent bit count. Computed once: the comparisons below would
/// otherwise count bits over the whole cross product 48 times.
fn hb_truth() {
    Spi::run(&format!(
        "CREATE TEMP TABLE hb_truth AS SELECT p.key, h.id, {bits} AS distance
         FROM hb_probes p, hq h WHERE h.fp IS NOT NULL AND {bits} <= 5",
        bits = hq_bits("p.fp", "h.fp")
    ))
    .unwrap();
}

/// Pairs (probe key, row id) within `radius` (at most 5) by brute force, minus those
/// `query` returns, and the other way round: 0 when equal.
fn hb_difference(query: &str, radius: i32) -> i64 {
    assert!(radius <= 5, "hb_truth holds the pairs within 5 bits");
    let truth = format!("SELECT key, id FROM hb_truth WHERE distance <= {radius}");
    int(&format!(
        "SELECT (SELECT count(*) FROM (({truth}) EXCEPT ALL ({query})) d)
              + (SELECT count(*) FROM (({query}) EXCEPT ALL ({truth})) d)"
    ))
}

#[pg_test]
fn hamming_batch_forms_and_errors() {
    assert_eq!(
        text("SELECT hamming_batch(ARRAY[7, -2], ARRAY['0123456789abcdef', 'fedcba9876543210']::simhash64[], 3)::text"),
        "r3:7=0123456789abcdef,-2=fedcba9876543210"
    );
    // NULL fingerprints add no ball; text and binary forms round-trip
    assert_eq!(
        text("SELECT hamming_batch(ARRAY[1, 2], ARRAY[NULL, '00000000000000ff']::simhash64[], 0)::text"),
        "r0:2=00000000000000ff"
    );
    assert_eq!(text("SELECT 'r2:'::hamming_batch::text"), "r2:");
    assert_eq!(sqlstate("SELECT 'r3:1=xyz'::hamming_batch").as_deref(), Some("22P02"));
    assert_eq!(sqlstate("SELECT 'r65:'::hamming_batch").as_deref(), Some("22P02"));
    assert_eq!(
        sqlstate("SELECT hamming_batch(ARRAY[1], ARRAY[]::simhash64[], 3)").as_deref(),
        Some("22023")
    );
    assert_eq!(
        sqlstate("SELECT hamming_batch(ARRAY[1], ARRAY['0000000000000001']::simhash64[], -1)")
            .as_deref(),
        Some("22023")
    );
    assert_eq!(
        sqlstate("SELECT hamming_batch(ARRAY[NULL::bigint], ARRAY['0000000000000001']::simhash64[], 1)")
            .as_deref(),
        Some("22004")
    );
    assert!(is_null(
        "SELECT hamming_batch(NULL, ARRAY['0000000000000001']::simhash64[], 1)"
    ));
    // <@, @> and the keys, on either fingerprint type; keys are distinct and ascending
    assert!(boolean(
        "SELECT '0000000000000007'::simhash64 <@@ 'r3:1=0000000000000000'::hamming_batch
            AND NOT '000000000000000f'::simhash64 <@@ 'r3:1=0000000000000000'::hamming_batch
            AND 'r3:1=0000000000000000'::hamming_batch @@> 7::bigint
            AND 7::bigint <@@ 'r3:1=0000000000000000'::hamming_batch"
    ));
    assert_eq!(
        text("SELECT hamming_batch_keys('r2:9=0000000000000000,4=0000000000000003,9=0000000000000001,5=ff00000000000000', '0000000000000001'::simhash64)::text"),
        "{4,9}"
    );
    assert_eq!(
        text("SELECT hamming_batch_keys('r2:9=0000000000000000', 'ffffffffffffffff'::simhash64)::text"),
        "{}"
    );
}

/// The batch through the index (bitmap and plain scans, simhash64 and bigint columns) and
/// through a seq scan, against brute force; radii within the index's max_distance (3) and
/// beyond it (5, a full scan of the index).
#[pg_test]
fn batch_lookups_equal_brute_force() {
    hb_fixture();
    hb_truth();
    assert!(boolean(
        "SELECT indisvalid AND NOT indcheckxmin FROM pg_index WHERE indexrelid = 'hb_fp'::regclass"
    ));
    for radius in [0, 1, 3, 5] {
        let batch = format!(
            "(SELECT hamming_batch(array_agg(key), array_agg(fp), {radius}) FROM hb_probes)"
        );
        let query = format!(
            "SELECT k, d.id FROM (SELECT id, fp FROM hb WHERE fp <@@ {batch}) d,
                 unnest(hamming_batch_keys({batch}, d.fp)) k"
        );
        let int8_query = format!(
            "SELECT k, d.id FROM (SELECT id, fpi FROM hb WHERE fpi <@@ {batch}) d,
                 unnest(hamming_batch_keys({batch}, d.fpi)) k"
        );
        for (seqscan, bitmapscan, indexscan) in
            [("off", "on", "on"), ("off", "off", "on"), ("on", "off", "off")]
        {
            Spi::run(&format!(
                "SET enable_seqscan = {seqscan}; SET enable_bitmapscan = {bitmapscan};
                 SET enable_indexscan = {indexscan};"
            ))
            .unwrap();
            let plan = hq_plan(&format!("SELECT id FROM hb WHERE fp <@@ {batch}"));
            let expected = match (seqscan, bitmapscan) {
                ("on", _) => "Seq Scan on public.hb",
                (_, "on") => "hb_fp", // a bitmap or a plain index scan, as costed
                _ => "Index Scan using hb_fp",
            };
            assert!(plan.contains(expected), "radius {radius}: {plan}");
            assert_eq!(hb_difference(&query, radius), 0, "radius {radius}, {plan}");
            assert_eq!(hb_difference(&int8_query, radius), 0, "radius {radius} (bigint)");
        }
        Spi::run("RESET enable_seqscan; RESET enable_bitmapscan; RESET enable_indexscan")
            .unwrap();
    }
    // A batch and a ball together: rows in both
    Spi::run("SET enable_seqscan = off").unwrap();
    let both = int(
        "SELECT count(*) FROM hb WHERE fp <@@ (SELECT hamming_batch(array_agg(key), array_agg(fp), 3) FROM hb_probes)
            AND fp <@ hamming_ball((SELECT fp FROM hb_probes ORDER BY key LIMIT 1), 2)",
    );
    let truth = int(&format!(
        "SELECT count(*) FROM hq h WHERE EXISTS (SELECT 1 FROM hb_probes p WHERE {} <= 3)
            AND {} <= 2",
        hq_bits("p.fp", "h.fp"),
        hq_bits("h.fp", "(SELECT fp FROM hb_probes ORDER BY key LIMIT 1)")
    ));
    assert!(truth > 0);
    assert_eq!(both, truth);
    // The index scan reports each row once even when many probes find it (a batch of the
    // same center ten times)
    assert_eq!(
        int("SELECT count(*) FROM hb WHERE fp <@@ (SELECT hamming_batch(array_agg(g), array_agg(c), 3)
             FROM (SELECT g, (SELECT fp FROM hq WHERE id = 1) c FROM generate_series(1, 10) g) s)"),
        int(&format!("SELECT count(*) FROM hq WHERE {} <= 3", hq_bits("fp", "(SELECT fp FROM hq WHERE id = 1)")))
    );
}

/// Rows inserted after CREATE INDEX (pending, then merged) are found too.
#[pg_test]
fn batch_finds_pending_rows() {
    hb_fixture();
    Spi::run(
        "INSERT INTO hb SELECT id + 100000, (fpi # 1)::simhash64, fpi # 1 FROM hq WHERE id % 3 = 0;
         SET enable_seqscan = off;",
    )
    .unwrap();
    let found = int(
        "SELECT count(*) FROM hb WHERE fp <@@ (SELECT hamming_batch(array_agg(key), array_agg(fp), 2) FROM hb_probes)",
    );
    let truth = int(&format!(
        "SELECT count(*) FROM hb h WHERE h.fp IS NOT NULL AND EXISTS (SELECT 1 FROM hb_probes p WHERE {} <= 2)",
        hq_bits("p.fp", "h.fp")
    ));
    assert!(truth > 100, "{truth}");
    assert_eq!(found, truth);
}

/// Joining the key table with itself on the key, keeping the pairs whose pair key is the
/// shared key, gives hamming_pairs' pairs exactly, each once, for several layouts.
#[pg_test]
fn join_keys_give_every_pair_once() {
    hq_fixture();
    Spi::run("CREATE TABLE jk_src AS SELECT id::bigint AS id, fp FROM hq WHERE fp IS NOT NULL")
        .unwrap();
    assert_eq!(int("SELECT hamming_join_blocks(3000000, 3)"), 5);
    for (k, blocks) in [(3, 4), (3, 5), (2, 6), (0, 2)] {
        Spi::run(&format!(
            "DROP TABLE IF EXISTS jk;
             CREATE TABLE jk AS SELECT key, id, fp FROM jk_src, unnest(hamming_join_keys(fp, {k}, {blocks})) key;"
        ))
        .unwrap();
        let tables = int("SELECT count(*) / (SELECT count(*) FROM jk_src) FROM jk");
        assert_eq!(
            tables,
            int(&format!("SELECT cardinality(hamming_join_keys('0000000000000000'::simhash64, {k}, {blocks}))"))
        );
        let joined = format!(
            "SELECT a.id, b.id, hamming(a.fp, b.fp) FROM jk a JOIN jk b ON a.key = b.key
             WHERE a.id < b.id AND hamming_join_key(a.fp, b.fp, {k}, {blocks}) = a.key"
        );
        let truth = format!("SELECT a, b, distance FROM hamming_pairs('jk_src', 'id', 'fp', {k})");
        assert!(int(&format!("SELECT count(*) FROM ({truth}) t")) > 100);
        assert_eq!(
            int(&format!(
                "SELECT (SELECT count(*) FROM (({truth}) EXCEPT ALL ({joined})) d)
                      + (SELECT count(*) FROM (({joined}) EXCEPT ALL ({truth})) d)"
            )),
            0,
            "k={k} blocks={blocks}"
        );
    }
    assert!(is_null(
        "SELECT hamming_join_key('0000000000000000', '000000000000000f', 3, 4)"
    ));
    assert_eq!(sqlstate("SELECT hamming_join_keys('0000000000000000', 3, 3)").as_deref(), Some("22023"));
    assert_eq!(sqlstate("SELECT hamming_join_keys('0000000000000000', 16, 17)").as_deref(), Some("22023"));
    assert_eq!(sqlstate("SELECT hamming_join_blocks(-1, 3)").as_deref(), Some("22023"));
}

/// Without Citus (no pg_dist_partition), hamming_pairs_distributed is hamming_pairs: the
/// same rows and distances, the same errors. The Citus path is tests/integration/check_citus.sh's.
#[pg_test]
fn pairs_distributed_without_citus_is_hamming_pairs() {
    hq_fixture();
    Spi::run("CREATE TABLE pd_src AS SELECT id::bigint AS id, fp FROM hq").unwrap();
    let (fn_pairs, truth) = (
        "SELECT a, b, distance FROM hamming_pairs_distributed('pd_src', 'id', 'fp', 3)",
        "SELECT a, b, distance FROM hamming_pairs('pd_src', 'id', 'fp', 3)",
    );
    assert!(int(&format!("SELECT count(*) FROM ({truth}) t")) > 100);
    assert_eq!(
        int(&format!(
            "SELECT (SELECT count(*) FROM (({truth}) EXCEPT ALL ({fn_pairs})) d)
                  + (SELECT count(*) FROM (({fn_pairs}) EXCEPT ALL ({truth})) d)"
        )),
        0
    );
    assert_eq!(sqlstate("SELECT * FROM hamming_pairs_distributed('pd_src', 'id', 'fp', 64)").as_deref(), Some("22023"));
    assert_eq!(sqlstate("SELECT * FROM hamming_pairs_distributed('pd_src', 'id', 'nope', 3)").as_deref(), Some("42703"));
    assert_eq!(int("SELECT count(*) FROM hamming_pairs_distributed(NULL, 'id', 'fp', 3)"), 0);
}

/// hamming_pairs_distributed's steps on plain tables: three "shards" of a table (rows by id
/// modulo 3, duplicated and clustered codes, NULL codes) each cut into parts, the parts of
/// each number gathered and paired, give hamming_pairs' pairs of the whole table exactly,
/// each once, at several distances and part sizes (one part per table, and many); a cut
/// holds 16 bytes a row per table; bad parts and arguments are refused with their SQLSTATE.
#[pg_test]
fn pair_parts_of_shards_pair_like_the_whole_table() {
    hq_fixture();
    Spi::run(
        "CREATE TABLE pp AS SELECT id::bigint AS id, fp FROM hq;
         INSERT INTO pp SELECT id + 100000, fp FROM hq WHERE id % 9 = 0;
         CREATE TABLE pp0 AS SELECT * FROM pp WHERE id % 3 = 0;
         CREATE TABLE pp1 AS SELECT * FROM pp WHERE id % 3 = 1;
         CREATE TABLE pp2 AS SELECT * FROM pp WHERE id % 3 = 2;",
    )
    .unwrap();
    let rows = int("SELECT count(fp) FROM pp");
    for (k, part_bytes) in [(3, 1i64 << 30), (3, 4000), (5, 100_000), (0, 1 << 20)] {
        let cut = |shard: &str| {
            format!("SELECT * FROM hamming_pair_parts('{shard}', 'id', 'fp', {k}, {rows}, {part_bytes})")
        };
        let parts = format!(
            "SELECT part, array_agg(rows) AS rows FROM ({} UNION ALL {} UNION ALL {}) c GROUP BY part",
            cut("pp0"),
            cut("pp1"),
            cut("pp2")
        );
        let paired = format!("SELECT r.* FROM ({parts}) g, LATERAL hamming_part_pairs(g.rows) r");
        let truth = format!("SELECT a, b, distance FROM hamming_pairs('pp', 'id', 'fp', {k})");
        assert!(int(&format!("SELECT count(*) FROM ({truth}) t")) > 50, "k={k}");
        assert_eq!(
            int(&format!(
                "SELECT (SELECT count(*) FROM (({truth}) EXCEPT ALL ({paired})) d)
                      + (SELECT count(*) FROM (({paired}) EXCEPT ALL ({truth})) d)"
            )),
            0,
            "k={k} part_bytes={part_bytes}"
        );
        let (parts_made, bytes) = {
            let all = format!("{} UNION ALL {} UNION ALL {}", cut("pp0"), cut("pp1"), cut("pp2"));
            (
                int(&format!("SELECT count(DISTINCT part) FROM ({all}) c")),
                int(&format!("SELECT sum(octet_length(rows) - 8) FROM ({all}) c")),
            )
        };
        assert!(parts_made >= if part_bytes == 4000 { 64 } else { 2 }, "k={k} {parts_made}");
        assert_eq!(bytes % (16 * rows), 0, "every row once per table");
    }
    let part = "(SELECT rows FROM hamming_pair_parts('pp0', 'id', 'fp', 3, 100, 1000000) LIMIT 1)";
    assert_eq!(int("SELECT count(*) FROM hamming_part_pairs('{}')"), 0);
    for (bad, state) in [
        (format!("SELECT * FROM hamming_part_pairs(ARRAY[{part}, NULL])"), "22004"),
        ("SELECT * FROM hamming_part_pairs(ARRAY['\\x0103020000000000'::bytea])".to_string(), "22P03"),
        (format!("SELECT * FROM hamming_part_pairs(ARRAY[substr({part}, 1, 20)])"), "22P03"),
        (format!("SELECT * FROM hamming_part_pairs(ARRAY[overlay({part} placing '\\x02' from 1)])"), "22P03"),
        (
            "SELECT * FROM hamming_part_pairs(ARRAY(SELECT rows FROM hamming_pair_parts('pp0', 'id', 'fp', 3, 100, 1000000)))"
                .to_string(),
            "22P03",
        ),
        ("SELECT * FROM hamming_pair_parts('pp0', 'id', 'fp', 64, 100, 1000)".to_string(), "22023"),
        ("SELECT * FROM hamming_pair_parts('pp0', 'id', 'fp', 3, -1, 1000)".to_string(), "22023"),
        ("SELECT * FROM hamming_pair_parts('pp0', 'id', 'fp', 3, 100, 0)".to_string(), "22023"),
        ("SELECT * FROM hamming_pair_parts('pp0', 'fp', 'fp', 3, 100, 1000)".to_string(), "42804"),
        ("SELECT * FROM hamming_pair_parts('pp0', 'id', 'nope', 3, 100, 1000)".to_string(), "42703"),
    ] {
        assert_eq!(sqlstate(&bad).as_deref(), Some(state), "{bad}");
    }
    Spi::run("CREATE TABLE pp_wide (id bigint, code hash256)").unwrap();
    assert_eq!(
        sqlstate("SELECT * FROM hamming_pair_parts('pp_wide', 'id', 'code', 3, 100, 1000)").as_deref(),
        Some("0A000")
    );
    Spi::run("INSERT INTO pp0 VALUES (NULL, '0000000000000000')").unwrap();
    assert_eq!(
        sqlstate("SELECT * FROM hamming_pair_parts('pp0', 'id', 'fp', 3, 100, 1000)").as_deref(),
        Some("22004")
    );
}

/// A batch stored in a table comes back compressed or out of line (TOAST): the filter and
/// the keys still equal brute force, for a seq scan that calls them once per row (each
/// call site keeps its lookup while the stored value is the same).
#[pg_test]
fn stored_batches_equal_brute_force() {
    hb_fixture();
    Spi::run(
        "CREATE TABLE hb_stored (n int, batch hamming_batch);
         INSERT INTO hb_stored SELECT 1, hamming_batch(array_agg(key), array_agg(fp), 3) FROM hb_probes;
         INSERT INTO hb_stored SELECT 2, hamming_batch(array_agg(key), array_agg(fp), 2)
             FROM (SELECT key, fp FROM hb_probes ORDER BY key LIMIT 3) s;
         SET enable_indexscan = off; SET enable_bitmapscan = off;",
    )
    .unwrap();
    // out of line (thousands of balls), then a small one kept in line
    assert!(boolean(
        "SELECT pg_column_size(batch) < octet_length(batch::text) FROM hb_stored WHERE n = 1"
    ));
    for (n, radius) in [(1, 3), (2, 2), (1, 3)] {
        let batch = format!("(SELECT batch FROM hb_stored WHERE n = {n})");
        let query = format!(
            "SELECT k, d.id FROM (SELECT id, fp FROM hb WHERE fp <@@ {batch}) d,
                 unnest(hamming_batch_keys({batch}, d.fp)) k"
        );
        let probes = if n == 1 {
            "hb_probes p"
        } else {
            "(SELECT * FROM hb_probes ORDER BY key LIMIT 3) p"
        };
        let truth = format!(
            "SELECT p.key, h.id FROM {probes}, hq h WHERE h.fp IS NOT NULL AND {} <= {radius}",
            hq_bits("p.fp", "h.fp")
        );
        assert!(int(&format!("SELECT count(*) FROM ({truth}) t")) > 0);
        assert_eq!(
            int(&format!(
                "SELECT (SELECT count(*) FROM (({truth}) EXCEPT ALL ({query})) d)
                      + (SELECT count(*) FROM (({query}) EXCEPT ALL ({truth})) d)"
            )),
            0,
            "stored batch {n}"
        );
    }
}
