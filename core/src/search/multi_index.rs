//! Multi-index hashing (Norouzi, Punjani and Fleet, "Fast Exact Search in Hamming Space with
//! Multi-Index Hashing", 2014): exact search within `r` bits on wide codes, where Manku's
//! permuted tables (made for 64 bits at small `r`) do not apply.
//!
//! A code is cut into `m` disjoint substrings. Write `r = a·m + b` with `0 ≤ b < m`: two codes
//! within `r` bits agree within `a` bits on one of the first `b + 1` substrings, or within
//! `a - 1` bits on one of the others (otherwise they would differ in at least
//! `(b + 1)(a + 1) + (m - b - 1)·a = r + 1` bits). So each substring has a table of the
//! codes sorted by that substring's value; a search enumerates, per substring, every value
//! within the substring's radius of the query's, and verifies each candidate on the whole
//! code. A candidate is reported only from its *witness*, the first substring within its
//! radius, so each code is reported once however many substrings it matches in.

use crate::base::interrupts;
use crate::signatures::wide_code::WideCode;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanError(pub String);

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Widest substring: a table entry keeps the value in 32 bits.
const MAX_WIDTH: u32 = 32;

/// How a code of `code_bits` bits is cut into `count` substrings (widths differing by at
/// most one bit), and each substring's search radius for `radius`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Substrings {
    code_bits: u32,
    count: u32,
    radius: u32,
}

impl Substrings {
    pub fn new(code_bits: u32, count: u32, radius: u32) -> Result<Substrings, PlanError> {
        if radius >= code_bits {
            return Err(PlanError(format!(
                "a radius of {radius} bits matches every {code_bits}-bit code: at most {} is searchable",
                code_bits - 1
            )));
        }
        if count == 0 || count > code_bits || code_bits.div_ceil(count) > MAX_WIDTH {
            return Err(PlanError(format!(
                "{count} substrings of a {code_bits}-bit code: each must have 1 to {MAX_WIDTH} bits"
            )));
        }
        Ok(Substrings {
            code_bits,
            count,
            radius,
        })
    }

    /// The cut with the least modelled work per search among `rows` uniform codes: per
    /// substring, the values enumerated times (one access to a directly addressed table, or
    /// a binary search of about log2(rows) steps in a sorted one, plus the rows expected
    /// under each value). Norouzi et al. find
    /// substrings of about log2(rows) bits best; on 256 bits at r = 31 this gives 16
    /// substrings of 16 bits at 1 M and 10 M rows, the cut Meta's PDQ index uses.
    pub fn choose(code_bits: u32, rows: u64, radius: u32) -> Result<Substrings, PlanError> {
        Substrings::choose_up_to(code_bits, rows, radius, MAX_WIDTH)
    }

