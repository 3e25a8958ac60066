// SQL tests of incremental cluster maintenance: the triggers' cluster table is compared with
// the batch clustering of the final table.

/// A table of fingerprints in tight families (so chains, bridges and copies occur), a hamming
/// index, and tracking at distance 2 with priority `rank`.
fn tracked_table() {
    Spi::run(
        "SELECT setseed(0.42);
         CREATE TABLE pages (id bigint PRIMARY KEY, fp simhash64, rank int);
         CREATE INDEX ON pages USING hamming (fp);
         CREATE FUNCTION family_fp(i bigint) RETURNS simhash64 LANGUAGE sql AS $$
             SELECT CASE WHEN random() < 0.05 THEN NULL ELSE
                 ((ARRAY[0, -6148914691236517206, 81985529216486895, 1229782938247303441])[1 + i % 4]
                  # (CASE WHEN random() < 0.5 THEN 1::bigint << (random() * 7)::int ELSE 0 END)
                  # (CASE WHEN random() < 0.5 THEN 1::bigint << (random() * 7)::int ELSE 0 END))::simhash64
             END $$;
         INSERT INTO pages SELECT i, family_fp(i), (random() * 5)::int FROM generate_series(1, 20) i;
         SELECT neardup_cluster_tracking('pages', 'page_clusters', 'id', 'fp', 2, 'rank DESC');",
    )
    .unwrap();
}

fn tracked_clusters() -> String {
    Spi::get_one::<String>(
        "SELECT string_agg(id || ':' || cluster_id || ':' || is_representative, ',' ORDER BY id)
         FROM page_clusters",
    )
    .unwrap()
    .unwrap_or_default()
}

fn batch_clusters(priority: &str) -> String {
    Spi::get_one::<String>(&format!(
        "SELECT string_agg(id || ':' || cluster_id || ':' || is_representative, ',' ORDER BY id)
         FROM neardup_clusters('pages', 'id', 'fp', 2, '{priority}')"
    ))
    .unwrap()
    .unwrap_or_default()
}

#[pg_test]
fn a_stream_of_inserts_ends_in_the_batch_clusters() {
    tracked_table();
    assert_eq!(tracked_clusters(), batch_clusters("rank DESC"));
    // Single rows and batches, including rows that bridge existing clusters.
    for start in (21..400).step_by(37) {
        Spi::run(&format!(
            "INSERT INTO pages VALUES ({start}, family_fp({start}), (random() * 5)::int);
             INSERT INTO pages SELECT i, family_fp(i), (random() * 5)::int
                 FROM generate_series({}, {}) i;",
            start + 1,
            start + 36
        ))
        .unwrap();
        assert_eq!(
            tracked_clusters(),
            batch_clusters("rank DESC"),
            "after rows up to {}",
            start + 36
        );
    }
    let clusters = Spi::get_one::<i64>(
        "SELECT count(DISTINCT cluster_id) FROM page_clusters WHERE cluster_id <> id",
    )
    .unwrap()
    .unwrap();
    assert!(clusters >= 4, "the families form clusters ({clusters})");
}

#[pg_test]
fn deletes_split_clusters_and_promote_representatives() {
    tracked_table();
    Spi::run("INSERT INTO pages SELECT i, family_fp(i), (random() * 5)::int FROM generate_series(21, 300) i")
        .unwrap();
    let representatives = "SELECT array_agg(id ORDER BY id) FROM page_clusters WHERE is_representative AND cluster_id IN (SELECT cluster_id FROM page_clusters GROUP BY 1 HAVING count(*) > 1)";
    for round in 0..6 {
        // Delete the representatives of big clusters, and some random rows.
        Spi::run(&format!(
            "DELETE FROM pages WHERE id = ANY((({representatives}))[1:2]) OR id % 17 = {round}"
        ))
        .unwrap();
        assert_eq!(
            tracked_clusters(),
            batch_clusters("rank DESC"),
            "round {round}"
        );
    }
    // A chain 1000 — 1001 — 1002 falls apart when its middle goes.
    Spi::run(
        "INSERT INTO pages VALUES (1000, '7000000000000000', 1), (1001, '7000000000000003', 1),
                                  (1002, '700000000000000f', 1);
         DELETE FROM pages WHERE id = 1001;",
    )
    .unwrap();
    let chain = Spi::get_one::<String>(
        "SELECT string_agg(id || ':' || cluster_id, ',' ORDER BY id) FROM page_clusters WHERE id >= 1000",
    )
    .unwrap()
    .unwrap();
    assert_eq!(chain, "1000:1000,1002:1002");
    assert_eq!(tracked_clusters(), batch_clusters("rank DESC"));
}

#[pg_test]
fn updates_stay_near_their_representative_or_are_searched_again() {
    Spi::run(
        "CREATE TABLE pages (id bigint PRIMARY KEY, fp simhash64, rank int);
         CREATE INDEX ON pages USING hamming (fp);
         INSERT INTO pages VALUES (1, '0000000000000000', 1), (2, '0000000000000003', 1),
                                  (3, '000000000000000f', 1), (10, 'ff00000000000000', 1),
                                  (11, 'ff00000000000001', 1);
         SELECT neardup_cluster_tracking('pages', 'page_clusters', 'id', 'fp', 2, 'rank, id');",
    )
    .unwrap();
    assert_eq!(
        tracked_clusters(),
        "1:1:true,2:1:false,3:1:false,10:10:true,11:10:false"
    );
    // Tier 1: row 2 changes but stays within 2 bits of the representative (row 1). The
    // batch would split 3 off (2 no longer bridges it); the trigger keeps the group, as
    // Zhu et al. §5.2 describe ("group splitting").
    Spi::run("UPDATE pages SET fp = '0000000000000300' WHERE id = 2").unwrap();
    assert_eq!(
        tracked_clusters(),
        "1:1:true,2:1:false,3:1:false,10:10:true,11:10:false"
    );
    assert_eq!(
        batch_clusters("rank, id"),
        "1:1:true,2:1:false,3:3:true,10:10:true,11:10:false"
    );
    // Tier 2: row 3 moves next to row 10's cluster: it leaves, joins, and gives the merged
    // cluster its label and (first by id at equal rank) its representative.
    Spi::run("UPDATE pages SET fp = 'ff00000000000002' WHERE id = 3").unwrap();
    assert_eq!(
        tracked_clusters(),
        "1:1:true,2:1:false,3:3:true,10:3:false,11:3:false"
    );
    // A changed priority moves the representative without any search.
    Spi::run("UPDATE pages SET rank = 0 WHERE id = 11").unwrap();
    assert_eq!(
        tracked_clusters(),
        "1:1:true,2:1:false,3:3:false,10:3:false,11:3:true"
    );
    // A changed id is a delete and an insert; a NULL signature is a singleton.
    Spi::run("UPDATE pages SET id = 20 WHERE id = 10; UPDATE pages SET fp = NULL WHERE id = 1")
        .unwrap();
    assert_eq!(tracked_clusters(), batch_clusters("rank, id"));
    assert_eq!(
        tracked_clusters(),
        "1:1:true,2:2:true,3:3:false,11:3:true,20:3:false"
    );
    Spi::run("TRUNCATE pages").unwrap();
    assert_eq!(tracked_clusters(), "");
}

#[pg_test]
fn tracking_a_bigint_column_without_priority() {
    Spi::run(
        "CREATE SCHEMA other;
         CREATE TABLE hashes (key int PRIMARY KEY, phash bigint);
         CREATE INDEX ON hashes USING hamming (phash int8_hamming_ops);
         INSERT INTO hashes VALUES (5, 0), (6, 1);
         SELECT neardup_cluster_tracking('hashes', 'other.\"Hash Clusters\"', 'key', 'phash', 1);
         INSERT INTO hashes VALUES (7, 3), (8, -1), (4, 2);
         SET search_path = pg_catalog;
         INSERT INTO public.hashes VALUES (9, -2);
         RESET search_path;",
    )
    .unwrap();
    let clusters = Spi::get_one::<String>(
        "SELECT string_agg(id || ':' || cluster_id || ':' || is_representative, ',' ORDER BY id)
         FROM other.\"Hash Clusters\"",
    )
    .unwrap()
    .unwrap();
    assert_eq!(
        clusters,
        "4:4:true,5:4:false,6:4:false,7:4:false,8:8:true,9:8:false"
    );
}

#[pg_test(error = "neardup_track_clusters must be fired AFTER … FOR EACH STATEMENT")]
fn a_row_level_trigger_is_refused() {
    Spi::run(
        "CREATE TABLE pages (id bigint PRIMARY KEY, fp simhash64);
         CREATE TABLE page_clusters (id bigint PRIMARY KEY, cluster_id bigint, is_representative boolean);
         CREATE TRIGGER t AFTER INSERT ON pages FOR EACH ROW
             EXECUTE FUNCTION neardup_track_clusters('page_clusters', 'id', 'fp', 3);
         INSERT INTO pages VALUES (1, NULL);",
    )
    .unwrap();
}

#[pg_test(error = "neardup_track_clusters: cluster table \"nowhere\" does not exist")]
fn a_missing_cluster_table_is_reported() {
    Spi::run(
        "CREATE TABLE pages (id bigint PRIMARY KEY, fp simhash64);
         CREATE TRIGGER t AFTER INSERT ON pages REFERENCING NEW TABLE AS n FOR EACH STATEMENT
             EXECUTE FUNCTION neardup_track_clusters('nowhere', 'id', 'fp', 3);
         INSERT INTO pages VALUES (1, NULL);",
    )
    .unwrap();
}

// Minhash signatures and star clusters (method 'representatives').

/// A deterministic choice of operations, so a failing sequence can be replayed.
struct Steps(u64);

impl Signed {
    fn sign(&self, family: &str) -> String {
        format!("{}({family})", self.family)
    }
}

impl Steps {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below
    }
}

