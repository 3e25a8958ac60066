//! The queue of `hamming` indexes waiting for a background merge, and the merge workers'
//! slots: what every backend of a server shares to hand merges to the background workers.
//! It lives in PostgreSQL's shared memory, so it is fixed-size, `Copy` and `repr(C)`, and
//! every method here runs under the one lock that guards it (the binding layer holds it).
//!
//! ```text
//!  inserter ── request(db, index) ──► requests[]  (one entry per index, deduplicated)
//!                                        │ take(worker)      (a worker of that database)
//!                                        ▼
//!  launcher ── to_launch() ──► workers[] {db, index being merged, latch}
//!                                        │ finish / failed (requeued with a backoff)
//! ```
//!
//! A request only says "this index's pending list is past its limit": the truth is in the
//! index's metapage, so a request lost in a crash is made again by the next insert, and a
//! stale one costs a look at the metapage.
//!
//! The queue also tells inserters when waiting for it is pointless: a request no worker has
//! served for a while (`stalled`: its index is locked by DDL such as REINDEX CONCURRENTLY,
//! or no worker runs), or no free background worker slot for a worker (`cannot_start`).
//! They then merge themselves, so that the pending list, which every lookup reads, stays
//! bounded.

/// Indexes that can wait at once (more: the inserter merges itself, as without workers).
pub const MAX_REQUESTS: usize = 256;
/// Upper bound of `neardup.merge_workers`.
pub const MAX_WORKERS: usize = 32;
/// A request that failed this many times in a row is dropped (the next insert past the
/// limit makes it again).
pub const MAX_FAILURES: u32 = 8;

/// Microseconds, as PostgreSQL's `TimestampTz`.
pub type Micros = i64;

/// How long after a launch found no free background worker slot inserters take it that no
/// worker can start (the launcher tries again at least this often while requests wait).
pub const NO_SLOT_RETRY: Micros = 10_000_000;

/// An index waiting for a merge; `db == 0` is an empty entry.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Request {
    pub db: u32,
    pub index: u32,
    /// Not to be taken before this time (a backoff after a failure or a busy index).
    pub not_before: Micros,
    /// Failures in a row so far.
    pub failures: u32,
    /// Since when the index has waited for a merge: kept while the request is postponed or
    /// fails, reset when a merge of the index is done.
    pub since: Micros,
}

/// A worker slot, owned by the launcher (`in_use`), filled in by its worker.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Worker {
    pub in_use: bool,
    /// Set by the worker when it decided to exit (it takes no more requests).
    pub exiting: bool,
    pub db: u32,
    /// The index being merged, or 0.
    pub index: u32,
    /// The failures of that index's request before it was taken.
    pub failures: u32,
    /// Since when that index has waited for a merge (`Request::since`).
    pub since: Micros,
    /// The address of the worker's latch once it runs (0 before).
    pub latch: usize,
    pub pid: i32,
    /// Which launch of the slot this is: the launcher frees a slot whose worker never ran
    /// only if it is still that launch's.
    pub launch: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MergeQueue {
    /// The address of the launcher's latch (0 while no launcher runs).
    pub launcher_latch: usize,
    pub launcher_pid: i32,
    pub requests: [Request; MAX_REQUESTS],
    pub workers: [Worker; MAX_WORKERS],
    /// A database that DDL wants without other sessions (DROP, rename, a template): no
    /// worker starts for it until `held_until`.
    pub held_db: u32,
    pub held_until: Micros,
    /// Launches so far.
    pub launches: u32,
    /// When the launcher last found no free background worker slot (`max_worker_processes`
    /// all taken), or 0 if its last launch succeeded.
    pub no_slot_at: Micros,
}

impl Default for MergeQueue {
    fn default() -> Self {
        MergeQueue {
            launcher_latch: 0,
            launcher_pid: 0,
            requests: [Request::default(); MAX_REQUESTS],
            workers: [Worker::default(); MAX_WORKERS],
            held_db: 0,
            held_until: 0,
            launches: 0,
            no_slot_at: 0,
        }
    }
}

