//! `oshc++` (also `oshcxx`, `oshCC`): runs the compiler with oxshmem's flags; see
//! `oxshmem_tools::wrapper` and `oshcxx --showme:help`.

fn main() -> std::process::ExitCode {
    oxshmem_tools::wrapper::main(oxshmem_tools::wrapper::Lang::Cxx, std::env::args_os().skip(1).collect())
}
