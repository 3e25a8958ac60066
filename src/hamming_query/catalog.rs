//! OIDs of this extension's own objects in the current database.
//!
//! The planner hook runs for every query of every database the library is loaded in, so the
//! answer (including "not installed here") is cached per backend and forgotten whenever
//! `pg_proc` or `pg_operator` changes, which CREATE, DROP and ALTER EXTENSION all do.
//! Lookups go through the system caches by schema OID, never by name resolution: no
//! `search_path` dependence and no permission check that could make an unrelated query fail.
//!
//! Also here: which table columns carry an index of the `hamming` access method, the
//! planner hook's test of whether a rewrite can help ([`has_hamming_index`]).

use pgrx::pg_sys::{self, Oid};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;

const EXTENSION_NAME: &std::ffi::CStr = c"neardup";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Simhash64,
    Int8,
    Hash256,
    Hash128,
}

impl Kind {
    const ALL: [Kind; 4] = [Kind::Simhash64, Kind::Int8, Kind::Hash256, Kind::Hash128];

    /// A wide code, whose `hamming_within` is SQL the planner inlines into the ball (no
    /// support function: `within.rs` serves the 64-bit ones).
    pub fn is_wide(self) -> bool {
        matches!(self, Kind::Hash256 | Kind::Hash128)
    }
}

/// The objects for one code type (`simhash64`, `bigint`, `hash256` or `hash128`).
#[derive(Clone, Copy)]
pub struct Objects {
    /// `hamming(t, t)`, also the function of the `<~>` operator.
    pub hamming: Oid,
    /// `hamming_within(t, t, integer)`.
    pub within: Oid,
    /// The constructor `hamming_ball(t, integer)`.
    pub ball: Oid,
    /// The operator `t <@ hamming_ball`.
    pub within_ball: Oid,
}

#[derive(Clone, Copy)]
pub struct Catalog {
    /// The `hamming` index access method (access methods have no schema).
    pub access_method: Oid,
    /// `hamming_ball`, the ball of 64-bit codes.
    pub ball_type: Oid,
    pub simhash64: Objects,
    pub int8: Objects,
    pub hash256: Objects,
    pub hash128: Objects,
}

impl Catalog {
    pub fn objects(&self, kind: Kind) -> &Objects {
        match kind {
            Kind::Simhash64 => &self.simhash64,
            Kind::Int8 => &self.int8,
            Kind::Hash256 => &self.hash256,
            Kind::Hash128 => &self.hash128,
        }
    }

    fn kind_where(&self, matches: impl Fn(&Objects) -> bool) -> Option<Kind> {
        Kind::ALL
            .into_iter()
            .find(|&kind| matches(self.objects(kind)))
    }

    /// Which `hamming` overload `func` is, if any.
    pub fn hamming_kind(&self, func: Oid) -> Option<Kind> {
        self.kind_where(|o| o.hamming == func)
    }

    /// Which `hamming_within` overload `func` is, if any.
    pub fn within_kind(&self, func: Oid) -> Option<Kind> {
        self.kind_where(|o| o.within == func)
    }

    /// Which `hamming_ball` constructor `func` is, if any.
    pub fn ball_kind(&self, func: Oid) -> Option<Kind> {
        self.kind_where(|o| o.ball == func)
    }
}

#[derive(Clone, Copy)]
enum Cached {
    Unknown,
    NotInstalled,
    Installed(Catalog),
}

thread_local! {
    // A backend is single-threaded; this is simply its private cache.
    static CACHE: Cell<Cached> = const { Cell::new(Cached::Unknown) };
}

/// This extension's objects, or `None` when it is not installed in the current database (or is
/// half-created: CREATE EXTENSION's own script can be planned mid-way; that is not cached).
/// Must run inside a transaction (the planner and planner support functions always do).
pub fn lookup() -> Option<Catalog> {
    match CACHE.get() {
        Cached::Installed(catalog) => Some(catalog),
        Cached::NotInstalled => None,
        Cached::Unknown => {
            // SAFETY: catalog reads within the caller's transaction; see search().
            let found = unsafe { search() };
            if let Some(state) = found {
                CACHE.set(state);
            }
            match found {
                Some(Cached::Installed(catalog)) => Some(catalog),
                _ => None,
            }
        }
    }
}

