//! Pages of a `hamming` index in PostgreSQL's buffer manager: locked-buffer handles that
//! release on drop, the special space that identifies each page, and the GenericXLog guard
//! through which every change after the build is written. The byte layout of the contents
//! is drawn in `neardup_core::search::index_page`.
//!
//! ```text
//!  special space (PageTail, 16 bytes)
//!  +-----------+-----------+----------+-----------+-----------+----------------+
//!  | next u32  | owner u32 | kind u16 | table u16 | level u16 | page id 0xFF8B |
//!  +-----------+-----------+----------+-----------+-----------+----------------+
//!  next: the next leaf or pending page; owner: the id of the run or list the page belongs
//!  to; level: 1 for a directory page whose children are leaves, 2 above those, ...; on a
//!  leaf, its layout (`LeafLayout`): 0 rows, 1 columns (64-bit codes from format 5, all from 6)
//! ```

use neardup_core::search::index_page::{self, Leaf, LeafLayout, Rest, NO_BLOCK};
use neardup_core::search::prefix_bitmap::BITMAP_BYTES;
use pgrx::pg_sys;
use std::mem::size_of;

pub const META_BLOCK: pg_sys::BlockNumber = 0;
/// Identifies our pages to tools such as pg_filedump (contrib/bloom uses 0xFF83).
const PAGE_ID: u16 = 0xFF8B;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u16)]
pub enum Kind {
    Meta = 1,
    Table = 2,
    Pending = 3,
    Directory = 4,
    /// Block 1 and the pages chained after it: the garbage not yet recycled (`registry`).
    /// (Format 2 had an empty "interlock" page of this kind at block 1.)
    Registry = 5,
    /// A page given back, stamped so that it cannot pass for a page of its former owner.
    Free = 6,
}

#[repr(C)]
struct PageTail {
    next: u32,
    owner: u32,
    kind: u16,
    table: u16,
    level: u16,
    page_id: u16,
}

const HEADER: usize = 24; // MAXALIGN(SizeOfPageHeaderData)
const TAIL: usize = (size_of::<PageTail>() + 7) & !7;
/// Bytes of contents a page holds.
pub const CONTENTS: usize = pg_sys::BLCKSZ as usize - HEADER - TAIL;
const _: () = assert!(CONTENTS == index_page::PAGE_CONTENTS);
pub const ENTRIES_PER_PAGE: usize = index_page::ENTRIES_PER_PAGE;

/// What a page is and whose: its kind, the run or list that owns it, its permuted table
/// and its level in a directory.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Role {
    pub kind: Kind,
    pub owner: u32,
    pub table: u16,
    pub level: u16,
}

impl Role {
    pub fn new(kind: Kind, owner: u32) -> Role {
        Role {
            kind,
            owner,
            table: 0,
            level: 0,
        }
    }

    /// A leaf of tree `table` of run `owner`, its entries laid out as `layout`.
    pub fn leaf(owner: u32, table: u16, layout: LeafLayout) -> Role {
        Role {
            kind: Kind::Table,
            owner,
            table,
            level: match layout {
                LeafLayout::Rows => 0,
                LeafLayout::Columns => LEAF_COLUMNS,
            },
        }
    }
}

/// A leaf's `level` when its entries are laid out as columns (a leaf has no level in a
/// directory; older formats wrote 0 there, which reads as rows).
const LEAF_COLUMNS: u16 = 1;

/// Formats `page` as an empty page of `role`.
///
/// # Safety
/// `page` points to a BLCKSZ buffer the caller may write.
pub unsafe fn init(page: pg_sys::Page, role: Role) {
    unsafe {
        pg_sys::PageInit(page, pg_sys::BLCKSZ as usize, TAIL);
        let tail = tail_ptr(page);
        (*tail).next = NO_BLOCK;
        (*tail).owner = role.owner;
        (*tail).kind = role.kind as u16;
        (*tail).table = role.table;
        (*tail).level = role.level;
        (*tail).page_id = PAGE_ID;
    }
}

/// Whether the page was never initialised (a new block, or one an aborted extension left).
pub unsafe fn is_new(page: pg_sys::Page) -> bool {
    unsafe { (*header(page)).pd_upper == 0 }
}

