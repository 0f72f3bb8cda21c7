-- The reference's schema (spec/storage.md §1.3-§1.4), kept column-compatible so that a database
-- written by either implementation can be read by the other. Timestamps are naive UTC text
-- 'YYYY-MM-DD HH:MM:SS.ffffff'; booleans are 0/1.

CREATE TABLE projects (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    slug VARCHAR(255) NOT NULL,
    human_key VARCHAR(255) NOT NULL,
    created_at DATETIME NOT NULL,
    archived_at DATETIME
);
CREATE UNIQUE INDEX ix_projects_slug ON projects (slug);
CREATE INDEX ix_projects_human_key ON projects (human_key);

CREATE TABLE products (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    product_uid VARCHAR(64) NOT NULL,
    name VARCHAR(255) NOT NULL,
    created_at DATETIME NOT NULL,
    CONSTRAINT uq_product_uid UNIQUE (product_uid),
    CONSTRAINT uq_product_name UNIQUE (name)
);

CREATE TABLE product_project_links (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    product_id INTEGER NOT NULL REFERENCES products (id),
    project_id INTEGER NOT NULL REFERENCES projects (id),
    created_at DATETIME NOT NULL,
    CONSTRAINT uq_product_project UNIQUE (product_id, project_id)
);

CREATE TABLE agents (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id INTEGER NOT NULL REFERENCES projects (id),
    name VARCHAR(128) NOT NULL,
    program VARCHAR(128) NOT NULL,
    model VARCHAR(128) NOT NULL,
    task_description VARCHAR(2048) NOT NULL DEFAULT '',
    inception_ts DATETIME NOT NULL,
    last_active_ts DATETIME NOT NULL,
    attachments_policy VARCHAR(16) NOT NULL DEFAULT 'auto',
    contact_policy VARCHAR(16) NOT NULL DEFAULT 'auto',
    registration_token VARCHAR(64),
    retired_at DATETIME,
    CONSTRAINT uq_agent_project_name UNIQUE (project_id, name)
);
CREATE INDEX ix_agents_name ON agents (name);
CREATE INDEX ix_agents_project_id ON agents (project_id);
CREATE INDEX ix_agents_registration_token ON agents (registration_token);
-- Names are unique per project case-insensitively; the reference enforces that in code, we let
-- the database enforce it so that concurrent registrations of one name cannot race.
CREATE UNIQUE INDEX ux_agents_project_name_nocase ON agents (project_id, name COLLATE NOCASE);

CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id INTEGER NOT NULL REFERENCES projects (id),
    sender_id INTEGER NOT NULL REFERENCES agents (id),
    thread_id VARCHAR(128),
    topic VARCHAR(64),
    subject VARCHAR(512) NOT NULL,
    body_md TEXT NOT NULL,
    importance VARCHAR(16) NOT NULL DEFAULT 'normal',
    ack_required BOOLEAN NOT NULL DEFAULT 0,
    created_ts DATETIME NOT NULL,
    attachments JSON NOT NULL DEFAULT '[]'
);
CREATE INDEX ix_messages_project_id ON messages (project_id);
CREATE INDEX ix_messages_sender_id ON messages (sender_id);
CREATE INDEX idx_messages_thread_id ON messages (thread_id);
CREATE INDEX idx_messages_project_created ON messages (project_id, created_ts);
CREATE INDEX idx_messages_project_sender_created ON messages (project_id, sender_id, created_ts);
CREATE INDEX idx_messages_project_topic ON messages (project_id, topic);
CREATE INDEX idx_messages_created_ts ON messages (created_ts);
CREATE INDEX idx_messages_importance ON messages (importance);
CREATE INDEX idx_messages_sender_created ON messages (sender_id, created_ts DESC);

CREATE TABLE message_recipients (
    message_id INTEGER NOT NULL REFERENCES messages (id),
    agent_id INTEGER NOT NULL REFERENCES agents (id),
    kind VARCHAR(8) NOT NULL DEFAULT 'to',
    read_ts DATETIME,
    ack_ts DATETIME,
    PRIMARY KEY (message_id, agent_id)
);
CREATE INDEX idx_message_recipients_agent_message ON message_recipients (agent_id, message_id);
CREATE INDEX idx_message_recipients_agent ON message_recipients (agent_id);

