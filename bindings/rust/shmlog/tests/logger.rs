// SPDX-License-Identifier: MIT
//! The log::Log backend (its own test binary: one logger per process).
mod common;

use common::{records, TestBuf};

#[test]
fn log_macros_write_into_the_buffer() {
    let b = TestBuf::new("logger");
    shmlog::init(b.name()).unwrap();
    assert!(matches!(
        shmlog::init(b.name()),
        Err(shmlog::InitError::AlreadySet)
    ));
    log::trace!(target: "rs.app", "trace {}", 1);
    log::debug!(target: "rs.app", "debug");
    log::info!(target: "rs.app", "info {} {}", "a", 2);
    log::warn!(target: "rs.net", "warn");
    log::error!("error without a target");
    // the buffer's live filter: rs.app at W and above only
    shmlog::set_filter(b.name(), "rs.app:W *:V").unwrap();
    assert!(!log::log_enabled!(target: "rs.app", log::Level::Info));
    log::info!(target: "rs.app", "filtered out");
    log::warn!(target: "rs.app", "kept");
    shmlog::set_filter(b.name(), "").unwrap();
    let long = "y".repeat(10000);
    log::info!(target: "rs.app", "{}", long);

    let got: Vec<_> = records(b.name())
        .iter()
        .map(|r| (r.prio_char(), r.tag.clone(), r.message().into_owned()))
        .collect();
    let last = got.last().unwrap();
    assert_eq!((last.0, last.1.as_str()), ('I', "rs.app"));
    assert!(last.2.len() > 1000 && last.2.bytes().all(|c| c == b'y'));
    let me = module_path!().to_string();
    assert_eq!(
        got[..got.len() - 1].to_vec(),
        vec![
            ('V', "rs.app".to_string(), "trace 1".to_string()),
            ('D', "rs.app".to_string(), "debug".to_string()),
            ('I', "rs.app".to_string(), "info a 2".to_string()),
            ('W', "rs.net".to_string(), "warn".to_string()),
            ('E', me, "error without a target".to_string()),
            ('W', "rs.app".to_string(), "kept".to_string()),
        ]
    );
}
