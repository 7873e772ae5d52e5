//! UPnP IGD (the Internet Gateway Device's WANIPConnection service), as text: the SSDP
//! search and its answer, the device description's control URL, and the SOAP actions a
//! port mapping needs with their answers. XML is read as a stream (quick-xml), never as a
//! tree: a description nested a million deep or an entity bomb is an error, not a crash,
//! and nothing here allocates more than the bytes it was given.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use quick_xml::events::Event;
use quick_xml::Reader;

use super::http::Response;

/// The SSDP multicast group and port.
pub const SSDP: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(239, 255, 255, 250), 1900);
/// Deepest XML element followed (a router's description is about 10 deep).
pub const MAX_DEPTH: usize = 32;
/// Longest text kept of one element.
const MAX_TEXT: usize = 1024;
/// Most XML events read from one document.
const MAX_EVENTS: usize = 20_000;
/// Longest SSDP answer read.
const MAX_SSDP: usize = 2048;

/// The devices searched for: IGD version 1 and 2 (a router may answer only its own).
pub const SEARCH_TARGETS: [&str; 2] = [
    "urn:schemas-upnp-org:device:InternetGatewayDevice:1",
    "urn:schemas-upnp-org:device:InternetGatewayDevice:2",
];

/// An SSDP M-SEARCH for `target`.
pub fn search(target: &str) -> Vec<u8> {
    format!(
        "M-SEARCH * HTTP/1.1\r\nHOST: {SSDP}\r\nST: {target}\r\nMAN: \"ssdp:discover\"\r\nMX: 1\r\n\r\n"
    )
    .into_bytes()
}

/// An `http://` URL with an IPv4 address (routers name themselves by address).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpUrl {
    /// Where to connect.
    pub addr: SocketAddrV4,
    /// The path and query, from its `/`.
    pub path: String,
}

impl HttpUrl {
    /// Parses `http://A.B.C.D[:PORT][/PATH]`; anything else is `None`.
    pub fn parse(url: &str) -> Option<HttpUrl> {
        let rest = url.trim().strip_prefix("http://").or_else(|| {
            let (scheme, rest) = url.trim().split_at_checked(7)?;
            scheme.eq_ignore_ascii_case("http://").then_some(rest)
        })?;
        let (host, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let addr = match host.parse::<SocketAddrV4>() {
            Ok(a) => a,
            Err(_) => SocketAddrV4::new(host.parse().ok()?, 80),
        };
        if addr.port() == 0 || path.len() > 512 || !path.bytes().all(|b| b.is_ascii_graphic()) {
            return None;
        }
        Some(HttpUrl {
            addr,
            path: path.to_string(),
        })
    }

    /// `url` (absolute, or a path from this one's host, or relative to its directory).
    pub fn join(&self, url: &str) -> Option<HttpUrl> {
        let url = url.trim();
        if url.len() >= 7 && url[..7].eq_ignore_ascii_case("http://") {
            return HttpUrl::parse(url);
        }
        if url.contains("://") {
            return None;
        }
        let path = if url.starts_with('/') {
            url.to_string()
        } else {
            let dir = &self.path[..=self.path.rfind('/').unwrap_or(0)];
            format!("{dir}{url}")
        };
        HttpUrl::parse(&format!("http://{}{path}", self.addr))
    }
}

/// The device description's URL from an SSDP answer, if it is one.
pub fn parse_ssdp(bytes: &[u8]) -> Option<HttpUrl> {
    if bytes.len() > MAX_SSDP {
        return None;
    }
    let text = std::str::from_utf8(bytes).ok()?;
    let mut lines = text.lines();
    let status = lines.next()?;
    if !(status.starts_with("HTTP/1.1 200") || status.starts_with("HTTP/1.0 200")) {
        return None;
    }
    lines
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("location"))
        .and_then(|(_, url)| HttpUrl::parse(url))
}

