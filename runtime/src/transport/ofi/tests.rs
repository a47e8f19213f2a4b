//! Unit tests of the libfabric layer in one process: the transport reaches this PE itself
//! through the network (`self_loop`), so every data path runs without a launcher.

use super::fabric::Choice;
use super::init::{corrupt, show_addr};
use super::settings::Options;
use super::*;
use crate::error::Result;
use crate::transport::{AmoOp, LocalBytes, LocalBytesMut, SymAddr, Transport, Width};
use oxshmem_bootstrap::single::Singleton;

/// A symmetric segment of `words` u64s, leaked: the provider writes into it from its own
/// threads, so the test reads it only through raw pointers after completion.
fn segment(words: usize) -> (usize, usize) {
    let mem: &'static mut [u64] = Box::leak(vec![0u64; words].into_boxed_slice());
    (mem.as_mut_ptr() as usize, words * 8)
}

fn options(provider: &str) -> Options {
    Options {
        choice: Choice { provider: Some(provider.into()), src_addr: Some("127.0.0.1".into()) },
        timeout: Duration::from_secs(20),
        self_loop: true,
        ..Options::default()
    }
}

fn open(opts: Options, seg: (usize, usize)) -> Result<OfiTransport> {
    OfiTransport::with_options(&Singleton::new(), 0, 1, &[seg], &[false], opts)
}

