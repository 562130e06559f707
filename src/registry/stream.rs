//! The blocking readers between a streamed layer and the unpacker: chunks forwarded from the
//! async download, hashed and counted on their way through.

use std::io::{self, Read};

use bytes::Bytes;
use tokio::sync::mpsc;

use super::digest::{Digest, Hasher};

/// Reads the chunks the async side forwards.
pub(super) struct ChannelReader {
    receiver: mpsc::Receiver<io::Result<Bytes>>,
    current: Bytes,
}

impl ChannelReader {
    pub(super) fn new(receiver: mpsc::Receiver<io::Result<Bytes>>) -> Self {
        ChannelReader {
            receiver,
            current: Bytes::new(),
        }
    }
}

impl Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.current.is_empty() {
            match self.receiver.blocking_recv() {
                Some(Ok(chunk)) => self.current = chunk,
                Some(Err(error)) => return Err(error),
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current.split_to(n));
        Ok(n)
    }
}

/// Hashes and counts everything read through it.
pub(super) struct HashingReader<R> {
    inner: R,
    hasher: Hasher,
    count: u64,
}

impl<R: Read> HashingReader<R> {
    pub(super) fn new(inner: R, expected: &Digest) -> Self {
        HashingReader {
            inner,
            hasher: Hasher::new(expected.algorithm()),
            count: 0,
        }
    }

    pub(super) fn finish(self) -> (Digest, u64) {
        (self.hasher.finish(), self.count)
    }
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.count += n as u64;
        Ok(n)
    }
}