/// What `request` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Queued {
    Added,
    AlreadyQueued,
    /// No room: the caller merges itself.
    Full,
}

/// How long a request waits after its `failures`-th failure in a row: 1 s, doubling, at
/// most a minute.
pub fn backoff(failures: u32) -> Micros {
    (1_000_000i64 << failures.min(6)).min(60_000_000)
}

impl MergeQueue {
    /// Asks for a merge of `index` of database `db`, at `now`.
    pub fn request(&mut self, db: u32, index: u32, now: Micros) -> Queued {
        if self.is_queued(db, index) {
            return Queued::AlreadyQueued;
        }
        match self.requests.iter_mut().find(|r| r.db == 0) {
            Some(free) => {
                *free = Request {
                    db,
                    index,
                    not_before: 0,
                    failures: 0,
                    since: now,
                };
                Queued::Added
            }
            None => Queued::Full,
        }
    }

    pub fn is_queued(&self, db: u32, index: u32) -> bool {
        self.requests.iter().any(|r| r.db == db && r.index == index)
    }

    /// A worker of `db` that waits for work (its latch is the one to set), if any.
    pub fn idle_worker(&self, db: u32) -> Option<usize> {
        self.workers
            .iter()
            .position(|w| w.in_use && !w.exiting && w.db == db && w.index == 0 && w.latch != 0)
    }

    /// Workers alive and not exiting: those that share the merge cost limit.
    pub fn running_workers(&self) -> usize {
        self.workers
            .iter()
            .filter(|w| w.in_use && !w.exiting)
            .count()
    }

    /// Whether a worker is merging `index` now (a request for it waits until it is done:
    /// the merge lock would keep a second worker out anyway).
    fn being_merged(&self, db: u32, index: u32) -> bool {
        self.workers
            .iter()
            .any(|w| w.in_use && w.db == db && w.index == index)
    }

    fn ready(&self, r: &Request, now: Micros) -> bool {
        r.db != 0 && r.not_before <= now && !self.being_merged(r.db, r.index)
    }

    /// Whether a request of `db` is ready to be taken.
    pub fn has_ready(&self, db: u32, now: Micros) -> bool {
        self.requests
            .iter()
            .any(|r| r.db == db && self.ready(r, now))
    }

    /// The oldest ready request of `worker`'s database, moved to the worker: its index.
    pub fn take(&mut self, worker: usize, now: Micros) -> Option<u32> {
        let db = self.workers[worker].db;
        let i = self
            .requests
            .iter()
            .position(|r| r.db == db && self.ready(r, now))?;
        let r = std::mem::take(&mut self.requests[i]);
        let w = &mut self.workers[worker];
        w.index = r.index;
        w.failures = r.failures;
        w.since = r.since;
        Some(r.index)
    }

    /// The worker's merge is done at `now`: a request inserts made for the index meanwhile
    /// waits from now on.
    pub fn finish(&mut self, worker: usize, now: Micros) {
        let w = self.clear_merge(worker);
        if let Some(r) = self
            .requests
            .iter_mut()
            .find(|r| r.db == w.db && r.index == w.index)
        {
            r.since = now;
        }
    }

    /// The worker compacts `index` (its inserts paused, `merge::compact_until`): it is at
    /// the index as a merge is, so that an inserter that asks for a merge meanwhile waits
    /// its `merge_wait` (the compaction gives way, `compaction_yields`) instead of taking
    /// the index for stalled and queueing for the lock the compaction holds. `finish` ends
    /// it.
    pub fn compact(&mut self, worker: usize, index: u32, now: Micros) {
        let w = &mut self.workers[worker];
        w.index = index;
        w.failures = 0;
        w.since = now;
    }

    /// Whether `worker`'s compaction should stop: a request of its database is ready, or
    /// inserts asked for a merge of the index it compacts.
    pub fn compaction_yields(&self, worker: usize, now: Micros) -> bool {
        let w = &self.workers[worker];
        self.has_ready(w.db, now)
            || self
                .requests
                .iter()
                .any(|r| r.db == w.db && r.index == w.index && r.not_before <= now)
    }

