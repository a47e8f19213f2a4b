//! File descriptors passed between two real processes: the test starts its child, the program
//! `fdpass-pe` (tests/pe/fdpass.rs); they meet on an abstract-namespace socket, each offers the other a memfd, and each writes
//! through the descriptor it received what the other then reads through its own.
#![cfg(feature = "cuda")]

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use oxshmem_device::cuda::fdpass::{self, Method};

use common::fdpass_pair::{NAME_VAR, PIDFD_VAR, TIMEOUT, exchange};

/// Kills the child if the test fails before reaping it.
struct Reap(Option<Child>);

impl Drop for Reap {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn run_pair(try_pidfd: bool) -> (Method, Method) {
    let name = format!("oxshmem-test-fdpass-{}-{try_pidfd}", std::process::id());
    let listener = fdpass::listen_abstract(name.as_bytes()).unwrap();
    let child = Command::new(common::pe_program("fdpass-pe"))
        .env(NAME_VAR, &name)
        .env(PIDFD_VAR, if try_pidfd { "1" } else { "0" })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = Reap(Some(child));
    listener.set_nonblocking(true).unwrap();
    let deadline = Instant::now() + TIMEOUT;
    let sock = loop {
        match listener.accept() {
            Ok((s, _)) => break s,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => panic!("parent: accept on {name}: {e}"),
        }
    };
    sock.set_nonblocking(false).unwrap();
    let methods = exchange(&sock, true, try_pidfd, "parent");
    // The child's exit, bounded: it has finished its part once `exchange` returned here.
    let c = child.0.as_mut().unwrap();
    let status = loop {
        if let Some(s) = c.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the child did not exit within {TIMEOUT:?}");
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.0.take().unwrap().wait_with_output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(status.success(), "child failed: {text}");
    assert!(text.contains("child: sent by"), "the child ran its side: {text}");
    methods
}

#[test]
fn two_processes_exchange_memfds_over_scm_rights() {
    let (sent, got) = run_pair(false);
    assert_eq!((sent, got), (Method::ScmRights, Method::ScmRights));
}

#[test]
fn two_processes_exchange_memfds_pidfd_or_fallback() {
    // pidfd_getfd is allowed or refused by the kernel's ptrace policy; either way the
    // descriptor arrives. The parent may copy from its child; the child usually may not.
    let (sent, got) = run_pair(true);
    println!("parent: sent by {sent:?}, received by {got:?}");
}
