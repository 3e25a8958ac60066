//! Reading and writing the metapage (block 0).

use super::page::{self, Kind, Locked, Xlog, META_BLOCK};
use neardup_core::search::code_tables::Tables;
use neardup_core::search::index_page::{Meta, Run, VERSION};
use neardup_core::search::table_parts::Parts;
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
        let contents = page::contents(page);
        let version = contents
            .get(4..8)
            .map(|v| u32::from_le_bytes(v.try_into().expect("4 bytes")));
        if version.is_some_and(|v| !(OLDEST_IN_PLACE..=VERSION).contains(&v)) {
            pgrx::ereport!(
                ERROR,
                pgrx::PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!(
                    "hamming index has format {}, this build of neardup reads formats {OLDEST_IN_PLACE} to {VERSION}",
                    version.unwrap_or(0),
                ),
                "REINDEX the index (ALTER EXTENSION neardup UPDATE rebuilds every hamming index)."
            );
        }
        Meta::read(contents).unwrap_or_else(|e| pgrx::error!("{}", e.0))
    }
}

/// The oldest format read in place: format 3 (0.3.0 to 0.6.0) is format 4 with one tree per
/// table, and takes format 4 at its next change of the metapage; its runs keep one tree per
/// table until a merge replaces them.
const OLDEST_IN_PLACE: u32 = 3;

/// Writes `meta` into `page` (an initialised metapage or a GenericXLog copy of one).
///
/// # Safety
/// `page` is a writable page of the index, exclusively locked.
pub unsafe fn encode(page: pg_sys::Page, meta: &Meta) {
    let len = meta.encoded_len();
    assert!(len <= page::CONTENTS, "hamming index metapage overflow");
    unsafe {
        meta.write(&mut page::contents_mut(page)[..len]);
        page::set_len(page, len);
    }
}

/// Whether the metapage can hold `meta`.
pub fn fits(meta: &Meta) -> bool {
    meta.encoded_len() <= page::CONTENTS
}

/// The layout of a run's tables.
pub fn layout<L: Tables>(meta: &Meta, run: &Run) -> L {
    L::of_run(run.blocks, meta.max_distance)
        .unwrap_or_else(|e| pgrx::error!("hamming index metapage: {e}"))
}

/// Changes the metapage in one WAL record: `change` edits a copy read under the exclusive
/// lock; returns the metapage as written.
pub fn update(index: pg_sys::Relation, change: impl FnOnce(&mut Meta)) -> Meta {
    let locked = Locked::read(
        index,
        pg_sys::ForkNumber::MAIN_FORKNUM,
        META_BLOCK,
        pg_sys::BUFFER_LOCK_EXCLUSIVE,
    );
    // SAFETY: block 0, locked exclusively and edited through GenericXLog.
    unsafe {
        let mut m = decode(locked.page());
        change(&mut m);
        let mut xlog = Xlog::start(index);
        encode(xlog.register(&locked, false), &m);
        xlog.finish();
        m
    }
}

/// The parts each table of `run` is stored in (see `table_parts`); ERROR if its trees do not
/// fit its layout.
pub fn parts(layout: &impl Tables, run: &Run) -> Parts {
    Parts::of_run(run.trees.len(), layout.count()).unwrap_or_else(|| {
        pgrx::error!(
            "hamming index metapage: run {} has {} trees for {} tables",
            run.id,
            run.trees.len(),
            layout.count()
        )
    })
}

/// The layout of each run of `meta` and the parts its tables are stored in, in run order.
pub fn layouts<L: Tables>(meta: &Meta) -> (Vec<L>, Vec<Parts>) {
    let layouts: Vec<L> = meta.runs.iter().map(|r| layout(meta, r)).collect();
    let parts = meta
        .runs
        .iter()
        .zip(&layouts)
        .map(|(r, layout)| parts(layout, r))
        .collect();
    (layouts, parts)
}

/// The parts each table of a run written now with `layout` is stored in.
pub fn new_parts(layout: &impl Tables) -> Parts {
    Parts::for_tables(layout.count())
}

/// The trees a run written now with `layout` has.
pub fn new_trees(layout: &impl Tables) -> usize {
    layout.count() * new_parts(layout).count()
}
