//! The registry: the garbage merges leave behind (runs and pending lists merged away),
//! kept in block 1 and the pages chained after it until no snapshot can read it any more,
//! then given to the free space map. It is not in the metapage because under a
//! long-running snapshot garbage piles up without bound, and a metapage that filled up
//! would stop the merges. Only the holder of the merge lock reads or changes it (merges,
//! VACUUM's last step), so its pages are locked only against the checker and checkpoints.
//! The record layout is drawn in `neardup_core::search::index_page`.

use super::blocks;
use super::meta;
use super::page::{self, Kind, Locked, Role, Xlog, META_BLOCK};
use super::recovery_conflict;
use neardup_core::search::index_page::{Dead, Garbage, Meta, NO_BLOCK};
use pgrx::pg_sys;

/// Block 1: the first registry page (an empty "interlock" page in format 2, which reads
/// as an empty registry).
pub const REGISTRY_BLOCK: u32 = 1;

/// Most registry pages one publication writes, beside the metapage (GenericXLog takes four
/// pages a record).
const PAGES_PER_RECORD: usize = 3;

struct RegistryPage {
    block: u32,
    records: Vec<Garbage>,
    used: usize,
}

/// The registry as read under the merge lock.
pub struct Registry {
    pages: Vec<RegistryPage>,
}

impl Registry {
    pub fn load(index: pg_sys::Relation) -> Registry {
        let mut pages = Vec::new();
        let mut block = REGISTRY_BLOCK;
        while block != NO_BLOCK {
            pgrx::check_for_interrupts!();
            let locked = page::read_owned(index, block, Kind::Registry, 0);
            // SAFETY: a locked registry page; its link is read under the same lock.
            unsafe {
                let contents = page::contents(locked.page());
                let records = Garbage::read_all(contents).unwrap_or_else(|e| {
                    pgrx::error!("hamming index registry block {block}: {}", e.0)
                });
                pages.push(RegistryPage {
                    block,
                    records,
                    used: contents.len(),
                });
                block = page::next(locked.page());
            }
        }
        Registry { pages }
    }

    /// Every piece of garbage recorded.
    pub fn garbage(&self) -> Vec<Garbage> {
        self.pages
            .iter()
            .flat_map(|p| p.records.iter().cloned())
            .collect()
    }

    /// Where records of these sizes go: one page with room for all of them, or else empty
    /// pages filled in turn; `None` when the registry needs more empty pages.
    fn place(&self, sizes: &[usize]) -> Option<Vec<(usize, Vec<usize>)>> {
        let total: usize = sizes.iter().sum();
        if total == 0 {
            return Some(Vec::new());
        }
        if let Some(at) = self
            .pages
            .iter()
            .position(|p| page::CONTENTS - p.used >= total)
        {
            return Some(vec![(at, (0..sizes.len()).collect())]);
        }
        let mut plan: Vec<(usize, Vec<usize>)> = Vec::new();
        let mut empty = self
            .pages
            .iter()
            .enumerate()
            .filter(|(_, p)| p.used == 0)
            .map(|(i, _)| i);
        let mut room = 0;
        for (r, &size) in sizes.iter().enumerate() {
            if size > room {
                plan.push((empty.next()?, Vec::new()));
                room = page::CONTENTS;
            }
            room -= size;
            plan.last_mut().expect("a page").1.push(r);
        }
        Some(plan)
    }
}

/// Adds an empty page at the end of the registry (a new block: the registry grows only
/// while garbage piles up, and keeps its pages once it has them).
fn extend(index: pg_sys::Relation, registry: &Registry) {
    let main = pg_sys::ForkNumber::MAIN_FORKNUM;
    let last = registry.pages.last().expect("block 1").block;
    let last = Locked::read(index, main, last, pg_sys::BUFFER_LOCK_EXCLUSIVE);
    let fresh = Locked::extend(index, main);
    let mut xlog = Xlog::start(index);
    // SAFETY: both pages are locked exclusively and edited through GenericXLog.
    unsafe {
        page::init(xlog.register(&fresh, true), Role::new(Kind::Registry, 0));
        page::set_next(xlog.register(&last, false), fresh.block());
    }
    xlog.finish();
}

