//! Expected ratios of matched bits: what a [`crate::signatures::bloom::bloom_match`] value means, and
//! the model the tests hold the signatures to. Filters have `m` bits, each element sets `k`
//! independent uniform bits (as [`crate::signatures::bloom`] places them), and documents A and B have
//! `n_a`, `n_b` elements, `c` of them common.
//!
//! Two different ratios, which the paper's §2.3.1 does not tell apart:
//!
//! - [`paper_matched_bits_ratio`], the paper's: take each element of B, keep those that
//!   pass A's membership test (the `c` common ones and the false positives), and count
//!   the bits these set, over the bits set in A. For unrelated documents at `m = 8n` it is
//!   3 %. Measuring it needs B's elements, not only B's filter.
//! - [`expected_match_ratio`], what the AND of two filters gives, `|A AND B| / |A|`, which
//!   is what `bloom_match` computes and what the paper's experiments report. A bit of A is
//!   also set in B whenever any of B's `n_b k` draws hits it, so for unrelated documents
//!   this is the fraction of bits set in B, `1 − e^{−k n_b / m}`: 53 % for `k = 6` at
//!   `m = 8 n_b`, 50 % at the optimum `k`. Contained documents still give 1.0, and the
//!   ratio grows with the share of common chunks, but thresholds must be read against this
//!   floor (which is lower for documents with fewer chunks than the filter is sized for:
//!   9 % for a 32-chunk document in the default 2048-bit filter).

/// Jain et al. §2.3.1, with `|A| = |B| = n`: the expected number of bits set by the
/// elements of B inferred to be in A, over the expected number of bits set in A,
/// `(1 − e^{−(k/m)(c + (n − c) p^k)}) / (1 − e^{−nk/m})` with `p = 1 − e^{−nk/m}`.
/// At the optimum `k = (m/n) ln 2`, `p^k = 0.6185^{m/n}`, and for `c = 0` this is the
/// paper's `2 (1 − 0.5^{0.6185^{m/n}})`.
pub fn paper_matched_bits_ratio(bits: f64, hashes: f64, elements: f64, common: f64) -> f64 {
    let fill = 1.0 - (-elements * hashes / bits).exp();
    let inferred = common + (elements - common) * fill.powf(hashes);
    (1.0 - (-hashes / bits * inferred).exp()) / fill
}

/// `E|A AND B| / E|A|`: with `q(x) = (1 − 1/m)^{kx}` the probability that `x` elements all
/// miss a given bit, `(1 − q(n_a) − q(n_b) + q(n_a + n_b − c)) / (1 − q(n_a))` (a bit is
/// in both filters unless one of them misses it; inclusion–exclusion).
pub fn expected_match_ratio(bits: f64, hashes: f64, n_a: f64, n_b: f64, common: f64) -> f64 {
    let missed_by = |elements: f64| (1.0 - 1.0 / bits).powf(hashes * elements);
    let (qa, qb) = (missed_by(n_a), missed_by(n_b));
    (1.0 - qa - qb + missed_by(n_a + n_b - common)) / (1.0 - qa)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::LN_2;

    #[test]
    fn paper_values_at_the_optimum_k() {
        // §2.3.1: "For m = n, this evaluates to 0.6973 [...] For larger values, m = 2n,
        // 4n, 8n, 10n, 11n, the corresponding ratios are 0.4658, 0.1929, 0.0295, 0.0113,
        // 0.0070".
        let n = 1000.0;
        for (per_element, paper) in [
            (1.0, 0.6973),
            (2.0, 0.4658),
            (4.0, 0.1929),
            (8.0, 0.0295),
            (10.0, 0.0113),
            (11.0, 0.0070),
        ] {
            let m = per_element * n;
            let ratio = paper_matched_bits_ratio(m, per_element * LN_2, n, 0.0);
            assert!(
                (ratio - paper).abs() < 0.0005,
                "m = {per_element}n: {ratio}"
            );
            let closed_form = 2.0 * (1.0 - 0.5f64.powf(0.6185f64.powf(per_element)));
            assert!((ratio - closed_form).abs() < 0.0005);
        }
        assert!((paper_matched_bits_ratio(8000.0, 6.0, 1000.0, 1000.0) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn and_ratio_limits() {
        let (m, k) = (2048.0, 6.0);
        assert!((expected_match_ratio(m, k, 100.0, 100.0, 100.0) - 1.0).abs() < 1e-12);
        assert!((expected_match_ratio(m, k, 10.0, 100.0, 10.0) - 1.0).abs() < 1e-12);
        // Unrelated: the fill of B, whatever A.
        let fill_b = 1.0 - (1.0 - 1.0 / m).powf(k * 256.0);
        for n_a in [1.0, 32.0, 256.0] {
            let ratio = expected_match_ratio(m, k, n_a, 256.0, 0.0);
            assert!((ratio - fill_b).abs() < 1e-12);
        }
        assert!((fill_b - 0.5277).abs() < 0.001);
        // Half the chunks in common reads as about 72 % at m = 8n.
        let half = expected_match_ratio(m, k, 256.0, 256.0, 128.0);
        assert!((half - 0.72).abs() < 0.01, "{half}");
    }
}
