//! A merge worker: connected to one database, it takes that database's requests one at a
//! time and merges the index in a transaction of its own. Once no request has come for
//! `COMPACT_AFTER_IDLE_MS`, it compacts the indexes it merged, one at a time (`merge::compact_until`:
//! one run, as a fresh build, when enough has accumulated), stopping for any new request;
//! it exits after `IDLE_EXIT_MS` without work. It locks the index alone, in ShareUpdateExclusiveLock: inserts, scans and
//! VACUUM go on; DDL on the index, and on its table (which locks the index too: DROP,
//! TRUNCATE, rewrites, REINDEX), waits; and the merge stops between two of its tables as
//! soon as such DDL waits, leaving the rest for later (the index is consistent between
//! tables, as after a crash). The mode is the weakest that the lock manager keeps out of
//! its fast path, where waiters on our lock could not be seen. The table is not locked: a
//! merge reads no table, and never waiting for a table's lock while it holds the index's
//! keeps it out of every deadlock.
//!
//! An ERROR ends the worker (it is logged as any background worker's); its slot's exit
//! callback requeues the index with a backoff (`merge_queue::backoff`) and drops it after
//! `MAX_FAILURES` in a row. SIGTERM (shutdown, pg_terminate_backend, DROP DATABASE) stops
//! it at the next interrupt check, as it does a backend.

use super::throttle::Throttle;
use super::{flush, my_latch, wait_on_latch, QUEUE};
use crate::am::codes;
use crate::am::merge;
use crate::am::meta;
use crate::am::options;
use pgrx::pg_sys;
use pgrx::prelude::*;

/// A worker with nothing to do exits after this long (its database stays free for DDL
/// that needs it alone; a new request starts a new worker).
const IDLE_EXIT_MS: i64 = 5_000;
/// Inserts into an index are taken to have paused after this long without a request.
const COMPACT_AFTER_IDLE_MS: i64 = 1_000;
/// Indexes a worker remembers to compact (the oldest is forgotten).
const MAX_RECENT: usize = 8;
/// Flushes and merges of one index per transaction at most.
const ROUNDS_PER_TRANSACTION: usize = 4;
/// A busy index (its table locked by DDL, or another backend merging) is looked at again
/// after this long.
const BUSY_RETRY_US: i64 = 1_000_000;

/// What became of a request.
enum Outcome {
    /// Merged, or nothing to do (another backend merges it).
    Done,
    /// The index is gone, or is not a ready `hamming` index (its oid was reused).
    Gone,
    /// Left for later: its table or index is locked, or a backend wants a lock we hold.
    Later,
    /// More to do at once: inserts filled the pending list again while it merged.
    Again,
}

