-- An inbox page reads each of its rows' recipient kind beside (agent_id, message_id): with the
-- kind in the index, the page is read from the index alone, without a seek into the table per
-- row. The index it replaces, and (agent_id) alone, are prefixes of it, so it serves every
-- query they did; keeping them only made each delivery maintain two secondary indexes where
-- one does.
CREATE INDEX IF NOT EXISTS idx_message_recipients_agent_message_kind
    ON message_recipients (agent_id, message_id, kind);
DROP INDEX IF EXISTS idx_message_recipients_agent_message;
DROP INDEX IF EXISTS idx_message_recipients_agent;
