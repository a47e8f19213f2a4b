//! The MAC handshake: each side proves it holds the job key without sending it.
//!
//! ```text
//! rank 0                                            rank r
//!   challenge: nonce_root                 ──────▶
//!                                         ◀──────   response: nonce_leaf, r, size, MAC_leaf
//!   check MAC_leaf (constant time)
//!   proof: MAC_root                       ──────▶
//!                                                   check MAC_root (constant time)
//!
//! MAC_leaf = HMAC-SHA256(key, "oxshmem-uid leaf" ‖ nonce_root ‖ nonce_leaf ‖ rank ‖ size)
//! MAC_root = HMAC-SHA256(key, "oxshmem-uid root" ‖ nonce_leaf ‖ nonce_root ‖ rank ‖ size)
//! ```
//!
//! Rank and size are `u32` little-endian. Both nonces are fresh random bytes per connection,
//! so no MAC can be replayed to another connection; the labels and the swapped nonce order
//! keep a MAC of one side from passing for the other's.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use super::codec::{Challenge, HandshakeError, MAC_LEN, NONCE_LEN, Proof, Response};
use super::id::SECRET_LEN;

/// The label of `MAC_leaf`.
pub const LEAF_LABEL: &[u8; 16] = b"oxshmem-uid leaf";
/// The label of `MAC_root`.
pub const ROOT_LABEL: &[u8; 16] = b"oxshmem-uid root";

fn mac(key: &[u8; SECRET_LEN], label: &[u8], first: &[u8], second: &[u8], rank: u32, size: u32) -> Hmac<Sha256> {
    // HMAC takes a key of any length; ours is 32 bytes, so this cannot fail.
    let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC accepts any key length");
    m.update(label);
    m.update(first);
    m.update(second);
    m.update(&rank.to_le_bytes());
    m.update(&size.to_le_bytes());
    m
}

/// `MAC_leaf`: what a connecting rank shows to prove it holds `key`.
pub fn leaf_mac(
    key: &[u8; SECRET_LEN],
    nonce_root: &[u8; NONCE_LEN],
    nonce_leaf: &[u8; NONCE_LEN],
    rank: u32,
    size: u32,
) -> [u8; MAC_LEN] {
    mac(key, LEAF_LABEL, nonce_root, nonce_leaf, rank, size).finalize().into_bytes().into()
}

/// `MAC_root`: what rank 0 shows to prove it holds `key`.
pub fn root_mac(
    key: &[u8; SECRET_LEN],
    nonce_root: &[u8; NONCE_LEN],
    nonce_leaf: &[u8; NONCE_LEN],
    rank: u32,
    size: u32,
) -> [u8; MAC_LEN] {
    mac(key, ROOT_LABEL, nonce_leaf, nonce_root, rank, size).finalize().into_bytes().into()
}

/// Rank 0's side of one connection: check the response to `challenge` (in constant time)
/// and, when it proves `key`, return the proof to send back. The rank and size in the
/// response are only worth reading after this succeeded.
pub fn check_response(
    key: &[u8; SECRET_LEN],
    challenge: &Challenge,
    response: &Response,
) -> Result<Proof, HandshakeError> {
    mac(key, LEAF_LABEL, &challenge.nonce, &response.nonce, response.rank, response.size)
        .verify_slice(&response.mac)
        .map_err(|_| HandshakeError::BadMac)?;
    Ok(Proof { mac: root_mac(key, &challenge.nonce, &response.nonce, response.rank, response.size) })
}

/// A connecting rank's answer to `challenge`, with its fresh `nonce`.
pub fn respond(
    key: &[u8; SECRET_LEN],
    challenge: &Challenge,
    nonce: [u8; NONCE_LEN],
    rank: u32,
    size: u32,
) -> Response {
    Response { nonce, rank, size, mac: leaf_mac(key, &challenge.nonce, &nonce, rank, size) }
}

/// A connecting rank's check of rank 0's proof (in constant time), for the `challenge` it
/// got and the `response` it sent.
pub fn check_proof(
    key: &[u8; SECRET_LEN],
    challenge: &Challenge,
    response: &Response,
    proof: &Proof,
) -> Result<(), HandshakeError> {
    mac(key, ROOT_LABEL, &response.nonce, &challenge.nonce, response.rank, response.size)
        .verify_slice(&proof.mac)
        .map_err(|_| HandshakeError::BadMac)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: [u8; SECRET_LEN] = [0x42; SECRET_LEN];

    #[test]
    fn hmac_sha256_is_the_standard_one() {
        // RFC 4231, test case 2.
        let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(b"Jefe").unwrap();
        m.update(b"what do ya want for nothing?");
        let got: [u8; 32] = m.finalize().into_bytes().into();
        assert_eq!(crate::wire::hex_encode(&got), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
        // MAC_leaf is HMAC over the label and the fields, nothing else.
        let (nr, nl) = ([1u8; 32], [2u8; 32]);
        let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(&KEY).unwrap();
        m.update(b"oxshmem-uid leaf");
        m.update(&nr);
        m.update(&nl);
        m.update(&[3, 0, 0, 0, 8, 0, 0, 0]);
        let want: [u8; 32] = m.finalize().into_bytes().into();
        assert_eq!(leaf_mac(&KEY, &nr, &nl, 3, 8), want);
    }

    #[test]
    fn both_sides_prove_the_key() {
        let ch = Challenge { nonce: [9; NONCE_LEN] };
        let resp = respond(&KEY, &ch, [8; NONCE_LEN], 2, 4);
        let proof = check_response(&KEY, &ch, &resp).unwrap();
        assert_eq!(check_proof(&KEY, &ch, &resp, &proof), Ok(()));
    }

    #[test]
    fn nothing_passes_without_the_key_or_for_another_connection() {
        let ch = Challenge { nonce: [9; NONCE_LEN] };
        let other_key = [0x43; SECRET_LEN];
        let resp = respond(&KEY, &ch, [8; NONCE_LEN], 2, 4);
        // A rank with another id's key.
        assert_eq!(check_response(&other_key, &ch, &resp), Err(HandshakeError::BadMac));
        // A response replayed to another challenge, or with rank or size changed.
        assert!(check_response(&KEY, &Challenge { nonce: [10; NONCE_LEN] }, &resp).is_err());
        assert!(check_response(&KEY, &ch, &Response { rank: 1, ..resp }).is_err());
        assert!(check_response(&KEY, &ch, &Response { size: 5, ..resp }).is_err());
        assert!(check_response(&KEY, &ch, &Response { nonce: [7; NONCE_LEN], ..resp }).is_err());
        // A listener without the key: neither a zero nor a random proof, nor the rank's own
        // MAC reflected back, nor a proof made with another key.
        let proof = check_response(&KEY, &ch, &resp).unwrap();
        for fake in [[0u8; MAC_LEN], [0x5a; MAC_LEN], resp.mac] {
            assert_eq!(check_proof(&KEY, &ch, &resp, &Proof { mac: fake }), Err(HandshakeError::BadMac));
        }
        assert!(check_proof(&other_key, &ch, &resp, &proof).is_err());
        // A proof made for another connection (another nonce of the rank) does not pass.
        let resp2 = respond(&KEY, &ch, [6; NONCE_LEN], 2, 4);
        assert!(check_proof(&KEY, &ch, &resp2, &proof).is_err());
        // Every bit of the MAC counts.
        for i in 0..MAC_LEN * 8 {
            let mut mac = proof.mac;
            mac[i / 8] ^= 1 << (i % 8);
            assert!(check_proof(&KEY, &ch, &resp, &Proof { mac }).is_err());
        }
    }
}
