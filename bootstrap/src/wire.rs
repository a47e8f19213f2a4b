//! The PMI-1 wire format, shared by the client (`pmi1.rs`) and the `oshrun` server.
//!
//! A message is one line: `cmd=NAME key=value key=value\n`. Tokens are separated by spaces;
//! a value runs to the next unescaped space or the end of the line. This follows the "simple
//! PMI" wire protocol of MPICH (`src/pmi/simple/simple_pmi.c` in MPICH 3.x, `src/pmi/src/
//! pmi_wire.c` `parse_v1` in MPICH 4.x): `cmd=` comes first, keys are `[A-Za-z0-9_/-]`, and a
//! backslash escapes the next character of a value (MPICH 4 uses that for the `message` of
//! `cmd=abort`). Values we put in the key-value space are hex, so they never need escaping.
//!
//! This module owns parsing, encoding and the line buffer; it does no I/O, so both a blocking
//! client and a `poll` server can use it. It must never accept a line without bound: a line
//! longer than [`MAX_LINE`] is an error, not an allocation.

use std::fmt;

/// Longest line accepted, without its newline. MPICH's own limit (`PMIU_MAXLINE`) is 1024;
/// ours is larger so that a server with a larger `vallen_max` still works.
pub const MAX_LINE: usize = 64 * 1024;

/// Why a line could not be parsed or encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The line is empty (or only spaces).
    #[error("empty line")]
    Empty,
    /// The line does not start with `cmd=NAME`.
    #[error("line does not start with cmd=NAME")]
    MissingCmd,
    /// A token has no `=` (`key=value` expected).
    #[error("token {0:?} has no '='")]
    NoEquals(String),
    /// A key is empty or has characters outside `[A-Za-z0-9_/-]`.
    #[error("bad key {0:?}")]
    BadKey(String),
    /// A value cannot be encoded (it holds a newline or a NUL).
    #[error("value of key {0:?} holds a newline or NUL")]
    BadValue(String),
    /// A line is longer than [`MAX_LINE`] bytes.
    #[error("line longer than {max} bytes (at least {len})")]
    TooLong {
        /// Bytes seen so far without a newline.
        len: usize,
        /// The limit, [`MAX_LINE`].
        max: usize,
    },
    /// The line is not UTF-8.
    #[error("line is not UTF-8")]
    NotUtf8,
    /// A hex string has an odd length or a non-hex digit.
    #[error("bad hex: {0}")]
    BadHex(String),
    /// A PMI-2 message's 6-character length field is not a decimal number (PMI-2 only).
    #[error("bad PMI-2 length field {0:?}")]
    BadLength(String),
    /// A PMI-2 value holds a `;`, which ends a value on the wire (PMI-2 only).
    #[error("value of key {0:?} holds a ';'")]
    Semicolon(String),
}

/// One PMI-1 message: a command name and its arguments, in wire order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// The value of `cmd=` (e.g. `put`, `barrier_in`).
    pub name: String,
    /// The other `key=value` pairs, in the order they appeared.
    pub args: Vec<(String, String)>,
}

impl Command {
    /// A command with no arguments.
    pub fn new(name: impl Into<String>) -> Self {
        Command { name: name.into(), args: Vec::new() }
    }

    /// Builder: append `key=value`.
    pub fn arg(mut self, key: impl Into<String>, value: impl fmt::Display) -> Self {
        self.args.push((key.into(), value.to_string()));
        self
    }

