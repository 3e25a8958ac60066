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
