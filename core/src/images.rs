//! Image signatures: the bytes of an image decoded to a luminance plane ([`decode`]) and its
//! PDQ hash ([`pdq`], Meta's 256-bit perceptual hash). May import every lower layer.

pub mod decode;
pub mod jpeg;
pub mod pdq;
