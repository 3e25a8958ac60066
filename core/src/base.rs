//! The foundation: stable hashing (XXH3, fixed seeds), SplitMix64 streams, hex, and the
//! interrupt hook long loops call. Imports no other layer.

pub mod hash;
pub mod hex;
pub mod interrupts;
pub mod splitmix;