/// How a test table is signed: the function that signs a row of family `f`, the threshold
/// as neardup_clusters takes it, and the condition that two signatures are near.
struct Signed {
    /// The SQL function that signs a row of a family.
    family: &'static str,
    threshold: &'static str,
    near: fn(&str, &str) -> String,
    /// The signature column's type, and the index the triggers search.
    column: &'static str,
    index: &'static str,
}

/// simhash: fingerprints in 4 families, each two random low bits away from its center, so
/// rows at distance 2 chain across a family.
const SIMHASH: Signed = Signed {
    family: "family_fp",
    threshold: "2",
    near: |a, b| format!("{a} <@ hamming_ball({b}, 2)"),
    column: "simhash64",
    index: "CREATE INDEX ON docs USING hamming (sig)",
};

/// Wide codes: 256-bit codes in 4 families, each up to 9 random bits away from its center,
/// so rows within 12 chain across a family.
const WIDE: Signed = Signed {
    family: "family_hw",
    threshold: "12",
    near: |a, b| format!("{a} <@ hamming_ball({b}, 12)"),
    column: "hash256",
    index: "CREATE INDEX ON docs USING hamming (sig)",
};

/// minhash: 64-value sketches of word-pair shingles of 60-word texts in families of disjoint
/// words, each word replaced with a row's own probability of up to 6%, so some near-copies
/// are above Jaccard 0.7 and others only reach it through a chain.
const MINHASH: Signed = Signed {
    family: "family_mh",
    threshold: "0.7::float8",
    near: |a, b| {
        format!("(lsh_bands({a}, 0.7) && lsh_bands({b}, 0.7) AND jaccard({a}, {b}) >= 0.7)")
    },
    column: "minhash_sketch",
    index: "CREATE INDEX docs_bands ON docs USING gin (lsh_bands(sig, 0.7))",
};

