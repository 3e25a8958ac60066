//! Signatures of a 100 MB text in bounded memory: the pipeline streams, so the heap it uses
//! beyond the input does not grow with the text. Measured with a counting allocator (this
//! file is its own test binary, with a single test, so nothing else allocates meanwhile).

// A global allocator is unsafe by nature; this is the only unsafe code in the core crate.
#![allow(unsafe_code)]

use neardup_core::signatures::simhash::simhash_text;
use neardup_core::text::features::FeatureOptions;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Relaxed) + layout.size();
        PEAK.fetch_max(live, Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[test]
fn hundred_megabytes_in_bounded_memory() {
    let paragraph =
        "The Quick brown fox — jumps over the lazy dog; Straße &amp; café <b>bold</b> 日本語. ";
    let text = paragraph.repeat(100 * 1024 * 1024 / paragraph.len());
    assert!(text.len() >= 99 * 1024 * 1024);
    for options in [
        FeatureOptions::new(3, 0, true),
        FeatureOptions::new(1, 0, true),
        FeatureOptions::new(0, 5, true),
    ] {
        let options = options.unwrap();
        let before = LIVE.load(Relaxed);
        PEAK.store(before, Relaxed);
        let fp = simhash_text(text.as_bytes(), &options);
        let extra = PEAK.load(Relaxed) - before;
        assert_ne!(fp, 0);
        assert!(
            extra < 64 * 1024,
            "{options:?} used {extra} bytes beyond the input"
        );
    }
}
