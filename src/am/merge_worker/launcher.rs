//! The launcher: one process per server (a static background worker, restarted by the
//! postmaster), connected to no database. It sleeps on its latch, which inserters set when
//! they queue a merge no worker of their database is idle for, and starts a worker for a
//! database with waiting requests while fewer than `neardup.merge_workers` run, as the
//! autovacuum launcher does. It also frees the slot of a worker that never ran (its
//! database could not be connected to, or the postmaster could not start it).
//!
//! When `max_worker_processes` leaves no slot for a worker (the launcher takes one, and
//! PostgreSQL's logical replication launcher another), it says so once in the server log
//! and records it in the queue (`MergeQueue::no_slot`): inserters then merge themselves, as
//! when no launcher runs, until a launch finds a slot again (it tries at least every
//! `NAP_MS` while requests wait).

use super::{my_latch, wait_on_latch, MERGE_WORKERS, QUEUE};
use neardup_core::search::merge_queue::NO_SLOT_RETRY;
use pgrx::bgworkers::{BackgroundWorkerBuilder, BgWorkerStartTime, DynamicBackgroundWorker};
use pgrx::pg_sys;
use pgrx::pg_sys::panic::ErrorReport;
use pgrx::prelude::*;
use pgrx::{PgLogLevel, PgSqlErrorCode};
use std::sync::atomic::{AtomicBool, Ordering};

/// How long the launcher sleeps when no request waits for a backoff (inserters take it
/// that no worker can start for as long after a launch found no slot).
const NAP_MS: i64 = 10_000;
const _: () = assert!(NAP_MS * 1000 == NO_SLOT_RETRY);

/// Whether this launcher has said that no slot is left for a worker.
static NO_SLOT_LOGGED: AtomicBool = AtomicBool::new(false);

#[pg_guard]
#[no_mangle]
pub extern "C-unwind" fn neardup_merge_launcher(_arg: pg_sys::Datum) {
    super::worker::set_signal_handlers();
    // SAFETY: no database: the launcher reads no catalog, but so it is in pg_stat_activity.
    unsafe { pg_sys::BackgroundWorkerInitializeConnection(std::ptr::null(), std::ptr::null(), 0) };
    {
        let mut q = QUEUE.exclusive();
        q.0.launcher_latch = my_latch();
        // SAFETY: this process's pid.
        q.0.launcher_pid = unsafe { pg_sys::MyProcPid };
    }
    // SAFETY: registered once; runs at exit (FATAL on SIGTERM included).
    unsafe { pg_sys::before_shmem_exit(Some(forget_launcher), pg_sys::Datum::from(0)) };
    let mut started: Vec<(usize, u32, DynamicBackgroundWorker)> = Vec::new();
    loop {
        super::worker::reload_config_if_asked();
        // SAFETY: a clock read.
        let now = unsafe { pg_sys::GetCurrentTimestamp() };
        reap(&mut started);
        launch(&mut started, now);
        let next = QUEUE.share().0.next_ready(now);
        let nap = next.map_or(NAP_MS, |t| ((t - now) / 1000).clamp(1, NAP_MS));
        wait_on_latch(nap, "NeardupLauncherMain");
    }
}

/// Frees the slots of workers that stopped without freeing theirs (they never ran).
fn reap(started: &mut Vec<(usize, u32, DynamicBackgroundWorker)>) {
    started.retain(|(slot, launch, handle)| {
        match handle.pid() {
            Ok(_) => return true,
            Err(status) if !stopped(status) => return true,
            Err(_) => {}
        }
        let mut q = QUEUE.exclusive();
        let w = q.0.workers[*slot];
        if w.in_use && w.launch == *launch && w.pid == 0 {
            q.0.workers[*slot] = Default::default();
        }
        false
    });
}

fn stopped(status: pgrx::bgworkers::BackgroundWorkerStatus) -> bool {
    use pgrx::bgworkers::BackgroundWorkerStatus::*;
    matches!(status, Stopped | PostmasterDied)
}

/// Starts workers while a database waits for one and slots are free.
fn launch(started: &mut Vec<(usize, u32, DynamicBackgroundWorker)>, now: i64) {
    loop {
        let (slot, launch) = {
            let mut q = QUEUE.exclusive();
            let Some((slot, db)) = q.0.to_launch(now, MERGE_WORKERS.get() as usize) else {
                return;
            };
            (slot, q.0.launch(slot, db))
        };
        let worker = BackgroundWorkerBuilder::new("neardup merge worker")
            .set_type("neardup merge worker")
            .set_library("neardup")
            .set_function("neardup_merge_worker")
            .enable_spi_access()
            .set_start_time(BgWorkerStartTime::RecoveryFinished)
            .set_restart_time(None)
            .set_argument(Some(pg_sys::Datum::from(slot)))
            // SAFETY: this process's pid: the postmaster sets our latch when it stops.
            .set_notify_pid(unsafe { pg_sys::MyProcPid })
            .load_dynamic();
        match worker {
            Ok(handle) => {
                QUEUE.exclusive().0.slot_found();
                started.push((slot, launch, handle));
            }
            Err(_) => {
                // No free background worker slot (max_worker_processes): inserters merge
                // themselves meanwhile; try again later.
                QUEUE.exclusive().0.no_slot(slot, now);
                log_no_slot();
                return;
            }
        }
    }
}

/// Says once per launcher that workers cannot start, and what to do about it.
fn log_no_slot() {
    if NO_SLOT_LOGGED.swap(true, Ordering::Relaxed) {
        return;
    }
    ErrorReport::new(
        PgSqlErrorCode::ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
        "neardup merge launcher: no background worker slot is free for a merge worker; inserting backends merge hamming indexes themselves",
        "neardup",
    )
    .set_hint(
        "Raise max_worker_processes: the launcher takes one slot, each of neardup.merge_workers one more, beside PostgreSQL's own workers and parallel query.",
    )
    .report(PgLogLevel::LOG);
}

#[pg_guard]
unsafe extern "C-unwind" fn forget_launcher(_code: i32, _arg: pg_sys::Datum) {
    let mut q = QUEUE.exclusive();
    q.0.launcher_latch = 0;
    q.0.launcher_pid = 0;
}