/// `docs (id, fam, sig, rank)` with the signing functions and the index the triggers search
/// (hamming on a simhash or wide column, GIN on lsh_bands(sig, 0.7) for a sketch).
fn signed_table(kind: &Signed, seed: f64) {
    let (column_type, index) = (kind.column, kind.index);
    Spi::run(&format!(
        "SELECT setseed({seed});
         CREATE FUNCTION family_fp(f int) RETURNS simhash64 LANGUAGE sql AS $$
             SELECT CASE WHEN random() < 0.05 THEN NULL ELSE
                 ((ARRAY[0, -6148914691236517206, 81985529216486895, 1229782938247303441])[1 + f % 4]
                  # (CASE WHEN random() < 0.5 THEN 1::bigint << (random() * 7)::int ELSE 0 END)
                  # (CASE WHEN random() < 0.5 THEN 1::bigint << (random() * 7)::int ELSE 0 END))::simhash64
             END $$;
         CREATE FUNCTION family_mh(f int) RETURNS minhash_sketch LANGUAGE sql AS $$
             SELECT CASE WHEN random() < 0.05 THEN NULL ELSE minhash(
                 (SELECT string_agg(CASE WHEN random() < r.rate THEN 'x' || (random() * 1e6)::int
                                         ELSE 'w' || f || '_' || g END, ' ')
                  FROM generate_series(1, 60) g, (SELECT random() * 0.06 AS rate) r), 64, 2)
             END $$;
         CREATE FUNCTION family_hw(f int) RETURNS hash256 LANGUAGE plpgsql AS $$
             DECLARE
                 code bit(256) := ('x' || (ARRAY[repeat('0', 64), repeat('a', 64), repeat('0f', 32),
                                                 repeat('36c9', 16)])[1 + f % 4])::bit(256);
                 b int;
             BEGIN
                 IF random() < 0.05 THEN RETURN NULL; END IF;
                 FOR i IN 1 .. (random() * 9)::int LOOP
                     b := (random() * 255)::int;
                     code := set_bit(code, b, 1 - get_bit(code, b));
                 END LOOP;
                 RETURN code::hash256;
             END $$;
         CREATE TABLE docs (id bigint PRIMARY KEY, fam int, sig {column_type}, rank int);
         {index};"
    ))
    .unwrap();
}

fn cluster_table(table: &str) -> String {
    Spi::get_one::<String>(&format!(
        "SELECT string_agg(id || ':' || cluster_id || ':' || is_representative, ',' ORDER BY id)
         FROM {table}"
    ))
    .unwrap()
    .unwrap_or_default()
}

fn batch_of_docs(kind: &Signed, method: &str) -> String {
    Spi::get_one::<String>(&format!(
        "SELECT string_agg(id || ':' || cluster_id || ':' || is_representative, ',' ORDER BY id)
         FROM neardup_clusters('docs', 'id', 'sig', {}, 'rank DESC', '{method}')",
        kind.threshold
    ))
    .unwrap()
    .unwrap_or_default()
}

/// Rows of the cluster table in clusters of two or more.
fn clustered_members(table: &str) -> i64 {
    Spi::get_one::<i64>(&format!(
        "SELECT count(*) FROM {table} WHERE cluster_id IN
             (SELECT cluster_id FROM {table} GROUP BY 1 HAVING count(*) > 1)"
    ))
    .unwrap()
    .unwrap()
}

/// What must hold of star clusters after any statements: the cluster table has exactly the
/// table's rows, every cluster one representative and the smallest id as label, and every
/// member is within the threshold of its representative. Returns the broken rules.
fn star_violations(kind: &Signed) -> String {
    Spi::get_one::<String>(&format!(
        "SELECT concat_ws(', ',
            (SELECT 'rows ' || string_agg(coalesce(d.id, c.id)::text, ' ') FROM docs d
             FULL JOIN doc_clusters c ON c.id = d.id WHERE c.id IS NULL OR d.id IS NULL),
            (SELECT 'clusters ' || string_agg(cluster_id::text, ' ') FROM
                (SELECT cluster_id FROM doc_clusters GROUP BY 1
                 HAVING count(*) FILTER (WHERE is_representative) <> 1 OR min(id) <> cluster_id) x),
            (SELECT 'far members ' || string_agg(c.id::text, ' ')
             FROM doc_clusters c JOIN docs m ON m.id = c.id
             JOIN doc_clusters rc ON rc.cluster_id = c.cluster_id AND rc.is_representative
             JOIN docs r ON r.id = rc.id
             WHERE c.id <> rc.id AND NOT coalesce({near}, false)))",
        near = (kind.near)("m.sig", "r.sig")
    ))
    .unwrap()
    .unwrap_or_default()
}

