//! The password check: SPAKE2 on Ed25519 (RustCrypto's `spake2`), a password-authenticated
//! key exchange. The host (or, on a dedicated server, the room's creator) is side B: its
//! challenge is its SPAKE2 message. The joiner is side A: it answers with its own message
//! and a key confirmation, a blake3 MAC of both messages under the key they agree on. Only
//! someone who knows the password derives that key, and the messages carry nothing to test
//! guesses against: an eavesdropper, or a server relaying the exchange, learns nothing about
//! the password, and each guess costs an attacker a whole handshake with the host.

use rand::{CryptoRng, RngCore};
use spake2::{Ed25519Group, Identity, Password, Spake2};

use super::msg::{CONFIRM_LEN, PAKE_MSG_LEN};

const JOINER: &[u8] = b"framelock joiner";
const HOST: &[u8] = b"framelock host";
const CONFIRM_CONTEXT: &str = "framelock 2026 password key confirmation v1";

/// The host's half of one password check.
pub struct Challenger {
    state: Spake2<Ed25519Group>,
    msg: [u8; PAKE_MSG_LEN],
}

impl std::fmt::Debug for Challenger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Challenger").finish_non_exhaustive()
    }
}

impl Challenger {
    pub fn new(password: &str, rng: &mut (impl CryptoRng + RngCore)) -> Challenger {
        let (state, msg) = Spake2::<Ed25519Group>::start_b_with_rng(
            &Password::new(password.as_bytes()),
            &Identity::new(JOINER),
            &Identity::new(HOST),
            rng,
        );
        let mut fixed = [0u8; PAKE_MSG_LEN];
        fixed.copy_from_slice(&msg);
        Challenger { state, msg: fixed }
    }

    /// The challenge to send.
    pub fn message(&self) -> [u8; PAKE_MSG_LEN] {
        self.msg
    }

    /// Whether the joiner's answer proves that it knows the password.
    pub fn verify(self, msg: &[u8; PAKE_MSG_LEN], confirm: &[u8; CONFIRM_LEN]) -> bool {
        let challenge = self.msg;
        match self.state.finish(msg) {
            Ok(key) => {
                let expected = confirmation(&key, msg, &challenge);
                // blake3::Hash compares in constant time.
                blake3::Hash::from(expected) == blake3::Hash::from(*confirm)
            }
            Err(_) => false,
        }
    }
}

/// The joiner's answer to `challenge`: its SPAKE2 message and key confirmation. `None` if the
/// challenge is no SPAKE2 message.
pub fn answer(
    password: &str,
    challenge: &[u8; PAKE_MSG_LEN],
    rng: &mut (impl CryptoRng + RngCore),
) -> Option<([u8; PAKE_MSG_LEN], [u8; CONFIRM_LEN])> {
    let (state, msg) = Spake2::<Ed25519Group>::start_a_with_rng(
        &Password::new(password.as_bytes()),
        &Identity::new(JOINER),
        &Identity::new(HOST),
        rng,
    );
    let mut ours = [0u8; PAKE_MSG_LEN];
    ours.copy_from_slice(&msg);
    let key = state.finish(challenge).ok()?;
    Some((ours, confirmation(&key, &ours, challenge)))
}

fn confirmation(
    key: &[u8],
    joiner: &[u8; PAKE_MSG_LEN],
    host: &[u8; PAKE_MSG_LEN],
) -> [u8; CONFIRM_LEN] {
    let mac_key = blake3::derive_key(CONFIRM_CONTEXT, key);
    let mut h = blake3::Hasher::new_keyed(&mac_key);
    h.update(joiner);
    h.update(host);
    *h.finalize().as_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, SeedableRng};

    #[test]
    fn only_the_right_password_passes_and_nothing_of_it_crosses() {
        let mut rng = StdRng::seed_from_u64(1);
        let host = Challenger::new("hunter2", &mut rng);
        let challenge = host.message();
        let (msg, confirm) = answer("hunter2", &challenge, &mut rng).unwrap();
        assert!(host.verify(&msg, &confirm));

        let host = Challenger::new("hunter2", &mut rng);
        let (msg, confirm) = answer("hunter3", &host.message(), &mut rng).unwrap();
        assert!(!host.verify(&msg, &confirm));

        // An answer to another challenge, or with a flipped bit, fails too.
        let host = Challenger::new("hunter2", &mut rng);
        let (msg, mut confirm) = answer("hunter2", &challenge, &mut rng).unwrap();
        assert!(!Challenger::new("hunter2", &mut rng).verify(&msg, &confirm));
        confirm[0] ^= 1;
        let (msg2, _) = answer("hunter2", &host.message(), &mut rng).unwrap();
        assert!(!host.verify(&msg2, &confirm));
        for bytes in [&challenge[..], &msg[..], &confirm[..]] {
            assert!(!bytes.windows(7).any(|w| w == b"hunter2"));
        }
        // A challenge that is no curve point is refused, not a panic.
        assert!(answer("x", &[0xff; PAKE_MSG_LEN], &mut rng).is_none());
    }
}
