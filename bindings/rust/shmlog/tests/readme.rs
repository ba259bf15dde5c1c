// SPDX-License-Identifier: MIT
//! The README's Rust example is examples/readme.rs (built by `cargo test`),
//! and what it prints: records as text (`Display`), a reader that ends.
mod common;

use common::TestBuf;
use shmlog::{Buffer, Event, Lost, Priority, Reader};

const README: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../README.md"));
const EXAMPLE: &str = include_str!("../examples/readme.rs");

/// The lines of the README's ```rust block.
fn readme_rust_lines() -> Vec<&'static str> {
    let start = README.find("```rust\n").expect("README has a ```rust block") + 8;
    let len = README[start..].find("```").expect("the ```rust block ends");
    README[start..start + len]
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn readme_example_is_the_built_example() {
    let lines = readme_rust_lines();
    assert!(lines.len() >= 4, "README's Rust example: {:?}", lines);
    let example: Vec<&str> = EXAMPLE.lines().map(str::trim).collect();
    for l in lines {
        assert!(
            example.contains(&l),
            "README line not in examples/readme.rs (keep them the same): {}",
            l
        );
    }
}

#[test]
fn records_display_as_text_and_a_dump_ends() {
    let b = TestBuf::new("display");
    let long_tag = "t".repeat(100);
    {
        let buf = Buffer::open_or_create(b.name()).unwrap();
        buf.write(Priority::Warn, "net", "link down").unwrap();
        buf.write(Priority::Info, &long_tag, "cut").unwrap();
    }
    // no follow: the loop ends at the end of what the buffer holds
    let shown: Vec<String> = Reader::open(b.name())
        .unwrap()
        .map(|e| e.unwrap().to_string())
        .collect();
    let pid = std::process::id();
    assert_eq!(shown.len(), 2, "{:?}", shown);
    assert_eq!(shown[0], format!("W/net     ({:>5}): link down", pid));
    assert!(
        shown[1].starts_with("I/tttt") && shown[1].ends_with("): cut [truncated]"),
        "{}",
        shown[1]
    );
    let lost = Event::Lost(Lost { lane: 3, overwritten: 12, torn: 1 });
    assert_eq!(lost.to_string(), "--- 13 records lost (lane 3: 12 overwritten, 1 torn) ---");
}
