//! The JSON-RPC answer inside an MCP Streamable HTTP response body.
//!
//! A Streamable HTTP server may answer a POST with plain JSON or with a `text/event-stream`
//! whose events carry JSON-RPC messages (notifications such as progress or log lines first,
//! the response last). The Python reference's FastMCP answers SSE unless it was built with
//! `json_response=True`, so the lab reads both; mailroom always answers plain JSON, which
//! takes the fast path (no copy).

use std::borrow::Cow;

/// The JSON-RPC response in `body`: the body itself when it is JSON, else the data of the
/// first SSE event holding a response (a message with `result` or `error`). `None` when an
/// event stream holds no response.
pub fn json_rpc_payload(body: &[u8]) -> Option<Cow<'_, [u8]>> {
    match body.iter().find(|b| !b.is_ascii_whitespace()) {
        // A JSON value (object or batch array): not an event stream.
        Some(b'{' | b'[') | None => Some(Cow::Borrowed(body)),
        Some(_) => events(body).into_iter().find(|data| crate::verdict::is_response(data)),
    }
}

/// The `data` of each event in an event stream, per the SSE rules: lines end in LF, CRLF or
/// CR; a blank line ends an event; `data:` lines (one optional space after the colon) are
/// joined with LF; comments (`:`) and other fields are ignored; an event without data is
/// not dispatched. The last event counts even without its closing blank line, since the
/// whole body has arrived. An event of one `data:` line borrows it; only joined lines copy.
pub(crate) fn events(body: &[u8]) -> Vec<Cow<'_, [u8]>> {
    let mut events = Vec::new();
    let mut data: Option<Cow<'_, [u8]>> = None;
    for line in lines(body) {
        if line.is_empty() {
            events.extend(data.take());
            continue;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        if field == b"data" {
            data = Some(match data.take() {
                None => Cow::Borrowed(value),
                Some(earlier) => {
                    let mut joined = earlier.into_owned();
                    joined.push(b'\n');
                    joined.extend_from_slice(value);
                    Cow::Owned(joined)
                }
            });
        }
    }
    events.extend(data);
    events
}

/// The length of the complete events at the front of a stream read so far: up to the end of
/// its last blank line (LF LF, CRLF CRLF or CR CR); 0 while no event is complete.
pub(crate) fn complete_events(stream: &[u8]) -> usize {
    let last = |separator: &[u8]| {
        memchr::memmem::rfind(stream, separator).map_or(0, |at| at + separator.len())
    };
    last(b"\n\n").max(last(b"\r\n\r\n")).max(last(b"\r\r"))
}

/// Splits on LF, CRLF or CR.
fn lines(body: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = body;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = rest.iter().position(|&b| b == b'\n' || b == b'\r').unwrap_or(rest.len());
        let line = &rest[..end];
        let skip = match rest.get(end..end + 2) {
            Some(b"\r\n") => 2,
            _ if end < rest.len() => 1,
            _ => 0,
        };
        rest = &rest[end + skip..];
        Some(line)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(body: &str) -> Option<String> {
        json_rpc_payload(body.as_bytes()).map(|p| String::from_utf8_lossy(&p).into_owned())
    }

    #[test]
    fn plain_json_is_returned_as_is() {
        let body = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
        assert!(matches!(json_rpc_payload(body.as_bytes()), Some(Cow::Borrowed(_))));
        assert_eq!(payload(body).as_deref(), Some(body));
        assert_eq!(payload("  [1]").as_deref(), Some("  [1]"));
        assert_eq!(payload("").as_deref(), Some(""));
    }

    #[test]
    fn the_response_event_is_found_after_notifications() {
        // What FastMCP sends for a tools/call that logs first (CRLF, as sse-starlette writes).
        let body = "event: message\r\n\
                    data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\r\n\
                    \r\n\
                    : ping\r\n\
                    event: message\r\n\
                    id: 7\r\n\
                    data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}\r\n\
                    \r\n";
        assert_eq!(
            payload(body).as_deref(),
            Some(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#)
        );
    }

    #[test]
    fn data_lines_join_and_the_last_event_needs_no_blank_line() {
        let body = "event: message\ndata:{\"jsonrpc\":\"2.0\",\ndata: \"id\":1,\"error\":{}}";
        assert_eq!(payload(body).as_deref(), Some("{\"jsonrpc\":\"2.0\",\n\"id\":1,\"error\":{}}"));
        assert_eq!(
            payload("event: message\rdata: {\"id\":1,\"result\":1}\r\r").as_deref(),
            Some("{\"id\":1,\"result\":1}")
        );
    }

    #[test]
    fn complete_events_end_at_the_last_blank_line() {
        assert_eq!(complete_events(b""), 0);
        assert_eq!(complete_events(b": stream open\n"), 0);
        assert_eq!(complete_events(b": stream open\n\ndata: {"), 15);
        assert_eq!(complete_events(b"data: a\r\n\r\ndata: b\r\n\r\n"), 22);
        assert_eq!(complete_events(b"data: a\r\rdata"), 9);
    }

    #[test]
    fn a_stream_without_a_response_has_no_payload() {
        assert_eq!(payload("event: message\ndata: {\"method\":\"ping\"}\n\n"), None);
        assert_eq!(payload(": keep-alive\n\n"), None);
        assert_eq!(payload("event: message\ndata: not json\n\n"), None);
    }
}
