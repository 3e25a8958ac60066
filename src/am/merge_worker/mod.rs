//! Merges in the background: when neardup is in `shared_preload_libraries` and
//! `neardup.merge_workers` > 0, an inserter whose pending list passed `pending_limit` only
//! asks for a merge (a request in shared memory, `neardup_core::search::merge_queue`) and
//! wakes a worker; a launcher starts workers per database as autovacuum's does, and a
//! worker seals the list, writes it as a run and merges runs (`merge::flush_and_merge`).
//!
//! An inserter waits only when the workers are behind: its pending list holds
//! `STALL_AFTER_LIMITS` times the limit, and at least `BEHIND_ROWS` (a worker needs a
//! moment to start, and a small limit would make every large INSERT wait). It then waits for the list to be sealed, at most
//! `neardup.merge_wait` per statement (wait event `NeardupMergeBehind` from PostgreSQL 17,
//! `Extension` before), and goes on appending after that: the list grows, lookups read
//! more pending rows until the worker catches up, and nothing is lost.
//!
//! Merges stay in the inserting backend (as without the preload) for an index the workers
//! cannot see: one created or given new storage (TRUNCATE, REINDEX) by the inserter's own
//! transaction, and temporary ones; when the queue is full; and when no worker can start
//! (the launcher found no free slot in `max_worker_processes`, `MergeQueue::cannot_start`).
//! An inserter that would wait also merges itself, instead of waiting, once the workers
//! make no progress on its index: its request has waited `neardup.merge_wait` with no
//! merge of the index done and no worker at it now (`MergeQueue::stalled`: DDL such as
//! REINDEX CONCURRENTLY holds the lock a worker tries, or its workers fail). So the list
//! stays bounded, as without workers, whatever keeps them from it.
//!
//! `neardup.merge_cost_delay` and `neardup.merge_cost_limit` throttle the workers' page
//! reads and writes as autovacuum's are throttled (`throttle`).

mod databases;
mod launcher;
mod throttle;
mod worker;

use super::codes;
use super::merge::{self, STALL_AFTER_LIMITS};
use super::meta;
use super::page;
use neardup_core::search::merge_queue::{MergeQueue, Queued, MAX_WORKERS};
use pgrx::bgworkers::{BackgroundWorkerBuilder, BgWorkerStartTime};
use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting};
use pgrx::prelude::*;
use pgrx::{pg_shmem_init, pg_sys, PgLwLock};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The queue and worker slots, in shared memory (only with the preload).
#[derive(Clone, Copy, Default)]
#[repr(transparent)]
pub struct Shared(pub MergeQueue);

// SAFETY: plain data (no pointers into process memory; latches are addresses in shared
// memory, the same in every process of the server).
unsafe impl pgrx::shmem::PGRXSharedMemory for Shared {}

static QUEUE: PgLwLock<Shared> = unsafe { PgLwLock::new(c"neardup_merge_queue") };

/// Whether this process's server preloaded the library (the queue exists).
static PRELOADED: AtomicBool = AtomicBool::new(false);

/// `neardup.merge_workers`: background merge workers at once (0: merges in the inserting
/// backend, as without the preload).
pub static MERGE_WORKERS: GucSetting<i32> = GucSetting::<i32>::new(2);

/// `neardup.merge_wait`: the longest a statement waits, in milliseconds, when its inserts
/// outrun the background merges.
pub static MERGE_WAIT: GucSetting<i32> = GucSetting::<i32>::new(50);

/// `neardup.merge_cost_delay`: the workers' cost-based delay, in milliseconds, as
/// autovacuum's (0: merges are not throttled; -1: `vacuum_cost_delay`).
pub static MERGE_COST_DELAY: GucSetting<f64> = GucSetting::<f64>::new(0.0);

/// `neardup.merge_cost_limit`: the cost that makes the workers sleep, shared among the
/// workers merging at once (-1: `vacuum_cost_limit`).
pub static MERGE_COST_LIMIT: GucSetting<i32> = GucSetting::<i32>::new(-1);

