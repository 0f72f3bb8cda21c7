-- The schema of SQLite's migrations 0001-0016, on PostgreSQL. Columns keep SQLite's shapes so
-- the query modules run unchanged on both: timestamps are the reference's text (compared as
-- bytes, hence COLLATE "C" on every text column, like SQLite's BINARY), booleans 0/1 integers,
-- ids 64-bit. Names compare case-insensitively through the ICU collation `nocase`, which the
-- queries' `COLLATE NOCASE` names (PostgreSQL folds the unquoted name).

CREATE COLLATION IF NOT EXISTS nocase (provider = icu, locale = 'und-u-ks-level2', deterministic = false);

-- An insert that names id NULL gets the next id (SQLite's INTEGER PRIMARY KEY does this);
-- TG_ARGV[0] is the table's sequence.
CREATE FUNCTION mailroom_fill_id() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id IS NULL THEN
        NEW.id := nextval(TG_ARGV[0]::regclass);
    END IF;
    RETURN NEW;
END $$;

CREATE TABLE projects (
    id BIGSERIAL PRIMARY KEY,
    slug TEXT COLLATE "C" NOT NULL,
    human_key TEXT COLLATE "C" NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    archived_at TEXT COLLATE "C"
);
CREATE UNIQUE INDEX ix_projects_slug ON projects (slug);
CREATE INDEX ix_projects_human_key ON projects (human_key);

CREATE TABLE products (
    id BIGSERIAL PRIMARY KEY,
    product_uid TEXT COLLATE "C" NOT NULL,
    name TEXT COLLATE "C" NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    CONSTRAINT uq_product_uid UNIQUE (product_uid),
    CONSTRAINT uq_product_name UNIQUE (name)
);

CREATE TABLE product_project_links (
    id BIGSERIAL PRIMARY KEY,
    product_id BIGINT NOT NULL REFERENCES products (id),
    project_id BIGINT NOT NULL REFERENCES projects (id),
    created_at TEXT COLLATE "C" NOT NULL,
    CONSTRAINT uq_product_project UNIQUE (product_id, project_id)
);

CREATE TABLE agents (
    id BIGSERIAL PRIMARY KEY,
    project_id BIGINT NOT NULL REFERENCES projects (id),
    name TEXT COLLATE "C" NOT NULL,
    program TEXT COLLATE "C" NOT NULL,
    model TEXT COLLATE "C" NOT NULL,
    task_description TEXT COLLATE "C" NOT NULL DEFAULT '',
    inception_ts TEXT COLLATE "C" NOT NULL,
    last_active_ts TEXT COLLATE "C" NOT NULL,
    attachments_policy TEXT COLLATE "C" NOT NULL DEFAULT 'auto',
    contact_policy TEXT COLLATE "C" NOT NULL DEFAULT 'auto',
    registration_token TEXT COLLATE "C",
    retired_at TEXT COLLATE "C",
    CONSTRAINT uq_agent_project_name UNIQUE (project_id, name)
);
CREATE INDEX ix_agents_name ON agents (name);
CREATE INDEX ix_agents_project_id ON agents (project_id);
CREATE INDEX ix_agents_registration_token ON agents (registration_token);
CREATE UNIQUE INDEX ux_agents_project_name_nocase ON agents (project_id, name COLLATE nocase);

CREATE TABLE messages (
    id BIGSERIAL PRIMARY KEY,
    project_id BIGINT NOT NULL REFERENCES projects (id),
    sender_id BIGINT NOT NULL REFERENCES agents (id),
    thread_id TEXT COLLATE "C",
    topic TEXT COLLATE "C",
    subject TEXT COLLATE "C" NOT NULL,
    body_md TEXT COLLATE "C" NOT NULL,
    importance TEXT COLLATE "C" NOT NULL DEFAULT 'normal',
    ack_required SMALLINT NOT NULL DEFAULT 0,
    created_ts TEXT COLLATE "C" NOT NULL,
    attachments TEXT COLLATE "C" NOT NULL DEFAULT '[]',
    -- Full-text search (store/db/search.rs): subject words weigh A, body words B (a column
    -- filter is a weight, model/tsquery.rs). Words are the runs of letters and digits, as
    -- FTS5's unicode61 tokenizer splits them (PostgreSQL's parser would keep `-358` or an
    -- e-mail address whole), lower-cased, not stemmed.
    search TSVECTOR GENERATED ALWAYS AS (
        setweight(to_tsvector('simple',
            regexp_replace(subject COLLATE "default", '[^[:alnum:]]+', ' ', 'g')), 'A')
        || setweight(to_tsvector('simple',
            regexp_replace(body_md COLLATE "default", '[^[:alnum:]]+', ' ', 'g')), 'B')
    ) STORED
);
CREATE INDEX idx_messages_thread_id ON messages (thread_id);
CREATE INDEX idx_messages_project_created ON messages (project_id, created_ts);
CREATE INDEX idx_messages_project_sender_created ON messages (project_id, sender_id, created_ts);
CREATE INDEX idx_messages_project_topic ON messages (project_id, topic);
CREATE INDEX idx_messages_created_ts ON messages (created_ts);
CREATE INDEX idx_messages_importance ON messages (importance);
CREATE INDEX idx_messages_sender_created ON messages (sender_id, created_ts DESC);
CREATE INDEX idx_messages_ack_required ON messages (created_ts) WHERE ack_required = 1;
CREATE INDEX idx_messages_search ON messages USING gin (search);

