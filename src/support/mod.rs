//! What the SQL features share: ERRORs with the right SQLSTATE, the memory bound of the batch
//! functions, variable-length types stored as a core value's versioned encoding, and the
//! arguments of functions that read a whole table by name (with their tests of resources
//! and privileges, `hardening_tests.rs`). Imports no feature folder.

pub(crate) mod errors;
pub(crate) mod memory;
pub(crate) mod stored_type;
pub(crate) mod table_args;
