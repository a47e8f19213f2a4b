//! `oshrun`, the job launcher: a PMI-1 *server* for the PEs it starts.
//!
//! `oshrun -n N prog args...` starts N processes, gives each a PMI connection, serves it
//! ([`server`]), forwards the PEs' output line by line ([`output`]), and ends the whole job as
//! soon as one PE fails, naming that PE and why ([`job`]). The command line is parsed by
//! [`args`]. The binary (`src/bin/oshrun.rs`) is only [`main`].

pub mod args;
pub mod bind;
pub mod job;
pub mod keeper;
pub mod output;
pub mod server;
mod sys;

use std::ffi::OsString;

/// `oshrun`'s whole behaviour: parse `args` (without `argv[0]`), run the job, and return the
/// exit status (2 for usage errors).
pub fn main(args: impl IntoIterator<Item = OsString>) -> i32 {
    let args: Vec<OsString> = args.into_iter().collect();
    if args.first().is_some_and(|a| a == keeper::KEEPER_ARG) {
        return keeper::keeper_main();
    }
    let env_timeout = std::env::var_os("OSHRUN_TIMEOUT");
    let parsed = args::parse(args, env_timeout.as_deref(), |k| std::env::var_os(k)).and_then(|action| {
        if let args::Action::Run(opts) = &action {
            // Before anything is allocated for the PEs.
            args::check_process_limit(opts.npes, sys::process_limit())?;
        }
        Ok(action)
    });
    match parsed {
        Ok(args::Action::Help) => {
            print!("{}", args::USAGE);
            0
        }
        Ok(args::Action::Version) => {
            println!("oshrun (oxshmem) {}", env!("CARGO_PKG_VERSION"));
            0
        }
        Ok(args::Action::Run(opts)) => {
            // Warnings, and what OXSHMEM_LOG asks for (the PEs inherit it).
            crate::logging::install_launcher(Some("warn"));
            job::run(&opts)
        }
        Err(e) => {
            eprintln!("oshrun: {e}\nTry 'oshrun --help' for more information.");
            2
        }
    }
}
