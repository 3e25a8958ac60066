//! Byte layouts of the `hamming` index's pages, independent of PostgreSQL's buffer
//! manager: the binding layer places these bytes after the standard page header.
//!
//! The index is a log-structured merge of *runs*. A run is a full set of Manku's permuted
//! tables over the rows it holds, written once, sorted, and never changed again except by
//! VACUUM removing entries; each of its tables is a static B+-tree: leaf pages of entries
//! chained left to right, and directory pages above them holding the first key of each
//! child. New rows are appended to the *pending list*; past `pending_limit` it is sealed and
//! written as a run, and runs of similar size are merged into one (see `merge_policy`).
//! Pages of runs and lists merged away are *garbage* until no scan can read them any more,
//! then free for reuse.
//!
//! ```text
//!  every page (8 kB)
//!  +-----------------+----------------------------------+-------+--------------------+
//!  | PageHeaderData  | contents (grows up to pd_lower)   | free  | special: PageTail  |
//!  +-----------------+----------------------------------+-------+--------------------+
//!  (PageTail: next block, owner id, kind, tree; the owner is the id of the run or list
//!  the page belongs to, so that a page reused by another one is recognised; the tree is
//!  the index of a run page's tree in its run's trees)
//!
//!  metapage (block 0) contents: Meta, little-endian
//!  +-------+---------+--------------+---------+---------------+---------------+
//!  | magic | version | max_distance | next_id | pending List  | sealed List   |
//!  |  u32  |   u32   |     u32      |   u32   | 16 bytes      | 16 bytes      |
//!  +-------+---------+--------------+---------+---------------+---------------+
//!  | merging u32 | inputs u32 | spare u32 | runs u32 | garbage u32 |
//!  +-------------+------------+-----------+----------+-------------+
//!  | id u32 × inputs | block u32 × spare | Run × runs | Garbage × garbage |
//!  +-----------------+-------------------+------------+-------------------+
//!  merging: the id of the run a merge table by table is writing (0 when none) and inputs,
//!  the runs it merges (see `merge`); spare: free pages set aside for the pending list, so
//!  that inserts reuse space without searching the free space map; garbage: only in
//!  indexes written by format 2, whose metapage kept it (format 3 keeps it in the registry
//!  and moves format 2's there at its first merge)
//!  List:    id u32 | head u32 | tail u32 | pages u32      (id 0: no list)
//!  Run:     id u32 | blocks u32 | rows u64 | nulls head u32 | nulls pages u32 |
//!           trees u32 | Tree × trees
//!  Tree:    root u32 | first leaf u32 | leaves u32
//!  (a run's trees are its tables' parts, table by table: see `table_parts`; format 3
//!  and older store one tree per table)
//!  Garbage: since u64 (full transaction id) | what u32 (1 run, 2 list) | Run or List
//!
//!  registry page (block 1, and the pages chained after it) contents: packed Garbage
//!  records, what merges left behind until no snapshot can read it (any number of pages:
//!  a long-running snapshot holds garbage back, and the metapage must not fill up)
//!  +---------+---------+-----
//!  | Garbage | Garbage | ...
//!  +---------+---------+-----
//!
//!  leaf page / pending page contents: packed entries, sorted by (key, TID) on leaves
//!  (key = the code as that table orders it), in insertion order on pending pages
//!  (key = the code itself; a row whose code is NULL has key 0 and the NULL_ROW bit set
//!  in its offset, so ORDER BY scans can return it last). An index of 64-bit
//!  fingerprints has 14-byte entries: the key is the whole (permuted) fingerprint. An
//!  index of wider codes (R more words) has 14 + 8·R: the key is the first 64 bits of the
//!  code as the table orders it, `rest` the other words.
//!  +---------+-----------+------------+------------------+---------+-----
//!  | key u64 | block u32 | offset u16 | rest u64 × R     | key ... | ...
//!  +---------+-----------+------------+------------------+---------+-----
//!
//!  leaf page as columns (`LeafLayout::Columns`, marked in the page's special space;
//!  written for 64-bit fingerprints from format 5 on, for every code from format 6 on): the
//!  same n entries in the same bytes, as a column of codes (key, then rest) followed by a
//!  column of TIDs, so that a pass over a table, which tests every code and decodes few
//!  entries, reads only the codes: 8 of every 14 bytes for 64-bit fingerprints, 32 of every
//!  38 for 256-bit codes. Leaves written by older formats stay rows until a merge rewrites
//!  them.
//!  +---------+------------------+---------+-----+-----------+------------+-----------+---
//!  | key u64 | rest u64 × R     | key u64 | ... | block u32 | offset u16 | block ... | ..
//!  +---------+------------------+---------+-----+-----------+------------+-----------+---
//!  |<------------- n codes of 8·(1 + R) bytes -->|<--------------- n TIDs ---------------->|
//!
//!  directory page contents: packed 12-byte children, sorted by key (the root of a table of
//!  at most 338 leaves also holds the bitmap of its keys' prefixes at the end of the
//!  contents, where pd_upper points: see `prefix_bitmap`)
//!  +---------------+-------------+-----------+-----
//!  | first key u64 | child u32   | key ...   | ...
//!  +---------------+-------------+-----------+-----
//! ```
//!
//! A child's first key is the smallest key below it when written; VACUUM only removes
//! entries, so it stays a lower bound, and every key below a child is still smaller than
//! every key below the next: a descent cannot skip a match.

pub const MAGIC: u32 = 0x4E44_5550; // "NDUP"
/// The format written. Format 3 keeps garbage in registry pages (block 1 was an empty
/// "interlock" page in format 2); format 4 stores a run's table as several trees
/// (`table_parts`), which older builds would read as more tables; format 5 writes the
/// leaves of 64-bit fingerprints as columns (`LeafLayout`), which older builds would read
/// as wrong entries, and format 6 the leaves of wider codes too (which older builds take
/// for corrupt pages). An older index is read as it is and takes the format written at its
/// first change of the metapage; its leaves keep their layout until a merge rewrites them.
pub const VERSION: u32 = 6;
/// The oldest format this build reads, in place: format 2 (0.3.0 to 0.5.0) kept its garbage
/// in the metapage, which the first merge moves into the registry, and format 3 (0.6.0) is
/// format 4 with one tree per table; both take format 4 at their next change of the
/// metapage, and their runs keep one tree per table until a merge replaces them. Format 1
/// (0.2.0) kept one build and a pending list: 0.2.0's update to 0.3.0 rebuilds it.
pub const OLDEST_READABLE: u32 = 2;
/// Bytes of an entry of a 64-bit fingerprint (see [`entry_size`] for wider codes).
pub const ENTRY_SIZE: usize = 14;
/// Bytes of an entry that carries `rest` more words of its code.
pub const fn entry_size(rest: usize) -> usize {
    ENTRY_SIZE + 8 * rest
}

