//! Text and binary I/O. Text: 16 lowercase hex digits (input also takes uppercase and a
//! `0x` prefix). Binary: 8 bytes in network order, as `bigint` sends them.

use super::Simhash64;
use crate::support::errors;
use neardup_core::base::hex::{format_hex64, parse_hex64};
use pgrx::prelude::*;
use pgrx::Internal;
use std::ffi::{CStr, CString};

#[pg_extern(immutable, strict, parallel_safe, requires = ["simhash64_shell"])]
fn simhash64_in(input: &CStr) -> Simhash64 {
    match parse_hex64(input.to_bytes()) {
        Ok(v) => Simhash64(v),
        Err(e) => errors::invalid_text("simhash64", &input.to_string_lossy(), e),
    }
}

#[pg_extern(immutable, strict, parallel_safe, requires = ["simhash64_shell"])]
fn simhash64_out(value: Simhash64) -> CString {
    CString::new(format_hex64(value.0)).expect("hex has no NUL")
}

#[pg_extern(immutable, strict, parallel_safe, requires = ["simhash64_shell"])]
fn simhash64_recv(mut buf: Internal) -> Simhash64 {
    // SAFETY: a type's receive function is always called with a StringInfo.
    let buf = unsafe { buf.get_mut::<pg_sys::StringInfoData>() }.expect("receive buffer");
    Simhash64(unsafe { pg_sys::pq_getmsgint64(buf) } as u64)
}

#[pg_extern(immutable, strict, parallel_safe, requires = ["simhash64_shell"])]
fn simhash64_send(value: Simhash64) -> Vec<u8> {
    value.0.to_be_bytes().to_vec()
}