    /// The value of the first argument named `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.args.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Parse one line (with or without its trailing `\n`).
    pub fn parse(line: &str) -> Result<Command, WireError> {
        let line = line.strip_suffix('\n').unwrap_or(line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.len() > MAX_LINE {
            return Err(WireError::TooLong { len: line.len(), max: MAX_LINE });
        }
        let mut tokens = split_tokens(line);
        let first = tokens.next().ok_or(WireError::Empty)?;
        let name = match first.split_once('=') {
            Some(("cmd", v)) if !v.is_empty() => unescape(v),
            _ => return Err(WireError::MissingCmd),
        };
        let mut args = Vec::new();
        for tok in tokens {
            let (k, v) = tok.split_once('=').ok_or_else(|| WireError::NoEquals(tok.to_string()))?;
            if !valid_key(k) {
                return Err(WireError::BadKey(k.to_string()));
            }
            args.push((k.to_string(), unescape(v)));
        }
        Ok(Command { name, args })
    }

    /// The wire form, newline included. Spaces and backslashes in values are escaped with a
    /// backslash; keys and values are checked.
    pub fn encode(&self) -> Result<String, WireError> {
        let mut out = String::with_capacity(
            8 + self.name.len() + self.args.iter().map(|(k, v)| k.len() + v.len() + 2).sum::<usize>(),
        );
        out.push_str("cmd=");
        if self.name.is_empty() || !valid_key(&self.name) {
            return Err(WireError::BadKey(self.name.clone()));
        }
        out.push_str(&self.name);
        for (k, v) in &self.args {
            if !valid_key(k) {
                return Err(WireError::BadKey(k.clone()));
            }
            if v.contains(['\n', '\r', '\0']) {
                return Err(WireError::BadValue(k.clone()));
            }
            out.push(' ');
            out.push_str(k);
            out.push('=');
            escape_into(v, &mut out);
        }
        if out.len() > MAX_LINE {
            return Err(WireError::TooLong { len: out.len(), max: MAX_LINE });
        }
        out.push('\n');
        Ok(out)
    }
}

impl fmt::Display for Command {
    /// The wire form without the newline, values cut at 80 characters, for messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cmd={}", self.name)?;
        for (k, v) in &self.args {
            if v.len() > 80 {
                let cut = (0..=80).rev().find(|&i| v.is_char_boundary(i)).unwrap_or(0);
                write!(f, " {k}={}...", &v[..cut])?;
            } else {
                write!(f, " {k}={v}")?;
            }
        }
        Ok(())
    }
}

/// Keys as MPICH's parser accepts them.
fn valid_key(k: &str) -> bool {
    !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'/'))
}

/// Split on spaces that are not escaped by a backslash; runs of spaces count as one.
fn split_tokens(line: &str) -> impl Iterator<Item = &str> {
    let bytes = line.as_bytes();
    let mut pos = 0;
    std::iter::from_fn(move || {
        while pos < bytes.len() && bytes[pos] == b' ' {
            pos += 1;
        }
        if pos >= bytes.len() {
            return None;
        }
        let start = pos;
        while pos < bytes.len() && bytes[pos] != b' ' {
            pos += if bytes[pos] == b'\\' && pos + 1 < bytes.len() { 2 } else { 1 };
        }
        // `pos` only stops on an ASCII byte or the end, so this is a char boundary.
        Some(&line[start..pos.min(bytes.len())])
    })
}

