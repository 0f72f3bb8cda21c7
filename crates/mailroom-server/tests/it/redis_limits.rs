//! Rate limits in Redis (`HTTP_RATE_LIMIT_BACKEND=redis`) against a real redis-server: two
//! servers share a client's buckets, the buckets run on Redis's clock and expire, and when
//! Redis goes away each server goes on with its own buckets.

use mailroom_testkit::{InboxCall, RedisServer, TestApp};

use crate::security::{Remote, start};

async fn server(redis: &RedisServer) -> TestApp {
    start(&[
        ("HTTP_RATE_LIMIT_ENABLED", "true"),
        ("HTTP_RATE_LIMIT_BACKEND", "redis"),
        ("HTTP_RATE_LIMIT_REDIS_URL", &redis.url),
        ("HTTP_RATE_LIMIT_TOOLS_PER_MINUTE", "4"),
        ("HTTP_RATE_LIMIT_PER_MINUTE", "1000"),
    ])
    .await
}

#[tokio::test]
async fn two_servers_share_a_clients_buckets() {
    let redis = RedisServer::start();
    let (a, b) = (server(&redis).await, server(&redis).await);
    let call = InboxCall::new("/work/shared", "BlueLake").arguments();
    let on_a = Remote { app: &a, client_ip: "203.0.113.40", token: None };
    let on_b = Remote { app: &b, ..on_a };
    for remote in [&on_a, &on_b, &on_a, &on_b] {
        assert_eq!(remote.tool("fetch_inbox", call.clone()).await.0, 200);
    }
    // Four calls spent the burst of four, across both servers.
    assert_eq!(on_a.tool("fetch_inbox", call.clone()).await.0, 429);
    assert_eq!(on_b.tool("fetch_inbox", call.clone()).await.0, 429);
    let other = Remote { client_ip: "203.0.113.41", ..on_b };
    assert_eq!(other.tool("fetch_inbox", call.clone()).await.0, 200, "another client");

    let client = redis::Client::open(redis.url.as_str()).expect("url");
    let mut connection = client.get_multiplexed_async_connection().await.expect("connect");
    let key = "rl:tools:fetch_inbox:203.0.113.40";
    let (tokens, ts): (f64, f64) = redis::cmd("HMGET")
        .arg(key)
        .arg("tokens")
        .arg("ts")
        .query_async(&mut connection)
        .await
        .expect("bucket");
    let (seconds, micros): (f64, f64) =
        redis::cmd("TIME").query_async(&mut connection).await.expect("time");
    let redis_now = seconds + micros / 1e6;
    assert!(tokens < 1.0, "empty: {tokens}");
    assert!((redis_now - ts).abs() < 5.0, "stamped by Redis's clock: {ts} vs {redis_now}");
    let ttl: i64 = redis::cmd("TTL").arg(key).query_async(&mut connection).await.expect("ttl");
    assert!(ttl > 0 && ttl <= 61, "expires once it would be full again: {ttl}");

    // Redis gone: each server judges by its own buckets, and still answers.
    drop(redis);
    let calm = Remote { client_ip: "203.0.113.42", ..on_a };
    for n in 0..4 {
        assert_eq!(calm.tool("fetch_inbox", call.clone()).await.0, 200, "local bucket, call {n}");
    }
    assert_eq!(calm.tool("fetch_inbox", call.clone()).await.0, 429, "the local bucket holds");
}
