-- New messages reach the full-text index once per write transaction, not once per message.
-- FTS5 writes its pending terms to disk as a new segment at every savepoint, and the writer
-- runs each job of a batch in a savepoint of its own (so a failed job costs only itself): a
-- batch of 50 sends wrote 50 one-message segments and merged them, 16 % of the writer
-- thread's time under a send load. The triggers now only note the message in fts_pending,
-- a plain table that savepoints roll back like any other; the writer indexes what it holds
-- in one statement after the batch's last savepoint, in the same transaction, so no reader
-- ever sees a committed message missing from the index (store/db/search.rs,
-- `index_pending_messages`).
CREATE TABLE fts_pending (message_id INTEGER PRIMARY KEY);

DROP TRIGGER fts_messages_ai;
DROP TRIGGER fts_messages_ad;
DROP TRIGGER fts_messages_au;

CREATE TRIGGER fts_messages_ai AFTER INSERT ON messages BEGIN
    INSERT OR IGNORE INTO fts_pending (message_id) VALUES (new.id);
END;
CREATE TRIGGER fts_messages_ad AFTER DELETE ON messages BEGIN
    DELETE FROM fts_pending WHERE message_id = old.id;
    DELETE FROM fts_messages WHERE rowid = old.id;
END;
CREATE TRIGGER fts_messages_au AFTER UPDATE ON messages BEGIN
    DELETE FROM fts_messages WHERE rowid = old.id;
    INSERT OR IGNORE INTO fts_pending (message_id) VALUES (new.id);
END;