pub const CHILD_SIZE: usize = 12;
/// Bytes of contents an 8 kB page holds (after the 24-byte header, before the 16-byte
/// special space).
pub const PAGE_CONTENTS: usize = 8192 - 24 - 16;
pub const ENTRIES_PER_PAGE: usize = PAGE_CONTENTS / ENTRY_SIZE;
pub const CHILDREN_PER_PAGE: usize = PAGE_CONTENTS / CHILD_SIZE;
pub const NO_BLOCK: u32 = u32::MAX;
/// Set in a pending entry's offset when the row's fingerprint is NULL. Heap offsets never
/// reach it (at most a few hundred tuples fit on a page).
pub const NULL_ROW: u16 = 0x8000;

/// A heap tuple's location, as PostgreSQL's ItemPointer (block, 1-based offset).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Tid {
    pub block: u32,
    pub offset: u16,
}

impl Tid {
    /// The TID stored in the 6 bytes `bytes` begins with (block, then offset).
    #[inline]
    pub fn read(bytes: &[u8]) -> Tid {
        Tid {
            block: u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")),
            offset: u16::from_le_bytes([bytes[4], bytes[5]]),
        }
    }

    /// The heap tuple a stored TID points to (without the `NULL_ROW` mark).
    #[inline]
    pub fn heap(self) -> Tid {
        Tid {
            block: self.block,
            offset: self.offset & !NULL_ROW,
        }
    }
}

/// An index entry: a row's code as a table orders it (`key`, its first 64 bits, and `rest`,
/// the others: none for a 64-bit fingerprint) and the row's TID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<P: Rest = NoRest> {
    pub key: u64,
    pub tid: Tid,
    pub rest: P,
}

/// The words of a code after its first: none for a 64-bit fingerprint, `[u64; 3]` for a
/// 256-bit code.
pub trait Rest: Copy + Eq + Ord + std::fmt::Debug + 'static {
    const WORDS: usize;
    const ZERO: Self;
    fn words(&self) -> &[u64];
    fn from_fn(word: impl FnMut(usize) -> u64) -> Self;
}

impl<const N: usize> Rest for [u64; N] {
    const WORDS: usize = N;
    const ZERO: Self = [0; N];
    #[inline]
    fn words(&self) -> &[u64] {
        self
    }
    #[inline]
    fn from_fn(word: impl FnMut(usize) -> u64) -> Self {
        std::array::from_fn(word)
    }
}

/// The rest of a 64-bit fingerprint: nothing.
pub type NoRest = [u64; 0];

impl<P: Rest> Entry<P> {
    pub const SIZE: usize = entry_size(P::WORDS);

    /// The entry of a row whose code, as the table orders it, is (`key`, `rest`).
    pub fn new(key: u64, rest: P, tid: Tid) -> Entry<P> {
        Entry { key, tid, rest }
    }

    /// The pending entry of a row whose code is NULL.
    pub fn null_row(tid: Tid) -> Entry<P> {
        Entry {
            key: 0,
            tid: Tid {
                block: tid.block,
                offset: tid.offset | NULL_ROW,
            },
            rest: P::ZERO,
        }
    }

    /// Whether the row's code is NULL.
    #[inline]
    pub fn is_null(&self) -> bool {
        self.tid.offset & NULL_ROW != 0
    }

    /// The heap tuple the entry points to.
    #[inline]
    pub fn heap_tid(&self) -> Tid {
        self.tid.heap()
    }

    pub fn write(&self, out: &mut [u8]) {
        out[0..8].copy_from_slice(&self.key.to_le_bytes());
        out[8..12].copy_from_slice(&self.tid.block.to_le_bytes());
        out[12..14].copy_from_slice(&self.tid.offset.to_le_bytes());
        for (i, word) in self.rest.words().iter().enumerate() {
            out[ENTRY_SIZE + 8 * i..ENTRY_SIZE + 8 * i + 8].copy_from_slice(&word.to_le_bytes());
        }
    }

    #[inline]
    pub fn read(bytes: &[u8]) -> Entry<P> {
        let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
        Entry {
            key: u64_at(0),
            tid: Tid::read(&bytes[8..ENTRY_SIZE]),
            rest: P::from_fn(|i| u64_at(ENTRY_SIZE + 8 * i)),
        }
    }

    /// The order of entries on a leaf: by key, then TID (the rest of the code does not
    /// order them: a lookup reads a range of keys, and TIDs are unique in a table).
    #[inline]
    pub fn order(&self) -> (u64, Tid) {
        (self.key, self.tid)
    }
}

impl Entry {
    /// The row's fingerprint, `None` when it is NULL.
    #[inline]
    pub fn fingerprint(&self) -> Option<u64> {
        (!self.is_null()).then_some(self.key)
    }
}

/// The entries packed in a page's contents.
pub fn entries<P: Rest>(contents: &[u8]) -> impl Iterator<Item = Entry<P>> + '_ {
    contents.chunks_exact(Entry::<P>::SIZE).map(Entry::read)
}

/// How a leaf's entries are laid out: one after another (`Rows`: every leaf of formats 2
/// to 4, and the leaves of wider codes of format 5), or as a column of codes followed by a
/// column of TIDs (`Columns`: what format 6 writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeafLayout {
    Rows,
    Columns,
}

/// The entries of a leaf's contents, read in place in either layout.
#[derive(Clone, Copy)]
pub struct Leaf<'a, P: Rest = NoRest> {
    contents: &'a [u8],
    layout: LeafLayout,
    rest: std::marker::PhantomData<P>,
}

impl<'a, P: Rest> Leaf<'a, P> {
    /// Bytes of an entry's code in the column of codes.
    const CODE: usize = 8 * (1 + P::WORDS);

