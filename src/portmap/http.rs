//! The little HTTP/1.1 a UPnP router speaks: a request's bytes, and an answer parsed from
//! the bytes read so far, with a body delimited by Content-Length, chunks or the end of the
//! connection. Every size is bounded; the driver bounds the time.

use std::net::SocketAddrV4;

/// Longest status line and headers kept.
pub const MAX_HEAD: usize = 8 * 1024;

/// An answer: its status code and body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// 200, 500...
    pub status: u16,
    /// The body, de-chunked.
    pub body: Vec<u8>,
}

/// Why bytes are no answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HttpError {
    /// Not an HTTP status line, or a header or chunk that makes no sense.
    Malformed(&'static str),
    /// More than the limit (the head, or the body).
    TooLong,
    /// The connection ended before the answer did.
    Truncated,
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HttpError::Malformed(what) => write!(f, "a malformed HTTP answer ({what})"),
            HttpError::TooLong => write!(f, "an HTTP answer over the size limit"),
            HttpError::Truncated => write!(f, "an HTTP answer cut short"),
        }
    }
}

/// A GET of `path` on `to`.
pub fn get(to: SocketAddrV4, path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: {to}\r\nConnection: close\r\n\r\n").into_bytes()
}

/// A SOAP POST of `body` to `path` on `to`, for `action` of `service`.
pub fn soap_post(to: SocketAddrV4, path: &str, service: &str, action: &str, body: &str) -> Vec<u8> {
    format!(
        "POST {path} HTTP/1.1\r\nHost: {to}\r\nContent-Type: text/xml; charset=\"utf-8\"\r\n\
         SOAPAction: \"{service}#{action}\"\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Parses the answer in `buf`: `Ok(None)` while more may come (`eof`: nothing more will),
/// an error when it cannot be one or its body passes `max_body`.
pub fn parse(buf: &[u8], eof: bool, max_body: usize) -> Result<Option<Response>, HttpError> {
    let Some(end) = find(buf, b"\r\n\r\n") else {
        if buf.len() > MAX_HEAD {
            return Err(HttpError::TooLong);
        }
        return if eof {
            Err(HttpError::Truncated)
        } else {
            Ok(None)
        };
    };
    if end > MAX_HEAD {
        return Err(HttpError::TooLong);
    }
    let head = std::str::from_utf8(&buf[..end]).map_err(|_| HttpError::Malformed("head"))?;
    let mut lines = head.split("\r\n");
    let status = status_code(lines.next().unwrap_or(""))?;
    let mut length = None;
    let mut chunked = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err(HttpError::Malformed("header"));
        };
        let (name, value) = (name.trim(), value.trim());
        if name.eq_ignore_ascii_case("content-length") {
            let n: usize = value.parse().map_err(|_| HttpError::Malformed("length"))?;
            length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.to_ascii_lowercase().contains("chunked");
        }
    }
    let rest = &buf[end + 4..];
    if chunked {
        return dechunk(rest, eof, max_body).map(|b| b.map(|body| Response { status, body }));
    }
    match length {
        Some(n) if n > max_body => Err(HttpError::TooLong),
        Some(n) if rest.len() >= n => Ok(Some(Response {
            status,
            body: rest[..n].to_vec(),
        })),
        Some(_) if eof => Err(HttpError::Truncated),
        Some(_) => Ok(None),
        None if rest.len() > max_body => Err(HttpError::TooLong),
        None if eof => Ok(Some(Response {
            status,
            body: rest.to_vec(),
        })),
        None => Ok(None),
    }
}

fn status_code(line: &str) -> Result<u16, HttpError> {
    let mut parts = line.split(' ');
    let version = parts.next().unwrap_or("");
    if !version.starts_with("HTTP/1.") {
        return Err(HttpError::Malformed("status line"));
    }
    let code = parts.next().unwrap_or("");
    match code.parse::<u16>() {
        Ok(c) if (100..600).contains(&c) && code.len() == 3 => Ok(c),
        _ => Err(HttpError::Malformed("status code")),
    }
}

/// A chunked body, whole (`None` while more may come).
fn dechunk(mut rest: &[u8], eof: bool, max_body: usize) -> Result<Option<Vec<u8>>, HttpError> {
    let mut body = Vec::new();
    loop {
        let Some(line_end) = find(rest, b"\r\n") else {
            return if rest.len() > 32 {
                Err(HttpError::Malformed("chunk size"))
            } else if eof {
                Err(HttpError::Truncated)
            } else {
                Ok(None)
            };
        };
        let line =
            std::str::from_utf8(&rest[..line_end]).map_err(|_| HttpError::Malformed("chunk"))?;
        let hex = line.split(';').next().unwrap_or("").trim();
        if hex.is_empty() || hex.len() > 8 {
            return Err(HttpError::Malformed("chunk size"));
        }
        let size =
            usize::from_str_radix(hex, 16).map_err(|_| HttpError::Malformed("chunk size"))?;
        if body.len() + size > max_body {
            return Err(HttpError::TooLong);
        }
        let data = &rest[line_end + 2..];
        if size == 0 {
            return Ok(Some(body));
        }
        if data.len() < size + 2 {
            return if eof {
                Err(HttpError::Truncated)
            } else {
                Ok(None)
            };
        }
        body.extend_from_slice(&data[..size]);
        rest = &data[size + 2..];
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_end_by_length_by_chunks_or_by_the_end_of_the_connection() {
        let by_len = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
        assert_eq!(
            parse(by_len, false, 100).unwrap(),
            Some(Response {
                status: 200,
                body: b"hello".to_vec()
            })
        );
        assert_eq!(parse(&by_len[..40], false, 100).unwrap(), None);
        assert_eq!(parse(&by_len[..40], true, 100), Err(HttpError::Truncated));
        assert_eq!(parse(by_len, false, 4), Err(HttpError::TooLong));
        let chunks = b"HTTP/1.1 500 Internal Server Error\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x\r\nde\r\n0\r\n\r\n";
        let r = parse(chunks, false, 100).unwrap().unwrap();
        assert_eq!((r.status, &r.body[..]), (500, &b"abcde"[..]));
        let to_eof = b"HTTP/1.0 200 OK\r\nServer: x\r\n\r\n<xml/>";
        assert_eq!(parse(to_eof, false, 100).unwrap(), None);
        assert_eq!(parse(to_eof, true, 100).unwrap().unwrap().body, b"<xml/>");
        // An endless head or body is cut at its limit.
        let endless = [b"HTTP/1.1 200 OK\r\nX: ".to_vec(), vec![b'a'; MAX_HEAD]].concat();
        assert_eq!(parse(&endless, false, 100), Err(HttpError::TooLong));
        let big_chunk = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffff\r\n";
        assert_eq!(parse(big_chunk, false, 100), Err(HttpError::TooLong));
        assert!(matches!(
            parse(b"SSH-2.0\r\n\r\n", true, 9),
            Err(HttpError::Malformed(_))
        ));
    }
}