/// Random inserts, deletes (of representatives that held clusters together, and others)
/// and updates of signatures, ranks and ids: after each statement the cluster table equals
/// the batch's components.
fn components_follow_inserts_deletes_and_updates(kind: &Signed, seed: f64) {
    signed_table(kind, seed);
    Spi::run(&format!(
        "INSERT INTO docs SELECT i, i % 4, {}, (random() * 5)::int FROM generate_series(1, 40) i;
         SELECT neardup_cluster_tracking('docs', 'doc_clusters', 'id', 'sig', {}, 'rank DESC');",
        kind.sign("i::int % 4"),
        kind.threshold
    ))
    .unwrap();
    assert_eq!(
        cluster_table("doc_clusters"),
        batch_of_docs(kind, "components")
    );
    let mut steps = Steps(7);
    let mut next_id = 41;
    let mut largest = 0;
    for round in 0..24 {
        let statement = match steps.next(5) {
            0 => {
                let f = steps.next(4);
                format!(
                    "INSERT INTO docs VALUES ({next_id}, {f}, {}, (random() * 5)::int)",
                    kind.sign(&f.to_string())
                )
            }
            1 => format!(
                "INSERT INTO docs SELECT i, i % 4, {}, (random() * 5)::int
                 FROM generate_series({next_id}, {}) i",
                kind.sign("i::int % 4"),
                next_id + 1 + steps.next(25) as i64
            ),
            // Representatives of big clusters (which split what they held together) and
            // random rows.
            2 => format!(
                "DELETE FROM docs WHERE id = ANY((SELECT array_agg(id ORDER BY id) FROM doc_clusters
                     WHERE is_representative AND cluster_id IN
                         (SELECT cluster_id FROM doc_clusters GROUP BY 1 HAVING count(*) > 2))[1:2])
                 OR id % 9 = {}",
                steps.next(9)
            ),
            // A move to another family is far from its old cluster, so it is searched
            // again as the batch would place it (a near change may stay by tier 1).
            3 => format!(
                "UPDATE docs SET fam = (fam + 1) % 4, sig = {} WHERE id % 7 = {}",
                kind.sign("(fam + 1) % 4"),
                steps.next(7)
            ),
            _ => format!(
                "UPDATE docs SET rank = rank + 3 WHERE id % 5 = {}; \
                 UPDATE docs SET id = id + 100000 * {} WHERE id % 11 = {} AND id < 100000",
                steps.next(5),
                round + 1,
                steps.next(11)
            ),
        };
        Spi::run(&statement).unwrap();
        next_id += 40;
        largest = largest.max(clustered_members("doc_clusters"));
        assert_eq!(
            cluster_table("doc_clusters"),
            batch_of_docs(kind, "components"),
            "round {round}: {statement}"
        );
    }
    assert!(
        largest >= 30,
        "near-copies form clusters ({largest} rows clustered)"
    );
    // Chains: components hold rows that no single representative reaches.
    let chained = Spi::get_one::<i64>(&format!(
        "SELECT count(*) FROM doc_clusters c JOIN docs m ON m.id = c.id
         JOIN doc_clusters rc ON rc.cluster_id = c.cluster_id AND rc.is_representative
         JOIN docs r ON r.id = rc.id WHERE c.id <> rc.id AND NOT coalesce({}, false)",
        (kind.near)("m.sig", "r.sig")
    ))
    .unwrap()
    .unwrap();
    assert!(
        chained > 0,
        "some members are only chained to their representative"
    );
}