    /// Takes the worker's merge off it (it is free for the next request); returns it as it
    /// was.
    fn clear_merge(&mut self, worker: usize) -> Worker {
        let w = self.workers[worker];
        let slot = &mut self.workers[worker];
        slot.index = 0;
        slot.failures = 0;
        slot.since = 0;
        w
    }

    /// The worker merged its index but inserts filled the list again meanwhile: requeued,
    /// to be taken again at once, waiting from now on.
    pub fn again(&mut self, worker: usize, now: Micros) {
        let w = self.workers[worker];
        self.finish(worker, now);
        self.requeue(w.db, w.index, now, 0, now);
    }

    /// The worker left its index for later without failing or merging it (it was busy, or
    /// a lock was wanted): requeued, to be taken again after `delay`, still waiting since
    /// it was first asked for.
    pub fn postpone(&mut self, worker: usize, now: Micros, delay: Micros) {
        let w = self.clear_merge(worker);
        self.requeue(w.db, w.index, now + delay, w.failures, w.since);
    }

    /// The worker stopped (an ERROR or a signal) while merging: its index is requeued with
    /// a backoff, unless it failed `MAX_FAILURES` times in a row; the slot is free again.
    /// Returns the index and whether it was dropped.
    pub fn release(&mut self, worker: usize, now: Micros) -> Option<(u32, bool)> {
        let w = std::mem::take(&mut self.workers[worker]);
        if w.index == 0 {
            return None;
        }
        let failures = w.failures + 1;
        let dropped = failures >= MAX_FAILURES || self.is_held(w.db, now);
        if !dropped {
            self.requeue(w.db, w.index, now + backoff(failures), failures, w.since);
        }
        Some((w.index, dropped))
    }

    fn requeue(&mut self, db: u32, index: u32, not_before: Micros, failures: u32, since: Micros) {
        if let Some(r) = self
            .requests
            .iter_mut()
            .find(|r| r.db == db && r.index == index)
        {
            // An insert asked again meanwhile: keep the backoff anyway, and the older wait.
            r.not_before = r.not_before.max(not_before);
            r.failures = failures;
            r.since = r.since.min(since);
        } else if let Some(free) = self.requests.iter_mut().find(|r| r.db == 0) {
            *free = Request {
                db,
                index,
                not_before,
                failures,
                since,
            };
        }
    }

    /// Whether the request for `index` of `db` has waited `after` or longer without a
    /// merge of the index being done, and no worker merges it now: the workers are not
    /// making progress on it (DDL holds the index's lock, a worker fails or cannot start,
    /// or they are busy elsewhere), and its inserter had better merge itself.
    pub fn stalled(&self, db: u32, index: u32, now: Micros, after: Micros) -> bool {
        !self.being_merged(db, index)
            && self
                .requests
                .iter()
                .any(|r| r.db == db && r.index == index && now - r.since >= after)
    }

    /// Whether no worker can serve `db` now: the launcher found no free background worker
    /// slot less than `NO_SLOT_RETRY` ago, and no worker of `db` runs.
    pub fn cannot_start(&self, db: u32, now: Micros) -> bool {
        self.no_slot_at != 0
            && now - self.no_slot_at < NO_SLOT_RETRY
            && !self
                .workers
                .iter()
                .any(|w| w.in_use && !w.exiting && w.db == db)
    }

    /// The postmaster had a background worker slot for the last launch.
    pub fn slot_found(&mut self) {
        self.no_slot_at = 0;
    }

    /// The launch of a worker in `slot` failed for want of a background worker slot, at
    /// `now`: the slot is free again (the request stays, for the next try).
    pub fn no_slot(&mut self, slot: usize, now: Micros) {
        self.workers[slot] = Worker::default();
        self.no_slot_at = now;
    }

