//! How webhook deliveries are made and retried (`WEBHOOK_*`, docs/compat/settings.md §5):
//! the request timeout, the exponential backoff between attempts, the bound on attempts,
//! how many requests are in flight, how long finished deliveries are kept, and whether
//! receivers inside the operator's network may be reached.

use std::time::Duration;

/// The delivery settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookConfig {
    /// `WEBHOOK_TIMEOUT_MS` (10000, 100 to 300000): the longest one request may take.
    pub timeout_ms: u64,
    /// `WEBHOOK_RETRY_BASE_MS` (5000, 10 to 86400000): the wait after a first failure; each
    /// further failure doubles it.
    pub retry_base_ms: u64,
    /// `WEBHOOK_RETRY_MAX_MS` (3600000, at least the base): the longest wait between attempts.
    pub retry_max_ms: u64,
    /// `WEBHOOK_MAX_ATTEMPTS` (12, 1 to 1000): attempts before a delivery is recorded failed.
    pub max_attempts: u32,
    /// `WEBHOOK_CONCURRENCY` (8, 1 to 256): requests in flight at once, over all webhooks;
    /// one webhook holds at most a quarter of them (at least one), so a slow receiver leaves
    /// the others room.
    pub concurrency: usize,
    /// `WEBHOOK_RETENTION_DAYS` (7, 1 to 3650): delivered and failed deliveries are kept this
    /// long for the deliveries view; the upkeep's reservation sweep forgets older ones.
    pub retention_days: i64,
    /// `WEBHOOK_ALLOW_PRIVATE` (false): lets `https://` webhooks reach private, loopback,
    /// link-local and unique-local addresses (by literal or by name), for receivers inside
    /// the operator's network.
    pub allow_private: bool,
}

impl Default for WebhookConfig {
    fn default() -> Self {
        Self {
            timeout_ms: 10_000,
            retry_base_ms: 5_000,
            retry_max_ms: 3_600_000,
            max_attempts: 12,
            concurrency: 8,
            retention_days: 7,
            allow_private: false,
        }
    }
}

impl WebhookConfig {
    /// Reads the variables over `self`; a value that does not parse or is out of its range is
    /// an error naming the variable.
    pub fn apply_env(&mut self, lookup: &dyn Fn(&str) -> Option<String>) -> Result<(), String> {
        let number = |name: &str, current: u64, least: u64, most: u64| -> Result<u64, String> {
            let Some(text) = lookup(name) else { return Ok(current) };
            text.trim().parse::<u64>().ok().filter(|v| (least..=most).contains(v)).ok_or_else(
                || format!("{name} must be a whole number from {least} to {most}, got {text:?}"),
            )
        };
        self.timeout_ms = number("WEBHOOK_TIMEOUT_MS", self.timeout_ms, 100, 300_000)?;
        self.retry_base_ms = number("WEBHOOK_RETRY_BASE_MS", self.retry_base_ms, 10, 86_400_000)?;
        self.retry_max_ms =
            number("WEBHOOK_RETRY_MAX_MS", self.retry_max_ms, self.retry_base_ms, 86_400_000)?;
        let attempts = number("WEBHOOK_MAX_ATTEMPTS", u64::from(self.max_attempts), 1, 1000)?;
        self.max_attempts = u32::try_from(attempts).unwrap_or(1000);
        let concurrency = number("WEBHOOK_CONCURRENCY", self.concurrency as u64, 1, 256)?;
        self.concurrency = usize::try_from(concurrency).unwrap_or(1);
        let days = number("WEBHOOK_RETENTION_DAYS", self.retention_days as u64, 1, 3650)?;
        self.retention_days = i64::try_from(days).unwrap_or(3650);
        if let Some(text) = lookup("WEBHOOK_ALLOW_PRIVATE") {
            self.allow_private = crate::env_value::parse_bool("WEBHOOK_ALLOW_PRIVATE", &text)?;
        }
        Ok(())
    }

