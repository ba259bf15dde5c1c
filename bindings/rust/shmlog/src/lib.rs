// SPDX-License-Identifier: MIT
//! shmlog for Rust: log into a shmlog buffer, read and follow it.
//!
//! ```no_run
//! let buf = shmlog::Buffer::open_or_create("app")?;
//! buf.write(shmlog::Priority::Warn, "net", "link down")?;
//!
//! shmlog::init("app")?;                 // the `log` crate's macros now log into "app"
//! log::info!(target: "db", "{} rows", 42);
//!
//! for ev in shmlog::Reader::open("app")?.follow(true).timeout(std::time::Duration::from_secs(1)) {
//!     match ev? {
//!         shmlog::Event::Record(r) => println!("{} {}: {}", r.prio_char(), r.tag, r.message()),
//!         shmlog::Event::Lost(l) => println!("--- {} lost", l.count()),
//!     }
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Thread rules follow the C header: a [`Buffer`] is `Send` and `Sync`
//! (writing is thread-safe and lock-free; closing happens in `Drop`, when
//! no other thread can hold it); a [`Filter`] is `Send` and `Sync`; a
//! [`Reader`] is `Send` but not `Sync` (the C reader is for one thread at a
//! time).

use std::borrow::Cow;
use std::ffi::{CStr, CString};
use std::fmt;
use std::io;
use std::os::raw::{c_char, c_int};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr::{self, NonNull};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use shmlog_sys as sys;

mod logger;
pub use logger::{init, init_with_level, InitError, Logger};

/// Bytes of a tag kept in a record; longer tags are truncated and flagged.
pub const TAG_MAX: usize = sys::SHMLOG_TAG_MAX;
/// Bytes of a message kept in a record (fewer in tiny lanes).
pub const MSG_MAX: usize = sys::SHMLOG_MSG_MAX;

/// Record priorities, with Android's numbering (V D I W E F).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(i32)]
pub enum Priority {
    Verbose = 2,
    Debug = 3,
    Info = 4,
    Warn = 5,
    Error = 6,
    Fatal = 7,
}

impl Priority {
    /// The priority of a raw value, `None` outside 2..=7.
    pub fn from_raw(p: i32) -> Option<Priority> {
        Some(match p {
            2 => Priority::Verbose,
            3 => Priority::Debug,
            4 => Priority::Info,
            5 => Priority::Warn,
            6 => Priority::Error,
            7 => Priority::Fatal,
            _ => return None,
        })
    }

    /// 'V', 'D', 'I', 'W', 'E' or 'F'.
    pub fn as_char(self) -> char {
        // SAFETY: a pure function of an integer.
        unsafe { sys::shmlog_prio_char(self as c_int) as u8 as char }
    }
}

/// A failed library call: the errno value and the library's description of
/// it (`shmlog_strerror`). Converts into `std::io::Error`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Error {
    errno: i32,
}

impl Error {
    fn from_rc(rc: c_int) -> Error {
        Error { errno: -rc }
    }

    /// The errno value (positive, e.g. `ENOENT` = 2).
    pub fn errno(&self) -> i32 {
        self.errno
    }

    /// The matching `std::io::ErrorKind` (NotFound, AlreadyExists, ...).
    pub fn kind(&self) -> io::ErrorKind {
        io::Error::from_raw_os_error(self.errno).kind()
    }

    /// The library's description of the error.
    pub fn message(&self) -> String {
        // SAFETY: shmlog_strerror returns a static NUL-terminated string.
        unsafe { CStr::from_ptr(sys::shmlog_strerror(-self.errno)) }
            .to_string_lossy()
            .into_owned()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (errno {})", self.message(), self.errno)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "shmlog::Error({}: {})", self.errno, self.message())
    }
}

impl std::error::Error for Error {}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        io::Error::from_raw_os_error(e.errno)
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// errno's ESTALE on Linux: 70 on MIPS and SPARC, 116 elsewhere.
#[cfg(any(
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "sparc",
    target_arch = "sparc64"
))]
const ESTALE: c_int = 70;
#[cfg(not(any(
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "sparc",
    target_arch = "sparc64"
)))]
const ESTALE: c_int = 116;

