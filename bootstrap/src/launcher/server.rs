//! The PMI-1 server's state: the job's key-value space, the barrier, and who has called
//! init, finalize or abort. Pure logic, no I/O: [`job`](super::job) feeds it parsed commands
//! and sends the replies it returns, which keeps the protocol testable without processes.
//!
//! Replies follow MPICH Hydra (`src/pm/hydra/.../pmiserv_pmi_v1.c`): `response_to_init`,
//! `maxes`, `my_kvsname`, `universe_size`, `appnum`, `put_result`, `get_result`,
//! `barrier_out`, `finalize_ack`; `abort` gets no reply. Unlike Hydra, a value longer than
//! `vallen_max` is refused (`rc=-1`) rather than cut silently.

use std::collections::HashMap;

use crate::wire::Command;

/// `kvsname_max` we announce.
pub const KVSNAME_MAX: usize = 256;
/// `keylen_max` we announce (buffer size, NUL included, as MPICH counts it).
pub const KEYLEN_MAX: usize = 64;
/// `vallen_max` we announce (buffer size, NUL included, as MPICH counts it).
pub const VALLEN_MAX: usize = 1024;

/// Something the launcher must act on, beyond sending replies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The PE called `abort`: end the job with `code`.
    Abort {
        /// The exit code it asked for.
        code: i32,
        /// Its message (empty if it sent none).
        message: String,
    },
    /// The PE completed `finalize`.
    Finalized,
    /// The PE broke the protocol (e.g. entered a barrier twice); end the job.
    ProtocolError(String),
}

/// What handling one command produced.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Replies to send, each to a PE (a barrier release answers every PE).
    pub replies: Vec<(usize, Command)>,
    /// An event for the launcher, if any.
    pub event: Option<Event>,
}

#[derive(Debug, Default, Clone)]
struct PeState {
    claimed: bool,
    inited: bool,
    finalized: bool,
    in_barrier: bool,
}

/// State of one job's PMI-1 service.
#[derive(Debug)]
pub struct PmiServer {
    kvsname: String,
    kvs: HashMap<String, String>,
    pes: Vec<PeState>,
    in_barrier: usize,
}

fn rc_err(name: &str, msg: &str) -> Command {
    Command::new(name).arg("rc", -1).arg("msg", msg)
}

impl PmiServer {
    /// A server for `size` PEs with key-value space `kvsname`. The space starts with
    /// `PMI_process_mapping` = `(vector,(0,1,size))`, as Hydra publishes it: oshrun starts
    /// every PE on this one node.
    pub fn new(size: usize, kvsname: impl Into<String>) -> Self {
        let mut kvs = HashMap::new();
        kvs.insert("PMI_process_mapping".to_string(), format!("(vector,(0,1,{size}))"));
        PmiServer { kvsname: kvsname.into(), kvs, pes: vec![PeState::default(); size], in_barrier: 0 }
    }

    /// The key-value space name.
    pub fn kvsname(&self) -> &str {
        &self.kvsname
    }

    /// Number of PEs.
    pub fn size(&self) -> usize {
        self.pes.len()
    }

    /// Whether PE `pe` has sent `init`.
    pub fn is_inited(&self, pe: usize) -> bool {
        self.pes[pe].inited
    }

    /// Whether PE `pe` has completed `finalize`.
    pub fn is_finalized(&self, pe: usize) -> bool {
        self.pes[pe].finalized
    }

    /// The PEs now waiting in a barrier.
    pub fn in_barrier(&self) -> Vec<usize> {
        (0..self.pes.len()).filter(|&i| self.pes[i].in_barrier).collect()
    }

    /// A new TCP connection's first line (`PMI_PORT` form): `cmd=initack pmiid=N`. Returns the
    /// PE it belongs to and the lines to send back, or why the connection must be refused.
    pub fn initack(&mut self, cmd: &Command) -> Result<(usize, Vec<Command>), String> {
        if cmd.name != "initack" {
            return Err(format!("expected cmd=initack as the first line, got {cmd}"));
        }
        let id = cmd.get("pmiid").ok_or("cmd=initack without pmiid=")?;
        let pe: usize = id.parse().map_err(|_| format!("cmd=initack with bad pmiid={id:?}"))?;
        let size = self.pes.len();
        let state = self.pes.get_mut(pe).ok_or(format!("cmd=initack pmiid={pe} is out of range (size {size})"))?;
        if state.claimed {
            return Err(format!("a second connection claims pmiid={pe}"));
        }
        state.claimed = true;
        Ok((
            pe,
            vec![
                Command::new("initack").arg("rc", 0),
                Command::new("set").arg("size", size),
                Command::new("set").arg("rank", pe),
                Command::new("set").arg("debug", 0),
            ],
        ))
    }

