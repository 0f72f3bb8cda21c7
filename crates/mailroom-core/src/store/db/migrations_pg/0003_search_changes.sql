-- What each server's search index (search_index.rs) must take in beyond new messages: messages
-- deleted or edited since, as SQLite's migration 0017 keeps them. Writes take the writers'
-- lock, so `seq` commits in order. Rows are trimmed after a day; `search_changes_trimmed`
-- says up to which `seq`.
CREATE TABLE search_changes (
    seq BIGSERIAL PRIMARY KEY,
    message_id BIGINT NOT NULL,
    changed_ts TEXT COLLATE "C" NOT NULL
        DEFAULT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
);
CREATE TABLE search_changes_trimmed (through BIGINT NOT NULL);
INSERT INTO search_changes_trimmed (through) VALUES (0);

CREATE FUNCTION note_search_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO search_changes (message_id) VALUES (OLD.id);
    RETURN NULL;
END
$$;
CREATE TRIGGER search_changes_ad AFTER DELETE ON messages
    FOR EACH ROW EXECUTE FUNCTION note_search_change();
CREATE TRIGGER search_changes_au AFTER UPDATE OF project_id, sender_id, subject, body_md
    ON messages FOR EACH ROW EXECUTE FUNCTION note_search_change();
