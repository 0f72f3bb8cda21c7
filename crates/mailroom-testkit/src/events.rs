//! Reading a server-sent event stream (an MCP GET stream, a listen stream) in a test.

use std::time::Duration;

use serde_json::Value;

/// The JSON of the next event's `data:` line on `events`, reading more of the stream into
/// `buffer` as needed (what follows the event stays there for the next call). Fails the test
/// when none arrives within 20 s or the stream ends.
pub async fn next_event_data(events: &mut reqwest::Response, buffer: &mut String) -> Value {
    loop {
        while let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            if let Some(data) = event.lines().find_map(|l| l.strip_prefix("data: ")) {
                return serde_json::from_str(data).expect("the event's data is JSON");
            }
        }
        // Bounded so a missing event fails the test instead of hanging it.
        let chunk = tokio::time::timeout(Duration::from_secs(20), events.chunk())
            .await
            .expect("an event within the bound")
            .expect("a chunk")
            .expect("the stream stays open");
        buffer.push_str(&String::from_utf8_lossy(&chunk));
    }
}