    /// The cut `choose` makes among substrings of at most `widest` bits.
    pub fn choose_up_to(
        code_bits: u32,
        rows: u64,
        radius: u32,
        widest: u32,
    ) -> Result<Substrings, PlanError> {
        let fewest = code_bits.div_ceil(widest.clamp(1, MAX_WIDTH));
        let most = fewest.max(code_bits.min(radius.saturating_add(1)));
        let binary_search = ((rows + 2) as f64).log2();
        (fewest..=most)
            .map(|count| Substrings::new(code_bits, count, radius))
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .map(|plan| {
                let cost: f64 = (0..plan.count)
                    .filter_map(|k| {
                        let r = plan.search_radius(k)?;
                        let width = plan.bounds(k).1;
                        let per_value = rows as f64 / (width as f64).exp2();
                        let lookup = if width <= MAX_DIRECT_WIDTH {
                            1.0
                        } else {
                            binary_search
                        };
                        Some(values_within(width, r) * (lookup + per_value))
                    })
                    .sum();
                (plan, cost)
            })
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(plan, _)| plan)
            .ok_or_else(|| PlanError("no cut".into()))
    }

    pub fn count(&self) -> u32 {
        self.count
    }

    pub fn radius(&self) -> u32 {
        self.radius
    }

    /// First bit and width of substring `k`.
    pub fn bounds(&self, k: u32) -> (u32, u32) {
        let start = k * self.code_bits / self.count;
        (start, (k + 1) * self.code_bits / self.count - start)
    }

    /// How far substring `k` of a match may be from the query's (`None`: a match needs no
    /// search there).
    pub fn search_radius(&self, k: u32) -> Option<u32> {
        let (a, b) = (self.radius / self.count, self.radius % self.count);
        if k <= b {
            Some(a)
        } else {
            a.checked_sub(1)
        }
    }

    /// The first substring in which `x` is within its search radius of `q`.
    pub fn witness<const W: usize>(&self, q: &WideCode<W>, x: &WideCode<W>) -> Option<u32> {
        (0..self.count).find(|&k| {
            self.search_radius(k).is_some_and(|r| {
                let (start, width) = self.bounds(k);
                (q.substring(start, width) ^ x.substring(start, width)).count_ones() <= r
            })
        })
    }

    /// How many values of its substring each table is looked up at, per table (`None`: the
    /// table is not searched): what `for_each_probe` enumerates.
    pub fn probes_per_table(&self) -> impl Iterator<Item = Option<f64>> + '_ {
        (0..self.count).map(|k| Some(values_within(self.bounds(k).1, self.search_radius(k)?)))
    }

    /// How many values a search looks up, over every table.
    pub fn probe_count(&self) -> f64 {
        self.probes_per_table().flatten().sum()
    }

    /// Calls `f(k, value)` with every value of substring `k` within its search radius of
    /// `q`'s, substring by substring: where a search looks for matches of `q`.
    pub fn for_each_probe<const W: usize>(&self, q: &WideCode<W>, mut f: impl FnMut(u32, u32)) {
        for k in 0..self.count {
            let Some(radius) = self.search_radius(k) else {
                continue;
            };
            let (start, width) = self.bounds(k);
            for_each_value_within(q.substring(start, width), width, radius, &mut |value| {
                f(k, value)
            });
        }
    }
}

/// Keys for a GIN index (`hamming_keys`): a code's keys are its substrings' values, each
/// tagged with its substring's number, `k << 32 | value`; a query's keys
/// (`hamming_probe_keys`) are, per substring, every value within its search radius of the
/// query's. A code within the radius of the query shares a key with it (the pigeonhole
/// above), so an index lookup on shared keys finds every match among its candidates.
impl Substrings {
    /// Keys of `code`, one per substring.
    pub fn keys<const W: usize>(&self, code: &WideCode<W>) -> Vec<i64> {
        (0..self.count)
            .map(|k| {
                let (start, width) = self.bounds(k);
                key(k, code.substring(start, width))
            })
            .collect()
    }

    /// Keys a code within the radius of `q` has at least one of, sorted; more than
    /// `limit` of them is an error (the cut has too few substrings for the radius).
    pub fn probe_keys<const W: usize>(
        &self,
        q: &WideCode<W>,
        limit: usize,
    ) -> Result<Vec<i64>, PlanError> {
        let total = self.probe_count();
        if total > limit as f64 {
            return Err(PlanError(format!(
                "{total} keys within {} bits in {} substrings: at most {limit}",
                self.radius, self.count
            )));
        }
        let mut keys = Vec::with_capacity(total as usize);
        self.for_each_probe(q, |k, value| keys.push(key(k, value)));
        keys.sort_unstable();
        Ok(keys)
    }
}

fn key(substring: u32, value: u32) -> i64 {
    (i64::from(substring) << 32) | i64::from(value)
}

/// How many `width`-bit values are within `radius` bits of one value.
fn values_within(width: u32, radius: u32) -> f64 {
    let mut total = 0.0;
    let mut term = 1.0; // C(width, d)
    for d in 0..=radius.min(width) {
        total += term;
        term = term * (width - d) as f64 / (d + 1) as f64;
    }
    total
}

/// Calls `f` with every `width`-bit value within `radius` bits of `value`, each once.
fn for_each_value_within(value: u32, width: u32, radius: u32, f: &mut impl FnMut(u32)) {
    fn flip_from(value: u32, from: u32, width: u32, left: u32, f: &mut impl FnMut(u32)) {
        f(value);
        if left == 0 {
            return;
        }
        for bit in from..width {
            flip_from(value ^ (1 << bit), bit + 1, width, left - 1, f);
        }
    }
    flip_from(value, 0, width, radius.min(width), f);
}

