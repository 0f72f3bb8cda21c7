use std::process::Command;

use mailroom_git::{ArchiveRepo, Author};

use super::*;
use crate::archive::LAYOUT;

fn archive(root: &std::path::Path) -> ArchiveRepo {
    let author = Author { name: "mailroom".into(), email: "mailroom@example.com".into() };
    let mut repo = ArchiveRepo::open_or_init(root, author, LAYOUT).expect("init");
    let mut files = Vec::new();
    for project in ["alpha", "beta"] {
        for month in ["2025/12", "2026/01", "2026/02"] {
            let name = format!("{}__hello__1.md", month.replace('/', "-"));
            let body = format!("{project} {month}\n").into_bytes();
            let base = format!("projects/{project}");
            files.push((format!("{base}/messages/{month}/{name}"), body.clone()));
            files.push((format!("{base}/agents/BlueLake/outbox/{month}/{name}"), body.clone()));
            files.push((format!("{base}/agents/GreenCastle/inbox/{month}/{name}"), body));
            files.push((format!("{base}/messages/threads/{month}/t.md"), b"t\n".to_vec()));
        }
        // The reference's flat digest, as an archive from before the monthly ones holds it.
        files.push((format!("projects/{project}/messages/threads/t.md"), b"t\n".to_vec()));
        let profile = format!("projects/{project}/agents/BlueLake/profile.json");
        files.push((profile, b"{}\n".to_vec()));
    }
    repo.commit_files(&files, "mail\n").expect("commit");
    repo.sync_index().expect("index");
    repo
}

fn status(root: &std::path::Path) -> String {
    let output = Command::new("git").arg("-C").arg(root).args(["status", "--porcelain"]).output();
    String::from_utf8_lossy(&output.expect("git").stdout).into_owned()
}

/// Over budget, the oldest month leaves the work tree in every project and mailbox, its
/// thread digests too, one month per look; what is not a month directory stays (the flat
/// digests of the reference's layout among them); Git sees a clean work tree.
#[test]
fn the_oldest_month_leaves_the_work_tree_first_in_every_project() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("archive");
    let mut repo = archive(&root);
    assert_eq!(repo.index_entries(), 29);

    let mut budget = WorkTreeBudget::new(100);
    budget.keep(&mut repo);
    assert_eq!(repo.retired_directories().count(), 0, "under budget: nothing leaves");

    let mut budget = WorkTreeBudget::new(10);
    budget.keep(&mut repo);
    let retired: Vec<&str> = repo.retired_directories().collect();
    assert_eq!(retired.len(), 8, "{retired:?}");
    assert!(retired.iter().all(|d| d.ends_with("2025/12")), "{retired:?}");
    assert!(!root.join("projects/alpha/messages/2025/12").exists());
    assert!(!root.join("projects/beta/agents/GreenCastle/inbox/2025/12").exists());
    assert!(!root.join("projects/beta/messages/threads/2025/12").exists());
    assert!(root.join("projects/alpha/messages/2026/01").exists());
    assert!(root.join("projects/alpha/messages/threads/2026/01/t.md").exists());
    assert_eq!(repo.index_entries(), 29, "each directory held one file: one sparse entry now");
    budget.keep(&mut repo);
    assert_eq!(repo.retired_directories().count(), 8, "one look per interval");

    assert_eq!(
        retire_oldest_month(&mut repo).expect("retire").map(|m| m.0),
        Some("2026/01".into())
    );
    assert_eq!(
        retire_oldest_month(&mut repo).expect("retire").map(|m| m.0),
        Some("2026/02".into())
    );
    assert_eq!(retire_oldest_month(&mut repo).expect("retire"), None, "no month left");
    let mut budget = WorkTreeBudget::new(10);
    budget.keep(&mut repo);
    assert_eq!(budget.full_at, Some(29), "nothing to retire: the next look waits for growth");
    assert!(root.join("projects/alpha/messages/threads/t.md").exists());
    assert!(root.join("projects/beta/agents/BlueLake/profile.json").exists());
    assert_eq!(status(&root), "");
}

/// Without a budget nothing ever leaves.
#[test]
fn no_budget_keeps_every_month() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("archive");
    let mut repo = archive(&root);
    WorkTreeBudget::new(0).keep(&mut repo);
    assert_eq!(repo.retired_directories().count(), 0);
}
