//! `oshrun -n N [options] [--] PROGRAM [ARGS...]`: start an oxshmem job. See
//! `oxshmem_bootstrap::launcher` and `oshrun --help`.

fn main() {
    std::process::exit(oxshmem_bootstrap::launcher::main(std::env::args_os().skip(1)));
}