    /// The leaf whose contents are `contents`, laid out as `layout`.
    pub fn new(contents: &'a [u8], layout: LeafLayout) -> Leaf<'a, P> {
        Leaf {
            contents,
            layout,
            rest: std::marker::PhantomData,
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.contents.len() / Entry::<P>::SIZE
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    fn word_at(&self, at: usize) -> u64 {
        u64::from_le_bytes(self.contents[at..at + 8].try_into().expect("8 bytes"))
    }

    /// The key of entry `i`.
    #[inline]
    pub fn key(&self, i: usize) -> u64 {
        match self.layout {
            LeafLayout::Rows => self.word_at(i * Entry::<P>::SIZE),
            LeafLayout::Columns => self.word_at(i * Self::CODE),
        }
    }

    /// Copies the keys of entries `from..from + out.len()` into `out`.
    #[inline(always)]
    pub fn copy_keys(&self, from: usize, out: &mut [u64]) {
        match self.layout {
            LeafLayout::Rows => {
                let size = Entry::<P>::SIZE;
                let rows = self.contents[from * size..].chunks_exact(size);
                for (key, bytes) in out.iter_mut().zip(rows) {
                    *key = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
                }
            }
            LeafLayout::Columns => {
                let codes = &self.contents[from * Self::CODE..(from + out.len()) * Self::CODE];
                for (key, bytes) in out.iter_mut().zip(codes.chunks_exact(Self::CODE)) {
                    *key = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
                }
            }
        }
    }

    /// The key column of a leaf of 64-bit fingerprints laid out as columns, read in place
    /// as words where that reads them right: on a little-endian CPU, the column aligned (a
    /// page's contents are). `None` otherwise; `copy_keys` then reads them.
    #[inline(always)]
    pub fn key_words(&self) -> Option<&'a [u64]> {
        if self.layout != LeafLayout::Columns || P::WORDS != 0 || cfg!(target_endian = "big") {
            return None;
        }
        let column = &self.contents[..8 * self.len()];
        #[allow(unsafe_code)]
        // SAFETY: every bit pattern is a valid u64, and `align_to` only takes the aligned
        // middle of the column.
        let (head, words, tail) = unsafe { column.align_to::<u64>() };
        (head.is_empty() && tail.is_empty()).then_some(words)
    }

    /// Entry `i`, decoded.
    #[inline]
    pub fn entry(&self, i: usize) -> Entry<P> {
        match self.layout {
            LeafLayout::Rows => Entry::read(&self.contents[i * Entry::<P>::SIZE..]),
            LeafLayout::Columns => {
                let code = i * Self::CODE;
                Entry {
                    key: self.word_at(code),
                    tid: Tid::read(&self.contents[tid_at(self.len(), Entry::<P>::SIZE, i)..]),
                    rest: P::from_fn(|w| self.word_at(code + 8 + 8 * w)),
                }
            }
        }
    }

    /// The entries from the `from`th on, in order.
    pub fn entries_from(self, from: usize) -> impl Iterator<Item = Entry<P>> + 'a {
        (from..self.len()).map(move |i| self.entry(i))
    }

    /// Every entry, in order.
    pub fn entries(self) -> impl Iterator<Item = Entry<P>> + 'a {
        self.entries_from(0)
    }

    /// Index of the first entry whose key is at least `key` (entries sorted by key).
    ///
    /// Keys are permuted fingerprints, spread evenly over a page's range, so a few steps of
    /// interpolation land next to the answer; each step reads three keys where a binary
    /// search's ten would each miss the cache. Skewed pages (a spike of shared prefixes)
    /// fall back to the binary search after those steps.
    pub fn lower_bound(&self, key: u64) -> usize {
        lower_bound_by(self.len(), key, |i| self.key(i))
    }

    /// Bytes from one entry's code to the next one's.
    #[inline(always)]
    fn code_stride(&self) -> usize {
        match self.layout {
            LeafLayout::Rows => Entry::<P>::SIZE,
            LeafLayout::Columns => Self::CODE,
        }
    }

    /// Bytes from the start of the contents up to the end of the last code: what a test
    /// of every code reads.
    fn code_bytes(&self) -> usize {
        self.len() * self.code_stride()
    }

    /// The leaf's bytes and layout (`Leaf::new` of them reads it again).
    pub fn contents(&self) -> (&'a [u8], LeafLayout) {
        (self.contents, self.layout)
    }

    /// Calls `emit` with each entry from the `from`th on whose code is within `radius` bits
    /// of `center`, up to the first key above `last_key`; returns whether every key was at
    /// most `last_key` (the range may go on in the next leaf). Codes and center are in a
    /// table's order: a rotation keeps distances, so an entry is decoded whole only when it
    /// is near. A lookup of a wide code tests tens of thousands of entries for a few
    /// matches, a pass nearest first every entry of a table; always inlined, so that a
    /// caller compiled for the CPU's popcount instruction counts with it. `ahead` is called
    /// with the offset of each 64-byte line of the contents as the test reaches it: a pass
    /// asks for the same line of the leaf it reads next.
    #[inline(always)]
    pub fn entries_within(
        &self,
        from: usize,
        last_key: u64,
        center: (u64, P),
        radius: u32,
        mut ahead: impl FnMut(usize),
        mut emit: impl FnMut(Entry<P>),
    ) -> bool {
        let word_at = |bytes: &[u8], at: usize| {
            u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
        };
        // Where an entry's first word of the rest is in the bytes of its code.
        let (codes, stride) = (&self.contents[..self.code_bytes()], self.code_stride());
        let rest_at = match self.layout {
            LeafLayout::Rows => ENTRY_SIZE,
            LeafLayout::Columns => 8,
        };
        let mut line = from * stride;
        for (i, bytes) in codes.chunks_exact(stride).enumerate().skip(from) {
            while line < (i + 1) * stride {
                ahead(line);
                line += 64;
            }
            let key = word_at(bytes, 0);
            if key > last_key {
                return false;
            }
            let rest: u32 = (center.1.words().iter().enumerate())
                .map(|(w, c)| (word_at(bytes, rest_at + 8 * w) ^ c).count_ones())
                .sum();
            if (key ^ center.0).count_ones() + rest <= radius {
                emit(self.entry(i));
            }
        }
        true
    }
}

/// Writes `rows`, entries of `size` bytes packed one after another, into `out` as the
/// columns of a leaf (`out` as long as `rows`).
pub fn write_columns(rows: &[u8], size: usize, out: &mut [u8]) {
    let (n, code) = (rows.len() / size, size - 6);
    debug_assert_eq!(out.len(), n * size);
    let (codes, tids) = out.split_at_mut(code * n);
    for ((row, c), tid) in rows
        .chunks_exact(size)
        .zip(codes.chunks_exact_mut(code))
        .zip(tids.chunks_exact_mut(6))
    {
        c[..8].copy_from_slice(&row[..8]);
        c[8..].copy_from_slice(&row[ENTRY_SIZE..]);
        tid.copy_from_slice(&row[8..ENTRY_SIZE]);
    }
}

/// Where the TID of entry `i` of `n` entries of `size` bytes laid out as columns starts:
/// in the column after the codes.
fn tid_at(n: usize, size: usize, i: usize) -> usize {
    (size - 6) * n + 6 * i
}

