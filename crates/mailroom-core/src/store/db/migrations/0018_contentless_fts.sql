-- The full-text index keeps no copy of the text it indexes. FTS5 stored every message's
-- subject and body a second time (its `_content` table) for nothing: searches join `messages`
-- for every column they show, and never read one back from the index. That copy was about a
-- third of the database (issue 40's ten million messages would not fit the disk with it).
-- A contentless table (`content=''`) with `contentless_delete=1` (SQLite 3.43) keeps only the
-- index and still deletes a row by its rowid; ranking (`bm25`) reads the index's own sizes and
-- is unchanged. Messages are indexed again here, in one statement. The triggers of migration
-- 0006 stay: they name the table, which SQLite looks up when they run.
DROP TABLE fts_messages;

CREATE VIRTUAL TABLE fts_messages USING fts5(
    message_id UNINDEXED, subject, body, project_scope, content='', contentless_delete=1
);
INSERT INTO fts_messages (rowid, message_id, subject, body, project_scope)
    SELECT id, id, subject, body_md, 'p' || project_id FROM messages
    WHERE id NOT IN (SELECT message_id FROM fts_pending);
