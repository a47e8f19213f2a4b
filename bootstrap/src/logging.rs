//! Logging that users and developers switch on: `OXSHMEM_LOG`.
//!
//! The crates emit [`tracing`] events, one *target* per subsystem ([`TARGETS`]); nothing is
//! printed unless a subscriber is installed. [`install`] installs `tracing-subscriber`'s
//! formatter with an env filter, to stderr, unless the program has a global subscriber of its
//! own: executables (`oshrun`) and the C library's init install it always, with `warn` when the
//! environment names no filter, so warnings reach users; Rust's `oxshmem::init` installs it only
//! when the environment asks, leaving a Rust program's own logging alone (a program that wants
//! ours and sets its own subscriber gets its own).
//!
//! The filter is `OXSHMEM_LOG` in `tracing-subscriber`'s `EnvFilter` syntax (`debug`,
//! `ofi=trace,boot=debug`); without it, `SHMEM_DEBUG=1` means `debug` and `NVSHMEM_DEBUG`'s
//! `INFO`/`ABORT` and `TRACE` mean `info` and `trace` ([`filter_from`]). Each line carries the
//! process's PE once the runtime knows it ([`set_pe`]), `PE ?` before, and `oshrun` in the
//! launcher.
//!
//! When no subscriber is installed an event costs one relaxed load and compare of `tracing`'s
//! global maximum level, and no event sits on the put/get path anyway.
//!
//! The formatter is this crate's feature `subscriber` (on by default, for `oshrun`; the C
//! library and the runtime's feature `log` ask for it). A library built without it depends on
//! `tracing` alone: [`install`] then installs nothing, and says once on stderr that logging
//! was asked for but is not in this build.

#[cfg(feature = "subscriber")]
use std::fmt;
#[cfg(feature = "subscriber")]
use std::io::IsTerminal;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The targets the crates log under, with what each covers (for `--help`-style listings and
/// the docs). A filter such as `OXSHMEM_LOG=ofi=trace,boot=debug` selects among them.
pub const TARGETS: &[(&str, &str)] = &[
    ("init", "init and finalize: phases and their timings, the job's shape, the settings"),
    ("boot", "the bootstrap: which launcher protocol, key-value exchanges, the unique-id handshake"),
    ("shm", "the shared-memory transport: mapping each peer's segments"),
    ("ofi", "the libfabric transport: provider choice, endpoints, the progress thread"),
    ("heap", "the symmetric heap: segments, collective allocations"),
    ("device", "the device layer: channel choice per peer, device state"),
    ("proxy", "the host proxy thread: start, stop, naps"),
    ("softnic", "the software NIC thread: start, stop, naps"),
    ("cuda", "the CUDA driver layer: driver loading, the GPU heap, fd passing"),
    ("error", "every runtime error as it is built, before it is returned"),
    ("oshrun", "the launcher's own decisions (its messages to users stay plain text)"),
];

/// The PE number lines carry; `usize::MAX` before it is known, `usize::MAX - 1` in `oshrun`.
static PE: AtomicUsize = AtomicUsize::new(usize::MAX);
const LAUNCHER: usize = usize::MAX - 1;

/// Tells the formatter this process's PE number.
pub fn set_pe(pe: usize) {
    PE.store(pe, Ordering::Relaxed);
}

/// The filter the environment asks for, if any: `OXSHMEM_LOG` as written; else `debug` for a
/// true `SHMEM_DEBUG` (or `SMA_DEBUG`); else `NVSHMEM_DEBUG`'s `INFO`/`ABORT`/`1` as `info`
/// and `TRACE` as `trace` (lower levels print nothing new here: `WARN` and `VERSION` already
/// have their own behaviour at init).
///
/// ```
/// use oxshmem_bootstrap::logging::filter_from;
/// let env = |pairs: &'static [(&'static str, &'static str)]| {
///     move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
/// };
/// assert_eq!(filter_from(env(&[("OXSHMEM_LOG", "ofi=trace")])), Some("ofi=trace".into()));
/// assert_eq!(filter_from(env(&[("SHMEM_DEBUG", "1")])), Some("debug".into()));
/// assert_eq!(filter_from(env(&[("NVSHMEM_DEBUG", "trace")])), Some("trace".into()));
/// assert_eq!(filter_from(env(&[("NVSHMEM_DEBUG", "WARN")])), None);
/// assert_eq!(filter_from(env(&[])), None);
/// ```
pub fn filter_from(env: impl Fn(&str) -> Option<String>) -> Option<String> {
    if let Some(f) = env("OXSHMEM_LOG").filter(|f| !f.trim().is_empty()) {
        return Some(f);
    }
    let truthy = |v: &str| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "y" | "yes" | "true" | "on");
    if env("SHMEM_DEBUG").or_else(|| env("SMA_DEBUG")).is_some_and(|v| truthy(&v)) {
        return Some("debug".into());
    }
    match env("NVSHMEM_DEBUG")?.trim().to_ascii_uppercase().as_str() {
        "INFO" | "ABORT" | "1" => Some("info".into()),
        "TRACE" => Some("trace".into()),
        _ => None,
    }
}

