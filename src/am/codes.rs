//! The codes an index holds, read off its column's type: 64-bit fingerprints (`simhash64`,
//! `bigint`: Manku's permuted tables) or wide codes (`hash128`, `hash256`: multi-index
//! hashing's substring tables). What differs between them is the layout of a run's tables
//! (`neardup_core::search::code_tables`) and the entry's size; the pages, runs, merges and
//! VACUUM are the same code, instantiated per width by [`by_width!`].

use neardup_core::search::code_tables::Code;
use neardup_core::search::index_page::Rest;
use pgrx::pg_sys;

/// The width of the codes of `index`'s column, in 64-bit words (1, 2 or 4).
pub fn words(index: pg_sys::Relation) -> usize {
    // SAFETY: an open index has a tuple descriptor with its one key column (18 keeps the
    // lengths in its compact attributes first).
    #[cfg(feature = "pg18")]
    let len = unsafe { (*(*index).rd_att).compact_attrs.as_slice(1)[0].attlen };
    #[cfg(not(feature = "pg18"))]
    let len = unsafe { (*(*index).rd_att).attrs.as_slice(1)[0].attlen };
    match len {
        8 | 16 | 32 => len as usize / 8,
        _ => pgrx::error!("a hamming index column of {len} bytes: 8, 16 or 32 expected"),
    }
}

/// Runs `$body` with `$T` the layout of `$index`'s tables (a type implementing
/// `neardup_core::search::code_tables::Tables`).
macro_rules! by_width {
    ($index:expr, $T:ident => $body:expr) => {
        match $crate::am::codes::words($index) {
            1 => {
                type $T = neardup_core::search::permuted::Layout;
                $body
            }
            2 => {
                type $T = neardup_core::search::code_tables::SubstringTables<[u64; 1]>;
                $body
            }
            _ => {
                type $T = neardup_core::search::code_tables::SubstringTables<[u64; 3]>;
                $body
            }
        }
    };
}
pub(crate) use by_width;

/// The code of a non-NULL datum of the index's column.
///
/// # Safety
/// `datum` is a value of the column, whose codes have `1 + P::WORDS` words.
pub unsafe fn code_of<P: Rest>(datum: pg_sys::Datum) -> Code<P> {
    if P::WORDS == 0 {
        (datum.value() as u64, P::ZERO)
    } else {
        // SAFETY: a wide code is passed by reference, its words in order (`wide_codes`).
        unsafe {
            let words = datum.cast_mut_ptr::<u64>();
            (
                words.read_unaligned(),
                P::from_fn(|i| words.add(i + 1).read_unaligned()),
            )
        }
    }
}

/// Bytes of an entry of `index`.
pub fn entry_size(index: pg_sys::Relation) -> usize {
    neardup_core::search::index_page::entry_size(words(index) - 1)
}

/// The parts each table of `run` is stored in (see `table_parts`).
pub fn parts(
    index: pg_sys::Relation,
    meta: &neardup_core::search::index_page::Meta,
    run: &neardup_core::search::index_page::Run,
) -> neardup_core::search::table_parts::Parts {
    by_width!(index, L => super::meta::parts(&super::meta::layout::<L>(meta, run), run))
}
