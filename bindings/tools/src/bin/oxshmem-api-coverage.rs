//! `oxshmem-api-coverage LIB.so [--api openshmem|nvshmem-host] [--list missing|present]`:
//! which functions of the OpenSHMEM 1.5 or NVSHMEM host API a built library exports, per
//! group. See `oxshmem_tools::coverage`.

use std::path::PathBuf;
use std::process::ExitCode;

use oxshmem_tools::coverage::{self, Api};

const USAGE: &str = "Usage: oxshmem-api-coverage LIB.so [--api openshmem|nvshmem-host] [--list missing|present]\n\n\
Prints, per API group, how many functions of the reference list (OpenSHMEM 1.5 as Sandia\n\
OpenSHMEM declares it, or NVSHMEM 3.4's host-callable names) LIB.so exports, then the total.\n\
Exit status: 0 when the library could be read, 2 otherwise.";

fn main() -> ExitCode {
    let mut lib = None;
    let mut api = Api::OpenShmem;
    let mut list = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--api" => match args.next().as_deref().and_then(Api::parse) {
                Some(x) => api = x,
                None => return usage("--api takes openshmem or nvshmem-host"),
            },
            "--list" => match args.next().as_deref() {
                Some(w @ ("missing" | "present")) => list = Some(w.to_string()),
                _ => return usage("--list takes missing or present"),
            },
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            s if s.starts_with('-') => return usage(&format!("unknown option {s}")),
            s if lib.is_none() => lib = Some(PathBuf::from(s)),
            s => return usage(&format!("unexpected argument {s:?}")),
        }
    }
    let Some(lib) = lib else { return usage("which library?") };
    let have = match coverage::exported(&lib) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("oxshmem-api-coverage: {e}");
            return ExitCode::from(2);
        }
    };
    let c = coverage::coverage(api, &have);
    let name = lib.file_name().map_or_else(|| lib.display().to_string(), |n| n.to_string_lossy().into_owned());
    print!("{}", coverage::report(api, &name, &c));
    let rows = match list.as_deref() {
        Some("missing") => &c.missing,
        Some(_) => &c.present,
        None => return ExitCode::SUCCESS,
    };
    for (name, group) in rows {
        println!("{group}\t{name}");
    }
    ExitCode::SUCCESS
}

fn usage(msg: &str) -> ExitCode {
    eprintln!("oxshmem-api-coverage: {msg}\n{USAGE}");
    ExitCode::from(2)
}
