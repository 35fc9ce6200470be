//! In-memory byte pipes: the stand-in for an agent's stdin and stdout when both ends of an ACP
//! connection run in one process (the transport-layer replay), and the bridge from a spawned
//! agent's blocking stdio to the adapter's async byte streams (capture).
//!
//! A pipe is unbounded and ordered; closing (or dropping) the writer is end-of-file for the
//! reader. There are no timers or threads inside.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::channel::mpsc;
use futures::io::{AsyncRead, AsyncWrite};
use futures::stream::Stream;

/// The reading end of a [`pipe`].
#[derive(Debug)]
pub struct PipeReader {
    chunks: mpsc::UnboundedReceiver<Vec<u8>>,
    pending: Vec<u8>,
    offset: usize,
}

/// The writing end of a [`pipe`].
#[derive(Debug, Clone)]
pub struct PipeWriter {
    chunks: mpsc::UnboundedSender<Vec<u8>>,
}

/// A new pipe: bytes written to the writer are read, in order, from the reader.
pub fn pipe() -> (PipeReader, PipeWriter) {
    let (sender, receiver) = mpsc::unbounded();
    (
        PipeReader {
            chunks: receiver,
            pending: Vec::new(),
            offset: 0,
        },
        PipeWriter { chunks: sender },
    )
}

impl PipeWriter {
    /// Writes bytes without waiting (the pipe is unbounded); an error once the reader is gone.
    pub fn send(&self, bytes: &[u8]) -> io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.chunks
            .unbounded_send(bytes.to_vec())
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the pipe's reader is gone"))
    }

    /// Closes the pipe: the reader sees end-of-file after the bytes already written.
    pub fn close(&self) {
        self.chunks.close_channel();
    }
}

impl PipeReader {
    /// Waits for the next chunk of bytes; `None` at end-of-file.
    pub async fn next_chunk(&mut self) -> Option<Vec<u8>> {
        if self.offset < self.pending.len() {
            let rest = self.pending.split_off(self.offset);
            self.pending.clear();
            self.offset = 0;
            return Some(rest);
        }
        futures::StreamExt::next(&mut self.chunks).await
    }
}

impl AsyncRead for PipeReader {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        while this.offset >= this.pending.len() {
            match Pin::new(&mut this.chunks).poll_next(cx) {
                Poll::Ready(Some(chunk)) => {
                    this.pending = chunk;
                    this.offset = 0;
                }
                Poll::Ready(None) => return Poll::Ready(Ok(0)),
                Poll::Pending => return Poll::Pending,
            }
        }
        let available = this.pending.get(this.offset..).unwrap_or_default();
        let count = available.len().min(buf.len());
        if let (Some(target), Some(source)) = (buf.get_mut(..count), available.get(..count)) {
            target.copy_from_slice(source);
        }
        this.offset += count;
        Poll::Ready(Ok(count))
    }
}

impl AsyncWrite for PipeWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Poll::Ready(self.send(buf).map(|()| buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.close();
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use futures::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;

    #[test]
    fn bytes_arrive_in_order_and_close_is_eof() {
        futures::executor::block_on(async {
            let (mut reader, mut writer) = pipe();
            writer.write_all(b"hello ").await.unwrap();
            writer.write_all(b"world").await.unwrap();
            futures::AsyncWriteExt::close(&mut writer).await.unwrap();
            let mut text = String::new();
            reader.read_to_string(&mut text).await.unwrap();
            assert_eq!(text, "hello world");
        });
    }
}
