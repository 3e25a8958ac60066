//! Hash maps keyed by feature hashes. The keys are XXH3 outputs already, so hashing them
//! again (std's SipHash) would only cost time; the identity is as good a hash and is also
//! the same in every run.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

pub type PreHashedMap<V> = HashMap<u64, V, BuildHasherDefault<Identity>>;

#[derive(Default)]
pub struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, _: &[u8]) {
        unreachable!("keys are u64 hashes")
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}