/// `Some(state)` when the answer may be cached, `None` when the extension is only partly there.
unsafe fn search() -> Option<Cached> {
    // SAFETY (whole function): plain catalog reads through PostgreSQL's own lookup functions,
    // which raise an ERROR rather than misbehave; every pointer passed is valid for the call.
    unsafe {
        let extension = pg_sys::get_extension_oid(EXTENSION_NAME.as_ptr(), true);
        if extension == pg_sys::InvalidOid {
            return Some(Cached::NotInstalled);
        }
        let schema = extension_schema(extension)?;
        let simhash64 = type_oid(c"simhash64", schema)?;
        let ball_type = type_oid(c"hamming_ball", schema)?;
        let objects = |t: Oid, ball_type: Oid| -> Option<Objects> {
            Some(Objects {
                hamming: function_oid(c"hamming", &[t, t], schema)?,
                within: function_oid(c"hamming_within", &[t, t, pg_sys::INT4OID], schema)?,
                ball: function_oid(c"hamming_ball", &[t, pg_sys::INT4OID], schema)?,
                within_ball: operator_oid(c"<@", t, ball_type, schema)?,
            })
        };
        let wide = |t: &std::ffi::CStr, ball: &std::ffi::CStr| {
            objects(type_oid(t, schema)?, type_oid(ball, schema)?)
        };
        let access_method = valid(pg_sys::get_am_oid(c"hamming".as_ptr(), true))?;
        Some(Cached::Installed(Catalog {
            access_method,
            ball_type,
            simhash64: objects(simhash64, ball_type)?,
            int8: objects(pg_sys::INT8OID, ball_type)?,
            hash256: wide(c"hash256", c"hash256_ball")?,
            hash128: wide(c"hash128", c"hash128_ball")?,
        }))
    }
}

/// The type `name` of this extension (in whatever schema holds it), if installed.
pub fn extension_type(name: &std::ffi::CStr) -> Option<Oid> {
    // SAFETY: catalog reads within the caller's transaction, as in search().
    unsafe {
        let extension = valid(pg_sys::get_extension_oid(EXTENSION_NAME.as_ptr(), true))?;
        type_oid(name, extension_schema(extension)?)
    }
}

fn valid(oid: Oid) -> Option<Oid> {
    (oid != pg_sys::InvalidOid).then_some(oid)
}

