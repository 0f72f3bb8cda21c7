-- Puts each message's project into the full-text index as a hidden token (`p<project id>` in
-- the column `project_scope`), so a search intersects the project's short doclist inside FTS5
-- instead of ranking every project's hits with bm25 and filtering afterwards: with 75,000
-- messages sharing a word, a search in a 100-message project scored them all. Ranking gives
-- this column weight 0 (store/db/search.rs). The reference's columns are unchanged; this one
-- is added.
DROP TRIGGER fts_messages_ai;
DROP TRIGGER fts_messages_ad;
DROP TRIGGER fts_messages_au;
DROP TABLE fts_messages;

CREATE VIRTUAL TABLE fts_messages USING fts5(message_id UNINDEXED, subject, body, project_scope);
INSERT INTO fts_messages (rowid, message_id, subject, body, project_scope)
    SELECT id, id, subject, body_md, 'p' || project_id FROM messages;

CREATE TRIGGER fts_messages_ai AFTER INSERT ON messages BEGIN
    INSERT INTO fts_messages (rowid, message_id, subject, body, project_scope)
    VALUES (new.id, new.id, new.subject, new.body_md, 'p' || new.project_id);
END;
CREATE TRIGGER fts_messages_ad AFTER DELETE ON messages BEGIN
    DELETE FROM fts_messages WHERE rowid = old.id;
END;
CREATE TRIGGER fts_messages_au AFTER UPDATE ON messages BEGIN
    DELETE FROM fts_messages WHERE rowid = old.id;
    INSERT INTO fts_messages (rowid, message_id, subject, body, project_scope)
    VALUES (new.id, new.id, new.subject, new.body_md, 'p' || new.project_id);
END;
