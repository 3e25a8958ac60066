//! Content-defined chunking (Jain et al. §2.2; LBFS) of the canonical text: its tokens
//! joined by single spaces, as [`crate::text::tokenizer::canonical`] returns it.
//!
//! Boundaries come from a rolling hash, so an edit moves only the boundaries near it and
//! the chunks elsewhere stay the same set elements. The rolling hash is a Gear hash
//! (Xia et al., FastCDC, USENIX ATC 2016), an equivalent of the paper's 48-byte Rabin
//! fingerprint that costs one shift, one add and one table lookup per byte:
//!
//! `h = (h << 1) + GEAR[byte]  (mod 2^64)`, starting from `h = 0` at the start of the text.
//!
//! A byte's table value is shifted out of the 64-bit state after 64 more bytes, so `h` is a
//! function of the last 64 bytes only: a fixed window, as in Rabin's scheme, with no byte
//! leaving the window to subtract. The state is not reset at boundaries, so the hash at a
//! position never depends on where earlier boundaries fell; near the start of the text the
//! window is the bytes so far (as if preceded by bytes whose table value is 0).
//! `GEAR[b]` is output number `b + 1` of SplitMix64 seeded with 0 ([`splitmix64_next`]).
//!
//! Rules, with `c` the expected chunk size and `min = c / 4`:
//! - A cut is due after a byte where `h < u64::MAX / (c - min)` and the chunk, that byte
//!   included, has at least `min` bytes. The test reads the high bits of `h`, the ones every
//!   byte of the window reaches (the low bits only see the last few bytes). It holds with
//!   probability `1 / (c - min)` per byte, so after the `min` bytes without a test, chunks
//!   average `c` bytes (before the maximum truncates a few), for any `c`, not only powers
//!   of two, and with no division per byte.
//! - The cut is made at the end of the character that byte belongs to, so chunks are
//!   always whole UTF-8 and can be returned as text.
//! - A chunk never exceeds [`MAX_CHUNK`] (64 KB, the paper's maximum): it is cut before
//!   the character that would make it longer.
//! - The last chunk is whatever remains (it may be shorter than `min`); a text with no
//!   token has no chunk.
//!
//! The chunks concatenate to the canonical text. The tokens are streamed into the rolling
//! hash (the canonical string is never built whole): only the current chunk and the next
//! few kilobytes are buffered.

use crate::base::splitmix::splitmix64_next;
use crate::text::tokenizer::for_each_token_window;
use std::fmt;

/// The paper's expected chunk size, in bytes.
pub const DEFAULT_CHUNK_SIZE: usize = 256;
/// Smallest expected chunk size accepted: a smaller one would make the minimum chunk a
/// few bytes, i.e. chunks of a word or less.
pub const MIN_CHUNK_SIZE: usize = 16;
/// Largest expected chunk size accepted, and the hard maximum length of a chunk (64 KB).
pub const MAX_CHUNK: usize = 64 * 1024;

/// An expected chunk size in bytes, checked to be in `MIN_CHUNK_SIZE..=MAX_CHUNK`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkSize(u32);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkSizeError(pub i64);

impl fmt::Display for ChunkSizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "chunk size must be between {MIN_CHUNK_SIZE} and {MAX_CHUNK} bytes, got {}",
            self.0
        )
    }
}

impl ChunkSize {
    pub const DEFAULT: ChunkSize = ChunkSize(DEFAULT_CHUNK_SIZE as u32);

    /// Takes an `i64` so that any SQL integer argument, negative ones included, is
    /// checked here rather than cast by the caller.
    pub fn new(expected: i64) -> Result<Self, ChunkSizeError> {
        if (MIN_CHUNK_SIZE as i64..=MAX_CHUNK as i64).contains(&expected) {
            Ok(ChunkSize(expected as u32))
        } else {
            Err(ChunkSizeError(expected))
        }
    }

    pub fn get(self) -> usize {
        self.0 as usize
    }

    /// No cut is made before a chunk has this many bytes.
    pub fn min_len(self) -> usize {
        self.get() / 4
    }

