//! SHA-1 speed: libgit2's collision-detecting SHA-1 (`Oid::hash_object`, which the archive
//! keeps for blobs) against `mailroom_git::sha1` (the `sha1` crate, SHA-NI where the CPU has
//! it), which names the trees and commits the archive builds: the month directories' trees,
//! hashed in full by every commit. Median of 15 hashes of an 8 MB buffer (`BENCHMARKS.md`).
//!
//! `cargo bench -p mailroom-core --bench sha1` (release).

use std::time::{Duration, Instant};

use mailroom_git::sha1;

const BYTES: usize = 8 << 20;
const ROUNDS: usize = 15;

fn median_mb_per_s(mut hash: impl FnMut()) -> f64 {
    let mut times: Vec<Duration> = (0..ROUNDS)
        .map(|_| {
            let started = Instant::now();
            hash();
            started.elapsed()
        })
        .collect();
    times.sort();
    BYTES as f64 / 1e6 / times[ROUNDS / 2].as_secs_f64()
}

fn main() {
    let data: Vec<u8> = (0..BYTES).map(|i| (i * 31 % 251) as u8).collect();
    let header = format!("tree {BYTES}\0");
    let ours = sha1(&[header.as_bytes(), &data]);
    let theirs = git2::Oid::hash_object(git2::ObjectType::Tree, &data).expect("hash");
    assert_eq!(theirs.as_bytes(), ours, "both name the object alike");
    let libgit2 = median_mb_per_s(|| {
        std::hint::black_box(git2::Oid::hash_object(git2::ObjectType::Tree, &data).ok());
    });
    let digest = median_mb_per_s(|| {
        std::hint::black_box(sha1(&[header.as_bytes(), &data]));
    });
    println!("SHA-1 of {} MB, median of {ROUNDS}:", BYTES >> 20);
    println!("libgit2 (collision-detecting): {libgit2:.0} MB/s");
    println!("mailroom_git (sha1 crate):     {digest:.0} MB/s ({:.1}x)", digest / libgit2);
}
