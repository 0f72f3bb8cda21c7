//! Copies of the database taken before destructive operations (the hard deletes from the
//! command line), while a server may go on using it.

use std::path::Path;

use crate::error::Result;

/// Writes a consistent, compacted copy of the database at `database` to `dest`, which must not
/// exist, without locking out a server that uses it.
pub fn copy_database(database: &Path, dest: &Path) -> Result<()> {
    crate::store::Reader::open(database)?.copy_to(dest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::CoreConfig;
    use crate::ops::Mailroom;

    #[tokio::test]
    async fn the_copy_holds_what_the_database_holds() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut config = CoreConfig::for_data_dir(dir.path());
        config.archive.enabled = false;
        let database = config.database_path.clone();
        let core = Mailroom::open(config).expect("open");
        core.ensure_project("/work/backed-up").await.expect("project");
        let dest = dir.path().join("copy.sqlite3");
        copy_database(&database, &dest).expect("copy");
        let copied = crate::store::Reader::open(&dest)
            .expect("open copy")
            .read(|db| db.all_projects())
            .expect("read");
        assert_eq!(copied.len(), 1);
        assert!(copy_database(&database, &dest).is_err(), "an existing file is not overwritten");
    }
}
