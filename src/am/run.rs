//! Writing and walking runs: each permuted table of a run is a static B+-tree, written
//! bottom-up in one pass over its sorted entries (leaves first, chained left to right, then
//! each directory level over the one below), the rows whose fingerprint is NULL in a chain of
//! pending pages beside them. Layouts are drawn in `neardup_core::search::index_page`.
//!
//! Pages are filled in memory and written whole, one at a time, so that no buffer lock is
//! held between pages: a held lock holds off interrupts, and writing a run takes long.

use super::meta;
use super::page::{self, Ahead, Kind, Locked, Role, Xlog};
use super::registry::{Registry, REGISTRY_BLOCK};
use neardup_core::search::code_tables::Tables;
use neardup_core::search::index_page::{
    child_for, entries, write_child, write_columns, Entry, Garbage, Leaf, LeafLayout, Meta, Rest,
    Run, Tid, Tree, CHILDREN_PER_PAGE, CHILD_SIZE, NO_BLOCK,
};
use neardup_core::search::prefix_bitmap::{PrefixBitmap, CHILDREN_BESIDE_BITMAP};
use neardup_core::search::table_parts::Parts;
use pgrx::pg_sys;
use std::cell::RefCell;
use std::collections::HashMap;

/// Where new pages come from and how they reach the WAL.
pub struct PageWriter {
    index: pg_sys::Relation,
    fork: pg_sys::ForkNumber::Type,
    /// CREATE INDEX writes without WAL and logs every page at the end; a merge logs each
    /// page as it writes it, and takes free pages before extending.
    merge: Option<InUse>,
}

/// What makes a page not free, as the holder of the merge lock sees it: the metapage
/// (`Meta::in_use`, the spare pages) and the registry (its garbage, and its own pages).
pub struct InUse {
    meta: Meta,
    garbage: Vec<Garbage>,
}

impl InUse {
    /// Read under the merge lock: no one else changes the registry or frees pages then.
    pub fn read(index: pg_sys::Relation) -> InUse {
        InUse {
            meta: meta::read(index),
            garbage: Registry::load(index).garbage(),
        }
    }

    /// Whether `page` (block `block`, locked) may be reused. The free space map is only
    /// advice: it is not crash-safe, and may list a page a merge took before a crash.
    ///
    /// # Safety
    /// `page` is a pinned and locked page of the index.
    pub unsafe fn is_free(&self, block: u32, page: pg_sys::Page) -> bool {
        if block <= REGISTRY_BLOCK || self.meta.spare.contains(&block) {
            return false;
        }
        unsafe {
            page::is_new(page)
                || match page::kind(page) {
                    Kind::Meta | Kind::Registry => false,
                    _ => {
                        let (owner, table) = page::usage(page);
                        !self.meta.in_use(&self.garbage, owner, table)
                    }
                }
        }
    }
}

impl PageWriter {
    pub fn for_build(index: pg_sys::Relation, fork: pg_sys::ForkNumber::Type) -> PageWriter {
        PageWriter {
            index,
            fork,
            merge: None,
        }
    }

    /// For a merge, under the merge lock.
    pub fn for_merge(index: pg_sys::Relation) -> PageWriter {
        PageWriter {
            index,
            fork: pg_sys::ForkNumber::MAIN_FORKNUM,
            merge: Some(InUse::read(index)),
        }
    }

    /// A free page from the free space map, if it has one (merges only).
    pub fn take_free(&mut self) -> Option<u32> {
        let in_use = self.merge.as_ref()?;
        loop {
            // SAFETY: the index is open; the FSM is only advice, checked below.
            let block = unsafe { pg_sys::GetFreeIndexPage(self.index) };
            if block == pg_sys::InvalidBlockNumber {
                return None;
            }
            let locked = Locked::read(self.index, self.fork, block, pg_sys::BUFFER_LOCK_SHARE);
            // SAFETY: a locked page of the index.
            if unsafe { in_use.is_free(block, locked.page()) } {
                return Some(block);
            }
        }
    }