/// The run or list the page belongs to (0 for the metapage).
pub unsafe fn owner(page: pg_sys::Page) -> u32 {
    unsafe { (*tail_ptr(page)).owner }
}

/// Whose the page is, for `Meta::in_use`: its owner, and its table for a leaf or directory
/// page (`None` for a pending page, and the metapage).
pub unsafe fn usage(page: pg_sys::Page) -> (u32, Option<u16>) {
    unsafe {
        let tail = tail_ptr(page);
        let table = matches!(kind(page), Kind::Table | Kind::Directory).then_some((*tail).table);
        ((*tail).owner, table)
    }
}

pub unsafe fn level(page: pg_sys::Page) -> u16 {
    unsafe { (*tail_ptr(page)).level }
}

unsafe fn tail_ptr(page: pg_sys::Page) -> *mut PageTail {
    unsafe {
        page.add((*(page as *mut pg_sys::PageHeaderData)).pd_special as usize) as *mut PageTail
    }
}

unsafe fn header(page: pg_sys::Page) -> *mut pg_sys::PageHeaderData {
    page as *mut pg_sys::PageHeaderData
}

/// A page's kind, or an ERROR if it is not one of ours (a corrupt or foreign page must
/// never be read as entries).
pub unsafe fn kind(page: pg_sys::Page) -> Kind {
    unsafe {
        let special = (*header(page)).pd_special as usize;
        if special != pg_sys::BLCKSZ as usize - TAIL || (*tail_ptr(page)).page_id != PAGE_ID {
            pgrx::error!("hamming index page is corrupt (special space)");
        }
        match (*tail_ptr(page)).kind {
            1 => Kind::Meta,
            2 => Kind::Table,
            3 => Kind::Pending,
            4 => Kind::Directory,
            5 => Kind::Registry,
            6 => Kind::Free,
            other => pgrx::error!("hamming index page has unknown kind {other}"),
        }
    }
}

pub unsafe fn next(page: pg_sys::Page) -> u32 {
    unsafe { (*tail_ptr(page)).next }
}

pub unsafe fn set_next(page: pg_sys::Page, next: u32) {
    unsafe { (*tail_ptr(page)).next = next }
}

/// A leaf's layout; an ERROR if the page names a layout this build does not know.
///
/// # Safety
/// `page` is a locked leaf.
pub unsafe fn leaf_layout(page: pg_sys::Page) -> LeafLayout {
    match unsafe { (*tail_ptr(page)).level } {
        0 => LeafLayout::Rows,
        LEAF_COLUMNS => LeafLayout::Columns,
        other => pgrx::error!("hamming index page is corrupt (leaf layout {other})"),
    }
}

/// The entries of a leaf, in its layout (see `leaf_layout`).
///
/// # Safety
/// `page` is a locked leaf of an index whose entries carry `P`.
pub unsafe fn leaf<'a, P: Rest>(page: pg_sys::Page) -> Leaf<'a, P> {
    unsafe { Leaf::new(contents(page), leaf_layout(page)) }
}

/// The first 8 bytes after the page header, whatever the page's special space says.
pub unsafe fn leading_bytes(page: pg_sys::Page) -> [u8; 8] {
    unsafe { std::ptr::read_unaligned(page.add(HEADER) as *const [u8; 8]) }
}

/// The same bytes, for writing (a GenericXLog copy of the page).
pub unsafe fn leading_bytes_mut<'a>(page: pg_sys::Page) -> &'a mut [u8; 8] {
    unsafe { &mut *(page.add(HEADER) as *mut [u8; 8]) }
}

/// The used part of the contents (up to pd_lower).
pub unsafe fn contents<'a>(page: pg_sys::Page) -> &'a [u8] {
    unsafe {
        let lower = (*header(page)).pd_lower as usize;
        let len = lower.saturating_sub(HEADER).min(CONTENTS);
        std::slice::from_raw_parts(page.add(HEADER) as *const u8, len)
    }
}

