// SPDX-License-Identifier: MIT
//! The Rust example of the README, whole: tests/readme.rs checks that each
//! of its lines is here, and `cargo test` builds this file. It logs into
//! buffer "app" (created if missing), prints what the buffer holds as text
//! and ends.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    shmlog::init("app")?;                       // bindings/rust: log::Log backend
    log::warn!(target: "net", "link down");
    let buf = shmlog::Buffer::open("app")?;
    buf.write(shmlog::Priority::Info, "db", "42 rows")?;
    for ev in shmlog::Reader::open("app")? { println!("{}", ev?); }  // W/net ...: link down
    Ok(())
}