/// Why a router's UPnP answer is not used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UpnpError {
    /// Not the XML it should be (or too deep, or with entities of its own).
    Xml(String),
    /// XML without what was asked for.
    Missing(&'static str),
}

impl std::fmt::Display for UpnpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UpnpError::Xml(why) => write!(f, "unreadable XML ({why})"),
            UpnpError::Missing(what) => write!(f, "no {what} in it"),
        }
    }
}

/// What the walk over a document sees.
enum Step<'a> {
    Open,
    /// An element's whole text (entities resolved), at its end.
    Close(&'a str),
}

/// Walks `xml`, calling `on` with the stack of local element names at each element's start
/// and end. Bounded in depth, text per element and events.
fn walk(xml: &[u8], mut on: impl FnMut(&[String], Step<'_>)) -> Result<(), UpnpError> {
    let err = |e: &dyn std::fmt::Display| UpnpError::Xml(e.to_string());
    let mut reader = Reader::from_reader(xml);
    let mut stack: Vec<String> = Vec::new();
    let mut text = String::new();
    for _ in 0..MAX_EVENTS {
        match reader.read_event().map_err(|e| err(&e))? {
            Event::Start(e) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(UpnpError::Xml(format!("nested over {MAX_DEPTH} deep")));
                }
                let name = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
                stack.push(name);
                text.clear();
                on(&stack, Step::Open);
            }
            Event::Empty(e) => {
                let name = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
                stack.push(name);
                on(&stack, Step::Open);
                on(&stack, Step::Close(""));
                stack.pop();
            }
            Event::End(_) => {
                on(&stack, Step::Close(text.trim()));
                text.clear();
                stack.pop();
            }
            Event::Text(t) => push_text(&mut text, &t.decode().map_err(|e| err(&e))?),
            Event::CData(t) => push_text(&mut text, &String::from_utf8_lossy(&t)),
            Event::GeneralRef(r) => {
                let c = match r.resolve_char_ref().map_err(|e| err(&e))? {
                    Some(c) => c,
                    None => match &*r {
                        b"lt" => '<',
                        b"gt" => '>',
                        b"amp" => '&',
                        b"apos" => '\'',
                        b"quot" => '"',
                        other => {
                            let name = String::from_utf8_lossy(&other[..other.len().min(16)]);
                            return Err(UpnpError::Xml(format!("an entity of its own: &{name};")));
                        }
                    },
                };
                push_text(&mut text, c.encode_utf8(&mut [0; 4]));
            }
            Event::DocType(_) => return Err(UpnpError::Xml("a DOCTYPE".into())),
            Event::Eof => return Ok(()),
            _ => {}
        }
    }
    Err(UpnpError::Xml(format!("over {MAX_EVENTS} parts")))
}

fn push_text(text: &mut String, more: &str) {
    let room = MAX_TEXT.saturating_sub(text.len());
    let mut cut = more.len().min(room);
    while !more.is_char_boundary(cut) {
        cut -= 1;
    }
    text.push_str(&more[..cut]);
}

/// The service that maps ports, as a description names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Igd {
    /// Where its SOAP actions go.
    pub control: HttpUrl,
    /// Its service type, e.g. `urn:schemas-upnp-org:service:WANIPConnection:2`.
    pub service: String,
}

impl Igd {
    /// Whether the service has `AddAnyPortMapping` (version 2 of the IP connection).
    pub fn is_v2(&self) -> bool {
        self.service.ends_with("WANIPConnection:2")
    }
}