/// All of the contents area, for writing; `set_len` then records how much is used.
pub unsafe fn contents_mut<'a>(page: pg_sys::Page) -> &'a mut [u8] {
    unsafe { std::slice::from_raw_parts_mut(page.add(HEADER) as *mut u8, CONTENTS) }
}

pub unsafe fn set_len(page: pg_sys::Page, len: usize) {
    debug_assert!(len <= CONTENTS);
    unsafe { (*header(page)).pd_lower = (HEADER + len) as u16 }
}

/// Stores a small table's prefix bitmap at the end of its root directory page's contents,
/// where pd_upper then points (`neardup_core::search::prefix_bitmap` draws it); call after
/// `set_len`, with children that leave it room.
pub unsafe fn set_prefix_bitmap(page: pg_sys::Page, bitmap: &[u8]) {
    debug_assert_eq!(bitmap.len(), BITMAP_BYTES);
    unsafe {
        let at = CONTENTS - BITMAP_BYTES;
        debug_assert!((*header(page)).pd_lower as usize <= HEADER + at);
        contents_mut(page)[at..].copy_from_slice(bitmap);
        (*header(page)).pd_upper = (HEADER + at) as u16;
    }
}

/// The prefix bitmap of a root directory page, if it carries one.
pub unsafe fn prefix_bitmap<'a>(page: pg_sys::Page) -> Option<&'a [u8]> {
    unsafe {
        let at = CONTENTS - BITMAP_BYTES;
        ((*header(page)).pd_upper as usize == HEADER + at).then(|| &contents_mut(page)[at..])
    }
}

/// A pinned and locked buffer, unlocked and unpinned when dropped (also while a Rust
/// panic or a PostgreSQL ERROR unwinds).
pub struct Locked {
    pub buffer: pg_sys::Buffer,
}

impl Locked {
    /// Reads `block` of `fork` and locks it (`BUFFER_LOCK_SHARE` or `_EXCLUSIVE`).
    pub fn read(
        index: pg_sys::Relation,
        fork: pg_sys::ForkNumber::Type,
        block: u32,
        mode: u32,
    ) -> Locked {
        // SAFETY: the index is open and locked by the caller; the block exists (callers
        // only follow block numbers from the metapage and page links).
        unsafe {
            let buffer = pg_sys::ReadBufferExtended(
                index,
                fork,
                block,
                pg_sys::ReadBufferMode::RBM_NORMAL,
                std::ptr::null_mut(),
            );
            pg_sys::LockBuffer(buffer, mode as i32);
            Locked { buffer }
        }
    }

    /// Adds a new block at the end of `fork`, locked exclusively.
    pub fn extend(index: pg_sys::Relation, fork: pg_sys::ForkNumber::Type) -> Locked {
        // SAFETY: the relation extension lock serialises concurrent extenders, as
        // PostgreSQL requires for P_NEW.
        unsafe {
            pg_sys::LockRelationForExtension(index, pg_sys::ExclusiveLock as pg_sys::LOCKMODE);
            let buffer = pg_sys::ReadBufferExtended(
                index,
                fork,
                pg_sys::InvalidBlockNumber,
                pg_sys::ReadBufferMode::RBM_NORMAL,
                std::ptr::null_mut(),
            );
            pg_sys::LockBuffer(buffer, pg_sys::BUFFER_LOCK_EXCLUSIVE as i32);
            pg_sys::UnlockRelationForExtension(index, pg_sys::ExclusiveLock as pg_sys::LOCKMODE);
            Locked { buffer }
        }
    }

    pub fn page(&self) -> pg_sys::Page {
        // SAFETY: the buffer is pinned for as long as self lives.
        unsafe { pg_sys::BufferGetPage(self.buffer) }
    }

    pub fn block(&self) -> u32 {
        // SAFETY: as above.
        unsafe { pg_sys::BufferGetBlockNumber(self.buffer) }
    }
}

impl Drop for Locked {
    fn drop(&mut self) {
        // SAFETY: we hold exactly one pin and one lock on this buffer.
        unsafe { pg_sys::UnlockReleaseBuffer(self.buffer) }
    }
}

