//! `oxshmem-install --prefix DIR`: builds and installs oxshmem. See `oxshmem_tools::install`.

use std::process::ExitCode;

fn main() -> ExitCode {
    match oxshmem_tools::install::parse(std::env::args_os().skip(1)) {
        Ok(None) => {
            print!("{}", oxshmem_tools::install::USAGE);
            ExitCode::SUCCESS
        }
        Ok(Some(opts)) => match oxshmem_tools::install::run(&opts) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("oxshmem-install: {e}");
                ExitCode::FAILURE
            }
        },
        Err(e) => {
            eprintln!("oxshmem-install: {e}\n\n{}", oxshmem_tools::install::USAGE);
            ExitCode::from(2)
        }
    }
}
