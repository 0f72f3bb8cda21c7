//! The lab's HTTP client: one bare HTTP/1.1 connection per worker, kept alive, with
//! TCP_NODELAY, written by hand on the socket. Each request's bytes (request line, headers and
//! body) are built once per scenario and written with one `write` per send; the answer is parsed in
//! place (httparse) from one reused buffer: no pool, no redirects, no decompression, no
//! channels or tasks between the worker and its socket. The client's own cost then stays
//! close to wrk's, so the figures measure the server.

use std::io;

use bytes::{Buf, Bytes, BytesMut};
use hyper::{Method, StatusCode, Uri};
use tokio::net::TcpStream;

/// One request as written on the wire: built once per scenario, then every send writes the
/// same bytes (cloning shares them).
#[derive(Debug, Clone)]
pub struct Call {
    method: Method,
    wire: Bytes,
}

impl Call {
    /// `GET path` on `authority` (`host:port`, the Host header).
    pub fn get(authority: &str, path: impl AsRef<str>) -> Self {
        Self::new(Method::GET, authority, path.as_ref(), &[], None)
    }

    /// `POST path` on `authority` with a JSON body.
    pub fn post_json(authority: &str, path: impl AsRef<str>, body: &serde_json::Value) -> Self {
        Self::post_json_with(authority, path, &[], body)
    }

    /// `POST path` with a JSON body and more headers (an MCP session's id, say).
    pub fn post_json_with(
        authority: &str,
        path: impl AsRef<str>,
        headers: &[(&str, &str)],
        body: &serde_json::Value,
    ) -> Self {
        let body = body.to_string();
        Self::new(Method::POST, authority, path.as_ref(), headers, Some(body.as_bytes()))
    }

    /// `GET path` asking for a server-sent event stream, with more headers.
    pub fn event_stream(authority: &str, path: impl AsRef<str>, headers: &[(&str, &str)]) -> Self {
        let mut all = vec![("Accept", "text/event-stream")];
        all.extend_from_slice(headers);
        Self::bodiless(Method::GET, authority, path, &all)
    }

    /// `method path` without a body, with more headers (`DELETE` with an MCP session's id,
    /// to end it).
    pub fn bodiless(
        method: Method,
        authority: &str,
        path: impl AsRef<str>,
        headers: &[(&str, &str)],
    ) -> Self {
        Self::new(method, authority, path.as_ref(), headers, None)
    }

    fn new(
        method: Method,
        authority: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Self {
        let uri = origin(path);
        let target = uri.path_and_query().map_or("/", |p| p.as_str());
        let mut wire = format!("{method} {target} HTTP/1.1\r\nHost: {authority}\r\n").into_bytes();
        for (name, value) in headers {
            wire.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
        }
        if let Some(body) = body {
            // MCP's Streamable HTTP transport insists on both; servers answer plain JSON.
            wire.extend_from_slice(
                b"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n",
            );
            wire.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
            wire.extend_from_slice(body);
        } else {
            wire.extend_from_slice(b"\r\n");
        }
        Self { method, wire: Bytes::from(wire) }
    }
}

/// Paths come from a parsed URL and checked flags (`Target`), so they always parse; "/" is
/// only a fallback that keeps this function total.
fn origin(path: &str) -> Uri {
    path.parse().unwrap_or_else(|_| Uri::from_static("/"))
}

/// Whether `path` is a valid origin-form request target (`/...`).
pub(crate) fn is_valid_path(path: &str) -> bool {
    path.starts_with('/') && path.parse::<Uri>().is_ok()
}

/// Why a send failed before a whole answer arrived.
#[derive(Debug)]
pub enum SendError {
    /// The peer had closed the reused idle connection before answering this request, which
    /// it never processed: the caller reconnects and sends it again without counting an error.
    Closed,
    /// The connection broke with the request in flight, or the answer was not HTTP; the
    /// caller should reconnect.
    Broken(io::Error),
}

/// Most headers an answer may carry; more is a broken answer.
const MAX_HEADERS: usize = 64;

/// One keep-alive HTTP/1.1 connection.
pub struct Connection {
    stream: TcpStream,
    /// Bytes read and not yet consumed (reused).
    buffer: BytesMut,
    /// Whether an answer has arrived on this connection: only then can an immediate close be
    /// an idle timeout rather than a refusal of this request.
    reused: bool,
    /// The server said `Connection: close`, or the stream ended.
    closed: bool,
}

/// Where an answer's body ends.
enum Framing {
    Length(usize),
    Chunked,
    /// Until the server closes the connection.
    UntilClose,
}

impl Connection {
    /// Connects to `authority` (`host:port`) with TCP_NODELAY.
    pub async fn open(authority: &str) -> io::Result<Self> {
        let stream = TcpStream::connect(authority).await?;
        stream.set_nodelay(true)?;
        Ok(Self {
            stream,
            buffer: BytesMut::with_capacity(16 * 1024),
            reused: false,
            closed: false,
        })
    }

