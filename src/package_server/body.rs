//! The response body: byte chunks sent one after the other, their total length announced
//! (`Content-Length`). A list's body is chunks of the kept manifests' texts
//! ([`super::storage::Selection::to_chunks`]), shared with the memo rather than copied into one
//! buffer per request.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};

/// A body of byte chunks.
#[derive(Debug, Default)]
pub struct Body {
    chunks: VecDeque<Bytes>,
    remaining: u64,
}

impl Body {
    /// The body of `chunks`, in order.
    pub fn from_chunks(chunks: Vec<Bytes>) -> Self {
        let remaining = chunks.iter().map(|chunk| chunk.len() as u64).sum();
        Self {
            chunks: chunks
                .into_iter()
                .filter(|chunk| !chunk.is_empty())
                .collect(),
            remaining,
        }
    }
}

impl From<Vec<Bytes>> for Body {
    fn from(chunks: Vec<Bytes>) -> Self {
        Self::from_chunks(chunks)
    }
}

impl From<Vec<u8>> for Body {
    fn from(bytes: Vec<u8>) -> Self {
        Self::from_chunks(vec![Bytes::from(bytes)])
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _context: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        Poll::Ready(this.chunks.pop_front().map(|chunk| {
            this.remaining = this.remaining.saturating_sub(chunk.len() as u64);
            Ok(Frame::data(chunk))
        }))
    }

    fn is_end_stream(&self) -> bool {
        self.chunks.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    #[tokio::test]
    async fn chunks_are_sent_in_order_their_total_length_announced() {
        let body = Body::from(vec![
            Bytes::from_static(b"{\"a\":"),
            Bytes::new(),
            Bytes::from_static(b"1}"),
        ]);
        assert_eq!(http_body::Body::size_hint(&body).exact(), Some(7));
        assert!(!http_body::Body::is_end_stream(&body));
        assert_eq!(body.collect().await.unwrap().to_bytes(), "{\"a\":1}");

        let empty = Body::default();
        assert_eq!(http_body::Body::size_hint(&empty).exact(), Some(0));
        assert!(http_body::Body::is_end_stream(&empty));
    }
}
