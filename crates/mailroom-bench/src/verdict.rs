//! Judging a JSON-RPC answer from its bytes: is it a result, a JSON-RPC error, or a tool's
//! `isError: true` result? Parsing the whole answer (a 44 KB tools/list, a tool result that
//! carries its JSON twice) cost the client as much CPU as the server spent answering, on the
//! same cores; this reads only the envelope's and the result's own members and skips every
//! other value by its brackets and string quotes, without building or unescaping anything.
//! It is not a validator: a value it skips is not checked beyond its brackets and quotes, and
//! a result whose text holds no `"isError"` key (nor any `\u` escape that could spell one) is
//! a success without its members being read at all: one vectorised search over a 44 KB
//! tools/list instead of a walk over its few thousand strings.
//!
//! Answers may come plain (`application/json`) or as a server-sent event stream (the Python
//! reference answers `text/event-stream`): the stream's first event carrying a JSON-RPC
//! response (a `result` or an `error`, not a notification) decides.

use std::borrow::Cow;

use crate::stats::Failure;

/// Judges a 2xx JSON-RPC answer, plain or SSE-framed.
pub fn judge_json_rpc(body: &[u8]) -> Result<(), Failure> {
    let start = skip_ws(body, 0);
    if body.get(start) == Some(&b'{') {
        return judge_message(body).unwrap_or(Err(Failure::BadBody));
    }
    for data in crate::sse::events(body) {
        if let Some(verdict) = judge_message(&data) {
            return verdict;
        }
    }
    Err(Failure::BadBody)
}

/// Whether `data` is a JSON-RPC response (a `result` or an `error`) rather than a
/// notification or request.
pub(crate) fn is_response(data: &[u8]) -> bool {
    judge_message(data).is_some()
}

/// The verdict on one JSON-RPC message; `None` when it is not a response (a notification or
/// request the server sent first) or is malformed where it was read.
fn judge_message(json: &[u8]) -> Option<Result<(), Failure>> {
    // Truncation shows at the end; the members read below show the rest.
    if json.iter().rev().find(|b| !b.is_ascii_whitespace()) != Some(&b'}') {
        return None;
    }
    let mut scan = Scanner { bytes: json, pos: skip_ws(json, 0) };
    scan.expect(b'{')?;
    loop {
        scan.pos = skip_ws(json, scan.pos);
        if scan.peek()? == b'}' {
            return None; // neither a result nor an error
        }
        let key = scan.key()?;
        match key.as_ref() {
            // A response carries exactly one of the two: the first one seen decides.
            b"error" => return Some(Err(Failure::JsonRpcError)),
            b"result" => return Some(scan.result()),
            _ => scan.skip_value()?,
        }
        scan.after_member()?;
    }
}

