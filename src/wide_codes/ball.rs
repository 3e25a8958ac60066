//! `hash256_ball` and `hash128_ball`: every code within `radius` bits of `center`, the
//! right-hand side of `<@` for wide codes, as `hamming_ball` is for 64-bit fingerprints.
//! `hamming_ball(center, radius)` builds one. Fixed length, passed by reference; the
//! `hamming` index reads its scan keys with this exact layout (the center's words, then
//! the radius: `am/scan/wide.rs`).
//!
//! Text form `(hex digits,radius)`: the center as the code prints it, then the radius.
//! Binary form: the center's bytes, then the radius as 4 bytes, network order.

use super::{Hash128, Hash256};
use crate::hamming_query::ball::{ball_input, palloc_copy, parse_ball};
use crate::support::errors;
use neardup_core::signatures::wide_code::WideCode;
use pgrx::callconv::{Arg, ArgAbi, BoxRet, FcInfo};
use pgrx::datum::Datum;
use pgrx::pgrx_sql_entity_graph::metadata::{
    ArgumentError, ReturnsError, ReturnsRef, SqlMappingRef, SqlTranslatable, TypeOrigin,
};
use pgrx::prelude::*;
use pgrx::Internal;
use std::ffi::{CStr, CString};

/// `(center,radius)`, the center in the code's hex digits.
fn parse<const W: usize>(text: &str) -> Result<(WideCode<W>, i32), String> {
    parse_ball(text, |c| {
        WideCode::<W>::parse_hex(c.trim_ascii().as_bytes()).map_err(|e| e.to_string())
    })
}

macro_rules! wide_ball {
    ($ball:ident, $code:ident, $words:literal, $sql:literal, $shell:literal,
     $input:ident, $output:ident, $recv:ident, $send:ident,
     $make:ident, $within:ident, $contains:ident) => {
        #[repr(C)]
        #[derive(Copy, Clone, Debug, PartialEq, Eq)]
        pub struct $ball {
            pub center: [u64; $words],
            /// Never negative: every way of building a ball checks it.
            pub radius: i32,
            /// Explicit and always zero, so equal balls are equal byte for byte.
            _pad: u32,
        }

        impl $ball {
            /// The ball, or ERROR 22023 for a negative radius.
            fn new(center: WideCode<$words>, radius: i32) -> Self {
                if radius < 0 {
                    errors::invalid_parameter(format!(
                        "Hamming radius must not be negative (got {radius})"
                    ));
                }
                $ball {
                    center: center.0,
                    radius,
                    _pad: 0,
                }
            }

            fn contains(&self, value: &$code) -> bool {
                WideCode(self.center).hamming(&value.0) as i64 <= self.radius as i64
            }

        }

        unsafe impl SqlTranslatable for $ball {
            const TYPE_IDENT: &'static str = pgrx::pgrx_resolved_type!($ball);
            const TYPE_ORIGIN: TypeOrigin = TypeOrigin::ThisExtension;
            const ARGUMENT_SQL: Result<SqlMappingRef, ArgumentError> =
                Ok(SqlMappingRef::literal($sql));
            const RETURN_SQL: Result<ReturnsRef, ReturnsError> =
                Ok(ReturnsRef::One(SqlMappingRef::literal($sql)));
        }

        impl FromDatum for $ball {
            unsafe fn from_polymorphic_datum(
                datum: pg_sys::Datum,
                is_null: bool,
                _: pg_sys::Oid,
            ) -> Option<Self> {
                // SAFETY: a non-NULL datum of the type points at its fixed bytes.
                (!is_null).then(|| unsafe { datum.cast_mut_ptr::<Self>().read_unaligned() })
            }
        }

        impl IntoDatum for $ball {
            fn into_datum(self) -> Option<pg_sys::Datum> {
                Some(palloc_copy(self))
            }

            fn type_oid() -> pg_sys::Oid {
                pgrx::rust_regtypein::<Self>()
            }
        }

        unsafe impl<'fcx> ArgAbi<'fcx> for $ball
        where
            Self: 'fcx,
        {
            unsafe fn unbox_arg_unchecked(arg: Arg<'_, 'fcx>) -> Self {
                // SAFETY: every function taking a ball is STRICT.
                unsafe {
                    arg.unbox_arg_using_from_datum()
                        .expect("STRICT function got NULL")
                }
            }
        }

        unsafe impl BoxRet for $ball {
            unsafe fn box_into<'fcx>(self, fcinfo: &mut FcInfo<'fcx>) -> Datum<'fcx> {
                // SAFETY: a fresh palloc'd copy in the function's memory context.
                unsafe { fcinfo.return_raw_datum(palloc_copy(self)) }
            }
        }

        #[pg_extern(immutable, strict, parallel_safe, requires = [$shell])]
        fn $input(input: &CStr) -> $ball {
            let text = input.to_string_lossy();
            let (center, radius) = ball_input($sql, &text, parse::<$words>(&text));
            $ball::new(center, radius)
        }

        #[pg_extern(immutable, strict, parallel_safe, requires = [$shell])]
        fn $output(ball: $ball) -> CString {
            CString::new(format!(
                "({},{})",
                WideCode(ball.center).to_hex(),
                ball.radius
            ))
            .expect("hex and digits have no NUL")
        }

        #[pg_extern(immutable, strict, parallel_safe, requires = [$shell])]
        fn $recv(mut buf: Internal) -> $ball {
            // SAFETY: a type's receive function is always called with a StringInfo;
            // pq_copymsgbytes and pq_getmsgint ERROR when the message is too short.
            let buf = unsafe { buf.get_mut::<pg_sys::StringInfoData>() }.expect("receive buffer");
            let mut bytes = [0u8; 8 * $words];
            unsafe { pg_sys::pq_copymsgbytes(buf, bytes.as_mut_ptr().cast(), bytes.len() as _) };
            let radius = unsafe { pg_sys::pq_getmsgint(buf, 4) } as i32;
            $ball::new(
                WideCode::from_be_bytes(&bytes).expect("fixed length"),
                radius,
            )
        }

        #[pg_extern(immutable, strict, parallel_safe, requires = [$shell])]
        fn $send(ball: $ball) -> Vec<u8> {
            let mut bytes = WideCode(ball.center).to_be_bytes();
            bytes.extend_from_slice(&ball.radius.to_be_bytes());
            bytes
        }

        #[pg_extern(
                                                                    immutable,
                                                                    strict,
                                                                    parallel_safe,
                                                                    name = "hamming_ball",
                                                                    requires = ["wide_balls_type"]
                                                                )]
        fn $make(center: $code, radius: i32) -> $ball {
            $ball::new(center.0, radius)
        }

        // The functions of `<@` and `@>` (sql/wide_codes_index.sql).

        #[pg_extern(
                                                                    immutable,
                                                                    strict,
                                                                    parallel_safe,
                                                                    name = "within_hamming_ball",
                                                                    requires = ["wide_balls_type"]
                                                                )]
        fn $within(value: $code, ball: $ball) -> bool {
            ball.contains(&value)
        }

        #[pg_extern(
                                                                    immutable,
                                                                    strict,
                                                                    parallel_safe,
                                                                    name = "hamming_ball_contains",
                                                                    requires = ["wide_balls_type"]
                                                                )]
        fn $contains(ball: $ball, value: $code) -> bool {
            ball.contains(&value)
        }
    };
}