/// One WAL record for changes to a few pages (GenericXLog): pages are edited through the
/// copies `register` returns, and applied and logged together by `finish`. Dropped without
/// `finish` (an ERROR or panic in between), the record is aborted and no page changes.
pub struct Xlog {
    state: *mut pg_sys::GenericXLogState,
}

impl Xlog {
    pub fn start(index: pg_sys::Relation) -> Xlog {
        // SAFETY: the index is open; GenericXLog handles unlogged relations itself.
        Xlog {
            state: unsafe { pg_sys::GenericXLogStart(index) },
        }
    }

    /// The page to edit in place of `locked`'s; `full` logs a whole-page image (for
    /// freshly initialised pages) instead of a delta.
    pub fn register(&mut self, locked: &Locked, full: bool) -> pg_sys::Page {
        let flags = if full {
            pg_sys::GENERIC_XLOG_FULL_IMAGE as i32
        } else {
            0
        };
        // SAFETY: the buffer is exclusively locked by the caller and stays so until finish.
        unsafe { pg_sys::GenericXLogRegisterBuffer(self.state, locked.buffer, flags) }
    }

    pub fn finish(mut self) {
        // SAFETY: state is live; finish consumes it.
        unsafe { pg_sys::GenericXLogFinish(self.state) };
        self.state = std::ptr::null_mut();
    }
}

impl Drop for Xlog {
    fn drop(&mut self) {
        if !self.state.is_null() {
            // SAFETY: not finished, so still ours to abort.
            unsafe { pg_sys::GenericXLogAbort(self.state) }
        }
    }
}

/// Reads `block` under a share lock for a scan that reached it through the metapage it read
/// earlier, and checks it is still a page of `kind` owned by `owner`. Pages are reused only
/// once no scan can read them, on the primary and (through feedback, or through the
/// recovery conflict logged before recycling, `recovery_conflict`) on a standby, so this
/// always holds; the check turns a broken rule into an ERROR rather than a wrong answer.
pub fn read_owned(index: pg_sys::Relation, block: u32, kind: Kind, owner: u32) -> Locked {
    let locked = Locked::read(
        index,
        pg_sys::ForkNumber::MAIN_FORKNUM,
        block,
        pg_sys::BUFFER_LOCK_SHARE,
    );
    check_owned(locked, block, kind, owner)
}

/// `read_owned`, trying `recent` first: the buffer where this backend last found `block`.
/// A buffer that still holds it is pinned without a lookup in the buffer mapping table
/// (PostgreSQL's `ReadRecentBuffer` checks the buffer's tag under its header lock, so a
/// stale hint only misses); that lookup was an eighth of a pass nearest first, which reads
/// every leaf of a table. A block of a temporary index (local buffers) is read as usual.
pub fn read_owned_recent(
    index: pg_sys::Relation,
    block: u32,
    kind: Kind,
    owner: u32,
    recent: pg_sys::Buffer,
) -> Locked {
    // SAFETY: the index is open and locked by the caller; a positive hint is a shared
    // buffer number this backend had, which ReadRecentBuffer checks before pinning it.
    let pinned = recent > 0
        && unsafe {
            #[cfg(feature = "pg15")]
            let file = (*index).rd_node;
            #[cfg(not(feature = "pg15"))]
            let file = (*index).rd_locator;
            pg_sys::ReadRecentBuffer(file, pg_sys::ForkNumber::MAIN_FORKNUM, block, recent)
        };
    if !pinned {
        return read_owned(index, block, kind, owner);
    }
    // SAFETY: pinned above; the lock is released with the pin when `Locked` drops. The
    // index is open.
    unsafe {
        pg_sys::LockBuffer(recent, pg_sys::BUFFER_LOCK_SHARE as i32);
        count_buffer_hit(index);
    }
    check_owned(Locked { buffer: recent }, block, kind, owner)
}

/// A page in shared buffers that a pass reads next, to be brought into the CPU's caches
/// line by line as the pass reads the page before it (the hardware prefetcher follows a
/// stream within a page, not into the next leaf's buffer, which lies anywhere in the pool;
/// asking for the whole page at once stalls on the CPU's few outstanding misses instead of
/// testing codes meanwhile). Hints only: nothing is pinned or read, and a buffer that
/// holds another page by then costs a few wasted loads, no wrong answer.
#[derive(Clone, Copy)]
pub struct Ahead {
    /// The page, or null: nothing to ask for.
    page: *const u8,
}