struct Scanner<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        self.pos = skip_ws(self.bytes, self.pos);
        (self.peek()? == byte).then(|| self.pos += 1)
    }

    /// An object key and its colon; unescaped only when it holds an escape.
    fn key(&mut self) -> Option<Cow<'a, [u8]>> {
        let bytes = self.bytes;
        self.pos = skip_ws(bytes, self.pos);
        let start = self.pos;
        self.skip_string()?;
        let quoted = &bytes[start..self.pos];
        self.expect(b':')?;
        let raw = &quoted[1..quoted.len() - 1];
        if !raw.contains(&b'\\') {
            return Some(Cow::Borrowed(raw));
        }
        let text: String = serde_json::from_slice(quoted).ok()?;
        Some(Cow::Owned(text.into_bytes()))
    }

    /// After a member's value: a comma (another member follows) or the closing brace, left
    /// for the caller's loop to see.
    fn after_member(&mut self) -> Option<()> {
        self.pos = skip_ws(self.bytes, self.pos);
        match self.peek()? {
            b',' => {
                self.pos += 1;
                Some(())
            }
            b'}' => Some(()),
            _ => None,
        }
    }

    /// The `result` member's value: a tool error when it is an object whose own `isError`
    /// is true; otherwise a success.
    fn result(&mut self) -> Result<(), Failure> {
        self.pos = skip_ws(self.bytes, self.pos);
        if self.peek() != Some(b'{') {
            return self.skip_value().map_or(Err(Failure::BadBody), |()| Ok(()));
        }
        if !may_name_is_error(&self.bytes[self.pos..]) {
            return Ok(());
        }
        self.pos += 1;
        loop {
            self.pos = skip_ws(self.bytes, self.pos);
            match self.peek() {
                Some(b'}') => return Ok(()),
                Some(_) => {}
                None => return Err(Failure::BadBody),
            }
            let Some(key) = self.key() else { return Err(Failure::BadBody) };
            if key.as_ref() == b"isError" {
                self.pos = skip_ws(self.bytes, self.pos);
                return if self.bytes[self.pos..].starts_with(b"true") {
                    Err(Failure::ToolError)
                } else {
                    Ok(())
                };
            }
            if self.skip_value().and_then(|()| self.after_member()).is_none() {
                return Err(Failure::BadBody);
            }
        }
    }

    /// Skips one JSON value of any kind.
    fn skip_value(&mut self) -> Option<()> {
        self.pos = skip_ws(self.bytes, self.pos);
        match self.peek()? {
            b'"' => self.skip_string(),
            b'{' | b'[' => self.skip_nested(),
            _ => {
                // A number or a literal: up to the next delimiter.
                let rest = &self.bytes[self.pos..];
                let len = rest
                    .iter()
                    .position(|b| matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace())
                    .unwrap_or(rest.len());
                (len > 0).then(|| self.pos += len)
            }
        }
    }

    /// Skips an object or array by counting brackets outside strings.
    fn skip_nested(&mut self) -> Option<()> {
        let mut depth = 0usize;
        while let Some(byte) = self.peek() {
            match byte {
                b'"' => {
                    self.skip_string()?;
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        self.pos += 1;
                        return Some(());
                    }
                }
                _ => {}
            }
            self.pos += 1;
        }
        None
    }

    /// Skips a string, the cursor on its opening quote.
    fn skip_string(&mut self) -> Option<()> {
        if self.peek()? != b'"' {
            return None;
        }
        let mut at = self.pos + 1;
        loop {
            at = find_quote_or_backslash(self.bytes, at)?;
            if self.bytes[at] == b'"' {
                self.pos = at + 1;
                return Some(());
            }
            at += 2; // an escape: the backslash and the byte it escapes
        }
    }
}

