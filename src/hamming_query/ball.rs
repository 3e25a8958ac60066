//! `hamming_ball`: every fingerprint within `radius` bits of `center`, the right-hand side of
//! `<@`. 16 bytes passed by reference; the `hamming` index AM reads its scan keys with this
//! exact layout (center at offset 0, radius at offset 8).
//!
//! Text form `(0123456789abcdef,3)`: the center as `simhash64` prints it, then the radius.
//! Binary form: the center as 8 bytes and the radius as 4, network order.

use crate::simhash64::Simhash64;
use crate::support::errors;
use neardup_core::base::hex::{format_hex64, parse_hex64};
use neardup_core::signatures::simhash::hamming;
use pgrx::callconv::{Arg, ArgAbi, BoxRet, FcInfo};
use pgrx::datum::Datum;
use pgrx::pgrx_sql_entity_graph::metadata::{
    ArgumentError, ReturnsError, ReturnsRef, SqlMappingRef, SqlTranslatable, TypeOrigin,
};
use pgrx::prelude::*;
use pgrx::Internal;
use std::ffi::{CStr, CString};

#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct HammingBall {
    pub center: u64,
    /// Never negative: every way of building a ball checks it.
    pub radius: i32,
    /// Explicit and always zero, so equal balls are equal byte for byte.
    _pad: u32,
}

impl HammingBall {
    /// The ball, or ERROR 22023 for a negative radius.
    pub fn new(center: u64, radius: i32) -> Self {
        if radius < 0 {
            errors::invalid_parameter(format!(
                "Hamming radius must not be negative (got {radius})"
            ));
        }
        HammingBall {
            center,
            radius,
            _pad: 0,
        }
    }

    pub fn contains(&self, value: u64) -> bool {
        hamming(value, self.center) as i64 <= self.radius as i64
    }

    fn into_palloc_datum(self) -> pg_sys::Datum {
        palloc_copy(self)
    }
}

/// A fixed-length value passed by reference (a ball of any width) as a datum: a copy in a
/// palloc'd chunk of the current memory context.
pub fn palloc_copy<T: Copy>(value: T) -> pg_sys::Datum {
    // SAFETY: palloc returns memory MAXALIGNed (8 bytes, the types' `double` alignment)
    // and large enough, or raises an ERROR; the value is written whole before use.
    unsafe {
        let ptr = pg_sys::palloc(std::mem::size_of::<T>()).cast::<T>();
        ptr.write(value);
        pg_sys::Datum::from(ptr)
    }
}

unsafe impl SqlTranslatable for HammingBall {
    const TYPE_IDENT: &'static str = pgrx::pgrx_resolved_type!(HammingBall);
    const TYPE_ORIGIN: TypeOrigin = TypeOrigin::ThisExtension;
    const ARGUMENT_SQL: Result<SqlMappingRef, ArgumentError> =
        Ok(SqlMappingRef::literal("hamming_ball"));
    const RETURN_SQL: Result<ReturnsRef, ReturnsError> =
        Ok(ReturnsRef::One(SqlMappingRef::literal("hamming_ball")));
}

impl FromDatum for HammingBall {
    unsafe fn from_polymorphic_datum(
        datum: pg_sys::Datum,
        is_null: bool,
        _: pg_sys::Oid,
    ) -> Option<Self> {
        // SAFETY: a non-NULL hamming_ball datum points at the type's 16 bytes (fixed length,
        // never toasted). Read unaligned so no alignment assumption is needed at all.
        (!is_null).then(|| unsafe { datum.cast_mut_ptr::<Self>().read_unaligned() })
    }
}

impl IntoDatum for HammingBall {
    fn into_datum(self) -> Option<pg_sys::Datum> {
        Some(self.into_palloc_datum())
    }

    fn type_oid() -> pg_sys::Oid {
        pgrx::rust_regtypein::<Self>()
    }
}

unsafe impl<'fcx> ArgAbi<'fcx> for HammingBall
where
    Self: 'fcx,
{
    unsafe fn unbox_arg_unchecked(arg: Arg<'_, 'fcx>) -> Self {
        // SAFETY: every function taking a hamming_ball is STRICT, so the argument is not NULL.
        unsafe {
            arg.unbox_arg_using_from_datum()
                .expect("STRICT function got NULL")
        }
    }
}

unsafe impl BoxRet for HammingBall {
    unsafe fn box_into<'fcx>(self, fcinfo: &mut FcInfo<'fcx>) -> Datum<'fcx> {
        // SAFETY: the datum is a fresh palloc'd copy in the function's memory context.
        unsafe { fcinfo.return_raw_datum(self.into_palloc_datum()) }
    }
}

/// Why a radius too large for `integer` is refused (ERROR 22003, as `int4in` says it).
const RADIUS_OUT_OF_RANGE: &str = "radius is out of range for type integer";

