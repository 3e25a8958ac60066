//! DDL that needs a database without other sessions (DROP DATABASE, ALTER DATABASE,
//! renaming it, copying it as a template) waits 5 s for them and then fails. A merge worker
//! connected to that database is such a session, so a utility hook asks its workers to
//! exit (SIGTERM, which they act on at their next interrupt check) and keeps new ones away
//! for a minute, before the statement runs, as PostgreSQL does with autovacuum workers.

use super::QUEUE;
use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::PgList;
use std::ffi::CStr;

/// How long workers stay away from a database after such DDL.
const HOLD_US: i64 = 60_000_000;

static mut PREVIOUS: pg_sys::ProcessUtility_hook_type = None;

pub fn install_hook() {
    // SAFETY: _PG_init, single-threaded; chains to the hook installed before ours.
    unsafe {
        PREVIOUS = pg_sys::ProcessUtility_hook;
        pg_sys::ProcessUtility_hook = Some(utility);
    }
}

unsafe extern "C-unwind" {
    fn kill(pid: i32, signal: i32) -> i32;
}

#[allow(clippy::too_many_arguments)]
#[pg_guard]
unsafe extern "C-unwind" fn utility(
    pstmt: *mut pg_sys::PlannedStmt,
    query: *const std::ffi::c_char,
    read_only_tree: bool,
    context: pg_sys::ProcessUtilityContext::Type,
    params: pg_sys::ParamListInfo,
    env: *mut pg_sys::QueryEnvironment,
    dest: *mut pg_sys::DestReceiver,
    qc: *mut pg_sys::QueryCompletion,
) {
    // SAFETY: the statement PostgreSQL is about to run; the previous hook or the standard
    // function is called with the arguments we were given.
    unsafe {
        if let Some(name) = database_wanted_alone((*pstmt).utilityStmt) {
            let db = pg_sys::get_database_oid(name.as_ptr(), true);
            if db != pg_sys::InvalidOid {
                hold(db.to_u32());
            }
        }
        match PREVIOUS {
            Some(previous) => {
                previous(pstmt, query, read_only_tree, context, params, env, dest, qc)
            }
            None => pg_sys::standard_ProcessUtility(
                pstmt,
                query,
                read_only_tree,
                context,
                params,
                env,
                dest,
                qc,
            ),
        }
    }
}

/// The database a statement needs without other sessions, if it is one of those.
unsafe fn database_wanted_alone(stmt: *mut pg_sys::Node) -> Option<&'static CStr> {
    // SAFETY: a parse node; its tag says its type.
    unsafe {
        let name = match (*stmt).type_ {
            pg_sys::NodeTag::T_DropdbStmt => (*stmt.cast::<pg_sys::DropdbStmt>()).dbname,
            pg_sys::NodeTag::T_AlterDatabaseStmt => {
                (*stmt.cast::<pg_sys::AlterDatabaseStmt>()).dbname
            }
            pg_sys::NodeTag::T_RenameStmt => {
                let rename = &*stmt.cast::<pg_sys::RenameStmt>();
                if rename.renameType != pg_sys::ObjectType::OBJECT_DATABASE {
                    return None;
                }
                rename.subname
            }
            pg_sys::NodeTag::T_CreatedbStmt => {
                let options = (*stmt.cast::<pg_sys::CreatedbStmt>()).options;
                PgList::<pg_sys::DefElem>::from_pg(options)
                    .iter_ptr()
                    .find(|d| CStr::from_ptr((**d).defname) == c"template")
                    .map(|d| pg_sys::defGetString(d))?
            }
            _ => return None,
        };
        (!name.is_null()).then(|| CStr::from_ptr(name))
    }
}

/// Keeps workers away from `db` and asks those connected to it to exit.
fn hold(db: u32) {
    // SAFETY: a clock read.
    let now = unsafe { pg_sys::GetCurrentTimestamp() };
    let pids = QUEUE.exclusive().0.hold_database(db, now + HOLD_US);
    for pid in pids {
        // SAFETY: a merge worker of this server (the slot is freed only when it exits; a
        // pid reused meanwhile by another process of ours gets a SIGTERM it handles).
        unsafe { kill(pid, pg_sys::SIGTERM as i32) };
    }
}
