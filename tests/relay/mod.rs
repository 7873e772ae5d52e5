//! A UDP relay that stands for a joiner's link in tests and benchmarks: it drops everything
//! for a while, or moves to a new port, as a Wi-Fi outage or a router's new mapping does,
//! and counts the bytes it carries.
#![allow(dead_code)] // each user takes a different subset

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What the relay is told to do.
#[derive(Default)]
struct Orders {
    /// Drop everything both ways until then.
    drop_until: Option<Instant>,
    /// Send on to the host from a new port (the joiner's address changes).
    rebind: bool,
}

/// A UDP relay in front of a joiner: the joiner sends to it, it sends on to the host from a
/// socket of its own (the address the host sees), and back. It can drop everything for a
/// while, or move to a new port, as a home router or a network change does.
pub struct Relay {
    pub port: u16,
    /// Bytes carried from the joiner to the host, and back (UDP payloads).
    pub up: Arc<AtomicU64>,
    pub down: Arc<AtomicU64>,
    orders: Arc<Mutex<Orders>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Relay {
    pub fn new(host: SocketAddr) -> Relay {
        let front = UdpSocket::bind("127.0.0.1:0").unwrap();
        front.set_nonblocking(true).unwrap();
        let port = front.local_addr().unwrap().port();
        let orders = Arc::new(Mutex::new(Orders::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (o, s) = (orders.clone(), stop.clone());
        let (up, down) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (u, dn) = (up.clone(), down.clone());
        let thread = std::thread::spawn(move || {
            let bind = || {
                let back = UdpSocket::bind("127.0.0.1:0").unwrap();
                back.set_nonblocking(true).unwrap();
                back
            };
            let mut back = bind();
            let mut client: Option<SocketAddr> = None;
            let mut buf = [0u8; 2048];
            while !s.load(Ordering::Relaxed) {
                let dropping = {
                    let mut o = o.lock().unwrap();
                    if std::mem::take(&mut o.rebind) {
                        back = bind();
                    }
                    o.drop_until.is_some_and(|t| Instant::now() < t)
                };
                let mut moved = false;
                while let Ok((n, from)) = front.recv_from(&mut buf) {
                    client = Some(from);
                    moved = true;
                    if !dropping {
                        u.fetch_add(n as u64, Ordering::Relaxed);
                        let _ = back.send_to(&buf[..n], host);
                    }
                }
                while let Ok((n, _)) = back.recv_from(&mut buf) {
                    moved = true;
                    if let (false, Some(c)) = (dropping, client) {
                        dn.fetch_add(n as u64, Ordering::Relaxed);
                        let _ = front.send_to(&buf[..n], c);
                    }
                }
                if !moved {
                    std::thread::sleep(Duration::from_micros(300));
                }
            }
        });
        Relay {
            port,
            up,
            down,
            orders,
            stop,
            thread: Some(thread),
        }
    }

    pub fn drop_for(&self, d: Duration) {
        self.orders.lock().unwrap().drop_until = Some(Instant::now() + d);
    }

    pub fn change_address(&self) {
        self.orders.lock().unwrap().rebind = true;
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
