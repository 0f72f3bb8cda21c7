-- What happened to each agent's mailbox, in the order it happened, for fetch_inbox_events'
-- durable cursor: a delivery (a recipient row added: to, cc or bcc), a read (its read_ts set)
-- and an acknowledgement (its ack_ts set). Triggers write the events, so every change of a
-- recipient row, whichever op or command makes it, logs its event in the same transaction:
-- a crash keeps both or neither. AUTOINCREMENT keeps an id from ever being given out twice,
-- even after the newest events are pruned, so a cursor (an event id) never points at a
-- different event later. Nothing is backfilled: the log starts empty, at this migration.
CREATE TABLE mailbox_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id INTEGER NOT NULL,
    agent_id INTEGER NOT NULL,
    kind TEXT NOT NULL,
    message_id INTEGER NOT NULL,
    ts DATETIME NOT NULL
);
-- An agent's events after a cursor, oldest first.
CREATE INDEX idx_mailbox_events_agent ON mailbox_events (agent_id, id);

-- One row: this database's identity, which every cursor carries (a cursor from another
-- database is refused), and the newest event id retention has pruned (a cursor before it
-- may have missed events: expired).
CREATE TABLE mailbox_events_log (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    database_id TEXT NOT NULL,
    pruned_through INTEGER NOT NULL DEFAULT 0
);
INSERT INTO mailbox_events_log (id, database_id) VALUES (1, lower(hex(randomblob(8))));

CREATE TRIGGER mailbox_events_delivered AFTER INSERT ON message_recipients BEGIN
    INSERT INTO mailbox_events (project_id, agent_id, kind, message_id, ts)
        SELECT m.project_id, new.agent_id, 'delivered', new.message_id, m.created_ts
        FROM messages m WHERE m.id = new.message_id;
END;
-- One trigger for both columns, so an acknowledgement that also marks the message read logs
-- the read first.
CREATE TRIGGER mailbox_events_receipt AFTER UPDATE OF read_ts, ack_ts ON message_recipients
WHEN (old.read_ts IS NULL AND new.read_ts IS NOT NULL)
  OR (old.ack_ts IS NULL AND new.ack_ts IS NOT NULL)
BEGIN
    INSERT INTO mailbox_events (project_id, agent_id, kind, message_id, ts)
        SELECT m.project_id, new.agent_id, 'read', new.message_id, new.read_ts
        FROM messages m
        WHERE m.id = new.message_id AND old.read_ts IS NULL AND new.read_ts IS NOT NULL;
    INSERT INTO mailbox_events (project_id, agent_id, kind, message_id, ts)
        SELECT m.project_id, new.agent_id, 'acknowledged', new.message_id, new.ack_ts
        FROM messages m
        WHERE m.id = new.message_id AND old.ack_ts IS NULL AND new.ack_ts IS NOT NULL;
END;
