-- Archive work that cannot be rendered from the database as it is now carries what it needs
-- here: a deletion names the files to remove (the messages' rows are gone by the time the
-- archive writer runs). JSON; NULL for the kinds rendered from their row.
ALTER TABLE archive_queue ADD COLUMN payload TEXT;
