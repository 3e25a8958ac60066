//! Time of the whole-table LSH self-join in the core (`BandPairs` at threshold 0.8 over the
//! 128-minvalue sketches of the Debian descriptions), without PostgreSQL around it: what
//! `minhash_pairs` costs beyond reading the rows. A measurement, not a check:
//!
//! ```sh
//! CARGO_TARGET_DIR=/tmp/target-lsh cargo test -p neardup-core --release \
//!     --test lsh_throughput -- --ignored --nocapture
//! ```

use neardup_core::search::lsh::{params_for_threshold, BandPairs, SketchTable, VERIFIED_WEIGHTS};
use neardup_core::signatures::minhash::{minhash_text, MinhashOptions};
use std::time::Instant;

mod debian_corpus;

#[test]
#[ignore = "a measurement; run with --ignored --nocapture"]
fn lsh_self_join_throughput() {
    let bodies = debian_corpus::bodies(true);
    let options = MinhashOptions::new(128, 8).unwrap();
    let mut table = SketchTable::new(128);
    for b in &bodies {
        table.push(minhash_text(b, &options).values());
    }
    let (fp, fn_) = VERIFIED_WEIGHTS;
    let banding = params_for_threshold(0.8, 128, fp, fn_).unwrap().banding;
    let start = Instant::now();
    let pairs = BandPairs::new(table, banding, 0.8).unwrap().count();
    println!(
        "{} rows, {}x{} bands: {pairs} pairs in {:.1} ms",
        bodies.len(),
        banding.bands(),
        banding.rows(),
        start.elapsed().as_secs_f64() * 1e3
    );
}
