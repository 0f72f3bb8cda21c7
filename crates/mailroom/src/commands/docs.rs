//! `mailroom docs insert-blurbs`: the agent-mail section of a repository's agent instructions
//! (AGENTS.md, CLAUDE.md, GEMINI.md), kept between markers so that running it again replaces
//! the section instead of adding another, and `--remove` takes it out. Everything outside the
//! markers is kept byte for byte.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};

/// The instruction files an agent reads, by the agents that read them.
const FILES: [&str; 3] = ["AGENTS.md", "CLAUDE.md", "GEMINI.md"];
const BEGIN: &str = "<!-- BEGIN mailroom agent mail (mailroom docs insert-blurbs) -->";
const END: &str = "<!-- END mailroom agent mail -->";
const BLURB: &str = include_str!("blurb.md");
/// Directories never scanned.
const SKIPPED: [&str; 5] = [".git", "node_modules", "target", ".venv", "vendor"];

/// `mailroom docs …`
#[derive(Args, Debug)]
pub struct DocsArgs {
    #[command(subcommand)]
    command: DocsCommand,
}

#[derive(Subcommand, Debug)]
enum DocsCommand {
    /// Add (or refresh) the agent-mail section of AGENTS.md, CLAUDE.md and GEMINI.md files.
    InsertBlurbs(BlurbArgs),
}

#[derive(Args, Debug)]
struct BlurbArgs {
    /// Where to look for the files
    #[arg(long, value_name = "DIR", default_value = ".")]
    scan_dir: PathBuf,
    /// How many directory levels below --scan-dir to look in (0: only --scan-dir)
    #[arg(long, default_value_t = 2)]
    max_depth: usize,
    /// Print what would change; change nothing
    #[arg(long)]
    dry_run: bool,
    /// Accepted for the reference's command line; this command never asks
    #[arg(long = "yes")]
    _yes: bool,
    /// Create AGENTS.md in --scan-dir when no instruction file is found
    #[arg(long)]
    create: bool,
    /// Take the section out instead
    #[arg(long)]
    remove: bool,
}

pub fn run(args: DocsArgs) -> Result<()> {
    match args.command {
        DocsCommand::InsertBlurbs(args) => insert_blurbs(&args),
    }
}

fn insert_blurbs(args: &BlurbArgs) -> Result<()> {
    let mut files = Vec::new();
    find(&args.scan_dir, args.max_depth, &mut files)
        .with_context(|| format!("cannot scan {}", args.scan_dir.display()))?;
    if files.is_empty() {
        if !args.create || args.remove {
            println!(
                "no AGENTS.md, CLAUDE.md or GEMINI.md under {} (--create makes AGENTS.md)",
                args.scan_dir.display()
            );
            return Ok(());
        }
        files.push(args.scan_dir.join("AGENTS.md"));
    }
    for path in files {
        let old = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        let new = if args.remove { without_section(&old) } else { with_section(&old) }
            .with_context(|| format!("{}", path.display()))?;
        let verb = match (new == old, args.remove) {
            (true, _) => "unchanged",
            (false, true) => "section removed from",
            (false, false) if old.contains(BEGIN) => "section refreshed in",
            (false, false) => "section added to",
        };
        if args.dry_run {
            println!("would be {verb}: {}", path.display());
            continue;
        }
        if new != old {
            write_atomically(&path, &new)?;
        }
        println!("{verb}: {}", path.display());
    }
    Ok(())
}

/// The instruction files in `dir` and up to `depth` levels below, in path order.
fn find(dir: &Path, depth: usize, found: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.filter_map(Result::ok).collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let kind = entry.file_type()?;
        if kind.is_file() && FILES.contains(&name.as_ref()) {
            found.push(entry.path());
        } else if kind.is_dir() && depth > 0 && !SKIPPED.contains(&name.as_ref()) {
            find(&entry.path(), depth - 1, found)?;
        }
    }
    Ok(())
}

/// The section as written between its markers.
fn section() -> String {
    format!("{BEGIN}\n{}{END}\n", BLURB)
}

/// Where the section is: (start of BEGIN, end of END's line). An unpaired marker is an error
/// (the file was edited by hand; nothing is guessed).
fn span(text: &str) -> Result<Option<(usize, usize)>> {
    match (text.find(BEGIN), text.find(END)) {
        (None, None) => Ok(None),
        (Some(begin), Some(end)) if begin < end => {
            let after = end + END.len();
            let after = if text[after..].starts_with('\n') { after + 1 } else { after };
            Ok(Some((begin, after)))
        }
        _ => bail!(
            "its agent-mail markers are unpaired or out of order; fix or remove them by hand \
             ({BEGIN} … {END})"
        ),
    }
}

fn with_section(text: &str) -> Result<String> {
    Ok(match span(text)? {
        Some((begin, end)) => format!("{}{}{}", &text[..begin], section(), &text[end..]),
        None if text.is_empty() => section(),
        None => {
            let gap = if text.ends_with("\n\n") {
                ""
            } else if text.ends_with('\n') {
                "\n"
            } else {
                "\n\n"
            };
            format!("{text}{gap}{}", section())
        }
    })
}

fn without_section(text: &str) -> Result<String> {
    Ok(match span(text)? {
        Some((begin, end)) => {
            let before = &text[..begin];
            // The blank line `with_section` put before the section goes with it.
            let before = before.strip_suffix("\n\n").map_or(before, |b| &before[..b.len() + 1]);
            format!("{before}{}", &text[end..])
        }
        None => text.to_string(),
    })
}

fn write_atomically(path: &Path, text: &str) -> Result<()> {
    let temp = path.with_extension("md.mailroom-tmp");
    std::fs::write(&temp, text)
        .and_then(|()| std::fs::rename(&temp, path))
        .with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_is_added_once_refreshed_in_place_and_removed_cleanly() {
        for original in ["", "# Rules\n\nUse tabs.\n", "# Rules\nno newline at end", "x\n\n"] {
            let added = with_section(original).expect("add");
            assert_eq!(added.matches(BEGIN).count(), 1, "{original:?}");
            assert_eq!(with_section(&added).expect("again"), added, "idempotent: {original:?}");
            let removed = without_section(&added).expect("remove");
            // What was there, ending in one newline.
            let expected = if original.is_empty() {
                String::new()
            } else {
                format!("{}\n", original.trim_end_matches('\n'))
            };
            assert_eq!(removed, expected, "{original:?}");
        }
        let stale = format!("# A\n\n{BEGIN}\nold text\n{END}\n\n# B\n");
        let refreshed = with_section(&stale).expect("refresh");
        assert!(
            refreshed.starts_with("# A\n\n") && refreshed.ends_with(&format!("{END}\n\n# B\n"))
        );
        assert!(!refreshed.contains("old text") && refreshed.contains("macro_start_session"));
    }

    #[test]
    fn unpaired_markers_are_refused() {
        for broken in [format!("{BEGIN}\nno end"), format!("{END}\n{BEGIN}\n")] {
            let error = with_section(&broken).expect_err("refused").to_string();
            assert!(error.contains("unpaired"), "{error}");
        }
    }
}
