-- Each webhook's due deliveries, soonest first: the worker takes at most its share of each
-- webhook with one short range of this index per webhook, instead of ranking every due row.
CREATE INDEX idx_webhook_deliveries_due_per_webhook
    ON webhook_deliveries (webhook_id, next_attempt_us, id)
    WHERE status = 'pending';