/// Installs the stderr formatter with the environment's filter ([`filter_from`]), or with
/// `default` when the environment names none (`None`: then nothing is installed), unless a
/// global subscriber exists already. Only the first call in a process does anything; it returns
/// whether it installed the formatter. A filter that does not parse is reported once on stderr
/// and logging stays off (never fatal: a typo in a debugging aid must not end a job).
pub fn install(default: Option<&str>) -> bool {
    install_for(default, None)
}

/// [`install`] for the launcher: its lines say `oshrun` instead of a PE.
pub fn install_launcher(default: Option<&str>) -> bool {
    install_for(default, Some(LAUNCHER))
}

#[cfg(not(feature = "subscriber"))]
fn install_for(_default: Option<&str>, _who: Option<usize>) -> bool {
    use std::sync::Once;
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if let Some(spec) = filter_from(|k| std::env::var(k).ok()) {
            eprintln!(
                "oxshmem: logging ({spec}) was asked for, but this program was built without oxshmem's log \
                 subscriber: enable the feature `log` of the crate oxshmem (or install a tracing subscriber \
                 of your own)"
            );
        }
    });
    false
}

#[cfg(feature = "subscriber")]
fn install_for(default: Option<&str>, who: Option<usize>) -> bool {
    use std::sync::Once;
    static ONCE: Once = Once::new();
    let mut installed = false;
    ONCE.call_once(|| {
        let Some(spec) = filter_from(|k| std::env::var(k).ok()).or(default.map(str::to_string)) else { return };
        let filter = match tracing_subscriber::EnvFilter::builder().parse(&spec) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("oxshmem: OXSHMEM_LOG={spec:?} is not a filter ({e}); logging stays off");
                return;
            }
        };
        if let Some(w) = who {
            PE.store(w, Ordering::Relaxed);
        }
        let stderr = std::io::stderr().is_terminal();
        let sub = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .with_ansi(stderr)
            .with_thread_names(true)
            .event_format(WithPe(tracing_subscriber::fmt::format().with_ansi(stderr).with_thread_names(true)))
            .finish();
        installed = tracing::subscriber::set_global_default(sub).is_ok();
    });
    installed
}

/// The default format, after a `PE n` (or `PE ?`, `oshrun`) prefix.
#[cfg(feature = "subscriber")]
struct WithPe<F>(F);

#[cfg(feature = "subscriber")]
impl<S, N, F> tracing_subscriber::fmt::FormatEvent<S, N> for WithPe<F>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
    F: tracing_subscriber::fmt::FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> fmt::Result {
        match PE.load(Ordering::Relaxed) {
            usize::MAX => write!(writer, "PE ? ")?,
            LAUNCHER => write!(writer, "oshrun ")?,
            pe => write!(writer, "PE {pe} ")?,
        }
        self.0.format_event(ctx, writer, event)
    }
}

#[cfg(all(test, not(feature = "subscriber")))]
mod without_subscriber {
    /// Built without the formatter, `install` installs nothing, even when asked for a filter:
    /// the program's own logging (or none) stays as it is.
    #[test]
    fn install_installs_nothing() {
        assert!(!super::install(Some("debug")));
        assert!(!super::install_launcher(Some("warn")));
        assert!(!tracing::dispatcher::has_been_set());
    }
}
