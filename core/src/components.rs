//! Connected components of a graph given as edges, by union-find (union by size, path
//! halving): near-linear in the number of edges, one `u32` pair per node of memory.
//! Nodes are dense indices `0..n`; callers map their ids onto them.

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
}