fn unescape(v: &str) -> String {
    if !v.contains('\\') {
        return v.to_string();
    }
    let mut out = String::with_capacity(v.len());
    let mut chars = v.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(n) => out.push(n),
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn escape_into(v: &str, out: &mut String) {
    for c in v.chars() {
        if c == ' ' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
}

/// Lowercase hex of `data`.
pub fn hex_encode(data: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(data.len() * 2);
    for &b in data {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

/// Decode hex (either case).
pub fn hex_decode(s: &str) -> Result<Vec<u8>, WireError> {
    if !s.len().is_multiple_of(2) {
        return Err(WireError::BadHex(format!("odd length {}", s.len())));
    }
    fn nibble(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    }
    s.as_bytes()
        .chunks_exact(2)
        .enumerate()
        .map(|(i, p)| match (nibble(p[0]), nibble(p[1])) {
            (Some(h), Some(l)) => Ok(h << 4 | l),
            _ => Err(WireError::BadHex(format!("non-hex digit at offset {}", 2 * i))),
        })
        .collect()
}

/// Accumulates bytes from a stream and hands out complete lines. No I/O of its own: the
/// caller reads into it ([`LineBuf::feed`]) and pops lines ([`LineBuf::pop_line`]).
#[derive(Debug, Default)]
pub struct LineBuf {
    buf: Vec<u8>,
    /// Start of the first unconsumed byte.
    start: usize,
    /// Bytes from `start` that are known to hold no newline.
    scanned: usize,
    /// After an over-long line: drop bytes up to the next newline.
    skipping: bool,
}

impl LineBuf {
    /// An empty buffer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Append bytes read from the stream.
    pub fn feed(&mut self, data: &[u8]) {
        if self.start > 0 && self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        } else if self.start > 4096 && self.start * 2 > self.buf.len() {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(data);
    }

    /// The next complete line, without its newline (and without a `\r` before it).
    /// `Ok(None)` means more bytes are needed; a line over [`MAX_LINE`] bytes or one that is
    /// not UTF-8 is an error (and is dropped, so the buffer stays bounded).
    pub fn pop_line(&mut self) -> Result<Option<String>, WireError> {
        if self.skipping {
            match self.buf[self.start..].iter().position(|&b| b == b'\n') {
                Some(i) => {
                    self.start += i + 1;
                    self.skipping = false;
                }
                None => {
                    self.buf.clear();
                    self.start = 0;
                    return Ok(None);
                }
            }
        }
        let pending = &self.buf[self.start..];
        match pending[self.scanned..].iter().position(|&b| b == b'\n') {
            Some(i) => {
                let end = self.scanned + i;
                let mut line = &pending[..end];
                self.start += end + 1;
                self.scanned = 0;
                if line.last() == Some(&b'\r') {
                    line = &line[..line.len() - 1];
                }
                if line.len() > MAX_LINE {
                    return Err(WireError::TooLong { len: line.len(), max: MAX_LINE });
                }
                std::str::from_utf8(line).map(|s| Some(s.to_string())).map_err(|_| WireError::NotUtf8)
            }
            None => {
                let len = pending.len();
                if len > MAX_LINE {
                    self.buf.clear();
                    self.start = 0;
                    self.scanned = 0;
                    self.skipping = true;
                    return Err(WireError::TooLong { len, max: MAX_LINE });
                }
                self.scanned = len;
                Ok(None)
            }
        }
    }

    /// Bytes received that do not yet form a complete line.
    pub fn pending(&self) -> &[u8] {
        &self.buf[self.start..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_simple() {
        let c = Command::parse("cmd=put kvsname=kvs_1 key=k0 value=abc\n").unwrap();
        assert_eq!(c.name, "put");
        assert_eq!(c.get("kvsname"), Some("kvs_1"));
        assert_eq!(c.get("key"), Some("k0"));
        assert_eq!(c.get("value"), Some("abc"));
        assert_eq!(c.get("nope"), None);
        assert_eq!(c.args.len(), 3);
        assert_eq!(c.args[0].0, "kvsname");
    }

    #[test]
    fn parse_no_args_and_extra_spaces() {
        let c = Command::parse("cmd=barrier_out").unwrap();
        assert_eq!(c, Command::new("barrier_out"));
        let c = Command::parse("cmd=get_result  rc=0   value=x  \r\n").unwrap();
        assert_eq!(c.get("rc"), Some("0"));
        assert_eq!(c.get("value"), Some("x"));
    }

    #[test]
    fn parse_value_with_equals_and_empty_value() {
        let c = Command::parse("cmd=get_result rc=0 value=a=b=c msg=").unwrap();
        assert_eq!(c.get("value"), Some("a=b=c"));
        assert_eq!(c.get("msg"), Some(""));
    }

    #[test]
    fn parse_errors() {
        assert_eq!(Command::parse(""), Err(WireError::Empty));
        assert_eq!(Command::parse("   \n"), Err(WireError::Empty));
        assert_eq!(Command::parse("put key=1"), Err(WireError::MissingCmd));
        assert_eq!(Command::parse("key=1 cmd=put"), Err(WireError::MissingCmd));
        assert_eq!(Command::parse("cmd= key=1"), Err(WireError::MissingCmd));
        assert_eq!(Command::parse("cmd=put key"), Err(WireError::NoEquals("key".into())));
        assert_eq!(Command::parse("cmd=put =v"), Err(WireError::BadKey("".into())));
        assert_eq!(Command::parse("cmd=put k!y=v"), Err(WireError::BadKey("k!y".into())));
        let long = format!("cmd=put value={}", "a".repeat(MAX_LINE));
        assert!(matches!(Command::parse(&long), Err(WireError::TooLong { .. })));
    }

    #[test]
    fn encode_roundtrip_and_escapes() {
        let c = Command::new("abort").arg("exitcode", 5).arg("message", "it broke: a\\b  c");
        let line = c.encode().unwrap();
        assert_eq!(line, "cmd=abort exitcode=5 message=it\\ broke:\\ a\\\\b\\ \\ c\n");
        assert_eq!(Command::parse(&line).unwrap(), c);
        let c = Command::new("put").arg("kvsname", "k").arg("key", "x").arg("value", "");
        assert_eq!(Command::parse(&c.encode().unwrap()).unwrap(), c);
    }

    #[test]
    fn encode_errors() {
        assert_eq!(Command::new("put").arg("k y", 1).encode(), Err(WireError::BadKey("k y".into())));
        assert_eq!(Command::new("").encode(), Err(WireError::BadKey("".into())));
        assert_eq!(Command::new("put").arg("v", "a\nb").encode(), Err(WireError::BadValue("v".into())));
        let big = Command::new("put").arg("value", "a".repeat(MAX_LINE));
        assert!(matches!(big.encode(), Err(WireError::TooLong { .. })));
    }

    #[test]
    fn display_cuts_long_values() {
        let c = Command::new("put").arg("value", "x".repeat(200));
        let s = c.to_string();
        assert!(s.starts_with("cmd=put value=xxx"));
        assert!(s.ends_with("..."));
        assert!(s.len() < 110);
    }

    #[test]
    fn hex_roundtrip() {
        assert_eq!(hex_encode(&[]), "");
        assert_eq!(hex_encode(&[0, 0xab, 0x10, 0xff]), "00ab10ff");
        assert_eq!(hex_decode("00ab10ff").unwrap(), vec![0, 0xab, 0x10, 0xff]);
        assert_eq!(hex_decode("00AB10FF").unwrap(), vec![0, 0xab, 0x10, 0xff]);
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(hex_decode(&hex_encode(&all)).unwrap(), all);
        assert!(hex_decode("abc").is_err());
        assert!(hex_decode("zz").is_err());
        assert!(hex_decode("é0").is_err());
    }

    #[test]
    fn linebuf_splits_and_joins() {
        let mut lb = LineBuf::new();
        lb.feed(b"cmd=a\ncmd=b x=");
        assert_eq!(lb.pop_line().unwrap().as_deref(), Some("cmd=a"));
        assert_eq!(lb.pop_line().unwrap(), None);
        assert_eq!(lb.pending(), b"cmd=b x=");
        lb.feed(b"1\r\n\n");
        assert_eq!(lb.pop_line().unwrap().as_deref(), Some("cmd=b x=1"));
        assert_eq!(lb.pop_line().unwrap().as_deref(), Some(""));
        assert_eq!(lb.pop_line().unwrap(), None);
        assert!(lb.pending().is_empty());
    }

    #[test]
    fn linebuf_bounds_long_lines() {
        let mut lb = LineBuf::new();
        let chunk = vec![b'a'; 16 * 1024];
        for _ in 0..4 {
            lb.feed(&chunk);
            assert_eq!(lb.pop_line().unwrap(), None);
        }
        lb.feed(b"aa");
        assert!(matches!(lb.pop_line(), Err(WireError::TooLong { .. })));
        assert!(lb.pending().is_empty());
        lb.feed(b"tail of the long line\ncmd=ok\n");
        assert_eq!(lb.pop_line().unwrap().as_deref(), Some("cmd=ok"));
        lb.feed(&[0xff, b'\n']);
        assert_eq!(lb.pop_line(), Err(WireError::NotUtf8));
    }

    #[test]
    fn linebuf_many_lines_stays_compact() {
        let mut lb = LineBuf::new();
        for i in 0..10_000 {
            lb.feed(format!("cmd=x i={i}\n").as_bytes());
            assert_eq!(lb.pop_line().unwrap(), Some(format!("cmd=x i={i}")));
        }
        assert!(lb.buf.capacity() < 64 * 1024);
    }
}
