//! Every parser that reads bytes from another process, fed many random and mutated inputs:
//! none may panic, malformed input must be an error, and what parses must round-trip.
//!
//! This is the deterministic stand-in for the cargo-fuzz targets in `fuzz/` (which need a
//! nightly toolchain): a small xorshift generator with fixed seeds, so a failure reproduces
//! exactly. The seed and the input are in every assertion message.

use oxshmem_bootstrap::mapping::parse_process_mapping;
use oxshmem_bootstrap::pmi2::{LEN_FIELD, Message};
use oxshmem_bootstrap::uid::{
    Challenge, Frame, ID_BYTES, Op, Proof, RESPONSE_LEN, UniqueId, Welcome, check_proof, check_response,
    decode_challenge, decode_frame, decode_gathered, decode_proof, decode_response, decode_welcome, encode_challenge,
    encode_frame, encode_gathered, encode_proof, encode_response, encode_welcome, respond,
};
use oxshmem_bootstrap::wire::{Command, LineBuf};

/// xorshift64*: tiny, fast, and the same everywhere.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
    /// Random bytes, biased towards the characters the protocols care about.
    fn bytes(&mut self, max: usize) -> Vec<u8> {
        const SPECIAL: &[u8] = b"cmd=; \n\r\\0123456789abcdef(),vector-_:F\0\xff";
        let len = self.below(max + 1);
        (0..len).map(|_| if self.chance(2) { SPECIAL[self.below(SPECIAL.len())] } else { self.next() as u8 }).collect()
    }
    /// Mutate `v`: flip, insert, delete, duplicate or truncate, a few times.
    fn mutate(&mut self, v: &[u8]) -> Vec<u8> {
        let mut v = v.to_vec();
        for _ in 0..=self.below(4) {
            let at = self.below(v.len() + 1);
            match self.below(6) {
                0 if !v.is_empty() => {
                    let i = self.below(v.len());
                    v[i] ^= 1 << self.below(8);
                }
                1 => v.insert(at, self.next() as u8),
                2 if at < v.len() => {
                    v.remove(at);
                }
                3 => v.truncate(at),
                4 if at < v.len() => {
                    let end = (at + self.below(8)).min(v.len());
                    let dup: Vec<u8> = v[at..end].to_vec();
                    v.splice(at..at, dup);
                }
                _ if !v.is_empty() => {
                    let i = self.below(v.len());
                    v[i] = b"=; \n:,()"[self.below(8)];
                }
                _ => {}
            }
        }
        v
    }
}

const SEEDS: [u64; 4] = [1, 0xdead_beef, 42, 0x0123_4567_89ab_cdef];
const ROUNDS: usize = 5_000;

// ---------------------------------------------------------------- PMI-1

const PMI1_SAMPLES: &[&str] = &[
    "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0",
    "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024",
    "cmd=get_result rc=0 msg=success value=3:00ab10ff",
    "cmd=barrier_out",
    "cmd=abort exitcode=5 message=it\\ broke",
    "cmd=set size=4",
];

#[test]
fn pmi1_line_parser() {
    for seed in SEEDS {
        let mut rng = Rng::new(seed);
        for round in 0..ROUNDS {
            let input = if rng.chance(2) {
                rng.bytes(200)
            } else {
                {
                    let i = rng.below(PMI1_SAMPLES.len());
                    rng.mutate(PMI1_SAMPLES[i].as_bytes())
                }
            };
            let text = String::from_utf8_lossy(&input);
            let parsed = Command::parse(&text);
            // Malformed: not starting with `cmd=NAME` after leading spaces.
            let body = text.trim_start_matches(' ');
            if !body.starts_with("cmd=") || body.starts_with("cmd= ") || body == "cmd=" {
                assert!(parsed.is_err(), "seed {seed} round {round}: {text:?} parsed as {parsed:?}");
            }
            // What parses and encodes must parse back to the same command.
            if let Ok(c) = parsed
                && let Ok(line) = c.encode()
            {
                assert_eq!(Command::parse(&line).as_ref(), Ok(&c), "seed {seed} round {round}: {text:?} -> {line:?}");
            }
            // The line buffer, fed in random pieces, never panics and stays bounded.
            let mut lb = LineBuf::new();
            let mut rest = &input[..];
            while !rest.is_empty() {
                let n = 1 + rng.below(rest.len());
                lb.feed(&rest[..n]);
                rest = &rest[n..];
                while let Ok(Some(_)) = lb.pop_line() {}
            }
        }
    }
}

// ---------------------------------------------------------------- PMI-2

