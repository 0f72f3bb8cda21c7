//! Token buckets in memory (`HTTP_RATE_LIMIT_BACKEND=memory`): one per kind of request, tool
//! and client, holding up to its burst, refilled at its rate, starting full; a request takes
//! one token or is refused. Buckets idle for an hour are dropped (looked for at most once a
//! minute), so memory follows the clients of the last hour.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Buckets are spread over this many locks, so clients seldom wait on each other.
const SHARDS: usize = 16;
/// A bucket unused this long is dropped.
const IDLE: Duration = Duration::from_secs(3600);
/// Idle buckets are looked for at most this often (per shard).
const SWEEP_EVERY: Duration = Duration::from_secs(60);
/// Most buckets a shard holds (262,144 in all): past it, buckets unused for a minute go,
/// and if that frees nothing the shard starts afresh (its clients' buckets full again).
const MAX_PER_SHARD: usize = 16_384;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    updated: Instant,
}

/// Buckets by their key's 64-bit hash (seeded per process): no key is copied or hashed twice
/// per request, and two keys meeting in one bucket is a chance of one in 2^64 per pair.
struct Shard {
    buckets: HashMap<u64, Bucket, foldhash::fast::RandomState>,
    swept: Instant,
}

/// The buckets of one process.
pub struct MemoryLimiter {
    shards: Vec<Mutex<Shard>>,
    hasher: foldhash::fast::RandomState,
}

impl Default for MemoryLimiter {
    fn default() -> Self {
        let now = Instant::now();
        Self {
            shards: (0..SHARDS)
                .map(|_| Mutex::new(Shard { buckets: HashMap::default(), swept: now }))
                .collect(),
            hasher: foldhash::fast::RandomState::default(),
        }
    }
}

impl MemoryLimiter {
    /// Takes a token from the bucket `key` (`per_minute` refill, `burst` capacity) at `now`;
    /// whether there was one.
    pub fn take(&self, key: impl Hash, per_minute: f64, burst: f64, now: Instant) -> bool {
        let hash = self.hasher.hash_one(key);
        let shard = &self.shards[hash as usize % SHARDS];
        let mut shard = shard.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if now.saturating_duration_since(shard.swept) >= SWEEP_EVERY {
            shard.buckets.retain(|_, b| now.saturating_duration_since(b.updated) < IDLE);
            shard.swept = now;
        }
        if shard.buckets.len() >= MAX_PER_SHARD && !shard.buckets.contains_key(&hash) {
            shard.buckets.retain(|_, b| now.saturating_duration_since(b.updated) < SWEEP_EVERY);
            if shard.buckets.len() >= MAX_PER_SHARD {
                shard.buckets.clear();
            }
        }
        let per_second = per_minute / 60.0;
        let bucket = shard.buckets.entry(hash).or_insert(Bucket { tokens: burst, updated: now });
        let elapsed = now.saturating_duration_since(bucket.updated).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * per_second).min(burst);
        bucket.updated = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Buckets held (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().expect("shard").buckets.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_starts_full_empties_and_refills_at_its_rate() {
        let limiter = MemoryLimiter::default();
        let start = Instant::now();
        // 60 a minute, a burst of 3: three at once, then one a second.
        assert!((0..3).all(|_| limiter.take("tools:send:a", 60.0, 3.0, start)));
        assert!(!limiter.take("tools:send:a", 60.0, 3.0, start), "empty");
        assert!(limiter.take("tools:send:b", 60.0, 3.0, start), "another client's bucket");
        assert!(!limiter.take("tools:send:a", 60.0, 3.0, start + Duration::from_millis(500)));
        assert!(limiter.take("tools:send:a", 60.0, 3.0, start + Duration::from_millis(1500)));
        // A long pause refills up to the burst, no more.
        let later = start + Duration::from_secs(600);
        assert!((0..3).all(|_| limiter.take("tools:send:a", 60.0, 3.0, later)));
        assert!(!limiter.take("tools:send:a", 60.0, 3.0, later));
    }

    #[test]
    fn a_flood_of_new_clients_is_held_to_the_cap() {
        let limiter = MemoryLimiter::default();
        let now = Instant::now();
        for n in 0..SHARDS * MAX_PER_SHARD * 2 {
            limiter.take(n, 60.0, 60.0, now);
        }
        assert!(limiter.len() <= SHARDS * MAX_PER_SHARD, "{}", limiter.len());
    }

    #[test]
    fn idle_buckets_are_dropped() {
        let limiter = MemoryLimiter::default();
        let start = Instant::now();
        for n in 0..100 {
            limiter.take(format!("other:*:client{n}"), 60.0, 60.0, start);
        }
        assert_eq!(limiter.len(), 100);
        let hour_later = start + IDLE + SWEEP_EVERY;
        // Enough new clients that every shard is used (and swept) with certainty.
        for n in 0..SHARDS * 64 {
            limiter.take(format!("other:*:new{n}"), 60.0, 60.0, hour_later);
        }
        assert_eq!(limiter.len(), SHARDS * 64, "only the new clients' buckets are left");
    }
}
