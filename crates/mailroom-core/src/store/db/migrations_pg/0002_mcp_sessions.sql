-- MCP sessions, so that any of several servers on this database accepts a session another
-- opened (docs/scale-out.md). Only PostgreSQL has it: one SQLite server keeps its sessions in
-- memory.
CREATE TABLE mcp_sessions (
    id TEXT PRIMARY KEY,
    protocol_version TEXT NOT NULL,
    created_ts TEXT COLLATE "C" NOT NULL,
    seen_ts TEXT COLLATE "C" NOT NULL
);
CREATE INDEX ix_mcp_sessions_seen ON mcp_sessions (seen_ts)