    /// Sends `call` (built for this connection's authority) and reads the whole answer.
    pub async fn send(&mut self, call: &Call) -> Result<(StatusCode, Bytes), SendError> {
        self.send_with_head(call).await.map(|answer| (answer.status, answer.body))
    }

    /// Sends `call` and reads the whole answer, its head kept for [`Answer::header`].
    pub async fn send_with_head(&mut self, call: &Call) -> Result<Answer, SendError> {
        if self.closed {
            return Err(SendError::Closed);
        }
        if let Err(e) = write_all(&self.stream, &call.wire).await {
            self.closed = true;
            return Err(if self.reused { SendError::Closed } else { SendError::Broken(e) });
        }
        self.buffer.clear();
        match self.read_answer(call.method == Method::HEAD).await {
            Ok(answer) => {
                self.reused = true;
                Ok(answer)
            }
            Err(e) => {
                let nothing_arrived = self.buffer.is_empty();
                self.closed = true;
                if self.reused && nothing_arrived && is_close(&e) {
                    Err(SendError::Closed)
                } else {
                    Err(SendError::Broken(e))
                }
            }
        }
    }

    /// Sends `call`, a GET for an event stream, and returns the stream once its head says 2xx.
    /// The connection then belongs to the stream.
    pub async fn open_event_stream(mut self, call: &Call) -> io::Result<EventStream> {
        write_all(&self.stream, &call.wire).await?;
        self.buffer.clear();
        let (status, head_len, framing, _) = self.read_head().await?;
        if !(200..300).contains(&status) {
            return Err(invalid(&format!("the event stream was refused with HTTP {status}")));
        }
        let _head = self.buffer.split_to(head_len);
        let chunked = matches!(framing, Framing::Chunked);
        Ok(EventStream { connection: self, chunked, ended: false })
    }

    /// Reads until the buffer holds a whole response head; what `parse_head` says of it.
    async fn read_head(&mut self) -> io::Result<(u16, usize, Framing, bool)> {
        loop {
            if let Some(head) = parse_head(&self.buffer)? {
                return Ok(head);
            }
            self.fill().await?;
        }
    }

    async fn read_answer(&mut self, head_only: bool) -> io::Result<Answer> {
        let (status, head_len, framing, keep_alive) = self.read_head().await?;
        let head = self.buffer.split_to(head_len).freeze();
        let bodiless = head_only || status == 204 || status == 304 || (100..200).contains(&status);
        let body = if bodiless {
            Bytes::new()
        } else {
            match framing {
                Framing::Length(length) => {
                    while self.buffer.len() < length {
                        self.fill().await?;
                    }
                    self.buffer.split_to(length).freeze()
                }
                Framing::Chunked => self.read_chunked().await?,
                Framing::UntilClose => {
                    while self.fill_or_end().await? {}
                    self.closed = true;
                    self.buffer.split().freeze()
                }
            }
        };
        if !keep_alive {
            self.closed = true;
        }
        let status = StatusCode::from_u16(status).map_err(|_| invalid("invalid status code"))?;
        Ok(Answer { status, head, body })
    }

    /// Decodes a chunked body (RFC 9112 §7.1), trailers skipped.
    async fn read_chunked(&mut self) -> io::Result<Bytes> {
        let mut body = BytesMut::new();
        while decode_chunks(&mut self.buffer, &mut body)? == Chunks::More {
            self.fill().await?;
        }
        Ok(body.freeze())
    }

    /// Reads more bytes; the stream ending here is an error.
    async fn fill(&mut self) -> io::Result<()> {
        if self.fill_or_end().await? {
            Ok(())
        } else {
            Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed mid-answer"))
        }
    }