    fn cut_threshold(self) -> u64 {
        u64::MAX / (self.get() - self.min_len()) as u64
    }
}

static GEAR: [u64; 256] = {
    let mut table = [0u64; 256];
    let mut state = 0;
    let mut b = 0;
    while b < 256 {
        table[b] = splitmix64_next(&mut state);
        b += 1;
    }
    table
};

/// Calls `emit` with each chunk of the canonical form of `text`, in order.
pub fn for_each_chunk(text: &[u8], size: ChunkSize, mut emit: impl FnMut(&[u8])) {
    let mut chunker = Chunker::new(size);
    for_each_token_window(text, true, |token| {
        let text = &mut chunker.text;
        if !text.is_empty() {
            text.push(b' ');
        }
        match token.window.first_chunk::<16>() {
            // Most tokens are short: copying a fixed 16 bytes and dropping the excess
            // is a couple of moves, where a copy of the token's length is a call.
            Some(sixteen) if token.len <= 16 => {
                let end = text.len() + token.len;
                text.extend_from_slice(sixteen);
                text.truncate(end);
            }
            _ => text.extend_from_slice(token.bytes()),
        }
        if text.len() - chunker.scanned >= SCAN_BATCH {
            chunker.scan(&mut emit);
        }
    });
    chunker.scan(&mut emit);
    if !chunker.text.is_empty() {
        emit(&chunker.text);
    }
}

/// The chunks of the canonical form of `text`, for display (`neardup_chunks`).
pub fn chunks(text: &[u8], size: ChunkSize) -> Vec<String> {
    let mut out = Vec::new();
    for_each_chunk(text, size, |chunk| {
        out.push(
            std::str::from_utf8(chunk)
                .expect("chunks are whole UTF-8")
                .to_owned(),
        )
    });
    out
}

/// Canonical bytes gathered before they are scanned for cuts: scanning a run of text at
/// once, rather than each token as it comes, keeps the scan loop's setup off the
/// per-token cost.
const SCAN_BATCH: usize = 4096;

struct Chunker {
    /// The canonical text from the start of the current chunk on. Never empty once the
    /// first token is in (a cut leaves the byte after it), so it also says whether a
    /// separator is due before the next token.
    text: Vec<u8>,
    /// `text[..scanned]` has been rolled into `hash`.
    scanned: usize,
    hash: u64,
    /// A cut point was found in the last character scanned: cut before the next one.
    cut_due: bool,
    min_len: usize,
    threshold: u64,
}

impl Chunker {
    fn new(size: ChunkSize) -> Self {
        Chunker {
            // Room for a batch and a typical chunk in progress.
            text: Vec::with_capacity(2 * SCAN_BATCH),
            scanned: 0,
            hash: 0,
            cut_due: false,
            min_len: size.min_len(),
            threshold: size.cut_threshold(),
        }
    }

    /// Rolls the hash over the text not scanned yet, emits the chunks that end in it, and
    /// keeps the rest of the last chunk. Most bytes take the fast path: a loop that only
    /// rolls the hash (and tests it once the chunk has its minimum length), stopping at a
    /// cut point.
    fn scan(&mut self, emit: &mut impl FnMut(&[u8])) {
        let (mut hash, threshold) = (self.hash, self.threshold);
        let text = &self.text;
        let mut start = 0; // of the current chunk
        let mut i = self.scanned;
        while i < text.len() {
            let len = i - start; // chunk bytes before byte i
            if self.cut_due || len + MAX_UTF8_LEN > MAX_CHUNK {
                // A cut waits for the next character, or the chunk is near the maximum:
                // one byte at a time.
                let b = text[i];
                if is_char_start(b) && (self.cut_due || len + utf8_len(b) > MAX_CHUNK) {
                    emit(&text[start..i]);
                    start = i;
                    self.cut_due = false;
                    continue;
                }
                hash = roll(hash, b);
                i += 1;
                self.cut_due |= hash < threshold && len + 1 >= self.min_len;
                continue;
            }
            // Up to `stop`, every character fits under the maximum; before `tested`, the
            // chunk is shorter than the minimum.
            let stop = text.len().min(i + (MAX_CHUNK - MAX_UTF8_LEN - len) + 1);
            let tested = stop.min(i + (self.min_len - 1).saturating_sub(len));
            hash = text[i..tested].iter().fold(hash, |h, &b| roll(h, b));
            i = tested;
            match text[i..stop].iter().position(|&b| {
                hash = roll(hash, b);
                hash < threshold
            }) {
                Some(at) => {
                    i += at + 1;
                    self.cut_due = true;
                }
                None => i = stop,
            }
        }
        self.text.drain(..start);
        self.scanned = self.text.len();
        self.hash = hash;
    }
}

