// SPDX-License-Identifier: MIT
//! A `log::Log` backend: the `log` crate's macros write into a buffer,
//! the target is the tag, and the buffer's live filter (`shmlog level`)
//! decides what is logged.
use std::fmt::{self, Write as _};

use crate::{Buffer, Priority};

/// Writes `log` records into a shmlog buffer.
pub struct Logger {
    buf: Buffer,
}

/// Why [`init`] failed.
#[derive(Debug)]
pub enum InitError {
    /// The buffer could not be opened or created.
    Open(crate::Error),
    /// Another logger was installed first.
    AlreadySet,
}

impl fmt::Display for InitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InitError::Open(e) => write!(f, "cannot open the shmlog buffer: {}", e),
            InitError::AlreadySet => f.write_str("a logger is already installed"),
        }
    }
}

impl std::error::Error for InitError {}

/// The priority of a `log` level: Trace V, Debug D, Info I, Warn W, Error E.
pub fn priority_of(level: log::Level) -> Priority {
    match level {
        log::Level::Trace => Priority::Verbose,
        log::Level::Debug => Priority::Debug,
        log::Level::Info => Priority::Info,
        log::Level::Warn => Priority::Warn,
        log::Level::Error => Priority::Error,
    }
}

impl Logger {
    pub fn new(buf: Buffer) -> Logger {
        Logger { buf }
    }

    pub fn buffer(&self) -> &Buffer {
        &self.buf
    }
}

/// A fmt::Write into a fixed stack buffer that keeps what fits (shmlog
/// truncates at its message limit anyway).
struct StackWriter {
    buf: [u8; crate::MSG_MAX],
    len: usize,
}

impl fmt::Write for StackWriter {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = self.buf.len() - self.len;
        let n = s.len().min(room);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        if n < s.len() {
            return Err(fmt::Error); // stop formatting: nothing more fits
        }
        Ok(())
    }
}

impl log::Log for Logger {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        self.buf.enabled(priority_of(m.level()), m.target())
    }

    fn log(&self, r: &log::Record<'_>) {
        let prio = priority_of(r.level());
        if !self.buf.enabled(prio, r.target()) {
            return;
        }
        // A failed write (no free lane) is counted by the buffer; a logger
        // has nobody to report it to.
        if let Some(s) = r.args().as_str() {
            let _ = self.buf.write(prio, r.target(), s);
            return;
        }
        let mut w = StackWriter {
            buf: [0; crate::MSG_MAX],
            len: 0,
        };
        let _ = write!(w, "{}", r.args());
        let _ = self.buf.write(prio, r.target(), &w.buf[..w.len]);
    }

    fn flush(&self) {}
}

/// Install a [`Logger`] on buffer @name (created if missing) as the `log`
/// crate's logger, with every level enabled in `log` (the buffer's live
/// filter decides; see `shmlog level`).
pub fn init(name: &str) -> Result<(), InitError> {
    init_with_level(name, log::LevelFilter::Trace)
}

/// As [`init`], with a static ceiling: levels above @max are compiled-out
/// of `log`'s checks (one compare) before the buffer's filter is asked.
pub fn init_with_level(name: &str, max: log::LevelFilter) -> Result<(), InitError> {
    let buf = Buffer::open_or_create(name).map_err(InitError::Open)?;
    log::set_boxed_logger(Box::new(Logger::new(buf))).map_err(|_| InitError::AlreadySet)?;
    log::set_max_level(max);
    Ok(())
}
