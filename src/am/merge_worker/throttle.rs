//! The workers' cost-based delay, as autovacuum's. While `VacuumCostActive` is set,
//! PostgreSQL's buffer manager charges every page this process finds in shared buffers,
//! reads or dirties to `VacuumCostBalance`, and `vacuum_delay_point` (which a merge calls
//! before each page it writes) sleeps the delay in force, scaled by the balance, once the
//! balance passes the limit in force (wait event `VacuumDelay`). A worker sets these for
//! each merge from `neardup.merge_cost_delay` and its share of `neardup.merge_cost_limit`:
//! the limit is divided among the workers running, as autovacuum divides its own, so that
//! more workers do not mean more I/O.

use super::{MERGE_COST_DELAY, MERGE_COST_LIMIT, QUEUE};
use pgrx::pg_sys;

/// The cost-based delay in force for one merge; dropping it puts back the process's own
/// values (on 15 the globals that `vacuum_delay_point` reads are the `vacuum_cost_*`
/// settings themselves, which a reload of the configuration must find intact).
pub struct Throttle {
    saved: (bool, f64, i32),
}

impl Throttle {
    pub fn start() -> Throttle {
        // SAFETY: this process's settings and globals, read by its own buffer manager and
        // vacuum_delay_point only.
        unsafe {
            let delay = match MERGE_COST_DELAY.get() {
                d if d < 0.0 => pg_sys::VacuumCostDelay,
                d => d,
            };
            let limit = match MERGE_COST_LIMIT.get() {
                l if l < 0 => pg_sys::VacuumCostLimit,
                l => l,
            };
            let running = QUEUE.share().0.running_workers().max(1) as i32;
            let (in_force_delay, in_force_limit) = in_force();
            let saved = (pg_sys::VacuumCostActive, *in_force_delay, *in_force_limit);
            pg_sys::VacuumCostActive = delay > 0.0;
            *in_force_delay = delay;
            *in_force_limit = (limit / running).max(1);
            pg_sys::VacuumCostBalance = 0;
            Throttle { saved }
        }
    }
}

impl Drop for Throttle {
    fn drop(&mut self) {
        // SAFETY: as in start.
        unsafe {
            let (in_force_delay, in_force_limit) = in_force();
            (pg_sys::VacuumCostActive, *in_force_delay, *in_force_limit) = self.saved;
            pg_sys::VacuumCostBalance = 0;
        }
    }
}

/// The delay and limit `vacuum_delay_point` reads: on 15 the settings `VacuumCostDelay`
/// and `VacuumCostLimit` themselves; from 16 on `vacuum_cost_delay` and
/// `vacuum_cost_limit`, which VACUUM sets from those settings (and autovacuum from its own).
unsafe fn in_force() -> (*mut f64, *mut i32) {
    #[cfg(feature = "pg15")]
    {
        (
            &raw mut pg_sys::VacuumCostDelay,
            &raw mut pg_sys::VacuumCostLimit,
        )
    }
    #[cfg(not(feature = "pg15"))]
    {
        (
            &raw mut pg_sys::vacuum_cost_delay,
            &raw mut pg_sys::vacuum_cost_limit,
        )
    }
}
