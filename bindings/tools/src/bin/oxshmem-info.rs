//! `oxshmem-info [--parsable | --json]`: the version, the build, what this machine offers and
//! every configuration variable with its value and source. See `oxshmem_tools::info`.

use std::process::ExitCode;

/// The output form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Human,
    Parsable,
    Json,
}

fn main() -> ExitCode {
    let mut form = Form::Human;
    for a in std::env::args().skip(1) {
        let asked = match a.as_str() {
            "--parsable" | "--parseable" | "-p" => Some(Form::Parsable),
            "--json" => Some(Form::Json),
            _ => None,
        };
        if let Some(f) = asked {
            if form != Form::Human && form != f {
                eprintln!("oxshmem-info: --parsable and --json exclude each other");
                return ExitCode::from(2);
            }
            form = f;
            continue;
        }
        match a.as_str() {
            "-V" | "--version" => {
                let (major, minor) = oxshmem::SPEC_VERSION;
                println!("oxshmem-info {} (OpenSHMEM {major}.{minor})", env!("CARGO_PKG_VERSION"));
                return ExitCode::SUCCESS;
            }
            "-h" | "--help" => {
                println!(
                    "Usage: oxshmem-info [--parsable | --json]\n\n\
                     Prints oxshmem's version, how it was built, the transports, RDMA devices,\n\
                     launchers and compilers found here, and every configuration variable with\n\
                     its value and where the value comes from (default or environment).\n\n  \
                     -p, --parsable   one `section:key:value` a line, for scripts\n      \
                     --json       the same as one JSON object: {{\"section\": {{\"key\": \"value\"}}}},\n                   \
                     and \"config\": {{\"NAME\": {{\"value\", \"source\", \"default\",\n                   \
                     \"aliases\" (an array), \"help\"}}}} for every variable\n  \
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
    let text = match form {
        Form::Human => oxshmem_tools::info::pretty(&facts),
        Form::Parsable => oxshmem_tools::info::parsable(&facts),
        Form::Json => oxshmem_tools::info::json(&facts),
    };
    print!("{text}");
    ExitCode::SUCCESS
}
