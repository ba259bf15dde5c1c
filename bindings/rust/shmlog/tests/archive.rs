// SPDX-License-Identifier: MIT
//! Reading an archive: written by the CLI's archiver (`shmlog archive`),
//! which CTest names in $SHMLOG_CLI.
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::TestBuf;
use shmlog::{Buffer, CreateOptions, Event, Filter, Priority, Reader};

/// The CLI, or None (the test then says it checked nothing) when run
/// outside CTest without $SHMLOG_CLI.
fn cli() -> Option<PathBuf> {
    match std::env::var_os("SHMLOG_CLI") {
        Some(p) if Path::new(&p).is_file() => Some(PathBuf::from(p)),
        _ => {
            eprintln!("SKIP: $SHMLOG_CLI does not name the shmlog CLI (CTest sets it)");
            None
        }
    }
}

fn tmpdir(stem: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("shmlog-rs-{}-{}", stem, std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn archive(cli: &Path, buf: &str, dir: &Path) {
    let st = Command::new(cli)
        .args(["archive", "-b", buf, "-o"])
        .arg(dir)
        .args(["--once", "-q"])
        .status()
        .unwrap();
    assert!(st.success(), "shmlog archive: {}", st);
}

#[test]
fn archive_reads_what_cat_shows() {
    let Some(cli) = cli() else { return };
    let b = TestBuf::new("arc");
    // a small ring the writer overruns before the archiver comes: the
    // archive starts with a loss
    let opts = CreateOptions {
        size: 64 * 1024,
        lanes: 1,
        ..Default::default()
    };
    shmlog::create(b.name(), &opts).unwrap();
    let n = 3000u64;
    {
        let buf = Buffer::open(b.name()).unwrap();
        for i in 0..n {
            let tag = if i % 2 == 0 { "arc0" } else { "arc1" };
            buf.write(
                Priority::Info,
                tag,
                &format!("record {:06} {}", i, "x".repeat(i as usize % 50)),
            )
            .unwrap();
        }
    }
    let dir = tmpdir("arc");
    archive(&cli, b.name(), &dir);
    shmlog::remove(b.name()).unwrap(); // the archive outlives its buffer
    let events: Vec<Event> = Reader::open_archive(&dir)
        .unwrap()
        .map(|e| e.unwrap())
        .collect();
    let lost: u64 = events
        .iter()
        .map(|e| match e {
            Event::Lost(l) => l.count(),
            _ => 0,
        })
        .sum();
    let msgs: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::Record(r) => Some(r.message().into_owned()),
            _ => None,
        })
        .collect();
    assert!(lost > 0, "the test premise: a loss");
    assert_eq!(lost + msgs.len() as u64, n, "records + losses = written");
    assert!(msgs
        .last()
        .unwrap()
        .starts_with(&format!("record {:06}", n - 1)));
    // the same records as `shmlog cat --archive` shows
    let out = Command::new(&cli)
        .args(["cat", "--archive"])
        .arg(&dir)
        .args(["-v", "raw"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let cat: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(msgs, cat);
    // a filter, as on a buffer's reader
    let only: Vec<String> = Reader::open_archive(&dir)
        .unwrap()
        .filter(Filter::new("arc1:V *:S").unwrap())
        .filter_map(|e| match e.unwrap() {
            Event::Record(r) => Some(r.message().into_owned()),
            _ => None,
        })
        .collect();
    let want: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::Record(r) if r.tag == "arc1" => Some(r.message().into_owned()),
            _ => None,
        })
        .collect();
    assert_eq!(only, want);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn archive_follow_sees_later_records() {
    let Some(cli) = cli() else { return };
    let b = TestBuf::new("arcf");
    shmlog::create(b.name(), &CreateOptions::default()).unwrap();
    let buf = Buffer::open(b.name()).unwrap();
    buf.write(Priority::Info, "arc", "first").unwrap();
    let dir = tmpdir("arcf");
    archive(&cli, b.name(), &dir);
    let mut r = Reader::open_archive(&dir)
        .unwrap()
        .follow(true)
        .timeout(Duration::from_secs(30));
    let msg = |e: Option<shmlog::Result<Event>>| match e.unwrap().unwrap() {
        Event::Record(r) => r.message().into_owned(),
        Event::Lost(l) => panic!("unexpected {}", l),
    };
    assert_eq!(msg(r.next()), "first");
    buf.write(Priority::Info, "arc", "second").unwrap();
    archive(&cli, b.name(), &dir);
    assert_eq!(msg(r.next()), "second");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn archive_errors() {
    let dir = tmpdir("arce");
    let e = Reader::open_archive(dir.join("none")).err().unwrap();
    assert_eq!(e.errno(), 2); // ENOENT
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("file"), "x").unwrap();
    let e = Reader::open_archive(dir.join("file")).err().unwrap();
    assert_eq!(e.errno(), 20); // ENOTDIR
    let _ = std::fs::remove_dir_all(&dir);
}
