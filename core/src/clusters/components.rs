//! Connected components of a graph given as edges, by union-find (union by size, path
//! halving): near-linear in the number of edges, one `u32` pair per node of memory.
//! Nodes are dense indices `0..n`; callers map their ids onto them.

use crate::search::permuted::{LayoutError, Pairs};

pub struct UnionFind {
    parent: Vec<u32>,
    size: Vec<u32>,
}

impl UnionFind {
    pub fn new(nodes: usize) -> UnionFind {
        UnionFind {
            parent: (0..nodes as u32).collect(),
            size: vec![1; nodes],
        }
    }

    /// Adds a node in a component of its own; returns its index.
    pub fn push(&mut self) -> u32 {
        let node = self.parent.len() as u32;
        self.parent.push(node);
        self.size.push(1);
        node
    }

    pub fn find(&mut self, mut x: u32) -> u32 {
        while self.parent[x as usize] != x {
            let grandparent = self.parent[self.parent[x as usize] as usize];
            self.parent[x as usize] = grandparent;
            x = grandparent;
        }
        x
    }

    pub fn union(&mut self, a: u32, b: u32) {
        let (mut a, mut b) = (self.find(a), self.find(b));
        if a == b {
            return;
        }
        if self.size[a as usize] < self.size[b as usize] {
            std::mem::swap(&mut a, &mut b);
        }
        self.parent[b as usize] = a;
        self.size[a as usize] += self.size[b as usize];
    }

    /// For every node, the smallest node of its component (a label that does not depend on
    /// the order the edges came in).
    pub fn smallest_members(&mut self) -> Vec<u32> {
        let n = self.parent.len();
        let mut smallest = vec![u32::MAX; n];
        for x in 0..n as u32 {
            let root = self.find(x) as usize;
            smallest[root] = smallest[root].min(x);
        }
        (0..n as u32)
            .map(|x| smallest[self.find(x) as usize])
            .collect()
    }
}

/// The connected components of `fps` (one fingerprint a row) under Hamming distance ≤
/// `max_distance`, as a union-find over the row numbers, without ever holding the pairs:
/// rows with equal fingerprints are linked through one sort (a table where 100,000 rows
/// share a fingerprint costs a sort, not 5·10⁹ pairs), and the distinct fingerprints
/// through the streamed [`Pairs`].
pub fn near_duplicate_components(fps: &[u64], max_distance: u32) -> Result<UnionFind, LayoutError> {
    let mut by_fp: Vec<(u64, u32)> = fps.iter().zip(0..).map(|(&fp, row)| (fp, row)).collect();
    by_fp.sort_unstable();
    let mut components = UnionFind::new(fps.len());
    // One row per distinct fingerprint stands for its copies in the pair search.
    let mut distinct = Vec::new();
    let mut stand_in = Vec::new();
    let mut cancel_point = crate::base::interrupts::Every::<65536>::default();
    for copies in by_fp.chunk_by(|a, b| a.0 == b.0) {
        cancel_point.tick();
        for &(_, row) in &copies[1..] {
            components.union(copies[0].1, row);
        }
        distinct.push(copies[0].0);
        stand_in.push(copies[0].1);
    }
    drop(by_fp);
    for (a, b, _) in Pairs::new(distinct, max_distance)? {
        components.union(stand_in[a as usize], stand_in[b as usize]);
    }
    Ok(components)
}

/// Bytes [`near_duplicate_components`] holds per row at its peak, for checking a memory
/// limit before reading the rows: the union-find, and the larger of the sort with the
/// distinct fingerprints and their stand-ins, or those with the pair search.
pub const fn near_duplicate_components_bytes_per_row() -> usize {
    let union_find = 2 * std::mem::size_of::<u32>();
    let distinct = std::mem::size_of::<u64>() + std::mem::size_of::<u32>();
    let sort = std::mem::size_of::<(u64, u32)>();
    let pairs = Pairs::bytes_per_row();
    union_find + distinct + if sort > pairs { sort } else { pairs }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Components by repeated relaxation: slow and obviously right.
    fn reference(n: usize, edges: &[(u32, u32)]) -> Vec<u32> {
        let mut label: Vec<u32> = (0..n as u32).collect();
        loop {
            let mut changed = false;
            for &(a, b) in edges {
                let m = label[a as usize].min(label[b as usize]);
                for x in [a, b] {
                    if label[x as usize] != m {
                        label[x as usize] = m;
                        changed = true;
                    }
                }
            }
            if !changed {
                return label;
            }
        }
    }

    #[test]
    fn random_graphs_match_the_reference() {
        let mut x = 0x2545F4914F6CDD1Du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for n in [1usize, 2, 10, 100, 2000] {
            for density in [0usize, 1, 2, 5] {
                let edges: Vec<(u32, u32)> = (0..n * density / 2)
                    .map(|_| ((next() % n as u64) as u32, (next() % n as u64) as u32))
                    .collect();
                let mut uf = UnionFind::new(n);
                for &(a, b) in &edges {
                    uf.union(a, b);
                }
                assert_eq!(
                    uf.smallest_members(),
                    reference(n, &edges),
                    "n={n} density={density}"
                );
            }
        }
    }

    #[test]
    fn near_duplicate_components_match_pairwise_union() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        // Random rows, near copies and exact copies (many of one value).
        let mut fps: Vec<u64> = (0..600).map(|_| next()).collect();
        for i in 0..300 {
            let mut fp = fps[i % 60];
            for _ in 0..next() % 5 {
                fp ^= 1 << (next() % 64);
            }
            fps.push(fp);
        }
        fps.extend(std::iter::repeat_n(0, 500));
        for k in [0, 1, 3, 5] {
            let mut want = UnionFind::new(fps.len());
            for i in 0..fps.len() {
                for j in i + 1..fps.len() {
                    if crate::signatures::simhash::hamming(fps[i], fps[j]) <= k {
                        want.union(i as u32, j as u32);
                    }
                }
            }
            let mut got = near_duplicate_components(&fps, k).unwrap();
            assert_eq!(got.smallest_members(), want.smallest_members(), "k = {k}");
        }
    }
}
