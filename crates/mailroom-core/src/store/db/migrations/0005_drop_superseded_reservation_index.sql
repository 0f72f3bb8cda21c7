-- 0003's covering index starts with the same (project_id, released_ts, expires_ts) columns as
-- this one, so it serves every query this one did; keeping both only made each reservation
-- insert, renewal, release and expiry sweep maintain two indexes.
DROP INDEX IF EXISTS idx_file_reservations_project_released_expires;