wide_ball!(
    Hash256Ball,
    Hash256,
    4,
    "hash256_ball",
    "wide_balls_shell",
    hash256_ball_in,
    hash256_ball_out,
    hash256_ball_recv,
    hash256_ball_send,
    hamming_ball_hash256,
    within_hamming_ball_hash256,
    hamming_ball_contains_hash256
);
wide_ball!(
    Hash128Ball,
    Hash128,
    2,
    "hash128_ball",
    "wide_balls_shell",
    hash128_ball_in,
    hash128_ball_out,
    hash128_ball_recv,
    hash128_ball_send,
    hamming_ball_hash128,
    within_hamming_ball_hash128,
    hamming_ball_contains_hash128
);

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn layouts_are_what_the_index_reads() {
        assert_eq!(std::mem::size_of::<Hash256Ball>(), 40);
        assert_eq!(std::mem::offset_of!(Hash256Ball, radius), 32);
        assert_eq!(std::mem::size_of::<Hash128Ball>(), 24);
        assert_eq!(std::mem::offset_of!(Hash128Ball, radius), 16);
    }

    #[test]
    fn text_form_parses_strictly() {
        let hex = "0123456789abcdef0123456789abcdef";
        assert_eq!(
            parse::<2>(&format!(" ( {hex} , 7 ) ")).map(|(c, r)| (c.to_hex(), r)),
            Ok((hex.to_string(), 7))
        );
        for bad in [
            "",
            "()",
            &format!("({hex})"),
            &format!("({hex},)"),
            "(12,3)",
            &format!("({hex},3,4)"),
        ] {
            assert!(parse::<2>(bad).is_err(), "{bad:?}");
        }
    }
}