impl Ahead {
    pub const NONE: Ahead = Ahead {
        page: std::ptr::null(),
    };

    /// The page in shared buffer `buffer` (nothing for local buffers, which temporary
    /// indexes use, and on other CPUs); its special space is asked for at once.
    pub fn of_buffer(buffer: pg_sys::Buffer) -> Ahead {
        // SAFETY: NBuffers is set at startup; a buffer number in 1..=NBuffers names a page
        // of the pool, BLCKSZ bytes from BufferBlocks on.
        let ahead = unsafe {
            if !cfg!(target_arch = "x86_64") || buffer <= 0 || buffer > pg_sys::NBuffers {
                return Ahead::NONE;
            }
            Ahead {
                page: pg_sys::BufferBlocks.add((buffer as usize - 1) * pg_sys::BLCKSZ as usize)
                    as *const u8,
            }
        };
        ahead.line(pg_sys::BLCKSZ as usize - TAIL);
        ahead
    }

    /// Asks for the line holding byte `offset` of the page's contents (the first holds the
    /// page header too).
    #[inline(always)]
    pub fn contents(self, offset: usize) {
        self.line(HEADER + offset);
    }

    /// Asks for the line holding byte `at` of the page, into the second-level cache: the
    /// first level's few outstanding misses stay for the page being read (measured on
    /// shuffled pages, a tenth faster than asking into the first level).
    #[inline(always)]
    fn line(self, at: usize) {
        #[cfg(target_arch = "x86_64")]
        if !self.page.is_null() && at < pg_sys::BLCKSZ as usize {
            // SAFETY: an address inside the page (see `of_buffer`); a prefetch reads nothing.
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T1};
                _mm_prefetch::<_MM_HINT_T1>(self.page.add(at) as *const i8);
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = at;
    }
}

/// Counts a block read and found in shared buffers in the index's statistics
/// (`pg_statio_*_indexes`), as `ReadBuffer` does (PostgreSQL's `pgstat_count_buffer_read`
/// and `_hit` macros) and `ReadRecentBuffer`, which knows no relation, does not.
unsafe fn count_buffer_hit(index: pg_sys::Relation) {
    unsafe {
        if (*index).pgstat_info.is_null() {
            if !(*index).pgstat_enabled {
                return;
            }
            pg_sys::pgstat_assoc_relation(index);
        }
        #[cfg(feature = "pg15")]
        {
            let counts = &mut (*(*index).pgstat_info).t_counts;
            counts.t_blocks_fetched += 1;
            counts.t_blocks_hit += 1;
        }
        #[cfg(not(feature = "pg15"))]
        {
            let counts = &mut (*(*index).pgstat_info).counts;
            counts.blocks_fetched += 1;
            counts.blocks_hit += 1;
        }
    }
}

/// `locked` if it is a page of `kind` owned by `owner`; else an ERROR (see `read_owned`).
fn check_owned(locked: Locked, block: u32, kind: Kind, owner: u32) -> Locked {
    // SAFETY: a locked page of the index.
    let same = unsafe {
        !is_new(locked.page())
            && self::kind(locked.page()) == kind
            && self::owner(locked.page()) == owner
    };
    if !same {
        pgrx::ereport!(
            ERROR,
            pgrx::PgSqlErrorCode::ERRCODE_T_R_SERIALIZATION_FAILURE,
            format!("hamming index block {block} was reused while a scan read it"),
            "On a standby this is a conflict with recovery (a merge replayed from the primary): retry the query."
        );
    }
    locked
}