/// Whether `json` could hold a key that reads `isError`: written plainly, or with a `\u`
/// escape somewhere (rare in answers, and then the members are read one by one).
fn may_name_is_error(json: &[u8]) -> bool {
    memchr::memmem::find(json, br#""isError""#).is_some()
        || memchr::memmem::find(json, br"\u").is_some()
}

fn skip_ws(bytes: &[u8], mut pos: usize) -> usize {
    while bytes.get(pos).is_some_and(u8::is_ascii_whitespace) {
        pos += 1;
    }
    pos
}

/// The first `"` or `\` at or after `from`, eight bytes at a time (strings are most of an
/// answer's bytes).
fn find_quote_or_backslash(bytes: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    const QUOTES: u64 = ONES * b'"' as u64;
    const BACKSLASHES: u64 = ONES * b'\\' as u64;
    let zero_byte = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    let mut at = from;
    while at + 8 <= bytes.len() {
        let mut chunk = [0u8; 8];
        chunk.copy_from_slice(&bytes[at..at + 8]);
        let word = u64::from_le_bytes(chunk);
        // The lowest flagged byte is exact (borrows only flag bytes above a real match).
        let found = zero_byte(word ^ QUOTES) | zero_byte(word ^ BACKSLASHES);
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    let tail = bytes.get(at..)?;
    tail.iter().position(|b| *b == b'"' || *b == b'\\').map(|i| at + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judge(body: &str) -> Result<(), Failure> {
        judge_json_rpc(body.as_bytes())
    }

    #[test]
    fn results_errors_and_tool_errors() {
        assert_eq!(judge(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#), Ok(()));
        assert_eq!(judge(r#"{"id":1,"jsonrpc":"2.0","result":{}}"#), Ok(()));
        assert_eq!(
            judge(r#"{"id":1,"jsonrpc":"2.0","result":{"content":[],"isError":false}}"#),
            Ok(())
        );
        assert_eq!(
            judge(
                r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}],"isError":true}}"#
            ),
            Err(Failure::ToolError)
        );
        assert_eq!(
            judge(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}"#),
            Err(Failure::JsonRpcError)
        );
        assert_eq!(
            judge(" {\n \"result\" : {\n \"isError\" :  true } ,\"id\":1}\n"),
            Err(Failure::ToolError)
        );
    }

    #[test]
    fn only_the_results_own_is_error_counts() {
        // Nested members, strings and escaped quotes that look like the key do not count.
        let nested = r#"{"id":1,"result":{"structuredContent":{"isError":true},
            "content":[{"text":"{\"isError\":true}","isError":true}],
            "note":"\"isError\":true \\","isError":false}}"#;
        assert_eq!(judge(nested), Ok(()));
        let tools = r#"{"id":1,"result":{"tools":[{"name":"x","inputSchema":{"isError":true}}]}}"#;
        assert_eq!(judge(tools), Ok(()));
        // An escaped key is read as its text.
        assert_eq!(judge(r#"{"id":1,"result":{"is\u0045rror":true}}"#), Err(Failure::ToolError));
        assert_eq!(judge(r#"{"id":1,"\u0065rror":{"code":1}}"#), Err(Failure::JsonRpcError));
    }

    #[test]
    fn malformed_answers_are_bad_bodies() {
        for body in [
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"text":"cut"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"tools" [], "isError":false}}"#,
            "",
            "not json",
            "[1]",
            "event: message\ndata: {}",
        ] {
            assert_eq!(judge(body), Err(Failure::BadBody), "{body}");
        }
    }

    #[test]
    fn a_result_without_is_error_text_is_not_read() {
        // Nothing in it could be a tool error, so its members are not walked: the flaw inside
        // goes unseen, as it would by a status-only load tool.
        assert_eq!(judge(r#"{"jsonrpc":"2.0","id":1,"result":{"tools" []}}"#), Ok(()));
        // The error member of the envelope is still read, and a \u escape means a full read.
        assert_eq!(judge(r#"{"id":1,"error":{"code":1}}"#), Err(Failure::JsonRpcError));
        assert_eq!(
            judge(r#"{"id":1,"result":{"x" 1,"is\u0045rror":true}}"#),
            Err(Failure::BadBody)
        );
    }

    #[test]
    fn sse_framed_answers() {
        assert_eq!(
            judge("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"),
            Ok(())
        );
        assert_eq!(
            judge("event: message\r\ndata:{\"id\":1,\"result\":{\"isError\":true}}\r\n\r\n"),
            Err(Failure::ToolError)
        );
        // A notification first, then the response; data split over two lines; no final
        // blank line.
        let stream = ": ping\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n\
            id: 7\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\ndata: \"error\":{\"code\":-1}}";
        assert_eq!(judge(stream), Err(Failure::JsonRpcError));
        assert_eq!(judge("event: message\ndata: {\"method\":\"x\"}\n\n"), Err(Failure::BadBody));
    }

    #[test]
    fn the_word_search_finds_the_first_quote_or_backslash() {
        let text = br#"abcdefghijklmnop\qrstuvwxyz"0123456789"#;
        for from in 0..text.len() {
            let expected = text[from..].iter().position(|b| *b == b'"' || *b == b'\\');
            assert_eq!(find_quote_or_backslash(text, from), expected.map(|i| from + i), "{from}");
        }
        assert_eq!(find_quote_or_backslash(b"\x80\xa2\xdc\xff\x22", 0), Some(4));
        assert_eq!(find_quote_or_backslash(b"", 0), None);
    }

    /// The verdict agrees with a full parse on a large answer, and is read without building it.
    #[test]
    fn a_large_tools_list_is_judged_like_a_full_parse() {
        let tool = serde_json::json!({"name": "t", "description": "d \"q\" \\ ".repeat(80),
            "inputSchema": {"type": "object", "properties": {"isError": {"type": "boolean"}}}});
        let tools: Vec<_> = (0..60).map(|_| tool.clone()).collect();
        let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}});
        let text = body.to_string();
        assert!(text.len() > 40_000);
        assert_eq!(judge(&text), Ok(()));
        let failed = serde_json::json!({"jsonrpc": "2.0", "id": 1,
            "result": {"content": [{"type": "text", "text": text}], "isError": true}});
        assert_eq!(judge(&failed.to_string()), Err(Failure::ToolError));
    }
}
