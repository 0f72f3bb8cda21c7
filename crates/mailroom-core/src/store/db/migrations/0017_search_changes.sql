-- What the search index (search_index.rs) must take in beyond new messages, which it finds by
-- id: messages deleted or edited since. Each change is a row with an ever-growing `seq`
-- (AUTOINCREMENT never reuses one, even after trimming); an index remembers the last it
-- applied. Rows are trimmed after a day; `search_changes_trimmed` says up to which `seq`, so
-- an index that still needed trimmed rows rebuilds itself.
CREATE TABLE search_changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id INTEGER NOT NULL,
    changed_ts TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE TABLE search_changes_trimmed (through INTEGER NOT NULL);
INSERT INTO search_changes_trimmed (through) VALUES (0);

CREATE TRIGGER search_changes_ad AFTER DELETE ON messages BEGIN
    INSERT INTO search_changes (message_id) VALUES (old.id);
END;
CREATE TRIGGER search_changes_au AFTER UPDATE OF project_id, sender_id, subject, body_md
ON messages BEGIN
    INSERT INTO search_changes (message_id) VALUES (old.id);
END;
