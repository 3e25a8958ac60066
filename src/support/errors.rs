//! ERRORs with the SQLSTATE a PostgreSQL user expects for each kind of bad input.

use pgrx::pg_sys::panic::ErrorReport;
use pgrx::{PgLogLevel, PgSqlErrorCode};

pub fn raise(code: PgSqlErrorCode, message: String) -> ! {
    ErrorReport::new(code, message, "neardup").report(PgLogLevel::ERROR);
    unreachable!("ERROR does not return")
}

/// An ERROR with a hint saying what to do instead.
pub fn raise_with_hint(code: PgSqlErrorCode, message: String, hint: &str) -> ! {
    ErrorReport::new(code, message, "neardup")
        .set_hint(hint)
        .report(PgLogLevel::ERROR);
    unreachable!("ERROR does not return")
}

/// 22P02: text that is not a valid value of the type.
pub fn invalid_text(type_name: &str, input: &str, detail: impl std::fmt::Display) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_INVALID_TEXT_REPRESENTATION,
        format!("invalid input syntax for type {type_name}: \"{input}\" ({detail})"),
    )
}

/// 22P03: bytes that are not a valid binary value of the type.
pub fn invalid_binary(type_name: &str, detail: impl std::fmt::Display) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_INVALID_BINARY_REPRESENTATION,
        format!("invalid binary {type_name}: {detail}"),
    )
}

/// 22023: an argument outside what the function accepts.
pub fn invalid_parameter(message: impl Into<String>) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        message.into(),
    )
}

/// 22004: a NULL where the function needs a value.
pub fn null_not_allowed(message: impl Into<String>) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
        message.into(),
    )
}

/// XX001: stored bytes that no version of the encoding could have written.
pub fn corrupted(message: impl Into<String>) -> ! {
    raise(PgSqlErrorCode::ERRCODE_DATA_CORRUPTED, message.into())
}
