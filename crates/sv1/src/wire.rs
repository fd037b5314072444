//! Newline-delimited JSON over TCP, with a bound on line length; what a line says is
//! [`sv1_wire`]'s.

use sv1_wire::Message;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};

/// Longest line accepted; a longer one closes the connection (no SV1 message needs more).
pub const MAX_LINE: usize = 16 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("line longer than {MAX_LINE} bytes")]
    TooLong,
    #[error("connection closed")]
    Closed,
    #[error("read failed: {0}")]
    Io(#[from] std::io::Error),
}

/// Reads one line (without its newline) into `line`, never buffering more than
/// [`MAX_LINE`] bytes. Cancel-safe: bytes are consumed only once appended to `line`, so a
/// line cut short by a `select!` is completed by the next call. The caller clears `line`
/// after handling it.
pub async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
) -> Result<(), ReadError> {
    read_raw_line(reader, line).await?;
    line.pop();
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(())
}

/// [`read_line`], keeping the line's bytes exactly as they came, its newline included (a
/// relay passes them on unchanged).
pub async fn read_raw_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
) -> Result<(), ReadError> {
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Err(ReadError::Closed);
        }
        let (take, found) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        if line.len() + take > MAX_LINE + 1 {
            return Err(ReadError::TooLong);
        }
        line.extend_from_slice(&available[..take]);
        reader.consume(take);
        if found {
            return Ok(());
        }
    }
}

/// Writes `message` as its line.
pub async fn write_message<W: AsyncWrite + Unpin>(
    w: &mut W,
    message: &Message,
) -> std::io::Result<()> {
    w.write_all(&message.to_line()).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_split_and_bounded() {
        let data = b"{\"a\":1}\r\n{\"b\":2}\n".to_vec();
        let mut r = tokio::io::BufReader::new(&data[..]);
        let mut line = Vec::new();
        read_line(&mut r, &mut line).await.unwrap();
        assert_eq!(line, b"{\"a\":1}");
        line.clear();
        read_line(&mut r, &mut line).await.unwrap();
        assert_eq!(line, b"{\"b\":2}");
        line.clear();
        assert!(matches!(
            read_line(&mut r, &mut line).await,
            Err(ReadError::Closed)
        ));

        line.clear();
        let long = vec![b'x'; MAX_LINE + 10];
        let mut r = tokio::io::BufReader::new(&long[..]);
        assert!(matches!(
            read_line(&mut r, &mut line).await,
            Err(ReadError::TooLong)
        ));
    }
}
