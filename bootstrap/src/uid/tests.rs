//! Whole jobs in threads over loopback: the protocol, its failures, and what a rank does when
//! the process at the id's address is not rank 0.

use super::*;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread;

fn local_id() -> UniqueId {
    // A fresh port: bind, read, release (rank 0 binds it again).
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    UniqueId::new(addr).unwrap()
}

/// Run `f(rank)` for every rank of a job of `size` in threads; results by rank.
fn job<T: Send + 'static>(
    id: &UniqueId,
    size: usize,
    timeout: Duration,
    f: impl Fn(Uid) -> T + Send + Sync + 'static,
) -> Vec<Result<T>> {
    let f = std::sync::Arc::new(f);
    let hs: Vec<_> = (0..size)
        .map(|r| {
            let (id, f) = (id.clone(), f.clone());
            thread::spawn(move || Uid::init_with_timeout(&id, r, size, timeout).map(|u| f(u)))
        })
        .collect();
    hs.into_iter().map(|h| h.join().unwrap()).collect()
}

fn spawn_rank(id: &UniqueId, rank: usize, size: usize, t: Duration) -> thread::JoinHandle<Result<Vec<Vec<u8>>>> {
    let id = id.clone();
    thread::spawn(move || {
        let u = Uid::init_with_timeout(&id, rank, size, t)?;
        let all = u.allgather(&[rank as u8])?;
        u.finalize()?;
        Ok(all)
    })
}

fn connect(addr: SocketAddr) -> TcpStream {
    loop {
        match TcpStream::connect(addr) {
            Ok(s) => break s,
            Err(_) => thread::sleep(Duration::from_millis(5)),
        }
    }
}

/// Everything `s` sends until it closes (or 10 s pass).
fn read_all(s: &mut TcpStream) -> Vec<u8> {
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut b = Vec::new();
    let _ = s.read_to_end(&mut b);
    b
}

#[test]
fn collectives_in_threads() {
    let id = local_id();
    let res = job(&id, 4, Duration::from_secs(30), |u| {
        let r = u.rank();
        for round in 0..3usize {
            let mine: Vec<u8> = (0..r * 1000 + round).map(|i| (i + r) as u8).collect();
            let all = u.allgather(&mine).unwrap();
            for (q, b) in all.iter().enumerate() {
                assert_eq!(b.len(), q * 1000 + round);
            }
        }
        u.barrier().unwrap();
        let got = u.broadcast(2, (r == 2).then_some(&b"from two"[..])).unwrap();
        assert_eq!(got, b"from two");
        assert_eq!(u.broadcast(0, Some(b"zero")).unwrap(), b"zero");
        assert!(u.broadcast(4, None).is_err());
        u.finalize().unwrap();
        assert!(matches!(u.barrier(), Err(BootstrapError::Invalid(_))));
        r
    });
    let ranks: Vec<usize> = res.into_iter().map(|r| r.unwrap()).collect();
    assert_eq!(ranks, [0, 1, 2, 3]);
}

#[test]
fn created_id_is_used_by_rank_zero() {
    // create_unique_id binds now; rank 0's init takes that very socket.
    let id = create_unique_id().unwrap();
    assert_ne!(id.addr().port(), 0);
    // The binary form, as the C layer passes it, is the same id.
    let id = UniqueId::from_bytes(&id.to_bytes()).unwrap();
    let res = job(&id, 3, Duration::from_secs(30), |u| u.allgather(&[u.rank() as u8]).unwrap());
    for r in res {
        assert_eq!(r.unwrap(), [[0], [1], [2]]);
    }
    assert!(!id::has_listener(&id));
}

#[test]
fn single_rank_job() {
    let id = local_id();
    let u = Uid::init_with_timeout(&id, 0, 1, Duration::from_secs(5)).unwrap();
    assert_eq!(u.allgather(b"x").unwrap(), vec![b"x".to_vec()]);
    u.barrier().unwrap();
    u.finalize().unwrap();
}

