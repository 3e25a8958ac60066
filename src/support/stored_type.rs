//! Variable-length SQL types whose bytes are a core value's versioned binary encoding
//! (`to_bytes` / `from_bytes`, specified and golden-tested in the core): the stored form
//! never depends on Rust's memory layout or on a serializer's choices.
//!
//! `stored_type!(Wrapper, CoreType, "sql_name")` declares `Wrapper(pub CoreType)` and how it
//! crosses the function-call boundary: detoasted and decoded on the way in, encoded into a
//! fresh varlena on the way out.

/// Core values that have a stable binary encoding.
pub trait StoredBytes: Sized {
    fn encode(&self) -> Vec<u8>;
    fn decode(bytes: &[u8]) -> Result<Self, String>;
}

/// The bytes of a varlena datum, detoasted.
///
/// # Safety
/// `datum` must be a non-NULL varlena datum.
pub unsafe fn varlena_bytes<'a>(datum: pgrx::pg_sys::Datum) -> &'a [u8] {
    // SAFETY: the caller guarantees a varlena; the detoasted copy (if any) lives in the
    // current memory context for the rest of the call.
    unsafe {
        let detoasted = pgrx::pg_sys::pg_detoast_datum_packed(datum.cast_mut_ptr());
        pgrx::varlena::varlena_to_byte_slice(detoasted)
    }
}

/// Whether `oid` is the type named `name` in whatever schema: SPI reads of these types
/// then work when the extension's schema is not on the search_path (`type_oid` looks the
/// name up through it). The last match is remembered, since a table read asks once a row.
pub fn type_is_named(oid: pgrx::pg_sys::Oid, name: &'static str) -> bool {
    thread_local! {
        static LAST_MATCH: std::cell::Cell<Option<(pgrx::pg_sys::Oid, &'static str)>> =
            const { std::cell::Cell::new(None) };
    }
    if LAST_MATCH.get() == Some((oid, name)) {
        return true;
    }
    // SAFETY: format_type_extended returns a palloc'd name for any type OID.
    let formatted =
        unsafe { std::ffi::CStr::from_ptr(pgrx::pg_sys::format_type_extended(oid, -1, 0)) };
    let formatted = formatted.to_string_lossy();
    let matches = formatted == name || formatted.ends_with(&format!(".{name}"));
    if matches {
        LAST_MATCH.set(Some((oid, name)));
    }
    matches
}

/// A new varlena holding `bytes`, in the current memory context.
pub fn varlena_datum(bytes: &[u8]) -> pgrx::pg_sys::Datum {
    let varlena = pgrx::varlena::rust_byte_slice_to_bytea(bytes);
    pgrx::pg_sys::Datum::from(varlena.into_pg())
}

/// The unread bytes of a receive buffer, consumed.
pub fn rest_of_message(mut buf: pgrx::Internal) -> &'static [u8] {
    // SAFETY: a type's receive function is always called with a StringInfo; its data lives
    // for the rest of the call.
    unsafe {
        let buf = buf
            .get_mut::<pgrx::pg_sys::StringInfoData>()
            .expect("receive buffer");
        let n = (buf.len - buf.cursor) as usize;
        let bytes = std::slice::from_raw_parts(buf.data.add(buf.cursor as usize) as *const u8, n);
        buf.cursor = buf.len;
        bytes
    }
}

macro_rules! stored_type {
    ($wrapper:ident, $core:ty, $sql:literal) => {
        pub struct $wrapper(pub $core);

        unsafe impl pgrx::pgrx_sql_entity_graph::metadata::SqlTranslatable for $wrapper {
            const TYPE_IDENT: &'static str = pgrx::pgrx_resolved_type!($wrapper);
            const TYPE_ORIGIN: pgrx::pgrx_sql_entity_graph::metadata::TypeOrigin =
                pgrx::pgrx_sql_entity_graph::metadata::TypeOrigin::ThisExtension;
            const ARGUMENT_SQL: Result<
                pgrx::pgrx_sql_entity_graph::metadata::SqlMappingRef,
                pgrx::pgrx_sql_entity_graph::metadata::ArgumentError,
            > = Ok(pgrx::pgrx_sql_entity_graph::metadata::SqlMappingRef::literal($sql));
            const RETURN_SQL: Result<
                pgrx::pgrx_sql_entity_graph::metadata::ReturnsRef,
                pgrx::pgrx_sql_entity_graph::metadata::ReturnsError,
            > = Ok(pgrx::pgrx_sql_entity_graph::metadata::ReturnsRef::One(
                pgrx::pgrx_sql_entity_graph::metadata::SqlMappingRef::literal($sql),
            ));
        }

        impl pgrx::datum::FromDatum for $wrapper {
            unsafe fn from_polymorphic_datum(
                datum: pgrx::pg_sys::Datum,
                is_null: bool,
                _: pgrx::pg_sys::Oid,
            ) -> Option<Self> {
                if is_null {
                    return None;
                }
                // SAFETY: a non-NULL datum of this varlena type.
                let bytes = unsafe { $crate::support::stored_type::varlena_bytes(datum) };
                match <$core as $crate::support::stored_type::StoredBytes>::decode(bytes) {
                    Ok(value) => Some($wrapper(value)),
                    Err(e) => $crate::support::errors::corrupted(format!(
                        "stored {} is corrupt: {e}",
                        $sql
                    )),
                }
            }
        }

        impl pgrx::datum::IntoDatum for $wrapper {
            fn into_datum(self) -> Option<pgrx::pg_sys::Datum> {
                Some($crate::support::stored_type::varlena_datum(
                    &$crate::support::stored_type::StoredBytes::encode(&self.0),
                ))
            }

            fn type_oid() -> pgrx::pg_sys::Oid {
                pgrx::rust_regtypein::<Self>()
            }

            fn is_compatible_with(other: pgrx::pg_sys::Oid) -> bool {
                $crate::support::stored_type::type_is_named(other, $sql)
            }
        }

        unsafe impl<'fcx> pgrx::callconv::ArgAbi<'fcx> for $wrapper
        where
            Self: 'fcx,
        {
            unsafe fn unbox_arg_unchecked(arg: pgrx::callconv::Arg<'_, 'fcx>) -> Self {
                unsafe {
                    arg.unbox_arg_using_from_datum()
                        .expect("STRICT function got NULL")
                }
            }
        }

        unsafe impl pgrx::callconv::BoxRet for $wrapper {
            unsafe fn box_into<'fcx>(
                self,
                fcinfo: &mut pgrx::callconv::FcInfo<'fcx>,
            ) -> pgrx::datum::Datum<'fcx> {
                let bytes = $crate::support::stored_type::StoredBytes::encode(&self.0);
                unsafe {
                    fcinfo.return_raw_datum($crate::support::stored_type::varlena_datum(&bytes))
                }
            }
        }
    };
}

pub(crate) use stored_type;
