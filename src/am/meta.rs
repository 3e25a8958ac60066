//! Reading and writing the metapage (block 0).

use super::page::{self, Kind, Locked, Xlog, META_BLOCK};
use neardup_core::search::code_tables::Tables;
use neardup_core::search::index_page::{Meta, Run, MAGIC, OLDEST_READABLE, VERSION};
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

/// A copy of the metapage for the planner, or `None` if this build does not read the
/// index's format: planning must not fail on an index it would not scan (a sequential
/// count of a table whose index an older release wrote).
pub fn read_if_readable(index: pg_sys::Relation) -> Option<Meta> {
    let locked = Locked::read(
        index,
        pg_sys::ForkNumber::MAIN_FORKNUM,
        META_BLOCK,
        pg_sys::BUFFER_LOCK_SHARE,
    );
    // SAFETY: locked holds block 0 of the index.
    unsafe { readable(locked.page()).then(|| decode(locked.page())) }
}

/// Whether this build maintains the index (its inserts and VACUUM): false for an index of a
/// format it does not read, which an older release wrote (format 1, 0.2.0's, until the update
/// to 0.3.0 rebuilds it) or a newer one did before a downgrade. Refusing those writes would
/// take the table down until a REINDEX; instead the first writer to meet such an index
/// *retires* it: one generic WAL record writes `RETIRED` over the format its metapage names,
/// with a WARNING, and every write after that leaves it alone. No build reads a retired
/// index, the one that wrote its format included (each reads only formats it knows), so
/// the rows it misses are never looked for in it: its scans fail with 55000 until a REINDEX
/// writes it anew. The answer for a readable index is kept in the relation's `rd_amcache`
/// (dropped with the relcache entry, as a REINDEX does), so an insert pays for the check
/// once per relcache entry.
pub fn maintained(index: pg_sys::Relation) -> bool {
    // SAFETY: the index is open; rd_amcache belongs to its access method (this one), and is
    // allocated in rd_indexcxt as PostgreSQL frees it.
    unsafe {
        if !(*index).rd_amcache.is_null() {
            return true;
        }
        let main = pg_sys::ForkNumber::MAIN_FORKNUM;
        let locked = Locked::read(index, main, META_BLOCK, pg_sys::BUFFER_LOCK_SHARE);
        if readable(locked.page()) {
            (*index).rd_amcache = pg_sys::MemoryContextAllocZero((*index).rd_indexcxt, 1);
            return true;
        }
        drop(locked);
        let locked = Locked::read(index, main, META_BLOCK, pg_sys::BUFFER_LOCK_EXCLUSIVE);
        let format = format(locked.page());
        if format != Some(RETIRED) {
            let mut xlog = Xlog::start(index);
            let page = xlog.register(&locked, false);
            page::leading_bytes_mut(page)[4..8].copy_from_slice(&RETIRED.to_le_bytes());
            xlog.finish();
            pgrx::ereport!(
                WARNING,
                pgrx::PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!(
                    "hamming index \"{}\" has format {}, which this build of neardup does not read: it is retired, no longer maintained, and its scans fail until a REINDEX",
                    pgrx::name_data_to_str(&(*(*index).rd_rel).relname),
                    format.unwrap_or(0)
                ),
                "REINDEX the index (ALTER EXTENSION neardup UPDATE from 0.2.0 rebuilds every hamming index)."
            );
        }
        false
    }
}

/// The format written over the one an index had when a build that does not read it retires
/// it (see `maintained`): a number no build reads.
const RETIRED: u32 = u32::MAX;

/// Decodes the metapage held in `page`; ERROR if it is not a valid one, or one of a format
/// this build does not read (55000, asking for a REINDEX).
///
/// # Safety
/// `page` is a pinned and locked page of a `hamming` index.
pub unsafe fn decode(page: pg_sys::Page) -> Meta {
    unsafe {
        if !readable(page) {
            let message = match format(page) {
                Some(RETIRED) => "hamming index was retired (a build that did not read its format stopped maintaining it)".to_string(),
                format => format!(
                    "hamming index has format {}, this build of neardup reads formats {OLDEST_READABLE} to {VERSION}",
                    format.unwrap_or(0),
                ),
            };
            pgrx::ereport!(
                ERROR,
                pgrx::PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                message,
                "REINDEX the index (ALTER EXTENSION neardup UPDATE from 0.2.0 rebuilds every hamming index)."
            );
        }
        if page::kind(page) != Kind::Meta {
            pgrx::error!("hamming index block 0 is not a metapage");
        }
        Meta::read(page::contents(page)).unwrap_or_else(|e| pgrx::error!("{}", e.0))
    }
}

/// The format block 0 names. Every format's metapage begins with the magic number and the
/// format right after the page header, whatever the rest of the page looks like (format 1
/// laid out its special space differently), so this is read before anything else.
unsafe fn format(page: pg_sys::Page) -> Option<u32> {
    let head = unsafe { page::leading_bytes(page) };
    let word = |at: usize| u32::from_le_bytes(head[at..at + 4].try_into().expect("4 bytes"));
    (word(0) == MAGIC).then(|| word(4))
}

/// Whether this build reads the index whose block 0 is `page` (a page that is no metapage
/// at all is left to `decode` to report).
unsafe fn readable(page: pg_sys::Page) -> bool {
    unsafe { format(page) }.is_none_or(|v| (OLDEST_READABLE..=VERSION).contains(&v))
}

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
