// SPDX-License-Identifier: MIT
//! Print an archive (`shmlog archive -o DIR`) as text, as `shmlog cat
//! --archive DIR -v brief` shows it: `cargo run --example archive -- DIR`.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args_os()
        .nth(1)
        .ok_or("usage: archive DIR (a directory `shmlog archive -o DIR` writes)")?;
    for ev in shmlog::Reader::open_archive(&dir)? {
        println!("{}", ev?); // records, and `--- N records lost ...` lines
    }
    Ok(())
}
