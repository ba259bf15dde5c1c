// SPDX-License-Identifier: MIT
//! Writing, reading, filters, losses, threads and errors.
mod common;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{gettid, records, TestBuf};
use shmlog::{Buffer, CreateOptions, Event, Filter, Priority, Reader};

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

fn assert_send<T: Send>() {}
fn assert_sync<T: Sync>() {}

#[test]
fn thread_rules() {
    assert_send::<Buffer>();
    assert_sync::<Buffer>();
    assert_send::<Filter>();
    assert_sync::<Filter>();
    assert_send::<Reader>();
}

#[test]
fn write_and_read_back() {
    let b = TestBuf::new("rw");
    let before = now_ns();
    {
        let buf = Buffer::open_or_create(b.name()).unwrap();
        buf.write(Priority::Warn, "net", "link down").unwrap();
        buf.write(Priority::Error, "bin", b"a\0b\xff").unwrap();
        buf.write(Priority::Info, "uni", "grüße ✓").unwrap();
    }
    let after = now_ns();
    let recs = records(b.name());
    let got: Vec<_> = recs
        .iter()
        .map(|r| (r.prio, r.tag.as_str(), r.msg.clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            (5, "net", b"link down".to_vec()),
            (6, "bin", b"a\0b\xff".to_vec()),
            (4, "uni", "grüße ✓".as_bytes().to_vec()),
        ]
    );
    assert_eq!(recs[1].message(), "a\0b\u{fffd}");
    for r in &recs {
        assert_eq!(r.pid, std::process::id());
        assert_eq!(r.tid, gettid());
        assert!(
            before <= r.time_ns && r.time_ns <= after,
            "{} not in {}..{}",
            r.time_ns,
            before,
            after
        );
        assert_eq!(
            r.time().duration_since(UNIX_EPOCH).unwrap().as_nanos() as i64,
            r.time_ns
        );
        assert!(!r.truncated());
    }
    assert_eq!(recs[0].prio_char(), 'W');
    assert_eq!(recs[0].priority(), Some(Priority::Warn));
    assert!(recs[0].time_ns <= recs[1].time_ns && recs[1].time_ns <= recs[2].time_ns);
}

#[test]
fn truncation_is_flagged() {
    let b = TestBuf::new("trunc");
    let buf = Buffer::open_or_create(b.name()).unwrap();
    buf.write(Priority::Info, &"t".repeat(300), &"m".repeat(10000))
        .unwrap();
    let r = &records(b.name())[0];
    assert!(r.truncated());
    assert!(r.tag.len() <= shmlog::TAG_MAX && !r.msg.is_empty() && r.msg.len() <= shmlog::MSG_MAX);
}

#[test]
fn threads_share_a_buffer() {
    let b = TestBuf::new("threads");
    let buf = Arc::new(Buffer::open_or_create(b.name()).unwrap());
    let (n, per) = (4u32, 1000u32);
    let ts: Vec<_> = (0..n)
        .map(|k| {
            let buf = Arc::clone(&buf);
            std::thread::spawn(move || {
                for i in 0..per {
                    buf.write(Priority::Info, "thr", &format!("{} {}", k, i))
                        .unwrap();
                }
            })
        })
        .collect();
    for t in ts {
        t.join().unwrap();
    }
    let mut seen = vec![Vec::new(); n as usize];
    for r in records(b.name()) {
        let m = r.message();
        let mut it = m.split(' ').map(|x| x.parse::<u32>().unwrap());
        let (k, i) = (it.next().unwrap(), it.next().unwrap());
        seen[k as usize].push(i);
    }
    for s in seen {
        assert_eq!(s, (0..per).collect::<Vec<_>>());
    }
}

#[test]
fn reader_filter_and_live_level() {
    let b = TestBuf::new("filter");
    let buf = Buffer::open_or_create(b.name()).unwrap();
    buf.write(Priority::Debug, "net", "net debug").unwrap();
    buf.write(Priority::Info, "net", "net info").unwrap();
    buf.write(Priority::Error, "disk", "disk error").unwrap();
    let f = Filter::new("net:I *:S").unwrap();
    assert!(f.wants(Priority::Info, "net") && !f.wants(Priority::Fatal, "disk"));
    let got: Vec<_> = Reader::open(b.name())
        .unwrap()
        .filter(f)
        .map(|e| match e.unwrap() {
            Event::Record(r) => r.message().into_owned(),
            Event::Lost(l) => panic!("unexpected loss {:?}", l),
        })
        .collect();
    assert_eq!(got, vec!["net info"]);

    assert!(buf.enabled(Priority::Debug, "net"));
    shmlog::set_filter(b.name(), "net:W *:V").unwrap();
    assert_eq!(shmlog::get_filter(b.name()).unwrap(), "net:W *:V");
    assert!(!buf.enabled(Priority::Info, "net"));
    assert!(buf.enabled(Priority::Warn, "net"));
    assert!(buf.enabled(Priority::Verbose, "other"));
    shmlog::set_filter(b.name(), "").unwrap();
    assert!(buf.enabled(Priority::Verbose, "net"));
}

