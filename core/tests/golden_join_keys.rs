//! Golden vectors of the join keys (`neardup_core::search::permuted`, "Manku's tables as an
//! equi-join"), which key tables store: (fingerprint, max_distance, blocks) → keys, and the
//! key a pair is reported at (`tests/golden_join_keys.tsv`). A key table filled by one
//! release is joined by the next, so if this test fails the block widths, the table order,
//! the permutation or the key layout changed: a breaking change, not a test to update.

use neardup_core::search::permuted::Layout;

#[allow(dead_code)]
mod golden_text;
use golden_text::rows;

fn keys_text(layout: &Layout, fp: u64) -> String {
    let keys: Vec<String> = layout.join_keys(fp).map(|k| format!("{k:016x}")).collect();
    keys.join(",")
}

#[test]
fn join_keys_are_unchanged() {
    let mut checked = 0;
    for cols in rows(include_str!("../../tests/golden_join_keys.tsv"), 6) {
        let fp = u64::from_str_radix(cols[0], 16).unwrap();
        let other = u64::from_str_radix(cols[1], 16).unwrap();
        let (k, blocks): (u32, u32) = (cols[2].parse().unwrap(), cols[3].parse().unwrap());
        let layout = Layout::new(blocks, k).unwrap();
        assert_eq!(
            keys_text(&layout, fp),
            cols[4],
            "{fp:016x} k={k} r={blocks}"
        );
        let pair = layout
            .pair_key(fp, other)
            .map_or("-".to_string(), |key| format!("{key:016x}"));
        assert_eq!(pair, cols[5], "{fp:016x} ~ {other:016x} k={k} r={blocks}");
        checked += 1;
    }
    assert!(checked >= 30);
}

/// Prints the golden file's rows: how it was made.
#[test]
#[ignore = "generates tests/golden_join_keys.tsv once; never regenerate to make a test pass"]
fn generate() {
    let mut state = 0x5eed_u64;
    let mut next = || neardup_core::base::splitmix::splitmix64_next(&mut state);
    for (k, blocks) in [
        (0, 2),
        (1, 3),
        (2, 4),
        (3, 4),
        (3, 5),
        (3, 6),
        (4, 7),
        (6, 8),
    ] {
        for i in 0..5 {
            let fp = if i == 0 { 0 } else { next() };
            // a neighbour 0..=k+1 bits away (the last one too far for i = 4)
            let flips = if i == 4 { k + 1 } else { i.min(k) };
            let other = (0..flips).fold(fp, |x, b| x ^ 1 << ((b * 13 + i * 7) % 64));
            let layout = Layout::new(blocks, k).unwrap();
            let pair = layout
                .pair_key(fp, other)
                .map_or("-".to_string(), |key| format!("{key:016x}"));
            println!(
                "{fp:016x}\t{other:016x}\t{k}\t{blocks}\t{}\t{pair}",
                keys_text(&layout, fp)
            );
        }
    }
}