fn check(rc: c_int) -> Result<c_int> {
    if rc < 0 {
        Err(Error::from_rc(rc))
    } else {
        Ok(rc)
    }
}

const EINVAL: c_int = 22;

/// A C string from a name or spec; an interior NUL is EINVAL.
fn cstring(s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error { errno: EINVAL })
}

/// Runs @f with @s as a NUL-terminated C string, from a stack copy when it
/// is short (the write path allocates nothing for ordinary tags). The
/// string is cut at an interior NUL.
fn with_cstr<R>(s: &str, f: impl FnOnce(*const c_char) -> R) -> R {
    let b = s.as_bytes();
    let b = match b.iter().position(|&c| c == 0) {
        Some(n) => &b[..n],
        None => b,
    };
    let mut stack = [0u8; 128];
    if b.len() < stack.len() {
        stack[..b.len()].copy_from_slice(b);
        f(stack.as_ptr() as *const c_char)
    } else {
        let owned = CString::new(b).expect("NULs were cut");
        f(owned.as_ptr())
    }
}

// ---------------------------------------------------------------------------
// Buffers

/// Options of [`create`]; `Default` gives the library's defaults.
#[derive(Clone, Copy, Debug, Default)]
pub struct CreateOptions {
    /// Data capacity in bytes; 0: 1 MiB.
    pub size: u64,
    /// Number of lanes; 0: chosen from the size.
    pub lanes: u32,
    /// File mode; 0: 0600.
    pub mode: u32,
}

/// Create a buffer (`/dev/shm/shmlog.NAME`, or an absolute path).
pub fn create(name: &str, opts: &CreateOptions) -> Result<()> {
    let n = cstring(name)?;
    let mut o = sys::shmlog_create_opts::default();
    // SAFETY: o is a valid out-parameter; n is NUL-terminated.
    unsafe {
        sys::shmlog_create_opts_init(&mut o);
        o.size = opts.size;
        o.lanes = opts.lanes;
        o.mode = opts.mode;
        check(sys::shmlog_create(n.as_ptr(), &o))?;
    }
    Ok(())
}

/// Remove a buffer's file; processes that have it mapped keep working.
pub fn remove(name: &str) -> Result<()> {
    let n = cstring(name)?;
    // SAFETY: n is NUL-terminated.
    check(unsafe { sys::shmlog_remove(n.as_ptr()) }).map(|_| ())
}

/// Hide every record written so far from later readers.
pub fn clear(name: &str) -> Result<()> {
    let n = cstring(name)?;
    // SAFETY: n is NUL-terminated.
    check(unsafe { sys::shmlog_clear(n.as_ptr()) }).map(|_| ())
}

/// Set a buffer's live filter spec, as `shmlog level` does ("net:D *:W";
/// "" logs everything). Every writer follows it at its next call.
pub fn set_filter(name: &str, spec: &str) -> Result<()> {
    let (n, s) = (cstring(name)?, cstring(spec)?);
    let mut bad = 0usize;
    // SAFETY: NUL-terminated strings, a valid out-parameter.
    check(unsafe { sys::shmlog_set_filter(n.as_ptr(), s.as_ptr(), &mut bad) }).map(|_| ())
}

