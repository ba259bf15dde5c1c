// SPDX-License-Identifier: MIT
//! Following a buffer that another process writes: the test re-runs its
//! own binary as the writer (test `child_writer`, which does nothing unless
//! SHMLOG_TEST_CHILD names a buffer).
mod common;

use std::process::Command;
use std::time::Duration;

use common::TestBuf;
use shmlog::{Buffer, CreateOptions, Event, Priority, Reader};

#[test]
fn child_writer() {
    let name = match std::env::var("SHMLOG_TEST_CHILD") {
        Ok(n) => n,
        Err(_) => return, // run as an ordinary test: nothing to do
    };
    let n: u32 = std::env::var("SHMLOG_TEST_N").unwrap().parse().unwrap();
    let buf = Buffer::open(&name).unwrap();
    for i in 0..n {
        buf.write(Priority::Info, "child", &format!("record {}", i))
            .unwrap();
    }
}

#[test]
fn follow_another_process() {
    let b = TestBuf::new("follow");
    // room for every record, so none is lost however slow the reader is
    shmlog::create(
        b.name(),
        &CreateOptions {
            size: 8 << 20,
            lanes: 4,
            ..Default::default()
        },
    )
    .unwrap();
    let n = 5000u32;
    let reader = Reader::open_tail(b.name())
        .unwrap()
        .timeout(Duration::from_secs(20));
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_writer", "--test-threads=1", "--quiet"])
        .env("SHMLOG_TEST_CHILD", b.name())
        .env("SHMLOG_TEST_N", n.to_string())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut got = Vec::new();
    for e in reader {
        match e.unwrap() {
            Event::Record(r) => got.push(r),
            Event::Lost(l) => panic!("lost {:?}", l),
        }
        if got.len() == n as usize {
            break;
        }
    }
    let status = child.wait().unwrap();
    assert!(status.success(), "child writer failed: {}", status);
    assert_eq!(got.len(), n as usize, "follow ended early");
    for (i, r) in got.iter().enumerate() {
        assert_eq!(r.message(), format!("record {}", i));
        assert_eq!(r.pid, child.id());
    }
}
