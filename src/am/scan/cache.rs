//! What a scan reads once and keeps for its rescans (a nested loop join rescans once per
//! outer row), and the rows it compares from memory: the pending rows and, once its
//! lookups are many, the rows of the small runs.

use crate::am::meta;
use crate::am::page::{self, Kind};
use crate::am::registry;
use crate::am::run;
use neardup_core::search::index_page::{Entry, Meta, Run, Tid};
use neardup_core::search::permuted::{GroupedTables, Layout};
use neardup_core::search::table_parts::Parts;
use neardup_core::search::within;
use pgrx::pg_sys;
use std::collections::HashMap;

/// A row of the index: its fingerprint (`None` when NULL) and heap TID.
pub type Row = (Option<u64>, Tid);

/// The pending rows in memory. The first probes compare them all; a scan rescanned more
/// often (a nested loop join) sorts them into the layout's permuted tables, so each further
/// probe costs a few binary searches instead of a pass over every pending row.
pub struct PendingRows {
    pub rows: Vec<Row>,
    /// The layout the rows are sorted into once rescans are many.
    layout: Layout,
    /// The fingerprints of `rows`, packed for the distance test (0 for NULL ones, which the
    /// test skips).
    fps: Vec<u64>,
    passes: u32,
    tables: Option<GroupedTables>,
}

/// Passes over every pending row before they are grouped into tables: grouping 8,000 rows
/// into 4 tables costs a backend about 0.5 ms, some 270 passes at radius 3 with AVX2 (0.23
/// ns a row), fewer with the popcount instruction alone (measured: with 32, 50 lookups
/// beside 8,000 pending rows cost 2.24 times a fresh index's, against 1.61 with this, both
/// before the pigeonhole test made a pass three times cheaper); once this many lookups, the
/// small runs are read into memory too.
pub const PASSES_BEFORE_SORTING: u32 = 256;

impl PendingRows {
    pub fn read(index: pg_sys::Relation, meta: &Meta) -> PendingRows {
        let pages = meta.pending.pages as usize + meta.sealed.pages as usize;
        let mut rows = Vec::with_capacity(pages * page::ENTRIES_PER_PAGE);
        for_each_pending(index, meta, |fp, tid| rows.push((fp, tid)));
        PendingRows::new(rows, meta.max_distance)
    }

    pub fn new(rows: Vec<Row>, max_distance: u32) -> PendingRows {
        let fps = rows.iter().map(|r| r.0.unwrap_or(0)).collect();
        let layout = Layout::for_rows(rows.len() as u64, max_distance)
            .unwrap_or_else(|e| pgrx::error!("hamming index metapage: {}", e.0));
        PendingRows {
            rows,
            layout,
            fps,
            passes: 0,
            tables: None,
        }
    }

    /// Calls `emit` with the rows within `radius` of `center` (and maybe others: the caller
    /// checks every ball), each at least once.
    pub fn probe(&mut self, center: u64, radius: u32, mut emit: impl FnMut(Row)) {
        let layout = &self.layout;
        if self.tables.is_none() && self.passes >= PASSES_BEFORE_SORTING {
            let items: Vec<(u64, u32)> = (0..self.rows.len() as u32)
                .filter_map(|i| self.rows[i as usize].0.map(|fp| (fp, i)))
                .collect();
            self.tables = Some(GroupedTables::new(layout, &items));
            pgrx::check_for_interrupts!();
        }
        match &self.tables {
            Some(tables) => {
                // A row sharing a prefix in several tables comes once per table.
                let mut found = Vec::new();
                tables.probe(layout, center, radius, |i| found.push(i));
                found.sort_unstable();
                found.dedup();
                found.into_iter().for_each(|i| emit(self.rows[i as usize]));
            }
            None => {
                for (chunk, fps) in self.rows.chunks(4096).zip(self.fps.chunks(4096)) {
                    pgrx::check_for_interrupts!();
                    within_radius(fps, center, radius, |i| {
                        if chunk[i].0.is_some() {
                            emit(chunk[i])
                        }
                    });
                }
                self.passes += 1;
            }
        }
    }
}

