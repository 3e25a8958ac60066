//! Bloom signatures on real text (the Debian descriptions): a document inside a larger page
//! is found contained, identical texts match fully, and pairs of unrelated documents match
//! as much as the models of `bloom_analysis` predict: the paper's §2.3.1 ratio for the
//! bits of inferred members, and the fill of the other filter for the AND of two filters.

mod debian_corpus;

use neardup_core::signatures::bloom::{
    bloom_match, bloom_of, bloom_similarity, BloomParams, BloomSignature, DEFAULT_HASHES,
};
use neardup_core::signatures::bloom_analysis::{expected_match_ratio, paper_matched_bits_ratio};
use neardup_core::signatures::chunk_set::for_each_element;
use std::collections::HashSet;

fn elements(text: &[u8], params: BloomParams) -> Vec<u64> {
    let mut out = Vec::new();
    for_each_element(text, params.chunk_size(), |e| out.push(e));
    out
}

fn filter(elements: &[u64], params: BloomParams) -> BloomSignature {
    let mut s = BloomSignature::empty(params);
    elements.iter().for_each(|&e| s.insert(e));
    s
}

/// Consecutive bodies from `start`, joined by blank lines, up to at least `bytes` bytes.
fn document(bodies: &[Vec<u8>], start: usize, bytes: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for body in &bodies[start..] {
        if out.len() >= bytes {
            break;
        }
        out.extend_from_slice(body);
        out.extend_from_slice(b"\n\n");
    }
    out
}

#[test]
fn a_document_inside_a_larger_page_is_contained() {
    // The paper's sizes (§3.1.1): 256-byte chunks, 2048 bits for pages up to 64 KB. Here a
    // 16 KB document in a 64 KB page.
    let bodies = debian_corpus::bodies(false);
    let params = BloomParams::new(2048, None, 256).unwrap();
    for case in 0..8 {
        let small = document(&bodies, 100 + 1000 * case, 16 * 1024);
        let mut page = b"<html><head><title>Debian packages</title></head><body>\
                         <nav><a href=\"/\">Home</a> | <a href=\"/search\">Search</a></nav>"
            .to_vec();
        page.extend(document(&bodies, 5000 + 500 * case, 24 * 1024));
        page.extend_from_slice(b"<article>");
        page.extend_from_slice(&small);
        page.extend_from_slice(b"</article><aside>");
        page.extend(document(&bodies, 7000 + 300 * case, 24 * 1024));
        page.extend_from_slice(b"</aside><footer>&copy; Debian</footer></body></html>");

        // Only the chunks at the document's two ends differ in the page (the first cut
        // inside it may differ too, as the page's chunk started elsewhere).
        let (small_elements, page_elements) = (elements(&small, params), elements(&page, params));
        let in_page: HashSet<u64> = page_elements.iter().copied().collect();
        let shared = small_elements
            .iter()
            .filter(|e| in_page.contains(e))
            .count();
        assert!(shared + 3 >= small_elements.len(), "case {case}: {shared}");

        let (a, b) = (bloom_of(&small, params), bloom_of(&page, params));
        let inside = bloom_match(&a, &b).unwrap();
        let outside = bloom_match(&b, &a).unwrap();
        assert!(
            inside >= 0.95,
            "case {case}: bloom_match(small, page) = {inside}"
        );
        let (n_small, n_page) = (small_elements.len() as f64, page_elements.len() as f64);
        let k = DEFAULT_HASHES as f64;
        let model = expected_match_ratio(2048.0, k, n_page, n_small, shared as f64);
        assert!(
            (outside - model).abs() < 0.1,
            "case {case}: bloom_match(page, small) = {outside}, model {model}"
        );
        assert!(outside < 0.5);
        let similarity = bloom_similarity(&a, &b).unwrap();
        assert!(similarity <= outside, "case {case}: {similarity}");
    }
}

#[test]
fn identical_texts_match_fully() {
    let bodies = debian_corpus::bodies(false);
    let params = BloomParams::new(2048, None, 256).unwrap();
    let text = document(&bodies, 42, 6000);
    let dressed = format!(
        "<html><body><p>{}</p></body></html>",
        String::from_utf8_lossy(&text).to_uppercase()
    );
    let (a, b) = (
        bloom_of(&text, params),
        bloom_of(dressed.as_bytes(), params),
    );
    assert!(a.bit_count() > 0);
    assert_eq!(a, b);
    assert_eq!(bloom_match(&a, &b), Ok(1.0));
    assert_eq!(bloom_similarity(&a, &b), Ok(1.0));
}