/// Widest substring whose table is addressed directly: 2^20 + 1 offsets (4 MB).
const MAX_DIRECT_WIDTH: u32 = 20;

/// The codes by their value in one substring. Up to `MAX_DIRECT_WIDTH` bits, an array of
/// offsets indexed by the value (a lookup is one memory access); wider, the values sorted
/// beside the codes (a binary search).
enum SubstringTable {
    Direct { offsets: Vec<u32>, codes: Vec<u32> },
    Sorted { values: Vec<u32>, codes: Vec<u32> },
}

impl SubstringTable {
    fn new(values: &[u32], width: u32) -> SubstringTable {
        if width <= MAX_DIRECT_WIDTH {
            // a counting sort: the offsets are the running counts
            let mut offsets = vec![0u32; (1 << width) + 1];
            for &v in values {
                offsets[v as usize + 1] += 1;
            }
            for i in 1..offsets.len() {
                offsets[i] += offsets[i - 1];
            }
            let mut next = offsets.clone();
            let mut codes = vec![0u32; values.len()];
            for (i, &v) in values.iter().enumerate() {
                codes[next[v as usize] as usize] = i as u32;
                next[v as usize] += 1;
            }
            SubstringTable::Direct { offsets, codes }
        } else {
            let mut pairs: Vec<(u32, u32)> = values.iter().copied().zip(0..).collect();
            pairs.sort_unstable();
            let (values, codes) = pairs.into_iter().unzip();
            SubstringTable::Sorted { values, codes }
        }
    }

    /// The codes whose substring is `value`.
    fn bucket(&self, value: u32) -> &[u32] {
        match self {
            SubstringTable::Direct { offsets, codes } => {
                &codes[offsets[value as usize] as usize..offsets[value as usize + 1] as usize]
            }
            SubstringTable::Sorted { values, codes } => {
                let first = values.partition_point(|&v| v < value);
                let last = first + values[first..].partition_point(|&v| v == value);
                &codes[first..last]
            }
        }
    }
}

/// Codes in memory with one table per substring: the codes within `radius` of a query, or
/// every pair within it.
pub struct MultiIndex<const W: usize> {
    codes: Vec<WideCode<W>>,
    plan: Substrings,
    tables: Vec<SubstringTable>,
}

impl<const W: usize> MultiIndex<W> {
    pub fn new(codes: Vec<WideCode<W>>, radius: u32) -> Result<MultiIndex<W>, PlanError> {
        if codes.len() > u32::MAX as usize {
            return Err(PlanError(format!(
                "{} codes: at most 2^32 - 1",
                codes.len()
            )));
        }
        let plan = Substrings::choose(WideCode::<W>::BITS, codes.len() as u64, radius)?;
        let tables = (0..plan.count)
            .map(|k| {
                interrupts::check();
                let (start, width) = plan.bounds(k);
                let values: Vec<u32> = codes.iter().map(|c| c.substring(start, width)).collect();
                SubstringTable::new(&values, width)
            })
            .collect();
        Ok(MultiIndex {
            codes,
            plan,
            tables,
        })
    }

    /// Memory a code costs at most: itself, and an entry (4 bytes, 8 while a sorted table
    /// is built) in each of at most 32 tables (a cut has more substrings only past 32 bits
    /// of radius). The directly addressed tables add at most 4 MB each, whatever the rows.
    pub fn bytes_per_row() -> usize {
        WideCode::<W>::BYTES + 8 * MAX_WIDTH as usize
    }

    pub fn plan(&self) -> &Substrings {
        &self.plan
    }

    pub fn len(&self) -> usize {
        self.codes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.codes.is_empty()
    }

    /// Code number `i`.
    pub fn code(&self, i: u32) -> WideCode<W> {
        self.codes[i as usize]
    }

