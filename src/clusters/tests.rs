// SQL tests of duplicate clusters.

#[pg_test]
fn components_equal_a_recursive_reference_on_random_graphs() {
    Spi::run(
        "SELECT setseed(0.3);
         CREATE TABLE edges AS SELECT (random() * 150)::int AS x, (random() * 150)::int AS y
             FROM generate_series(1, 120);
         INSERT INTO edges VALUES (NULL, 1), (7, 7);",
    )
    .unwrap();
    let ours = Spi::get_one::<String>(
        "SELECT string_agg(node || ':' || component, ',' ORDER BY node)
         FROM neardup_components('SELECT x, y FROM edges')",
    )
    .unwrap();
    let reference = Spi::get_one::<String>(
        "WITH RECURSIVE e AS (SELECT x::bigint AS a, y::bigint AS b FROM edges WHERE x IS NOT NULL AND y IS NOT NULL
                              UNION SELECT y, x FROM edges WHERE x IS NOT NULL AND y IS NOT NULL),
              reach (node, other) AS (SELECT a, a FROM e UNION SELECT r.node, e.b FROM reach r JOIN e ON e.a = r.other)
         SELECT string_agg(node || ':' || c, ',' ORDER BY node) FROM (SELECT node, min(other) AS c FROM reach GROUP BY node) s",
    )
    .unwrap();
    assert_eq!(ours, reference);
}

#[pg_test]
fn clusters_cover_every_row_and_follow_the_priority() {
    Spi::run(
        "CREATE TABLE c (id bigint PRIMARY KEY, fp simhash64, rank int);
         INSERT INTO c VALUES (1, '0000000000000000', 3), (2, '0000000000000001', 1), (3, '0000000000000003', 2),
                              (4, 'ffffffffffffffff', 1), (5, NULL, 1), (6, 'f0f0f0f0f0f0f0f0', 9),
                              (7, 'f0f0f0f0f0f0f0f1', 8), (8, '00000000000000ff', 1);",
    )
    .unwrap();
    let by_id = Spi::get_one::<String>(
        "SELECT string_agg(id || ':' || cluster_id || ':' || is_representative, ',' ORDER BY id)
         FROM neardup_clusters('c', 'id', 'fp', 1)",
    )
    .unwrap()
    .unwrap();
    // 1-2-3 chain within 1 bit (1~2, 2~3), 6~7, the rest alone; NULL fingerprints too.
    assert_eq!(by_id, "1:1:true,2:1:false,3:1:false,4:4:true,5:5:true,6:6:true,7:6:false,8:8:true");
    let by_rank = Spi::get_one::<String>(
        "SELECT string_agg(id::text, ',' ORDER BY id) FROM neardup_clusters('c', 'id', 'fp', 1, 'rank')
         WHERE is_representative",
    )
    .unwrap()
    .unwrap();
    assert_eq!(by_rank, "2,4,5,7,8");
    let pairs_components = Spi::get_one::<String>(
        "SELECT string_agg(node || ':' || component, ',' ORDER BY node)
         FROM neardup_components('SELECT a, b FROM hamming_pairs(''c'', ''id'', ''fp'', 1)')",
    )
    .unwrap()
    .unwrap();
    assert_eq!(pairs_components, "1:1,2:1,3:1,6:6,7:6");
}