#[pg_test]
fn minhash_components_follow_inserts_deletes_and_updates() {
    components_follow_inserts_deletes_and_updates(&MINHASH, 0.17);
}

/// Wide codes (hash256) at distance 12: the splits after deletes are planned from the
/// codes (`plan_split_wide`), the searches go through the `hamming` index.
#[pg_test]
fn wide_components_follow_inserts_deletes_and_updates() {
    components_follow_inserts_deletes_and_updates(&WIDE, 0.19);
}

/// Rows inserted in priority order, in statements of random sizes and with each
/// statement's rows in random order, end in the batch's stars after every statement.
fn stars_in_priority_order_equal_the_batch(kind: &Signed, seed: f64) {
    signed_table(kind, seed);
    Spi::run(&format!(
        "CREATE TABLE src AS SELECT i AS id, (random() * 3)::int AS fam, (random() * 9)::int AS rank
             FROM generate_series(1, 320) i;
         ALTER TABLE src ADD sig {};
         UPDATE src SET sig = {};
         SELECT neardup_cluster_tracking('docs', 'doc_clusters', 'id', 'sig', {}, 'rank DESC', 'representatives');",
        kind.column,
        kind.sign("fam"),
        kind.threshold
    ))
    .unwrap();
    let mut steps = Steps(11);
    let mut done = 0;
    while done < 320 {
        let size = 1 + steps.next(40);
        Spi::run(&format!(
            "INSERT INTO docs SELECT id, fam, sig, rank FROM
                 (SELECT * FROM src ORDER BY rank DESC, id OFFSET {done} LIMIT {size}) s ORDER BY random()"
        ))
        .unwrap();
        done += size;
        assert_eq!(
            cluster_table("doc_clusters"),
            batch_of_docs(kind, "representatives"),
            "after {done} rows"
        );
    }
    assert_eq!(star_violations(kind), "");
    let members =
        Spi::get_one::<i64>("SELECT count(*) FROM doc_clusters WHERE NOT is_representative")
            .unwrap()
            .unwrap();
    assert!(members >= 100, "rows joined representatives ({members})");
    // The families chain: components join what stars keep apart, so the test tells them apart.
    let (stars, components) = (
        Spi::get_one::<i64>("SELECT count(DISTINCT cluster_id) FROM doc_clusters")
            .unwrap()
            .unwrap(),
        Spi::get_one::<i64>(&format!(
            "SELECT count(DISTINCT cluster_id) FROM neardup_clusters('docs', 'id', 'sig', {})",
            kind.threshold
        ))
        .unwrap()
        .unwrap(),
    );
    assert!(stars > components, "{stars} stars, {components} components");
}

#[pg_test]
fn simhash_stars_inserted_in_priority_order_equal_the_batch() {
    stars_in_priority_order_equal_the_batch(&SIMHASH, 0.23);
}

