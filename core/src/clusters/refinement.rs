//! Query-time refinement of ranked results (Jain et al. §1, Broder's notes on search
//! results): walk the results best first and keep a result only if it is not a
//! near-duplicate of one already kept. Greedy in rank order, so a kept result is never
//! displaced by a lower-ranked one and the first result is always kept.

pub struct Refinement<S> {
    kept: Vec<(i64, Option<S>)>,
}

impl<S> Default for Refinement<S> {
    fn default() -> Self {
        Refinement { kept: Vec::new() }
    }
}

impl<S> Refinement<S> {
    /// Offers the next result in rank order. A result without a signature cannot be
    /// compared, so it is kept. `duplicate(candidate, kept)` decides; it may fail (e.g. on
    /// signatures of different sizes), and the error is passed on.
    pub fn offer<E>(
        &mut self,
        id: i64,
        signature: Option<S>,
        duplicate: impl Fn(&S, &S) -> Result<bool, E>,
    ) -> Result<(), E> {
        if let Some(candidate) = &signature {
            for (_, kept) in &self.kept {
                if let Some(kept) = kept {
                    if duplicate(candidate, kept)? {
                        return Ok(());
                    }
                }
            }
        }
        self.kept.push((id, signature));
        Ok(())
    }

    /// The ids kept, in rank order.
    pub fn kept_ids(&self) -> Vec<i64> {
        self.kept.iter().map(|&(id, _)| id).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signatures::simhash::hamming;

    fn near(k: u32) -> impl Fn(&u64, &u64) -> Result<bool, ()> {
        move |a, b| Ok(hamming(*a, *b) <= k)
    }

    #[test]
    fn keeps_the_best_of_each_group_in_rank_order() {
        let mut r = Refinement::default();
        // 1 and 3 are near 0b0000; 2 is far; 4 has no signature; 5 is near 2.
        for (id, fp) in [
            (1, Some(0b0000u64)),
            (2, Some(u64::MAX)),
            (3, Some(0b0011)),
            (4, None),
            (5, Some(u64::MAX ^ 1)),
            (6, Some(0xF0F0)),
        ] {
            r.offer(id, fp, near(2)).unwrap();
        }
        assert_eq!(r.kept_ids(), vec![1, 2, 4, 6]);
    }

    #[test]
    fn a_comparison_error_is_passed_on() {
        let mut r = Refinement::default();
        r.offer(1, Some(1u64), |_, _| Err("sizes differ")).unwrap();
        assert_eq!(
            r.offer(2, Some(1u64), |_, _| Err("sizes differ")),
            Err("sizes differ")
        );
        assert_eq!(r.kept_ids(), vec![1]);
    }
}
