-- Archive work the archive writer could not render (a row it cannot read back): moved here
-- with its error so that the work behind it goes on. `archive verify` lists these rows and
-- the health probes count them; each start moves them back into archive_queue for one more
-- try, so a row repaired since is archived then.
CREATE TABLE IF NOT EXISTS archive_set_aside (
    id INTEGER PRIMARY KEY,
    kind VARCHAR(16) NOT NULL,
    ref_id INTEGER NOT NULL,
    enqueued_ts DATETIME NOT NULL,
    payload TEXT,
    error TEXT NOT NULL,
    set_aside_ts DATETIME NOT NULL
);

-- Times earlier versions stored outside four-digit years (a TTL of 1e12 seconds gave the year
-- 33715), which neither the reference's readers nor the archive's format can hold: moved to
-- the last (or first) instant that can be stored. Only those: a year of five or more digits,
-- or a negative one (`-001-…`), or the year 0; any other text is left as it is.
UPDATE file_reservations SET expires_ts = CASE WHEN expires_ts GLOB '-*' OR expires_ts GLOB '0000-*'
        THEN '0001-01-01 00:00:00.000000' ELSE '9999-12-31 23:59:59.999999' END
    WHERE expires_ts GLOB '[0-9][0-9][0-9][0-9][0-9]*-*' OR expires_ts GLOB '-[0-9]*'
        OR expires_ts GLOB '0000-*';
UPDATE agent_links SET expires_ts = CASE WHEN expires_ts GLOB '-*' OR expires_ts GLOB '0000-*'
        THEN '0001-01-01 00:00:00.000000' ELSE '9999-12-31 23:59:59.999999' END
    WHERE expires_ts GLOB '[0-9][0-9][0-9][0-9][0-9]*-*' OR expires_ts GLOB '-[0-9]*'
        OR expires_ts GLOB '0000-*';
UPDATE window_identities SET expires_ts = CASE WHEN expires_ts GLOB '-*' OR expires_ts GLOB '0000-*'
        THEN '0001-01-01 00:00:00.000000' ELSE '9999-12-31 23:59:59.999999' END
    WHERE expires_ts GLOB '[0-9][0-9][0-9][0-9][0-9]*-*' OR expires_ts GLOB '-[0-9]*'
        OR expires_ts GLOB '0000-*';
UPDATE message_summaries SET start_ts = CASE WHEN start_ts GLOB '-*' OR start_ts GLOB '0000-*'
        THEN '0001-01-01 00:00:00.000000' ELSE '9999-12-31 23:59:59.999999' END
    WHERE start_ts GLOB '[0-9][0-9][0-9][0-9][0-9]*-*' OR start_ts GLOB '-[0-9]*'
        OR start_ts GLOB '0000-*';