/// The TIDs of the entries of `size` bytes packed in `contents` in `layout`, in order:
/// what VACUUM tests, without decoding the entries.
pub fn tids(contents: &[u8], size: usize, layout: LeafLayout) -> impl Iterator<Item = Tid> + '_ {
    let n = contents.len() / size;
    (0..n).map(move |i| {
        let at = match layout {
            LeafLayout::Rows => i * size + 8,
            LeafLayout::Columns => tid_at(n, size, i),
        };
        Tid::read(&contents[at..])
    })
}

/// The entries of `size` bytes of a leaf laid out as columns, as rows (`write_columns`
/// undone).
pub fn rows_of_columns(columns: &[u8], size: usize) -> Vec<u8> {
    let (n, code) = (columns.len() / size, size - 6);
    let (codes, tids) = columns.split_at(code * n);
    let mut rows = vec![0u8; n * size];
    for ((row, c), tid) in rows
        .chunks_exact_mut(size)
        .zip(codes.chunks_exact(code))
        .zip(tids.chunks_exact(6))
    {
        row[..8].copy_from_slice(&c[..8]);
        row[8..ENTRY_SIZE].copy_from_slice(tid);
        row[ENTRY_SIZE..].copy_from_slice(&c[8..]);
    }
    rows
}

/// `Leaf::lower_bound` over `n` sorted keys read by `key_at`.
fn lower_bound_by(n: usize, key: u64, key_at: impl Fn(usize) -> u64) -> usize {
    // The answer is in lo..=hi, and the key at hi (if any) is at least `key`.
    let (mut lo, mut hi) = (0, n);
    for _ in 0..3 {
        if hi - lo <= 16 {
            break;
        }
        let (first, last) = (key_at(lo), key_at(hi - 1));
        if key <= first {
            return lo;
        }
        if key > last {
            return hi;
        }
        let guess =
            lo + ((key - first) as u128 * (hi - 1 - lo) as u128 / (last - first) as u128) as usize;
        if key_at(guess) < key {
            lo = guess + 1;
        } else {
            hi = guess;
        }
    }
    first_at_least(lo, hi, key, key_at)
}

/// The first position in `lo..hi` whose key is at least `key` (`hi` if none), the keys
/// being sorted: a binary search.
fn first_at_least(mut lo: usize, mut hi: usize, key: u64, key_at: impl Fn(usize) -> u64) -> usize {
    while lo < hi {
        let mid = (lo + hi) / 2;
        if key_at(mid) < key {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// A directory page's children: (first key, child block), sorted by key.
pub fn children(contents: &[u8]) -> impl Iterator<Item = (u64, u32)> + '_ {
    contents.chunks_exact(CHILD_SIZE).map(|c| {
        (
            u64::from_le_bytes(c[0..8].try_into().expect("8 bytes")),
            u32::from_le_bytes(c[8..12].try_into().expect("4 bytes")),
        )
    })
}

pub fn write_child(out: &mut [u8], key: u64, child: u32) {
    out[0..8].copy_from_slice(&key.to_le_bytes());
    out[8..12].copy_from_slice(&child.to_le_bytes());
}

/// The child to descend into for the first key at least `key`: the last child whose first
/// key is below it (keys equal to `key` may end the child before the one starting with
/// it), or the first child.
pub fn child_for(contents: &[u8], key: u64) -> Option<u32> {
    let n = contents.len() / CHILD_SIZE;
    let key_at = |i: usize| {
        u64::from_le_bytes(
            contents[i * CHILD_SIZE..i * CHILD_SIZE + 8]
                .try_into()
                .expect("8 bytes"),
        )
    };
    let at = first_at_least(0, n, key, key_at).saturating_sub(1);
    (at < n).then(|| {
        u32::from_le_bytes(
            contents[at * CHILD_SIZE + 8..at * CHILD_SIZE + 12]
                .try_into()
                .expect("4 bytes"),
        )
    })
}

/// One permuted table of a run: a static B+-tree (`root` is a directory page, or
/// `NO_BLOCK` when the table is empty).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tree {
    pub root: u32,
    pub first_leaf: u32,
    pub leaves: u32,
}

impl Tree {
    pub const EMPTY: Tree = Tree {
        root: NO_BLOCK,
        first_leaf: NO_BLOCK,
        leaves: 0,
    };
}

/// A set of permuted tables over `rows` rows, with the layout of `blocks` blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    pub id: u32,
    pub blocks: u32,
    /// Rows with a fingerprint (each is in every table).
    pub rows: u64,
    /// The chain of pending pages holding the rows whose fingerprint is NULL.
    pub nulls_head: u32,
    pub nulls_pages: u32,
    /// Each table's trees, table by table (`table_parts`).
    pub trees: Vec<Tree>,
}

/// A chain of pending pages (`head`/`tail` are `NO_BLOCK` when it has none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct List {
    pub id: u32,
    pub head: u32,
    pub tail: u32,
    pub pages: u32,
}

impl List {
    /// The most rows its pages hold (all full): what inserters and merges compare with
    /// `pending_limit`, read off the metapage alone.
    pub fn row_capacity(&self, entry_size: usize) -> u64 {
        self.pages as u64 * (PAGE_CONTENTS / entry_size) as u64
    }

    pub fn empty(id: u32) -> List {
        List {
            id,
            head: NO_BLOCK,
            tail: NO_BLOCK,
            pages: 0,
        }
    }
}

/// What a merge left behind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dead {
    Run(Run),
    List(List),
}

impl Dead {
    pub fn id(&self) -> u32 {
        match self {
            Dead::Run(r) => r.id,
            Dead::List(l) => l.id,
        }
    }
}

/// Pages no longer referenced, but which scans that started before `since` (a full
/// transaction id) may still read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Garbage {
    pub since: u64,
    pub dead: Dead,
}

impl Garbage {
    /// Bytes of its record (in a registry page, or a format 2 metapage).
    pub fn encoded_len(&self) -> usize {
        12 + match &self.dead {
            Dead::Run(r) => run_len(r),
            Dead::List(_) => 16,
        }
    }

    /// Appends its record to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        let at = out.len();
        out.resize(at + self.encoded_len(), 0);
        Writer {
            out: &mut out[at..],
            at: 0,
        }
        .garbage(self);
    }

    /// The records packed in a registry page's contents.
    pub fn read_all(bytes: &[u8]) -> Result<Vec<Garbage>, MetaError> {
        let mut r = Reader { bytes, at: 0 };
        let mut out = Vec::new();
        while r.at < bytes.len() {
            out.push(r.garbage()?);
        }
        Ok(out)
    }
}