/// A buffer's current filter spec ("" when everything is logged).
pub fn get_filter(name: &str) -> Result<String> {
    let n = cstring(name)?;
    let mut buf = vec![0u8; 8192];
    // SAFETY: buf has buf.len() bytes.
    let len = check(unsafe {
        sys::shmlog_get_filter(n.as_ptr(), buf.as_mut_ptr() as *mut c_char, buf.len())
    })?;
    buf.truncate(len as usize);
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// A buffer opened for writing.
///
/// `write` and `enabled` may be called from any number of threads at once:
/// shmlog's write is thread-safe and lock-free. The buffer is detached
/// when dropped.
pub struct Buffer {
    h: NonNull<sys::shmlog_t>,
}

// SAFETY: the header states shmlog_write, shmlog_write_n and
// shmlog_enabled are thread-safe on one handle; shmlog_close needs that no
// other thread uses the handle, which Drop (taking ownership) guarantees.
unsafe impl Send for Buffer {}
unsafe impl Sync for Buffer {}

impl Buffer {
    fn open_flags(name: &str, flags: c_int) -> Result<Buffer> {
        let n = cstring(name)?;
        let mut h = ptr::null_mut();
        // SAFETY: n is NUL-terminated, h a valid out-parameter.
        check(unsafe { sys::shmlog_open(n.as_ptr(), flags, &mut h) })?;
        Ok(Buffer {
            h: NonNull::new(h).expect("shmlog_open returned 0 and no handle"),
        })
    }

    /// Attach to an existing buffer for writing ("" means $SHMLOG_BUFFER,
    /// else "main"). Errors: `ENOENT` missing, `EBADMSG`/`ENODATA`/
    /// `EPROTONOSUPPORT` not a valid buffer, `EPERM` a file shmlog does
    /// not trust, `EINVAL` a bad name.
    pub fn open(name: &str) -> Result<Buffer> {
        Buffer::open_flags(name, 0)
    }

    /// As [`Buffer::open`], creating the buffer with defaults if missing.
    pub fn open_or_create(name: &str) -> Result<Buffer> {
        Buffer::open_flags(name, sys::SHMLOG_OPEN_CREATE)
    }

    /// Write one record. The message may hold any bytes; too long tags and
    /// messages are truncated and flagged. Err(EAGAIN) means the record was
    /// dropped because every shared lane was busy at that instant (the
    /// buffer counts it); Err(ESTALE) that the buffer was removed (`shmlog
    /// rm --force`) and this thread's chunk in it is used up: open it
    /// again once it is created again.
    pub fn write<M: AsRef<[u8]> + ?Sized>(&self, prio: Priority, tag: &str, msg: &M) -> Result<()> {
        let m = msg.as_ref();
        with_cstr(tag, |t| {
            // SAFETY: the handle is live; t is NUL-terminated; m has m.len() bytes.
            check(unsafe {
                sys::shmlog_write_n(
                    self.h.as_ptr(),
                    prio as c_int,
                    t,
                    m.as_ptr() as *const c_char,
                    m.len(),
                )
            })
        })
        .map(|_| ())
    }

    /// Was the buffer removed, or replaced by another of its name, since it
    /// was opened (`shmlog rm`, then `shmlog create`)? Then writes go to
    /// the removed copy, until its chunk is used up, and nobody reads
    /// them: open the name again. One lstat(2): call it now and then
    /// (`shmlog write` does every 100 ms), not per record.
    pub fn removed(&self) -> bool {
        // SAFETY: the handle is live.
        unsafe { sys::shmlog_check(self.h.as_ptr()) == -ESTALE }
    }

    /// Is a record of @prio with @tag wanted by the buffer's live filter
    /// (`shmlog level`, else $SHMLOG_TAGS, else everything)?
    pub fn enabled(&self, prio: Priority, tag: &str) -> bool {
        // SAFETY: the handle is live; the string is NUL-terminated.
        with_cstr(tag, |t| unsafe {
            sys::shmlog_enabled(self.h.as_ptr(), prio as c_int, t) > 0
        })
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: we own the handle and nobody else can use it any more.
        unsafe { sys::shmlog_close(self.h.as_ptr()) }
    }
}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buffer").finish_non_exhaustive()
    }
}

// ---------------------------------------------------------------------------
// Filters

/// A compiled filter spec, as `shmlog cat` takes ("net:I *:S").
pub struct Filter {
    f: NonNull<sys::shmlog_filter_t>,
}

// SAFETY: shmlog_filter_wants is thread-safe and reads only; free happens
// in Drop.
unsafe impl Send for Filter {}
unsafe impl Sync for Filter {}