    /// Reads more bytes; `false` when the stream has ended.
    async fn fill_or_end(&mut self) -> io::Result<bool> {
        if self.buffer.capacity() - self.buffer.len() < 4096 {
            self.buffer.reserve(16 * 1024);
        }
        loop {
            self.stream.readable().await?;
            match self.stream.try_read_buf(&mut self.buffer) {
                Ok(0) => return Ok(false),
                Ok(_) => return Ok(true),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

/// A whole answer, its head kept.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    /// The status line and headers, as received.
    pub head: Bytes,
    pub body: Bytes,
}

impl Answer {
    /// The value of header `name` (any case), if the answer has it and it is text.
    pub fn header(&self, name: &str) -> Option<String> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut response = httparse::Response::new(&mut headers);
        response.parse(&self.head).ok()?;
        let header = response.headers.iter().find(|h| h.name.eq_ignore_ascii_case(name))?;
        std::str::from_utf8(header.value).ok().map(|v| v.trim().to_string())
    }
}

/// The body of an answer that does not end: a server-sent event stream, read as it comes.
pub struct EventStream {
    connection: Connection,
    chunked: bool,
    ended: bool,
}

impl EventStream {
    /// Waits for more of the body and appends it, decoded, to `out`; `false` once the stream
    /// has ended (the server closed it, or sent its last chunk).
    pub async fn read(&mut self, out: &mut BytesMut) -> io::Result<bool> {
        loop {
            if self.ended {
                return Ok(false);
            }
            let before = out.len();
            if self.chunked {
                let buffer = &mut self.connection.buffer;
                self.ended = decode_chunks(buffer, out)? == Chunks::Ended;
            } else {
                out.extend_from_slice(&self.connection.buffer.split());
            }
            if out.len() > before {
                return Ok(true);
            }
            if !self.ended && !self.connection.fill_or_end().await? {
                self.ended = true;
            }
        }
    }
}

/// Where a chunked body stands after [`decode_chunks`].
#[derive(Debug, PartialEq, Eq)]
enum Chunks {
    /// More chunks are to come (or the one at the front is incomplete).
    More,
    /// The last chunk and its trailers have been read.
    Ended,
}

/// Moves the data of every complete chunk at the front of `raw` into `out` (RFC 9112 §7.1),
/// consuming them; an incomplete chunk is left for more bytes. Trailers are skipped.
fn decode_chunks(raw: &mut BytesMut, out: &mut BytesMut) -> io::Result<Chunks> {
    loop {
        let Some(line_end) = find_crlf(raw) else { return Ok(Chunks::More) };
        let size = chunk_size(&raw[..line_end])?;
        let data = line_end + 2;
        if size == 0 {
            // Trailer lines, then the empty line that ends the message.
            let mut at = data;
            loop {
                let Some(end) = find_crlf(&raw[at..]) else { return Ok(Chunks::More) };
                at += end + 2;
                if end == 0 {
                    raw.advance(at);
                    return Ok(Chunks::Ended);
                }
            }
        }
        if raw.len() < data + size + 2 {
            return Ok(Chunks::More);
        }
        if &raw[data + size..data + size + 2] != b"\r\n" {
            return Err(invalid("chunk without its CRLF"));
        }
        out.extend_from_slice(&raw[data..data + size]);
        raw.advance(data + size + 2);
    }
}

async fn write_all(stream: &TcpStream, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        stream.writable().await?;
        match stream.try_write(bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The status, head length, body framing and keep-alive of a complete answer head, or `None`
/// while the head is still incomplete.
fn parse_head(bytes: &[u8]) -> io::Result<Option<(u16, usize, Framing, bool)>> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let head_len = match response.parse(bytes) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(invalid(&format!("not an HTTP answer: {e}"))),
    };
    let status = response.code.unwrap_or(0);
    let mut framing = Framing::UntilClose;
    let mut keep_alive = response.version == Some(1);
    for header in response.headers.iter() {
        if header.name.eq_ignore_ascii_case("content-length") {
            let length = std::str::from_utf8(header.value)
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok())
                .ok_or_else(|| invalid("invalid Content-Length"))?;
            if !matches!(framing, Framing::Chunked) {
                framing = Framing::Length(length);
            }
        } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
            if header.value.to_ascii_lowercase().ends_with(b"chunked") {
                framing = Framing::Chunked;
            }
        } else if header.name.eq_ignore_ascii_case("connection") {
            let value = header.value.to_ascii_lowercase();
            if value.windows(5).any(|w| w == b"close") {
                keep_alive = false;
            } else if value.windows(10).any(|w| w == b"keep-alive") {
                keep_alive = true;
            }
        }
    }
    Ok(Some((status, head_len, framing, keep_alive)))
}

fn chunk_size(line: &[u8]) -> io::Result<usize> {
    let digits = line.split(|&b| b == b';').next().unwrap_or_default();
    std::str::from_utf8(digits)
        .ok()
        .and_then(|d| usize::from_str_radix(d.trim(), 16).ok())
        .ok_or_else(|| invalid("invalid chunk size"))
}

fn find_crlf(bytes: &[u8]) -> Option<usize> {
    bytes.windows(2).position(|w| w == b"\r\n")
}

fn invalid(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why.to_string())
}