#[pg_test]
fn representatives_do_not_chain() {
    // 0 ~ 1 ~ 3 ~ 7 ~ f: a chain of one-bit steps, each row 1 bit from the next.
    Spi::run(
        "CREATE TABLE chain (id bigint PRIMARY KEY, fp simhash64, rank int);
         INSERT INTO chain VALUES (1, '0000000000000000', 5), (2, '0000000000000001', 4), (3, '0000000000000003', 3),
                                  (4, '0000000000000007', 2), (5, '000000000000000f', 1), (6, NULL, 1);",
    )
    .unwrap();
    let clusters = |args: &str| {
        text(&format!(
            "SELECT string_agg(id || ':' || cluster_id || ':' || is_representative, ',' ORDER BY id)
             FROM neardup_clusters('chain', 'id', 'fp', 1{args})"
        ))
    };
    assert_eq!(clusters(""), "1:1:true,2:1:false,3:1:false,4:1:false,5:1:false,6:6:true");
    // By id: 1 takes 2; 3 takes 4; 5 alone. By rank: 5 takes 4; 3 takes 2; 1 alone.
    assert_eq!(
        clusters(", priority => NULL, method => 'representatives'"),
        "1:1:true,2:1:false,3:3:true,4:3:false,5:5:true,6:6:true"
    );
    assert_eq!(
        clusters(", 'rank', 'representatives'"),
        "1:1:true,2:2:false,3:2:true,4:4:false,5:4:true,6:6:true"
    );
    assert_eq!(
        sqlstate("SELECT * FROM neardup_clusters('chain', 'id', 'fp', 1, NULL, 'stars')").as_deref(),
        Some("22023")
    );
}

#[pg_test]
fn minhash_clusters_are_the_components_and_stars_of_the_verified_pairs() {
    create_lsh_docs();
    Spi::run("UPDATE lsh_docs SET mh = NULL WHERE id % 97 = 0").unwrap();
    // Components of minhash_pairs, plus every row without a pair as its own cluster.
    let from_pairs = text(
        "WITH c AS (SELECT node, component FROM neardup_components(
                        'SELECT a, b FROM minhash_pairs(''lsh_docs'', ''id'', ''mh'', 0.7)'))
         SELECT string_agg(d.id || ':' || coalesce(c.component, d.id), ',' ORDER BY d.id)
         FROM lsh_docs d LEFT JOIN c ON c.node = d.id",
    );
    let components = text(
        "SELECT string_agg(id || ':' || cluster_id, ',' ORDER BY id)
         FROM neardup_clusters('lsh_docs', 'id', 'mh', 0.7)",
    );
    assert_eq!(components, from_pairs);
    // Stars: every member's sketch is within the threshold of its representative's, and
    // sharing a band with it; fewer rows per cluster than the components.
    Spi::run(
        "CREATE TABLE stars AS SELECT * FROM neardup_clusters('lsh_docs', 'id', 'mh', 0.7, 'length(body) DESC', 'representatives')",
    )
    .unwrap();
    assert_eq!(
        int("SELECT count(*) FROM stars s JOIN stars r ON r.cluster_id = s.cluster_id AND r.is_representative
             JOIN lsh_docs d ON d.id = s.id JOIN lsh_docs e ON e.id = r.id
             WHERE s.id <> r.id AND NOT (jaccard(d.mh, e.mh) >= 0.7
                                         AND lsh_bands(d.mh, 0.7) && lsh_bands(e.mh, 0.7))"),
        0
    );
    // One representative a cluster, every row once.
    assert_eq!(
        int("SELECT count(*) FROM (SELECT cluster_id FROM stars GROUP BY cluster_id
                                   HAVING count(*) FILTER (WHERE is_representative) <> 1) x"),
        0
    );
    assert_eq!(int("SELECT count(DISTINCT id) FROM stars"), 400);
    assert!(
        int("SELECT count(DISTINCT cluster_id) FROM stars")
            > int("SELECT count(DISTINCT cluster_id) FROM neardup_clusters('lsh_docs', 'id', 'mh', 0.7)")
    );
    // A cluster's label is one of its members.
    assert_eq!(
        int("SELECT count(*) FROM stars s WHERE s.is_representative AND NOT EXISTS
                 (SELECT FROM stars t WHERE t.cluster_id = s.cluster_id AND t.id = s.cluster_id)"),
        0
    );
    assert_eq!(
        sqlstate("SELECT * FROM neardup_clusters('lsh_docs', 'id', 'mh', 1.5)").as_deref(),
        Some("22023")
    );
}
