//! Keeping a cluster table current while the clustered table changes (Zhu et al. §5): the
//! trigger function `neardup_track_clusters` and `neardup_cluster_tracking`, which creates a
//! cluster table, fills it and installs the triggers.
//!
//! The triggers are statement-level with transition tables, so `INSERT … SELECT` of a
//! million rows searches its neighbours in one join and writes the clusters in a few
//! statements instead of a round of queries per row. What each statement does is planned by
//! `neardup_core::cluster_plans`; `maintain` turns the plans into queries.
//!
//! Concurrency: every statement that changes the clusters first takes a transaction-level
//! advisory lock on the cluster table, and every query after it takes a fresh snapshot
//! (READ COMMITTED). So a session that inserts a near-duplicate of a row another session has
//! just inserted waits for that transaction to end, then sees its row and joins its cluster:
//! two sessions cannot leave two clusters that should be one. Under REPEATABLE READ or
//! SERIALIZABLE the statement's snapshot predates the lock, so the trigger refuses to run.

mod maintain;

use crate::errors;
use crate::table_args::{checked_distance, quote_ident, relation_name};
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

/// `neardup_track_clusters(clusters_table, id_column, signature_column, max_distance
/// [, priority])`: an AFTER … FOR EACH STATEMENT trigger with transition tables.
#[pg_trigger]
fn neardup_track_clusters<'a>(
    trigger: &'a PgTrigger<'a>,
) -> Result<Option<PgHeapTuple<'a, AllocatedByPostgres>>, PgTriggerError> {
    if !trigger.event().fired_for_statement() || !trigger.event().fired_after() {
        protocol_violation("must be fired AFTER … FOR EACH STATEMENT");
    }
    let args = trigger.extra_args()?;
    let table = relation_name("neardup_track_clusters", trigger.relid()?);
    let event = trigger.event();
    Spi::connect_mut(|client| {
        let maintainer = Maintainer::new(&table, &args);
        maintainer.lock(client);
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
    Ok(None)
}

/// The trigger's arguments, checked.
struct TrackingArgs {
    clusters: pg_sys::Oid,
    id: String,
    signature: String,
    max_distance: u32,
    priority: Option<String>,
}

impl TrackingArgs {
    fn parse(args: &[String]) -> TrackingArgs {
        if !(4..=5).contains(&args.len()) {
            errors::invalid_parameter(format!(
                "neardup_track_clusters takes 4 or 5 arguments (clusters table, id column, \
                 signature column, max distance[, priority]), got {}",
                args.len()
            ));
        }
        let clusters = Spi::get_one_with_args::<pg_sys::Oid>(
            "SELECT to_regclass($1)::oid",
            &[args[0].as_str().into()],
        )
        .ok()
        .flatten()
        .unwrap_or_else(|| {
            errors::invalid_parameter(format!(
                "neardup_track_clusters: cluster table \"{}\" does not exist",
                args[0]
            ))
        });
        let max_distance = args[3].trim().parse::<i32>().unwrap_or_else(|_| {
            errors::invalid_parameter(format!(
                "neardup_track_clusters: max distance \"{}\" is not an integer",
                args[3]
            ))
        });
        TrackingArgs {
            clusters,
            id: quote_ident(&args[1]),
            signature: quote_ident(&args[2]),
            max_distance: checked_distance(max_distance),
            priority: args.get(4).filter(|p| !p.trim().is_empty()).cloned(),
        }
    }
}

fn protocol_violation(what: &str) -> ! {
    errors::raise_with_hint(
        PgSqlErrorCode::ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED,
        format!("neardup_track_clusters {what}"),
        "Install it with neardup_cluster_tracking(), or see the README's cluster recipe.",
    )
}