fn is_close(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::UnexpectedEof
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionAborted
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_carry_the_mcp_headers_and_the_body_length() {
        let call = Call::post_json("127.0.0.1:9", "/mcp?x=1", &serde_json::json!({"a": 1}));
        assert_eq!(
            String::from_utf8_lossy(&call.wire),
            "POST /mcp?x=1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: 7\r\n\r\n{\"a\":1}"
        );
        assert_eq!(
            Call::get("h:1", "/health").wire,
            &b"GET /health HTTP/1.1\r\nHost: h:1\r\n\r\n"[..]
        );
    }

    #[test]
    fn heads_give_status_framing_and_keep_alive() {
        let head = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello";
        let (status, len, framing, keep) = parse_head(head).expect("parses").expect("complete");
        assert_eq!((status, len, keep), (200, head.len() - 5, true));
        assert!(matches!(framing, Framing::Length(5)));
        let chunked =
            b"HTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
        let (_, _, framing, keep) = parse_head(chunked).expect("parses").expect("complete");
        assert!(matches!(framing, Framing::Chunked) && !keep);
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Le").expect("partial").is_none());
        assert!(parse_head(b"SSH-2.0-OpenSSH\r\n\r\n").is_err());
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n").is_err());
    }

    #[test]
    fn chunk_sizes_are_hex_with_optional_extensions() {
        assert_eq!(chunk_size(b"1a").expect("hex"), 26);
        assert_eq!(chunk_size(b"0;name=value").expect("extension"), 0);
        assert!(chunk_size(b"zz").is_err());
    }

    #[test]
    fn chunks_decode_as_they_complete_and_a_partial_one_waits() {
        let mut raw = BytesMut::from(&b"5\r\nhello\r\n3\r\nab"[..]);
        let mut out = BytesMut::new();
        assert_eq!(decode_chunks(&mut raw, &mut out).expect("decodes"), Chunks::More);
        assert_eq!((&out[..], &raw[..]), (&b"hello"[..], &b"3\r\nab"[..]));
        raw.extend_from_slice(b"c\r\n0\r\nT: 1\r");
        assert_eq!(decode_chunks(&mut raw, &mut out).expect("decodes"), Chunks::More);
        assert_eq!(&out[..], b"helloabc", "the last chunk waits for its trailers' end");
        raw.extend_from_slice(b"\n\r\n");
        assert_eq!(decode_chunks(&mut raw, &mut out).expect("decodes"), Chunks::Ended);
        assert!(raw.is_empty());
        let mut broken = BytesMut::from(&b"2\r\nabXY"[..]);
        assert!(decode_chunks(&mut broken, &mut out).is_err());
    }

    #[test]
    fn answers_keep_their_headers() {
        let answer = Answer {
            status: StatusCode::OK,
            head: Bytes::from_static(b"HTTP/1.1 200 OK\r\nMcp-Session-Id: abc \r\n\r\n"),
            body: Bytes::new(),
        };
        assert_eq!(answer.header("mcp-session-id").as_deref(), Some("abc"));
        assert_eq!(answer.header("content-type"), None);
    }

    /// A tiny server answering canned bytes, to read them through a real socket.
    async fn serve_once(answers: Vec<&'static [u8]>) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("address").to_string();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.expect("accept");
            let mut scratch = [0_u8; 4096];
            for answer in answers {
                let _ = socket.read(&mut scratch).await;
                // Split the answer to exercise partial reads.
                let (first, rest) = answer.split_at(answer.len() / 2);
                socket.write_all(first).await.expect("write");
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                socket.write_all(rest).await.expect("write");
            }
        });
        address
    }

    #[tokio::test]
    async fn reads_length_and_chunked_answers_then_reports_the_close() {
        let address = serve_once(vec![
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\nT: 1\r\n\r\n",
        ])
        .await;
        let mut connection = Connection::open(&address).await.expect("connect");
        let call = Call::get(&address, "/");
        let (status, body) = connection.send(&call).await.expect("first");
        assert_eq!((status.as_u16(), &body[..]), (200, &b"hello"[..]));
        let (_, body) = connection.send(&call).await.expect("second");
        assert_eq!(&body[..], b"abcde");
        // The server has gone: a reused connection reports Closed, so the engine retries.
        assert!(matches!(connection.send(&call).await, Err(SendError::Closed)));
    }
}