/// `pg_extension.extnamespace` (PostgreSQL 15 does not export `get_extension_schema`).
unsafe fn extension_schema(extension: Oid) -> Option<Oid> {
    // SAFETY: the scan pattern of extension.c's get_extension_schema: the relation is opened
    // and closed here, the scan key lives across the scan, and the tuple is read while the
    // scan still pins it.
    unsafe {
        let relation = pg_sys::table_open(
            pg_sys::ExtensionRelationId,
            pg_sys::AccessShareLock as pg_sys::LOCKMODE,
        );
        let mut key = pg_sys::ScanKeyData::default();
        pg_sys::ScanKeyInit(
            &mut key,
            pg_sys::Anum_pg_extension_oid as pg_sys::AttrNumber,
            pg_sys::BTEqualStrategyNumber as pg_sys::StrategyNumber,
            pg_sys::Oid::from(pg_sys::F_OIDEQ),
            pg_sys::Datum::from(extension),
        );
        let scan = pg_sys::systable_beginscan(
            relation,
            pg_sys::Oid::from(pg_sys::ExtensionOidIndexId),
            true,
            std::ptr::null_mut(),
            1,
            &mut key,
        );
        let tuple = pg_sys::systable_getnext(scan);
        let schema = if tuple.is_null() {
            pg_sys::InvalidOid
        } else {
            (*pg_sys::GETSTRUCT(tuple).cast::<pg_sys::FormData_pg_extension>()).extnamespace
        };
        pg_sys::systable_endscan(scan);
        pg_sys::table_close(relation, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        valid(schema)
    }
}

unsafe fn type_oid(name: &std::ffi::CStr, schema: Oid) -> Option<Oid> {
    // SAFETY: TYPENAMENSP is keyed by (name, namespace); a C string is how PostgreSQL itself
    // passes a `name` key.
    valid(unsafe {
        pg_sys::GetSysCacheOid(
            pg_sys::SysCacheIdentifier::TYPENAMENSP as i32,
            pg_sys::Anum_pg_type_oid as pg_sys::AttrNumber,
            pg_sys::Datum::from(name.as_ptr()),
            pg_sys::Datum::from(schema),
            pg_sys::Datum::from(0),
            pg_sys::Datum::from(0),
        )
    })
}

unsafe fn function_oid(name: &std::ffi::CStr, args: &[Oid], schema: Oid) -> Option<Oid> {
    // SAFETY: PROCNAMEARGSNSP is keyed by (name, oidvector of argument types, namespace);
    // buildoidvector copies the argument types into a palloc'd vector.
    valid(unsafe {
        let arg_types = pg_sys::buildoidvector(args.as_ptr(), args.len() as i32);
        pg_sys::GetSysCacheOid(
            pg_sys::SysCacheIdentifier::PROCNAMEARGSNSP as i32,
            pg_sys::Anum_pg_proc_oid as pg_sys::AttrNumber,
            pg_sys::Datum::from(name.as_ptr()),
            pg_sys::Datum::from(arg_types),
            pg_sys::Datum::from(schema),
            pg_sys::Datum::from(0),
        )
    })
}

unsafe fn operator_oid(name: &std::ffi::CStr, left: Oid, right: Oid, schema: Oid) -> Option<Oid> {
    // SAFETY: OPERNAMENSP is keyed by (name, left type, right type, namespace).
    valid(unsafe {
        pg_sys::GetSysCacheOid(
            pg_sys::SysCacheIdentifier::OPERNAMENSP as i32,
            pg_sys::Anum_pg_operator_oid as pg_sys::AttrNumber,
            pg_sys::Datum::from(name.as_ptr()),
            pg_sys::Datum::from(left),
            pg_sys::Datum::from(right),
            pg_sys::Datum::from(schema),
        )
    })
}

thread_local! {
    /// (table, column) -> whether a `hamming` index is on it, for [`has_hamming_index`].
    static INDEXED: RefCell<HashMap<(Oid, pg_sys::AttrNumber), bool>> =
        RefCell::new(HashMap::new());
    /// Bumped by every relcache invalidation, so that an answer computed while one arrived
    /// is not cached.
    static GENERATION: Cell<u64> = const { Cell::new(0) };
}

/// Whether column `column` of table `table` has an index of the `hamming` access method,
/// or the same-named column of any of its partitions or inheritance children (at any
/// depth) has one: a bound on the parent reaches those through partition and inheritance
/// expansion. Any key column of the index counts.
///
/// A Citus table (distributed, reference or Citus-managed local) counts as having none: its
/// rows live in shards, and Citus sends each shard's query, deparsed to SQL, to the node
/// holding it, where this hook runs again on the shard (a plain table) and adds the call
/// there. Added on the coordinator as well, it would reach the shard beside the shard's own
/// (two identical index conditions: the ball searched twice), and without its mark
/// ([`super::rewrite::GENERATED`]: deparsing drops the input collation), so the shard would
/// count its selectivity twice.
///
/// Cached per backend and forgotten on any relcache invalidation: CREATE / DROP INDEX,
/// ATTACH / DETACH PARTITION and ALTER TABLE ... INHERIT all send one for a table involved.
/// Children are found through `pg_inherits` and `pg_index` without locking them: locking
/// every partition here would undo the planner's pruning of partitions before locking.
pub fn has_hamming_index(catalog: &Catalog, table: Oid, column: pg_sys::AttrNumber) -> bool {
    if let Some(known) = INDEXED.with_borrow(|m| m.get(&(table, column)).copied()) {
        return known;
    }
    let generation = GENERATION.get();
    // SAFETY: catalog reads within the planner's transaction; see search_indexes().
    let found = unsafe { search_indexes(catalog.access_method, table, column) };
    if GENERATION.get() == generation {
        INDEXED.with_borrow_mut(|m| m.insert((table, column), found));
    }
    found
}

// pg_inherits is not in pgrx's bindings (catalog/pg_inherits.h); a test checks these.
const INHERITS_RELATION: Oid = Oid::from_u32(2611);
const INHERITS_PARENT_INDEX: Oid = Oid::from_u32(2187);
const ANUM_INHERITS_INHPARENT: pg_sys::AttrNumber = 2;

unsafe fn search_indexes(access_method: Oid, table: Oid, column: pg_sys::AttrNumber) -> bool {
    // SAFETY: syscache and catalog index reads; get_attname returns a palloc'd name or NULL.
    unsafe {
        let name = pg_sys::get_attname(table, column, true);
        if name.is_null() || is_citus_table(table) {
            return false;
        }
        // The whole inheritance tree; multiple inheritance can reach a child twice.
        let mut pending = vec![table];
        let mut seen = vec![table];
        while let Some(relation) = pending.pop() {
            pgrx::check_for_interrupts!();
            let column = pg_sys::get_attnum(relation, name);
            if column != pg_sys::InvalidAttrNumber as pg_sys::AttrNumber
                && indexed_by(access_method, relation, column)
            {
                return true;
            }
            for child in children(relation) {
                if !seen.contains(&child) {
                    seen.push(child);
                    pending.push(child);
                }
            }
        }
        false
    }
}

/// Whether `table` has a row in Citus's `pg_catalog.pg_dist_partition` (keyed by
/// `logicalrelid`, its first column, through its unique index). Both are found by name, so
/// this needs no Citus headers or library, and is false wherever Citus is not installed.
pub(crate) fn is_citus_table(table: Oid) -> bool {
    // SAFETY: syscache name lookups, then a catalog index scan as in scan_by_oid, within the
    // caller's transaction.
    unsafe {
        let lookup = |name: &std::ffi::CStr| {
            valid(pg_sys::get_relname_relid(
                name.as_ptr(),
                pg_sys::Oid::from(pg_sys::PG_CATALOG_NAMESPACE),
            ))
        };
        let (Some(partitions), Some(index)) = (
            lookup(c"pg_dist_partition"),
            lookup(c"pg_dist_partition_logical_relid_index"),
        ) else {
            return false;
        };
        let mut found = false;
        scan_by_oid(partitions, index, 1, table, |_| found = true);
        found
    }
}

/// Scans the catalog index `index` of `catalog_relation` for rows whose column `attribute`
/// equals `key`, calling `row` with each row's fixed part.
unsafe fn scan_by_oid(
    catalog_relation: Oid,
    index: Oid,
    attribute: pg_sys::AttrNumber,
    key: Oid,
    mut row: impl FnMut(*mut std::ffi::c_void),
) {
    // SAFETY: the scan pattern of extension_schema below.
    unsafe {
        let relation = pg_sys::table_open(
            catalog_relation,
            pg_sys::AccessShareLock as pg_sys::LOCKMODE,
        );
        let mut scan_key = pg_sys::ScanKeyData::default();
        pg_sys::ScanKeyInit(
            &mut scan_key,
            attribute,
            pg_sys::BTEqualStrategyNumber as pg_sys::StrategyNumber,
            pg_sys::Oid::from(pg_sys::F_OIDEQ),
            pg_sys::Datum::from(key),
        );
        let scan = pg_sys::systable_beginscan(
            relation,
            index,
            true,
            std::ptr::null_mut(),
            1,
            &mut scan_key,
        );
        loop {
            let tuple = pg_sys::systable_getnext(scan);
            if tuple.is_null() {
                break;
            }
            row(pg_sys::GETSTRUCT(tuple).cast());
        }
        pg_sys::systable_endscan(scan);
        pg_sys::table_close(relation, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
    }
}

/// The direct partitions or inheritance children of `relation`.
unsafe fn children(relation: Oid) -> Vec<Oid> {
    let mut found = Vec::new();
    // SAFETY: pg_inherits rows start with `inhrelid oid`.
    unsafe {
        scan_by_oid(
            INHERITS_RELATION,
            INHERITS_PARENT_INDEX,
            ANUM_INHERITS_INHPARENT,
            relation,
            |row| found.push(row.cast::<Oid>().read()),
        );
    }
    found
}

/// Whether an index of `access_method` on `relation` has `column` among its key columns.
unsafe fn indexed_by(access_method: Oid, relation: Oid, column: pg_sys::AttrNumber) -> bool {
    let mut indexes = Vec::new();
    // SAFETY: a pg_index row's fixed part is FormData_pg_index, whose `indkey` holds
    // `indnatts` entries, the key columns first.
    unsafe {
        scan_by_oid(
            pg_sys::IndexRelationId,
            pg_sys::Oid::from(pg_sys::IndexIndrelidIndexId),
            pg_sys::Anum_pg_index_indrelid as pg_sys::AttrNumber,
            relation,
            |row| {
                let index = &*row.cast::<pg_sys::FormData_pg_index>();
                let keys = index.indkey.values.as_slice(index.indnkeyatts as usize);
                if keys.contains(&column) {
                    indexes.push(index.indexrelid);
                }
            },
        );
        indexes
            .into_iter()
            .any(|index| relation_access_method(index) == access_method)
    }
}

/// `pg_class.relam` (PostgreSQL 15 has no `get_rel_relam`).
unsafe fn relation_access_method(relation: Oid) -> Oid {
    // SAFETY: a RELOID syscache tuple's fixed part is FormData_pg_class; released after use.
    unsafe {
        let tuple = pg_sys::SearchSysCache1(
            pg_sys::SysCacheIdentifier::RELOID as i32,
            pg_sys::Datum::from(relation),
        );
        if tuple.is_null() {
            return pg_sys::InvalidOid;
        }
        let am = (*pg_sys::GETSTRUCT(tuple).cast::<pg_sys::FormData_pg_class>()).relam;
        pg_sys::ReleaseSysCache(tuple);
        am
    }
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn forget_indexes(_arg: pg_sys::Datum, _relation: Oid) {
    GENERATION.set(GENERATION.get().wrapping_add(1));
    INDEXED.with_borrow_mut(HashMap::clear);
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn forget(_arg: pg_sys::Datum, _cache: std::ffi::c_int, _hash: u32) {
    CACHE.set(Cached::Unknown);
}

/// Registers [`forget`] for changes to functions and operators, and [`forget_indexes`] for
/// relcache invalidations. Safe in the postmaster (the registration is inherited by every
/// backend) and in a backend; it touches no catalog.
pub fn register_invalidation() {
    // SAFETY: as below.
    unsafe {
        pg_sys::CacheRegisterRelcacheCallback(Some(forget_indexes), pg_sys::Datum::from(0));
    }
    for cache in [
        pg_sys::SysCacheIdentifier::PROCOID,
        pg_sys::SysCacheIdentifier::OPEROID,
    ] {
        // SAFETY: registering a callback is a plain append to a backend-local array.
        unsafe {
            pg_sys::CacheRegisterSyscacheCallback(
                cache as i32,
                Some(forget),
                pg_sys::Datum::from(0),
            );
        }
    }
}
