-- Covers the conflict check of file_reservation_paths: the reservations in force in a project
-- (released_ts IS NULL, expires_ts > now) with the holder, the pattern and whether it is
-- exclusive, read from the index alone. Without it each of a busy project's active rows cost
-- a table lookup on every request. It extends (project_id, released_ts, expires_ts), so the
-- planner prefers it wherever that index served.
CREATE INDEX IF NOT EXISTS idx_file_reservations_active_cover
    ON file_reservations (project_id, released_ts, expires_ts, agent_id, "exclusive", path_pattern);
