//! `oshrun`'s command line, parsed by hand (no argument-parsing crate: compile time matters).
//!
//! Options come before the program; the first word that is not an option (or the word after
//! `--`) is the program, and everything after it belongs to the program. The spellings follow
//! the launchers users already know: `-n`/`-np` (Hydra, Open MPI), `-x VAR` (Open MPI),
//! `-l`/`--tag-output` (Hydra's `-l`, Open MPI's `--tag-output`).

use std::ffi::{OsStr, OsString};
use std::time::Duration;

use super::bind::BindTo;

/// The usage text printed by `--help`.
pub const USAGE: &str = "\
Usage: oshrun -n N [options] [--] PROGRAM [ARGS...]

Start N copies of PROGRAM as one OpenSHMEM job and serve their PMI-1 connections.

Options:
  -n, -np, --np N       number of PEs to start (required, 1 to 1048576, and fewer than
                        the user's process limit, ulimit -u)
  --timeout SECONDS     kill the job after SECONDS (exit status 124); also OSHRUN_TIMEOUT.
                        0 means no limit
  -l, --tag-output      prefix each output line with [PE n]
  --pmi-port            serve PMI over TCP on 127.0.0.1 (PMI_PORT/PMI_ID) instead of an
                        inherited socket (PMI_FD); a connection must present the job's
                        random token (OXSHMEM_PMI_TOKEN, set in each PE) or is refused
  -x VAR[=VALUE]        export VAR (with VALUE, or oshrun's own value) to every PE
  --bind-to WHAT        none, core or socket: bind PE i to the i-th core (or its socket)
                        of the CPUs oshrun may use (its own affinity: taskset, a Slurm or
                        cgroup cpuset). Default: core when the PEs fit on those cores,
                        none when there are more PEs than cores
  --report-bindings     print each PE's CPUs to stderr before it starts
  -h, --help            print this help
  -V, --version         print the version

Hang report: on --timeout (before the PEs are killed), and whenever oshrun gets SIGQUIT
(Ctrl-\\, kill -QUIT; the job then goes on), oshrun prints where each PE is: the routine,
team and collective number it waits in and for how long, or that it runs, is stopped
(SIGSTOP) or has exited. The PEs write it into a table oshrun passes them
(OXSHMEM_STATUS_FD).

Exit status: 0 when every PE exits 0; else the status of the first PE that failed (128+N
for a signal), 124 on timeout, 130/143 when oshrun is interrupted, 2 for usage errors
and when a PE cannot be started (the PEs already started are then ended).

oshrun starts all N PEs on this one host. To run a job across several hosts, start it with
a PMI launcher instead; the PEs find each other through PMI-1 or PMI-2, detected from the
environment, and PEs on different hosts talk through the network transport (a runtime built
with feature `ofi`):
  MPICH's Hydra:  mpiexec.hydra -n 8 -hosts a,b PROGRAM [ARGS...]
  Slurm:          srun --mpi=pmi2 -n 8 PROGRAM [ARGS...]
";

/// The most PEs `oshrun` starts (`-n`): 2^20, more processes than a Linux host runs at once
/// (`kernel.pid_max` is at most 2^22, and each PE costs the launcher descriptors too).
pub const MAX_NPES: usize = 1 << 20;

/// Every long option `oshrun` knows, for suggestions after a misspelling.
const LONG_OPTIONS: &[&str] =
    &["--np", "--timeout", "--tag-output", "--pmi-port", "--bind-to", "--report-bindings", "--help", "--version"];

/// What to run, as given on the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Number of PEs (at least 1).
    pub npes: usize,
    /// The program, as given (looked up in `PATH` when it has no `/`).
    pub program: OsString,
    /// The program's arguments.
    pub args: Vec<OsString>,
    /// Kill the job after this long, if set.
    pub timeout: Option<Timeout>,
    /// Prefix output lines with `[PE n] `.
    pub tag_output: bool,
    /// Serve PMI over TCP (`PMI_PORT`/`PMI_ID`) instead of an inherited socket (`PMI_FD`).
    pub pmi_port: bool,
    /// Variables to set in every PE: `(name, value)`.
    pub exports: Vec<(OsString, OsString)>,
    /// `--bind-to`, when given (else the default of [`crate::launcher::bind::effective`]).
    pub bind_to: Option<BindTo>,
    /// Print each PE's binding.
    pub report_bindings: bool,
}

/// A job time limit, kept with its spelling for messages.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeout {
    /// The limit.
    pub duration: Duration,
    /// The number of seconds as the user wrote it (`"1"`, `"0.5"`).
    pub text: String,
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Run a job.
    Run(Options),
    /// Print [`USAGE`] and exit 0.
    Help,
    /// Print the version and exit 0.
    Version,
}

