//! PCP (RFC 6887) MAP requests and answers for one IPv4 UDP port: the bytes only. A PCP
//! address field is 16 bytes; IPv4 travels IPv4-mapped (`::ffff:a.b.c.d`).
//!
//! ```text
//! request  u8 version (2), u8 opcode (1 MAP), u16 0, u32 lifetime (s),
//!          [16] client address, then MAP: [12] nonce, u8 protocol (17 UDP), [3] 0,
//!          u16 internal port, u16 suggested external port, [16] suggested external address
//! answer   u8 version (2), u8 0x80 | opcode, u8 0, u8 result, u32 lifetime, u32 epoch,
//!          [12] 0, then MAP: nonce, protocol, [3], internal port, assigned external port,
//!          [16] assigned external address
//! ```
//! Integers are big endian. A NAT-PMP-only router answers a version-2 request with a
//! version-0 "unsupported version" (RFC 6887 section 9), which [`decode`] reports as such.
//! A request may end with the PREFER_FAILURE option (u8 2, u8 0, u16 0): the router maps
//! the port asked for or answers CANNOT_PROVIDE_EXTERNAL at once, instead of looking for
//! another (Debian's miniupnpd 2.3.1 looks through all 65,535 ports, minutes long, when
//! its rules deny the request, and answers nothing else meanwhile).

use std::net::{Ipv4Addr, Ipv6Addr};

/// PCP's version number.
pub const VERSION: u8 = 2;
/// The MAP opcode.
pub const OP_MAP: u8 = 1;
/// IANA protocol number of UDP.
pub const UDP: u8 = 17;
/// Bytes of a MAP request and of its answer.
pub const MAP_LEN: usize = 60;
/// Bytes of a mapping nonce.
pub const NONCE_LEN: usize = 12;
/// The PREFER_FAILURE option's code.
pub const OPTION_PREFER_FAILURE: u8 = 2;
/// The result code of a router that cannot give the port asked for.
pub const CANNOT_PROVIDE_EXTERNAL: u8 = 11;
/// The result code of a router that does not know an option.
pub const UNSUPP_OPTION: u8 = 5;

/// One MAP request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapRequest {
    /// Seconds asked for; 0 deletes the mapping.
    pub lifetime: u32,
    /// This machine's address, as the router sees the request come from.
    pub client: Ipv4Addr,
    /// Names the mapping: a renewal or a deletion repeats it.
    pub nonce: [u8; NONCE_LEN],
    /// The port mapped to.
    pub internal_port: u16,
    /// The external port wished for (0: any).
    pub external_port: u16,
    /// Ends with the PREFER_FAILURE option: that port or none.
    pub prefer_failure: bool,
}

impl MapRequest {
    /// The request's 60 bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(MAP_LEN);
        out.extend_from_slice(&[VERSION, OP_MAP, 0, 0]);
        out.extend_from_slice(&self.lifetime.to_be_bytes());
        out.extend_from_slice(&self.client.to_ipv6_mapped().octets());
        out.extend_from_slice(&self.nonce);
        out.extend_from_slice(&[UDP, 0, 0, 0]);
        out.extend_from_slice(&self.internal_port.to_be_bytes());
        out.extend_from_slice(&self.external_port.to_be_bytes());
        out.extend_from_slice(&Ipv4Addr::UNSPECIFIED.to_ipv6_mapped().octets());
        if self.prefer_failure {
            out.extend_from_slice(&[OPTION_PREFER_FAILURE, 0, 0, 0]);
        }
        out
    }
}

/// A MAP answer with a result code of success.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapAnswer {
    /// Seconds granted.
    pub lifetime: u32,
    /// The router's epoch: seconds since its mappings began (a drop means it lost them).
    pub epoch: u32,
    /// The nonce of the request answered.
    pub nonce: [u8; NONCE_LEN],
    /// The port mapped to.
    pub internal_port: u16,
    /// The external port granted.
    pub external_port: u16,
    /// The external address granted; `None` if it is not IPv4.
    pub external_ip: Option<Ipv4Addr>,
}

/// What a datagram from the router's PCP port says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// A mapping granted, renewed or deleted.
    Mapped(MapAnswer),
    /// A MAP refused: the result code and the nonce it answers.
    Refused {
        /// The result code (see [`result_name`]).
        code: u8,
        /// The nonce of the request answered.
        nonce: [u8; NONCE_LEN],
    },
    /// The router speaks NAT-PMP only (a version-0 "unsupported version").
    NatPmpOnly,
}