/// One step of the Gear hash.
#[inline(always)]
fn roll(hash: u64, byte: u8) -> u64 {
    (hash << 1).wrapping_add(GEAR[byte as usize])
}

const MAX_UTF8_LEN: usize = 4;

#[inline]
fn is_char_start(b: u8) -> bool {
    b & 0xC0 != 0x80
}

/// Length of the UTF-8 character that starts with `lead`.
#[inline]
fn utf8_len(lead: u8) -> usize {
    match lead {
        0x00..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::tokenizer::canonical;

    #[test]
    fn gear_table_is_splitmix_from_zero() {
        assert_eq!(GEAR[0], 0xE220_A839_7B1D_CDAF);
        assert_eq!(GEAR[1], 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(GEAR[255], 0x5A58_32BB_47BC_F19E);
    }

    #[test]
    fn sizes_are_checked() {
        assert_eq!(ChunkSize::new(256), Ok(ChunkSize::DEFAULT));
        assert!(ChunkSize::new(16).is_ok());
        assert!(ChunkSize::new(100).is_ok());
        assert!(ChunkSize::new(65536).is_ok());
        for bad in [15, 0, -1, 65537, i64::MAX, i64::MIN] {
            let err = ChunkSize::new(bad).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("chunk size must be between 16 and 65536 bytes, got {bad}")
            );
        }
        assert_eq!(ChunkSize::new(100).unwrap().min_len(), 25);
    }

    #[test]
    fn chunks_rebuild_the_canonical_text() {
        // Numbered lines: a text repeating a short period has a periodic rolling hash,
        // which may never meet the cut condition.
        let text: String = (0..100)
            .map(|i| format!("Line {i}: the <b>Quick</b> brown fox &amp; the lazy dog.\n"))
            .collect();
        for size in [16, 17, 64, 100, 256] {
            let size = ChunkSize::new(size).unwrap();
            let chunks = chunks(text.as_bytes(), size);
            assert!(chunks.len() > 1);
            assert_eq!(chunks.concat(), canonical(text.as_bytes(), true));
            let (last, rest) = chunks.split_last().unwrap();
            assert!(rest.iter().all(|c| c.len() >= size.min_len()));
            assert!(!last.is_empty());
        }
    }

    #[test]
    fn no_token_no_chunk() {
        assert!(chunks(b"", ChunkSize::DEFAULT).is_empty());
        assert!(chunks(b" ... <p></p> -- ", ChunkSize::DEFAULT).is_empty());
        assert_eq!(chunks(b"  Word!  ", ChunkSize::DEFAULT), ["word"]);
    }

    #[test]
    fn long_runs_are_cut_at_the_maximum_between_characters() {
        // One 3-byte letter repeated: a constant window, so no content-defined cut; 65536
        // is not a multiple of 3, so the cut falls one byte short of the maximum.
        let text = "ḁ".repeat(50_000);
        let chunks = chunks(text.as_bytes(), ChunkSize::DEFAULT);
        let lengths: Vec<usize> = chunks.iter().map(String::len).collect();
        assert_eq!(lengths, [65535, 65535, 150_000 - 2 * 65535]);
        let ascii = "a".repeat(200_000);
        let lengths: Vec<usize> = super::chunks(ascii.as_bytes(), ChunkSize::DEFAULT)
            .iter()
            .map(String::len)
            .collect();
        assert_eq!(lengths, [65536, 65536, 65536, 200_000 - 3 * 65536]);
    }
}
