//! Image bytes to PDQ hashes: the SQL tests' images (tests/images, written by
//! tests/integration/pdq_reference.py fixtures) against the reference's hashes, and the
//! decoder's refusals, without a server.

use neardup_core::images::decode::{decode_luma, DecodeError};
use neardup_core::images::pdq;
use std::path::Path;

fn image(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/images")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn hash(bytes: &[u8]) -> Result<Option<String>, DecodeError> {
    let mut luma = decode_luma(bytes, 25_000_000)?;
    Ok(pdq::hash(&mut luma).map(|found| found.hash.to_hex()))
}

const PATTERN: &str = "fea9f153aea9f913baa97e43eaa95403bea9efedaaa97443aaa90003aaa90003";

#[test]
fn every_format_hashes_as_the_reference() {
    for name in [
        "pattern.png",
        "pattern.webp",
        "pattern.bmp",
        "pattern.tiff",
        "rgba.png",
        "rgb16.png",
    ] {
        assert_eq!(
            hash(&image(name)).unwrap().as_deref(),
            Some(PATTERN),
            "{name}"
        );
    }
    let gif = "db56a4895db84a67c6b86855dfa2ea52f5a8af977b28b6d86a899212e8e91103";
    // JPEG: the core's decoder gives Pillow's (libjpeg-turbo's) pixels, so the hash too
    let jpeg = "fe295d7312f9e92b2ae9d4c3afe90553ffa90afd8aa9b313aaa94013aaa90003";
    assert_eq!(hash(&image("pattern.jpg")).unwrap().as_deref(), Some(jpeg));
    assert_eq!(hash(&image("animated.gif")).unwrap().as_deref(), Some(gif));
    assert_eq!(hash(&image("tiny1.png")).unwrap(), None);
}

#[test]
fn bad_bytes_are_refused() {
    let jpeg = image("pattern.jpg");
    assert!(hash(&jpeg).unwrap().is_some());
    for cut in [jpeg.len() / 2, jpeg.len() - 2, 10] {
        assert!(
            matches!(hash(&jpeg[..cut]), Err(DecodeError::Invalid(_))),
            "JPEG cut at {cut}"
        );
    }
    let png = image("pattern.png");
    assert!(matches!(
        hash(&png[..png.len() / 2]),
        Err(DecodeError::Invalid(_))
    ));
    assert_eq!(hash(b"no image"), Err(DecodeError::UnknownFormat));
    assert_eq!(hash(b""), Err(DecodeError::UnknownFormat));
    assert_eq!(
        hash(&image("bomb.png")),
        Err(DecodeError::TooLarge {
            width: 100000,
            height: 100000,
            limit: 25_000_000
        })
    );
    assert_eq!(
        decode_luma(&png, 4799).err(),
        Some(DecodeError::TooLarge {
            width: 80,
            height: 60,
            limit: 4799
        })
    );
}
