//! `oshfort`: runs the compiler with oxshmem's flags; see `oxshmem_tools::wrapper` and
//! `oshfort --showme:help`.

fn main() -> std::process::ExitCode {
    oxshmem_tools::wrapper::main(oxshmem_tools::wrapper::Lang::Fortran, std::env::args_os().skip(1).collect())
}