/// `within::within_radius` compiled for the best the CPU has: AVX2 (vectorized), the
/// popcount instruction (then counting every row is as fast), or neither.
pub fn within_radius(fps: &[u64], center: u64, radius: u32, emit: impl FnMut(usize)) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("popcnt")
        {
            // SAFETY: the CPU has the instructions the function is compiled for.
            return unsafe { within_radius_avx2(fps, center, radius, emit) };
        }
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: as above.
            return unsafe { within_radius_popcnt(fps, center, radius, emit) };
        }
    }
    within::within_radius(fps, center, radius, emit)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
unsafe fn within_radius_avx2(fps: &[u64], center: u64, radius: u32, emit: impl FnMut(usize)) {
    within::within_radius(fps, center, radius, emit)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn within_radius_popcnt(fps: &[u64], center: u64, radius: u32, emit: impl FnMut(usize)) {
    within::count_within_radius(fps, center, radius, emit)
}

/// Calls `emit` with each of `rows`, checking for interrupts every few thousand.
pub fn for_each_row_in(rows: &[Row], mut emit: impl FnMut(Row)) {
    for chunk in rows.chunks(4096) {
        pgrx::check_for_interrupts!();
        chunk.iter().copied().for_each(&mut emit);
    }
}

/// What a scan read once and its rescans reuse. Under an MVCC snapshot that is safe:
/// - a row inserted after the first read belongs to a transaction or command the snapshot
///   cannot see, and a row VACUUM has removed since was dead to it;
/// - runs merged away after the first read keep their pages until no snapshot as old as the
///   scan's exists;
/// - directory pages never change once written (VACUUM only removes leaf entries, so the
///   first keys they hold stay lower bounds: a descent cannot skip a match).
pub struct ScanCache {
    pin: MetaPin,
    pub meta: Meta,
    /// The layout of each run.
    pub layouts: Vec<Layout>,
    /// The parts each run's tables are stored in.
    pub parts: Vec<Parts>,
    pub pending: Option<PendingRows>,
    /// The rows of the small runs, read whole and sorted once lookups are many (see
    /// `SMALL_RUN_ROWS`).
    pub small_runs: Option<PendingRows>,
    /// Lookups this cache has served.
    pub lookups: u32,
    /// Directory pages read.
    pub directory: HashMap<u32, DirectoryPage>,
}

/// A directory page as a scan keeps it: its children, its level, and for the root of a
/// small table the bitmap of its keys' prefixes (`neardup_core::search::prefix_bitmap`).
pub struct DirectoryPage {
    pub contents: Vec<u8>,
    pub level: u16,
    pub prefixes: Option<Vec<u8>>,
}

impl DirectoryPage {
    /// The page `block` of run `owner`, from `directory` or read into it.
    pub fn cached(
        directory: &mut HashMap<u32, DirectoryPage>,
        index: pg_sys::Relation,
        block: u32,
        owner: u32,
    ) -> &DirectoryPage {
        directory.entry(block).or_insert_with(|| {
            let locked = page::read_owned(index, block, Kind::Directory, owner);
            // SAFETY: a locked directory page.
            unsafe {
                DirectoryPage {
                    contents: page::contents(locked.page()).to_vec(),
                    level: page::level(locked.page()),
                    prefixes: page::prefix_bitmap(locked.page()).map(<[u8]>::to_vec),
                }
            }
        })
    }
}

/// Block 1, pinned before a scan reads the metapage and for as long as the scan may read
/// what its copy of it names: a merge recycles garbage before the horizon allows only when
/// no scan pins it (`registry::no_scan_holds_an_older_metapage`). Released by `release`
/// (amendscan, or a non-MVCC rescan that reads the metapage anew); after an ERROR, the
/// resource owner releases it.
pub struct MetaPin(pg_sys::Buffer);

impl MetaPin {
    /// Pins block 1, then reads the metapage.
    pub fn read(index: pg_sys::Relation) -> (MetaPin, Meta) {
        let pin = MetaPin(registry::pin(index));
        (pin, meta::read(index))
    }

    pub fn release(&mut self) {
        if self.0 != pg_sys::InvalidBuffer as pg_sys::Buffer {
            // SAFETY: the pin taken in `read`, released once.
            unsafe { pg_sys::ReleaseBuffer(self.0) };
            self.0 = pg_sys::InvalidBuffer as pg_sys::Buffer;
        }
    }
}

impl ScanCache {
    fn new(index: pg_sys::Relation) -> ScanCache {
        let (pin, meta) = MetaPin::read(index);
        let (layouts, parts) = meta::layouts::<Layout>(&meta);
        ScanCache {
            pin,
            meta,
            layouts,
            parts,
            pending: None,
            small_runs: None,
            lookups: 0,
            directory: HashMap::new(),
        }
    }

    /// The cache a scan (or rescan) uses from its first fetch to its end: the one kept from
    /// before under an MVCC snapshot, else a fresh one.
    pub fn for_scan(
        kept: &mut Option<ScanCache>,
        index: pg_sys::Relation,
        mvcc: bool,
    ) -> &mut Self {
        if !mvcc {
            if let Some(old) = kept {
                old.release();
            }
            *kept = None;
        }
        kept.get_or_insert_with(|| ScanCache::new(index))
    }

    pub fn release(&mut self) {
        self.pin.release();
    }
}

impl ScanCache {
    /// Whether the pending rows were read into memory.
    pub fn has_pending_in_memory(&self) -> bool {
        self.pending.is_some()
    }

    /// The pending rows, read at the first use.
    pub fn pending(&mut self, index: pg_sys::Relation) -> &mut PendingRows {
        let meta = &self.meta;
        self.pending
            .get_or_insert_with(|| PendingRows::read(index, meta))
    }

    /// The rows of the runs compared from memory, read and sorted at the first use.
    pub fn small_runs(&mut self, index: pg_sys::Relation) -> &mut PendingRows {
        let (meta, layouts) = (&self.meta, &self.layouts);
        self.small_runs
            .get_or_insert_with(|| read_small_runs(index, meta, layouts))
    }
}

/// Runs of at most this many rows are read whole and sorted into tables in memory once a
/// scan has made `PASSES_BEFORE_SORTING` lookups (a nested loop join), which then cost a
/// few binary searches each; before that they are probed on disk, table by table, as the
/// large runs are. Comparing their rows one by one from a scan's second lookup on cost more
/// (measured in one session: 50 lookups into runs of 790 k and 8 k rows took 1.93 times a
/// fresh index's so, and 1.38 times probing the small run on disk).
const SMALL_RUN_ROWS: u64 = 16384;

/// Whether a run's rows are compared from memory once a scan's lookups are many: a small
/// run, unless a merge table by table is moving it (its table 0 may be in the new run
/// already, and its other tables still hold rows that must be probed there).
pub fn compared_from_memory(meta: &Meta, run: &Run) -> bool {
    run.rows <= SMALL_RUN_ROWS && !meta.in_merge(run.id)
}

/// The rows of the runs compared from memory (their table 0, permuted back).
fn read_small_runs(index: pg_sys::Relation, meta: &Meta, layouts: &[Layout]) -> PendingRows {
    let mut rows = Vec::new();
    for (run, layout) in meta.runs.iter().zip(layouts) {
        if compared_from_memory(meta, run) {
            let table = &layout.tables()[0];
            let parts = meta::parts(layout, run);
            run::for_each_table_entry(index, run, parts, 0, |e: Entry| {
                rows.push((Some(table.invert(e.key)), e.tid))
            });
        }
    }
    let mut small = PendingRows::new(rows, meta.max_distance);
    // Read only once lookups are many: sorted at once.
    small.passes = PASSES_BEFORE_SORTING;
    small
}

/// The pending rows: the open list and the sealed one being written as a run.
fn for_each_pending(index: pg_sys::Relation, meta: &Meta, mut emit: impl FnMut(Option<u64>, Tid)) {
    for list in [&meta.pending, &meta.sealed] {
        if list.id != 0 {
            run::for_each_pending(index, list.id, list.head, |e: Entry| {
                emit(e.fingerprint(), e.heap_tid())
            });
        }
    }
}