/// The port-mapping service of the description `xml` fetched from `location`: a
/// WANIPConnection (version 2 first) or a WANPPPConnection, with its control URL resolved.
pub fn parse_description(xml: &[u8], location: &HttpUrl) -> Result<Igd, UpnpError> {
    let mut base: Option<String> = None;
    let (mut kind, mut control) = (String::new(), String::new());
    let mut found: Vec<(String, String)> = Vec::new();
    walk(xml, |stack, step| {
        let name = stack.last().map(String::as_str).unwrap_or("");
        match step {
            Step::Open if name == "service" => {
                kind.clear();
                control.clear();
            }
            Step::Open => {}
            Step::Close(text) => match name {
                "URLBase" if stack.len() == 2 => base = Some(text.to_string()),
                "serviceType" => kind = text.to_string(),
                "controlURL" => control = text.to_string(),
                "service" if found.len() < 16 => found.push((kind.clone(), control.clone())),
                _ => {}
            },
        }
    })?;
    let rank = |t: &str| {
        [
            "WANIPConnection:2",
            "WANIPConnection:1",
            "WANPPPConnection:1",
        ]
        .iter()
        .position(|s| t.starts_with("urn:schemas-upnp-org:service:") && t.ends_with(s))
    };
    let (service, url) = found
        .into_iter()
        .filter(|(t, _)| rank(t).is_some())
        .min_by_key(|(t, _)| rank(t))
        .ok_or(UpnpError::Missing("WANIPConnection service"))?;
    let base = match base.as_deref().map(HttpUrl::parse) {
        Some(Some(b)) => b,
        _ => location.clone(),
    };
    let control = base
        .join(&url)
        .ok_or(UpnpError::Missing("usable control URL"))?;
    Ok(Igd { control, service })
}

/// A SOAP action's request body, with its arguments in order.
pub fn soap_body(service: &str, action: &str, args: &[(&str, String)]) -> String {
    let mut body = format!(
        "<?xml version=\"1.0\"?>\r\n<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\" \
         s:encodingStyle=\"http://schemas.xmlsoap.org/soap/encoding/\"><s:Body>\
         <u:{action} xmlns:u=\"{service}\">"
    );
    for (name, value) in args {
        body.push_str(&format!("<{name}>{value}</{name}>"));
    }
    body.push_str(&format!("</u:{action}></s:Body></s:Envelope>\r\n"));
    body
}

/// The arguments of `AddPortMapping` (and `AddAnyPortMapping`).
pub fn add_args(external: u16, internal: SocketAddrV4, lease: u32) -> Vec<(&'static str, String)> {
    vec![
        ("NewRemoteHost", String::new()),
        ("NewExternalPort", external.to_string()),
        ("NewProtocol", "UDP".into()),
        ("NewInternalPort", internal.port().to_string()),
        ("NewInternalClient", internal.ip().to_string()),
        ("NewEnabled", "1".into()),
        ("NewPortMappingDescription", "framelock".into()),
        ("NewLeaseDuration", lease.to_string()),
    ]
}

/// The arguments of `DeletePortMapping`.
pub fn delete_args(external: u16) -> Vec<(&'static str, String)> {
    vec![
        ("NewRemoteHost", String::new()),
        ("NewExternalPort", external.to_string()),
        ("NewProtocol", "UDP".into()),
    ]
}

/// A SOAP answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Soap {
    /// The action's out-arguments, by name.
    Done(Vec<(String, String)>),
    /// The router's UPnP error (its code, if it gave one, and its words, made printable).
    Fault {
        /// 718, 725...
        code: Option<u16>,
        /// `ConflictInMappingEntry`...
        description: String,
    },
}

impl Soap {
    /// The out-argument `name`.
    pub fn arg(&self, name: &str) -> Option<&str> {
        match self {
            Soap::Done(args) => args
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str()),
            Soap::Fault { .. } => None,
        }
    }
}