#[test]
fn bad_rank_and_size_are_refused_at_once() {
    let id = local_id();
    let t = Instant::now();
    let e = Uid::init_with_timeout(&id, 0, 0, Duration::from_secs(30)).unwrap_err().to_string();
    assert!(e.contains("job size 0"), "{e}");
    let e = Uid::init_with_timeout(&id, 4, 4, Duration::from_secs(30)).unwrap_err().to_string();
    assert!(e.contains("rank 4 is out of range for size 4 (ranks are 0 to 3)"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(1));
}

#[test]
fn init_twice_with_the_same_id_and_rank_is_refused() {
    let id = local_id();
    let t = Duration::from_secs(20);
    let (r0, r1) = (
        {
            let id = id.clone();
            thread::spawn(move || Uid::init_with_timeout(&id, 0, 2, t))
        },
        {
            let id = id.clone();
            thread::spawn(move || Uid::init_with_timeout(&id, 1, 2, t))
        },
    );
    let (u0, u1) = (r0.join().unwrap().unwrap(), r1.join().unwrap().unwrap());
    let start = Instant::now();
    for rank in [0, 1] {
        let e = Uid::init_with_timeout(&id, rank, 2, t).unwrap_err().to_string();
        assert!(e.contains(&format!("already joins the job at {} as rank {rank}", id.addr())), "{e}");
    }
    assert!(start.elapsed() < Duration::from_secs(1));
    // Another rank of the same id is no second init; nor is the same rank of another id.
    assert!(Joined::claim(&id, 5).is_ok());
    assert!(Joined::claim(&local_id(), 1).is_ok());
    // Once the first is gone, the pair is free again.
    drop((u0, u1));
    let again = job(&id, 2, t, |u| u.allgather(&[1]).unwrap());
    assert!(again.iter().all(|r| r.is_ok()), "{again:?}");
}

#[test]
fn strays_are_refused_and_the_job_completes() {
    let id = local_id();
    let addr = id.addr();
    let t = Duration::from_secs(30);
    let (r0, r2) = (spawn_rank(&id, 0, 3, t), spawn_rank(&id, 2, 3, t));
    // A silent connection, kept open while the job starts.
    let mut silent = connect(addr);
    // Garbage, the first version's hello, a response to another connection's challenge and
    // a truncated response: each gets its challenge and nothing else, then is closed.
    let forged = encode_response(&respond(id.secret(), &Challenge { nonce: [1; NONCE_LEN] }, [2; 32], 1, 3));
    let mut old_hello = b"OXSUIDh1".to_vec();
    old_hello.extend_from_slice(&id.secret()[..16]);
    old_hello.extend_from_slice(&[1, 0, 0, 0, 3, 0, 0, 0]);
    for payload in [b"GET / HTTP/1.0\r\n\r\n".to_vec(), old_hello, forged.to_vec(), forged[..50].to_vec()] {
        let mut s = connect(addr);
        s.write_all(&payload).unwrap();
        if payload.len() == 50 {
            s.shutdown(std::net::Shutdown::Write).unwrap();
        }
        let got = read_all(&mut s);
        assert_eq!(got.len(), CHALLENGE_LEN, "{got:?}");
        assert!(decode_challenge(&got).unwrap().is_some());
    }
    // A rank with another job's key (same address): it fails at once, rank 0 goes on.
    let wrong = UniqueId::with_secret(addr, [0x5a; SECRET_LEN]);
    let start = Instant::now();
    let e = Uid::init_with_timeout(&wrong, 1, 3, t).unwrap_err().to_string();
    assert!(
        e.contains(&format!("authenticate rank 0 at {addr}"))
            && e.contains("closed the connection instead of proving it holds this job's unique id"),
        "{e}"
    );
    assert!(start.elapsed() < Duration::from_secs(5), "{:?}", start.elapsed());
    // Only now the last real rank: the listener was open for the strays.
    let r1 = spawn_rank(&id, 1, 3, t);
    for h in [r0, r1, r2] {
        assert_eq!(h.join().unwrap().unwrap(), vec![vec![0], vec![1], vec![2]]);
    }
    let got = read_all(&mut silent);
    assert_eq!(got.len(), CHALLENGE_LEN, "the silent connection got more than its challenge");
}

/// What a process squatting on the id's port does with a connection.
#[derive(Clone, Copy, Debug)]
enum Squat {
    /// Accept and close.
    Close,
    /// Answer with something that is not this protocol.
    Garbage,
    /// A challenge, then a made-up proof.
    FakeProof,
    /// A challenge, then the rank's own MAC sent back as the proof.
    Reflect,
    /// A challenge, then close after the response.
    CloseAfterResponse,
}

/// Bind `addr`'s port before rank 0 (there is none), serve one connection as `how`, and
/// return everything the connecting rank sent.
fn squatter(how: Squat) -> (UniqueId, thread::JoinHandle<Vec<u8>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let id = UniqueId::new(l.local_addr().unwrap()).unwrap();
    let h = thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut got = Vec::new();
        let read_response = |s: &mut TcpStream, got: &mut Vec<u8>| {
            let mut b = [0u8; RESPONSE_LEN];
            s.read_exact(&mut b).unwrap();
            got.extend_from_slice(&b);
            decode_response(&b).unwrap().unwrap()
        };
        match how {
            Squat::Close => {}
            Squat::Garbage => s.write_all(b"SSH-2.0-OpenSSH_9.2\r\n").unwrap(),
            Squat::FakeProof | Squat::Reflect | Squat::CloseAfterResponse => {
                s.write_all(&encode_challenge(&Challenge { nonce: [0x11; NONCE_LEN] })).unwrap();
                let resp = read_response(&mut s, &mut got);
                match how {
                    Squat::FakeProof => s.write_all(&encode_proof(&Proof { mac: [0x22; MAC_LEN] })).unwrap(),
                    Squat::Reflect => s.write_all(&encode_proof(&Proof { mac: resp.mac })).unwrap(),
                    _ => {}
                }
            }
        }
        let mut rest = Vec::new();
        // Read on until the rank hangs up, except where the point is to hang up first.
        if !matches!(how, Squat::Close | Squat::CloseAfterResponse) {
            let _ = s.read_to_end(&mut rest);
        }
        got.extend_from_slice(&rest);
        got
    });
    (id, h)
}

