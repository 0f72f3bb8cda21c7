-- Archive work not yet committed to the Git archive. A row is written in the same
-- transaction as the change it describes and deleted once the archive commit that carries
-- it exists, so an acknowledged write survives a crash between the two (replayed at
-- start-up). `kind` names what to render: 'message' (ref_id = messages.id) or 'profile'
-- (ref_id = agents.id). AUTOINCREMENT: ids are never reused after deletes, so the writer can
-- resume after the highest id it committed.
CREATE TABLE IF NOT EXISTS archive_queue (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind VARCHAR(16) NOT NULL,
    ref_id INTEGER NOT NULL,
    enqueued_ts DATETIME NOT NULL
);
