//! Build-slot lease files (docs/compat/archive.md §8): one JSON file per holder at
//! `projects/<slug>/build_slots/<slot>/<holder>.json` under the archive root. They are local
//! coordination state, as in the reference: neither in the database nor committed to Git.
//!
//! Every write goes to a temporary file in the same directory and is renamed over the lease,
//! so a reader sees the old lease or the new one, never half of one. The caller serialises
//! read-modify-write sequences (the reference holds the project's archive lock).

use std::fs;
use std::path::{Path, PathBuf};

use mailroom_git::write_atomically;

use crate::error::{Error, Result};

/// Characters the reference replaces with `_` in holder and slot file names.
const UNSAFE_CHARS: [char; 10] = ['/', '\\', ':', '*', '?', '"', '<', '>', '|', ' '];

/// A name safe to use as one path component: unsafe characters become `_`.
pub fn safe_component(raw: &str) -> String {
    raw.chars().map(|c| if UNSAFE_CHARS.contains(&c) { '_' } else { c }).collect()
}

/// The directory holding one slot's leases.
pub fn slot_dir(root: &Path, project_slug: &str, slot: &str) -> PathBuf {
    root.join("projects").join(project_slug).join("build_slots").join(slot)
}

/// Every lease file of a slot as `(holder, bytes)`, in holder order. A missing directory is
/// an empty slot; temporary files of interrupted writes are skipped.
pub fn read_leases(dir: &Path) -> Result<Vec<(String, Vec<u8>)>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_err("cannot list", dir, &e)),
    };
    let mut leases = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| io_err("cannot list", dir, &e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(holder) = name.strip_suffix(".json").filter(|h| !h.starts_with('.')) else {
            continue;
        };
        let path = entry.path();
        match fs::read(&path) {
            Ok(bytes) => leases.push((holder.to_string(), bytes)),
            // Released and removed by hand between listing and reading: not a lease any more.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err("cannot read", &path, &e)),
        }
    }
    leases.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(leases)
}

/// Replaces (or creates) `<holder>.json` in `dir` atomically.
pub fn write_lease(dir: &Path, holder: &str, bytes: &[u8]) -> Result<()> {
    let target = dir.join(format!("{holder}.json"));
    // The temporary sibling starts with a dot: skipped by `read_leases` and ignored by Git.
    write_atomically(&target, bytes).map_err(|e| io_err("cannot write", &target, &e))
}

fn io_err(what: &str, path: &Path, e: &std::io::Error) -> Error {
    Error::internal(format!("build slots: {what} {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsafe_characters_become_underscores() {
        let check = |raw: &str, expected: &str| assert_eq!(safe_component(raw), expected, "{raw}");
        check("BlueLake__feature/x", "BlueLake__feature_x");
        check(r#"a\b:c*d?e"f<g>h|i j"#, "a_b_c_d_e_f_g_h_i_j");
        check("BlueLake__unknown", "BlueLake__unknown");
    }

    #[test]
    fn leases_round_trip_and_temp_files_are_skipped() {
        let root = tempfile::tempdir().expect("temp dir");
        let dir = slot_dir(root.path(), "proj", "build");
        assert!(read_leases(&dir).expect("empty").is_empty());
        write_lease(&dir, "B__main", b"{\"b\":1}").expect("write");
        write_lease(&dir, "A__unknown", b"{\"a\":1}").expect("write");
        write_lease(&dir, "A__unknown", b"{\"a\":2}").expect("overwrite");
        fs::write(dir.join(".C__x.json.tmp"), b"partial").expect("stray temp");
        let leases = read_leases(&dir).expect("read");
        assert_eq!(
            leases,
            vec![
                ("A__unknown".to_string(), b"{\"a\":2}".to_vec()),
                ("B__main".to_string(), b"{\"b\":1}".to_vec()),
            ]
        );
    }
}
