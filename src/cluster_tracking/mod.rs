//! Keeping a cluster table current while the clustered table changes (Zhu et al. §5): the
//! trigger function `neardup_track_clusters` and `neardup_cluster_tracking`, which creates a
//! cluster table, fills it and installs the triggers.
//!
//! Signatures are simhash fingerprints (`simhash64` or `bigint`) or wide codes (`hash256`,
//! `hash128`), near within a Hamming distance and found through a `hamming` index, or
//! minhash sketches (`minhash_sketch`, near when they share a band of `lsh_bands(sketch,
//! threshold)` and `jaccard >= threshold`, found through a GIN index on that expression).
//! Clusters are kept by one of the two methods of `neardup_clusters`:
//!
//! - `components`: connected components. New rows join and merge the clusters of their
//!   near-duplicates; after deletes, what is left of a cluster splits into its connected
//!   parts; the representative is the cluster's first member by priority. After inserts and
//!   deletes the table equals `neardup_clusters` of the final table. An update keeps a row
//!   whose new signature is still near its representative in its cluster (Zhu et al.'s
//!   tier 1), so after updates it may differ from the batch clustering.
//! - `representatives` (stars, which do not chain): a new row joins the cluster of the
//!   first representative by priority (then id) within the threshold of it; a row near no
//!   representative becomes the representative of a cluster of its own. A statement's new
//!   rows are taken in priority order, so one can become the representative of later ones.
//!   Deleting a member changes nothing else (the label stays the smallest remaining id);
//!   deleting a representative takes its cluster's other members out and inserts them again
//!   by the same rule. An update that changes the signature (or id) is a delete and an
//!   insert of the row; one that changes only other columns, the priority's included,
//!   changes nothing. Every member is always within the threshold of its representative,
//!   and inserting the rows in priority order, in statements of any size, ends in exactly
//!   `neardup_clusters(…, method => 'representatives')` of the table.
//!
//! The triggers are statement-level with transition tables, so `INSERT … SELECT` of a
//! million rows searches its neighbours in one join and writes the clusters in a few
//! statements instead of a round of queries per row. What each statement does is planned by
//! `neardup_core::clusters::cluster_plans`; `maintain` turns the plans into queries.
//!
//! Concurrency: every statement that changes the clusters first takes a transaction-level
//! advisory lock on the cluster table, and every query after it takes a fresh snapshot
//! (READ COMMITTED). So a session that inserts a near-duplicate of a row another session has
//! just inserted waits for that transaction to end, then sees its row and joins its cluster:
//! two sessions cannot leave two clusters that should be one. Under REPEATABLE READ or
//! SERIALIZABLE the statement's snapshot predates the lock, so the trigger refuses to run.

mod maintain;

use crate::hamming_query::wide_radius;
use crate::support::errors;
use crate::support::table_args::{checked_distance, quote_ident};
#[cfg(any(test, feature = "pg_test"))]
pub(crate) use maintain::near_condition;
use maintain::{Maintainer, Rows};
use pgrx::prelude::*;
use pgrx::{PgSqlErrorCode, PgTrigger, PgTriggerError};

pgrx::extension_sql_file!(
    "../../sql/cluster_tracking.sql",
    name = "cluster_tracking",
    requires = [neardup_track_clusters, "hamming_query_operators"]
);

/// The first key of the advisory locks the triggers take (the second is the cluster table's
/// OID), so they do not collide with an application's own one-key advisory locks.
const ADVISORY_LOCK_SPACE: i32 = 0x6e64_7570; // "ndup"

/// `neardup_track_clusters(clusters_table, id_column, signature_column, threshold
/// [, priority [, method]])`: an AFTER … FOR EACH STATEMENT trigger with transition tables.
/// The threshold is a maximum Hamming distance (an integer) for a simhash column and a
/// minimum Jaccard estimate for a `minhash_sketch` column; the column's type decides. An
/// empty priority is none; the method is `components` (the default) or `representatives`.
#[pg_trigger]
fn neardup_track_clusters<'a>(
    trigger: &'a PgTrigger<'a>,
) -> Result<Option<PgHeapTuple<'a, AllocatedByPostgres>>, PgTriggerError> {
    if !trigger.event().fired_for_statement() || !trigger.event().fired_after() {
        protocol_violation("must be fired AFTER … FOR EACH STATEMENT");
    }
    let args = trigger.extra_args()?;
    let table = trigger.relid()?;
    let event = trigger.event();
    let settings = TriggerSettings::new();
    Spi::connect_mut(|client| {
        let maintainer = Maintainer::open(client, table, &args);
        if event.fired_by_truncate() {
            maintainer.truncate(client);
            return;
        }
        // SAFETY: the trigger manager passed this TriggerData for the duration of the call;
        // registering it names the transition tables for the queries below.
        unsafe {
            let data = trigger.trigger_data() as *const pg_sys::TriggerData;
            pg_sys::SPI_register_trigger_data(data as *mut pg_sys::TriggerData);
        }
        let old = trigger.old_transition_table_name().ok().flatten();
        let new = trigger.new_transition_table_name().ok().flatten();
        if event.fired_by_insert() {
            let new = new.unwrap_or_else(|| protocol_violation("needs REFERENCING NEW TABLE"));
            maintainer.insert(client, &Rows::All(quote_ident(new)));
        } else if event.fired_by_delete() {
            let old = old.unwrap_or_else(|| protocol_violation("needs REFERENCING OLD TABLE"));
            maintainer.delete(client, &Rows::All(quote_ident(old)));
        } else if event.fired_by_update() {
            let (Some(old), Some(new)) = (old, new) else {
                protocol_violation("needs REFERENCING OLD TABLE … NEW TABLE");
            };
            maintainer.update(client, &quote_ident(old), &quote_ident(new));
        }
    });
    settings.end();
    Ok(None)
}