/// `(center,radius)`, white space allowed around each part, the center read by `center`;
/// the reason when malformed (the text form of every ball type).
pub fn parse_ball<C>(
    text: &str,
    center: impl Fn(&str) -> Result<C, String>,
) -> Result<(C, i32), String> {
    let inner = text
        .trim_ascii()
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or("expected (center,radius)")?;
    let (text_center, radius) = inner
        .split_once(',')
        .ok_or("expected a comma between center and radius")?;
    let center = center(text_center).map_err(|e| format!("center: {e}"))?;
    let radius = radius
        .trim_ascii()
        .parse::<i32>()
        .map_err(|e| match e.kind() {
            std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                RADIUS_OUT_OF_RANGE.to_string()
            }
            _ => "radius must be an integer".to_string(),
        })?;
    Ok((center, radius))
}

fn parse(text: &str) -> Result<(u64, i32), String> {
    parse_ball(text, |c| {
        parse_hex64(c.as_bytes()).map_err(|e| e.to_string())
    })
}

/// The ball of text `text` of type `type_name`, or the ERROR its input function raises.
pub fn ball_input<C>(type_name: &str, text: &str, parsed: Result<(C, i32), String>) -> (C, i32) {
    match parsed {
        Ok(ball) => ball,
        Err(e) if e == RADIUS_OUT_OF_RANGE => errors::raise(
            pgrx::PgSqlErrorCode::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
            format!("{type_name} \"{text}\": {e}"),
        ),
        Err(e) => errors::invalid_text(type_name, text, e),
    }
}

#[pg_extern(immutable, strict, parallel_safe, requires = ["hamming_ball_shell"])]
fn hamming_ball_in(input: &CStr) -> HammingBall {
    let text = input.to_string_lossy();
    let (center, radius) = ball_input("hamming_ball", &text, parse(&text));
    HammingBall::new(center, radius)
}

#[pg_extern(immutable, strict, parallel_safe, requires = ["hamming_ball_shell"])]
fn hamming_ball_out(ball: HammingBall) -> CString {
    CString::new(format!("({},{})", format_hex64(ball.center), ball.radius))
        .expect("hex and digits have no NUL")
}

#[pg_extern(immutable, strict, parallel_safe, requires = ["hamming_ball_shell"])]
fn hamming_ball_recv(mut buf: Internal) -> HammingBall {
    // SAFETY: a type's receive function is always called with a StringInfo; pq_getmsgint*
    // raise an ERROR (not UB) when the message is too short.
    let buf = unsafe { buf.get_mut::<pg_sys::StringInfoData>() }.expect("receive buffer");
    let center = unsafe { pg_sys::pq_getmsgint64(buf) } as u64;
    let radius = unsafe { pg_sys::pq_getmsgint(buf, 4) } as i32;
    HammingBall::new(center, radius)
}

#[pg_extern(immutable, strict, parallel_safe, requires = ["hamming_ball_shell"])]
fn hamming_ball_send(ball: HammingBall) -> Vec<u8> {
    let mut bytes = ball.center.to_be_bytes().to_vec();
    bytes.extend_from_slice(&ball.radius.to_be_bytes());
    bytes
}

#[pg_extern(immutable, strict, parallel_safe, name = "hamming_ball")]
fn hamming_ball_simhash64(center: Simhash64, radius: i32) -> HammingBall {
    HammingBall::new(center.0, radius)
}

/// The bigint's 64 bits are the center, as the `bigint::simhash64` cast reads them.
#[pg_extern(immutable, strict, parallel_safe, name = "hamming_ball")]
fn hamming_ball_int8(center: i64, radius: i32) -> HammingBall {
    HammingBall::new(center as u64, radius)
}

// The functions of `<@` and `@>` (sql/hamming_query.sql).

#[pg_extern(immutable, strict, parallel_safe, name = "within_hamming_ball")]
fn within_ball_simhash64(value: Simhash64, ball: HammingBall) -> bool {
    ball.contains(value.0)
}

#[pg_extern(immutable, strict, parallel_safe, name = "within_hamming_ball")]
fn within_ball_int8(value: i64, ball: HammingBall) -> bool {
    ball.contains(value as u64)
}

#[pg_extern(immutable, strict, parallel_safe, name = "hamming_ball_contains")]
fn ball_contains_simhash64(ball: HammingBall, value: Simhash64) -> bool {
    ball.contains(value.0)
}

#[pg_extern(immutable, strict, parallel_safe, name = "hamming_ball_contains")]
fn ball_contains_int8(ball: HammingBall, value: i64) -> bool {
    ball.contains(value as u64)
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn layout_is_what_the_index_reads() {
        assert_eq!(std::mem::size_of::<HammingBall>(), 16);
        assert_eq!(std::mem::offset_of!(HammingBall, center), 0);
        assert_eq!(std::mem::offset_of!(HammingBall, radius), 8);
    }

    #[test]
    fn text_form_parses_strictly() {
        assert_eq!(parse("(0123456789abcdef,3)"), Ok((0x0123456789abcdef, 3)));
        assert_eq!(parse(" ( 0xFFFFFFFFFFFFFFFF , -4 ) "), Ok((u64::MAX, -4)));
        for bad in [
            "",
            "()",
            "(0123456789abcdef)",
            "(0123456789abcdef,)",
            "(1,2)",
            "(0123456789abcdef,3",
            "(0123456789abcdef,3,4)",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}