    /// Calls `emit(code number, distance)` for every code within the radius of `q`, once.
    pub fn search(&self, q: &WideCode<W>, mut emit: impl FnMut(u32, u32)) {
        let mut every = interrupts::Every::<4096>::default();
        self.plan.for_each_probe(q, |k, value| {
            // Most probes of a wide radius meet an empty bucket: they count as well.
            every.tick();
            for &i in self.tables[k as usize].bucket(value) {
                every.tick();
                let code = &self.codes[i as usize];
                let distance = q.hamming(code);
                if distance <= self.plan.radius && self.plan.witness(q, code) == Some(k) {
                    emit(i, distance);
                }
            }
        });
    }

    /// Every pair of codes within the radius, once each, as (i, j, distance) with i < j.
    pub fn pairs(self) -> Pairs<W> {
        Pairs {
            index: self,
            next: 0,
            found: Vec::new(),
        }
    }
}

/// The pairs of a [`MultiIndex`], found one code at a time: memory beyond the index is the
/// pairs of one code.
pub struct Pairs<const W: usize> {
    index: MultiIndex<W>,
    next: u32,
    found: Vec<(u32, u32, u32)>,
}

impl<const W: usize> Iterator for Pairs<W> {
    type Item = (u32, u32, u32);

    fn next(&mut self) -> Option<(u32, u32, u32)> {
        while self.found.is_empty() {
            let i = self.next;
            if i as usize >= self.index.len() {
                return None;
            }
            self.next += 1;
            let code = self.index.codes[i as usize];
            let found = &mut self.found;
            self.index.search(&code, |j, d| {
                if j > i {
                    found.push((i, j, d));
                }
            });
            // Popped from the end: the pairs of one code come out by descending partner.
            found.sort_unstable_by(|a, b| b.cmp(a));
        }
        self.found.pop()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::splitmix::splitmix64_next;
    use crate::signatures::wide_code::Code256;

    struct SplitMix64(u64);

    impl SplitMix64 {
        fn new(seed: u64) -> SplitMix64 {
            SplitMix64(seed)
        }

        fn next_u64(&mut self) -> u64 {
            splitmix64_next(&mut self.0)
        }
    }

    fn random_code(rng: &mut SplitMix64) -> Code256 {
        WideCode([
            rng.next_u64(),
            rng.next_u64(),
            rng.next_u64(),
            rng.next_u64(),
        ])
    }

    fn flip_bits(code: &Code256, bits: u32, rng: &mut SplitMix64) -> Code256 {
        let mut out = *code;
        for _ in 0..bits {
            let bit = rng.next_u64() % 256;
            out.0[(bit / 64) as usize] ^= 1 << (bit % 64);
        }
        out
    }

    /// Random codes, clusters of near-copies (up to 40 bits off their center), exact
    /// duplicates and codes that share all but a few bits of one substring.
    fn hard_codes(n: usize, rng: &mut SplitMix64) -> Vec<Code256> {
        let mut codes: Vec<Code256> = (0..n / 2).map(|_| random_code(rng)).collect();
        for c in 0..n / 20 {
            let center = codes[c];
            for _ in 0..6 {
                let bits = (rng.next_u64() % 41) as u32;
                codes.push(flip_bits(&center, bits, rng));
            }
        }
        for c in 0..n / 20 {
            codes.push(codes[c]);
        }
        let shared = random_code(rng);
        while codes.len() < n {
            let mut code = random_code(rng);
            code.0[1] = shared.0[1] ^ (1 << (rng.next_u64() % 64));
            codes.push(code);
        }
        codes
    }

    fn brute_pairs(codes: &[Code256], radius: u32) -> Vec<(u32, u32, u32)> {
        let mut out = Vec::new();
        for i in 0..codes.len() {
            for j in i + 1..codes.len() {
                let d = codes[i].hamming(&codes[j]);
                if d <= radius {
                    out.push((i as u32, j as u32, d));
                }
            }
        }
        out
    }

    #[test]
    fn the_pigeonhole_radii_cover_every_split_of_the_radius() {
        for (count, radius) in [
            (16, 31),
            (16, 15),
            (11, 31),
            (8, 0),
            (8, 3),
            (32, 31),
            (12, 40),
        ] {
            let plan = Substrings::new(256, count, radius).unwrap();
            // the smallest distance with no substring within its radius is radius + 1
            let slack: u32 = (0..count)
                .map(|k| plan.search_radius(k).map_or(0, |r| r + 1))
                .sum();
            assert_eq!(slack, radius + 1, "{count} substrings, radius {radius}");
            let widths: u32 = (0..count).map(|k| plan.bounds(k).1).sum();
            assert_eq!(widths, 256);
        }
    }

    #[test]
    fn the_cut_for_pdq_follows_the_row_count() {
        for (rows, count) in [
            (10_000, 16),
            (100_000, 16),
            (1_000_000, 13),
            (10_000_000, 13),
        ] {
            let plan = Substrings::choose(256, rows, 31).unwrap();
            assert_eq!(plan.count(), count, "{rows} rows");
            assert!((0..count).all(|k| plan.bounds(k).1 <= MAX_DIRECT_WIDTH));
        }
        assert!(Substrings::choose(256, 1000, 256).is_err());
        assert!(Substrings::new(256, 7, 3).is_err());
        assert!(Substrings::choose(256, 1000, 0).is_ok());
    }

    #[test]
    fn values_within_enumerates_each_once() {
        let mut seen = Vec::new();
        for_each_value_within(0b1010, 6, 2, &mut |v| seen.push(v));
        assert_eq!(seen.len() as f64, values_within(6, 2));
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 1 + 6 + 15);
        assert!(seen
            .iter()
            .all(|v| (v ^ 0b1010).count_ones() <= 2 && *v < 64));
    }

