//! How a wide code crosses the function-call boundary: a pointer to its words (a fixed-length
//! type passed by reference), copied out on the way in and into a palloc'd chunk on the way
//! out.

use neardup_core::signatures::wide_code::WideCode;
use pgrx::callconv::{Arg, ArgAbi, BoxRet, FcInfo};
use pgrx::datum::Datum;
use pgrx::pgrx_sql_entity_graph::metadata::{
    ArgumentError, ReturnsError, ReturnsRef, SqlMappingRef, SqlTranslatable, TypeOrigin,
};
use pgrx::prelude::*;

macro_rules! wide_datum {
    ($name:ident, $words:literal, $sql:literal) => {
        #[repr(transparent)]
        #[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub WideCode<$words>);

        unsafe impl SqlTranslatable for $name {
            const TYPE_IDENT: &'static str = pgrx::pgrx_resolved_type!($name);
            const TYPE_ORIGIN: TypeOrigin = TypeOrigin::ThisExtension;
            const ARGUMENT_SQL: Result<SqlMappingRef, ArgumentError> =
                Ok(SqlMappingRef::literal($sql));
            const RETURN_SQL: Result<ReturnsRef, ReturnsError> =
                Ok(ReturnsRef::One(SqlMappingRef::literal($sql)));
        }

        impl FromDatum for $name {
            unsafe fn from_polymorphic_datum(
                datum: pg_sys::Datum,
                is_null: bool,
                _: pg_sys::Oid,
            ) -> Option<Self> {
                // SAFETY: a non-NULL datum of this type points to its INTERNALLENGTH bytes.
                (!is_null).then(|| unsafe {
                    $name(WideCode(std::ptr::read_unaligned(
                        datum.cast_mut_ptr::<[u64; $words]>(),
                    )))
                })
            }
        }

        impl IntoDatum for $name {
            fn into_datum(self) -> Option<pg_sys::Datum> {
                Some(words_datum(&(self.0).0))
            }

            fn type_oid() -> pg_sys::Oid {
                pgrx::rust_regtypein::<Self>()
            }
        }

        unsafe impl<'fcx> ArgAbi<'fcx> for $name
        where
            Self: 'fcx,
        {
            unsafe fn unbox_arg_unchecked(arg: Arg<'_, 'fcx>) -> Self {
                unsafe {
                    arg.unbox_arg_using_from_datum()
                        .expect("STRICT function got NULL")
                }
            }
        }

        unsafe impl BoxRet for $name {
            unsafe fn box_into<'fcx>(self, fcinfo: &mut FcInfo<'fcx>) -> Datum<'fcx> {
                unsafe { fcinfo.return_raw_datum(words_datum(&(self.0).0)) }
            }
        }
    };
}

wide_datum!(Hash256, 4, "hash256");
wide_datum!(Hash128, 2, "hash128");

/// The words in a chunk of the current memory context.
fn words_datum(words: &[u64]) -> pg_sys::Datum {
    // SAFETY: palloc returns MAXALIGNed memory of the size asked for, or ERRORs.
    unsafe {
        let chunk = pg_sys::palloc(std::mem::size_of_val(words)) as *mut u64;
        std::ptr::copy_nonoverlapping(words.as_ptr(), chunk, words.len());
        pg_sys::Datum::from(chunk)
    }
}
