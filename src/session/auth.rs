//! Password challenge-response: the password never leaves the machine, only a keyed hash of
//! the host's random nonce does. A fresh nonce per joining address defeats replays.
//! (An eavesdropper who sees a nonce and its proof can still try to guess a weak password
//! offline, so passwords keep strangers out of a lobby; they are not encryption.)

use super::msg::{NONCE_LEN, PROOF_LEN};

const KEY_CONTEXT: &str = "framelock 2025 session password v1";

/// The joiner's answer to `nonce`: blake3 keyed hash under a key derived from the password.
pub fn proof(password: &str, nonce: &[u8; NONCE_LEN]) -> [u8; PROOF_LEN] {
    let key = blake3::derive_key(KEY_CONTEXT, password.as_bytes());
    *blake3::keyed_hash(&key, nonce).as_bytes()
}

/// Constant-time check of a joiner's proof.
pub fn verify(password: &str, nonce: &[u8; NONCE_LEN], proof_bytes: &[u8; PROOF_LEN]) -> bool {
    blake3::Hash::from(proof(password, nonce)) == blake3::Hash::from(*proof_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proof_depends_on_password_and_nonce() {
        let p = proof("hunter2", &[1; 32]);
        assert!(verify("hunter2", &[1; 32], &p));
        assert!(!verify("hunter3", &[1; 32], &p));
        assert!(!verify("hunter2", &[2; 32], &p));
        assert!(!p.windows(7).any(|w| w == b"hunter2"));
    }
}
