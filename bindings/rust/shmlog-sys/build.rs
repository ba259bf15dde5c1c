// SPDX-License-Identifier: MIT
//! Builds libshmlog from the shmlog tree this crate sits in (src/*.c, three
//! directories up; SHMLOG_SOURCE_DIR points elsewhere), or with the
//! `system` feature links an installed one found by pkg-config. Either way
//! a small C file reporting the header's struct layouts is compiled in, so
//! the tests can check the Rust declarations against the real header.
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    println!("cargo:rerun-if-env-changed=SHMLOG_SOURCE_DIR");
    let root = match env::var_os("SHMLOG_SOURCE_DIR") {
        Some(d) => PathBuf::from(d),
        None => manifest.join("../../.."),
    };
    let mut include = vec![];
    if env::var_os("CARGO_FEATURE_SYSTEM").is_some() {
        include = link_installed();
    } else {
        build_from_tree(&root);
    }
    if include.is_empty() {
        include.push(root.join("include"));
    }
    let mut layout = cc::Build::new();
    layout
        .file(manifest.join("layout.c"))
        .includes(&include)
        .warnings(true);
    layout.compile("shmlog_sys_layout");
    println!("cargo:rerun-if-changed=layout.c");
}

fn build_from_tree(root: &Path) {
    let src = root.join("src");
    let header = root.join("include/shmlog.h");
    if !header.exists() {
        panic!(
            "shmlog-sys: no shmlog sources at {} (include/shmlog.h, src/*.c); \
             build from a clone of shmlog, set SHMLOG_SOURCE_DIR to one, or \
             enable the `system` feature to link an installed libshmlog",
            root.display()
        );
    }
    let mut sources: Vec<PathBuf> = std::fs::read_dir(&src)
        .expect("read src/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().map_or(false, |x| x == "c"))
        .collect();
    sources.sort();
    let mut b = cc::Build::new();
    b.files(&sources)
        .include(root.join("include"))
        .include(&src)
        .define("_GNU_SOURCE", None)
        .flag_if_supported("-std=gnu11")
        .warnings(false);
    // SHMLOG_ZSTD=1: archives with zstd-compressed blocks, as cmake
    // -DSHMLOG_ZSTD=ON builds the library (libzstd linked)
    println!("cargo:rerun-if-env-changed=SHMLOG_ZSTD");
    let zstd = env::var("SHMLOG_ZSTD").map_or(false, |v| v == "1");
    if zstd {
        b.define("SHMLOG_HAVE_ZSTD", "1");
    }
    b.compile("shmlog");
    if zstd {
        println!("cargo:rustc-link-lib=zstd");
    }
    println!("cargo:rustc-link-lib=pthread");
    println!("cargo:rerun-if-changed={}", src.display());
    println!("cargo:rerun-if-changed={}", header.display());
    for s in &sources {
        println!("cargo:rerun-if-changed={}", s.display());
    }
}

/// Link flags from `pkg-config --libs shmlog`; returns the -I directories.
fn link_installed() -> Vec<PathBuf> {
    let run = |arg: &str| -> String {
        let out = Command::new("pkg-config")
            .args([arg, "shmlog"])
            .output()
            .unwrap_or_else(|e| panic!("shmlog-sys: cannot run pkg-config: {}", e));
        if !out.status.success() {
            panic!(
                "shmlog-sys: pkg-config does not know shmlog ({}); install \
                 libshmlog (cmake --install) or build without the `system` feature",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    for tok in run("--libs").split_whitespace() {
        if let Some(dir) = tok.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={}", dir);
        } else if let Some(lib) = tok.strip_prefix("-l") {
            println!("cargo:rustc-link-lib={}", lib);
        }
    }
    run("--cflags")
        .split_whitespace()
        .filter_map(|t| t.strip_prefix("-I").map(PathBuf::from))
        .collect()
}