fn read(seg: (usize, usize), off: usize, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    // SAFETY: the range lies in the leaked segment; the transport completed its writes
    // (quiet) before the test reads, and `v` is a distinct allocation of len bytes.
    unsafe { std::ptr::copy_nonoverlapping((seg.0 + off) as *const u8, v.as_mut_ptr(), len) };
    v
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

const AT: fn(usize) -> SymAddr = |offset| SymAddr { seg: 0, offset };

/// Puts of every path (inject, bounce copy, long direct) and gets, then every atomic at both
/// widths; the results are checked against the memory itself.
fn exercise(t: &OfiTransport, seg: (usize, usize)) {
    for (off, len, seed) in [(0, 8, 1), (64, 1000, 2), (4096, 200_000, 3), (300_000, 65536, 4), (500_000, 65537, 5)] {
        let data = pattern(len, seed);
        t.put("test", 0, AT(off), LocalBytes::from_slice(&data)).unwrap();
        t.quiet().unwrap();
        assert_eq!(read(seg, off, len), data, "put of {len} bytes at {off}");
        let mut back = vec![0u8; len];
        t.get("test", 0, AT(off), LocalBytesMut::from_mut_slice(&mut back)).unwrap();
        assert_eq!(back, data, "get of {len} bytes at {off}");
    }
    for (width, base) in [(Width::W32, 700_000), (Width::W64, 700_008)] {
        let m = if width == Width::W32 { u64::from(u32::MAX) } else { u64::MAX };
        let a = AT(base);
        assert_eq!(t.atomic("test", 0, a, width, AmoOp::Set(m - 1)).unwrap(), 0);
        t.fence().unwrap();
        assert_eq!(t.atomic("test", 0, a, width, AmoOp::Fetch).unwrap(), m - 1);
        assert_eq!(t.atomic("test", 0, a, width, AmoOp::FetchAdd(3)).unwrap(), m - 1, "fetch-add wraps");
        assert_eq!(t.atomic("test", 0, a, width, AmoOp::Fetch).unwrap(), 1);
        assert_eq!(t.atomic("test", 0, a, width, AmoOp::Swap(0b1100)).unwrap(), 1);
        assert_eq!(t.atomic("test", 0, a, width, AmoOp::FetchAnd(0b1010)).unwrap(), 0b1100);
        assert_eq!(t.atomic("test", 0, a, width, AmoOp::FetchOr(0b0001)).unwrap(), 0b1000);
        assert_eq!(t.atomic("test", 0, a, width, AmoOp::FetchXor(0b1111)).unwrap(), 0b1001);
        assert_eq!(t.atomic("test", 0, a, width, AmoOp::CompareSwap { cond: 1, value: 9 }).unwrap(), 0b0110, "no swap");
        assert_eq!(t.atomic("test", 0, a, width, AmoOp::CompareSwap { cond: 0b0110, value: 9 }).unwrap(), 0b0110);
        assert_eq!(t.atomic("test", 0, a, width, AmoOp::Fetch).unwrap(), 9);
    }
    // The 32-bit atomics left the neighbouring word alone.
    t.quiet().unwrap();
    assert_eq!(read(seg, 700_004, 4), vec![0; 4]);
}

#[test]
fn tcp_rxm_loopback_every_path() {
    let seg = segment(1 << 17);
    let t = open(options("tcp;ofi_rxm"), seg).unwrap();
    assert_eq!(t.provider(), "tcp;ofi_rxm");
    assert!(t.reaches(0) && !t.reaches(1));
    assert!(t.inner.prov.delivery_complete, "tcp;ofi_rxm grants FI_DELIVERY_COMPLETE");
    exercise(&t, seg);
}

/// FI_MR_LOCAL (and PROV_KEY) as a NIC would ask: sources and destinations outside the
/// symmetric segments go through the registered bounce buffer, keys come from the provider.
#[test]
fn mr_local_and_prov_key_use_the_bounce_buffer() {
    let seg = segment(1 << 17);
    let opts = Options { extra_mr_mode: ffi::FI_MR_LOCAL | ffi::FI_MR_PROV_KEY, ..options("tcp;ofi_rxm") };
    let t = open(opts, seg).unwrap();
    assert!(t.inner.mr_local);
    exercise(&t, seg);
    // A long put whose source is inside the registered segment goes straight from it.
    let inside = pattern(100_000, 9);
    // SAFETY: the range lies in the leaked segment and nothing else accesses it now.
    unsafe { std::ptr::copy_nonoverlapping(inside.as_ptr(), (seg.0 + 800_000) as *mut u8, inside.len()) };
    // SAFETY: the range lies in the leaked segment, which lives for the whole test.
    let src = unsafe { LocalBytes::new((seg.0 + 800_000) as *const u8, inside.len()) };
    t.put("test", 0, AT(900_000), src).unwrap();
    t.quiet().unwrap();
    assert_eq!(read(seg, 900_000, inside.len()), inside);
}

#[test]
fn atomics_emulated_with_compare_swap() {
    let seg = segment(1 << 17);
    let t = open(Options { emulate_atomics: true, ..options("tcp;ofi_rxm") }, seg).unwrap();
    assert_eq!(t.inner.amo.fetch, [[false; 6]; 2]);
    exercise(&t, seg);
}

/// The shm provider asks for FI_MR_VIRT_ADDR: peers address by virtual address. Its
/// delivery-complete is not used (`trusts_delivery_complete`): quiet and fence prove writes
/// by a read-back.
#[test]
fn shm_provider_uses_virtual_addresses() {
    let seg = segment(1 << 17);
    let opts = Options { choice: Choice { provider: Some("shm".into()), src_addr: None }, ..options("shm") };
    let t = match open(opts, seg) {
        Ok(t) => t,
        Err(e) => {
            oxshmem_test_require::skip("ofi-shm", &format!("libfabric's shm provider does not open here: {e}"));
            return;
        }
    };
    assert!(t.inner.prov.mr_mode & ffi::FI_MR_VIRT_ADDR != 0, "{t:?}");
    assert_eq!(t.inner.peers[0].segs[0].base, seg.0 as u64);
    assert!(!t.inner.prov.delivery_complete && t.inner.wflags & u64::from(ffi::FI_DELIVERY_COMPLETE) == 0, "{t:?}");
    exercise(&t, seg);
}

#[test]
fn init_and_teardown_repeatedly() {
    for _ in 0..3 {
        let seg = segment(1 << 12);
        let t = open(options("tcp;ofi_rxm"), seg).unwrap();
        t.put("test", 0, AT(0), LocalBytes::from_slice(&[7; 100])).unwrap();
        t.quiet().unwrap();
        t.shutdown();
        let e = t.put("test", 0, AT(0), LocalBytes::from_slice(&[7; 100])).unwrap_err();
        assert!(e.to_string().contains("shut down"), "{e}");
        drop(t);
    }
}

#[test]
fn out_of_range_and_unreached_peers_are_errors() {
    let seg = segment(1 << 12);
    let t = open(options("tcp;ofi_rxm"), seg).unwrap();
    let e = t.put("shmem_putmem", 0, AT((1 << 15) - 4), LocalBytes::from_slice(&[0; 8])).unwrap_err();
    assert!(e.to_string().contains("shmem_putmem: offset 0x7ffc (+8 bytes) lies outside PE 0's segment 0"), "{e}");
    let e = t.get("test", 0, SymAddr { seg: 1, offset: 0 }, LocalBytesMut::from_mut_slice(&mut [0; 8])).unwrap_err();
    assert!(e.to_string().contains("no symmetric segment 1"), "{e}");
    let e = t.atomic("test", 3, AT(0), Width::W64, AmoOp::Fetch).unwrap_err();
    assert!(e.to_string().contains("PE 3 is not reached"), "{e}");
}

#[test]
fn unknown_provider_is_a_clear_error() {
    let e = open(options("no-such-provider"), segment(512)).unwrap_err();
    let s = e.to_string();
    assert!(s.contains("no libfabric endpoint from provider \"no-such-provider\"") && s.contains("FI_RMA"), "{s}");
}

/// A peer whose address leads nowhere: the first operation to it fails, naming it.
#[test]
fn unreachable_peer_is_named() {
    let seg = segment(512);
    let opts = Options { bad_peer: Some(0), timeout: Duration::from_secs(3), ..options("tcp;ofi_rxm") };
    let t = open(opts, seg).unwrap();
    let e = t.atomic("shmem_atomic_fetch", 0, AT(0), Width::W64, AmoOp::Fetch).unwrap_err().to_string();
    // The routine, the libfabric call, the peer and what was asked; then why.
    assert!(
        e.starts_with("PE 0: shmem_atomic_fetch: fi_fetch_atomic to PE 0 (a 64-bit atomic Fetch at offset 0x0"),
        "{e}"
    );
    assert!(e.contains("OXSHMEM_TIMEOUT") || e.contains("failed"), "{e}");
}

#[test]
fn card_addresses_show_as_ip_and_port() {
    let mut a = [0u8; 16];
    a[..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
    a[2..4].copy_from_slice(&4242u16.to_be_bytes());
    a[4..8].copy_from_slice(&[127, 0, 0, 2]);
    assert_eq!(show_addr(&a), "127.0.0.2:4242");
    corrupt(&mut a);
    assert_eq!(show_addr(&a), "127.0.0.2:1");
    assert_eq!(show_addr(&[1, 2, 0xff]), "0102ff");
}