#[test]
fn losses_are_reported() {
    let b = TestBuf::new("loss");
    shmlog::create(
        b.name(),
        &CreateOptions {
            size: 64 * 1024,
            lanes: 1,
            ..Default::default()
        },
    )
    .unwrap();
    // a reader that starts before the flood and falls behind
    let reader = Reader::open(b.name()).unwrap();
    let buf = Buffer::open(b.name()).unwrap();
    let n = 5000u64;
    for i in 0..n {
        buf.write(
            Priority::Info,
            "flood",
            &format!("record {:06} {}", i, "x".repeat(100)),
        )
        .unwrap();
    }
    let (mut recs, mut lost) = (Vec::new(), Vec::new());
    for e in reader {
        match e.unwrap() {
            Event::Record(r) => recs.push(r),
            Event::Lost(l) => lost.push(l),
        }
    }
    assert!(!lost.is_empty() && lost[0].overwritten > 0 && lost[0].torn == 0);
    assert_eq!(
        lost.iter().map(|l| l.count()).sum::<u64>() + recs.len() as u64,
        n
    );
    assert!(recs
        .last()
        .unwrap()
        .message()
        .starts_with(&format!("record {:06}", n - 1)));
}

#[test]
fn follow_times_out() {
    let b = TestBuf::new("timeout");
    shmlog::create(b.name(), &CreateOptions::default()).unwrap();
    let t0 = Instant::now();
    let n = Reader::open(b.name())
        .unwrap()
        .follow(true)
        .timeout(Duration::from_millis(300))
        .count();
    let took = t0.elapsed();
    assert_eq!(n, 0);
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(10),
        "{:?}",
        took
    );
}

#[test]
fn errors() {
    let b = TestBuf::new("err");
    let e = Buffer::open(b.name()).unwrap_err();
    assert_eq!(e.errno(), 2); // ENOENT
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    assert!(!e.message().is_empty());
    assert!(e.to_string().contains(&e.message()));
    let io: std::io::Error = e.into();
    assert_eq!(io.raw_os_error(), Some(2));
    assert_eq!(Reader::open(b.name()).unwrap_err().errno(), 2);

    shmlog::create(b.name(), &CreateOptions::default()).unwrap();
    let e = shmlog::create(b.name(), &CreateOptions::default()).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
    assert_eq!(Buffer::open("bad/name").unwrap_err().errno(), 22); // EINVAL
    assert_eq!(Buffer::open("nul\0name").unwrap_err().errno(), 22);
    let small = CreateOptions {
        size: 1,
        ..Default::default()
    };
    assert_eq!(
        shmlog::create(&format!("{}-small", b.name()), &small)
            .unwrap_err()
            .errno(),
        22
    );
    assert_eq!(Filter::new("net:Q").unwrap_err().errno(), 22);
    // malformed tokens are refused, never stored as a tag named "net=D"
    assert_eq!(Filter::new("net=D").unwrap_err().errno(), 22);
    assert_eq!(Filter::new("net*:D").unwrap_err().errno(), 22);
    assert_eq!(
        shmlog::set_filter(b.name(), "net=D *:W")
            .unwrap_err()
            .errno(),
        22
    );
    assert_eq!(
        shmlog::set_filter(b.name(), "a:B:C").unwrap_err().errno(),
        22
    );
}

#[test]
fn corrupt_file_is_an_error() {
    let path = std::env::temp_dir().join(format!("shmlog-rs-junk-{}", std::process::id()));
    std::fs::write(&path, b"not a shmlog buffer".repeat(10000)).unwrap();
    let e = Reader::open(path.to_str().unwrap()).unwrap_err();
    let _ = std::fs::remove_file(&path);
    // EBADMSG, ENODATA or EPROTONOSUPPORT
    assert!([74, 61, 93].contains(&e.errno()), "{:?}", e);
}

#[test]
fn removed_and_created_again() {
    let b = TestBuf::new("removed");
    let buf = Buffer::open_or_create(b.name()).unwrap();
    assert!(!buf.removed());
    shmlog::remove(b.name()).unwrap();
    assert!(buf.removed());
    // created again: the old handle still says removed, a new one not
    let again = Buffer::open_or_create(b.name()).unwrap();
    assert!(buf.removed());
    assert!(!again.removed());
}

#[test]
fn dump_ends_behind_a_writer() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    // a reader without follow ends where the buffer ended when it began:
    // without that, behind a writer faster than it, it read on for as
    // long as the writer wrote
    let b = TestBuf::new("dumplive");
    let size = 1u64 << 20;
    shmlog::create(
        b.name(),
        &CreateOptions {
            size,
            lanes: 4,
            ..Default::default()
        },
    )
    .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let (name, s, w) = (b.name().to_owned(), stop.clone(), written.clone());
    let writer = std::thread::spawn(move || {
        let buf = Buffer::open(&name).unwrap();
        while !s.load(Ordering::Relaxed) {
            buf.write(Priority::Info, "live", "flat out").unwrap();
            w.fetch_add(1, Ordering::Relaxed);
        }
    });
    // records take 48 bytes at the least: a dump reads no more than that
    let bound = size / 48 + 8;
    let deadline = Instant::now() + Duration::from_secs(60);
    while written.load(Ordering::Relaxed) < 3 * bound {
        assert!(Instant::now() < deadline, "the writer never wrote");
        std::thread::sleep(Duration::from_millis(1));
    }
    // a Lost comes before a record, or at a lane's end
    let (mut n, mut events) = (0u64, 0u64);
    for e in Reader::open(b.name()).unwrap() {
        events += 1;
        if let Event::Record(_) = e.unwrap() {
            n += 1;
        }
        if events % 64 == 0 {
            // slower than the writer, on purpose
            std::thread::sleep(Duration::from_millis(1));
        }
        if n > bound || events > 2 * bound {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    assert!(
        n > 0 && n <= bound && events <= 2 * bound,
        "{} records in {} events, the bound {}",
        n,
        events,
        bound
    );
}