#[test]
fn unrelated_documents_match_as_the_models_predict() {
    let bodies = debian_corpus::bodies(false);
    // The paper's design point: m = 8 bits per chunk, for documents with exactly n chunks.
    for (chunk_size, n) in [(32, 16), (64, 8)] {
        let m = 8 * n;
        let params = BloomParams::new(m as i64, None, chunk_size).unwrap();
        let mut seen = HashSet::new();
        let docs: Vec<Vec<u64>> = bodies
            .iter()
            .filter(|b| seen.insert(b.as_slice())) // bodies repeated under several names
            .map(|b| elements(b, params))
            .filter(|e| e.len() == n)
            .collect();
        let (mut pairs, mut and_sum, mut paper_sum) = (0, 0.0, 0.0);
        for offset in [1, 2, 3, 5, 8].map(|f| f * docs.len() / 10) {
            for (i, a) in docs.iter().enumerate() {
                let b = &docs[(i + offset) % docs.len()];
                if a.iter().any(|e| b.contains(e)) {
                    continue; // not unrelated
                }
                let (fa, fb) = (filter(a, params), filter(b, params));
                and_sum += bloom_match(&fa, &fb).unwrap();
                // The paper's ratio: the bits of B's elements that pass A's membership test.
                let inferred: Vec<u64> = b.iter().copied().filter(|&e| fa.contains(e)).collect();
                paper_sum += filter(&inferred, params).bit_count() as f64 / fa.bit_count() as f64;
                pairs += 1;
            }
        }
        assert!(pairs >= 1500, "chunk size {chunk_size}: {pairs} pairs");
        let k = DEFAULT_HASHES as f64;
        let (m, n) = (m as f64, n as f64);
        let and_mean = and_sum / pairs as f64;
        let and_model = expected_match_ratio(m, k, n, n, 0.0);
        assert!(
            (and_mean - and_model).abs() < 0.02,
            "AND ratio {and_mean} vs model {and_model}"
        );
        let paper_mean = paper_sum / pairs as f64;
        let paper_model = paper_matched_bits_ratio(m, k, n, 0.0);
        assert!((paper_model - 0.03).abs() < 0.002);
        assert!(
            (paper_mean - paper_model).abs() < 0.01,
            "inferred-member bits {paper_mean} vs the paper's {paper_model}"
        );
        println!(
            "chunk {chunk_size}, n = {n}, m = {m}, {pairs} pairs: bloom_match {and_mean:.4} \
             (model {and_model:.4}), paper's ratio {paper_mean:.4} (formula {paper_model:.4})"
        );
    }
}

#[test]
fn partial_overlap_follows_the_and_model() {
    // A = X + Y and B = X + Z: a shared part, and a different part each.
    let bodies = debian_corpus::bodies(false);
    let params = BloomParams::new(512, None, 64).unwrap();
    let (mut total_error, mut cases) = (0.0, 0);
    for case in 0..200 {
        let x = document(&bodies, 17 * case, 1500);
        let y = document(&bodies, 4000 + 13 * case, 1000);
        let z = document(&bodies, 8000 + 11 * case, 1000);
        let a_text = [x.as_slice(), &y].concat();
        let b_text = [x.as_slice(), &z].concat();
        let (a, b) = (elements(&a_text, params), elements(&b_text, params));
        let b_set: HashSet<u64> = b.iter().copied().collect();
        let common = a.iter().filter(|e| b_set.contains(e)).count();
        let measured = bloom_match(&filter(&a, params), &filter(&b, params)).unwrap();
        let model = expected_match_ratio(
            512.0,
            DEFAULT_HASHES as f64,
            a.len() as f64,
            b.len() as f64,
            common as f64,
        );
        assert!(
            (measured - model).abs() < 0.25,
            "case {case}: {measured} vs {model}"
        );
        total_error += measured - model;
        cases += 1;
    }
    let bias = total_error / cases as f64;
    assert!(bias.abs() < 0.02, "mean error {bias}");
}