fn run_len(r: &Run) -> usize {
    28 + 12 * r.trees.len()
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    pub max_distance: u32,
    /// The id the next run or list gets (ids start at 1; 0 means none).
    pub next_id: u32,
    /// Where inserts append.
    pub pending: List,
    /// A pending list being written as a run (id 0 when none): scans still read it.
    pub sealed: List,
    /// The id of the run a merge is writing (0 when none): its pages are not free.
    pub merging: u32,
    /// The runs that merge is merging table by table: while it runs, the tables it has
    /// written are in the new run and no longer in these (a lookup probes each table of
    /// each row once either way).
    pub merge_inputs: Vec<u32>,
    /// Free pages set aside for the pending list.
    pub spare: Vec<u32>,
    /// Largest first.
    pub runs: Vec<Run>,
    pub garbage: Vec<Garbage>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaError(pub String);

impl Meta {
    /// The metapage of an index with no rows.
    pub fn new(max_distance: u32) -> Meta {
        Meta {
            max_distance,
            next_id: 2,
            pending: List::empty(1),
            sealed: List::empty(0),
            merging: 0,
            merge_inputs: Vec::new(),
            spare: Vec::new(),
            runs: Vec::new(),
            garbage: Vec::new(),
        }
    }

    /// A new id for a run or a list.
    pub fn take_id(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id = self.next_id.checked_add(1).unwrap_or(1).max(1);
        id
    }

    /// Whether run `id` takes part in the merge table by table under way (the new run or one
    /// of its inputs): between two trees its rows are spread over these runs' tables, each
    /// tree of each table in one of them, so the runs are read together or not at all.
    pub fn in_merge(&self, id: u32) -> bool {
        id == self.merging || self.merge_inputs.contains(&id)
    }

    /// Rows in the runs.
    pub fn run_rows(&self) -> u64 {
        self.runs.iter().map(|r| r.rows).sum()
    }

    /// Pending pages (open and sealed lists).
    pub fn pending_pages(&self) -> u32 {
        self.pending.pages + self.sealed.pages
    }

    /// Whether a page owned by `owner` is in use: it belongs to a pending list, to the run
    /// being written, or to a run or garbage (the metapage's, or `registry`) that still has
    /// the page's tree (`Some(t)` for a leaf or directory page) or NULL rows (`None` for a
    /// pending page). Anything else is free, whatever the free space map says.
    pub fn in_use(&self, registry: &[Garbage], owner: u32, tree: Option<u16>) -> bool {
        let run_has = |r: &Run| match tree {
            Some(t) => r
                .trees
                .get(t as usize)
                .is_some_and(|tree| tree.root != NO_BLOCK),
            None => r.nulls_head != NO_BLOCK,
        };
        owner == self.pending.id
            || (owner == self.sealed.id && owner != 0)
            || (owner == self.merging && owner != 0)
            || self.runs.iter().any(|r| r.id == owner && run_has(r))
            || self.garbage.iter().chain(registry).any(|g| match &g.dead {
                Dead::Run(r) => r.id == owner && run_has(r),
                Dead::List(l) => l.id == owner,
            })
    }

    pub fn encoded_len(&self) -> usize {
        16 + 32
            + 16
            + 4
            + 4 * self.merge_inputs.len()
            + 4 * self.spare.len()
            + self.runs.iter().map(run_len).sum::<usize>()
            + self.garbage.iter().map(Garbage::encoded_len).sum::<usize>()
    }

    pub fn write(&self, out: &mut [u8]) {
        let mut w = Writer { out, at: 0 };
        for v in [MAGIC, VERSION, self.max_distance, self.next_id] {
            w.u32(v);
        }
        w.list(&self.pending);
        w.list(&self.sealed);
        w.u32(self.merging);
        w.u32(self.merge_inputs.len() as u32);
        w.u32(self.spare.len() as u32);
        w.u32(self.runs.len() as u32);
        w.u32(self.garbage.len() as u32);
        for &b in self.merge_inputs.iter().chain(&self.spare) {
            w.u32(b);
        }
        for r in &self.runs {
            w.run(r);
        }
        for g in &self.garbage {
            w.garbage(g);
        }
    }

    /// Only the open pending list, for inserts (the whole metapage is read far less often).
    pub fn read_pending(bytes: &[u8]) -> Result<List, MetaError> {
        let mut r = Reader { bytes, at: 0 };
        Meta::check_header(r.u32()?, r.u32()?)?;
        r.at = Meta::PENDING_AT;
        r.list()
    }

    fn check_header(magic: u32, version: u32) -> Result<(), MetaError> {
        if magic != MAGIC {
            return Err(MetaError(format!(
                "not a hamming index metapage (magic {magic:#x})"
            )));
        }
        if !(OLDEST_READABLE..=VERSION).contains(&version) {
            return Err(MetaError(format!(
                "hamming index format {version}, this build reads {OLDEST_READABLE} to {VERSION}: REINDEX it"
            )));
        }
        Ok(())
    }

    /// Where `write` puts the open pending list.
    const PENDING_AT: usize = 16;

    pub fn read(bytes: &[u8]) -> Result<Meta, MetaError> {
        let mut r = Reader { bytes, at: 0 };
        Meta::check_header(r.u32()?, r.u32()?)?;
        let (max_distance, next_id) = (r.u32()?, r.u32()?);
        let (pending, sealed) = (r.list()?, r.list()?);
        let (merging, inputs, spare) = (r.u32()?, r.u32()?, r.u32()?);
        let (runs, garbage) = (r.u32()?, r.u32()?);
        if inputs as usize + spare as usize > PAGE_CONTENTS / 4 {
            return Err(MetaError(format!("{inputs} inputs, {spare} spare pages")));
        }
        let merge_inputs = (0..inputs).map(|_| r.u32()).collect::<Result<_, _>>()?;
        let spare = (0..spare).map(|_| r.u32()).collect::<Result<_, _>>()?;
        let runs = (0..runs).map(|_| r.run()).collect::<Result<_, _>>()?;
        let garbage = (0..garbage)
            .map(|_| r.garbage())
            .collect::<Result<_, _>>()?;
        Ok(Meta {
            max_distance,
            next_id,
            pending,
            sealed,
            merging,
            merge_inputs,
            spare,
            runs,
            garbage,
        })
    }
}

struct Writer<'a> {
    out: &'a mut [u8],
    at: usize,
}