#[pg_test]
fn minhash_stars_inserted_in_priority_order_equal_the_batch() {
    stars_in_priority_order_equal_the_batch(&MINHASH, 0.29);
}

#[pg_test]
fn wide_stars_inserted_in_priority_order_equal_the_batch() {
    stars_in_priority_order_equal_the_batch(&WIDE, 0.41);
}

/// Random inserts (in no priority order), deletes of representatives and members, and
/// updates of signatures, ranks and ids: every member stays within the threshold of its
/// representative.
fn stars_stay_within_the_threshold(kind: &Signed, seed: f64) {
    signed_table(kind, seed);
    Spi::run(&format!(
        "INSERT INTO docs SELECT i, i % 3, NULL, (random() * 5)::int FROM generate_series(1, 60) i;
         UPDATE docs SET sig = {};
         SELECT neardup_cluster_tracking('docs', 'doc_clusters', 'id', 'sig', {}, 'rank DESC', 'representatives');",
        kind.sign("fam"),
        kind.threshold
    ))
    .unwrap();
    assert_eq!(star_violations(kind), "");
    let mut steps = Steps(13);
    let mut next_id = 61;
    let mut representatives_deleted = 0;
    for round in 0..30 {
        let statement = match steps.next(5) {
            0 => format!(
                "INSERT INTO docs SELECT i, i % 3, {}, (random() * 9)::int FROM generate_series({next_id}, {}) i",
                kind.sign("(i % 3)::int"),
                next_id + steps.next(20) as i64
            ),
            1 => {
                representatives_deleted += 1;
                format!(
                    "DELETE FROM docs WHERE id IN (SELECT id FROM doc_clusters WHERE is_representative
                         AND cluster_id IN (SELECT cluster_id FROM doc_clusters GROUP BY 1 HAVING count(*) > 1)
                         ORDER BY id LIMIT 3)
                     OR id % 13 = {}",
                    steps.next(13)
                )
            }
            // A new near-copy in the same family: it may stay near its representative or not.
            2 => format!(
                "UPDATE docs SET sig = {} WHERE id % 6 = {}",
                kind.sign("fam"),
                steps.next(6)
            ),
            3 => format!(
                "UPDATE docs SET rank = (random() * 9)::int WHERE id % 4 = {}",
                steps.next(4)
            ),
            _ => format!(
                "UPDATE docs SET id = id + 100000 * {} WHERE id % 10 = {} AND id < 100000; \
                 UPDATE docs SET fam = 2, sig = {} WHERE id % 8 = {}",
                round + 1,
                steps.next(10),
                kind.sign("2"),
                steps.next(8)
            ),
        };
        next_id += 30;
        Spi::run(&statement).unwrap();
        assert_eq!(star_violations(kind), "", "round {round}: {statement}");
    }
    assert!(representatives_deleted > 0);
    assert!(clustered_members("doc_clusters") >= 20, "clusters remain");
}

#[pg_test]
fn simhash_stars_stay_within_the_threshold() {
    stars_stay_within_the_threshold(&SIMHASH, 0.31);
}

#[pg_test]
fn minhash_stars_stay_within_the_threshold() {
    stars_stay_within_the_threshold(&MINHASH, 0.37);
}

#[pg_test]
fn wide_stars_stay_within_the_threshold() {
    stars_stay_within_the_threshold(&WIDE, 0.43);
}