CREATE TABLE message_recipients (
    message_id BIGINT NOT NULL REFERENCES messages (id),
    agent_id BIGINT NOT NULL REFERENCES agents (id),
    kind TEXT COLLATE "C" NOT NULL DEFAULT 'to',
    read_ts TEXT COLLATE "C",
    ack_ts TEXT COLLATE "C",
    -- Insertion order, which SQLite keeps as the table's rowid (recipient lists keep it).
    rowid BIGSERIAL NOT NULL,
    PRIMARY KEY (message_id, agent_id)
);
CREATE INDEX idx_message_recipients_agent_message_kind
    ON message_recipients (agent_id, message_id, kind);
CREATE INDEX idx_message_recipients_unread
    ON message_recipients (agent_id, message_id) WHERE read_ts IS NULL;

CREATE TABLE file_reservations (
    id BIGSERIAL PRIMARY KEY,
    project_id BIGINT NOT NULL REFERENCES projects (id),
    agent_id BIGINT NOT NULL REFERENCES agents (id),
    path_pattern TEXT COLLATE "C" NOT NULL,
    "exclusive" SMALLINT NOT NULL DEFAULT 1,
    reason TEXT COLLATE "C" NOT NULL DEFAULT '',
    created_ts TEXT COLLATE "C" NOT NULL,
    expires_ts TEXT COLLATE "C" NOT NULL,
    released_ts TEXT COLLATE "C"
);
CREATE INDEX idx_file_reservations_project_agent_released
    ON file_reservations (project_id, agent_id, released_ts);
CREATE INDEX idx_file_reservations_expires_ts ON file_reservations (expires_ts);
CREATE INDEX idx_file_reservations_active_cover
    ON file_reservations (project_id, released_ts, expires_ts, agent_id, "exclusive", path_pattern);

CREATE TABLE agent_links (
    id BIGSERIAL PRIMARY KEY,
    a_project_id BIGINT NOT NULL REFERENCES projects (id),
    a_agent_id BIGINT NOT NULL REFERENCES agents (id),
    b_project_id BIGINT NOT NULL REFERENCES projects (id),
    b_agent_id BIGINT NOT NULL REFERENCES agents (id),
    status TEXT COLLATE "C" NOT NULL DEFAULT 'pending',
    reason TEXT COLLATE "C" NOT NULL DEFAULT '',
    created_ts TEXT COLLATE "C" NOT NULL,
    updated_ts TEXT COLLATE "C" NOT NULL,
    expires_ts TEXT COLLATE "C",
    CONSTRAINT uq_agentlink_pair UNIQUE (a_project_id, a_agent_id, b_project_id, b_agent_id)
);
CREATE INDEX idx_agent_links_a_project ON agent_links (a_project_id);
CREATE INDEX idx_agent_links_b_project ON agent_links (b_project_id);
CREATE INDEX idx_agent_links_b_project_agent ON agent_links (b_project_id, b_agent_id);
CREATE INDEX idx_agent_links_status ON agent_links (status);

CREATE TABLE window_identities (
    id BIGSERIAL PRIMARY KEY,
    project_id BIGINT NOT NULL REFERENCES projects (id),
    window_uuid TEXT COLLATE "C" NOT NULL,
    display_name TEXT COLLATE "C" NOT NULL,
    created_ts TEXT COLLATE "C" NOT NULL,
    last_active_ts TEXT COLLATE "C" NOT NULL,
    expires_ts TEXT COLLATE "C",
    UNIQUE (project_id, window_uuid)
);
CREATE INDEX idx_window_identities_project_expires ON window_identities (project_id, expires_ts);
CREATE INDEX idx_window_identities_uuid ON window_identities (window_uuid);

