//! Forwarding a PE's stdout or stderr to `oshrun`'s own, whole lines at a time.
//!
//! Each line is written with one `write` call, so lines of different PEs never mix mid-line
//! (and a line shorter than `PIPE_BUF` stays whole even when several writers share the pipe
//! that `oshrun` writes to). A line that never ends is passed on in pieces once it passes
//! [`MAX_PENDING`], so a PE cannot make `oshrun` hold unbounded memory.

use std::io::Write;

/// Longest partial line held back before it is forwarded in pieces.
pub const MAX_PENDING: usize = 1 << 20;

/// Splits one stream into lines and writes each, optionally tagged, to a sink.
#[derive(Debug)]
pub struct LineForwarder {
    tag: Option<String>,
    pending: Vec<u8>,
    /// The last thing written ended mid-line (a piece of an over-long line).
    mid_line: bool,
    scratch: Vec<u8>,
}

impl LineForwarder {
    /// A forwarder; `tag` (e.g. `"[PE 3] "`) prefixes every line.
    pub fn new(tag: Option<String>) -> Self {
        LineForwarder { tag, pending: Vec::new(), mid_line: false, scratch: Vec::new() }
    }

    /// Forward the complete lines in `data` (with what was pending before) to `out`; keep
    /// the incomplete tail. Write errors (a closed stdout) are ignored: the job goes on.
    pub fn feed(&mut self, data: &[u8], out: &mut impl Write) {
        self.pending.extend_from_slice(data);
        let Some(last_nl) = self.pending.iter().rposition(|&b| b == b'\n') else {
            if self.pending.len() > MAX_PENDING {
                let piece = std::mem::take(&mut self.pending);
                self.emit(&piece, false, out);
            }
            return;
        };
        let rest = self.pending.split_off(last_nl + 1);
        let lines = std::mem::replace(&mut self.pending, rest);
        for line in lines.split_inclusive(|&b| b == b'\n') {
            self.emit(line, true, out);
        }
    }

    /// The stream ended: forward a partial last line, with a newline added so that the
    /// next PE's output starts on a line of its own.
    pub fn finish(&mut self, out: &mut impl Write) {
        if !self.pending.is_empty() {
            let mut piece = std::mem::take(&mut self.pending);
            piece.push(b'\n');
            self.emit(&piece, true, out);
        }
    }

    fn emit(&mut self, piece: &[u8], ends_line: bool, out: &mut impl Write) {
        self.scratch.clear();
        if let (Some(tag), false) = (&self.tag, self.mid_line) {
            self.scratch.extend_from_slice(tag.as_bytes());
        }
        self.scratch.extend_from_slice(piece);
        self.mid_line = !ends_line;
        let _ = out.write_all(&self.scratch);
        let _ = out.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records each write call separately, to check that lines are written whole.
    #[derive(Default)]
    struct Writes(Vec<Vec<u8>>);
    impl Write for Writes {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.push(buf.to_vec());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn strs(w: &Writes) -> Vec<String> {
        w.0.iter().map(|b| String::from_utf8_lossy(b).into_owned()).collect()
    }

    #[test]
    fn whole_lines_tagged() {
        let mut f = LineForwarder::new(Some("[PE 2] ".into()));
        let mut w = Writes::default();
        f.feed(b"one\ntw", &mut w);
        assert_eq!(strs(&w), ["[PE 2] one\n"]);
        f.feed(b"o\n\nthree", &mut w);
        assert_eq!(strs(&w), ["[PE 2] one\n", "[PE 2] two\n", "[PE 2] \n"]);
        f.finish(&mut w);
        assert_eq!(strs(&w).last().unwrap(), "[PE 2] three\n");
        f.finish(&mut w);
        assert_eq!(w.0.len(), 4);
    }

    #[test]
    fn untagged_passthrough() {
        let mut f = LineForwarder::new(None);
        let mut w = Writes::default();
        f.feed(b"a\nb\n", &mut w);
        f.finish(&mut w);
        assert_eq!(strs(&w), ["a\n", "b\n"]);
    }

    #[test]
    fn endless_line_goes_out_in_pieces_tagged_once() {
        let mut f = LineForwarder::new(Some("[PE 0] ".into()));
        let mut w = Writes::default();
        let chunk = vec![b'x'; MAX_PENDING / 2 + 1];
        f.feed(&chunk, &mut w);
        assert!(w.0.is_empty());
        f.feed(&chunk, &mut w);
        assert_eq!(w.0.len(), 1);
        assert!(w.0[0].starts_with(b"[PE 0] xxx"));
        f.feed(b"yy\nnext\n", &mut w);
        assert_eq!(strs(&w)[1..], ["yy\n", "[PE 0] next\n"]);
    }
}