#[pg_test]
fn stars_follow_their_rules_step_by_step() {
    // A chain 1 — 2 — 3 at distance 2 each (1 and 3 are 4 bits apart), priority by id.
    Spi::run(
        "CREATE TABLE pages (id bigint PRIMARY KEY, fp simhash64, rank int);
         CREATE INDEX ON pages USING hamming (fp);
         INSERT INTO pages VALUES (1, '0000000000000000', 1), (2, '0000000000000003', 2),
                                  (3, '000000000000000f', 3), (10, 'ff00000000000000', 10);
         SELECT neardup_cluster_tracking('pages', 'page_clusters', 'id', 'fp', 2, 'rank', 'representatives');",
    )
    .unwrap();
    // Star around 1 holds 2; 3 is too far from 1 and leads its own, as the batch has it.
    assert_eq!(tracked_clusters(), "1:1:true,2:1:false,3:3:true,10:10:true");
    // A new row of higher priority near 10 joins it, lowering the label, but does not
    // take over; a second new row near both 10 and the first new row joins 10 too.
    Spi::run("INSERT INTO pages VALUES (5, 'ff00000000000001', 0), (6, 'ff00000000000003', 20)")
        .unwrap();
    assert_eq!(
        tracked_clusters(),
        "1:1:true,2:1:false,3:3:true,5:5:false,6:5:false,10:5:true"
    );
    // Two new rows near no representative: the first by priority leads, the other joins.
    Spi::run("INSERT INTO pages VALUES (21, '00ff000000000001', 2), (20, '00ff000000000000', 1)")
        .unwrap();
    assert_eq!(
        tracked_clusters(),
        "1:1:true,2:1:false,3:3:true,5:5:false,6:5:false,10:5:true,20:20:true,21:20:false"
    );
    // Deleting a member changes nothing else but the label (smallest remaining id).
    Spi::run("DELETE FROM pages WHERE id = 5").unwrap();
    assert_eq!(
        tracked_clusters(),
        "1:1:true,2:1:false,3:3:true,6:6:false,10:6:true,20:20:true,21:20:false"
    );
    // Deleting a representative: its member 2 joins the best representative near it, 3.
    Spi::run("DELETE FROM pages WHERE id = 1").unwrap();
    assert_eq!(
        tracked_clusters(),
        "2:2:false,3:2:true,6:6:false,10:6:true,20:20:true,21:20:false"
    );
    // Deleting 20 leaves 21 with no representative near: it leads its own.
    Spi::run("DELETE FROM pages WHERE id = 20").unwrap();
    assert_eq!(
        tracked_clusters(),
        "2:2:false,3:2:true,6:6:false,10:6:true,21:21:true"
    );
    // A changed priority changes nothing; a changed signature is a delete and an insert:
    // 3 (the representative) moves next to 21 and joins it; 2 is left alone.
    Spi::run("UPDATE pages SET rank = 100 WHERE id = 10").unwrap();
    assert_eq!(
        tracked_clusters(),
        "2:2:false,3:2:true,6:6:false,10:6:true,21:21:true"
    );
    Spi::run("UPDATE pages SET fp = '00ff000000000003' WHERE id = 3").unwrap();
    assert_eq!(
        tracked_clusters(),
        "2:2:true,3:3:false,6:6:false,10:6:true,21:3:true"
    );
    // A NULL signature is a cluster of its own; TRUNCATE empties the clusters.
    Spi::run("INSERT INTO pages VALUES (30, NULL, 0)").unwrap();
    assert!(tracked_clusters().ends_with("30:30:true"));
    Spi::run("TRUNCATE pages").unwrap();
    assert_eq!(tracked_clusters(), "");
}

#[pg_test]
fn the_minhash_neighbour_search_can_use_the_band_index() {
    signed_table(&MINHASH, 0.41);
    Spi::run(
        "INSERT INTO docs SELECT i, i % 40, family_mh(i::int % 40), 0 FROM generate_series(1, 3000) i;
         ANALYZE docs;
         SELECT neardup_cluster_tracking('docs', 'doc_clusters', 'id', 'sig', 0.7);
         INSERT INTO docs VALUES (5001, 1, family_mh(1), 0);
         INSERT INTO docs SELECT i, 2, family_mh(2), 0 FROM generate_series(5002, 5005) i;",
    )
    .unwrap();
    // Every rank is 0, so the batch's 'rank DESC' leads by id, as tracking without priority.
    assert_eq!(
        cluster_table("doc_clusters"),
        batch_of_docs(&MINHASH, "components")
    );
    assert!(clustered_members("doc_clusters") > 2000);
    // The triggers' neighbour condition, exactly as they write it, matches the index
    // expression lsh_bands(sig, 0.7): the planner can answer it with the GIN index. (At
    // this size it prefers a sequential scan by its own costs, which count lsh_bands as
    // cheap; enable_seqscan = off shows whether the index is usable at all.)
    let schema = Spi::get_one::<String>(
        "SELECT quote_ident(n.nspname) FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
         WHERE e.extname = 'neardup'",
    )
    .unwrap()
    .unwrap();
    let near = crate::cluster_tracking::near_condition(
        &schema,
        crate::cluster_tracking::Threshold::Jaccard(0.7),
        "t.sig",
        "s.fp",
    );
    let plan = Spi::connect_mut(|client| {
        client
            .update("SET LOCAL enable_seqscan = off", None, &[])
            .unwrap();
        client
            .select(
                &format!(
                    "EXPLAIN SELECT s.id, t.id AS other FROM (SELECT id, sig AS fp FROM docs WHERE id = 5001) s
                     LEFT JOIN docs t ON {near} AND t.id <> s.id"
                ),
                None,
                &[],
            )
            .unwrap()
            .map(|row| row.get::<String>(1).unwrap().unwrap())
            .collect::<Vec<_>>()
            .join("\n")
    });
    assert!(plan.contains("Bitmap Index Scan on docs_bands"), "{plan}");
}

