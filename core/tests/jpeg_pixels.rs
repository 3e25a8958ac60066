//! The JPEG decoder against Pillow's pixels (libjpeg-turbo's): every fixture of
//! core/tests/jpeg (written by tests/integration/pdq_reference.py jpegs, with Pillow's
//! `convert("RGB")` of each as NAME.rgb) decodes to exactly those bytes; and its refusals.

use neardup_core::base::interrupts;
use neardup_core::images::decode::{decode_luma, DecodeError};
use neardup_core::images::jpeg::Jpeg;
use neardup_core::images::pdq::luminance;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/jpeg")
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(dir().join(name)).unwrap()
}

fn rgb(bytes: &[u8]) -> Result<(usize, usize, Vec<u8>), DecodeError> {
    let jpeg = Jpeg::read(bytes, 25_000_000, 200_000_000)?;
    let (w, h) = (jpeg.width(), jpeg.height());
    let mut out = Vec::new();
    jpeg.rows(|row| out.extend_from_slice(row))?;
    Ok((w, h, out))
}

#[test]
fn every_fixture_decodes_to_pillows_pixels() {
    let mut names: Vec<String> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".jpg") && n != "interrupts.jpg")
        .collect();
    names.sort();
    assert!(names.len() >= 40, "{} fixtures", names.len());
    for name in &names {
        let bytes = fixture(name);
        let want = fixture(&name.replace(".jpg", ".rgb"));
        let (w, h, got) = rgb(&bytes).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert_eq!(got.len(), w * h * 3, "{name}");
        let differ = got.iter().zip(&want).filter(|(a, b)| a != b).count();
        assert!(got == want, "{name}: {differ} samples differ from Pillow's");
        // decode_luma takes its JPEGs from this decoder
        let luma = decode_luma(&bytes, 25_000_000).unwrap();
        let expected: Vec<f32> = want
            .chunks_exact(3)
            .map(|p| luminance(p[0], p[1], p[2]))
            .collect();
        assert!(
            (luma.cols, luma.rows) == (w, h) && luma.data == expected,
            "{name}"
        );
    }
}

/// The fixture with the byte at `offset` from its first marker `code` set to `value`.
fn edited(name: &str, code: u8, offset: usize, value: u8) -> Vec<u8> {
    let mut bytes = fixture(name);
    let at = bytes.windows(2).position(|m| m == [0xFF, code]).unwrap();
    bytes[at + offset] = value;
    bytes
}

#[test]
fn what_is_not_decoded_is_refused() {
    let name = "33x15_420.jpg";
    // arithmetic coding (SOF9 instead of SOF0)
    let arithmetic = edited(name, 0xC0, 1, 0xC9);
    assert!(matches!(rgb(&arithmetic), Err(DecodeError::Unsupported(_))));
    // 12-bit samples
    let twelve = edited(name, 0xC0, 4, 12);
    assert!(matches!(rgb(&twelve), Err(DecodeError::Unsupported(_))));
    // two components
    let two = edited(name, 0xC0, 9, 2);
    assert!(matches!(rgb(&two), Err(DecodeError::Unsupported(_))));
    // too many pixels, from the header alone: 33 x 15 made 65313 (0xFF21) x 15
    let wide = edited(name, 0xC0, 7, 0xFF);
    assert_eq!(
        decode_luma(&wide, 900_000).err(),
        Some(DecodeError::TooLarge {
            width: 65313,
            height: 15,
            limit: 900_000
        })
    );
    // the coefficients beyond the allocation limit
    let bytes = fixture(name);
    assert!(matches!(
        Jpeg::read(&bytes, 1_000, 100).err(),
        Some(DecodeError::TooLarge { width: 0, .. })
    ));
    // not a JPEG, truncated, cut inside a marker segment
    assert!(matches!(rgb(b"\xFF\xD8"), Err(DecodeError::Invalid(_))));
    assert!(matches!(rgb(&bytes[..30]), Err(DecodeError::Invalid(_))));
    for cut in [bytes.len() / 2, bytes.len() - 2] {
        assert!(matches!(
            decode_luma(&bytes[..cut], 1_000_000),
            Err(DecodeError::Invalid(_))
        ));
    }
}

static CHECKS: AtomicUsize = AtomicUsize::new(0);

#[test]
fn decoding_checks_for_interrupts() {
    interrupts::set_handler(|| {
        CHECKS.fetch_add(1, Ordering::Relaxed);
    });
    let luma = decode_luma(&fixture("interrupts.jpg"), 25_000_000).unwrap();
    assert_eq!((luma.cols, luma.rows), (1200, 900));
    // a check every 64 rows of MCUs, of blocks, and of output rows
    let checks = CHECKS.load(Ordering::Relaxed);
    assert!(checks >= 900 / 64, "{checks} checks");
}

/// Damaged files are refused or decoded, never a panic: every fixture with bytes changed at
/// random (markers, tables, entropy-coded data alike), cut short at random, or both, from a
/// fixed seed (SplitMix64, so a failure names a reproducible case). A panic in a backend is
/// an ERROR at best; a wrong index could read outside the file.
#[test]
fn damaged_files_are_refused_or_decoded_never_a_panic() {
    let mut state = 0x5EED_u64;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut names: Vec<String> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".jpg") && n != "interrupts.jpg")
        .collect();
    names.sort();
    let (mut decoded, mut refused) = (0, 0);
    for name in &names {
        let original = fixture(name);
        for case in 0..40 {
            let mut bytes = original.clone();
            let edits = 1 + next() % 8;
            for _ in 0..edits {
                // the first 400 bytes (the headers) three times as often as the rest
                let span = if next() % 4 < 3 {
                    bytes.len().min(400)
                } else {
                    bytes.len()
                };
                let at = (next() % span as u64) as usize;
                bytes[at] = next() as u8;
            }
            if case % 3 == 0 {
                bytes.truncate(1 + (next() % bytes.len() as u64) as usize);
            }
            let outcome =
                std::panic::catch_unwind(|| rgb(&bytes).map(|(w, h, px)| (w, h, px.len())));
            match outcome {
                Ok(Ok((w, h, len))) => {
                    assert_eq!(len, w * h * 3, "{name} case {case}");
                    decoded += 1;
                }
                Ok(Err(_)) => refused += 1,
                Err(_) => panic!("{name} case {case}: the decoder panicked"),
            }
        }
    }
    assert!(
        decoded > 0 && refused > 0,
        "{decoded} decoded, {refused} refused"
    );
}
