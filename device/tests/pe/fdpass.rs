//! The child of `tests/fdpass.rs`: meets the test on the abstract socket `OXSHMEM_TEST_FDPASS_NAME`
//! and runs its side of the memfd exchange.

use std::time::Instant;

use oxshmem_device::cuda::fdpass;

#[path = "../common/fdpass_pair.rs"]
mod fdpass_pair;

use fdpass_pair::{NAME_VAR, PIDFD_VAR, TIMEOUT, exchange};

fn main() {
    let name = std::env::var(NAME_VAR)
        .unwrap_or_else(|_| panic!("{NAME_VAR} is not set: this is the child of tests/fdpass.rs"));
    let try_pidfd = std::env::var(PIDFD_VAR).is_ok_and(|v| v == "1");
    let deadline = Instant::now() + TIMEOUT;
    let sock = loop {
        match fdpass::connect_abstract(name.as_bytes()) {
            Ok(s) => break s,
            Err(_) if Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => panic!("child: connect to {name}: {e}"),
        }
    };
    let (sent, got) = exchange(&sock, false, try_pidfd, "child");
    println!("child: sent by {sent:?}, received by {got:?}");
}
