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