#[pg_guard]
#[no_mangle]
pub extern "C-unwind" fn neardup_merge_worker(arg: pg_sys::Datum) {
    let slot = arg.value();
    set_signal_handlers();
    // SAFETY: registered before anything can fail, so that the slot is freed (and its index
    // requeued) whatever ends the worker short of a crash, which resets shared memory.
    unsafe { pg_sys::before_shmem_exit(Some(free_slot), arg) };
    let db = {
        let mut q = QUEUE.exclusive();
        // SAFETY: this process's pid.
        q.0.workers[slot].pid = unsafe { pg_sys::MyProcPid };
        q.0.workers[slot].db
    };
    // SAFETY: the database of this slot; as the bootstrap superuser.
    unsafe {
        pg_sys::BackgroundWorkerInitializeConnectionByOid(
            pg_sys::Oid::from(db),
            pg_sys::InvalidOid,
            0,
        )
    };
    QUEUE.exclusive().0.workers[slot].latch = my_latch();
    // SAFETY: a clock read.
    let mut idle_since = unsafe { pg_sys::GetCurrentTimestamp() };
    // The indexes merged since they were last compacted, oldest first.
    let mut recent: Vec<u32> = Vec::new();
    loop {
        reload_config_if_asked();
        // SAFETY: a clock read.
        let now = unsafe { pg_sys::GetCurrentTimestamp() };
        let taken = QUEUE.exclusive().0.take(slot, now);
        match taken {
            Some(index) => {
                let outcome = merge_index(pg_sys::Oid::from(index), Work::Merge, slot);
                recent.retain(|&r| r != index);
                if !matches!(outcome, Outcome::Gone) {
                    recent.push(index);
                    if recent.len() > MAX_RECENT {
                        recent.remove(0);
                    }
                }
                // SAFETY: a clock read.
                let now = unsafe { pg_sys::GetCurrentTimestamp() };
                let mut q = QUEUE.exclusive();
                match outcome {
                    Outcome::Done | Outcome::Gone => q.0.finish(slot, now),
                    Outcome::Later => q.0.postpone(slot, now, BUSY_RETRY_US),
                    Outcome::Again => q.0.again(slot, now),
                }
                idle_since = now;
            }
            None => {
                let idle = (now - idle_since) / 1000;
                if !recent.is_empty() && idle >= COMPACT_AFTER_IDLE_MS {
                    let index = recent.remove(0);
                    QUEUE.exclusive().0.compact(slot, index, now);
                    let outcome = merge_index(pg_sys::Oid::from(index), Work::Compact, slot);
                    if matches!(outcome, Outcome::Later) {
                        // Stopped by a request or by DDL: again after the next pause.
                        recent.push(index);
                    }
                    // SAFETY: a clock read.
                    idle_since = unsafe { pg_sys::GetCurrentTimestamp() };
                    QUEUE.exclusive().0.finish(slot, idle_since);
                    continue;
                }
                if idle >= IDLE_EXIT_MS {
                    let mut q = QUEUE.exclusive();
                    if q.0.take(slot, now).is_none() {
                        q.0.workers[slot].exiting = true;
                        q.0.workers[slot].latch = 0;
                        return;
                    }
                    // A request came in meanwhile: give it back and go round.
                    q.0.postpone(slot, now, 0);
                    continue;
                }
                let until = if !recent.is_empty() {
                    COMPACT_AFTER_IDLE_MS
                } else {
                    IDLE_EXIT_MS
                };
                wait_on_latch(until - idle, "NeardupMergeIdle");
            }
        }
    }
}

/// What a worker does to an index.
#[derive(Clone, Copy)]
enum Work {
    /// Seal and write its pending list, merge runs as the policy says.
    Merge,
    /// Its inserts have paused: merge it into one run.
    Compact,
}

/// Merges (or compacts) the index `oid` of the database of worker `slot` if it is still a
/// `hamming` index that needs it.
fn merge_index(oid: pg_sys::Oid, work: Work, slot: usize) -> Outcome {
    let lockmode = pg_sys::ShareUpdateExclusiveLock as pg_sys::LOCKMODE;
    // SAFETY: a transaction of our own around catalog reads, locks and the merge; every
    // relation is opened under the lock taken on its oid and closed before the commit.
    unsafe {
        pg_sys::SetCurrentStatementStartTimestamp();
        pg_sys::StartTransactionCommand();
        pg_sys::PushActiveSnapshot(pg_sys::GetTransactionSnapshot());
        let verb = match work {
            Work::Merge => "merging",
            Work::Compact => "compacting",
        };
        let activity = format!("{verb} hamming index {}\0", oid.to_u32());
        pg_sys::pgstat_report_activity(
            pg_sys::BackendState::STATE_RUNNING,
            activity.as_ptr().cast(),
        );
        let outcome = (|| {
            if !pg_sys::ConditionalLockRelationOid(oid, lockmode) {
                return Outcome::Later;
            }
            let index = pg_sys::try_relation_open(oid, pg_sys::NoLock as _);
            if index.is_null() {
                return Outcome::Gone;
            }
            if !is_ready_hamming(index) {
                pg_sys::relation_close(index, pg_sys::NoLock as _);
                return Outcome::Gone;
            }
            // The index is open and locked by this transaction.
            let _throttle = Throttle::start();
            let wanted = || pg_sys::LockHasWaitersRelation(index, lockmode);
            if let Work::Compact = work {
                let stop = || wanted() || compaction_yields(slot);
                let outcome = match flush(index, &stop, merge::compact_until) {
                    Some(true) => Outcome::Done,
                    _ => Outcome::Later,
                };
                pg_sys::relation_close(index, pg_sys::NoLock as _);
                return outcome;
            }
            // A merge seals the list only if no sealed one waits, and inserts go on
            // meanwhile: go round while the list is past its limit, a few times per
            // transaction (which holds a snapshot and the lock).
            let mut outcome = Outcome::Again;
            for _ in 0..ROUNDS_PER_TRANSACTION {
                if !needs_merge(index) {
                    outcome = Outcome::Done;
                    break;
                }
                match flush(index, &wanted, merge::flush_and_merge_until) {
                    // Another backend merges it: look again once it is done.
                    None | Some(false) => {
                        outcome = Outcome::Later;
                        break;
                    }
                    Some(true) => {}
                }
            }
            pg_sys::relation_close(index, pg_sys::NoLock as _);
            outcome
        })();
        pg_sys::PopActiveSnapshot();
        pg_sys::CommitTransactionCommand();
        pg_sys::pgstat_report_activity(pg_sys::BackendState::STATE_IDLE, std::ptr::null());
        outcome
    }
}

