//! The mapping machine's handling of the router's HTTP answers: UPnP's description, its
//! outside address, the mapping and its renewals and removal. Part of [`Mapper`]; it
//! imports only its parent.

use super::*;

impl Mapper {
    /// What an HTTP exchange with `id` brought: the bytes read, or why none.
    pub fn handle_http(&mut self, now: Instant, id: u32, result: Result<Vec<u8>, String>) {
        let read = result.as_ref().map_or(0, |b| b.len() as u64);
        self.stats.bytes_received += read + TCP_OVERHEAD;
        let response = result.and_then(|bytes| {
            http::parse(&bytes, true, MAX_DESCRIPTION)
                .map_err(|e| e.to_string())?
                .ok_or_else(|| "no answer".to_string())
        });
        // Renewals and removals first.
        match &mut self.phase {
            Phase::Mapped(held) if matches!(held.renewing, Some(Pending::Http(i)) if i == id) => {
                held.renewing = None;
                let soap = response
                    .as_ref()
                    .map_err(Clone::clone)
                    .and_then(|r| upnp::parse_soap(r, "AddPortMapping").map_err(|e| e.to_string()));
                return match soap {
                    Ok(Soap::Done(_)) => {
                        let (external, lease) = (held.mapping.external, held.mapping.lease);
                        let secs = lease.map_or(0, |d| d.as_secs() as u32);
                        self.renewed(now, external, secs)
                    }
                    Ok(Soap::Fault { description, .. }) => {
                        held.why = format!("the router refused: {description}");
                        self.renew_failed(now)
                    }
                    Err(e) => {
                        held.why = e;
                        self.renew_failed(now)
                    }
                };
            }
            Phase::Closing { pending, .. } => {
                let before = pending.len();
                pending.retain(|p| !matches!(p, Pending::Http(i) if *i == id));
                if pending.len() < before {
                    let ok = response.is_ok_and(|r| r.status == 200);
                    self.closed_if_done(ok);
                }
                return;
            }
            _ => {}
        }
        let UpnpLeg::Busy(igd, busy_id, step) = &self.upnp else {
            return;
        };
        if *busy_id != id {
            return;
        }
        let (igd, step) = (igd.clone(), step.clone());
        self.upnp = match (igd, step) {
            (_, Step::Describe(location)) => match response {
                Ok(r) if r.status == 200 => match upnp::parse_description(&r.body, &location) {
                    // Its actions must go to the machine that answered, nowhere else.
                    Ok(igd) if igd.control.addr.ip() == location.addr.ip() => UpnpLeg::Ready(igd),
                    Ok(igd) => UpnpLeg::Out(Out::Broken(format!(
                        "its control URL is on another machine ({})",
                        igd.control.addr.ip()
                    ))),
                    Err(e) => UpnpLeg::Out(Out::Broken(format!("its description: {e}"))),
                },
                Ok(r) => UpnpLeg::Out(Out::Broken(format!("its description: HTTP {}", r.status))),
                Err(e) => UpnpLeg::Out(Out::Broken(format!("its description: {e}"))),
            },
            (Some(igd), Step::ExternalIp) => {
                match response.and_then(|r| {
                    upnp::parse_soap(&r, "GetExternalIPAddress").map_err(|e| e.to_string())
                }) {
                    Ok(Soap::Fault { description, .. }) => UpnpLeg::Out(Out::Refused(description)),
                    Ok(answer) => match answer
                        .arg("NewExternalIPAddress")
                        .map(str::parse::<Ipv4Addr>)
                    {
                        Some(Ok(ip)) if usable_outside(ip, *self.cfg.internal.ip()) => {
                            let port = self.cfg.internal.port();
                            self.add(igd, ip, port, false, self.lease_secs(), 1)
                        }
                        Some(Ok(ip)) => UpnpLeg::Out(Out::Unusable(ip)),
                        _ => UpnpLeg::Out(Out::Broken("no outside address in its answer".into())),
                    },
                    Err(e) => UpnpLeg::Out(Out::Broken(e)),
                }
            }
            (
                Some(igd),
                Step::Add {
                    ip,
                    port,
                    any,
                    lease,
                    n,
                },
            ) => {
                let action = if any {
                    "AddAnyPortMapping"
                } else {
                    "AddPortMapping"
                };
                match response.and_then(|r| upnp::parse_soap(&r, action).map_err(|e| e.to_string()))
                {
                    Ok(Soap::Done(args)) => {
                        let reserved = args.iter().find(|(k, _)| k == "NewReservedPort");
                        match reserved.map(|(_, v)| v.parse::<u16>()) {
                            None if !any => {
                                UpnpLeg::Granted(igd, SocketAddrV4::new(ip, port), lease)
                            }
                            Some(Ok(p)) if p != 0 => {
                                UpnpLeg::Granted(igd, SocketAddrV4::new(ip, p), lease)
                            }
                            _ => UpnpLeg::Out(Out::Broken(
                                "no port in its AddAnyPortMapping answer".into(),
                            )),
                        }
                    }
                    Ok(Soap::Fault { code, description }) => match code {
                        // Taken: the IGD picks one (version 2), or the next port is tried.
                        Some(718) if igd.is_v2() && !any => self.add(igd, ip, port, true, lease, n),
                        Some(718) | Some(401) if n < UPNP_TRIES => {
                            let next = port.checked_add(1).unwrap_or(1024);
                            self.add(igd, ip, next, false, lease, n + 1)
                        }
                        Some(725) if lease != 0 => self.add(igd, ip, port, any, 0, n),
                        _ => UpnpLeg::Out(Out::Refused(description)),
                    },
                    Err(e) => UpnpLeg::Out(Out::Broken(e)),
                }
            }
            (None, _) => UpnpLeg::Out(Out::Broken("an answer out of turn".into())),
        };
        self.decide(now);
    }

    fn add(&mut self, igd: Igd, ip: Ipv4Addr, port: u16, any: bool, lease: u32, n: u16) -> UpnpLeg {
        let action = if any {
            "AddAnyPortMapping"
        } else {
            "AddPortMapping"
        };
        let id = self.soap(
            &igd,
            action,
            &upnp::add_args(port, self.cfg.internal, lease),
        );
        UpnpLeg::Busy(
            Some(igd),
            id,
            Step::Add {
                ip,
                port,
                any,
                lease,
                n,
            },
        )
    }
}
