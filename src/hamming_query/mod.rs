//! Indexable Hamming-distance search: `hamming(a.fp, $1) <= 3` as users write it, and the
//! forms an index can serve.
//!
//! PostgreSQL matches an index only against `indexed_column OPERATOR pseudo_constant`, and in
//! `hamming(fp, q) <= 3` the column sits inside the left operand of `int4le`. As PostGIS does
//! for `ST_DWithin`, the search is therefore spelled three ways:
//!
//! * `fp <@ hamming_ball(q, 3)` (and `hamming_ball(q, 3) @> fp`): the operator form, what the
//!   `hamming` access method's scan keys carry ([`HammingBall`], `ball.rs`);
//! * `hamming_within(fp, q, 3)`: a boolean function whose planner support function turns it
//!   into the operator form when an index of ours is on `fp`, and estimates its selectivity
//!   (`within.rs`, `estimate.rs`);
//! * `hamming(fp, q) <= 3`, `3 >= fp <~> q`, `... < k`: rewritten to `hamming_within` by a
//!   planner hook before planning (`rewrite.rs`), which needs the library preloaded
//!   (`shared_preload_libraries` or `session_preload_libraries`).
//!
//! The type is declared below, the operators in `sql/hamming_query.sql`.

pub(crate) mod ball;
pub(crate) mod batch;
mod catalog;
mod distance;
pub(crate) mod estimate;
mod join_keys;
mod nodes;
mod pair_parts;
mod pairs;
mod rewrite;
mod within;

pub use ball::HammingBall;
pub(crate) use catalog::is_citus_table;
pub(crate) use pairs::{wide_code_at, wide_code_type, wide_radius};

/// Called from `_PG_init`, whether the library is preloaded (postmaster) or loaded by the first
/// call in a backend: installs the planner hook and the catalog-cache invalidation.
pub fn init() {
    catalog::register_invalidation();
    rewrite::install_planner_hook();
}

pgrx::extension_sql!(
    "CREATE TYPE hamming_ball; -- shell, completed below\n",
    name = "hamming_ball_shell"
);

// Fixed 16 bytes by reference, aligned like bigint: the layout of [`HammingBall`].
pgrx::extension_sql!(
    r#"
CREATE TYPE hamming_ball (
    INPUT = hamming_ball_in,
    OUTPUT = hamming_ball_out,
    RECEIVE = hamming_ball_recv,
    SEND = hamming_ball_send,
    INTERNALLENGTH = 16,
    ALIGNMENT = double,
    STORAGE = plain
);
COMMENT ON TYPE hamming_ball IS 'fingerprints within a Hamming radius of a center: (center hex,radius)';
"#,
    name = "hamming_ball_type",
    creates = [Type(HammingBall)],
    requires = [
        "hamming_ball_shell",
        ball::hamming_ball_in,
        ball::hamming_ball_out,
        ball::hamming_ball_recv,
        ball::hamming_ball_send,
    ]
);

pgrx::extension_sql!(
    "CREATE TYPE hamming_batch; -- shell, completed below\n",
    name = "hamming_batch_shell"
);

// A varlena: 8 bytes of header and 16 per ball (neardup_core::search::ball_set).
pgrx::extension_sql!(
    r#"
CREATE TYPE hamming_batch (
    INPUT = hamming_batch_in,
    OUTPUT = hamming_batch_out,
    RECEIVE = hamming_batch_recv,
    SEND = hamming_batch_send,
    INTERNALLENGTH = VARIABLE,
    STORAGE = extended
);
COMMENT ON TYPE hamming_batch IS
    'keyed fingerprints and one Hamming radius, the right side of <@@ for batch checks (text form r<radius>:<key>=<hex>,...)';
"#,
    name = "hamming_batch_type",
    creates = [Type(batch::HammingBatch)],
    requires = [
        "hamming_batch_shell",
        batch::hamming_batch_in,
        batch::hamming_batch_out,
        batch::hamming_batch_recv,
        batch::hamming_batch_send,
    ]
);

pgrx::extension_sql_file!(
    "../../sql/hamming_batch.sql",
    name = "hamming_batch_operators",
    requires = [
        "hamming_batch_type",
        "simhash64_operators",
        batch::within_batch_simhash64,
        batch::within_batch_int8,
        batch::batch_contains_simhash64,
        batch::batch_contains_int8,
        estimate::hamming_batch_restrict,
        estimate::hamming_batch_join,
    ]
);

pgrx::extension_sql_file!(
    "../../sql/hamming_query.sql",
    name = "hamming_query_operators",
    requires = [
        "hamming_ball_type",
        "simhash64_operators",
        distance::hamming_int8,
        ball::within_ball_simhash64,
        ball::within_ball_int8,
        ball::ball_contains_simhash64,
        ball::ball_contains_int8,
        estimate::hamming_ball_restrict,
        estimate::hamming_ball_join,
    ]
);

// PL/pgSQL over hamming_pairs and the join keys: the Citus path of all pairs.
pgrx::extension_sql_file!(
    "../../sql/pairs_distributed.sql",
    name = "hamming_pairs_distributed",
    requires = [
        "simhash64_operators",
        pairs::hamming_pairs,
        join_keys::hamming_join_keys,
        join_keys::hamming_join_key,
        join_keys::hamming_join_blocks,
    ]
);
