//! `oxshmem-info [--parsable]`: the version, the build, what this machine offers and every
//! configuration variable with its value and source. See `oxshmem_tools::info`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut parsable = false;
    for a in std::env::args().skip(1) {
        match a.as_str() {
            "--parsable" | "--parseable" | "-p" => parsable = true,
            "-V" | "--version" => {
                let (major, minor) = oxshmem::SPEC_VERSION;
                println!("oxshmem-info {} (OpenSHMEM {major}.{minor})", env!("CARGO_PKG_VERSION"));
                return ExitCode::SUCCESS;
            }
            "-h" | "--help" => {
                println!(
                    "Usage: oxshmem-info [--parsable]\n\n\
                     Prints oxshmem's version, how it was built, the transports, RDMA devices,\n\
                     launchers and compilers found here, and every configuration variable with\n\
                     its value and where the value comes from (default or environment).\n\n  \
                     -p, --parsable   one `section:key:value` a line, for scripts\n  \
                     -V, --version    print the version\n  \
                     -h, --help       print this help"
                );
                return ExitCode::SUCCESS;
            }
            other => {
                eprintln!("oxshmem-info: unknown argument {other:?} (try --help)");
                return ExitCode::from(2);
            }
        }
    }
    let facts = oxshmem_tools::info::facts();
    let text = if parsable { oxshmem_tools::info::parsable(&facts) } else { oxshmem_tools::info::pretty(&facts) };
    print!("{text}");
    ExitCode::SUCCESS
}
