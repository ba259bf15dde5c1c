// SPDX-License-Identifier: MIT
//! Write records into a buffer: `write BUFFER TAG MESSAGE...` writes one
//! record (priority I) per MESSAGE, in order. The cross-language test uses
//! it as the Rust writer.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: {} BUFFER TAG MESSAGE...", args[0]);
        std::process::exit(2);
    }
    let buf = match shmlog::Buffer::open(&args[1]) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{}: cannot open buffer {}: {}", args[0], args[1], e);
            std::process::exit(1);
        }
    };
    for m in &args[3..] {
        if let Err(e) = buf.write(shmlog::Priority::Info, &args[2], m) {
            eprintln!("{}: write failed: {}", args[0], e);
            std::process::exit(1);
        }
    }
}
