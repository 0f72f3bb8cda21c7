-- Webhooks (docs/compat/tools.md §4.13): endpoints a project or one agent registered, and the
-- durable queue of their deliveries. A trigger on message_recipients queues one delivery per
-- matching webhook in the transaction that stores the recipient row, so a send's reply never
-- goes out before its deliveries are queued, and a crash keeps both or neither. A project
-- webhook is never queued a bcc recipient row: who was bcc'd is the sender's to see; an
-- agent's webhook gets every delivery to that agent, bcc included.
CREATE TABLE webhooks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id INTEGER NOT NULL,
    -- NULL: every recipient in the project; else only this agent's deliveries.
    agent_id INTEGER,
    url TEXT NOT NULL,
    -- The Standard Webhooks secret as given out (`whsec_<base64>`); never listed.
    secret TEXT NOT NULL,
    created_ts DATETIME NOT NULL
);
CREATE INDEX idx_webhooks_project ON webhooks (project_id, agent_id);

-- One delivery of one message to one recipient through one webhook. `event_id` is the
-- `webhook-id` header, the receiver's idempotency key: random, kept across retries and
-- restarts. Times are microseconds since the Unix epoch. `status`: pending (to be tried at
-- `next_attempt_us`), delivered, or failed (attempts exhausted or its message deleted).
CREATE TABLE webhook_deliveries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id TEXT NOT NULL UNIQUE,
    webhook_id INTEGER NOT NULL,
    message_id INTEGER NOT NULL,
    agent_id INTEGER NOT NULL,
    kind TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_us INTEGER NOT NULL,
    last_error TEXT,
    created_us INTEGER NOT NULL,
    finished_us INTEGER
);
-- What is due, soonest first.
CREATE INDEX idx_webhook_deliveries_due ON webhook_deliveries (next_attempt_us)
    WHERE status = 'pending';
-- A webhook's deliveries, newest first (the deliveries view, removal).
CREATE INDEX idx_webhook_deliveries_webhook ON webhook_deliveries (webhook_id, status, id);
-- Finished rows by age, for the upkeep sweep that forgets them.
CREATE INDEX idx_webhook_deliveries_finished ON webhook_deliveries (finished_us)
    WHERE status <> 'pending';

CREATE TRIGGER webhook_deliveries_queued AFTER INSERT ON message_recipients BEGIN
    INSERT INTO webhook_deliveries
        (event_id, webhook_id, message_id, agent_id, kind, next_attempt_us, created_us)
        SELECT 'msg_' || lower(hex(randomblob(12))), w.id, new.message_id, new.agent_id,
               new.kind, CAST(unixepoch('subsec') * 1000000 AS INTEGER),
               CAST(unixepoch('subsec') * 1000000 AS INTEGER)
        FROM messages m
        JOIN webhooks w ON w.project_id = m.project_id
                       AND (w.agent_id = new.agent_id
                            OR (w.agent_id IS NULL AND new.kind <> 'bcc'))
        WHERE m.id = new.message_id;
END;
