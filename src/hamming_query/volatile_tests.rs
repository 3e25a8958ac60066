// SQL tests of the planner hook on bounds whose operands must be evaluated once: a subquery
// (each copy would be a subplan of its own, computed on its own) or a volatile function (each
// copy would be called). Included in lib.rs's `tests` schema module beside
// hamming_query/tests.rs, whose helpers (hq_plan, hq_rows, hq_index_scans) they use.

/// Rows in `hv`.
const HV_ROWS: i64 = 4000;

/// `hv(id, fp simhash64, fpi bigint, code hash256)`: distinct random codes, each column with
/// a `hamming` index, so a radius-0 probe of one row's code matches that row only.
fn hv_fixture() {
    Spi::run(&format!(
        "CREATE TABLE hv AS
         SELECT g AS id, hashtextextended('hv' || g, 0)::simhash64 AS fp,
                hashtextextended('hv' || g, 0) AS fpi,
                ('x' || md5(g::text) || md5((g + 1000000)::text))::bit(256)::hash256 AS code
         FROM generate_series(1, {HV_ROWS}) g;
         CREATE INDEX hv_fp ON hv USING hamming (fp);
         CREATE INDEX hv_fpi ON hv USING hamming (fpi int8_hamming_ops);
         CREATE INDEX hv_code ON hv USING hamming (code);
         ANALYZE hv;"
    ))
    .unwrap();
    for col in ["fp", "fpi", "code"] {
        assert_eq!(
            int(&format!("SELECT count(DISTINCT {col}) FROM hv")),
            HV_ROWS
        );
    }
}

/// The columns of `hv` with a code of row 7 and the widest radius of each.
const HV_COLUMNS: [(&str, i32); 3] = [("fp", 64), ("fpi", 64), ("code", 256)];

/// A subquery probe that picks a random row's code matches at least that row, through the
/// index or not, in every form: one subplan computes it, whose value every clause reads.
#[pg_test]
fn hv_random_subquery_probes_find_their_own_row() {
    hv_fixture();
    for (col, _) in HV_COLUMNS {
        let probe = format!("(SELECT {col} FROM hv ORDER BY random() LIMIT 1)");
        for cond in [
            format!("hamming({col}, {probe}) <= 0"),
            format!("{col} <~> {probe} < 1"),
            format!("0 >= hamming({probe}, {col})"),
            format!("hamming_within({col}, {probe}, 0)"),
        ] {
            let query = format!("SELECT count(*) FROM hv WHERE {cond}");
            for scans in [true, false] {
                hq_index_scans(scans);
                for run in 0..4 {
                    assert_eq!(
                        int(&query),
                        1,
                        "{cond}, index scans {scans}, run {run}: {}",
                        hq_plan(&query)
                    );
                }
            }
        }
    }
}

/// A volatile function in the probe or the radius is called once a row scanned, as written:
/// the function counts its calls with a sequence.
#[pg_test]
fn hv_volatile_probes_and_radii_are_called_once_a_row() {
    hv_fixture();
    Spi::run(
        "CREATE SEQUENCE hv_calls;
         CREATE FUNCTION hv_once(v anyelement) RETURNS anyelement LANGUAGE plpgsql VOLATILE AS
             $$ BEGIN PERFORM nextval('hv_calls'); RETURN v; END $$;",
    )
    .unwrap();
    // (the query's count, the calls it made)
    let counted = |query: &str| {
        Spi::run("SELECT setval('hv_calls', 1, false)").unwrap();
        let n = int(query);
        let calls = int("SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM hv_calls");
        (n, calls)
    };
    for scans in [true, false] {
        hq_index_scans(scans);
        for (col, width) in HV_COLUMNS {
            let q = format!("(SELECT {col} FROM hv WHERE id = 7)");
            let wider = width + 1;
            for (cond, rows) in [
                (format!("hamming({col}, hv_once({q})) <= 0"), 1),
                (format!("hamming(hv_once({q}), {col}) <= {width}"), HV_ROWS),
                (format!("{col} <~> hv_once({q}) < {wider}"), HV_ROWS),
                (format!("hamming({col}, {q}) <= hv_once({width})"), HV_ROWS),
                (format!("hv_once({wider}) > hamming({col}, {q})"), HV_ROWS),
                (
                    format!("hamming_within({col}, hv_once({q}), {width})"),
                    HV_ROWS,
                ),
            ] {
                let query = format!("SELECT count(*) FROM hv WHERE {cond}");
                assert_eq!(
                    counted(&query),
                    (rows, HV_ROWS),
                    "{cond}, index scans {scans}: {}",
                    hq_plan(&query)
                );
            }
        }
    }
}

/// A subquery probe still uses the index, computed once (one InitPlan) and without the bound
/// beside it, and its estimate is the explicit `hamming_within`'s (the call is not marked as
/// standing beside a kept bound).
#[pg_test]
fn hv_subquery_probes_use_the_index_once() {
    hv_fixture();
    Spi::run("SET enable_seqscan = off").unwrap();
    for (col, _) in HV_COLUMNS {
        for (probe, k) in [
            (format!("(SELECT {col} FROM hv WHERE id = 7)"), 3),
            (
                format!("(SELECT {col} FROM hv ORDER BY random() LIMIT 1)"),
                0,
            ),
        ] {
            let query = format!("SELECT count(*) FROM hv WHERE hamming({col}, {probe}) <= {k}");
            let plan = hq_plan(&query);
            assert!(
                plan.contains(&format!("Index Cond: (hv.{col} <@ hamming_ball(")),
                "{plan}"
            );
            assert!(!plan.contains("InitPlan 2"), "{plan}");
            assert!(!plan.contains(&format!("hamming(hv.{col}")), "{plan}");
            assert_eq!(int(&query), 1, "{plan}");
            assert_eq!(
                hq_rows(&format!(
                    "SELECT * FROM hv WHERE hamming({col}, {probe}) <= {k}"
                )),
                hq_rows(&format!(
                    "SELECT * FROM hv WHERE hamming_within({col}, {probe}, {k})"
                )),
                "{col} {probe}"
            );
        }
    }
}
