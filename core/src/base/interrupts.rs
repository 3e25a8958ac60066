//! Cancellation points for the loops whose length grows with the data (the text pipeline,
//! batch pairs, components, index builds). The core knows nothing of PostgreSQL, so the
//! binding layer installs the check once per process: there it is `CHECK_FOR_INTERRUPTS`,
//! whose ERROR unwinds through the core as a panic (the core is built with `panic =
//! "unwind"` and holds no state that a half-finished loop could leave inconsistent).
//! Without a handler, as in plain `cargo test`, a check does nothing.

use std::sync::OnceLock;

static HANDLER: OnceLock<fn()> = OnceLock::new();

/// Installs the process's check; later calls keep the first one.
pub fn set_handler(check: fn()) {
    let _ = HANDLER.set(check);
}

/// Runs the installed check (an atomic load and a call: cheap enough for once per page or
/// per few thousand items, not for every item of a tight loop).
#[inline]
pub fn check() {
    if let Some(check) = HANDLER.get() {
        check();
    }
}

/// A countdown that checks once every `PERIOD` ticks, for tight loops.
pub struct Every<const PERIOD: u32>(u32);

impl<const PERIOD: u32> Default for Every<PERIOD> {
    fn default() -> Self {
        Every(PERIOD)
    }
}

impl<const PERIOD: u32> Every<PERIOD> {
    #[inline]
    pub fn tick(&mut self) {
        self.0 -= 1;
        if self.0 == 0 {
            self.0 = PERIOD;
            check();
        }
    }
}