/// Decodes an answer to a MAP request; `None` for anything else (too short, a request,
/// another opcode, another protocol).
pub fn decode(bytes: &[u8]) -> Option<Answer> {
    if bytes.len() >= 4 && bytes[0] == 0 && bytes[1] >= 0x80 && bytes[2..4] == [0, 1] {
        return Some(Answer::NatPmpOnly);
    }
    // An answer is at most 1100 bytes, and may carry options past the MAP fields.
    if bytes.len() < MAP_LEN || bytes.len() > 1100 || bytes[0] != VERSION {
        return None;
    }
    if bytes[1] != 0x80 | OP_MAP {
        return None;
    }
    let u32_at =
        |i: usize| u32::from_be_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    let u16_at = |i: usize| u16::from_be_bytes([bytes[i], bytes[i + 1]]);
    let mut nonce = [0; NONCE_LEN];
    nonce.copy_from_slice(&bytes[24..36]);
    let code = bytes[3];
    if code != 0 {
        return Some(Answer::Refused { code, nonce });
    }
    if bytes[36] != UDP {
        return None;
    }
    let mut ip = [0; 16];
    ip.copy_from_slice(&bytes[44..60]);
    Some(Answer::Mapped(MapAnswer {
        lifetime: u32_at(4),
        epoch: u32_at(8),
        nonce,
        internal_port: u16_at(40),
        external_port: u16_at(42),
        external_ip: Ipv6Addr::from(ip).to_ipv4_mapped(),
    }))
}

/// The RFC's name of a result code.
pub fn result_name(code: u8) -> &'static str {
    match code {
        0 => "SUCCESS",
        1 => "UNSUPP_VERSION",
        2 => "NOT_AUTHORIZED",
        3 => "MALFORMED_REQUEST",
        4 => "UNSUPP_OPCODE",
        5 => "UNSUPP_OPTION",
        6 => "MALFORMED_OPTION",
        7 => "NETWORK_FAILURE",
        8 => "NO_RESOURCES",
        9 => "UNSUPP_PROTOCOL",
        10 => "USER_EX_QUOTA",
        11 => "CANNOT_PROVIDE_EXTERNAL",
        12 => "ADDRESS_MISMATCH",
        13 => "EXCESSIVE_REMOTE_PEERS",
        _ => "an unknown result",
    }
}

/// Whether a refusal may pass if asked again later (the router is busy, not unwilling).
pub fn is_transient(code: u8) -> bool {
    matches!(code, 7 | 8 | 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A router's answer to `req`, granting `port` on `ip` for `lifetime`.
    pub fn answer(req: &[u8], code: u8, lifetime: u32, port: u16, ip: Ipv4Addr) -> Vec<u8> {
        let mut a = req.to_vec();
        a[1] = 0x80 | OP_MAP;
        a[2] = 0;
        a[3] = code;
        a[4..8].copy_from_slice(&lifetime.to_be_bytes());
        a[8..12].copy_from_slice(&77u32.to_be_bytes());
        a[12..24].fill(0);
        a[42..44].copy_from_slice(&port.to_be_bytes());
        a[44..60].copy_from_slice(&ip.to_ipv6_mapped().octets());
        a
    }

    #[test]
    fn a_map_request_has_the_rfc_layout_and_its_answer_decodes() {
        let req = MapRequest {
            lifetime: 3600,
            client: Ipv4Addr::new(192, 168, 1, 20),
            nonce: [7; 12],
            internal_port: 7845,
            external_port: 7845,
            prefer_failure: false,
        }
        .encode();
        assert_eq!(req.len(), MAP_LEN);
        assert_eq!(&req[..4], &[2, 1, 0, 0]);
        assert_eq!(&req[4..8], &3600u32.to_be_bytes());
        assert_eq!(&req[18..24], &[0xff, 0xff, 192, 168, 1, 20]);
        assert_eq!(req[36], UDP);
        assert_eq!(&req[40..44], &[0x1e, 0xa5, 0x1e, 0xa5]);
        let ip = Ipv4Addr::new(203, 0, 113, 7);
        let a = decode(&answer(&req, 0, 1800, 40000, ip)).unwrap();
        assert_eq!(
            a,
            Answer::Mapped(MapAnswer {
                lifetime: 1800,
                epoch: 77,
                nonce: [7; 12],
                internal_port: 7845,
                external_port: 40000,
                external_ip: Some(ip),
            })
        );
        assert_eq!(
            decode(&answer(&req, 2, 0, 0, ip)),
            Some(Answer::Refused {
                code: 2,
                nonce: [7; 12]
            })
        );
        assert_eq!(result_name(2), "NOT_AUTHORIZED");
        // A NAT-PMP router's "unsupported version", and things that are no answer.
        assert_eq!(
            decode(&[0, 129, 0, 1, 0, 0, 0, 5]),
            Some(Answer::NatPmpOnly)
        );
        assert_eq!(decode(&req), None);
        assert_eq!(decode(&answer(&req, 0, 1, 1, ip)[..59]), None);
    }
}