    /// A database and a free slot to start a worker in: a database with a ready request and
    /// no worker that is idle or starting (every worker it has is busy), while fewer than
    /// `max_workers` slots are in use.
    pub fn to_launch(&self, now: Micros, max_workers: usize) -> Option<(usize, u32)> {
        let limit = max_workers.min(MAX_WORKERS);
        if self.workers[..].iter().filter(|w| w.in_use).count() >= limit {
            return None;
        }
        let db = self
            .requests
            .iter()
            .filter(|r| self.ready(r, now) && !self.is_held(r.db, now))
            .map(|r| r.db)
            .find(|&db| {
                !self
                    .workers
                    .iter()
                    .any(|w| w.in_use && !w.exiting && w.db == db && w.index == 0)
            })?;
        let slot = self.workers.iter().position(|w| !w.in_use)?;
        Some((slot, db))
    }

    /// When the next request becomes ready, if one waits for a backoff.
    pub fn next_ready(&self, now: Micros) -> Option<Micros> {
        self.requests
            .iter()
            .filter(|r| r.db != 0 && r.not_before > now)
            .map(|r| r.not_before)
            .min()
    }

    /// Records the launch of a worker for `db` in `slot`.
    pub fn launch(&mut self, slot: usize, db: u32) -> u32 {
        self.launches = self.launches.wrapping_add(1);
        self.workers[slot] = Worker {
            in_use: true,
            db,
            launch: self.launches,
            ..Worker::default()
        };
        self.launches
    }

    fn is_held(&self, db: u32, now: Micros) -> bool {
        db == self.held_db && now < self.held_until
    }