/// Whether a request waits that the compaction by worker `slot` gives way to.
fn compaction_yields(slot: usize) -> bool {
    // SAFETY: a clock read.
    let now = unsafe { pg_sys::GetCurrentTimestamp() };
    QUEUE.share().0.compaction_yields(slot, now)
}

/// Whether a ready `hamming` index has work for a merge: a pending list past its limit, a
/// sealed list, or a merge a crash or a stop interrupted.
fn needs_merge(index: pg_sys::Relation) -> bool {
    let m = meta::read(index);
    m.merging != 0
        || m.sealed.id != 0
        || m.pending.row_capacity(codes::entry_size(index))
            >= options::of(index).pending_limit as u64
}

/// Whether `index` is a ready `hamming` index: not one being built or dropped, and not
/// another relation under a reused oid.
unsafe fn is_ready_hamming(index: pg_sys::Relation) -> bool {
    // SAFETY: an open, locked relation.
    unsafe {
        let ours = (*(*index).rd_rel).relkind == pg_sys::RELKIND_INDEX as std::ffi::c_char
            && (*(*index).rd_rel).relam == pg_sys::get_index_am_oid(c"hamming".as_ptr(), true);
        if !ours || !(*(*index).rd_index).indisready {
            return false;
        }
        let blocks =
            pg_sys::RelationGetNumberOfBlocksInFork(index, pg_sys::ForkNumber::MAIN_FORKNUM);
        blocks > 0
    }
}

/// At exit: frees the slot, requeueing the index it was merging (with a backoff), and
/// wakes the launcher.
#[pg_guard]
unsafe extern "C-unwind" fn free_slot(_code: i32, arg: pg_sys::Datum) {
    // SAFETY: a clock read.
    let now = unsafe { pg_sys::GetCurrentTimestamp() };
    let mut q = QUEUE.exclusive();
    if let Some((index, true)) = q.0.release(arg.value(), now) {
        pgrx::warning!(
            "neardup merge worker: gave up merging index {} after repeated failures; the next insert past its pending_limit asks again",
            index
        );
    }
    super::set_latch(q.0.launcher_latch);
}

// PostgreSQL's signal handlers themselves (pgrx's wrappers of them cannot be handlers).
unsafe extern "C-unwind" {
    #[link_name = "die"]
    fn die_handler(signal: i32);
    #[link_name = "SignalHandlerForConfigReload"]
    fn reload_handler(signal: i32);
}

/// SIGTERM ends the process at the next interrupt check (`die`, as a backend's), SIGHUP
/// asks for the configuration to be read again.
pub(super) fn set_signal_handlers() {
    // SAFETY: PostgreSQL's own handlers, installed before signals are unblocked.
    unsafe {
        #[cfg(not(feature = "pg18"))]
        {
            pg_sys::pqsignal(pg_sys::SIGTERM as i32, Some(die_handler));
            pg_sys::pqsignal(pg_sys::SIGHUP as i32, Some(reload_handler));
        }
        #[cfg(feature = "pg18")]
        {
            pg_sys::pqsignal_be(pg_sys::SIGTERM as i32, Some(die_handler));
            pg_sys::pqsignal_be(pg_sys::SIGHUP as i32, Some(reload_handler));
        }
        pg_sys::BackgroundWorkerUnblockSignals();
    }
}

/// Reads postgresql.conf again after a SIGHUP (`neardup.merge_workers` may have changed).
pub(super) fn reload_config_if_asked() {
    // SAFETY: the flag set by SignalHandlerForConfigReload; read and cleared here only.
    unsafe {
        if pg_sys::ConfigReloadPending != 0 {
            pg_sys::ConfigReloadPending = 0;
            pg_sys::ProcessConfigFile(pg_sys::GucContext::PGC_SIGHUP);
        }
    }
}
