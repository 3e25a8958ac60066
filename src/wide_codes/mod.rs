//! `hash256` and `hash128`: wide binary codes (PDQ image hashes, other perceptual hashes,
//! binary embeddings) compared by Hamming distance. Fixed length (32 and 16 bytes), passed
//! by reference like `uuid`, held in memory as 64-bit words most significant first, so the
//! btree order is the order of the hex text form. Their forms are `neardup_core::signatures::
//! wide_code`'s. The SQL definitions (types, casts, operators, operator classes) are
//! `sql/wide_codes_type.sql` and `sql/wide_codes.sql`; all pairs within a distance are
//! `hamming_pairs` (`hamming_query/pairs.rs`), by multi-index hashing.

mod ball;
pub mod batch;
mod datum;
mod functions;

pub use ball::{Hash128Ball, Hash256Ball};
pub use batch::{Hash128Batch, Hash256Batch};
pub use datum::{Hash128, Hash256};

pgrx::extension_sql!(
    "CREATE TYPE hash256; -- shell, completed by sql/wide_codes_type.sql\n\
     CREATE TYPE hash128; -- shell, completed by sql/wide_codes_type.sql\n",
    name = "wide_codes_shell"
);

pgrx::extension_sql_file!(
    "../../sql/wide_codes_type.sql",
    name = "wide_codes_type",
    creates = [Type(Hash256), Type(Hash128)],
    requires = [
        "wide_codes_shell",
        functions::hash256_in,
        functions::hash256_out,
        functions::hash256_recv,
        functions::hash256_send,
        functions::hash128_in,
        functions::hash128_out,
        functions::hash128_recv,
        functions::hash128_send,
    ]
);

pgrx::extension_sql_file!(
    "../../sql/wide_codes.sql",
    name = "wide_codes_operators",
    requires = [
        "wide_codes_type",
        functions::hash256_eq,
        functions::hash256_ne,
        functions::hash256_lt,
        functions::hash256_le,
        functions::hash256_gt,
        functions::hash256_ge,
        functions::hash256_cmp,
        functions::hash256_hash,
        functions::hash256_hash_extended,
        functions::hash256_hamming,
        functions::hash256_from_bytea,
        functions::hash256_from_bit_bytes,
        functions::hash128_eq,
        functions::hash128_ne,
        functions::hash128_lt,
        functions::hash128_le,
        functions::hash128_gt,
        functions::hash128_ge,
        functions::hash128_cmp,
        functions::hash128_hash,
        functions::hash128_hash_extended,
        functions::hash128_hamming,
        functions::hash128_from_bytea,
        functions::hash128_from_bit_bytes,
    ]
);

pgrx::extension_sql!(
    "CREATE TYPE hash256_ball; -- shell, completed by sql/wide_balls_type.sql\n\
     CREATE TYPE hash128_ball; -- shell, completed by sql/wide_balls_type.sql\n",
    name = "wide_balls_shell",
    requires = ["wide_codes_type"]
);

pgrx::extension_sql_file!(
    "../../sql/wide_balls_type.sql",
    name = "wide_balls_type",
    creates = [Type(Hash256Ball), Type(Hash128Ball)],
    requires = [
        "wide_balls_shell",
        ball::hash256_ball_in,
        ball::hash256_ball_out,
        ball::hash256_ball_recv,
        ball::hash256_ball_send,
        ball::hash128_ball_in,
        ball::hash128_ball_out,
        ball::hash128_ball_recv,
        ball::hash128_ball_send,
    ]
);

pgrx::extension_sql!(
    "CREATE TYPE hash256_batch; -- shell, completed by sql/wide_batches_type.sql\n\
     CREATE TYPE hash128_batch; -- shell, completed by sql/wide_batches_type.sql\n",
    name = "wide_batches_shell",
    requires = ["wide_codes_type"]
);

pgrx::extension_sql_file!(
    "../../sql/wide_batches_type.sql",
    name = "wide_batches_type",
    creates = [Type(Hash256Batch), Type(Hash128Batch)],
    requires = [
        "wide_batches_shell",
        batch::hash256_batch_in,
        batch::hash256_batch_out,
        batch::hash256_batch_recv,
        batch::hash256_batch_send,
        batch::hash128_batch_in,
        batch::hash128_batch_out,
        batch::hash128_batch_recv,
        batch::hash128_batch_send,
    ]
);

pgrx::extension_sql_file!(
    "../../sql/wide_batches.sql",
    name = "wide_batches_operators",
    requires = [
        "wide_batches_type",
        "hamming_batch_operators",
        batch::within_batch_hash256,
        batch::batch_contains_hash256,
        batch::within_batch_hash128,
        batch::batch_contains_hash128,
    ]
);

pgrx::extension_sql_file!(
    "../../sql/wide_codes_index.sql",
    name = "wide_codes_index",
    requires = [
        "wide_balls_type",
        "wide_batches_operators",
        "hamming_query_operators",
        "wide_codes_operators",
        "hamming_am_opclasses",
        ball::hamming_ball_hash256,
        ball::within_hamming_ball_hash256,
        ball::hamming_ball_contains_hash256,
        ball::hamming_ball_hash128,
        ball::within_hamming_ball_hash128,
        ball::hamming_ball_contains_hash128,
    ]
);