/// The answer to `action`.
pub fn parse_soap(resp: &Response, action: &str) -> Result<Soap, UpnpError> {
    let answer = format!("{action}Response");
    let mut args = Vec::new();
    let (mut saw_answer, mut code, mut description) = (false, None, String::new());
    let parsed = walk(&resp.body, |stack, step| {
        let name = stack.last().map(String::as_str).unwrap_or("");
        match step {
            Step::Open if name == answer => saw_answer = true,
            Step::Open => {}
            Step::Close(text) => {
                let parent = stack.len().checked_sub(2).map(|i| stack[i].as_str());
                if parent == Some(answer.as_str()) && args.len() < 16 {
                    args.push((name.to_string(), text.to_string()));
                } else if name == "errorCode" {
                    code = text.parse().ok();
                } else if name == "errorDescription" {
                    description = printable(text);
                }
            }
        }
    });
    if resp.status == 200 {
        parsed?;
        if !saw_answer {
            return Err(UpnpError::Missing("answer to the action"));
        }
        return Ok(Soap::Done(args));
    }
    if description.is_empty() {
        description = code.map_or_else(
            || format!("HTTP {}", resp.status),
            |c| error_name(c).to_string(),
        );
    }
    Ok(Soap::Fault { code, description })
}

/// At most 64 printable ASCII characters of `text`.
fn printable(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .take(64)
        .collect()
}

/// The UPnP IGD name of an error code.
pub fn error_name(code: u16) -> &'static str {
    match code {
        401 => "Invalid Action",
        402 => "Invalid Args",
        501 => "Action Failed",
        606 => "Action not authorized",
        714 => "NoSuchEntryInArray",
        718 => "ConflictInMappingEntry",
        724 => "SamePortValuesRequired",
        725 => "OnlyPermanentLeasesSupported",
        726 => "RemoteHostOnlySupportsWildcard",
        727 => "ExternalPortOnlySupportsWildcard",
        728 => "NoPortMapsAvailable",
        729 => "ConflictWithOtherMechanisms",
        _ => "an error",
    }
}