    /// A block to write a new page into.
    pub fn allocate(&mut self) -> u32 {
        self.take_free()
            .unwrap_or_else(|| Locked::extend(self.index, self.fork).block())
    }

    /// Writes a whole page.
    pub fn write(&mut self, block: u32, role: Role, next: u32, contents: &[u8]) {
        self.write_with_bitmap(block, role, next, contents, None)
    }

    /// Writes a whole page, a root directory page with its table's prefix bitmap.
    fn write_with_bitmap(
        &mut self,
        block: u32,
        role: Role,
        next: u32,
        contents: &[u8],
        bitmap: Option<&[u8]>,
    ) {
        if self.merge.is_some() {
            // A merge is throttled as VACUUM is: in a merge worker by its cost limit
            // (merge_worker::throttle), in VACUUM by VACUUM's; elsewhere this only checks
            // for interrupts.
            // SAFETY: no buffer lock is held here.
            unsafe { super::vacuum_delay_point() };
        } else {
            pgrx::check_for_interrupts!();
        }
        let locked = Locked::read(self.index, self.fork, block, pg_sys::BUFFER_LOCK_EXCLUSIVE);
        let fill = |p: pg_sys::Page| {
            // SAFETY: p is the locked page or its GenericXLog copy.
            unsafe {
                page::init(p, role);
                page::contents_mut(p)[..contents.len()].copy_from_slice(contents);
                page::set_len(p, contents.len());
                page::set_next(p, next);
                if let Some(bitmap) = bitmap {
                    page::set_prefix_bitmap(p, bitmap);
                }
            }
        };
        if self.merge.is_some() {
            let mut xlog = Xlog::start(self.index);
            fill(xlog.register(&locked, true));
            xlog.finish();
        } else {
            fill(locked.page());
            // SAFETY: the buffer is locked exclusively; CREATE INDEX logs it afterwards.
            unsafe { pg_sys::MarkBufferDirty(locked.buffer) };
        }
    }
}

/// Fills a chain of pages with packed items, each page written when the next is started
/// (its link is known then).
struct Chain {
    role: Role,
    item: usize,
    buf: Vec<u8>,
    /// For a chain of leaves laid out as columns, the page as written.
    columns: Option<Vec<u8>>,
    block: u32,
    first: u32,
    pages: u32,
    /// The first item of each page written, and its block.
    heads: Vec<(Vec<u8>, u32)>,
    keep_heads: bool,
}

impl Chain {
    fn new(role: Role, item: usize, layout: LeafLayout, keep_heads: bool) -> Chain {
        Chain {
            role,
            item,
            buf: Vec::with_capacity(page::CONTENTS),
            columns: (layout == LeafLayout::Columns).then(|| vec![0; page::CONTENTS]),
            block: NO_BLOCK,
            first: NO_BLOCK,
            pages: 0,
            heads: Vec::new(),
            keep_heads,
        }
    }

    fn push(&mut self, out: &mut PageWriter, item: &[u8]) {
        if self.buf.len() + self.item > page::CONTENTS {
            let next = out.allocate();
            self.write_page(out, next);
            self.buf.clear();
            self.block = next;
            self.pages += 1;
        }
        if self.block == NO_BLOCK {
            self.block = out.allocate();
            self.first = self.block;
            self.pages = 1;
        }
        if self.buf.is_empty() && self.keep_heads {
            self.heads.push((item.to_vec(), self.block));
        }
        self.buf.extend_from_slice(item);
    }

    /// Writes the page filled so far, linked to `next`.
    fn write_page(&mut self, out: &mut PageWriter, next: u32) {
        let contents = match &mut self.columns {
            Some(columns) => {
                let columns = &mut columns[..self.buf.len()];
                write_columns(&self.buf, self.item, columns);
                columns
            }
            None => &self.buf[..],
        };
        out.write(self.block, self.role, next, contents);
    }