    #[test]
    fn pairs_equal_brute_force_on_hard_data() {
        let mut rng = SplitMix64::new(7);
        let codes = hard_codes(2000, &mut rng);
        for radius in [0, 1, 5, 16, 31, 40, 70] {
            let mut found: Vec<_> = MultiIndex::new(codes.clone(), radius)
                .unwrap()
                .pairs()
                .collect();
            found.sort_unstable();
            let expected = brute_pairs(&codes, radius);
            assert_eq!(found, expected, "radius {radius}");
            if radius >= 31 {
                assert!(
                    expected.len() > 500,
                    "radius {radius}: {} pairs",
                    expected.len()
                );
            }
        }
    }

    #[test]
    fn search_finds_every_code_once() {
        let mut rng = SplitMix64::new(11);
        let codes = hard_codes(3000, &mut rng);
        let index = MultiIndex::new(codes.clone(), 31).unwrap();
        for q in 0..200 {
            let query = flip_bits(&codes[q * 13], (q % 35) as u32, &mut rng);
            let mut found = Vec::new();
            index.search(&query, |i, d| found.push((i, d)));
            found.sort_unstable();
            let expected: Vec<(u32, u32)> = (0..codes.len() as u32)
                .map(|i| (i, query.hamming(&codes[i as usize])))
                .filter(|&(_, d)| d <= 31)
                .collect();
            assert_eq!(found, expected, "query {q}");
        }
    }

    #[test]
    fn codes_within_the_radius_share_a_probe_key() {
        let mut rng = SplitMix64::new(11);
        for (count, radius) in [(16, 31), (11, 31), (8, 7), (8, 20), (16, 0), (32, 45)] {
            let plan = Substrings::new(256, count, radius).unwrap();
            for _ in 0..200 {
                let q = random_code(&mut rng);
                let probe = plan.probe_keys(&q, 1 << 20).unwrap();
                assert!(probe.windows(2).all(|w| w[0] < w[1]), "sorted, each once");
                for flips in 0..=radius {
                    // at most `flips` bits away (a bit may flip back)
                    let x = flip_bits(&q, flips, &mut rng);
                    let keys = plan.keys(&x);
                    assert_eq!(keys.len(), count as usize);
                    assert!(
                        keys.iter().any(|k| probe.binary_search(k).is_ok()),
                        "{count} substrings, radius {radius}, distance {}",
                        q.hamming(&x)
                    );
                }
            }
        }
        // 4.3 M values within 7 bits in each of 8 substrings of 32 bits
        let plan = Substrings::new(256, 8, 63).unwrap();
        assert!(plan.probe_keys(&random_code(&mut rng), 1 << 20).is_err());
    }
}