/// Changes the metapage and records `dead` as garbage in one WAL record. The garbage is
/// stamped with the next transaction id read under the metapage's exclusive lock: a scan
/// that read the metapage before the change did so under that lock's share mode, with a
/// snapshot taken earlier, so its xmin is at most the stamp and the garbage outlives it
/// (nbtree reads its safe xid after the unlink for the same reason). The xmin of a
/// snapshot taken then looked tighter, but on 18 a standby scan whose xmin was above such
/// a stamp still read the garbage it covered. `kept` are records stamped already (a
/// format 2 metapage's garbage, moved here). The caller holds the merge lock. Returns the
/// metapage as written.
pub fn publish(
    index: pg_sys::Relation,
    dead: Vec<Dead>,
    kept: Vec<Garbage>,
    change: impl FnOnce(&mut Meta),
) -> Meta {
    let mut records: Vec<Garbage> = kept;
    records.extend(dead.into_iter().map(|dead| Garbage { since: 0, dead }));
    let sizes: Vec<usize> = records.iter().map(Garbage::encoded_len).collect();
    let (registry, plan) = loop {
        let registry = Registry::load(index);
        match registry.place(&sizes) {
            Some(plan) if plan.len() <= PAGES_PER_RECORD => break (registry, plan),
            Some(_) => {
                pgrx::error!("hamming index: a merge left more garbage than one WAL record holds")
            }
            None => extend(index, &registry),
        }
    };
    let main = pg_sys::ForkNumber::MAIN_FORKNUM;
    let metapage = Locked::read(index, main, META_BLOCK, pg_sys::BUFFER_LOCK_EXCLUSIVE);
    let targets: Vec<Locked> = plan
        .iter()
        .map(|(at, _)| {
            let block = registry.pages[*at].block;
            Locked::read(index, main, block, pg_sys::BUFFER_LOCK_EXCLUSIVE)
        })
        .collect();
    // SAFETY: every page is locked exclusively and edited through GenericXLog.
    unsafe {
        let mut m = meta::decode(metapage.page());
        change(&mut m);
        let since = pg_sys::ReadNextFullTransactionId().value;
        let mut xlog = Xlog::start(index);
        meta::encode(xlog.register(&metapage, false), &m);
        for ((_, which), target) in plan.iter().zip(&targets) {
            let copy = xlog.register(target, false);
            let mut bytes = page::contents(copy).to_vec();
            for &r in which {
                let g = &mut records[r];
                if g.since == 0 {
                    g.since = since;
                }
                g.write(&mut bytes);
            }
            page::contents_mut(copy)[..bytes.len()].copy_from_slice(&bytes);
            page::set_len(copy, bytes.len());
        }
        xlog.finish();
        m
    }
}

/// Moves the garbage a format 2 metapage keeps into the registry (once, at the first
/// merge of such an index), so that the metapage has room for runs alone.
pub fn adopt_metapage_garbage(index: pg_sys::Relation) {
    let m = meta::read(index);
    if !m.garbage.is_empty() {
        publish(index, Vec::new(), m.garbage, |m| m.garbage.clear());
    }
}

/// Puts the pages of garbage no scan can read any more into the free space map: garbage
/// older than every snapshot (`GlobalVisCheckRemovableFullXid`, as nbtree recycles deleted
/// pages, which a standby's snapshots hold back through hot_standby_feedback), and, when no
/// scan of this primary holds an older metapage (`no_scan_holds_an_older_metapage`), any
/// garbage no standby's feedback still needs. The second way is what lets the merges of a
/// long transaction (a bulk load) reuse the pages of the runs they merge: its own snapshot
/// would hold them back until it ends.
///
/// The records go first, then the pages: a crash in between leaves pages nothing owns,
/// which VACUUM's sweep frees; the other order could hand out pages the registry still
/// counts as garbage. The caller holds the merge lock.
pub fn recycle(index: pg_sys::Relation) {
    adopt_metapage_garbage(index);
    let registry = Registry::load(index);
    // SAFETY: a read of the shared horizons; a NULL relation asks the most conservative
    // one (every database's snapshots, and a standby's with hot_standby_feedback).
    let old_enough = |g: &Garbage| unsafe {
        pg_sys::GlobalVisCheckRemovableFullXid(
            std::ptr::null_mut(),
            pg_sys::FullTransactionId { value: g.since },
        )
    };
    let records = || registry.pages.iter().flat_map(|p| &p.records);
    let waiting = records().any(|g| !old_enough(g));
    let unread_below = (waiting && no_scan_holds_an_older_metapage(index))
        .then(|| standby_xmin().unwrap_or(u64::MAX));
    let unread = |g: &Garbage| old_enough(g) || unread_below.is_some_and(|below| g.since < below);
    // A standby resolves the conflict of a recycling only once its next transaction id has
    // reached the stamp: garbage whose stamp it may not have reached waits, or is recycled
    // from a subtransaction given an id above the stamp (`recovery_conflict`).
    let reached = recovery_conflict::reached(index);
    let within = |g: &Garbage| reached.is_none_or(|bound| g.since <= bound);
    let take_xid = records().any(|g| unread(g) && !within(g)) && recovery_conflict::may_take_xid();
    let ready = |g: &Garbage| unread(g) && (take_xid || within(g));
    let Some(horizon) = records().filter(|g| ready(g)).map(|g| g.since).max() else {
        return;
    };
    // A standby's queries are in neither horizon without hot_standby_feedback: replay
    // cancels those that could still read this garbage before it replays its recycling.
    recovery_conflict::before_recycling(index, horizon, REGISTRY_BLOCK, take_xid);
    let mut freed: Vec<u32> = Vec::new();
    for p in &registry.pages {
        if !p.records.iter().any(ready) {
            continue;
        }
        let (gone, kept): (Vec<&Garbage>, Vec<&Garbage>) = p.records.iter().partition(|g| ready(g));
        // The pages are listed while the records still protect them.
        let blocks: Vec<u32> = gone
            .iter()
            .flat_map(|g| blocks_of(index, &g.dead))
            .collect();
        let main = pg_sys::ForkNumber::MAIN_FORKNUM;
        let locked = Locked::read(index, main, p.block, pg_sys::BUFFER_LOCK_EXCLUSIVE);
        let mut bytes = Vec::new();
        kept.iter().for_each(|g| g.write(&mut bytes));
        let mut xlog = Xlog::start(index);
        // SAFETY: the locked registry page's GenericXLog copy.
        unsafe {
            let copy = xlog.register(&locked, false);
            page::contents_mut(copy)[..bytes.len()].copy_from_slice(&bytes);
            page::set_len(copy, bytes.len());
        }
        xlog.finish();
        freed.extend(blocks);
    }
    if !freed.is_empty() {
        for b in freed {
            // SAFETY: an index page nothing refers to any more.
            unsafe { pg_sys::RecordFreeIndexPage(index, b) };
        }
        // SAFETY: the index is open.
        unsafe { pg_sys::IndexFreeSpaceMapVacuum(index) };
    }
}