/// Called from `_PG_init`: the settings always; with the preload, the shared queue, the
/// launcher and the hook that lets database-wide DDL through.
pub fn init() {
    GucRegistry::define_int_guc(
        c"neardup.merge_workers",
        c"Background workers that merge hamming indexes (0: inserting backends merge).",
        c"Needs neardup in shared_preload_libraries. Workers are taken from max_worker_processes.",
        &MERGE_WORKERS,
        0,
        MAX_WORKERS as i32,
        GucContext::Sighup,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"neardup.merge_wait",
        c"Longest wait of a statement, in ms, when inserts outrun the background merges.",
        c"Past it, inserts go on appending to the pending list, which lookups then read whole.",
        &MERGE_WAIT,
        0,
        60_000,
        GucContext::Userset,
        GucFlags::UNIT_MS,
    );
    GucRegistry::define_float_guc(
        c"neardup.merge_cost_delay",
        c"Cost-based delay of the merge workers, in ms (0: not throttled; -1: vacuum_cost_delay).",
        c"Works as autovacuum_vacuum_cost_delay does for autovacuum workers.",
        &MERGE_COST_DELAY,
        -1.0,
        100.0,
        GucContext::Sighup,
        GucFlags::UNIT_MS,
    );
    GucRegistry::define_int_guc(
        c"neardup.merge_cost_limit",
        c"Cost after which the merge workers sleep, shared among them (-1: vacuum_cost_limit).",
        c"Works as autovacuum_vacuum_cost_limit does for autovacuum workers.",
        &MERGE_COST_LIMIT,
        -1,
        10_000,
        GucContext::Sighup,
        GucFlags::default(),
    );
    // SAFETY: read in _PG_init, single-threaded.
    if !unsafe { pg_sys::process_shared_preload_libraries_in_progress } {
        return;
    }
    // pgrx's macro names majors this crate does not offer.
    #[allow(unexpected_cfgs)]
    {
        pg_shmem_init!(QUEUE);
    }
    PRELOADED.store(true, Ordering::Relaxed);
    BackgroundWorkerBuilder::new("neardup merge launcher")
        .set_type("neardup merge launcher")
        .set_library("neardup")
        .set_function("neardup_merge_launcher")
        // A connection to no database: it shows in pg_stat_activity.
        .enable_spi_access()
        .set_start_time(BgWorkerStartTime::RecoveryFinished)
        .set_restart_time(Some(Duration::from_secs(5)))
        .load();
    databases::install_hook();
}

/// Whether this backend hands merges of `index` to the workers: they can see it, and a
/// launcher runs that can start a worker (with too few `max_worker_processes` for it, or
/// for a worker, the inserter merges itself, as without the preload).
fn workers_serve(index: pg_sys::Relation) -> bool {
    if !PRELOADED.load(Ordering::Relaxed) || MERGE_WORKERS.get() == 0 {
        return false;
    }
    // SAFETY: an open relation; a global of this backend and a clock read.
    unsafe {
        if (*(*index).rd_rel).relpersistence == pg_sys::RELPERSISTENCE_TEMP as i8
            || page::storage_is_this_transactions(index)
        {
            return false;
        }
        let (db, now) = (pg_sys::MyDatabaseId.to_u32(), pg_sys::GetCurrentTimestamp());
        let q = QUEUE.share();
        q.0.launcher_pid != 0 && !q.0.cannot_start(db, now)
    }
}

/// The inserter's part, once its pending list holds `rows` ≥ `limit` rows: asks a worker
/// for the merge and returns true, waiting (bounded) if the workers are far behind; false
/// when the workers cannot serve this index, or are far behind and make no progress on
/// it, and the inserter merges itself.
pub fn hand_off(index: pg_sys::Relation, rows: u64, limit: u64) -> bool {
    if !workers_serve(index) {
        return false;
    }
    // Ask once per page of the list past the limit: a request lost with shared memory in
    // a crash is made again, and no insert looks at the queue for nothing.
    let per_page = (page::CONTENTS / codes::entry_size(index)) as u64;
    if (rows - limit).is_multiple_of(per_page) && !request(index) {
        return false;
    }
    rows < behind(limit) || wait_for_seal(index, limit)
}

/// Queues a merge of `index` and wakes a worker of its database (or the launcher); false if
/// the queue is full.
fn request(index: pg_sys::Relation) -> bool {
    // SAFETY: globals of this backend; an open relation.
    let (db, oid) = unsafe { (pg_sys::MyDatabaseId.to_u32(), (*index).rd_id.to_u32()) };
    {
        let q = QUEUE.share();
        if q.0.is_queued(db, oid) {
            return true;
        }
    }
    // SAFETY: a clock read.
    let now = unsafe { pg_sys::GetCurrentTimestamp() };
    let mut q = QUEUE.exclusive();
    let queued = q.0.request(db, oid, now);
    if queued == Queued::Added {
        let latch = match q.0.idle_worker(db) {
            Some(w) => q.0.workers[w].latch,
            None => q.0.launcher_latch,
        };
        set_latch(latch);
    }
    queued != Queued::Full
}

/// Pending rows past which the workers are behind and an inserter waits.
fn behind(limit: u64) -> u64 {
    (STALL_AFTER_LIMITS * limit).max(BEHIND_ROWS)
}

/// The fewest pending rows that make an inserter wait (28 pages, which a lookup compares in
/// tens of microseconds).
const BEHIND_ROWS: u64 = 16_384;

/// Sets the latch at `address` (a PGPROC's latch in shared memory), if any.
fn set_latch(address: usize) {
    if address != 0 {
        // SAFETY: a latch of a live process of this server, recorded under the queue's lock
        // (which the caller holds) and cleared before that process exits.
        unsafe { pg_sys::SetLatch(address as *mut pg_sys::Latch) };
    }
}

