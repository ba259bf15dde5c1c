// SPDX-License-Identifier: MIT
//! Raw FFI declarations of libshmlog's public API (`include/shmlog.h`).
//!
//! Every function returns 0 (or a documented count) or a negative errno.
//! Thread and signal safety are as the header states for each function;
//! the safe wrapper is the `shmlog` crate. The struct layouts below are
//! checked against the C header by this crate's tests (`layout.c`).
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_int, c_uint};

pub const SHMLOG_VERBOSE: c_int = 2;
pub const SHMLOG_DEBUG: c_int = 3;
pub const SHMLOG_INFO: c_int = 4;
pub const SHMLOG_WARN: c_int = 5;
pub const SHMLOG_ERROR: c_int = 6;
pub const SHMLOG_FATAL: c_int = 7;
pub const SHMLOG_SILENT: c_int = 8;

pub const SHMLOG_CLOCK_DEFAULT: c_int = 0;
pub const SHMLOG_CLOCK_TSC: c_int = 1;
pub const SHMLOG_CLOCK_REALTIME: c_int = 2;
pub const SHMLOG_CLOCK_COARSE: c_int = 3;

pub const SHMLOG_TAG_MAX: usize = 64;
pub const SHMLOG_MSG_MAX: usize = 4000;
pub const SHMLOG_SIZE_MIN: u64 = 64 * 1024;
pub const SHMLOG_SIZE_DEFAULT: u64 = 1024 * 1024;

pub const SHMLOG_OPEN_CREATE: c_int = 0x1;
pub const SHMLOG_READ_TAIL: c_int = 0x1;
pub const SHMLOG_READ_DUMP: c_int = 0x2;
pub const SHMLOG_REC_TRUNCATED: c_uint = 0x1;

pub const SHMLOG_EV_NONE: c_int = 0;
pub const SHMLOG_EV_RECORD: c_int = 1;
pub const SHMLOG_EV_LOST: c_int = 2;

pub const SHMLOG_WAIT_ANY_MAX: usize = 128;

pub type mode_t = u32;
pub type uid_t = u32;
pub type gid_t = u32;