CREATE TABLE message_summaries (
    id BIGSERIAL PRIMARY KEY,
    project_id BIGINT NOT NULL REFERENCES projects (id),
    summary_text TEXT COLLATE "C" NOT NULL,
    start_ts TEXT COLLATE "C" NOT NULL,
    end_ts TEXT COLLATE "C" NOT NULL,
    source_message_count BIGINT NOT NULL DEFAULT 0,
    source_thread_ids TEXT COLLATE "C" NOT NULL DEFAULT '[]',
    llm_model TEXT COLLATE "C",
    cost_usd DOUBLE PRECISION,
    created_ts TEXT COLLATE "C" NOT NULL
);
CREATE INDEX idx_message_summaries_project_end ON message_summaries (project_id, end_ts);

CREATE TABLE project_sibling_suggestions (
    id BIGSERIAL PRIMARY KEY,
    project_a_id BIGINT NOT NULL REFERENCES projects (id),
    project_b_id BIGINT NOT NULL REFERENCES projects (id),
    score DOUBLE PRECISION NOT NULL,
    status TEXT COLLATE "C" NOT NULL DEFAULT 'suggested',
    rationale TEXT COLLATE "C" NOT NULL DEFAULT '',
    created_ts TEXT COLLATE "C" NOT NULL,
    evaluated_ts TEXT COLLATE "C" NOT NULL,
    confirmed_ts TEXT COLLATE "C",
    dismissed_ts TEXT COLLATE "C",
    UNIQUE (project_a_id, project_b_id)
);

CREATE TABLE archive_queue (
    id BIGSERIAL PRIMARY KEY,
    kind TEXT COLLATE "C" NOT NULL,
    ref_id BIGINT NOT NULL,
    enqueued_ts TEXT COLLATE "C" NOT NULL,
    payload TEXT COLLATE "C"
);

CREATE TABLE archive_set_aside (
    id BIGINT PRIMARY KEY,
    kind TEXT COLLATE "C" NOT NULL,
    ref_id BIGINT NOT NULL,
    enqueued_ts TEXT COLLATE "C" NOT NULL,
    payload TEXT COLLATE "C",
    error TEXT COLLATE "C" NOT NULL,
    set_aside_ts TEXT COLLATE "C" NOT NULL
);

CREATE TABLE idempotency_keys (
    project_id BIGINT NOT NULL,
    agent_id BIGINT NOT NULL,
    tool TEXT COLLATE "C" NOT NULL,
    idempotency_key TEXT COLLATE "C" NOT NULL,
    fingerprint TEXT COLLATE "C" NOT NULL,
    result_json TEXT COLLATE "C" NOT NULL,
    created_ts TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (project_id, agent_id, tool, idempotency_key)
);
CREATE INDEX idx_idempotency_keys_created ON idempotency_keys (created_ts);

CREATE TABLE mailbox_events (
    id BIGSERIAL PRIMARY KEY,
    project_id BIGINT NOT NULL,
    agent_id BIGINT NOT NULL,
    kind TEXT COLLATE "C" NOT NULL,
    message_id BIGINT NOT NULL,
    ts TEXT COLLATE "C" NOT NULL
);
CREATE INDEX idx_mailbox_events_agent ON mailbox_events (agent_id, id);

CREATE TABLE mailbox_events_log (
    id BIGINT PRIMARY KEY CHECK (id = 1),
    database_id TEXT COLLATE "C" NOT NULL,
    pruned_through BIGINT NOT NULL DEFAULT 0
);
INSERT INTO mailbox_events_log (id, database_id)
    VALUES (1, substr(md5(gen_random_uuid()::text), 1, 16));

CREATE FUNCTION mailbox_events_delivered() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO mailbox_events (project_id, agent_id, kind, message_id, ts)
        SELECT m.project_id, NEW.agent_id, 'delivered', NEW.message_id, m.created_ts
        FROM messages m WHERE m.id = NEW.message_id;
    RETURN NULL;
END $$;
CREATE TRIGGER mailbox_events_delivered AFTER INSERT ON message_recipients
    FOR EACH ROW EXECUTE FUNCTION mailbox_events_delivered();

