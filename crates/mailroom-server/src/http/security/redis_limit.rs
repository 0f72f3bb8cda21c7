//! Token buckets in Redis (`HTTP_RATE_LIMIT_BACKEND=redis`): every server using the same Redis
//! shares them, so a client's rate is its rate across all of them.
//!
//! One Lua script takes a token atomically: it reads the bucket (hash `rl:<key>`, fields
//! `tokens` and `ts`), refills it for the time passed by Redis's own clock (`TIME`, the one
//! clock every server shares; the reference feeds each process's monotonic clock, which
//! other processes do not share), takes a token if there is one, and lets the bucket expire
//! once it would be full again. When Redis cannot answer, the request is judged by this
//! process's own buckets, and Redis is left alone for [`PAUSE`] before it is tried again.

use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use super::rate_limit::MemoryLimiter;

/// How long one Redis call may take before the local buckets answer instead.
const TIMEOUT: Duration = Duration::from_millis(500);
/// After a failure, Redis is not tried again for this long.
const PAUSE: Duration = Duration::from_secs(5);

/// KEYS[1] the bucket; ARGV[1] tokens per second, ARGV[2] the burst. Returns 1 when a token
/// was taken. The bucket expires once it would be full again (a day at most, so that a huge
/// burst never makes a number `EXPIRE` refuses). `replicate_commands` makes `TIME` before a write legal on Redis < 5 (a no-op
/// later).
const TAKE: &str = r"
redis.replicate_commands()
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) + tonumber(time[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1]) or burst
local ts = tonumber(state[2]) or now
if now > ts then
  tokens = math.min(burst, tokens + (now - ts) * rate)
end
local taken = 0
if tokens >= 1 then
  tokens = tokens - 1
  taken = 1
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(now))
redis.call('EXPIRE', KEYS[1], math.min(math.ceil(burst / rate) + 1, 86400))
return taken
";

/// The shared buckets, with this process's own as the fallback.
pub struct RedisLimiter {
    connection: ConnectionManager,
    script: redis::Script,
    fallback: MemoryLimiter,
    paused_until: Mutex<Option<Instant>>,
}

impl RedisLimiter {
    /// Connects lazily (the first request connects); `url` was checked at start-up.
    pub fn new(url: &str) -> Result<Self, String> {
        let client = redis::Client::open(url)
            .map_err(|e| format!("HTTP_RATE_LIMIT_REDIS_URL is not a Redis URL: {e}"))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(TIMEOUT))
            .set_response_timeout(Some(TIMEOUT))
            .set_number_of_retries(1);
        let connection = ConnectionManager::new_lazy_with_config(client, config)
            .map_err(|e| format!("HTTP_RATE_LIMIT_REDIS_URL: {e}"))?;
        Ok(Self {
            connection,
            script: redis::Script::new(TAKE),
            fallback: MemoryLimiter::default(),
            paused_until: Mutex::new(None),
        })
    }

    /// Takes a token from bucket `key` (`rl:` is prepended), or from this process's bucket
    /// `local_key` when Redis cannot answer.
    pub async fn take(&self, key: &str, local_key: impl Hash, per_minute: f64, burst: f64) -> bool {
        let now = Instant::now();
        let paused = *self.paused_until.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if paused.is_none_or(|until| now >= until) {
            let mut connection = self.connection.clone();
            let mut invocation = self.script.key(format!("rl:{key}"));
            invocation.arg(per_minute / 60.0).arg(burst);
            let call = invocation.invoke_async::<i64>(&mut connection);
            let outcome = tokio::time::timeout(TIMEOUT, call).await;
            match outcome {
                Ok(Ok(taken)) => return taken == 1,
                Ok(Err(error)) => {
                    tracing::warn!(%error, pause = ?PAUSE, "Redis rate limiter failed; local buckets")
                }
                Err(_) => {
                    tracing::warn!(pause = ?PAUSE, "Redis rate limiter timed out; local buckets")
                }
            }
            *self.paused_until.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
                Some(now + PAUSE);
        }
        self.fallback.take(local_key, per_minute, burst, now)
    }
}