    /// The wait before the next attempt, after `failures` failed attempts (at least one):
    /// the base, doubled for each failure after the first, at most the maximum.
    pub fn retry_delay(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(63);
        let delay = self.retry_base_ms.saturating_mul(1u64 << doublings);
        Duration::from_millis(delay.min(self.retry_max_ms))
    }

    /// `delay` jittered: between half of it and all of it, `fraction` (in [0, 1)) saying where.
    pub fn jittered(&self, delay: Duration, fraction: f64) -> Duration {
        delay.mul_f64(0.5 + 0.5 * fraction.clamp(0.0, 1.0))
    }

    /// The longest wait between attempts.
    pub fn retry_max(&self) -> Duration {
        Duration::from_millis(self.retry_max_ms)
    }

    /// The requests one webhook may have in flight at once.
    pub fn per_webhook(&self) -> usize {
        self.concurrency.div_ceil(4).max(1)
    }

    /// The request timeout.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_keeps_a_wait_between_half_and_all_of_it() {
        let config = WebhookConfig::default();
        let delay = Duration::from_secs(10);
        assert_eq!(config.jittered(delay, 0.0), Duration::from_secs(5));
        assert_eq!(config.jittered(delay, 0.5), Duration::from_millis(7_500));
        assert!(config.jittered(delay, 0.999_999) <= delay);
        assert_eq!(config.jittered(delay, 7.0), delay, "a fraction out of range is clamped");
    }

    #[test]
    fn backoff_doubles_from_the_base_up_to_the_maximum() {
        let config =
            WebhookConfig { retry_base_ms: 5_000, retry_max_ms: 60_000, ..Default::default() };
        let waits: Vec<u64> = (1..=7).map(|n| config.retry_delay(n).as_secs()).collect();
        assert_eq!(waits, [5, 10, 20, 40, 60, 60, 60]);
        // No overflow however many failures.
        assert_eq!(config.retry_delay(u32::MAX), Duration::from_secs(60));
        assert_eq!(config.retry_delay(0), Duration::from_secs(5));
    }

    #[test]
    fn one_webhook_holds_a_quarter_of_the_requests_in_flight() {
        let with = |concurrency| WebhookConfig { concurrency, ..Default::default() }.per_webhook();
        assert_eq!([with(1), with(4), with(8), with(9), with(256)], [1, 1, 2, 3, 64]);
    }

    #[test]
    fn variables_are_read_and_bad_values_named() {
        let apply = |pairs: &[(&str, &str)]| {
            let mut config = WebhookConfig::default();
            let lookup =
                |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned());
            config.apply_env(&lookup).map(|()| config)
        };
        let config = apply(&[
            ("WEBHOOK_TIMEOUT_MS", "2000"),
            ("WEBHOOK_RETRY_BASE_MS", "50"),
            ("WEBHOOK_RETRY_MAX_MS", "400"),
            ("WEBHOOK_MAX_ATTEMPTS", "3"),
            ("WEBHOOK_CONCURRENCY", "2"),
            ("WEBHOOK_RETENTION_DAYS", "1"),
            ("WEBHOOK_ALLOW_PRIVATE", "true"),
        ])
        .expect("valid");
        let expected = WebhookConfig {
            timeout_ms: 2000,
            retry_base_ms: 50,
            retry_max_ms: 400,
            max_attempts: 3,
            concurrency: 2,
            retention_days: 1,
            allow_private: true,
        };
        assert_eq!(config, expected);
        for (name, value) in [
            ("WEBHOOK_TIMEOUT_MS", "fast"),
            ("WEBHOOK_MAX_ATTEMPTS", "0"),
            ("WEBHOOK_CONCURRENCY", "1000"),
            ("WEBHOOK_RETRY_MAX_MS", "1000"),
            ("WEBHOOK_ALLOW_PRIVATE", "maybe"),
        ] {
            let error = apply(&[(name, value)]).expect_err(name);
            assert!(error.starts_with(name), "{error}");
        }
    }
}