    /// Handle one command from PE `pe`.
    pub fn handle(&mut self, pe: usize, cmd: &Command) -> Outcome {
        let mut out = Outcome::default();
        let mut reply = |c: Command| out.replies.push((pe, c));
        match cmd.name.as_str() {
            "init" => {
                if cmd.get("pmi_version") == Some("1") {
                    self.pes[pe].inited = true;
                    reply(Command::new("response_to_init").arg("pmi_version", 1).arg("pmi_subversion", 1).arg("rc", 0));
                } else {
                    reply(rc_err("response_to_init", "oshrun_serves_only_pmi_version_1"));
                }
            }
            "get_maxes" => reply(
                Command::new("maxes")
                    .arg("rc", 0)
                    .arg("kvsname_max", KVSNAME_MAX)
                    .arg("keylen_max", KEYLEN_MAX)
                    .arg("vallen_max", VALLEN_MAX),
            ),
            "get_my_kvsname" => reply(Command::new("my_kvsname").arg("rc", 0).arg("kvsname", &self.kvsname)),
            "get_universe_size" => reply(Command::new("universe_size").arg("rc", 0).arg("size", self.pes.len())),
            "get_appnum" => reply(Command::new("appnum").arg("rc", 0).arg("appnum", 0)),
            "put" => reply(self.put(cmd)),
            "get" => reply(self.get(cmd)),
            "barrier_in" => {
                if self.pes[pe].in_barrier {
                    out.event = Some(Event::ProtocolError("cmd=barrier_in while already in the barrier".into()));
                    return out;
                }
                self.pes[pe].in_barrier = true;
                self.in_barrier += 1;
                if self.in_barrier == self.pes.len() {
                    self.in_barrier = 0;
                    for (i, p) in self.pes.iter_mut().enumerate() {
                        p.in_barrier = false;
                        out.replies.push((i, Command::new("barrier_out").arg("rc", 0)));
                    }
                }
            }
            "finalize" => {
                self.pes[pe].finalized = true;
                reply(Command::new("finalize_ack").arg("rc", 0));
                out.event = Some(Event::Finalized);
            }
            "abort" => {
                let code = cmd.get("exitcode").and_then(|c| c.parse().ok()).unwrap_or(1);
                let message = cmd.get("message").unwrap_or("").to_string();
                out.event = Some(Event::Abort { code, message });
            }
            _ => reply(rc_err("error", "command_not_supported_by_oshrun")),
        }
        out
    }

    fn put(&mut self, cmd: &Command) -> Command {
        let (Some(kvs), Some(key), Some(value)) = (cmd.get("kvsname"), cmd.get("key"), cmd.get("value")) else {
            return rc_err("put_result", "put_needs_kvsname_key_and_value");
        };
        if kvs != self.kvsname {
            return rc_err("put_result", "unknown_kvsname");
        }
        if key.is_empty() || key.len() >= KEYLEN_MAX {
            return rc_err("put_result", "key_too_long");
        }
        if value.len() >= VALLEN_MAX {
            return rc_err("put_result", "value_too_long");
        }
        self.kvs.insert(key.to_string(), value.to_string());
        Command::new("put_result").arg("rc", 0).arg("msg", "success")
    }