/// The source an SSDP answer must come from to be believed about `url`: the same machine.
pub fn same_host(from: SocketAddr, url: &HttpUrl) -> bool {
    from.ip() == std::net::IpAddr::V4(*url.addr.ip())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Debian's miniupnpd 2.3.1 description, trimmed to the parts that matter.
    pub const MINIUPNPD: &str = "<?xml version=\"1.0\"?>\n<root xmlns=\"urn:schemas-upnp-org:device-1-0\"><device><serviceList><service><serviceType>urn:schemas-upnp-org:service:Layer3Forwarding:1</serviceType><controlURL>/ctl/L3F</controlURL></service></serviceList><deviceList><device><deviceList><device><serviceList><service><serviceType>urn:schemas-upnp-org:service:WANIPConnection:2</serviceType><serviceId>urn:upnp-org:serviceId:WANIPConn1</serviceId><controlURL>/ctl/IPConn</controlURL></service></serviceList></device></deviceList></device></deviceList></device></root>";

    #[test]
    fn the_description_names_the_ip_connection_and_its_control_url() {
        let at = HttpUrl::parse("http://10.78.1.1:36145/rootDesc.xml").unwrap();
        let igd = parse_description(MINIUPNPD.as_bytes(), &at).unwrap();
        assert_eq!(
            igd.control,
            HttpUrl::parse("http://10.78.1.1:36145/ctl/IPConn").unwrap()
        );
        assert!(igd.is_v2());
        // Relative URLs, URLBase, and the PPP service of a DSL router.
        let ppp = "<root><URLBase>http://192.168.0.1:5000/</URLBase><device><serviceList><service><serviceType>urn:schemas-upnp-org:service:WANPPPConnection:1</serviceType><controlURL>upnp/control?x=1&amp;y=2</controlURL></service></serviceList></device></root>";
        let igd = parse_description(ppp.as_bytes(), &at).unwrap();
        assert_eq!(igd.control.addr, "192.168.0.1:5000".parse().unwrap());
        assert_eq!(igd.control.path, "/upnp/control?x=1&y=2");
        assert!(!igd.is_v2());
    }

    #[test]
    fn hostile_descriptions_are_errors_not_crashes() {
        let at = HttpUrl::parse("http://10.0.0.1/d.xml").unwrap();
        let deep = "<a>".repeat(300_000) + &"</a>".repeat(300_000);
        assert!(matches!(
            parse_description(deep.as_bytes(), &at),
            Err(UpnpError::Xml(_))
        ));
        let bomb = "<?xml version=\"1.0\"?><!DOCTYPE l [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\">]><root><serviceType>&b;</serviceType></root>";
        assert!(matches!(
            parse_description(bomb.as_bytes(), &at),
            Err(UpnpError::Xml(_))
        ));
        let undeclared = "<root><serviceType>&b;</serviceType></root>";
        assert!(matches!(
            parse_description(undeclared.as_bytes(), &at),
            Err(UpnpError::Xml(_))
        ));
        assert_eq!(
            parse_description(b"<root/>", &at),
            Err(UpnpError::Missing("WANIPConnection service"))
        );
        // A control URL that is not plain http to an address.
        let https = MINIUPNPD.replace("/ctl/IPConn", "https://evil.example/x");
        assert!(parse_description(https.as_bytes(), &at).is_err());
    }

    #[test]
    fn ssdp_answers_give_the_location() {
        let ok = b"HTTP/1.1 200 OK\r\nCACHE-CONTROL: max-age=120\r\nST: urn:schemas-upnp-org:device:InternetGatewayDevice:1\r\nLOCATION: http://10.78.1.1:36145/rootDesc.xml\r\n\r\n";
        assert_eq!(parse_ssdp(ok).unwrap().path, "/rootDesc.xml");
        assert_eq!(
            parse_ssdp(b"NOTIFY * HTTP/1.1\r\nLOCATION: http://1.2.3.4/\r\n\r\n"),
            None
        );
        assert_eq!(
            parse_ssdp(b"HTTP/1.1 200 OK\r\nLocation: http://router.lan/x\r\n\r\n"),
            None
        );
        assert!(String::from_utf8(search(SEARCH_TARGETS[0]))
            .unwrap()
            .contains("ssdp:discover"));
    }

    #[test]
    fn soap_answers_and_faults() {
        let ok = Response {
            status: 200,
            body: b"<?xml version=\"1.0\"?><s:Envelope><s:Body><u:GetExternalIPAddressResponse xmlns:u=\"x\"><NewExternalIPAddress>203.0.113.7</NewExternalIPAddress></u:GetExternalIPAddressResponse></s:Body></s:Envelope>".to_vec(),
        };
        let a = parse_soap(&ok, "GetExternalIPAddress").unwrap();
        assert_eq!(a.arg("NewExternalIPAddress"), Some("203.0.113.7"));
        let fault = Response {
            status: 500,
            body: b"<s:Envelope><s:Body><s:Fault><faultcode>s:Client</faultcode><detail><UPnPError><errorCode>718</errorCode><errorDescription>ConflictInMappingEntry</errorDescription></UPnPError></detail></s:Fault></s:Body></s:Envelope>".to_vec(),
        };
        assert_eq!(
            parse_soap(&fault, "AddPortMapping").unwrap(),
            Soap::Fault {
                code: Some(718),
                description: "ConflictInMappingEntry".into()
            }
        );
        let bare = Response {
            status: 403,
            body: Vec::new(),
        };
        assert_eq!(
            parse_soap(&bare, "AddPortMapping").unwrap(),
            Soap::Fault {
                code: None,
                description: "HTTP 403".into()
            }
        );
        let wrong = Response {
            status: 200,
            body: b"<a>hi</a>".to_vec(),
        };
        assert!(parse_soap(&wrong, "AddPortMapping").is_err());
        let body = soap_body("urn:x:1", "DeletePortMapping", &delete_args(7845));
        assert!(
            body.contains("<NewExternalPort>7845</NewExternalPort>"),
            "{body}"
        );
    }
}
