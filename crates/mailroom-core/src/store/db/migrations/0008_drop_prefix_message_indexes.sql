-- `(project_id)` and `(sender_id)` are the first columns of `(project_id, created_ts)` and
-- `(sender_id, created_ts DESC)`, which serve every lookup they did; each send paid for
-- maintaining them in the single store writer.
DROP INDEX IF EXISTS ix_messages_project_id;
DROP INDEX IF EXISTS ix_messages_sender_id;