/// A usage error: print it with a hint and exit 2.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ArgsError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, ArgsError> {
    Err(ArgsError(msg.into()))
}

fn parse_npes(v: &OsStr) -> Result<usize, ArgsError> {
    let s = v.to_str().unwrap_or("").trim();
    let too_many = || err(format!("-n {s}: too many PEs; oshrun starts at most {MAX_NPES}"));
    match s.parse::<usize>() {
        Ok(0) => err("the number of PEs (-n) must be at least 1"),
        Ok(n) if n > MAX_NPES => too_many(),
        Ok(n) => Ok(n),
        // All digits, yet no usize: far too many.
        Err(_) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => too_many(),
        Err(_) => err(format!("-n needs a positive number of PEs, not {v:?}")),
    }
}

/// `npes` PEs and `oshrun` itself must fit under the user's process limit `limit`
/// (`RLIMIT_NPROC`, `ulimit -u`; `None` when it does not apply): more can never start.
pub fn check_process_limit(npes: usize, limit: Option<u64>) -> Result<(), ArgsError> {
    match limit {
        Some(limit) if npes as u64 >= limit => {
            err(format!("-n {npes}: more processes than this user may run (ulimit -u, RLIMIT_NPROC, is {limit})"))
        }
        _ => Ok(()),
    }
}

fn parse_timeout(v: &OsStr, source: &str) -> Result<Option<Timeout>, ArgsError> {
    let s = v.to_str().unwrap_or("").trim();
    let secs: f64 = match s.parse() {
        Ok(x) if (0.0..1e9).contains(&x) => x,
        _ => return err(format!("{source} needs a number of seconds, not {v:?}")),
    };
    if secs == 0.0 {
        return Ok(None);
    }
    Ok(Some(Timeout { duration: Duration::from_secs_f64(secs), text: s.to_string() }))
}

/// The optimal-string-alignment distance between `a` and `b`: insertions, deletions,
/// substitutions and swaps of two neighbouring characters each cost 1.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    // d[i][j]: distance between a[..i] and b[..j].
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

/// The known long option nearest to the unknown option `name` (its `=VALUE` already cut
/// off), if one is close: at most 2 edits, and at most a third of the option's length, so
/// short words do not match everything. Compared without the leading dashes, so `-timeout`
/// finds `--timeout`; ties go to the first in [`LONG_OPTIONS`].
fn suggest(name: &str) -> Option<&'static str> {
    let bare = name.trim_start_matches('-');
    if bare.is_empty() {
        return None;
    }
    let mut best: Option<(usize, &'static str)> = None;
    for &known in LONG_OPTIONS {
        let dist = edit_distance(bare, &known[2..]);
        let limit = 2.min(known[2..].chars().count() / 3);
        if dist <= limit && best.is_none_or(|(d, _)| dist < d) {
            best = Some((dist, known));
        }
    }
    best.map(|(_, known)| known)
}