fn pmi2_samples() -> Vec<Vec<u8>> {
    [
        "cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;rank=0;size=4;appnum=-1;",
        "cmd=kvs-get-response;rc=0;found=TRUE;value=1:abcdef;",
        "cmd=kvs-fence-response;rc=0;",
        "cmd=info-getjobattr-response;found=TRUE;value=(vector,(0,2,1));rc=0;",
    ]
    .iter()
    .enumerate()
    .map(|(i, b)| {
        // Hydra's right-justified and Slurm's left-justified length fields.
        if i % 2 == 0 { format!("{:>6}{b}", b.len()).into_bytes() } else { format!("{:<6}{b}", b.len()).into_bytes() }
    })
    .collect()
}

#[test]
fn pmi2_message_parser() {
    let samples = pmi2_samples();
    for seed in SEEDS {
        let mut rng = Rng::new(seed);
        for round in 0..ROUNDS {
            let input = if rng.chance(2) {
                rng.bytes(120)
            } else {
                {
                    let i = rng.below(samples.len());
                    rng.mutate(&samples[i])
                }
            };
            let res = Message::parse_frame(&input);
            let head = &input[..input.len().min(LEN_FIELD)];
            if !head.iter().all(|b| *b == b' ' || b.is_ascii_digit()) {
                assert!(res.is_err(), "seed {seed} round {round}: {input:?} gave {res:?}");
            }
            if let Ok(Some((m, used))) = &res {
                assert!(*used <= input.len() && *used >= LEN_FIELD);
                if let Ok(w) = m.encode() {
                    let back = Message::parse_frame(w.as_bytes());
                    assert_eq!(back, Ok(Some((m.clone(), w.len()))), "seed {seed} round {round}: {input:?}");
                }
            }
            // Bodies without a frame, too.
            let _ = Message::parse(&String::from_utf8_lossy(&input));
        }
    }
}

#[test]
fn pmi2_frames_split_anywhere_decode_the_same() {
    let samples = pmi2_samples();
    let stream: Vec<u8> = samples.iter().flatten().copied().collect();
    let want: Vec<Message> = samples.iter().map(|s| Message::parse_frame(s).unwrap().unwrap().0).collect();
    for seed in SEEDS {
        let mut rng = Rng::new(seed);
        for _ in 0..500 {
            let mut buf = Vec::new();
            let mut got = Vec::new();
            let mut rest = &stream[..];
            while !rest.is_empty() {
                let n = 1 + rng.below(rest.len().min(40));
                buf.extend_from_slice(&rest[..n]);
                rest = &rest[n..];
                while let Some((m, used)) = Message::parse_frame(&buf).unwrap() {
                    buf.drain(..used);
                    got.push(m);
                }
            }
            assert_eq!(got, want, "seed {seed}");
            assert!(buf.is_empty());
        }
    }
    // Every strict prefix of a frame asks for more.
    for s in &samples {
        for cut in 0..s.len() {
            assert_eq!(Message::parse_frame(&s[..cut]), Ok(None), "{:?}", &s[..cut]);
        }
    }
}

// ---------------------------------------------------------------- uid