impl Filter {
    /// Compile a spec; a bad token is `EINVAL`.
    pub fn new(spec: &str) -> Result<Filter> {
        let s = cstring(spec)?;
        let (mut bad, mut f) = (0usize, ptr::null_mut());
        // SAFETY: s is NUL-terminated; valid out-parameters.
        check(unsafe { sys::shmlog_filter_new(s.as_ptr(), &mut bad, &mut f) })?;
        Ok(Filter {
            f: NonNull::new(f).expect("shmlog_filter_new returned 0 and no filter"),
        })
    }

    /// Does the filter let a record of @prio with @tag through?
    pub fn wants(&self, prio: Priority, tag: &str) -> bool {
        // SAFETY: the filter is live; the string is NUL-terminated.
        with_cstr(tag, |t| unsafe {
            sys::shmlog_filter_wants(self.f.as_ptr(), prio as c_int, t) > 0
        })
    }

    fn wants_raw(&self, prio: c_int, tag: *const c_char) -> bool {
        // SAFETY: the filter is live; tag is a record's NUL-terminated tag.
        unsafe { sys::shmlog_filter_wants(self.f.as_ptr(), prio, tag) > 0 }
    }
}

impl fmt::Debug for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Filter").finish_non_exhaustive()
    }
}

impl Drop for Filter {
    fn drop(&mut self) {
        // SAFETY: we own the filter.
        unsafe { sys::shmlog_filter_free(self.f.as_ptr()) }
    }
}

// ---------------------------------------------------------------------------
// Reading

/// A record read from a buffer (an owned copy).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Per-lane sequence number.
    pub seq: u64,
    /// Wall-clock time, ns since the Epoch.
    pub time_ns: i64,
    /// As reported by the writer (not verified).
    pub pid: u32,
    pub tid: u32,
    /// 2..=7 (see [`Priority::from_raw`]).
    pub prio: i32,
    /// The tag, as UTF-8 with invalid bytes replaced (U+FFFD).
    pub tag: String,
    /// The message's exact bytes (see [`Record::message`]).
    pub msg: Vec<u8>,
    pub lane: u32,
    pub flags: u32,
}

impl Record {
    /// The message as text: UTF-8, invalid bytes replaced by U+FFFD.
    pub fn message(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.msg)
    }

    pub fn time(&self) -> SystemTime {
        if self.time_ns >= 0 {
            UNIX_EPOCH + Duration::from_nanos(self.time_ns as u64)
        } else {
            UNIX_EPOCH - Duration::from_nanos(self.time_ns.unsigned_abs())
        }
    }

    pub fn priority(&self) -> Option<Priority> {
        Priority::from_raw(self.prio)
    }

    /// 'V'..'F', '?' if out of range.
    pub fn prio_char(&self) -> char {
        // SAFETY: a pure function of an integer.
        unsafe { sys::shmlog_prio_char(self.prio) as u8 as char }
    }

    /// Was the tag or the message cut to fit?
    pub fn truncated(&self) -> bool {
        self.flags & sys::SHMLOG_REC_TRUNCATED != 0
    }
}

/// A record as `shmlog cat -v brief` shows it: `W/net     ( 1234): link
/// down`, with ` [truncated]` after a record its writer cut to fit. The
/// message is shown as text ([`Record::message`]).
impl fmt::Display for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{:<8}({:>5}): {}",
            self.prio_char(),
            self.tag,
            self.pid,
            self.message()
        )?;
        if self.truncated() {
            f.write_str(" [truncated]")?;
        }
        Ok(())
    }
}

/// Records of lane `lane` lost just before its next record: overwritten
/// before this reader got them, or torn (a writer died mid-record, or the
/// record failed validation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lost {
    pub lane: u32,
    pub overwritten: u64,
    pub torn: u64,
}

impl Lost {
    pub fn count(&self) -> u64 {
        self.overwritten + self.torn
    }
}

/// `--- 12 records lost (lane 3: 12 overwritten, 0 torn) ---`, as the
/// Python binding says it.
impl fmt::Display for Lost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "--- {} records lost (lane {}: {} overwritten, {} torn) ---",
            self.count(),
            self.lane,
            self.overwritten,
            self.torn
        )
    }
}

