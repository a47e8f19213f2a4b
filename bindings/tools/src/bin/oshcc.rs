//! `oshcc`: runs the compiler with oxshmem's flags; see `oxshmem_tools::wrapper` and
//! `oshcc --showme:help`.

fn main() -> std::process::ExitCode {
    oxshmem_tools::wrapper::main(oxshmem_tools::wrapper::Lang::C, std::env::args_os().skip(1).collect())
}
