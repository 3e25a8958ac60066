//! When the runs of a `hamming` index merge. Each lookup probes every run, so there must be
//! few; each merge rewrites its rows, so they must not merge too often. The rule is tiered,
//! as log-structured merge trees are: with the runs ordered largest first, the runs after
//! run `i` merge with it once together they hold at least `1 / RATIO` of its rows. So every
//! run holds more than `RATIO` times all the runs after it put together: with `n` rows and
//! pending lists of `u` rows there are at most `log_(RATIO+1)(n / u) + 1` runs, and a row is
//! rewritten about `RATIO / 2 + 1` times per level it climbs (the simulation in the tests
//! bounds it).

/// Runs after a run merge into it once they hold this fraction of its rows (1 / RATIO).
/// A lookup probes every run, but the merge workers compact the index into one run as soon
/// as inserts pause, so the ratio trades merge work against lookups only while inserts go
/// on. The policy alone (pending lists of 8,192 rows) writes each row 11.8 times by 10 M
/// rows with 4, 17.3 with 8, and leaves 3.0 runs on average against 2.5 (at most 5 and 4).
/// Measured with `bench/ingest_batched.sh` (2 clients, 100-row statements, 2 workers), the
/// merges' WAL is what slows the inserts' commits: with 4, rows/s were 1.12× and 1.18× a
/// btree's at 3 and 10 M rows where 8 gave 0.98× and 0.95-0.97×; lookups while inserts go
/// on cost 1.4-1.8× a fresh index's with 4 and 1.4-1.7× with 8 (equal once compacted).
pub const RATIO: u64 = 4;

/// Given the row counts of the runs, largest first, the position from which all the runs
/// (that one and every smaller one) should merge into one, if any should.
pub fn merge_from(rows: &[u64]) -> Option<usize> {
    let mut after = 0u64;
    let mut from = None;
    for (i, &r) in rows.iter().enumerate().rev() {
        if i + 1 < rows.len() && after.saturating_mul(RATIO) >= r {
            from = Some(i);
        }
        after = after.saturating_add(r);
    }
    from
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Simulates `flushes` pending lists of `u` rows each, merging after each as the rule
    /// says; returns the most runs seen and the rows written per row inserted.
    fn simulate(flushes: u64, u: u64) -> (usize, f64) {
        let (mut runs, mut written, mut most) = (Vec::<u64>::new(), 0u64, 0);
        for _ in 0..flushes {
            runs.push(u);
            written += u;
            runs.sort_unstable_by(|a, b| b.cmp(a));
            while let Some(from) = merge_from(&runs) {
                let merged: u64 = runs.drain(from..).sum();
                written += merged;
                runs.push(merged);
                runs.sort_unstable_by(|a, b| b.cmp(a));
            }
            most = most.max(runs.len());
            for w in runs.windows(2) {
                assert!(w[0] >= w[1]);
            }
        }
        (most, written as f64 / (flushes * u) as f64)
    }

    #[test]
    fn runs_stay_logarithmic_and_rewrites_bounded() {
        for flushes in [1, 10, 100, 1000] {
            let (most, amplification) = simulate(flushes, 16384);
            let bound = ((flushes as f64).ln() / ((RATIO + 1) as f64).ln()).ceil() as usize + 1;
            assert!(
                most <= bound,
                "{flushes} flushes: {most} runs, bound {bound}"
            );
            // Each level rewrites its rows about RATIO + 1 times over.
            let levels = ((flushes as f64).ln() / ((RATIO + 1) as f64).ln())
                .ceil()
                .max(1.0);
            let limit = 1.0 + levels * (RATIO + 1) as f64;
            assert!(
                amplification <= limit,
                "{flushes}: {amplification} > {limit}"
            );
        }
    }

    #[test]
    fn merges_only_what_the_rule_says() {
        let big = 100 * RATIO;
        assert_eq!(merge_from(&[]), None);
        assert_eq!(merge_from(&[big]), None);
        assert_eq!(merge_from(&[big, 99]), None);
        assert_eq!(merge_from(&[big, 100]), Some(0));
        assert_eq!(merge_from(&[big, 95, 5]), Some(0));
        assert_eq!(merge_from(&[big, 10 * RATIO, 10]), Some(1));
        assert_eq!(merge_from(&[big, 10 * RATIO, 9]), None);
        assert_eq!(merge_from(&[u64::MAX, u64::MAX]), Some(0));
    }
}