    /// Writes the last page; returns (first block, pages, heads).
    fn finish(mut self, out: &mut PageWriter) -> (u32, u32, Vec<(Vec<u8>, u32)>) {
        if self.block != NO_BLOCK {
            self.write_page(out, NO_BLOCK);
        }
        (self.first, self.pages, std::mem::take(&mut self.heads))
    }
}

/// Writes one table (a tree of it) from its entries in (key, TID) order.
pub struct TreeWriter<P: Rest> {
    owner: u32,
    table: u16,
    leaves: Chain,
    /// Its keys' prefixes, stored in its root if the table is small enough.
    prefixes: PrefixBitmap,
    rest: std::marker::PhantomData<P>,
}

impl<P: Rest> TreeWriter<P> {
    pub fn new(owner: u32, table: u16) -> TreeWriter<P> {
        let layout = LeafLayout::Columns;
        TreeWriter {
            owner,
            table,
            leaves: Chain::new(
                Role::leaf(owner, table, layout),
                Entry::<P>::SIZE,
                layout,
                true,
            ),
            prefixes: PrefixBitmap::default(),
            rest: std::marker::PhantomData,
        }
    }

    pub fn push(&mut self, out: &mut PageWriter, entry: Entry<P>) {
        self.prefixes.insert(entry.key);
        let mut bytes = [0u8; MAX_ENTRY_SIZE];
        let bytes = &mut bytes[..Entry::<P>::SIZE];
        entry.write(bytes);
        self.leaves.push(out, bytes);
    }

    /// Writes the last leaf and the directory above the leaves; a root over few enough
    /// leaves also holds the prefix bitmap.
    pub fn finish(self, out: &mut PageWriter) -> Tree {
        let (first_leaf, leaves, heads) = self.leaves.finish(out);
        if leaves == 0 {
            return Tree {
                root: NO_BLOCK,
                first_leaf: NO_BLOCK,
                leaves: 0,
            };
        }
        // (first key, block) of each node of the level below.
        let mut level: Vec<(u64, u32)> = heads
            .into_iter()
            .map(|(item, block)| (Entry::<P>::read(&item).key, block))
            .collect();
        let mut depth = 1u16;
        loop {
            let role = Role {
                kind: Kind::Directory,
                owner: self.owner,
                table: self.table,
                level: depth,
            };
            let mut above = Vec::with_capacity(level.len() / CHILDREN_PER_PAGE + 1);
            let mut buf = vec![0u8; CHILDREN_PER_PAGE * CHILD_SIZE];
            for chunk in level.chunks(CHILDREN_PER_PAGE) {
                for (i, &(key, child)) in chunk.iter().enumerate() {
                    write_child(&mut buf[i * CHILD_SIZE..], key, child);
                }
                let block = out.allocate();
                // (A root over few leaves: the only page of this level.)
                let bitmap = (depth == 1 && level.len() <= CHILDREN_BESIDE_BITMAP)
                    .then(|| self.prefixes.bytes());
                let children = &buf[..chunk.len() * CHILD_SIZE];
                out.write_with_bitmap(block, role, NO_BLOCK, children, bitmap);
                above.push((chunk[0].0, block));
            }
            if above.len() == 1 {
                return Tree {
                    root: above[0].1,
                    first_leaf,
                    leaves,
                };
            }
            level = above;
            depth += 1;
        }
    }
}

/// The widest entry: of a 256-bit code.
pub const MAX_ENTRY_SIZE: usize = neardup_core::search::index_page::entry_size(3);