/// What a [`Reader`] yields: a record, or a loss report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Record(Record),
    Lost(Lost),
}

/// The record's or the loss report's own `Display`.
impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Record(r) => r.fmt(f),
            Event::Lost(l) => l.fmt(f),
        }
    }
}

/// Reads a buffer's records, oldest first, merged across lanes in time
/// order, as an `Iterator` of `Result<Event>`.
///
/// Without `follow`, iteration ends where the buffer ended when it began
/// (`shmlog cat`), however fast its writers write on: such a reader is a
/// dump (`SHMLOG_READ_DUMP`), and [`wait`](Reader::wait) and [`wait_any`]
/// on it say `EINVAL`. With `follow(true)` it waits for new records
/// (`shmlog cat -f`);
/// with a `timeout` it ends once that long passes with nothing new, else it
/// follows for ever. After an error it yields that error once, then ends.
pub struct Reader {
    r: NonNull<sys::shmlog_reader_t>,
    // what it was opened with, to open it again as a follower
    src: CString,
    archive: bool,
    flags: c_int,
    reopen_err: Option<Error>,
    follow: bool,
    timeout: Option<Duration>,
    filter: Option<Filter>,
    failed: bool,
}

// SAFETY: the C reader is for one thread at a time but holds nothing tied
// to the thread that opened it; &mut self on every call keeps it to one
// thread at a time, so it is Send and deliberately not Sync.
unsafe impl Send for Reader {}

impl Reader {
    fn open_raw(
        src: &CString,
        archive: bool,
        flags: c_int,
    ) -> Result<NonNull<sys::shmlog_reader_t>> {
        let mut r = ptr::null_mut();
        // SAFETY: src is NUL-terminated, r a valid out-parameter.
        check(unsafe {
            if archive {
                sys::shmlog_reader_open_archive(src.as_ptr(), flags, &mut r)
            } else {
                sys::shmlog_reader_open(src.as_ptr(), flags, &mut r)
            }
        })?;
        Ok(NonNull::new(r).expect("the reader's open returned 0 and no reader"))
    }

    fn open_flags(src: CString, archive: bool, flags: c_int) -> Result<Reader> {
        Ok(Reader {
            r: Reader::open_raw(&src, archive, flags)?,
            src,
            archive,
            flags,
            reopen_err: None,
            follow: flags & sys::SHMLOG_READ_DUMP == 0,
            timeout: None,
            filter: None,
            failed: false,
        })
    }

    /// Open a buffer for reading from its oldest record. Errors as
    /// [`Buffer::open`].
    pub fn open(name: &str) -> Result<Reader> {
        Reader::open_flags(cstring(name)?, false, sys::SHMLOG_READ_DUMP)
    }

    /// Open a buffer for reading only what is written from now on (follow).
    pub fn open_tail(name: &str) -> Result<Reader> {
        Reader::open_flags(cstring(name)?, false, sys::SHMLOG_READ_TAIL)
    }

    /// Open an archive (the directory `shmlog archive -o DIR` writes) for
    /// reading: its records and losses in the order they were archived,
    /// across every buffer it holds, as `shmlog cat --archive DIR` shows
    /// them. A [`Lost`] stands for each span of records the archive does
    /// not hold; printf-style records come with the message formatted
    /// when they were archived. With [`follow`](Reader::follow) it waits
    /// for records archived later (the library looks every 10 ms).
    /// Errors: `ENOENT`, `ENOTDIR`, `EACCES`, `ENOMEM`.
    pub fn open_archive<P: AsRef<Path>>(dir: P) -> Result<Reader> {
        let d = CString::new(dir.as_ref().as_os_str().as_bytes())
            .map_err(|_| Error { errno: EINVAL })?;
        Reader::open_flags(d, true, sys::SHMLOG_READ_DUMP)
    }

