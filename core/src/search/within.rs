//! The fingerprints within a radius of a center, compared one by one: what an index scan
//! does with the rows it holds in memory unsorted (pending rows, small runs).

/// Calls `emit` with the position of each of `fps` within `radius` bits of `center`, in
/// increasing order. Rows are compared `GROUP` at a time without a branch, into a mask of
/// the candidates, and only those are visited. Always inlined, so that a caller compiled
/// for the CPU's popcount instruction or for AVX2 (`#[target_feature]`, which this crate
/// cannot call without `unsafe`) gets them here, vectorized (a lookup compares up to
/// `pending_limit` rows this way).
///
/// Up to radius 7 the mask is the pigeonhole's: a row within `radius` bits agrees with the
/// center on at least one of `radius + 1` equal lanes of the 64 bits, so the rows with no
/// zero lane in `fp ^ center` are out, and the others (about one random row in 30 at radius
/// 7, one in 16,000 at 3) are counted. Testing lanes for zero takes four operations and no
/// popcount, which AVX2 lacks. Over 10,000 random rows with AVX2 a row took 0.23 ns at
/// radius 3 and 0.45 ns at 7, where counting every row took 0.68 ns; with the popcount
/// instruction alone counting is as fast (1.0 ns), and at radius 7 faster: use
/// `count_within_radius` there.
#[inline(always)]
pub fn within_radius(fps: &[u64], center: u64, radius: u32, emit: impl FnMut(usize)) {
    let count = |x: u64| x.count_ones() <= radius;
    match radius {
        0 => candidates(fps, center, |x| x == 0, |_| true, emit),
        1 => candidates(fps, center, has_zero_lane::<LANES_32>, count, emit),
        2..=3 => candidates(fps, center, has_zero_lane::<LANES_16>, count, emit),
        4..=7 => candidates(fps, center, has_zero_lane::<LANES_8>, count, emit),
        _ => count_within_radius(fps, center, radius, emit),
    }
}

/// `within_radius` by counting the bits of every row.
#[inline(always)]
pub fn count_within_radius(fps: &[u64], center: u64, radius: u32, emit: impl FnMut(usize)) {
    candidates(fps, center, |x| x.count_ones() <= radius, |_| true, emit)
}

/// The lowest bit of each lane, for lanes of 32, 16 and 8 bits.
const LANES_32: u64 = 0x0000_0001_0000_0001;
const LANES_16: u64 = 0x0001_0001_0001_0001;
const LANES_8: u64 = 0x0101_0101_0101_0101;

/// Whether `x` has a lane of zeros, the lanes being those whose lowest bits `LOW` sets: a
/// lane's top bit comes out of the subtraction set and was clear in `x` exactly when the
/// lane is zero or a borrow from a zero lane below it passed through, so the answer (not
/// which lane) is exact.
#[inline(always)]
fn has_zero_lane<const LOW: u64>(x: u64) -> bool {
    let high = LOW << (LOW.trailing_zeros() + 64 / LOW.count_ones() - 1);
    x.wrapping_sub(LOW) & !x & high != 0
}

/// Calls `emit` with the position of each of `fps` whose distance `x` to `center` passes
/// `filter` (branchless, `GROUP` at a time) and then `check` (for the few that pass).
#[inline(always)]
fn candidates(
    fps: &[u64],
    center: u64,
    filter: impl Fn(u64) -> bool,
    check: impl Fn(u64) -> bool,
    mut emit: impl FnMut(usize),
) {
    let mut groups = fps.chunks_exact(GROUP);
    let mut visit = |mut hits: u64, base: usize| {
        while hits != 0 {
            let i = base + hits.trailing_zeros() as usize;
            if check(fps[i] ^ center) {
                emit(i);
            }
            hits &= hits - 1;
        }
    };
    for (g, group) in groups.by_ref().enumerate() {
        let group: &[u64; GROUP] = group.try_into().expect("chunks_exact");
        let mut hits = 0u64;
        // A fixed count, so that the compiler unrolls it (and vectorizes it, where the
        // caller is compiled for AVX2).
        for (j, &fp) in group.iter().enumerate() {
            hits |= u64::from(filter(fp ^ center)) << j;
        }
        visit(hits, g * GROUP);
    }
    let rest = groups.remainder();
    let mut hits = 0u64;
    for (j, &fp) in rest.iter().enumerate() {
        hits |= u64::from(filter(fp ^ center)) << j;
    }
    visit(hits, fps.len() - rest.len());
}

const GROUP: usize = 64;

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
    fn a_zero_lane_is_found_exactly() {
        let mut state = 3;
        for _ in 0..100_000 {
            // Words with zero lanes made likely: random bytes, a third of them cleared.
            let x = splitmix64_next(&mut state);
            let keep = splitmix64_next(&mut state) | splitmix64_next(&mut state);
            let x = x
                & (0..8).fold(0, |m, b| {
                    m | (((keep >> (b * 8)) & 0xff).min(1) * (0xff << (b * 8)))
                });
            let lanes = |width: u32| {
                (0..64 / width).any(|l| (x >> (l * width)) & ((1u64 << width) - 1) == 0)
            };
            assert_eq!(has_zero_lane::<LANES_8>(x), lanes(8), "{x:#x}");
            assert_eq!(has_zero_lane::<LANES_16>(x), lanes(16), "{x:#x}");
            assert_eq!(has_zero_lane::<LANES_32>(x), lanes(32), "{x:#x}");
        }
    }

    #[test]
    fn finds_exactly_the_rows_within_the_radius_in_order() {
        let mut state = 7;
        for len in [0, 1, 63, 64, 65, 200, 1000] {
            let center = splitmix64_next(&mut state);
            // Near copies of the center among random rows, so that every radius has hits.
            let fps: Vec<u64> = (0..len)
                .map(|i| match i % 5 {
                    // 0 to 9 bits away, the bits spread over every lane.
                    0 => (0..i % 10).fold(center, |fp, b| fp ^ (1 << ((i + b * 29) % 64))),
                    1 => center,
                    _ => splitmix64_next(&mut state),
                })
                .collect();
            for radius in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 31, 64] {
                let mut got = Vec::new();
                within_radius(&fps, center, radius, |i| got.push(i));
                let mut counted = Vec::new();
                count_within_radius(&fps, center, radius, |i| counted.push(i));
                assert_eq!(counted, got, "len {len} radius {radius}");
                assert_eq!(
                    got,
                    naive(&fps, center, radius),
                    "len {len} radius {radius}"
                );
            }
        }
    }
}