    fn get(&self, cmd: &Command) -> Command {
        let (Some(kvs), Some(key)) = (cmd.get("kvsname"), cmd.get("key")) else {
            return rc_err("get_result", "get_needs_kvsname_and_key");
        };
        if kvs != self.kvsname {
            return rc_err("get_result", "unknown_kvsname");
        }
        match self.kvs.get(key) {
            Some(v) => Command::new("get_result").arg("rc", 0).arg("msg", "success").arg("value", v),
            None => rc_err("get_result", &format!("key_{key}_not_found")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(line: &str) -> Command {
        Command::parse(line).unwrap()
    }

    fn only_reply(o: Outcome, pe: usize) -> Command {
        assert_eq!(o.replies.len(), 1, "{o:?}");
        assert_eq!(o.replies[0].0, pe);
        o.replies.into_iter().next().unwrap().1
    }

    #[test]
    fn handshake() {
        let mut s = PmiServer::new(2, "kvs_1");
        let r = only_reply(s.handle(1, &c("cmd=init pmi_version=1 pmi_subversion=1")), 1);
        assert_eq!(r.encode().unwrap(), "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n");
        assert!(s.is_inited(1) && !s.is_inited(0));
        let r = only_reply(s.handle(1, &c("cmd=get_maxes")), 1);
        assert_eq!(r.encode().unwrap(), "cmd=maxes rc=0 kvsname_max=256 keylen_max=64 vallen_max=1024\n");
        let r = only_reply(s.handle(1, &c("cmd=get_my_kvsname")), 1);
        assert_eq!(r.get("kvsname"), Some("kvs_1"));
        assert_eq!(only_reply(s.handle(0, &c("cmd=get_universe_size")), 0).get("size"), Some("2"));
        assert_eq!(only_reply(s.handle(0, &c("cmd=get_appnum")), 0).get("appnum"), Some("0"));
        let r = only_reply(s.handle(0, &c("cmd=get kvsname=kvs_1 key=PMI_process_mapping")), 0);
        assert_eq!(r.get("value"), Some("(vector,(0,1,2))"));
        let r = only_reply(s.handle(0, &c("cmd=init pmi_version=2")), 0);
        assert_eq!(r.get("rc"), Some("-1"));
        let r = only_reply(s.handle(0, &c("cmd=spawn")), 0);
        assert_eq!(r.get("rc"), Some("-1"));
    }

    #[test]
    fn initack() {
        let mut s = PmiServer::new(3, "k");
        let (pe, lines) = s.initack(&c("cmd=initack pmiid=2")).unwrap();
        assert_eq!(pe, 2);
        let wire: String = lines.iter().map(|l| l.encode().unwrap()).collect();
        assert_eq!(wire, "cmd=initack rc=0\ncmd=set size=3\ncmd=set rank=2\ncmd=set debug=0\n");
        assert!(s.initack(&c("cmd=initack pmiid=2")).unwrap_err().contains("second connection"));
        assert!(s.initack(&c("cmd=initack pmiid=3")).unwrap_err().contains("out of range"));
        assert!(s.initack(&c("cmd=initack pmiid=x")).is_err());
        assert!(s.initack(&c("cmd=initack")).is_err());
        assert!(s.initack(&c("cmd=init pmi_version=1")).is_err());
    }

    #[test]
    fn put_get() {
        let mut s = PmiServer::new(2, "k");
        let r = only_reply(s.handle(0, &c("cmd=put kvsname=k key=a value=1")), 0);
        assert_eq!((r.name.as_str(), r.get("rc")), ("put_result", Some("0")));
        let r = only_reply(s.handle(1, &c("cmd=get kvsname=k key=a")), 1);
        assert_eq!((r.name.as_str(), r.get("rc"), r.get("value")), ("get_result", Some("0"), Some("1")));
        let r = only_reply(s.handle(1, &c("cmd=get kvsname=k key=b")), 1);
        assert_eq!((r.get("rc"), r.get("msg")), (Some("-1"), Some("key_b_not_found")));
        for bad in [
            "cmd=put kvsname=other key=a value=1".to_string(),
            "cmd=put kvsname=k value=1".to_string(),
            format!("cmd=put kvsname=k key={} value=1", "k".repeat(64)),
            format!("cmd=put kvsname=k key=a value={}", "v".repeat(1024)),
        ] {
            assert_eq!(only_reply(s.handle(0, &c(&bad)), 0).get("rc"), Some("-1"), "{bad}");
        }
        let ok = format!("cmd=put kvsname=k key={} value={}", "k".repeat(63), "v".repeat(1023));
        assert_eq!(only_reply(s.handle(0, &c(&ok)), 0).get("rc"), Some("0"));
        assert_eq!(only_reply(s.handle(0, &c("cmd=get kvsname=x key=a")), 0).get("rc"), Some("-1"));
    }

    #[test]
    fn barrier_releases_everyone_once_all_enter() {
        let mut s = PmiServer::new(3, "k");
        for round in 0..2 {
            assert!(s.handle(2, &c("cmd=barrier_in")).replies.is_empty(), "round {round}");
            assert!(s.handle(0, &c("cmd=barrier_in")).replies.is_empty());
            assert_eq!(s.in_barrier(), [0, 2]);
            let o = s.handle(1, &c("cmd=barrier_in"));
            let pes: Vec<usize> = o.replies.iter().map(|(p, _)| *p).collect();
            assert_eq!(pes, [0, 1, 2]);
            assert!(o.replies.iter().all(|(_, r)| r.name == "barrier_out"));
            assert!(s.in_barrier().is_empty());
        }
        s.handle(0, &c("cmd=barrier_in"));
        assert!(matches!(s.handle(0, &c("cmd=barrier_in")).event, Some(Event::ProtocolError(_))));
    }

    #[test]
    fn finalize_and_abort() {
        let mut s = PmiServer::new(2, "k");
        let o = s.handle(1, &c("cmd=finalize"));
        assert_eq!(o.event, Some(Event::Finalized));
        assert_eq!(o.replies[0].1.name, "finalize_ack");
        assert!(s.is_finalized(1) && !s.is_finalized(0));
        let o = s.handle(0, &c("cmd=abort exitcode=5 message=it\\ broke"));
        assert!(o.replies.is_empty());
        assert_eq!(o.event, Some(Event::Abort { code: 5, message: "it broke".into() }));
        let o = s.handle(0, &c("cmd=abort"));
        assert_eq!(o.event, Some(Event::Abort { code: 1, message: String::new() }));
    }
}