#[test]
fn a_squatter_on_the_port_learns_nothing_and_the_rank_fails_at_once() {
    for (how, want) in [
        (Squat::FakeProof, "could not prove it holds this job's unique id (not this job's rank 0)"),
        (Squat::Reflect, "could not prove it holds this job's unique id (not this job's rank 0)"),
        (Squat::CloseAfterResponse, "closed the connection instead of proving it holds this job's unique id"),
        (Squat::Garbage, "is not an oxshmem uid rank 0: it sent \"SSH-2.0-OpenSSH_\""),
        (Squat::Close, "closed the connection before the handshake began"),
    ] {
        let (id, h) = squatter(how);
        let start = Instant::now();
        let e = Uid::init_with_timeout(&id, 1, 2, Duration::from_secs(30)).unwrap_err().to_string();
        assert!(start.elapsed() < Duration::from_secs(5), "{how:?}: {:?}", start.elapsed());
        assert!(e.contains(want), "{how:?}: {e}");
        let addr = id.addr().to_string();
        assert!(e.contains(&format!("the process listening at {addr}")), "{how:?}: {e}");
        // The key never reached the squatter, in any form.
        let sent = h.join().unwrap();
        let key = id.secret();
        assert!(!sent.windows(8).any(|w| key.windows(8).any(|k| k == w)), "{how:?}: the key was sent");
        assert!(!String::from_utf8_lossy(&sent).contains(&crate::wire::hex_encode(&key[..8])), "{how:?}");
        // A rank that met the challenge sent its response, and nothing after it.
        if matches!(how, Squat::FakeProof | Squat::Reflect | Squat::CloseAfterResponse) {
            assert_eq!(sent.len(), RESPONSE_LEN, "{how:?}");
        }
    }
}

#[test]
fn missing_rank_times_out_with_its_name() {
    let id = local_id();
    let t = Duration::from_millis(500);
    let hs: Vec<_> = [0usize, 1, 3]
        .into_iter()
        .map(|r| {
            let id = id.clone();
            thread::spawn(move || Uid::init_with_timeout(&id, r, 4, t).map(|_| ()))
        })
        .collect();
    let errs: Vec<String> = hs.into_iter().map(|h| h.join().unwrap().unwrap_err().to_string()).collect();
    assert!(errs[0].contains("waiting for rank 2 to connect") && errs[0].contains("3 of 4"), "{}", errs[0]);
    for e in &errs[1..] {
        assert!(e.contains("rank 0 refused to start the job") && e.contains("rank 2"), "{e}");
    }
}

#[test]
fn no_rank_zero_times_out() {
    let id = local_id();
    let e = Uid::init_with_timeout(&id, 1, 2, Duration::from_millis(300)).unwrap_err().to_string();
    assert!(e.contains("rank 1: connect to rank 0") && e.contains("timed out"), "{e}");
}

#[test]
fn size_mismatch_fails_every_rank_naming_who_said_what() {
    let id = local_id();
    let t = Duration::from_secs(20);
    let start = Instant::now();
    let spawn = |rank: usize, size: usize| {
        let id = id.clone();
        thread::spawn(move || Uid::init_with_timeout(&id, rank, size, t).map(|_| ()))
    };
    let (a, c) = (spawn(0, 3), spawn(2, 4));
    // Rank 1 comes late, after rank 0 has found the mismatch: it is told as well.
    thread::sleep(Duration::from_millis(300));
    let b = spawn(1, 3);
    let errs: Vec<String> = [a, b, c].into_iter().map(|h| h.join().unwrap().unwrap_err().to_string()).collect();
    let said = "rank 2 (connecting from 127.0.0.1:";
    assert!(errs[0].contains(said) && errs[0].contains("says the job has 4 ranks; rank 0 says 3"), "{}", errs[0]);
    for e in &errs[1..] {
        assert!(e.contains("rank 0 refused to start the job") && e.contains(said), "{e}");
        assert!(e.contains("says the job has 4 ranks; rank 0 says 3"), "{e}");
    }
    assert!(start.elapsed() < Duration::from_secs(10));
}