CREATE TABLE file_reservations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id INTEGER NOT NULL REFERENCES projects (id),
    agent_id INTEGER NOT NULL REFERENCES agents (id),
    path_pattern VARCHAR(512) NOT NULL,
    "exclusive" BOOLEAN NOT NULL DEFAULT 1,
    reason VARCHAR(512) NOT NULL DEFAULT '',
    created_ts DATETIME NOT NULL,
    expires_ts DATETIME NOT NULL,
    released_ts DATETIME
);
CREATE INDEX idx_file_reservations_project_released_expires
    ON file_reservations (project_id, released_ts, expires_ts);
CREATE INDEX idx_file_reservations_project_agent_released
    ON file_reservations (project_id, agent_id, released_ts);
CREATE INDEX idx_file_reservations_expires_ts ON file_reservations (expires_ts);

CREATE TABLE agent_links (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    a_project_id INTEGER NOT NULL REFERENCES projects (id),
    a_agent_id INTEGER NOT NULL REFERENCES agents (id),
    b_project_id INTEGER NOT NULL REFERENCES projects (id),
    b_agent_id INTEGER NOT NULL REFERENCES agents (id),
    status VARCHAR(16) NOT NULL DEFAULT 'pending',
    reason VARCHAR(512) NOT NULL DEFAULT '',
    created_ts DATETIME NOT NULL,
    updated_ts DATETIME NOT NULL,
    expires_ts DATETIME,
    CONSTRAINT uq_agentlink_pair UNIQUE (a_project_id, a_agent_id, b_project_id, b_agent_id)
);
CREATE INDEX idx_agent_links_a_project ON agent_links (a_project_id);
CREATE INDEX idx_agent_links_b_project ON agent_links (b_project_id);
CREATE INDEX idx_agent_links_b_project_agent ON agent_links (b_project_id, b_agent_id);
CREATE INDEX idx_agent_links_status ON agent_links (status);

CREATE TABLE window_identities (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id INTEGER NOT NULL REFERENCES projects (id),
    window_uuid VARCHAR(64) NOT NULL,
    display_name VARCHAR(128) NOT NULL,
    created_ts DATETIME NOT NULL,
    last_active_ts DATETIME NOT NULL,
    expires_ts DATETIME,
    UNIQUE (project_id, window_uuid)
);
CREATE INDEX idx_window_identities_project_expires ON window_identities (project_id, expires_ts);
CREATE INDEX idx_window_identities_uuid ON window_identities (window_uuid);

CREATE TABLE message_summaries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id INTEGER NOT NULL REFERENCES projects (id),
    summary_text TEXT NOT NULL,
    start_ts DATETIME NOT NULL,
    end_ts DATETIME NOT NULL,
    source_message_count INTEGER NOT NULL DEFAULT 0,
    source_thread_ids TEXT NOT NULL DEFAULT '[]',
    llm_model VARCHAR(128),
    cost_usd FLOAT,
    created_ts DATETIME NOT NULL
);
CREATE INDEX idx_message_summaries_project_end ON message_summaries (project_id, end_ts);

CREATE TABLE project_sibling_suggestions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    project_a_id INTEGER NOT NULL REFERENCES projects (id),
    project_b_id INTEGER NOT NULL REFERENCES projects (id),
    score FLOAT NOT NULL,
    status VARCHAR(16) NOT NULL DEFAULT 'suggested',
    rationale VARCHAR(4096) NOT NULL DEFAULT '',
    created_ts DATETIME NOT NULL,
    evaluated_ts DATETIME NOT NULL,
    confirmed_ts DATETIME,
    dismissed_ts DATETIME,
    UNIQUE (project_a_id, project_b_id)
);

CREATE VIRTUAL TABLE fts_messages USING fts5(message_id UNINDEXED, subject, body);
CREATE TRIGGER fts_messages_ai AFTER INSERT ON messages BEGIN
    INSERT INTO fts_messages (rowid, message_id, subject, body)
    VALUES (new.id, new.id, new.subject, new.body_md);
END;
CREATE TRIGGER fts_messages_ad AFTER DELETE ON messages BEGIN
    DELETE FROM fts_messages WHERE rowid = old.id;
END;
CREATE TRIGGER fts_messages_au AFTER UPDATE ON messages BEGIN
    DELETE FROM fts_messages WHERE rowid = old.id;
    INSERT INTO fts_messages (rowid, message_id, subject, body)
    VALUES (new.id, new.id, new.subject, new.body_md);
END;
