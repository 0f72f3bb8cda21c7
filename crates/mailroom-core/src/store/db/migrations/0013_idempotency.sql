-- Retry-safe writes (docs/compat/tools.md §4.10): the first answer of a send_message,
-- reply_message or acknowledge_message called with an idempotency_key, kept for
-- IDEMPOTENCY_WINDOW_SECONDS so that a retry with the same key and the same arguments gets it
-- again instead of storing the message twice. A key belongs to one project, one acting agent
-- and one tool; `fingerprint` is the SHA-1 of the call's other arguments, to refuse the key's
-- reuse for a different call. Expired rows are replaced by the next write of their key and deleted by the upkeep's reservation sweep.
CREATE TABLE idempotency_keys (
    project_id INTEGER NOT NULL,
    agent_id INTEGER NOT NULL,
    tool TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    result_json TEXT NOT NULL,
    created_ts TEXT NOT NULL,
    PRIMARY KEY (project_id, agent_id, tool, idempotency_key)
) WITHOUT ROWID;

CREATE INDEX idx_idempotency_keys_created ON idempotency_keys (created_ts);
