//! Reading and writing the metapage (block 0).

use super::page::{self, Kind, Locked, META_BLOCK};
use neardup_core::index_page::Meta;
use neardup_core::permuted::Layout;
use pgrx::pg_sys;

/// A copy of the metapage, read under a share lock that is released on return.
pub fn read(index: pg_sys::Relation) -> Meta {
    let locked = Locked::read(
        index,
        pg_sys::ForkNumber::MAIN_FORKNUM,
        META_BLOCK,
        pg_sys::BUFFER_LOCK_SHARE,
    );
    // SAFETY: locked holds block 0 of the index.
    unsafe { decode(locked.page()) }
}

/// Decodes the metapage held in `page`; ERROR if it is not a valid one.
///
/// # Safety
/// `page` is a pinned and locked page of a `hamming` index.
pub unsafe fn decode(page: pg_sys::Page) -> Meta {
    unsafe {
        if page::kind(page) != Kind::Meta {
            pgrx::error!("hamming index block 0 is not a metapage");
        }
        Meta::read(page::contents(page)).unwrap_or_else(|e| pgrx::error!("{}", e.0))
    }
}

/// Writes `meta` into `page` (an initialised metapage or a GenericXLog copy of one).
///
/// # Safety
/// `page` is a writable page of the index, exclusively locked.
pub unsafe fn encode(page: pg_sys::Page, meta: &Meta) {
    let len = Meta::encoded_len(meta.tables.len());
    unsafe {
        meta.write(&mut page::contents_mut(page)[..len]);
        page::set_len(page, len);
    }
}

/// The permuted-table layout the metapage describes.
pub fn layout(meta: &Meta) -> Layout {
    Layout::new(meta.blocks, meta.max_distance)
        .unwrap_or_else(|e| pgrx::error!("hamming index metapage: {}", e.0))
}