#[test]
fn uid_handshake_decoders() {
    let key = [0x5au8; 32];
    let challenge = Challenge { nonce: [0x11; 32] };
    let response = respond(&key, &challenge, [0x22; 32], 3, 8);
    let resp_bytes = encode_response(&response);
    let proof = check_response(&key, &challenge, &response).unwrap();
    let proof_bytes = encode_proof(&proof);
    let welcome = encode_welcome(&Welcome { status: 1, message: "rank 5 never came".into() });
    let frames: Vec<Vec<u8>> = [
        (Op::Allgather, b"blob".to_vec()),
        (Op::Broadcast, vec![0; 40]),
        (Op::Barrier, vec![]),
        (Op::Error, b"why".to_vec()),
    ]
    .into_iter()
    .map(|(op, payload)| encode_frame(&Frame { op, seq: 7, arg: 1, payload }))
    .collect();
    let gathered = encode_gathered(&[b"a".to_vec(), vec![], vec![9; 30]]);
    let id = UniqueId::with_secret("127.0.0.1:43211".parse().unwrap(), key);
    let id_bytes = id.to_bytes();

    for seed in SEEDS {
        let mut rng = Rng::new(seed);
        for round in 0..ROUNDS {
            // Response: random bytes never prove the key; a mutation proves it only if it
            // changed nothing.
            let random = rng.bytes(90);
            if let Ok(Some(r)) = decode_response(&random) {
                assert!(check_response(&key, &challenge, &r).is_err(), "seed {seed} round {round}: {random:?}");
            }
            let m = rng.mutate(&resp_bytes);
            if let Ok(Some(r)) = decode_response(&m)
                && check_response(&key, &challenge, &r).is_ok()
            {
                assert_eq!(m, resp_bytes, "seed {seed}: a changed response passed");
            }
            // Prefixes of a valid response ask for more.
            let cut = rng.below(RESPONSE_LEN);
            assert_eq!(decode_response(&resp_bytes[..cut]), Ok(None));
            // A flipped byte anywhere is refused: by the decoder (magic) or the MAC check.
            let mut bad = resp_bytes;
            bad[rng.below(RESPONSE_LEN)] ^= 1 + rng.below(255) as u8;
            let passed =
                decode_response(&bad).ok().flatten().is_some_and(|r| check_response(&key, &challenge, &r).is_ok());
            assert!(!passed, "seed {seed} round {round}");

            // Challenge and proof: no panic; what decodes re-encodes to the bytes it used; a
            // proof passes only unchanged.
            for input in [rng.bytes(48), rng.mutate(&encode_challenge(&challenge))] {
                if let Ok(Some((c, used))) = decode_challenge(&input) {
                    assert_eq!(encode_challenge(&c), input[..used], "seed {seed}");
                }
            }
            for input in [rng.bytes(48), rng.mutate(&proof_bytes)] {
                if let Ok(Some((p, used))) = decode_proof(&input) {
                    assert_eq!(encode_proof(&p), input[..used], "seed {seed}");
                    if check_proof(&key, &challenge, &response, &p).is_ok() {
                        assert_eq!(p, proof, "seed {seed}: a changed proof passed");
                    }
                }
            }
            assert!(check_proof(&key, &challenge, &response, &Proof { mac: [rng.next() as u8; 32] }).is_err());

            // Welcome and frames: no panic; what decodes re-encodes to the bytes it used.
            for input in [rng.bytes(64), rng.mutate(&welcome)] {
                if let Ok(Some((w, used))) = decode_welcome(&input) {
                    // The message is for display: invalid UTF-8 is replaced, not refused.
                    if std::str::from_utf8(&input[16..used]).is_ok() {
                        assert_eq!(encode_welcome(&w), input[..used], "seed {seed}");
                    }
                }
            }
            let f = &frames[rng.below(frames.len())];
            for input in [rng.bytes(64), rng.mutate(f)] {
                if let Ok(Some((fr, used))) = decode_frame(&input) {
                    assert_eq!(encode_frame(&fr), input[..used], "seed {seed}");
                }
            }
            let g = rng.mutate(&gathered);
            if let Ok(blobs) = decode_gathered(&g, 3) {
                assert_eq!(encode_gathered(&blobs), g, "seed {seed}");
            }
            let _ = decode_gathered(&rng.bytes(64), rng.below(5));

            // Printed ids.
            let text = String::from_utf8_lossy(&rng.mutate(id.to_string().as_bytes())).into_owned();
            if let Ok(parsed) = text.parse::<UniqueId>() {
                assert_eq!(parsed.to_string().parse::<UniqueId>().unwrap(), parsed);
            }
            // Binary ids: a damaged one never passes for another id.
            let m = rng.mutate(&id_bytes);
            if let Ok(parsed) = UniqueId::from_bytes(&m) {
                assert_eq!(parsed, id, "seed {seed} round {round}: {m:?}");
                assert_eq!(m, id_bytes);
            }
            let mut random = rng.bytes(ID_BYTES);
            random.resize(ID_BYTES, 0);
            assert!(UniqueId::from_bytes(&random).is_err(), "seed {seed} round {round}");
        }
    }
}

// ---------------------------------------------------------------- process mapping

#[test]
fn process_mapping_parser() {
    let samples: &[&[u8]] =
        &[b"(vector,(0,1,1))", b"(vector,(0,2,1))", b"(vector,(0,2,2),(2,1,3))", b"(vector,(4,3,2))"];
    for seed in SEEDS {
        let mut rng = Rng::new(seed);
        for round in 0..ROUNDS {
            let input = if rng.chance(3) {
                rng.bytes(40)
            } else {
                {
                    let i = rng.below(samples.len());
                    rng.mutate(samples[i])
                }
            };
            let text = String::from_utf8_lossy(&input);
            let size = rng.below(64);
            if let Ok(nodes) = parse_process_mapping(&text, size) {
                assert_eq!(nodes.len(), size, "seed {seed} round {round}");
            }
            // Whitespace is ignored anywhere.
            let compact: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
            if !compact.starts_with("(vector,") {
                assert!(parse_process_mapping(&text, size.max(1)).is_err());
            }
        }
    }
}