/// Pins block 1 for a scan: every scan holds this pin from before it reads the metapage to
/// its end (the caller releases it with `ReleaseBuffer`). Inserts never touch it.
pub fn pin(index: pg_sys::Relation) -> pg_sys::Buffer {
    // SAFETY: block 1 of an open index of ours, only pinned.
    unsafe {
        pg_sys::ReadBufferExtended(
            index,
            pg_sys::ForkNumber::MAIN_FORKNUM,
            REGISTRY_BLOCK,
            pg_sys::ReadBufferMode::RBM_NORMAL,
            std::ptr::null_mut(),
        )
    }
}

/// Whether no scan of this server holds a copy of the metapage older than the registry's
/// last record: a cleanup lock on block 1 (no pin but ours) means that no scan is running,
/// and scans that start meanwhile read the metapage as it is now, which names no garbage.
/// (A standby's scans pin nothing here; see `standby_xmin`.)
fn no_scan_holds_an_older_metapage(index: pg_sys::Relation) -> bool {
    let buffer = pin(index);
    // SAFETY: our pin on block 1; the cleanup lock is only tried, and released at once.
    unsafe {
        let clear = pg_sys::ConditionalLockBufferForCleanup(buffer);
        if clear {
            pg_sys::LockBuffer(buffer, pg_sys::BUFFER_LOCK_UNLOCK as i32);
        }
        pg_sys::ReleaseBuffer(buffer);
        clear
    }
}

/// The oldest xmin a standby reports through hot_standby_feedback (a physical replication
/// slot's, or a walsender's without a slot), as a full transaction id; `None` when no
/// standby reports one. A standby without feedback is not waited for: as with PostgreSQL's
/// own indexes, replay cancels its queries that could still read the garbage before it
/// replays the recycling (`recovery_conflict`). Nor is one with feedback while no walsender
/// holds its xmin (it is down, or has not reported since it connected) and no replication
/// slot keeps it: nothing tells it apart from a standby without feedback, and PostgreSQL
/// prunes its heap for it alike (`GlobalVisCheckRemovableFullXid` then leaves it out too).
fn standby_xmin() -> Option<u64> {
    // SAFETY: reads of shared memory that PostgreSQL itself reads without locks for
    // advice (a walsender's pid and its PGPROC's xmin are single aligned words).
    unsafe {
        let mut slot_xmin: pg_sys::TransactionId = pg_sys::InvalidTransactionId;
        let mut catalog_xmin: pg_sys::TransactionId = pg_sys::InvalidTransactionId;
        pg_sys::ProcArrayGetReplicationSlotXmin(&mut slot_xmin, &mut catalog_xmin);
        let mut xmins = vec![slot_xmin];
        if !pg_sys::WalSndCtl.is_null() {
            let senders = (*pg_sys::WalSndCtl)
                .walsnds
                .as_slice(pg_sys::max_wal_senders.max(0) as usize);
            for sender in senders {
                let pid = std::ptr::read_volatile(&sender.pid);
                if pid != 0 {
                    let proc = pg_sys::BackendPidGetProc(pid);
                    if !proc.is_null() {
                        xmins.push(std::ptr::read_volatile(&(*proc).xmin));
                    }
                }
            }
        }
        let next = pg_sys::ReadNextFullTransactionId().value;
        xmins
            .into_iter()
            .filter(|x| x.into_inner() >= pg_sys::FirstNormalTransactionId.into_inner())
            .map(|x| full_xid(next, x.into_inner()))
            .min()
    }
}

/// The full transaction id of `xid`, a recent one (within 2^31 of `next`).
fn full_xid(next: u64, xid: u32) -> u64 {
    let candidate = (next & !0xFFFF_FFFF) | xid as u64;
    if candidate > next {
        candidate.saturating_sub(1 << 32)
    } else {
        candidate
    }
}

/// The pages of a run or list merged away.
fn blocks_of(index: pg_sys::Relation, dead: &Dead) -> Vec<u32> {
    match dead {
        Dead::Run(r) => blocks::run_blocks(index, r),
        Dead::List(l) => blocks::chain_blocks(index, Kind::Pending, l.id, l.head),
    }
}