/// Writes the rows whose code is NULL as a chain of pending pages owned by `owner`;
/// returns its first block and pages.
pub fn write_nulls<P: Rest>(out: &mut PageWriter, owner: u32, nulls: &[Tid]) -> (u32, u32) {
    let role = Role::new(Kind::Pending, owner);
    let mut chain = Chain::new(role, Entry::<P>::SIZE, LeafLayout::Rows, false);
    let mut bytes = [0u8; MAX_ENTRY_SIZE];
    let bytes = &mut bytes[..Entry::<P>::SIZE];
    for &tid in nulls {
        Entry::<P>::null_row(tid).write(bytes);
        chain.push(out, bytes);
    }
    let (first, pages, _) = chain.finish(out);
    (first, pages)
}

/// Writes a run: table `t` of `layout` from `sorted(t, emit)`, which emits its entries in
/// (key, TID) order, as the trees of its parts (`table_parts`), and the NULL rows.
pub fn write_run<L: Tables>(
    out: &mut PageWriter,
    id: u32,
    layout: &L,
    nulls: &[Tid],
    mut sorted: impl FnMut(usize, &mut dyn FnMut(Entry<L::Rest>)),
) -> Run {
    let parts = meta::new_parts(layout);
    let mut rows = 0;
    let mut trees = Vec::with_capacity(meta::new_trees(layout));
    for t in 0..layout.count() {
        let mut part = 0;
        let mut tree = TreeWriter::new(id, parts.trees_of(t).start as u16);
        sorted(t, &mut |entry| {
            while parts.of_key(entry.key) > part {
                let next = TreeWriter::new(id, tree.table + 1);
                trees.push(std::mem::replace(&mut tree, next).finish(out));
                part += 1;
            }
            tree.push(out, entry);
            rows += u64::from(t == 0);
        });
        trees.push(tree.finish(out));
        for _ in part + 1..parts.count() {
            trees.push(Tree::EMPTY);
        }
    }
    let (nulls_head, nulls_pages) = write_nulls::<L::Rest>(out, id, nulls);
    Run {
        id,
        blocks: layout.blocks(),
        // Counted, not taken from the inputs' counts, which a VACUUM stopped halfway may
        // have left high.
        rows,
        nulls_head,
        nulls_pages,
        trees,
    }
}

/// The leaf where the entries of `tree` with keys at least `key` begin (or the one before),
/// reading directory pages through `node` (which may answer from a cache).
pub fn descend(
    tree: &Tree,
    key: u64,
    mut node: impl FnMut(u32, &mut dyn FnMut(&[u8], u16)),
) -> Option<u32> {
    let mut block = tree.root;
    if block == NO_BLOCK {
        return None;
    }
    loop {
        let (mut child, mut level) = (None, 0);
        node(block, &mut |contents, lvl| {
            child = child_for(contents, key);
            level = lvl;
        });
        block = child?;
        if level == 1 {
            return Some(block);
        }
    }
}

/// The buffers where this backend last found an index's leaves, by block: hints for
/// `page::read_owned_recent`, for passes that read every leaf of a table query after
/// query. Taken from the backend's store for a pass, and put back when it ends (also when
/// an ERROR unwinds it).
pub struct RecentLeaves {
    index: pg_sys::Oid,
    buffers: Vec<pg_sys::Buffer>,
}

thread_local! {
    /// The backend's hints, by index (see `RecentLeaves`); checked when used, and at most
    /// `MAX_LEAF_BUFFERS` of them in all.
    static LEAF_BUFFERS: RefCell<HashMap<pg_sys::Oid, Vec<pg_sys::Buffer>>> =
        RefCell::new(HashMap::new());
}
/// 4 MB of hints: the blocks of 8 GB of indexes (blocks past it are read without).
const MAX_LEAF_BUFFERS: usize = 1 << 20;

impl RecentLeaves {
    /// The hints of `index`, for a pass.
    pub fn take(index: pg_sys::Relation) -> RecentLeaves {
        // SAFETY: an open relation.
        let index = unsafe { (*index).rd_id };
        let buffers = LEAF_BUFFERS
            .with_borrow_mut(|m| m.remove(&index))
            .unwrap_or_default();
        RecentLeaves { index, buffers }
    }

