//! The fingerprints within a radius of a center, compared one by one: what an index scan
//! does with the rows it holds in memory unsorted (pending rows, small runs).

/// Calls `emit` with the position of each of `fps` within `radius` bits of `center`, in
/// increasing order. Rows are compared `GROUP` at a time without a branch, into a mask of
/// the hits, and only the hits are visited (hits are rare). Always inlined, so that a caller
/// compiled for the CPU's popcount instruction or for AVX2 (`#[target_feature]`, which this
/// crate cannot call without `unsafe`) gets them here: over 10,000 rows, a branch per row
/// with popcount took 1.8 ns a row, this 1.1 ns with popcount and 0.4 ns with AVX2, which
/// the compiler vectorizes it for (a lookup compares up to `pending_limit` rows this way).
#[inline(always)]
pub fn within_radius(fps: &[u64], center: u64, radius: u32, mut emit: impl FnMut(usize)) {
    let mut groups = fps.chunks_exact(GROUP);
    for (g, group) in groups.by_ref().enumerate() {
        let group: &[u64; GROUP] = group.try_into().expect("chunks_exact");
        let mut hits = 0u64;
        // A fixed count, so that the compiler unrolls it (and vectorizes it, where the
        // caller is compiled for AVX2).
        for (j, &fp) in group.iter().enumerate() {
            hits |= u64::from((fp ^ center).count_ones() <= radius) << j;
        }
        visit(hits, g * GROUP, &mut emit);
    }
    let rest = groups.remainder();
    let mut hits = 0u64;
    for (j, &fp) in rest.iter().enumerate() {
        hits |= u64::from((fp ^ center).count_ones() <= radius) << j;
    }
    visit(hits, fps.len() - rest.len(), &mut emit);
}

const GROUP: usize = 64;

/// Calls `emit` with `base` plus the position of each bit set in `hits`.
#[inline(always)]
fn visit(mut hits: u64, base: usize, emit: &mut impl FnMut(usize)) {
    while hits != 0 {
        emit(base + hits.trailing_zeros() as usize);
        hits &= hits - 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::splitmix::splitmix64_next;

    fn naive(fps: &[u64], center: u64, radius: u32) -> Vec<usize> {
        (0..fps.len())
            .filter(|&i| (fps[i] ^ center).count_ones() <= radius)
            .collect()
    }

    #[test]
    fn finds_exactly_the_rows_within_the_radius_in_order() {
        let mut state = 7;
        for len in [0, 1, 63, 64, 65, 200, 1000] {
            let center = splitmix64_next(&mut state);
            // Near copies of the center among random rows, so that every radius has hits.
            let fps: Vec<u64> = (0..len)
                .map(|i| match i % 5 {
                    0 => center ^ (1 << (i % 64)) ^ (1 << ((i * 7) % 64)),
                    1 => center,
                    _ => splitmix64_next(&mut state),
                })
                .collect();
            for radius in [0, 1, 2, 3, 31, 64] {
                let mut got = Vec::new();
                within_radius(&fps, center, radius, |i| got.push(i));
                assert_eq!(
                    got,
                    naive(&fps, center, radius),
                    "len {len} radius {radius}"
                );
            }
        }
    }
}
