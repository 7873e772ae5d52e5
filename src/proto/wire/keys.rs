//! Session keys and datagram tags: after the handshake every datagram between a host (or a
//! room on `serve`) and one of its peers carries a tag that only the two of them can make.
//!
//! Each side makes an X25519 key pair from its entropy for the handshake; the joiner's
//! public key rides in Hello, the host's in Welcome. Both compute the shared secret and
//! derive, with BLAKE3 in key-derivation mode over that secret, both public keys and the
//! session id, one 32-byte key per direction. Someone who saw the handshake learns nothing
//! of the keys, password or not. The exchange is not bound to the password check: whoever
//! can rewrite the handshake in flight could run one exchange with each side.
//!
//! A datagram's tag is the first [`TAG_LEN`] bytes of BLAKE3 keyed with the sender's
//! direction key, over the whole datagram before it, appended at its end. The receiver
//! checks it before reading any field and drops the datagram if it does not match
//! ([`Keys::open`]). Replays of genuine datagrams are the protocols' business: every one is
//! idempotent (sequence numbers, cumulative acks).

use x25519_dalek::{PublicKey, StaticSecret};

/// Tag bytes per datagram.
pub const TAG_LEN: usize = 4;
/// Bytes of an X25519 public key in Hello and Welcome.
pub const PUBLIC_KEY_LEN: usize = 32;

#[cfg(test)]
thread_local! {
    static TAGS_CHECKED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Tags [`Keys::open`] checked on this thread so far: what a flood of forged datagrams
/// costs, as a test counts it.
#[cfg(test)]
pub(crate) fn tags_checked() -> u64 {
    TAGS_CHECKED.with(|n| n.get())
}

const CONTEXT: &str = "framelock 2026-11 session keys, one per direction";
const ROOM_CONTEXT: &str = "framelock 2026-11 hosted room keys, server and host";
/// Bytes of a hosted room's secret (`Keys::for_room`).
pub const ROOM_KEY_LEN: usize = 32;

/// Which end of a link this side is: the keys are the same, their directions swap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Host,
    Joiner,
}

/// This side's half of the key exchange.
pub struct KeyPair {
    secret: StaticSecret,
    public: [u8; PUBLIC_KEY_LEN],
}

impl std::fmt::Debug for KeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyPair")
            .field("public", &self.public)
            .finish_non_exhaustive()
    }
}

impl KeyPair {
    /// A key pair from 32 bytes of the caller's entropy (sans-IO: no randomness of its own).
    pub fn from_entropy(entropy: [u8; 32]) -> KeyPair {
        let secret = StaticSecret::from(entropy);
        let public = PublicKey::from(&secret).to_bytes();
        KeyPair { secret, public }
    }

    pub fn public(&self) -> [u8; PUBLIC_KEY_LEN] {
        self.public
    }

    /// Both directions' keys with the peer whose public key is `theirs`. `None` if `theirs`
    /// is a low-order point (the shared secret would be all zeros: anyone could compute it).
    pub fn agree(&self, side: Side, theirs: &[u8; PUBLIC_KEY_LEN], session: u32) -> Option<Keys> {
        let shared = self.secret.diffie_hellman(&PublicKey::from(*theirs));
        if !shared.was_contributory() {
            return None;
        }
        let (host_pub, joiner_pub) = match side {
            Side::Host => (&self.public, theirs),
            Side::Joiner => (theirs, &self.public),
        };
        let mut kdf = blake3::Hasher::new_derive_key(CONTEXT);
        kdf.update(shared.as_bytes());
        kdf.update(host_pub);
        kdf.update(joiner_pub);
        kdf.update(&session.to_le_bytes());
        Some(Keys::from_kdf(kdf, side))
    }
}

/// One link's keys: what this side tags with and what it checks against.
#[derive(Clone, PartialEq, Eq)]
pub struct Keys {
    send: [u8; 32],
    recv: [u8; 32],
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keys(..)")
    }
}

fn tag(key: &[u8; 32], data: &[u8]) -> [u8; TAG_LEN] {
    let hash = blake3::keyed_hash(key, data);
    let mut out = [0u8; TAG_LEN];
    out.copy_from_slice(&hash.as_bytes()[..TAG_LEN]);
    out
}

impl Keys {
    /// Appends the tag to a datagram about to be sent.
    pub fn seal(&self, datagram: &mut Vec<u8>) {
        let t = tag(&self.send, datagram);
        datagram.extend_from_slice(&t);
    }

