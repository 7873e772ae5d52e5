//! Where a host is: what a player types (`HOST`, `HOST:PORT`, `V6`, `[V6]:PORT`) made a
//! socket address, refusing addresses no host listens on. It must not import the link,
//! the session or the window.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

use super::{NetplayError, DEFAULT_PORT};

/// `HOST`, `HOST:PORT`, `V6`, `[V6]:PORT` -> a socket address (the first one resolved).
pub(super) fn resolve(host: &str) -> Result<SocketAddr, NetplayError> {
    let err = |reason: String| NetplayError::Resolve {
        host: host.to_string(),
        reason,
    };
    let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']'));
    let addr = if let Ok(addr) = host.parse::<SocketAddr>() {
        addr
    } else if let Ok(ip) = bare.unwrap_or(host).parse::<IpAddr>() {
        SocketAddr::new(ip, DEFAULT_PORT)
    } else if host.starts_with('[') && !host.contains(']') {
        return Err(err("an IPv6 address opened with [ needs its ]".into()));
    } else {
        let with_port = if host.contains(':') {
            host.to_string()
        } else {
            format!("{host}:{DEFAULT_PORT}")
        };
        with_port
            .to_socket_addrs()
            .map_err(|e| err(e.to_string()))?
            .next()
            .ok_or_else(|| err("no address found".into()))?
    };
    check_host_address(addr).map_err(err)
}

/// A host is one machine on a port it listens on: not port 0, not an unspecified,
/// broadcast or multicast address (whose datagrams would go to no host, or to many).
fn check_host_address(addr: SocketAddr) -> Result<SocketAddr, String> {
    let ip = addr.ip();
    let multicast_or_broadcast = match ip {
        IpAddr::V4(v4) => v4.is_multicast() || v4.is_broadcast(),
        IpAddr::V6(v6) => v6.is_multicast(),
    };
    if addr.port() == 0 {
        Err("port 0 is not a port a host listens on".into())
    } else if ip.is_unspecified() {
        Err(format!("{ip} is no machine's address; give the host's"))
    } else if multicast_or_broadcast {
        Err(format!(
            "{ip} is a broadcast or multicast address, not one host's"
        ))
    } else {
        Ok(addr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_addresses_get_the_default_port() {
        assert_eq!(
            resolve("127.0.0.1").unwrap(),
            "127.0.0.1:7845".parse().unwrap()
        );
        assert_eq!(
            resolve("127.0.0.1:9000").unwrap(),
            "127.0.0.1:9000".parse().unwrap()
        );
        assert_eq!(resolve("::1").unwrap(), "[::1]:7845".parse().unwrap());
        assert_eq!(resolve("[::1]:99").unwrap(), "[::1]:99".parse().unwrap());
        assert_eq!(resolve("localhost:5").unwrap().port(), 5);
        assert!(matches!(
            resolve("no.such.host.invalid"),
            Err(NetplayError::Resolve { .. })
        ));
        assert_eq!(resolve("[::1]").unwrap(), "[::1]:7845".parse().unwrap());
        // Addresses no host listens on are refused, saying why.
        for (bad, why) in [
            ("[::1", "needs its ]"),
            ("127.0.0.1:0", "port 0"),
            ("0.0.0.0", "no machine's address"),
            ("[::]:7845", "no machine's address"),
            ("255.255.255.255", "broadcast or multicast"),
            ("224.0.0.1:9", "broadcast or multicast"),
            ("[ff02::1]:9", "broadcast or multicast"),
        ] {
            let e = resolve(bad).unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains(why), "{bad}: {e}");
        }
    }
}