    /// Keeps workers away from `db` until `until` (DDL that needs the database to itself:
    /// DROP, rename, a template), drops its requests and returns the pids of its workers,
    /// to be asked to exit.
    pub fn hold_database(&mut self, db: u32, until: Micros) -> Vec<i32> {
        self.held_db = db;
        self.held_until = until;
        for r in self.requests.iter_mut().filter(|r| r.db == db) {
            *r = Request::default();
        }
        self.workers
            .iter()
            .filter(|w| w.in_use && w.db == db && w.pid != 0)
            .map(|w| w.pid)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue_with_worker(db: u32) -> MergeQueue {
        let mut q = MergeQueue::default();
        q.workers[0] = Worker {
            in_use: true,
            db,
            latch: 1,
            pid: 10,
            ..Worker::default()
        };
        q
    }

    #[test]
    fn requests_are_deduplicated_and_bounded() {
        let mut q = MergeQueue::default();
        assert_eq!(q.request(1, 100, 0), Queued::Added);
        assert_eq!(q.request(1, 100, 0), Queued::AlreadyQueued);
        assert_eq!(q.request(2, 100, 0), Queued::Added);
        for i in 2..MAX_REQUESTS as u32 {
            assert_eq!(q.request(3, i, 0), Queued::Added);
        }
        assert_eq!(q.request(3, 9999, 0), Queued::Full);
    }

    #[test]
    fn a_worker_takes_only_its_database_and_ready_requests() {
        let mut q = queue_with_worker(1);
        q.request(2, 200, 0);
        assert_eq!(q.take(0, 0), None);
        q.request(1, 100, 0);
        assert_eq!(q.idle_worker(1), Some(0));
        assert_eq!(q.take(0, 0), Some(100));
        assert_eq!(q.idle_worker(1), None, "busy");
        assert!(!q.is_queued(1, 100), "taken out of the queue");
        // An insert asks again while it merges: queued again, for after this merge, and
        // no second worker is started for it meanwhile.
        assert_eq!(q.request(1, 100, 0), Queued::Added);
        assert_eq!(
            q.to_launch(0, 2),
            Some((1, 2)),
            "only database 2 needs a worker"
        );
        q.finish(0, 0);
        assert_eq!(q.idle_worker(1), Some(0));
        assert!(q.has_ready(1, 0));
        assert_eq!(q.take(0, 0), Some(100));
        assert!(!q.has_ready(1, 0));
        assert!(q.has_ready(2, 0));
    }

    #[test]
    fn the_cost_limit_is_shared_by_running_workers_only() {
        let mut q = queue_with_worker(1);
        assert_eq!(q.running_workers(), 1);
        q.workers[1] = Worker {
            in_use: true,
            db: 2,
            ..Worker::default()
        };
        assert_eq!(q.running_workers(), 2);
        q.workers[1].exiting = true;
        assert_eq!(q.running_workers(), 1, "an exiting worker merges no more");
    }

    #[test]
    fn failures_back_off_and_are_dropped_in_the_end() {
        let mut q = queue_with_worker(1);
        q.request(1, 100, 0);
        let mut now = 0;
        for n in 1..MAX_FAILURES {
            assert_eq!(q.take(0, now), Some(100));
            assert_eq!(q.release(0, now), Some((100, false)));
            assert_eq!(q.next_ready(now), Some(now + backoff(n)));
            q.workers[0] = queue_with_worker(1).workers[0];
            assert_eq!(q.take(0, now), None, "not before its backoff");
            now += backoff(n);
        }
        assert_eq!(q.take(0, now), Some(100));
        assert_eq!(q.release(0, now), Some((100, true)));
        assert!(!q.is_queued(1, 100));
        assert_eq!(backoff(1), 2_000_000);
        assert_eq!(backoff(30), 60_000_000);
    }

    #[test]
    fn success_resets_the_failure_count() {
        let mut q = queue_with_worker(1);
        q.request(1, 100, 0);
        q.take(0, 0);
        q.release(0, 0);
        q.workers[0] = queue_with_worker(1).workers[0];
        q.take(0, backoff(1));
        q.finish(0, backoff(1));
        q.request(1, 100, 0);
        assert_eq!(q.take(0, backoff(1)), Some(100));
        assert_eq!(q.workers[0].failures, 0);
    }

    #[test]
    fn postponed_requests_keep_their_failures_and_wait() {
        let mut q = queue_with_worker(1);
        q.request(1, 100, 0);
        q.take(0, 0);
        q.postpone(0, 0, 500);
        assert_eq!(q.take(0, 499), None);
        assert_eq!(q.take(0, 500), Some(100));
    }

    #[test]
    fn launches_one_worker_per_database_until_its_workers_are_busy() {
        let mut q = MergeQueue::default();
        assert_eq!(q.to_launch(0, 2), None, "nothing queued");
        q.request(1, 100, 0);
        q.request(1, 101, 0);
        assert_eq!(q.to_launch(0, 2), Some((0, 1)));
        assert_eq!(q.launch(0, 1), 1);
        // Started (not yet running: no latch): serves database 1.
        assert_eq!(q.to_launch(0, 2), None);
        q.workers[0].latch = 1;
        q.take(0, 0);
        // Busy, and 101 waits: a second worker.
        assert_eq!(q.to_launch(0, 2), Some((1, 1)));
        q.workers[1] = q.workers[0];
        q.request(2, 200, 0);
        assert_eq!(q.to_launch(0, 2), None, "merge_workers reached");
        assert_eq!(q.to_launch(0, 3), Some((2, 2)));
        // A worker that is exiting does not serve its database any more.
        q.hold_database(2, 1);
        q.workers[1].index = 0;
        q.workers[1].exiting = true;
        assert_eq!(q.to_launch(0, 3), Some((2, 1)));
    }

    #[test]
    fn a_held_database_gets_no_worker_until_released() {
        let mut q = queue_with_worker(1);
        q.request(1, 100, 0);
        q.request(2, 200, 0);
        q.take(0, 0);
        assert_eq!(q.hold_database(1, 1000), vec![10]);
        assert!(q.is_queued(2, 200));
        // Its worker, stopped, does not requeue; a new request waits for the hold's end.
        assert_eq!(q.release(0, 10), Some((100, true)));
        q.request(1, 101, 0);
        assert_eq!(q.to_launch(10, 2), Some((0, 2)));
        assert_eq!(q.to_launch(1000, 2), Some((0, 1)));
        // One database is held at a time (DDL on databases is rare and brief).
        q.hold_database(2, 1000);
        assert_eq!(q.to_launch(10, 2), Some((0, 1)));
    }

    #[test]
    fn a_request_no_worker_serves_stalls_until_a_merge_of_it_is_done() {
        let mut q = queue_with_worker(1);
        q.request(1, 100, 1_000);
        assert!(!q.stalled(1, 100, 1_049, 50), "waited less than 50");
        assert!(q.stalled(1, 100, 1_050, 50), "untaken for 50");
        assert!(!q.stalled(1, 101, 1_050, 50), "no request for 101");
        assert!(!q.stalled(2, 100, 1_050, 50), "another database's index");
        // Taken: a worker merges it, however long.
        q.take(0, 1_050);
        assert!(!q.stalled(1, 100, 9_000, 50));
        // Inserts ask again meanwhile; the worker's lock attempt fails (DDL holds the
        // index): postponed, the index still waits since it was first asked for.
        assert_eq!(q.request(1, 100, 2_000), Queued::Added);
        q.postpone(0, 2_100, 500);
        assert_eq!(q.requests[0].since, 1_000);
        assert!(q.stalled(1, 100, 2_100, 50));
        // Taken again and merged: the wait starts again.
        q.take(0, 2_600);
        q.request(1, 100, 2_700);
        q.finish(0, 3_000);
        assert!(!q.stalled(1, 100, 3_049, 50));
        assert!(q.stalled(1, 100, 3_050, 50));
        // Merged but refilled meanwhile: requeued, waiting from then on.
        q.take(0, 3_050);
        q.again(0, 4_000);
        assert!(q.is_queued(1, 100));
        assert!(!q.stalled(1, 100, 4_049, 50));
        // A failure keeps the wait (a worker that fails makes no progress).
        q.take(0, 4_050);
        q.release(0, 4_060);
        assert!(q.stalled(1, 100, 4_060, 60));
    }

    #[test]
    fn a_compaction_is_no_stall_and_gives_way_to_requests() {
        let mut q = queue_with_worker(1);
        q.compact(0, 100, 1_000);
        assert!(!q.compaction_yields(0, 1_000), "nothing asked for");
        assert_eq!(q.idle_worker(1), None, "busy compacting");
        // Inserts into the index it compacts ask for a merge: the compaction is at it (no
        // stall however long it takes to stop), and stops for it.
        assert_eq!(q.request(1, 100, 1_100), Queued::Added);
        assert!(!q.stalled(1, 100, 9_000, 50));
        assert!(q.compaction_yields(0, 1_100));
        assert_eq!(
            q.to_launch(1_100, 2),
            None,
            "no second worker for the same index"
        );
        q.finish(0, 2_000);
        assert_eq!(q.take(0, 2_000), Some(100), "merged next");
        q.finish(0, 3_000);
        // A request of another index of its database stops it too; one of another
        // database, or one backing off, does not.
        q.compact(0, 100, 3_000);
        q.request(2, 200, 3_000);
        assert!(!q.compaction_yields(0, 3_000));
        q.request(1, 101, 3_000);
        q.requests
            .iter_mut()
            .find(|r| r.index == 101)
            .unwrap()
            .not_before = 5_000;
        assert!(!q.compaction_yields(0, 4_999));
        assert!(q.compaction_yields(0, 5_000));
        // A compaction that fails (an ERROR, a signal) leaves its index to a merge later.
        assert_eq!(q.release(0, 5_000), Some((100, false)));
        assert!(q.is_queued(1, 100));
    }

    #[test]
    fn no_worker_can_start_while_slots_are_missing_and_none_runs() {
        let mut q = MergeQueue::default();
        q.request(1, 100, 0);
        assert!(!q.cannot_start(1, 0), "no launch tried yet");
        let (slot, db) = q.to_launch(0, 2).unwrap();
        q.launch(slot, db);
        q.no_slot(slot, 10);
        assert!(!q.workers[slot].in_use, "the slot is free again");
        assert!(q.is_queued(1, 100), "the request stays for the next try");
        assert!(q.cannot_start(1, 10));
        assert!(q.cannot_start(2, 10 + NO_SLOT_RETRY - 1));
        assert!(!q.cannot_start(1, 10 + NO_SLOT_RETRY), "time to try again");
        // A database whose worker runs is still served.
        q.workers[1] = queue_with_worker(2).workers[0];
        assert!(!q.cannot_start(2, 10));
        assert!(q.cannot_start(1, 10));
        // A launch that found a slot clears it.
        q.slot_found();
        assert!(!q.cannot_start(1, 10));
    }
}
