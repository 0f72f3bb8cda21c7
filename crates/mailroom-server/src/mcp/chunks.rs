//! A response body sent as a few byte chunks, in order, without joining them: a shared
//! precomputed answer goes out beside its per-request head instead of being copied after it.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Bytes;
use http_body::{Body, Frame, SizeHint};

/// The chunks still to send, and their total length (an exact `Content-Length`).
pub struct Chunks {
    rest: std::vec::IntoIter<Bytes>,
    remaining: u64,
}

impl Chunks {
    pub fn new(chunks: Vec<Bytes>) -> Self {
        let remaining = chunks.iter().map(|c| c.len() as u64).sum();
        Self { rest: chunks.into_iter(), remaining }
    }

    /// Joins the chunks (tests read an answer whole).
    #[cfg(test)]
    pub fn concat(self) -> Vec<u8> {
        self.rest.flat_map(|c| c.to_vec()).collect()
    }
}

impl Body for Chunks {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let next = self.rest.find(|c| !c.is_empty());
        if let Some(chunk) = &next {
            self.remaining -= chunk.len() as u64;
        }
        Poll::Ready(next.map(|chunk| Ok(Frame::data(chunk))))
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_keep_their_order_and_length() {
        let parts =
            ["", "{\"a\":", "", "1", "}"].map(|s| Bytes::from_static(s.as_bytes())).to_vec();
        let body = Chunks::new(parts);
        assert_eq!(body.size_hint().exact(), Some(7));
        assert!(!body.is_end_stream());
        assert_eq!(body.concat(), b"{\"a\":1}");
        assert!(Chunks::new(vec![Bytes::new()]).is_end_stream());
    }
}