/// Parse `oshrun`'s arguments (without `argv[0]`). `env_timeout` is `OSHRUN_TIMEOUT`, used
/// when `--timeout` is not given; `lookup` reads the environment for `-x VAR`.
pub fn parse<I, S>(
    args: I,
    env_timeout: Option<&OsStr>,
    lookup: impl Fn(&OsStr) -> Option<OsString>,
) -> Result<Action, ArgsError>
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let mut it = args.into_iter().map(Into::into);
    let mut npes = None;
    let mut timeout = None;
    let mut tag_output = false;
    let mut pmi_port = false;
    let mut exports = Vec::new();
    let mut bind_to = None;
    let mut report_bindings = false;
    let mut program = None;

    while let Some(arg) = it.next() {
        let Some(s) = arg.to_str() else {
            // Not UTF-8: cannot be one of our options, so it is the program.
            program = Some(arg);
            break;
        };
        if s == "--" {
            program = it.next();
            if program.is_none() {
                return err("missing program after --");
            }
            break;
        }
        if !s.starts_with('-') || s == "-" {
            program = Some(arg);
            break;
        }
        let (name, inline) = match s.split_once('=') {
            Some((n, v)) => (n, Some(OsString::from(v))),
            None => (s, None),
        };
        let mut value = |what: &str| -> Result<OsString, ArgsError> {
            match inline.clone() {
                Some(v) => Ok(v),
                None => it.next().ok_or_else(|| ArgsError(format!("{name} needs {what}"))),
            }
        };
        match name {
            "-n" | "-np" | "--np" | "--n" => npes = Some(parse_npes(&value("a number of PEs")?)?),
            "--timeout" => timeout = Some(parse_timeout(&value("a number of seconds")?, "--timeout")?),
            "-x" => {
                let v = value("a variable name")?;
                let v = v.to_str().ok_or_else(|| ArgsError(format!("-x {v:?}: not UTF-8")))?;
                match v.split_once('=') {
                    Some((k, val)) if !k.is_empty() => exports.push((k.into(), val.into())),
                    None if !v.is_empty() => {
                        if let Some(val) = lookup(OsStr::new(v)) {
                            exports.push((v.into(), val));
                        }
                    }
                    _ => return err(format!("-x needs VAR or VAR=VALUE, not {v:?}")),
                }
            }
            "--bind-to" => {
                let v = value("none, core or socket")?;
                let v = v.to_string_lossy();
                bind_to = Some(
                    BindTo::parse(&v)
                        .ok_or_else(|| ArgsError(format!("--bind-to {v:?}: expected none, core or socket")))?,
                );
            }
            "-l" | "--tag-output" | "--pmi-port" | "--report-bindings" | "-h" | "--help" | "-V" | "--version"
                if inline.is_some() =>
            {
                return err(format!("option {name} takes no value"));
            }
            "-l" | "--tag-output" => tag_output = true,
            "--pmi-port" => pmi_port = true,
            "--report-bindings" => report_bindings = true,
            "-h" | "--help" => return Ok(Action::Help),
            "-V" | "--version" => return Ok(Action::Version),
            // `-n4`, `-np4`: the value glued to the option, as Hydra accepts.
            _ if s.starts_with("-np") && s[3..].bytes().all(|b| b.is_ascii_digit()) && s.len() > 3 => {
                npes = Some(parse_npes(OsStr::new(&s[3..]))?)
            }
            _ if s.starts_with("-n") && s[2..].bytes().all(|b| b.is_ascii_digit()) && s.len() > 2 => {
                npes = Some(parse_npes(OsStr::new(&s[2..]))?)
            }
            _ => {
                return err(match suggest(name) {
                    Some(known) => format!("unknown option {s} (did you mean {known}?)"),
                    None => format!("unknown option {s}"),
                });
            }
        }
    }

    let Some(npes) = npes else {
        return err("missing -n N (the number of PEs to start)");
    };
    let Some(program) = program else {
        return err("missing the program to run");
    };
    if program.is_empty() {
        return err("the program name is empty");
    }
    let timeout = match timeout {
        Some(t) => t,
        None => match env_timeout {
            Some(v) if !v.is_empty() => parse_timeout(v, "OSHRUN_TIMEOUT")?,
            _ => None,
        },
    };
    Ok(Action::Run(Options {
        npes,
        program,
        args: it.collect(),
        timeout,
        tag_output,
        pmi_port,
        exports,
        bind_to,
        report_bindings,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Action, ArgsError> {
        parse(args.iter().copied(), None, |k| (k == "HOME").then(|| OsString::from("/home/me")))
    }

    fn run(args: &[&str]) -> Options {
        match p(args) {
            Ok(Action::Run(o)) => o,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    #[test]
    fn npes_spellings() {
        for a in [
            &["-n", "4", "prog"][..],
            &["-np", "4", "prog"],
            &["--np", "4", "prog"],
            &["-n=4", "prog"],
            &["-np=4", "prog"],
            &["--np=4", "prog"],
            &["-n4", "prog"],
            &["-np4", "prog"],
        ] {
            let o = run(a);
            assert_eq!((o.npes, o.program.to_str().unwrap()), (4, "prog"), "{a:?}");
        }
    }

    #[test]
    fn program_args_are_left_alone() {
        let o = run(&["-n", "2", "prog", "-n", "7", "--timeout", "x"]);
        assert_eq!(o.npes, 2);
        assert_eq!(o.args, ["-n", "7", "--timeout", "x"]);
        let o = run(&["-n", "2", "--", "-weird", "a"]);
        assert_eq!(o.program, "-weird");
        assert_eq!(o.args, ["a"]);
    }

    #[test]
    fn options() {
        let o =
            run(&["--timeout", "2.5", "-l", "--pmi-port", "-n", "3", "-x", "A=1", "-x", "HOME", "-x", "UNSET", "p"]);
        assert_eq!(o.timeout, Some(Timeout { duration: Duration::from_millis(2500), text: "2.5".into() }));
        assert!(o.tag_output && o.pmi_port);
        assert_eq!(o.exports, [("A".into(), "1".into()), ("HOME".into(), "/home/me".into())]);
        let o = run(&["--tag-output", "--timeout=7", "-n", "1", "p"]);
        assert!(o.tag_output && !o.pmi_port);
        assert_eq!(o.timeout.unwrap().duration, Duration::from_secs(7));
        assert_eq!(run(&["--timeout", "0", "-n", "1", "p"]).timeout, None);
        assert_eq!(run(&["-x", "A=b=c", "-n", "1", "p"]).exports, [("A".into(), "b=c".into())]);
    }

    #[test]
    fn binding_options() {
        let o = run(&["--bind-to", "socket", "--report-bindings", "-n", "2", "p"]);
        assert_eq!((o.bind_to, o.report_bindings), (Some(BindTo::Socket), true));
        let o = run(&["--bind-to=none", "-n", "2", "p"]);
        assert_eq!((o.bind_to, o.report_bindings), (Some(BindTo::None), false));
        assert_eq!(run(&["-n", "2", "p"]).bind_to, None);
        let p = |a: &[&str]| parse(a.iter().copied(), None, |_| None);
        assert!(p(&["--bind-to", "cores2", "-n", "1", "p"]).unwrap_err().0.contains("expected none, core or socket"));
        assert!(p(&["--report-bindings=1", "-n", "1", "p"]).unwrap_err().0.contains("takes no value"));
        assert!(p(&["--bind-too", "core", "-n", "1", "p"]).unwrap_err().0.contains("did you mean --bind-to"));
    }

    #[test]
    fn env_timeout() {
        let f = |args: &[&str], env: &str| match parse(args.iter().copied(), Some(OsStr::new(env)), |_| None) {
            Ok(Action::Run(o)) => Ok(o.timeout.map(|t| t.duration)),
            Ok(other) => panic!("{other:?}"),
            Err(e) => Err(e),
        };
        assert_eq!(f(&["-n", "1", "p"], "3"), Ok(Some(Duration::from_secs(3))));
        assert_eq!(f(&["--timeout", "1", "-n", "1", "p"], "3"), Ok(Some(Duration::from_secs(1))));
        assert_eq!(f(&["-n", "1", "p"], ""), Ok(None));
        assert!(f(&["-n", "1", "p"], "soon").unwrap_err().0.contains("OSHRUN_TIMEOUT"));
    }

    #[test]
    fn help_and_version() {
        assert_eq!(p(&["--help"]), Ok(Action::Help));
        assert_eq!(p(&["-n", "2", "-h", "prog"]), Ok(Action::Help));
        assert_eq!(p(&["--version"]), Ok(Action::Version));
        assert_eq!(p(&["-V"]), Ok(Action::Version));
    }

    #[test]
    fn absurd_npes_are_refused_before_anything_is_allocated() {
        let e = |a: &[&str]| p(a).unwrap_err().0;
        assert_eq!(run(&["-n", "1048576", "p"]).npes, MAX_NPES);
        for n in ["1048577", "99999999999", "99999999999999999999999999"] {
            assert_eq!(e(&["-n", n, "p"]), format!("-n {n}: too many PEs; oshrun starts at most 1048576"));
        }
        assert!(e(&["-n99999999999", "p"]).contains("at most 1048576"));
        assert!(e(&["--np=99999999999", "p"]).contains("at most 1048576"));
        assert_eq!(check_process_limit(4, None), Ok(()));
        assert_eq!(check_process_limit(4, Some(5)), Ok(()));
        let msg = check_process_limit(5, Some(5)).unwrap_err().0;
        assert!(msg.contains("-n 5") && msg.contains("ulimit -u") && msg.contains("is 5"), "{msg}");
        assert!(check_process_limit(MAX_NPES, Some(4096)).is_err());
    }

    #[test]
    fn edit_distances() {
        assert_eq!(edit_distance("", ""), 0);
        assert_eq!(edit_distance("timeout", "timeout"), 0);
        assert_eq!(edit_distance("timout", "timeout"), 1);
        assert_eq!(edit_distance("tiemout", "timeout"), 1, "a swap costs 1");
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn misspelled_options_get_a_suggestion() {
        let e = |a: &[&str]| p(a).unwrap_err().0;
        for (typo, want) in [
            ("--timout", "--timeout"),
            ("--tiemout", "--timeout"),
            ("--timeout2", "--timeout"),
            ("-timeout", "--timeout"),
            ("--tag-ouput", "--tag-output"),
            ("--tagoutput", "--tag-output"),
            ("--pmi_port", "--pmi-port"),
            ("--pmiport", "--pmi-port"),
            ("--hlep", "--help"),
            ("--verison", "--version"),
        ] {
            assert_eq!(
                e(&[typo, "5", "-n", "2", "prog"]),
                format!("unknown option {typo} (did you mean {want}?)"),
                "{typo}"
            );
        }
        // The value after `=` is not part of the name compared.
        assert_eq!(e(&["--timout=5", "-n", "2", "p"]), "unknown option --timout=5 (did you mean --timeout?)");
        // Nothing close: no suggestion.
        for far in ["--bogus", "--frobnicate", "--tag", "--x", "--nps", "-q", "--port", "--verbose"] {
            assert_eq!(e(&[far, "-n", "1", "p"]), format!("unknown option {far}"), "{far}");
        }
    }

    #[test]
    fn errors() {
        let e = |a: &[&str]| p(a).unwrap_err().0;
        assert!(e(&["prog"]).contains("missing -n"));
        assert!(e(&["-n", "2"]).contains("missing the program"));
        assert!(e(&["-n", "2", "--"]).contains("missing program"));
        assert!(e(&["-n", "0", "p"]).contains("at least 1"));
        assert!(e(&["-n", "-3", "p"]).contains("positive number"));
        assert!(e(&["-n", "many", "p"]).contains("positive number"));
        assert!(e(&["-n", "+", "p"]).contains("positive number"));
        assert!(e(&["-n"]).contains("-n needs"));
        assert!(e(&["--bogus", "-n", "1", "p"]).contains("unknown option --bogus"));
        assert!(e(&["-q", "-n", "1", "p"]).contains("unknown option -q"));
        assert_eq!(e(&["--bogus", "-n", "1", "p"]), "unknown option --bogus");
        assert_eq!(e(&["-q", "-n", "1", "p"]), "unknown option -q");
        assert!(e(&["--timeout", "-1", "-n", "1", "p"]).contains("--timeout"));
        assert!(e(&["--timeout", "inf", "-n", "1", "p"]).contains("--timeout"));
        assert!(e(&["--tag-output=yes", "-n", "1", "p"]).contains("takes no value"));
        assert!(e(&["-x", "=1", "-n", "1", "p"]).contains("-x"));
        assert!(e(&["-n", "1", ""]).contains("empty"));
    }
}