/// Settings for the trigger's own queries, as a function's `SET` clauses would give them;
/// the user's come back when the trigger returns, and if it fails the transaction's abort
/// restores them.
/// - `jit = off`: a bulk statement's neighbour join is costed high enough to be
///   JIT-compiled, which took longer than running it.
/// - `search_path` with `pg_catalog` first: the queries call built-in functions and
///   operators unqualified, and a look-alike earlier on the user's path must not take
///   their place. The user's path follows, for functions a priority expression names.
struct TriggerSettings(i32);

impl TriggerSettings {
    fn new() -> TriggerSettings {
        // SAFETY: plain GUC calls on the backend's own state; the nest level is closed by
        // end(), or by the abort of the transaction.
        unsafe {
            let level = pg_sys::NewGUCNestLevel();
            let user_path = std::ffi::CStr::from_ptr(pg_sys::namespace_search_path)
                .to_string_lossy()
                .into_owned();
            let path = std::ffi::CString::new(format!("pg_catalog, {user_path}"))
                .expect("a GUC value has no NUL");
            for (name, value) in [(c"jit", c"off"), (c"search_path", path.as_c_str())] {
                pg_sys::set_config_option(
                    name.as_ptr(),
                    value.as_ptr(),
                    pg_sys::GucContext::PGC_USERSET,
                    pg_sys::GucSource::PGC_S_SESSION,
                    pg_sys::GucAction::GUC_ACTION_SAVE,
                    true,
                    0,
                    false,
                );
            }
            TriggerSettings(level)
        }
    }

    fn end(self) {
        // SAFETY: closes the nest level opened in new().
        unsafe { pg_sys::AtEOXact_GUC(true, self.0) }
    }
}

/// What the signature column holds, which decides how the threshold is read and how
/// signatures are read and compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Signatures {
    /// 64-bit fingerprints (`simhash64` or `bigint`): a Hamming distance of 0 to 15.
    Fingerprints,
    /// `hash256` (4 words) or `hash128` (2), or a domain over one: a Hamming distance below
    /// the width.
    Wide(usize),
    /// `minhash_sketch`: a Jaccard estimate.
    Sketches,
}

/// How near two signatures must be to be near-duplicates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Threshold {
    /// simhash or wide codes: at most this Hamming distance.
    Hamming(u32),
    /// minhash: a shared band of `lsh_bands(sketch, threshold)` and a Jaccard estimate of at
    /// least this.
    Jaccard(f64),
}

/// How the clusters are kept (the `method` of `neardup_clusters`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Method {
    Components,
    Representatives,
}

/// The trigger's arguments, checked.
struct TrackingArgs {
    /// The cluster table's name, as given.
    clusters: String,
    id: String,
    signature: String,
    signatures: Signatures,
    threshold: Threshold,
    priority: Option<String>,
    method: Method,
}

impl TrackingArgs {
    /// Refuses a wrong number of arguments before any of them is read.
    fn check_count(args: &[String]) {
        if !(4..=6).contains(&args.len()) {
            errors::invalid_parameter(format!(
                "neardup_track_clusters takes 4 to 6 arguments (clusters table, id column, \
                 signature column, max distance or min Jaccard[, priority[, method]]), got {}",
                args.len()
            ));
        }
    }

    /// The arguments, the threshold read as a Jaccard estimate when the signature column is
    /// a `minhash_sketch`, else as a Hamming distance within the codes' range.
    fn parse(args: &[String], signatures: Signatures) -> TrackingArgs {
        Self::check_count(args);
        let threshold = if signatures == Signatures::Sketches {
            let value = args[3].trim().parse::<f64>().unwrap_or_else(|_| {
                errors::invalid_parameter(format!(
                    "neardup_track_clusters: min Jaccard \"{}\" is not a number",
                    args[3]
                ))
            });
            if let Err(e) = neardup_core::search::lsh::check_threshold(value) {
                errors::invalid_parameter(format!("neardup_track_clusters: {e}"));
            }
            Threshold::Jaccard(value)
        } else {
            let max_distance = args[3].trim().parse::<i32>().unwrap_or_else(|e| {
                let why = match e.kind() {
                    std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                        "is out of range"
                    }
                    _ => "is not an integer",
                };
                errors::invalid_parameter(format!(
                    "neardup_track_clusters: max distance \"{}\" {why}",
                    args[3]
                ))
            });
            let function = "neardup_track_clusters";
            Threshold::Hamming(match signatures {
                Signatures::Wide(4) => wide_radius::<4>(function, max_distance),
                Signatures::Wide(_) => wide_radius::<2>(function, max_distance),
                _ => checked_distance(function, max_distance),
            })
        };
        let method = match args.get(5).map(|m| m.trim()) {
            None | Some("") | Some("components") => Method::Components,
            Some("representatives") => Method::Representatives,
            Some(other) => errors::invalid_parameter(format!(
                "neardup_track_clusters: method must be 'components' or 'representatives', not '{other}'"
            )),
        };
        TrackingArgs {
            clusters: args[0].clone(),
            id: quote_ident(&args[1]),
            signature: quote_ident(&args[2]),
            signatures,
            threshold,
            priority: args.get(4).filter(|p| !p.trim().is_empty()).cloned(),
            method,
        }
    }
}

fn protocol_violation(what: &str) -> ! {
    errors::raise_with_hint(
        PgSqlErrorCode::ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED,
        format!("neardup_track_clusters {what}"),
        "Install it with neardup_cluster_tracking(), or see the cluster recipes of docs/cookbook.md.",
    )
}
