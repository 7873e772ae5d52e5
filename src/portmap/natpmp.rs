//! NAT-PMP (RFC 6886): the router's external address and one UDP port mapping, the bytes
//! only.
//!
//! ```text
//! address request   u8 0 (version), u8 0
//! address answer    u8 0, u8 128, u16 result, u32 epoch, [4] external address
//! map request       u8 0, u8 1 (UDP), u16 0, u16 internal port, u16 suggested external
//!                   port (0 when deleting), u32 lifetime (s; 0 deletes)
//! map answer        u8 0, u8 129, u16 result, u32 epoch, u16 internal port,
//!                   u16 external port, u32 lifetime
//! ```
//! Integers are big endian.

use std::net::Ipv4Addr;

/// The external address request.
pub fn address_request() -> Vec<u8> {
    vec![0, 0]
}

/// A UDP mapping request (`lifetime` 0 deletes it).
pub fn map_request(internal_port: u16, external_port: u16, lifetime: u32) -> Vec<u8> {
    let mut out = vec![0, 1, 0, 0];
    out.extend_from_slice(&internal_port.to_be_bytes());
    let suggested = if lifetime == 0 { 0 } else { external_port };
    out.extend_from_slice(&suggested.to_be_bytes());
    out.extend_from_slice(&lifetime.to_be_bytes());
    out
}

/// What a datagram from the router's NAT-PMP port says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The router's external address.
    Address {
        /// Seconds since its mappings began.
        epoch: u32,
        /// The address.
        ip: Ipv4Addr,
    },
    /// A UDP mapping granted, renewed or deleted.
    Mapped {
        /// Seconds since its mappings began.
        epoch: u32,
        /// The port mapped to.
        internal_port: u16,
        /// The external port granted.
        external_port: u16,
        /// Seconds granted.
        lifetime: u32,
    },
    /// A request refused: its opcode (0 address, 1 UDP map) and the result code.
    Refused {
        /// The opcode answered.
        op: u8,
        /// The result code (see [`result_name`]).
        code: u16,
    },
}

/// Decodes an answer; `None` for anything else (PCP's, a request, a TCP mapping's, bytes
/// of the wrong length).
pub fn decode(bytes: &[u8]) -> Option<Answer> {
    if bytes.len() < 4 || bytes[0] != 0 {
        return None;
    }
    let op = bytes[1].checked_sub(128)?;
    let code = u16::from_be_bytes([bytes[2], bytes[3]]);
    if code != 0 && (op == 0 || op == 1) {
        return Some(Answer::Refused { op, code });
    }
    let u32_at =
        |i: usize| u32::from_be_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    let u16_at = |i: usize| u16::from_be_bytes([bytes[i], bytes[i + 1]]);
    match (op, bytes.len()) {
        (0, 12) => Some(Answer::Address {
            epoch: u32_at(4),
            ip: Ipv4Addr::new(bytes[8], bytes[9], bytes[10], bytes[11]),
        }),
        (1, 16) => Some(Answer::Mapped {
            epoch: u32_at(4),
            internal_port: u16_at(8),
            external_port: u16_at(10),
            lifetime: u32_at(12),
        }),
        _ => None,
    }
}

/// The RFC's words for a result code.
pub fn result_name(code: u16) -> &'static str {
    match code {
        0 => "Success",
        1 => "Unsupported Version",
        2 => "Not Authorized/Refused",
        3 => "Network Failure",
        4 => "Out of resources",
        5 => "Unsupported opcode",
        _ => "an unknown result",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_answers_have_the_rfc_layout() {
        assert_eq!(
            map_request(7845, 7845, 3600),
            [0, 1, 0, 0, 0x1e, 0xa5, 0x1e, 0xa5, 0, 0, 0x0e, 0x10]
        );
        // Deleting suggests no port.
        assert_eq!(&map_request(7845, 7845, 0)[6..8], &[0, 0]);
        assert_eq!(
            decode(&[0, 128, 0, 0, 0, 0, 0, 9, 203, 0, 113, 7]),
            Some(Answer::Address {
                epoch: 9,
                ip: Ipv4Addr::new(203, 0, 113, 7)
            })
        );
        assert_eq!(
            decode(&[0, 129, 0, 0, 0, 0, 0, 9, 0x1e, 0xa5, 0x9c, 0x40, 0, 0, 0x0e, 0x10]),
            Some(Answer::Mapped {
                epoch: 9,
                internal_port: 7845,
                external_port: 40000,
                lifetime: 3600
            })
        );
        assert_eq!(
            decode(&[0, 129, 0, 2, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0]),
            Some(Answer::Refused { op: 1, code: 2 })
        );
        assert_eq!(result_name(2), "Not Authorized/Refused");
        for bad in [
            &[0u8, 1, 0, 0][..],
            &[0, 130, 0, 0],
            &[2, 129, 0, 0],
            &[0, 128, 0, 0, 1],
        ] {
            assert_eq!(decode(bad), None, "{bad:?}");
        }
    }
}