/// Speak the handshake by hand to rank 0 of `id`, with the key, as `rank` of `size`; return
/// rank 0's welcome.
fn handshake_by_hand(id: &UniqueId, rank: u32, size: u32) -> Welcome {
    let mut s = connect(id.addr());
    let mut b = [0u8; CHALLENGE_LEN];
    s.read_exact(&mut b).unwrap();
    let (ch, _) = decode_challenge(&b).unwrap().unwrap();
    let resp = respond(id.secret(), &ch, [3; NONCE_LEN], rank, size);
    s.write_all(&encode_response(&resp)).unwrap();
    let rest = read_all(&mut s);
    let (proof, used) = decode_proof(&rest).unwrap().unwrap();
    assert!(check_proof(id.secret(), &ch, &resp, &proof).is_ok());
    decode_welcome(&rest[used..]).unwrap().unwrap().0
}

#[test]
fn a_rank_out_of_range_from_a_key_holder_is_named() {
    for (rank, want) in [(7, "claims rank 7, out of range for size 3"), (0, "claims rank 0, which is this process")] {
        let id = local_id();
        let r0 = {
            let id = id.clone();
            thread::spawn(move || Uid::init_with_timeout(&id, 0, 3, Duration::from_secs(20)).map(|_| ()))
        };
        let w = handshake_by_hand(&id, rank, 3);
        assert!(w.status != 0 && w.message.contains(want), "{w:?}");
        // A rank that comes after the failure hears the same reason.
        let late = handshake_by_hand(&id, 1, 3);
        assert_eq!(late, w);
        let e = r0.join().unwrap().unwrap_err().to_string();
        assert!(e.contains(want), "{e}");
    }
}

#[test]
fn duplicate_rank_fails_fast() {
    let id = local_id();
    let t = Duration::from_secs(20);
    let start = Instant::now();
    // Two processes claiming rank 1: in one process the second init is refused before it
    // connects, so the second claimant here is a thread with its own copy of the key that
    // bypasses that check by speaking the handshake by hand.
    let r0 = {
        let id = id.clone();
        thread::spawn(move || Uid::init_with_timeout(&id, 0, 3, t).map(|_| ()))
    };
    let r1 = {
        let id = id.clone();
        thread::spawn(move || Uid::init_with_timeout(&id, 1, 3, t).map(|_| ()))
    };
    thread::sleep(Duration::from_millis(200));
    let w = handshake_by_hand(&id, 1, 3);
    assert!(w.status != 0 && w.message.contains("two processes claim rank 1"), "{w:?}");
    let e0 = r0.join().unwrap().unwrap_err().to_string();
    assert!(e0.contains("two processes claim rank 1"), "{e0}");
    let e1 = r1.join().unwrap().unwrap_err().to_string();
    assert!(e1.contains("two processes claim rank 1"), "{e1}");
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[test]
fn peer_leaving_mid_job_is_named() {
    let id = local_id();
    let res = job(&id, 3, Duration::from_secs(20), |u| {
        u.barrier().unwrap();
        if u.rank() == 2 {
            drop(u);
            return String::new();
        }
        u.barrier().unwrap_err().to_string()
    });
    let e0 = res[0].as_ref().unwrap();
    assert!(e0.contains("barrier #2") && e0.contains("rank 2") && e0.contains("closed"), "{e0}");
    let e1 = res[1].as_ref().unwrap();
    assert!(e1.contains("the job failed") && e1.contains("rank 2"), "{e1}");
}

#[test]
fn mismatched_collectives_are_named() {
    let id = local_id();
    let res = job(&id, 2, Duration::from_secs(20), |u| {
        let r = if u.rank() == 0 { u.barrier().map(|_| ()) } else { u.allgather(b"x").map(|_| ()) };
        r.unwrap_err().to_string()
    });
    let e0 = res[0].as_ref().unwrap();
    assert!(e0.contains("different order"), "{e0}");
}

#[test]
fn collective_timeout_names_the_late_rank() {
    let id = local_id();
    let res = job(&id, 3, Duration::from_millis(400), |u| {
        if u.rank() == 1 {
            thread::sleep(Duration::from_millis(1500));
            return String::new();
        }
        u.barrier().unwrap_err().to_string()
    });
    let e0 = res[0].as_ref().unwrap();
    assert!(e0.contains("barrier #1") && e0.contains("waiting for rank 1") && e0.contains("timed out"), "{e0}");
}
