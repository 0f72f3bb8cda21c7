-- An agent's unread mail (`mailroom check-inbox`, which reminder hooks run after every tool
-- call) is counted from this partial index: only unread rows are in it, so the count costs
-- what is unread, not the whole inbox. Marking a message read takes its row out.
CREATE INDEX IF NOT EXISTS idx_message_recipients_unread
    ON message_recipients (agent_id, message_id) WHERE read_ts IS NULL;