    /// Wait for new records at the end instead of ending. Call it before
    /// reading: a dump (the reader of [`open`](Reader::open) and
    /// [`open_archive`](Reader::open_archive)) is opened again as a
    /// follower (an error doing so is the iteration's first item).
    pub fn follow(mut self, follow: bool) -> Reader {
        self.follow = follow;
        if follow && self.flags & sys::SHMLOG_READ_DUMP != 0 {
            self.flags &= !sys::SHMLOG_READ_DUMP;
            match Reader::open_raw(&self.src, self.archive, self.flags) {
                Ok(r) => {
                    // SAFETY: we own the old reader; nothing uses it after.
                    unsafe { sys::shmlog_reader_close(self.r.as_ptr()) };
                    self.r = r;
                }
                Err(e) => self.reopen_err = Some(e),
            }
        }
        self
    }

    /// With follow: end after this long with nothing new.
    pub fn timeout(mut self, idle: Duration) -> Reader {
        self.timeout = Some(idle);
        self
    }

    /// Yield only the records this filter lets through (loss reports are
    /// always yielded).
    pub fn filter(mut self, f: Filter) -> Reader {
        self.filter = Some(f);
        self
    }

    /// Number of lanes of the buffer.
    pub fn lanes(&self) -> u32 {
        // SAFETY: the reader is live.
        unsafe { sys::shmlog_reader_lanes(self.r.as_ptr()) }
    }

    /// The next record or loss report, or `None` when there is nothing
    /// more for now (never waits).
    pub fn next_now(&mut self) -> Result<Option<Event>> {
        // SAFETY: plain-data out-parameters, filled by the library.
        let mut rec: sys::shmlog_record = unsafe { std::mem::zeroed() };
        let mut lost = sys::shmlog_lost::default();
        loop {
            // SAFETY: the reader is live and used by this thread only (&mut).
            let ev =
                check(unsafe { sys::shmlog_reader_next(self.r.as_ptr(), &mut rec, &mut lost) })?;
            match ev {
                sys::SHMLOG_EV_RECORD => {
                    if let Some(f) = &self.filter {
                        if !f.wants_raw(rec.prio, rec.tag) {
                            continue;
                        }
                    }
                    return Ok(Some(Event::Record(copy_record(&rec))));
                }
                sys::SHMLOG_EV_LOST => {
                    return Ok(Some(Event::Lost(Lost {
                        lane: lost.lane,
                        overwritten: lost.overwritten,
                        torn: lost.torn,
                    })))
                }
                _ => return Ok(None),
            }
        }
    }

    /// Block until a writer may have committed a record, or @timeout.
    /// Returns false on timeout; `EINVAL` on a dump (a reader of
    /// [`open`](Reader::open) without [`follow`](Reader::follow)).
    pub fn wait(&mut self, timeout: Option<Duration>) -> Result<bool> {
        let ms = match timeout {
            None => -1,
            Some(d) => d.as_millis().min(i32::MAX as u128) as c_int,
        };
        // SAFETY: the reader is live.
        let rc = unsafe { sys::shmlog_reader_wait(self.r.as_ptr(), ms) };
        match -rc {
            0 => Ok(true),
            ETIMEDOUT => Ok(false),
            EINTR => Ok(true),
            _ => Err(Error::from_rc(rc)),
        }
    }

    fn next_event(&mut self) -> Result<Option<Event>> {
        let deadline = self.timeout.map(|t| Instant::now() + t);
        let mut last_look = false;
        loop {
            if let Some(ev) = self.next_now()? {
                return Ok(Some(ev));
            }
            if !self.follow {
                return Ok(None);
            }
            let left = match deadline {
                None => None,
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        // nothing new for that long, unless a wait that
                        // only looks (which ends the follower's rests)
                        // finds records still to come: read those first
                        if last_look || !self.wait(Some(Duration::ZERO))? {
                            return Ok(None);
                        }
                        last_look = true;
                        continue;
                    }
                    // round up, so a wait never ends just short of the deadline
                    Some(d - now + Duration::from_micros(999))
                }
            };
            self.wait(left)?;
        }
    }
}

const ETIMEDOUT: c_int = 110;
const EINTR: c_int = 4;

/// At most this many readers in one [`wait_any`].
pub const WAIT_ANY_MAX: usize = sys::SHMLOG_WAIT_ANY_MAX;

