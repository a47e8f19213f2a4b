//! `oshnvcc`: builds an NVSHMEM program for the CPU target, CUDA or HIP; see
//! `oxshmem_tools::nvcc`.

fn main() -> std::process::ExitCode {
    oxshmem_tools::nvcc::main(std::env::args().skip(1).collect())
}
