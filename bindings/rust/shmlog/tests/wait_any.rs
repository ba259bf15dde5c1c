// SPDX-License-Identifier: MIT
//! One wait over several readers: `shmlog::wait_any`.
mod common;

use std::time::Duration;

use common::TestBuf;
use shmlog::{Buffer, CreateOptions, Event, Priority, Reader};

fn make(stem: &str) -> TestBuf {
    let b = TestBuf::new(stem);
    shmlog::create(
        b.name(),
        &CreateOptions {
            size: 1 << 20,
            lanes: 2,
            ..Default::default()
        },
    )
    .unwrap();
    b
}

fn drain(r: &mut Reader) -> Vec<String> {
    let mut got = Vec::new();
    while let Some(ev) = r.next_now().unwrap() {
        match ev {
            Event::Record(rec) => got.push(rec.message().into_owned()),
            Event::Lost(l) => panic!("lost {:?}", l),
        }
    }
    got
}

#[test]
fn wait_any_says_which_reader() {
    let (ba, bb) = (make("wait-any-a"), make("wait-any-b"));
    let mut a = Reader::open_tail(ba.name()).unwrap();
    let mut b = Reader::open_tail(bb.name()).unwrap();
    // nothing written: a look finds nothing, and a short wait times out
    assert_eq!(
        shmlog::wait_any([Some(&mut a), Some(&mut b)], Some(Duration::ZERO)).unwrap(),
        None
    );
    assert_eq!(
        shmlog::wait_any(
            [Some(&mut a), Some(&mut b)],
            Some(Duration::from_millis(20))
        )
        .unwrap(),
        None
    );

    // a record in the second buffer: index 1, however long the wait
    let wb = Buffer::open(bb.name()).unwrap();
    wb.write(Priority::Info, "t", "to b").unwrap();
    let bound = Some(Duration::from_secs(30));
    assert_eq!(
        shmlog::wait_any([Some(&mut a), Some(&mut b)], bound).unwrap(),
        Some(1)
    );
    assert_eq!(drain(&mut b), ["to b"]);
    assert!(drain(&mut a).is_empty());

    // a None entry is skipped and keeps the indices of the others
    let wa = Buffer::open(ba.name()).unwrap();
    wa.write(Priority::Info, "t", "to a").unwrap();
    assert_eq!(
        shmlog::wait_any([None, Some(&mut b)], Some(Duration::ZERO)).unwrap(),
        None
    );
    assert_eq!(
        shmlog::wait_any([None, Some(&mut b), Some(&mut a)], bound).unwrap(),
        Some(2)
    );
    assert_eq!(drain(&mut a), ["to a"]);

    // both ready: the lower index
    wa.write(Priority::Info, "t", "a again").unwrap();
    wb.write(Priority::Info, "t", "b again").unwrap();
    assert_eq!(
        shmlog::wait_any([Some(&mut a), Some(&mut b)], bound).unwrap(),
        Some(0)
    );
    assert_eq!(drain(&mut a), ["a again"]);
    assert_eq!(
        shmlog::wait_any([Some(&mut a), Some(&mut b)], bound).unwrap(),
        Some(1)
    );
    assert_eq!(drain(&mut b), ["b again"]);
}

#[test]
fn wait_any_from_a_vec() {
    let bufs: Vec<TestBuf> = (0..3).map(|i| make(&format!("wait-any-v{}", i))).collect();
    let mut readers: Vec<Reader> = bufs
        .iter()
        .map(|b| Reader::open_tail(b.name()).unwrap())
        .collect();
    Buffer::open(bufs[2].name())
        .unwrap()
        .write(Priority::Warn, "t", "third")
        .unwrap();
    let i = shmlog::wait_any(readers.iter_mut().map(Some), Some(Duration::from_secs(30))).unwrap();
    assert_eq!(i, Some(2));
    assert_eq!(drain(&mut readers[2]), ["third"]);
}

#[test]
fn wait_any_refuses_what_it_cannot_wait_on() {
    // no reader and no timeout: it would wait forever
    let none: [Option<&mut Reader>; 2] = [None, None];
    let e = shmlog::wait_any(none, None).unwrap_err();
    assert_eq!(e.errno(), 22); // EINVAL
                               // no reader and a timeout: it sleeps that long and says nothing came
    let none: [Option<&mut Reader>; 1] = [None];
    assert_eq!(
        shmlog::wait_any(none, Some(Duration::from_millis(5))).unwrap(),
        None
    );
    // more readers than one wait takes
    let b = make("wait-any-max");
    let mut readers: Vec<Reader> = (0..shmlog::WAIT_ANY_MAX + 1)
        .map(|_| Reader::open(b.name()).unwrap())
        .collect();
    let e = shmlog::wait_any(readers.iter_mut().map(Some), Some(Duration::ZERO)).unwrap_err();
    assert_eq!(e.errno(), 22);
}