/// Wait until one of `readers` has something to read, as `select()` waits
/// on several files (`shmlog_reader_wait_any()`): `Ok(Some(i))`, the index
/// of the first ready reader (others may be ready too: read them all,
/// with [`Reader::next_now`], before waiting again), or `Ok(None)` once
/// `timeout` passes with nothing (`None`: wait until something comes).
/// `None` entries are skipped and keep their index, as a negative
/// descriptor in `poll(2)`: set a reader's entry to `None` once it has
/// ended. A reader whose buffer was truncated under it is ready: its next
/// read reports the error.
///
/// Errors: `EINTR` (kind `Interrupted`) if a signal arrived: wait again,
/// or stop if it was the signal to stop; `EINVAL` for more than
/// [`WAIT_ANY_MAX`] entries, or none but `None`s and no timeout.
///
/// ```no_run
/// # fn main() -> shmlog::Result<()> {
/// let mut a = shmlog::Reader::open_tail("app")?;
/// let mut b = shmlog::Reader::open_tail("db")?;
/// while let Some(i) = shmlog::wait_any([Some(&mut a), Some(&mut b)], None)? {
///     let r = if i == 0 { &mut a } else { &mut b };
///     while let Some(ev) = r.next_now()? {
///         println!("{}", ev);
///     }
/// }
/// # Ok(())
/// # }
/// ```
pub fn wait_any<'a, I>(readers: I, timeout: Option<Duration>) -> Result<Option<usize>>
where
    I: IntoIterator<Item = Option<&'a mut Reader>>,
{
    // The exclusive borrows last the call: nobody else reads, closes or
    // drops a reader while the library waits on it.
    let held: Vec<Option<&'a mut Reader>> = readers.into_iter().collect();
    let ptrs: Vec<*mut sys::shmlog_reader_t> = held
        .iter()
        .map(|r| match r {
            Some(r) => r.r.as_ptr(),
            None => std::ptr::null_mut(),
        })
        .collect();
    let ms = match timeout {
        None => -1,
        // rounded up, so a wait never ends just short of the timeout
        Some(d) => {
            let ms = (d.as_micros() + 999) / 1000;
            ms.min(i32::MAX as u128) as c_int
        }
    };
    // SAFETY: every non-null pointer is a live reader borrowed
    // exclusively for the call; ptrs outlives the call.
    let rc = unsafe { sys::shmlog_reader_wait_any(ptrs.as_ptr(), ptrs.len(), ms) };
    drop(held);
    match rc {
        rc if rc >= 0 => Ok(Some(rc as usize)),
        rc if -rc == ETIMEDOUT => Ok(None),
        rc => Err(Error::from_rc(rc)),
    }
}

fn copy_record(rec: &sys::shmlog_record) -> Record {
    // SAFETY: the library guarantees tag/msg point at tag_len/msg_len
    // validated bytes in the reader's own memory until the next call.
    let (tag, msg) = unsafe {
        (
            std::slice::from_raw_parts(rec.tag as *const u8, rec.tag_len),
            std::slice::from_raw_parts(rec.msg as *const u8, rec.msg_len),
        )
    };
    Record {
        seq: rec.seq,
        time_ns: rec.time_ns,
        pid: rec.pid,
        tid: rec.tid,
        prio: rec.prio,
        tag: String::from_utf8_lossy(tag).into_owned(),
        msg: msg.to_vec(),
        lane: rec.lane,
        flags: rec.flags,
    }
}

impl Iterator for Reader {
    type Item = Result<Event>;

    fn next(&mut self) -> Option<Result<Event>> {
        if self.failed {
            return None;
        }
        if let Some(e) = self.reopen_err.take() {
            self.failed = true;
            return Some(Err(e));
        }
        match self.next_event() {
            Ok(ev) => ev.map(Ok),
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        // SAFETY: we own the reader.
        unsafe { sys::shmlog_reader_close(self.r.as_ptr()) }
    }
}

impl fmt::Debug for Reader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reader")
            .field("follow", &self.follow)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}