CREATE FUNCTION mailbox_events_receipt() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO mailbox_events (project_id, agent_id, kind, message_id, ts)
        SELECT m.project_id, NEW.agent_id, 'read', NEW.message_id, NEW.read_ts
        FROM messages m
        WHERE m.id = NEW.message_id AND OLD.read_ts IS NULL AND NEW.read_ts IS NOT NULL;
    INSERT INTO mailbox_events (project_id, agent_id, kind, message_id, ts)
        SELECT m.project_id, NEW.agent_id, 'acknowledged', NEW.message_id, NEW.ack_ts
        FROM messages m
        WHERE m.id = NEW.message_id AND OLD.ack_ts IS NULL AND NEW.ack_ts IS NOT NULL;
    RETURN NULL;
END $$;
CREATE TRIGGER mailbox_events_receipt AFTER UPDATE OF read_ts, ack_ts ON message_recipients
    FOR EACH ROW
    WHEN ((OLD.read_ts IS NULL AND NEW.read_ts IS NOT NULL)
       OR (OLD.ack_ts IS NULL AND NEW.ack_ts IS NOT NULL))
    EXECUTE FUNCTION mailbox_events_receipt();

CREATE TABLE webhooks (
    id BIGSERIAL PRIMARY KEY,
    project_id BIGINT NOT NULL,
    -- NULL: every recipient in the project; else only this agent's deliveries.
    agent_id BIGINT,
    url TEXT COLLATE "C" NOT NULL,
    -- The Standard Webhooks secret as given out (`whsec_<base64>`); never listed.
    secret TEXT COLLATE "C" NOT NULL,
    created_ts TEXT COLLATE "C" NOT NULL
);
CREATE INDEX idx_webhooks_project ON webhooks (project_id, agent_id);

CREATE TABLE webhook_deliveries (
    id BIGSERIAL PRIMARY KEY,
    event_id TEXT COLLATE "C" NOT NULL UNIQUE,
    webhook_id BIGINT NOT NULL,
    message_id BIGINT NOT NULL,
    agent_id BIGINT NOT NULL,
    kind TEXT COLLATE "C" NOT NULL,
    status TEXT COLLATE "C" NOT NULL DEFAULT 'pending',
    attempts BIGINT NOT NULL DEFAULT 0,
    next_attempt_us BIGINT NOT NULL,
    last_error TEXT COLLATE "C",
    created_us BIGINT NOT NULL,
    finished_us BIGINT
);
CREATE INDEX idx_webhook_deliveries_due ON webhook_deliveries (next_attempt_us)
    WHERE status = 'pending';
CREATE INDEX idx_webhook_deliveries_webhook ON webhook_deliveries (webhook_id, status, id);
CREATE INDEX idx_webhook_deliveries_finished ON webhook_deliveries (finished_us)
    WHERE status <> 'pending';
CREATE INDEX idx_webhook_deliveries_due_per_webhook
    ON webhook_deliveries (webhook_id, next_attempt_us, id)
    WHERE status = 'pending';

CREATE FUNCTION webhook_deliveries_queued() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    now_us BIGINT := (extract(epoch FROM clock_timestamp()) * 1000000)::BIGINT;
BEGIN
    INSERT INTO webhook_deliveries
        (event_id, webhook_id, message_id, agent_id, kind, next_attempt_us, created_us)
        SELECT 'msg_' || substr(replace(gen_random_uuid()::text, '-', ''), 1, 24), w.id,
               NEW.message_id, NEW.agent_id, NEW.kind, now_us, now_us
        FROM messages m
        JOIN webhooks w ON w.project_id = m.project_id
                       AND (w.agent_id = NEW.agent_id
                            OR (w.agent_id IS NULL AND NEW.kind <> 'bcc'))
        WHERE m.id = NEW.message_id;
    RETURN NULL;
END $$;
CREATE TRIGGER webhook_deliveries_queued AFTER INSERT ON message_recipients
    FOR EACH ROW EXECUTE FUNCTION webhook_deliveries_queued();

-- Ids given as NULL are drawn from the table's sequence, as SQLite does.
DO $$
DECLARE
    t TEXT;
BEGIN
    FOREACH t IN ARRAY ARRAY['projects', 'products', 'product_project_links', 'agents',
        'messages', 'file_reservations', 'agent_links', 'window_identities', 'message_summaries',
        'project_sibling_suggestions', 'archive_queue', 'mailbox_events', 'webhooks',
        'webhook_deliveries']
    LOOP
        EXECUTE format('CREATE TRIGGER %I BEFORE INSERT ON %I FOR EACH ROW '
                       'EXECUTE FUNCTION mailroom_fill_id(%L)',
                       t || '_fill_id', t, pg_get_serial_sequence(t, 'id'));
    END LOOP;
END $$;
