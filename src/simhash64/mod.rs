//! `simhash64`: a 64-bit fingerprint, 8 bytes passed by value, like `bigint`.
//!
//! Ordered as an unsigned integer, so the btree order matches the order of the hex text
//! form. The SQL definition (type, casts, operator classes) is `sql/simhash64.sql`.

mod datum;
mod io;
mod operators;
mod text;

pub use datum::Simhash64;

pgrx::extension_sql!(
    "CREATE TYPE simhash64; -- shell, completed by sql/simhash64_type.sql\n",
    name = "simhash64_shell",
    bootstrap
);

pgrx::extension_sql_file!(
    "../../sql/simhash64_type.sql",
    name = "simhash64_type",
    creates = [Type(Simhash64)],
    requires = [
        "simhash64_shell",
        io::simhash64_in,
        io::simhash64_out,
        io::simhash64_recv,
        io::simhash64_send
    ]
);

pgrx::extension_sql_file!(
    "../../sql/simhash64_operators.sql",
    name = "simhash64_operators",
    requires = [
        "simhash64_type",
        operators::simhash64_eq,
        operators::simhash64_ne,
        operators::simhash64_lt,
        operators::simhash64_le,
        operators::simhash64_gt,
        operators::simhash64_ge,
        operators::simhash64_cmp,
        operators::hamming,
        operators::simhash64_and,
        operators::simhash64_or,
        operators::simhash64_xor,
        operators::simhash64_not,
    ]
);
