-- The upkeep's acknowledgement scan (ACK_TTL_ENABLED) asks, every minute, for the messages
-- that want an acknowledgement and are older than the TTL: only those messages are in this
-- partial index, so the scan costs what asks for acknowledgements, not the whole mailbox.
CREATE INDEX IF NOT EXISTS idx_messages_ack_required
    ON messages (created_ts) WHERE ack_required = 1;