/// The address of this process's latch, to be set by others.
fn my_latch() -> usize {
    // SAFETY: MyProc is this process's PGPROC, in shared memory.
    unsafe { &raw mut (*pg_sys::MyProc).procLatch as usize }
}

/// The statement (its start time) that used up its wait, so that a 100-row INSERT waits
/// `merge_wait` once, not once per row.
static WAITED_IN: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

/// Waits until a worker sealed the pending list or `neardup.merge_wait` passed (once per
/// statement), and returns true; returns false, at once or while waiting, when the
/// workers make no progress on the index (`stalled`): the inserter merges itself then.
fn wait_for_seal(index: pg_sys::Relation, limit: u64) -> bool {
    let budget = MERGE_WAIT.get() as i64 * 1000;
    if stalled(index, budget) {
        return false;
    }
    // SAFETY: plain reads of this backend's state.
    let statement = unsafe { pg_sys::GetCurrentStatementStartTimestamp() };
    if WAITED_IN.load(Ordering::Relaxed) == statement {
        return true;
    }
    // SAFETY: as above.
    let start = unsafe { pg_sys::GetCurrentTimestamp() };
    loop {
        let m = meta::read(index);
        if m.pending.row_capacity(codes::entry_size(index)) < behind(limit) {
            return true;
        }
        if stalled(index, budget) {
            return false;
        }
        // SAFETY: as above.
        let waited = unsafe { pg_sys::GetCurrentTimestamp() } - start;
        if waited >= budget {
            WAITED_IN.store(statement, Ordering::Relaxed);
            return true;
        }
        wait_on_latch(
            ((budget - waited) / 1000).clamp(1, 10),
            "NeardupMergeBehind",
        );
    }
}

/// Whether the workers made no progress on `index` for `after` microseconds (its request
/// waits untaken, or was postponed or failed, and no worker merges it now), or none can
/// start: waiting for them is pointless.
fn stalled(index: pg_sys::Relation, after: i64) -> bool {
    // SAFETY: globals of this backend; an open relation; a clock read.
    let (db, oid, now) = unsafe {
        (
            pg_sys::MyDatabaseId.to_u32(),
            (*index).rd_id.to_u32(),
            pg_sys::GetCurrentTimestamp(),
        )
    };
    let q = QUEUE.share();
    q.0.stalled(db, oid, now, after) || q.0.cannot_start(db, now)
}

/// Waits on this process's latch for `ms` milliseconds at most, shown in pg_stat_activity
/// as the wait event `name` (PostgreSQL 17 and later; `Extension` before); then checks for
/// interrupts.
fn wait_on_latch(ms: i64, name: &'static str) {
    // SAFETY: this backend's latch; the wait ends with the postmaster.
    unsafe {
        pg_sys::WaitLatch(
            pg_sys::MyLatch,
            (pg_sys::WL_LATCH_SET | pg_sys::WL_TIMEOUT | pg_sys::WL_EXIT_ON_PM_DEATH) as i32,
            ms,
            wait_event(name),
        );
        pg_sys::ResetLatch(pg_sys::MyLatch);
    }
    pgrx::check_for_interrupts!();
}

/// The wait event named `name`: registered once per process from PostgreSQL 17.
fn wait_event(name: &'static str) -> u32 {
    #[cfg(any(feature = "pg17", feature = "pg18"))]
    {
        use std::sync::atomic::AtomicU32;
        static EVENTS: [AtomicU32; 3] = [AtomicU32::new(0), AtomicU32::new(0), AtomicU32::new(0)];
        let (slot, cname) = match name {
            "NeardupMergeBehind" => (0, c"NeardupMergeBehind"),
            "NeardupMergeIdle" => (1, c"NeardupMergeIdle"),
            _ => (2, c"NeardupLauncherMain"),
        };
        let known = EVENTS[slot].load(Ordering::Relaxed);
        if known != 0 {
            return known;
        }
        // SAFETY: registers (or finds) the name in shared memory.
        let event = unsafe { pg_sys::WaitEventExtensionNew(cname.as_ptr()) };
        EVENTS[slot].store(event, Ordering::Relaxed);
        event
    }
    #[cfg(not(any(feature = "pg17", feature = "pg18")))]
    {
        let _ = name;
        pg_sys::PG_WAIT_EXTENSION
    }
}

/// Takes the merge lock if no one holds it and runs `work` (`merge::flush_and_merge_until`
/// or `merge::compact_until`) until done (`Some(true)`) or until `stop` (`Some(false)`);
/// `None` if another backend holds the lock.
fn flush(
    index: pg_sys::Relation,
    stop: &dyn Fn() -> bool,
    work: fn(pg_sys::Relation, &dyn Fn() -> bool) -> bool,
) -> Option<bool> {
    let _lock = merge::MergeLock::try_take(index)?;
    Some(work(index, stop))
}