/// Appends `bytes` after the used contents of an exclusively locked page, and logs it as
/// a generic WAL record built here rather than by GenericXLog: the record GenericXLog
/// would write for this change (two fragments, the new `pd_lower` and the bytes), which
/// PostgreSQL's own `generic_redo` replays, but without GenericXLog's copy of the page
/// and byte-by-byte comparison of its used part. That comparison is what made an append
/// cost several microseconds on a full page; this costs what a btree insertion's record
/// does. The caller checked that the bytes fit.
///
/// ```text
///  fragment (generic_xlog.c's delta format): offset u16 | length u16 | data
///  [ 12 | 2 | new pd_lower ] [ old pd_lower | len(bytes) | bytes ]
/// ```
pub fn append_logged(index: pg_sys::Relation, locked: &Locked, bytes: &[u8]) {
    const PD_LOWER_AT: u16 = std::mem::offset_of!(pg_sys::PageHeaderData, pd_lower) as u16;
    let page = locked.page();
    // SAFETY: the page is ours and exclusively locked; the critical section holds no
    // allocation and nothing that can ERROR (an ERROR there would leave the buffer changed
    // and unlogged, so PostgreSQL makes it a PANIC).
    unsafe {
        let at = (*header(page)).pd_lower;
        let len = bytes.len() as u16;
        debug_assert!(at as usize + bytes.len() <= (*header(page)).pd_upper as usize);
        let new_lower = at + len;
        let mut delta = [0u8; 10 + CONTENTS];
        let mut put = |at: usize, v: u16| delta[at..at + 2].copy_from_slice(&v.to_ne_bytes());
        put(0, PD_LOWER_AT);
        put(2, 2);
        put(4, new_lower);
        put(6, at);
        put(8, len);
        delta[10..10 + bytes.len()].copy_from_slice(bytes);
        let delta = &delta[..10 + bytes.len()];
        let needs_wal = relation_needs_wal(index);

        pg_sys::CritSectionCount += 1;
        std::ptr::copy_nonoverlapping(
            bytes.as_ptr(),
            page.add(at as usize) as *mut u8,
            bytes.len(),
        );
        (*header(page)).pd_lower = new_lower;
        pg_sys::MarkBufferDirty(locked.buffer);
        if needs_wal {
            pg_sys::XLogBeginInsert();
            pg_sys::XLogRegisterBuffer(0, locked.buffer, pg_sys::REGBUF_STANDARD as u8);
            pg_sys::XLogRegisterBufData(0, delta.as_ptr() as *mut _, delta.len() as _);
            let lsn = pg_sys::XLogInsert(pg_sys::RmgrIds::RM_GENERIC_ID as u8, 0);
            (*header(page)).pd_lsn = pg_sys::PageXLogRecPtr {
                xlogid: (lsn >> 32) as u32,
                xrecoff: lsn as u32,
            };
        }
        pg_sys::CritSectionCount -= 1;
    }
}

/// `InvalidSubTransactionId`.
const INVALID_SUBXACT: pg_sys::SubTransactionId = 0;

/// The subtransaction that gave the index its current storage (renamed with relfilenodes in 16).
unsafe fn first_relfilenode_subid(index: pg_sys::Relation) -> pg_sys::SubTransactionId {
    // SAFETY: an open relation.
    unsafe {
        #[cfg(feature = "pg15")]
        return (*index).rd_firstRelfilenodeSubid;
        #[cfg(not(feature = "pg15"))]
        return (*index).rd_firstRelfilelocatorSubid;
    }
}

/// Whether the index's storage is this transaction's (CREATE INDEX, TRUNCATE or REINDEX in
/// it): no other backend can see it yet.
pub unsafe fn storage_is_this_transactions(index: pg_sys::Relation) -> bool {
    // SAFETY: an open relation.
    unsafe {
        (*index).rd_createSubid != INVALID_SUBXACT
            || first_relfilenode_subid(index) != INVALID_SUBXACT
    }
}

/// `RelationNeedsWAL()`: what GenericXLogStart asks to decide whether to log.
pub(super) unsafe fn relation_needs_wal(index: pg_sys::Relation) -> bool {
    unsafe {
        let permanent = (*(*index).rd_rel).relpersistence == pg_sys::RELPERSISTENCE_PERMANENT as i8;
        let wal_needed = pg_sys::wal_level >= pg_sys::WalLevel::WAL_LEVEL_REPLICA as i32;
        permanent
            && (wal_needed
                || ((*index).rd_createSubid == INVALID_SUBXACT
                    && first_relfilenode_subid(index) == INVALID_SUBXACT))
    }
}