    /// `read_leaf`, through the buffer where the backend last found the leaf.
    pub fn read_leaf<P: Rest, R>(
        &mut self,
        index: pg_sys::Relation,
        owner: u32,
        block: u32,
        read: impl FnOnce(Leaf<P>) -> R,
    ) -> (R, u32) {
        self.read(index, owner, block, false, |leaf, _| read(leaf))
    }

    /// `read_leaf` in a pass that reads the next leaf too: `read` also gets that one, where
    /// the backend last found it, to bring into the CPU's caches as it reads this one.
    pub fn read_leaf_then_next<P: Rest, R>(
        &mut self,
        index: pg_sys::Relation,
        owner: u32,
        block: u32,
        read: impl FnOnce(Leaf<P>, Ahead) -> R,
    ) -> (R, u32) {
        self.read(index, owner, block, true, read)
    }

    fn read<P: Rest, R>(
        &mut self,
        index: pg_sys::Relation,
        owner: u32,
        block: u32,
        ahead: bool,
        read: impl FnOnce(Leaf<P>, Ahead) -> R,
    ) -> (R, u32) {
        pgrx::check_for_interrupts!();
        let at = block as usize;
        let recent = self.buffers.get(at).copied();
        let locked = page::read_owned_recent(
            index,
            block,
            Kind::Table,
            owner,
            recent.unwrap_or(pg_sys::InvalidBuffer as i32),
        );
        if recent != Some(locked.buffer) && at < MAX_LEAF_BUFFERS {
            if self.buffers.len() <= at {
                self.buffers.resize(at + 1, pg_sys::InvalidBuffer as i32);
            }
            self.buffers[at] = locked.buffer;
        }
        let mut next_leaf = Ahead::NONE;
        if ahead {
            // SAFETY: a locked page of the index.
            let next = unsafe { page::next(locked.page()) };
            if let Some(&buffer) = self.buffers.get(next as usize) {
                next_leaf = Ahead::of_buffer(buffer);
            }
        }
        leaf_and_next(&locked, |leaf| read(leaf, next_leaf))
    }
}

impl Drop for RecentLeaves {
    fn drop(&mut self) {
        let buffers = std::mem::take(&mut self.buffers);
        LEAF_BUFFERS.with_borrow_mut(|m| {
            if m.values().map(Vec::len).sum::<usize>() + buffers.len() > MAX_LEAF_BUFFERS {
                m.clear();
            }
            m.insert(self.index, buffers);
        });
    }
}

/// Calls `emit` with every entry of `tree`, in key order.
pub fn for_each_entry<P: Rest>(
    index: pg_sys::Relation,
    owner: u32,
    tree: &Tree,
    mut emit: impl FnMut(Entry<P>),
) {
    let mut block = tree.first_leaf;
    while block != NO_BLOCK {
        block = read_leaf(index, owner, block, |leaf| {
            leaf.entries().for_each(&mut emit)
        })
        .1;
    }
}

/// Calls `emit` with every entry of table `t` of `run`, whose tables are in `parts`: its
/// trees one after the other, in key order.
pub fn for_each_table_entry<P: Rest>(
    index: pg_sys::Relation,
    run: &Run,
    parts: Parts,
    t: usize,
    mut emit: impl FnMut(Entry<P>),
) {
    for tree in &run.trees[parts.trees_of(t)] {
        for_each_entry(index, run.id, tree, &mut emit);
    }
}

/// Calls `emit` with every entry of a chain of pending pages owned by `owner`.
pub fn for_each_pending<P: Rest>(
    index: pg_sys::Relation,
    owner: u32,
    head: u32,
    mut emit: impl FnMut(Entry<P>),
) {
    let mut block = head;
    while block != NO_BLOCK {
        pgrx::check_for_interrupts!();
        let locked = page::read_owned(index, block, Kind::Pending, owner);
        // SAFETY: a locked pending page; its link is read under the same lock.
        unsafe {
            entries(page::contents(locked.page())).for_each(&mut emit);
            block = page::next(locked.page());
        }
    }
}