#[pg_test]
fn triggers_of_0_3_0_and_hand_written_ones_keep_working() {
    // The arguments 0.3.0 wrote: clusters, id, signature, max distance, priority.
    Spi::run(
        "SELECT setseed(0.5);
         CREATE TABLE pages (id bigint PRIMARY KEY, fp simhash64, rank int);
         CREATE TABLE page_clusters (id bigint PRIMARY KEY, cluster_id bigint NOT NULL, is_representative boolean NOT NULL);
         CREATE TRIGGER i AFTER INSERT ON pages REFERENCING NEW TABLE AS n FOR EACH STATEMENT
             EXECUTE FUNCTION neardup_track_clusters('page_clusters', 'id', 'fp', '2', 'rank DESC');
         CREATE TRIGGER d AFTER DELETE ON pages REFERENCING OLD TABLE AS o FOR EACH STATEMENT
             EXECUTE FUNCTION neardup_track_clusters('page_clusters', 'id', 'fp', '2', 'rank DESC');
         INSERT INTO pages SELECT i, (i % 3 * 1000 + (random() * 3)::int)::bigint::simhash64, (random() * 5)::int
             FROM generate_series(1, 60) i;
         DELETE FROM pages WHERE id % 7 = 0;",
    )
    .unwrap();
    assert_eq!(tracked_clusters(), batch_clusters("rank DESC"));
    assert!(clustered_members("page_clusters") > 30);
    // On a minhash column '1' is a Jaccard threshold of 1 (exact copies), not a distance.
    Spi::run(
        "CREATE TABLE texts (id int PRIMARY KEY, mh minhash_sketch);
         CREATE TABLE text_clusters (id bigint PRIMARY KEY, cluster_id bigint NOT NULL, is_representative boolean NOT NULL);
         CREATE TRIGGER i AFTER INSERT ON texts REFERENCING NEW TABLE AS n FOR EACH STATEMENT
             EXECUTE FUNCTION neardup_track_clusters('text_clusters', 'id', 'mh', '1');
         INSERT INTO texts VALUES
             (1, minhash('the same words again and again here, one after the other in a long row of words')),
             (2, minhash('the same words again and again here, one after the other in a long row of words')),
             (3, minhash('other words entirely, nothing alike at all, not one shingle in common with them'));",
    )
    .unwrap();
    assert_eq!(
        cluster_table("text_clusters"),
        "1:1:true,2:1:false,3:3:true"
    );
}

#[pg_test(
    error = "neardup_track_clusters: method must be 'components' or 'representatives', not 'stars'"
)]
fn an_unknown_trigger_method_is_refused() {
    Spi::run(
        "CREATE TABLE pages (id bigint PRIMARY KEY, fp simhash64);
         CREATE TABLE page_clusters (id bigint PRIMARY KEY, cluster_id bigint, is_representative boolean);
         CREATE TRIGGER t AFTER INSERT ON pages REFERENCING NEW TABLE AS n FOR EACH STATEMENT
             EXECUTE FUNCTION neardup_track_clusters('page_clusters', 'id', 'fp', '3', '', 'stars');
         INSERT INTO pages VALUES (1, NULL);",
    )
    .unwrap();
}

#[pg_test(
    error = "neardup_track_clusters: the Jaccard threshold must be greater than 0 and at most 1, not 1.5"
)]
fn a_jaccard_threshold_above_one_is_refused() {
    Spi::run(
        "CREATE TABLE texts (id int PRIMARY KEY, mh minhash_sketch);
         CREATE TABLE text_clusters (id bigint PRIMARY KEY, cluster_id bigint, is_representative boolean);
         CREATE TRIGGER t AFTER INSERT ON texts REFERENCING NEW TABLE AS n FOR EACH STATEMENT
             EXECUTE FUNCTION neardup_track_clusters('text_clusters', 'id', 'mh', '1.5');
         INSERT INTO texts VALUES (1, NULL);",
    )
    .unwrap();
}

#[pg_test(
    error = "neardup_cluster_tracking: method must be 'components' or 'representatives', not 'stars'"
)]
fn an_unknown_tracking_method_is_refused() {
    Spi::run(
        "CREATE TABLE texts (id int PRIMARY KEY, mh minhash_sketch);
         SELECT neardup_cluster_tracking('texts', 'text_clusters', 'id', 'mh', 0.8, NULL, 'stars');",
    )
    .unwrap();
}
