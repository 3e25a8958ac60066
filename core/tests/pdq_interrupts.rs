//! The PDQ pipeline reaches cancellation points while it decodes and blurs: in a backend each
//! is CHECK_FOR_INTERRUPTS, so a long hash stops at a cancel. (A process of its own: the
//! handler is installed once per process.)

use neardup_core::base::interrupts;
use neardup_core::images::decode::decode_luma;
use neardup_core::images::pdq;
use std::sync::atomic::{AtomicUsize, Ordering};

static CHECKS: AtomicUsize = AtomicUsize::new(0);

#[test]
fn decoding_and_hashing_check_for_interrupts() {
    interrupts::set_handler(|| {
        CHECKS.fetch_add(1, Ordering::Relaxed);
    });
    // a 1500 x 1000 PNG, written by the image crate, with rows that do not compress away
    let (w, h) = (1500u32, 1000u32);
    let pixels: Vec<u8> = (0..w * h * 3)
        .map(|i| (i.wrapping_mul(2654435761) >> 24) as u8)
        .collect();
    let mut png = Vec::new();
    image::ImageEncoder::write_image(
        image::codecs::png::PngEncoder::new(&mut png),
        &pixels,
        w,
        h,
        image::ExtendedColorType::Rgb8,
    )
    .unwrap();
    let mut luma = decode_luma(&png, 25_000_000).unwrap();
    let after_decode = CHECKS.load(Ordering::Relaxed);
    assert!(after_decode > 0, "no check while decoding");
    assert!(pdq::hash(&mut luma).is_some());
    // two passes of rows and columns, a check every 64 rows of each
    let in_hash = CHECKS.load(Ordering::Relaxed) - after_decode;
    assert!(
        in_hash >= 4 * 1000 / 64 - 4,
        "{in_hash} checks while hashing"
    );
}