/// Calls `emit` with the entries of tree `t` of every input run in (key, TID) order, each
/// with the index of its input: a merge of the sorted leaf chains, holding one page of each
/// in memory (and no buffer lock).
pub fn merge_sorted<P: Rest>(
    index: pg_sys::Relation,
    inputs: &[&Run],
    t: usize,
    mut emit: impl FnMut(usize, Entry<P>),
) {
    struct Cursor<P: Rest> {
        owner: u32,
        next: u32,
        page: Vec<Entry<P>>,
        at: usize,
    }
    impl<P: Rest> Cursor<P> {
        /// The current entry, reading the next leaf when this one is done.
        fn peek(&mut self, index: pg_sys::Relation) -> Option<Entry<P>> {
            while self.at == self.page.len() {
                if self.next == NO_BLOCK {
                    return None;
                }
                let locked = page::read_owned(index, self.next, Kind::Table, self.owner);
                // SAFETY: a locked leaf; its link is read under the same lock.
                unsafe {
                    self.page = page::leaf(locked.page()).entries().collect();
                    self.next = page::next(locked.page());
                }
                self.at = 0;
            }
            Some(self.page[self.at])
        }
    }
    let mut cursors: Vec<Cursor<P>> = inputs
        .iter()
        .map(|r| Cursor {
            owner: r.id,
            next: r.trees[t].first_leaf,
            page: Vec::new(),
            at: 0,
        })
        .collect();
    // Few inputs (the merge policy keeps runs few): the smallest head is found by a scan,
    // which costs less than a heap's sifting.
    let mut heads: Vec<Option<Entry<P>>> = cursors.iter_mut().map(|c| c.peek(index)).collect();
    let mut emitted = 0u32;
    loop {
        let Some((i, &Some(head))) = heads
            .iter()
            .enumerate()
            .filter(|(_, h)| h.is_some())
            .min_by_key(|(_, h)| h.map(|e| e.order()))
        else {
            return;
        };
        emit(i, head);
        emitted = emitted.wrapping_add(1);
        if emitted.is_multiple_of(65536) {
            pgrx::check_for_interrupts!();
        }
        let c = &mut cursors[i];
        c.at += 1;
        heads[i] = c.peek(index);
    }
}

/// Calls `read` with the contents of one pending page of a chain owned by `owner` (a list,
/// or a run's NULL rows), under its share lock; returns what `read` returns and the next
/// block of the chain.
pub fn read_pending_page<R>(
    index: pg_sys::Relation,
    owner: u32,
    block: u32,
    read: impl FnOnce(&[u8]) -> R,
) -> (R, u32) {
    pgrx::check_for_interrupts!();
    let locked = page::read_owned(index, block, Kind::Pending, owner);
    // SAFETY: a locked page of the chain; its link is read under the same lock.
    unsafe {
        (
            read(page::contents(locked.page())),
            page::next(locked.page()),
        )
    }
}

/// Calls `read` with one leaf of a run owned by `owner`, under its share lock; returns what
/// `read` returns and the next leaf.
pub fn read_leaf<P: Rest, R>(
    index: pg_sys::Relation,
    owner: u32,
    block: u32,
    read: impl FnOnce(Leaf<P>) -> R,
) -> (R, u32) {
    pgrx::check_for_interrupts!();
    leaf_and_next(&page::read_owned(index, block, Kind::Table, owner), read)
}

/// What `read` returns of a locked leaf, and the next leaf, read under the same lock.
fn leaf_and_next<P: Rest, R>(locked: &Locked, read: impl FnOnce(Leaf<P>) -> R) -> (R, u32) {
    // SAFETY: a locked leaf of entries carrying `P`.
    unsafe { (read(page::leaf(locked.page())), page::next(locked.page())) }
}