#[repr(C)]
pub struct shmlog_t {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct shmlog_reader_t {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct shmlog_filter_t {
    _opaque: [u8; 0],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct shmlog_create_opts {
    pub size: u64,
    pub lanes: c_uint,
    pub mode: mode_t,
    pub gid: gid_t,
    pub clock: c_int,
    pub initial_seq: u64,
    pub initial_pos: u64,
    pub flags: c_uint,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct shmlog_record {
    pub seq: u64,
    pub time_ns: i64,
    pub raw_time: u64,
    pub pid: u32,
    pub tid: u32,
    pub prio: c_int,
    pub flags: c_uint,
    pub lane: c_uint,
    pub tag: *const c_char,
    pub tag_len: usize,
    pub msg: *const c_char,
    pub msg_len: usize,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct shmlog_lost {
    pub lane: c_uint,
    pub overwritten: u64,
    pub torn: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct shmlog_info {
    pub file_size: u64,
    pub capacity: u64,
    pub used: u64,
    pub lanes: c_uint,
    pub writers: c_uint,
    pub version_major: c_uint,
    pub version_minor: c_uint,
    pub clock: c_int,
    pub created_ns: i64,
    pub written: u64,
    pub torn: u64,
    pub dropped: u64,
    pub uid: uid_t,
    pub gid: gid_t,
    pub mode: mode_t,
}

extern "C" {
    pub fn shmlog_create_opts_init(opts: *mut shmlog_create_opts);
    pub fn shmlog_path(name: *const c_char, buf: *mut c_char, buflen: usize) -> c_int;
    pub fn shmlog_create(name: *const c_char, opts: *const shmlog_create_opts) -> c_int;
    pub fn shmlog_remove(name: *const c_char) -> c_int;
    pub fn shmlog_clear(name: *const c_char) -> c_int;

    pub fn shmlog_open(name: *const c_char, flags: c_int, out: *mut *mut shmlog_t) -> c_int;
    pub fn shmlog_close(h: *mut shmlog_t);
    pub fn shmlog_write(
        h: *mut shmlog_t,
        prio: c_int,
        tag: *const c_char,
        msg: *const c_char,
    ) -> c_int;
    pub fn shmlog_write_n(
        h: *mut shmlog_t,
        prio: c_int,
        tag: *const c_char,
        msg: *const c_char,
        len: usize,
    ) -> c_int;
    pub fn shmlog_enabled(h: *mut shmlog_t, prio: c_int, tag: *const c_char) -> c_int;
    pub fn shmlog_check(h: *mut shmlog_t) -> c_int;

    pub fn shmlog_set_filter(
        name: *const c_char,
        spec: *const c_char,
        bad_offset: *mut usize,
    ) -> c_int;
    pub fn shmlog_get_filter(name: *const c_char, buf: *mut c_char, buflen: usize) -> c_int;
    pub fn shmlog_parse_filter(spec: *const c_char, bad_offset: *mut usize) -> c_int;
    pub fn shmlog_filter_new(
        spec: *const c_char,
        bad_offset: *mut usize,
        out: *mut *mut shmlog_filter_t,
    ) -> c_int;
    pub fn shmlog_filter_wants(f: *const shmlog_filter_t, prio: c_int, tag: *const c_char)
        -> c_int;
    pub fn shmlog_filter_free(f: *mut shmlog_filter_t);

    pub fn shmlog_reader_open(
        name: *const c_char,
        flags: c_int,
        out: *mut *mut shmlog_reader_t,
    ) -> c_int;
    pub fn shmlog_reader_close(r: *mut shmlog_reader_t);
    pub fn shmlog_reader_next(
        r: *mut shmlog_reader_t,
        rec: *mut shmlog_record,
        lost: *mut shmlog_lost,
    ) -> c_int;
    pub fn shmlog_reader_wait(r: *mut shmlog_reader_t, timeout_ms: c_int) -> c_int;
    pub fn shmlog_reader_wait_any(
        r: *const *mut shmlog_reader_t,
        n: usize,
        timeout_ms: c_int,
    ) -> c_int;
    pub fn shmlog_reader_lanes(r: *const shmlog_reader_t) -> c_uint;
    pub fn shmlog_reader_open_archive(
        dir: *const c_char,
        flags: c_int,
        out: *mut *mut shmlog_reader_t,
    ) -> c_int;

    pub fn shmlog_stat(name: *const c_char, info: *mut shmlog_info) -> c_int;
    pub fn shmlog_prio_char(prio: c_int) -> c_char;
    pub fn shmlog_prio_parse(s: *const c_char) -> c_int;
    pub fn shmlog_strerror(err: c_int) -> *const c_char;

    fn shmlog_sys_layout(n: *mut usize) -> *const usize;
}

/// The header's layouts and constants as the C compiler sees them (for the
/// layout test; see layout.c for the order).
#[doc(hidden)]
pub fn c_layout() -> &'static [usize] {
    let mut n = 0usize;
    // SAFETY: layout.c returns a static array of n entries.
    unsafe { std::slice::from_raw_parts(shmlog_sys_layout(&mut n), n) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{size_of, MaybeUninit};
    use std::ptr::addr_of;

    macro_rules! off {
        ($t:ty, $f:ident) => {{
            let u = MaybeUninit::<$t>::uninit();
            let p = u.as_ptr();
            // SAFETY: only the field's address is taken, nothing is read.
            unsafe { addr_of!((*p).$f) as usize - p as usize }
        }};
    }

    #[test]
    fn layouts_match_the_c_header() {
        let rust = [
            size_of::<shmlog_record>(),
            off!(shmlog_record, seq),
            off!(shmlog_record, time_ns),
            off!(shmlog_record, raw_time),
            off!(shmlog_record, pid),
            off!(shmlog_record, tid),
            off!(shmlog_record, prio),
            off!(shmlog_record, flags),
            off!(shmlog_record, lane),
            off!(shmlog_record, tag),
            off!(shmlog_record, tag_len),
            off!(shmlog_record, msg),
            off!(shmlog_record, msg_len),
            size_of::<shmlog_lost>(),
            off!(shmlog_lost, lane),
            off!(shmlog_lost, overwritten),
            off!(shmlog_lost, torn),
            size_of::<shmlog_create_opts>(),
            off!(shmlog_create_opts, size),
            off!(shmlog_create_opts, lanes),
            off!(shmlog_create_opts, mode),
            off!(shmlog_create_opts, gid),
            off!(shmlog_create_opts, clock),
            off!(shmlog_create_opts, initial_seq),
            off!(shmlog_create_opts, initial_pos),
            size_of::<shmlog_info>(),
            off!(shmlog_info, written),
            off!(shmlog_info, mode),
            SHMLOG_VERBOSE as usize,
            SHMLOG_FATAL as usize,
            SHMLOG_SILENT as usize,
            SHMLOG_OPEN_CREATE as usize,
            SHMLOG_READ_TAIL as usize,
            SHMLOG_READ_DUMP as usize,
            SHMLOG_REC_TRUNCATED as usize,
            SHMLOG_EV_RECORD as usize,
            SHMLOG_EV_LOST as usize,
            SHMLOG_WAIT_ANY_MAX,
        ];
        assert_eq!(&rust[..], c_layout());
    }
}