    /// The datagram without its tag if the tag is the peer's, else `None`. Compared in
    /// constant time, so the time a forged tag takes to refuse says nothing of the right one.
    pub fn open<'a>(&self, datagram: &'a [u8]) -> Option<&'a [u8]> {
        #[cfg(test)]
        TAGS_CHECKED.with(|n| n.set(n.get() + 1));
        let body_len = datagram.len().checked_sub(TAG_LEN)?;
        let (body, got) = datagram.split_at(body_len);
        let want = tag(&self.recv, body);
        let diff = want.iter().zip(got).fold(0u8, |acc, (a, b)| acc | (a ^ b));
        (diff == 0).then_some(body)
    }

    /// A hosted room's keys between the server and the room's host (`serve`'s hosted
    /// rooms): both directions derived from the secret the server gave the host in its
    /// `Room/Opened` answer, which only the host's proven address received. The server
    /// takes `Side::Host`, the room's host `Side::Joiner`.
    pub fn for_room(secret: &[u8; ROOM_KEY_LEN], side: Side) -> Keys {
        let mut kdf = blake3::Hasher::new_derive_key(ROOM_CONTEXT);
        kdf.update(secret);
        Keys::from_kdf(kdf, side)
    }

    /// Both directions' keys from a fed key derivation: the first 32 bytes tag what goes to
    /// the host, the next 32 what goes to the joiner; `side` says which this end sends.
    fn from_kdf(kdf: blake3::Hasher, side: Side) -> Keys {
        let mut to_host = [0u8; 32];
        let mut to_joiner = [0u8; 32];
        let mut xof = kdf.finalize_xof();
        xof.fill(&mut to_host);
        xof.fill(&mut to_joiner);
        match side {
            Side::Host => Keys {
                send: to_joiner,
                recv: to_host,
            },
            Side::Joiner => Keys {
                send: to_host,
                recv: to_joiner,
            },
        }
    }

    /// Keys for tests and simulations that have no handshake: both ends of a link share a
    /// seed, `side` picks the direction.
    pub fn for_test(seed: u64, side: Side) -> Keys {
        let host = KeyPair::from_entropy(blake3::hash(&seed.to_le_bytes()).into());
        let joiner = KeyPair::from_entropy(blake3::hash(&(!seed).to_le_bytes()).into());
        match side {
            Side::Host => host.agree(Side::Host, &joiner.public(), 0),
            Side::Joiner => joiner.agree(Side::Joiner, &host.public(), 0),
        }
        .expect("contributory")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(seed: u8) -> KeyPair {
        KeyPair::from_entropy([seed; 32])
    }

    #[test]
    fn both_sides_agree_and_each_direction_has_its_own_key() {
        let (h, j) = (pair(1), pair(2));
        let host = h.agree(Side::Host, &j.public(), 7).unwrap();
        let joiner = j.agree(Side::Joiner, &h.public(), 7).unwrap();
        let mut d = b"an UPDATE".to_vec();
        host.seal(&mut d);
        assert_eq!(d.len(), 9 + TAG_LEN);
        assert_eq!(joiner.open(&d), Some(&b"an UPDATE"[..]));
        // Reflected back to the host, its own datagram is no joiner's.
        assert_eq!(host.open(&d), None);
        let mut c = b"a CTRL".to_vec();
        joiner.seal(&mut c);
        assert_eq!(host.open(&c), Some(&b"a CTRL"[..]));
        // Another session or another joiner: other keys.
        let other_session = j.agree(Side::Joiner, &h.public(), 8).unwrap();
        let other_joiner = pair(3).agree(Side::Joiner, &h.public(), 7).unwrap();
        for k in [other_session, other_joiner] {
            assert_ne!(k, joiner);
            assert_eq!(k.open(&d), None);
        }
    }

    #[test]
    fn any_change_to_a_tagged_datagram_is_refused() {
        let host = Keys::for_test(9, Side::Host);
        let joiner = Keys::for_test(9, Side::Joiner);
        let mut d: Vec<u8> = (0..40).collect();
        host.seal(&mut d);
        assert!(joiner.open(&d).is_some());
        for bit in 0..d.len() * 8 {
            let mut bad = d.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert_eq!(joiner.open(&bad), None, "bit {bit} flipped");
        }
        for len in 0..d.len() {
            assert_eq!(joiner.open(&d[..len]), None, "cut to {len}");
        }
        let mut padded = d.clone();
        padded.push(0);
        assert_eq!(joiner.open(&padded), None);
    }

    #[test]
    fn a_rooms_server_and_host_tag_each_way_with_the_secret_alone() {
        let server = Keys::for_room(&[5; ROOM_KEY_LEN], Side::Host);
        let host = Keys::for_room(&[5; ROOM_KEY_LEN], Side::Joiner);
        let mut d = b"a Present".to_vec();
        host.seal(&mut d);
        assert_eq!(server.open(&d), Some(&b"a Present"[..]));
        assert_eq!(host.open(&d), None);
        let other = Keys::for_room(&[6; ROOM_KEY_LEN], Side::Host);
        assert_eq!(other.open(&d), None);
    }

    #[test]
    fn a_low_order_public_key_gives_no_keys() {
        // The identity point: the shared secret would be zero whatever our secret is.
        assert!(pair(1).agree(Side::Host, &[0; 32], 1).is_none());
    }
}