impl Writer<'_> {
    fn u32(&mut self, v: u32) {
        self.out[self.at..self.at + 4].copy_from_slice(&v.to_le_bytes());
        self.at += 4;
    }
    fn u64(&mut self, v: u64) {
        self.out[self.at..self.at + 8].copy_from_slice(&v.to_le_bytes());
        self.at += 8;
    }
    fn list(&mut self, l: &List) {
        for v in [l.id, l.head, l.tail, l.pages] {
            self.u32(v);
        }
    }
    fn garbage(&mut self, g: &Garbage) {
        self.u64(g.since);
        match &g.dead {
            Dead::Run(r) => {
                self.u32(1);
                self.run(r);
            }
            Dead::List(l) => {
                self.u32(2);
                self.list(l);
            }
        }
    }
    fn run(&mut self, r: &Run) {
        self.u32(r.id);
        self.u32(r.blocks);
        self.u64(r.rows);
        self.u32(r.nulls_head);
        self.u32(r.nulls_pages);
        self.u32(r.trees.len() as u32);
        for t in &r.trees {
            for v in [t.root, t.first_leaf, t.leaves] {
                self.u32(v);
            }
        }
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], MetaError> {
        let slice = self
            .bytes
            .get(self.at..self.at + N)
            .ok_or_else(|| MetaError("truncated metapage".into()))?;
        self.at += N;
        Ok(slice.try_into().expect("N bytes"))
    }
    fn u32(&mut self) -> Result<u32, MetaError> {
        self.take::<4>().map(u32::from_le_bytes)
    }
    fn u64(&mut self) -> Result<u64, MetaError> {
        self.take::<8>().map(u64::from_le_bytes)
    }
    fn list(&mut self) -> Result<List, MetaError> {
        Ok(List {
            id: self.u32()?,
            head: self.u32()?,
            tail: self.u32()?,
            pages: self.u32()?,
        })
    }
    fn garbage(&mut self) -> Result<Garbage, MetaError> {
        let since = self.u64()?;
        let dead = match self.u32()? {
            1 => Dead::Run(self.run()?),
            2 => Dead::List(self.list()?),
            other => return Err(MetaError(format!("unknown garbage kind {other}"))),
        };
        Ok(Garbage { since, dead })
    }
    fn run(&mut self) -> Result<Run, MetaError> {
        let (id, blocks, rows) = (self.u32()?, self.u32()?, self.u64()?);
        let (nulls_head, nulls_pages) = (self.u32()?, self.u32()?);
        let trees = self.u32()?;
        let most = crate::search::permuted::MAX_TABLES * crate::search::table_parts::MAX_PARTS;
        if trees as usize > most {
            return Err(MetaError(format!("a run with {trees} trees")));
        }
        let trees = (0..trees)
            .map(|_| {
                Ok(Tree {
                    root: self.u32()?,
                    first_leaf: self.u32()?,
                    leaves: self.u32()?,
                })
            })
            .collect::<Result<_, MetaError>>()?;
        Ok(Run {
            id,
            blocks,
            rows,
            nulls_head,
            nulls_pages,
            trees,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ten entries with keys 0, 10, .., 90 and `rest` words derived from the key, written to
    /// a page's contents, read back and searched.
    fn round_trip<P: Rest>() {
        let es: Vec<Entry<P>> = (0..10u64)
            .map(|i| {
                let tid = Tid {
                    block: i as u32 + 7,
                    offset: 3,
                };
                Entry::new(i * 10, P::from_fn(|w| i << 8 | w as u64), tid)
            })
            .collect();
        let size = Entry::<P>::SIZE;
        let mut buf = vec![0u8; es.len() * size];
        for (i, e) in es.iter().enumerate() {
            e.write(&mut buf[i * size..]);
        }
        assert_eq!(entries::<P>(&buf).collect::<Vec<_>>(), es);
        assert_eq!(Leaf::<P>::new(&buf, LeafLayout::Rows).lower_bound(0), 0);
        assert_eq!(Leaf::<P>::new(&buf, LeafLayout::Rows).lower_bound(15), 2);
        assert_eq!(Leaf::<P>::new(&buf, LeafLayout::Rows).lower_bound(20), 2);
        assert_eq!(Leaf::<P>::new(&buf, LeafLayout::Rows).lower_bound(1000), 10);
    }

    #[test]
    fn entries_round_trip_and_search() {
        round_trip::<NoRest>();
        round_trip::<[u64; 1]>();
        round_trip::<[u64; 3]>();
        assert_eq!(
            (Entry::<NoRest>::SIZE, Entry::<[u64; 3]>::SIZE),
            (ENTRY_SIZE, 38)
        );
    }

    /// The first `len` bytes of `words`, in place (little-endian words: their bytes in
    /// memory are the bytes they were made from).
    fn words_as_bytes(words: &[u64], len: usize) -> &[u8] {
        #[allow(unsafe_code)]
        // SAFETY: a u64 slice is readable as bytes; `len` is within it.
        unsafe {
            std::slice::from_raw_parts(words.as_ptr() as *const u8, len.min(words.len() * 8))
        }
    }

    /// A leaf written as columns reads as the same entries as the rows it was written
    /// from, for codes of every width: every entry, key and copied key run, and the same
    /// lower bounds; undone, the columns give the rows back.
    #[test]
    fn a_leaf_as_columns_reads_as_its_rows() {
        fn check<P: Rest>() {
            let mut x = 0x2545_f491_4f6c_dd1du64;
            let mut next = || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            let size = Entry::<P>::SIZE;
            for n in [0, 1, 2, 7, 64, 65, PAGE_CONTENTS / size] {
                let mut es: Vec<Entry<P>> = (0..n)
                    .map(|_| {
                        let r = next();
                        let tid = Tid {
                            block: (r >> 16) as u32,
                            offset: r as u16 & 0x7fff,
                        };
                        // A few repeated keys, as exact copies make.
                        Entry::new(next() >> (r % 3 * 20), P::from_fn(|_| next()), tid)
                    })
                    .collect();
                es.sort_by_key(Entry::order);
                let mut rows = vec![0u8; n * size];
                for (e, bytes) in es.iter().zip(rows.chunks_exact_mut(size)) {
                    e.write(bytes);
                }
                let mut columns = vec![0u8; rows.len()];
                write_columns(&rows, size, &mut columns);
                if n > 1 {
                    assert_ne!(columns, rows, "{n} entries");
                }
                assert_eq!(rows_of_columns(&columns, size), rows);
                check_leaf(&es, &rows, &columns);
            }
        }
        check::<NoRest>();
        check::<[u64; 1]>();
        check::<[u64; 3]>();
    }

    /// `a_leaf_as_columns_reads_as_its_rows` for `es` written as `rows` and as `columns`.
    fn check_leaf<P: Rest>(es: &[Entry<P>], rows: &[u8], columns: &[u8]) {
        let n = es.len();
        let (by_rows, by_columns) = (
            Leaf::<P>::new(rows, LeafLayout::Rows),
            Leaf::<P>::new(columns, LeafLayout::Columns),
        );
        assert_eq!(by_columns.len(), n);
        assert_eq!(by_rows.key_words(), None);
        let tids: Vec<Tid> = es.iter().map(|e| e.tid).collect();
        let size = Entry::<P>::SIZE;
        assert_eq!(
            super::tids(rows, size, LeafLayout::Rows).collect::<Vec<_>>(),
            tids
        );
        assert_eq!(
            super::tids(columns, size, LeafLayout::Columns).collect::<Vec<_>>(),
            tids
        );
        // Only the codes: what a pass reads.
        assert_eq!(by_columns.code_bytes(), n * 8 * (1 + P::WORDS));
        assert_eq!(by_rows.code_bytes(), rows.len());
        // The columns in a Vec<u64>, aligned as a page's contents are.
        let aligned: Vec<u64> = columns
            .chunks(8)
            .map(|chunk| {
                let mut word = [0u8; 8];
                word[..chunk.len()].copy_from_slice(chunk);
                u64::from_le_bytes(word)
            })
            .collect();
        let in_place = words_as_bytes(&aligned, columns.len());
        let keys: Vec<u64> = es.iter().map(|e| e.key).collect();
        if cfg!(target_endian = "little") {
            let in_place = Leaf::<P>::new(in_place, LeafLayout::Columns);
            let words = (P::WORDS == 0).then_some(&keys[..]);
            assert_eq!(in_place.key_words(), words);
            assert_eq!(in_place.entries().collect::<Vec<_>>(), es);
        }
        assert_eq!(by_columns.entries().collect::<Vec<_>>(), es);
        assert_eq!(by_rows.entries().collect::<Vec<_>>(), es);
        for from in [0, n / 3, n.saturating_sub(1)]
            .into_iter()
            .filter(|&f| f < n)
        {
            let mut a = vec![0u64; n - from];
            let mut b = vec![1u64; n - from];
            by_rows.copy_keys(from, &mut a);
            by_columns.copy_keys(from, &mut b);
            assert_eq!(a, b);
            assert_eq!(a[0], es[from].key);
            assert_eq!(by_columns.entries_from(from).next(), Some(es[from]));
        }
        for e in es.iter().step_by(5) {
            for key in [e.key.wrapping_sub(1), e.key, e.key.wrapping_add(1)] {
                let linear = es.iter().take_while(|f| f.key < key).count();
                assert_eq!(by_columns.lower_bound(key), linear);
                assert_eq!(by_rows.lower_bound(key), linear);
            }
        }
    }

    #[test]
    fn lower_bound_equals_a_linear_search_on_even_skewed_and_repeated_keys() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for shape in 0..4 {
            let mut keys: Vec<u64> = (0..583)
                .map(|i| match shape {
                    0 => next(),
                    1 => next() >> 40, // a narrow range
                    2 => {
                        if i % 7 == 0 {
                            next()
                        } else {
                            5
                        }
                    } // mostly one key
                    _ => (i as u64).pow(5), // polynomial skew
                })
                .collect();
            keys.sort_unstable();
            let mut buf = vec![0u8; keys.len() * ENTRY_SIZE];
            for (i, &key) in keys.iter().enumerate() {
                let tid = Tid {
                    block: 1,
                    offset: 1,
                };
                Entry::new(key, NoRest::ZERO, tid).write(&mut buf[i * ENTRY_SIZE..]);
            }
            let mut queries: Vec<u64> = keys.clone();
            queries.extend(keys.iter().map(|k| k.wrapping_add(1)));
            queries.extend([0, u64::MAX, 4, 6]);
            queries.extend((0..200).map(|_| next()));
            for q in queries {
                let expected = keys.iter().position(|&k| k >= q).unwrap_or(keys.len());
                assert_eq!(
                    Leaf::<NoRest>::new(&buf, LeafLayout::Rows).lower_bound(q),
                    expected,
                    "shape {shape} key {q}"
                );
            }
        }
    }

    #[test]
    fn entries_within_equals_a_decode_of_every_entry() {
        fn check<P: Rest>() {
            let mut x = 0x2545_f491_4f6c_dd1du64;
            let mut next = move || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            // codes near a center (a few bits off) among random ones, sorted by key
            let center = (next(), P::from_fn(|_| next()));
            let mut es: Vec<Entry<P>> = (0..300u16)
                .map(|i| {
                    let tid = Tid {
                        block: 3,
                        offset: i + 1,
                    };
                    if i % 3 == 0 {
                        let mut flip = |w: u64| w ^ (1 << (next() % 64)) ^ (1 << (next() % 64));
                        let rest = P::from_fn(|j| flip(center.1.words()[j]));
                        Entry::new(flip(center.0), rest, tid)
                    } else {
                        Entry::new(next(), P::from_fn(|_| next()), tid)
                    }
                })
                .collect();
            es.sort_by_key(|e| e.order());
            let mut buf = vec![0u8; es.len() * Entry::<P>::SIZE];
            for (i, e) in es.iter().enumerate() {
                e.write(&mut buf[i * Entry::<P>::SIZE..]);
            }
            let distance = |e: &Entry<P>| {
                (e.key ^ center.0).count_ones()
                    + (e.rest.words().iter().zip(center.1.words()))
                        .map(|(a, b)| (a ^ b).count_ones())
                        .sum::<u32>()
            };
            let mut columns = vec![0u8; buf.len()];
            write_columns(&buf, Entry::<P>::SIZE, &mut columns);
            let leaves = [
                Leaf::<P>::new(&buf, LeafLayout::Rows),
                Leaf::<P>::new(&columns, LeafLayout::Columns),
            ];
            for (leaf, radius, last_key, from) in leaf_cases(&leaves, &es) {
                let mut found = Vec::new();
                let mut lines = Vec::new();
                let all = leaf.entries_within(
                    from,
                    last_key,
                    center,
                    radius,
                    |line| lines.push(line),
                    |e| found.push(e),
                );
                // Each line of the codes once, in order, up to the last entry tested.
                let stride = match leaf.contents().1 {
                    LeafLayout::Rows => Entry::<P>::SIZE,
                    LeafLayout::Columns => 8 * (1 + P::WORDS),
                };
                let tested = (es[from..].iter().position(|e| e.key > last_key))
                    .map_or(es.len(), |p| from + p + 1);
                let expected: Vec<usize> = (from * stride..tested * stride).step_by(64).collect();
                assert_eq!(lines, expected, "from {from} last key {last_key}");
                let expected: Vec<_> = (es[from..].iter())
                    .take_while(|e| e.key <= last_key)
                    .filter(|e| distance(e) <= radius)
                    .copied()
                    .collect();
                assert_eq!(
                    found, expected,
                    "radius {radius} last key {last_key} from {from}"
                );
                assert_eq!(all, es[from..].iter().all(|e| e.key <= last_key));
            }
        }
        check::<NoRest>();
        check::<[u64; 1]>();
        check::<[u64; 3]>();
    }

    /// Each leaf of `leaves` with each radius, last key and first entry that
    /// `entries_within_equals_a_decode_of_every_entry` tries on entries `es`.
    fn leaf_cases<'a, P: Rest>(
        leaves: &'a [Leaf<'a, P>],
        es: &'a [Entry<P>],
    ) -> impl Iterator<Item = (&'a Leaf<'a, P>, u32, u64, usize)> + 'a {
        let radii = [0, 2, 4, 8, 30, 64 * (1 + P::WORDS as u32)];
        let last_keys = [0, es[150].key, es[299].key, u64::MAX];
        leaves.iter().flat_map(move |leaf| {
            radii.into_iter().flat_map(move |radius| {
                last_keys.into_iter().flat_map(move |last_key| {
                    [0, 1, 150, 299]
                        .into_iter()
                        .map(move |from| (leaf, radius, last_key, from))
                })
            })
        })
    }

    #[test]
    fn null_rows_keep_their_tid() {
        let tid = Tid {
            block: 9,
            offset: 17,
        };
        let e: Entry = Entry::null_row(tid);
        assert_eq!(e.fingerprint(), None);
        assert_eq!(e.heap_tid(), tid);
        let plain: Entry = Entry::new(5, [], tid);
        assert_eq!((plain.fingerprint(), plain.heap_tid()), (Some(5), tid));
    }

    #[test]
    fn meta_round_trips_and_rejects_garbage() {
        let run = |id: u32, trees: u32| Run {
            id,
            blocks: 4,
            rows: 1000 * id as u64,
            nulls_head: NO_BLOCK,
            nulls_pages: 0,
            trees: (0..trees)
                .map(|t| Tree {
                    root: 10 * id + t,
                    first_leaf: 100 * id + t,
                    leaves: 3 + t,
                })
                .collect(),
        };
        let mut m = Meta::new(3);
        m.runs = vec![run(7, 16), run(9, 10)];
        m.pending = List {
            id: 12,
            head: 41,
            tail: 44,
            pages: 4,
        };
        m.sealed = List::empty(11);
        m.merging = 13;
        m.merge_inputs = vec![7, 9];
        m.spare = vec![70, 71, 90];
        m.garbage = vec![
            Garbage {
                since: 1 << 40,
                dead: Dead::Run(run(5, 4)),
            },
            Garbage {
                since: 77,
                dead: Dead::List(List::empty(3)),
            },
        ];
        let mut buf = vec![0u8; m.encoded_len()];
        m.write(&mut buf);
        assert_eq!(Meta::read(&buf), Ok(m.clone()));
        assert_eq!(Meta::read_pending(&buf), Ok(m.pending));
        assert_eq!(m.run_rows(), 16_000);
        assert!(Meta::read(&[0u8; 64]).is_err());
        assert!(Meta::read(&buf[..30]).is_err());

        // Formats 2 and 3 read the same, and format 1 is refused.
        for older in [2u32, 3] {
            buf[4..8].copy_from_slice(&older.to_le_bytes());
            assert_eq!(Meta::read(&buf), Ok(m.clone()));
        }
        buf[4..8].copy_from_slice(&1u32.to_le_bytes());
        assert!(Meta::read(&buf).unwrap_err().0.contains("REINDEX"));

        // Registry records round-trip, packed one after another.
        let mut page = Vec::new();
        for g in &m.garbage {
            g.write(&mut page);
        }
        assert_eq!(page.len(), m.garbage.iter().map(Garbage::encoded_len).sum());
        assert_eq!(Garbage::read_all(&page), Ok(m.garbage.clone()));
        assert_eq!(Garbage::read_all(&[]), Ok(Vec::new()));
        assert!(Garbage::read_all(&page[..page.len() - 1]).is_err());
    }

    #[test]
    fn pages_of_retired_tables_are_free() {
        let tree = |root| Tree {
            root,
            first_leaf: root,
            leaves: 1,
        };
        let mut m = Meta::new(3);
        m.runs = vec![Run {
            id: 5,
            blocks: 4,
            rows: 10,
            nulls_head: NO_BLOCK,
            nulls_pages: 0,
            trees: vec![Tree::EMPTY, tree(8), tree(9), tree(10)],
        }];
        m.garbage = vec![Garbage {
            since: 1,
            dead: Dead::List(List::empty(6)),
        }];
        m.merging = 7;
        let registry = [Garbage {
            since: 2,
            dead: Dead::List(List::empty(8)),
        }];
        let in_use = |owner, table| m.in_use(&registry, owner, table);
        assert!(!in_use(5, Some(0)), "table 0 retired");
        assert!(in_use(5, Some(1)));
        assert!(!in_use(5, None), "no NULL rows");
        assert!(in_use(1, None), "the pending list");
        assert!(in_use(6, None) && in_use(7, Some(2)));
        assert!(in_use(8, None), "garbage in the registry");
        assert!(!in_use(0, None) && !in_use(4, Some(1)));
    }

    #[test]
    fn ids_are_never_zero() {
        let mut m = Meta::new(3);
        assert_eq!(m.take_id(), 2);
        m.next_id = u32::MAX;
        assert_eq!(m.take_id(), u32::MAX);
        assert_eq!(m.take_id(), 1);
    }

    #[test]
    fn descent_picks_the_child_that_may_hold_the_key() {
        let mut buf = vec![0u8; 3 * CHILD_SIZE];
        for (i, (key, child)) in [(10u64, 100u32), (20, 200), (20, 300)].iter().enumerate() {
            write_child(&mut buf[i * CHILD_SIZE..], *key, *child);
        }
        assert_eq!(children(&buf).count(), 3);
        assert_eq!(child_for(&buf, 5), Some(100));
        assert_eq!(child_for(&buf, 10), Some(100));
        assert_eq!(child_for(&buf, 15), Some(100));
        // Keys equal to 20 may end the child before the first one starting with 20.
        assert_eq!(child_for(&buf, 20), Some(100));
        assert_eq!(child_for(&buf, 21), Some(300));
        assert_eq!(child_for(&[], 21), None);
    }
}
