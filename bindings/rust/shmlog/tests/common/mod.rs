// SPDX-License-Identifier: MIT
#![allow(dead_code)]
use std::sync::atomic::{AtomicUsize, Ordering};

/// A buffer name no other test (or user) has, removed when dropped.
pub struct TestBuf(pub String);

impl TestBuf {
    pub fn new(stem: &str) -> TestBuf {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        TestBuf(format!("test-rs-{}-{}-{}", stem, std::process::id(), n))
    }
    pub fn name(&self) -> &str {
        &self.0
    }
}

impl Drop for TestBuf {
    fn drop(&mut self) {
        let _ = shmlog::remove(&self.0);
    }
}

pub fn records(name: &str) -> Vec<shmlog::Record> {
    shmlog::Reader::open(name)
        .unwrap()
        .map(|e| e.unwrap())
        .filter_map(|e| match e {
            shmlog::Event::Record(r) => Some(r),
            shmlog::Event::Lost(_) => None,
        })
        .collect()
}

/// This thread's kernel thread id (no libc needed: /proc/thread-self).
pub fn gettid() -> u32 {
    let p = std::fs::read_link("/proc/thread-self").unwrap();
    p.file_name().unwrap().to_str().unwrap().parse().unwrap()
}
