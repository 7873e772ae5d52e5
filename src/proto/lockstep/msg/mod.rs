//! The CTRL (client -> server) and UPDATE (server -> client) bodies.
//!
//! Both follow the 1-byte lockstep `wire::Header` (and, on a link, precede the tag). Little endian; `rel` = the low 7 bits of a
//! counter in one byte, or its low 15 bits in two (`codec::put_rel`, `codec::put_seq`),
//! expanded by the receiver to the value nearest to what it expects next. Only the newest
//! datagram's rel fields are read (run starts, acks): a late one may have been written
//! against what the receiver held a while ago.
//!
//! ```text
//! common head (2 bytes, + 1 flags, + 1-2 ack, + 2 ts, + 3 echo, + 2 irtt)
//!   u8  flags     0x01 ack, 0x02 echo, 0x04 run, 0x08 extras, 0x10 per kind (CTRL: irtt
//!                 follows; UPDATE: "your CTRLs are being lost"), 0x20 ts, 0x40 CTRL: age
//!                 follows, UPDATE: advance follows, 0x80 the run's first item is
//!                 delta-coded against the one before it (which the receiver holds: it
//!                 acknowledged it); other bits must be 0. Left out when it is 0x85 (ack,
//!                 run, 0x80: about three CTRLs in four), which the header's short bit says
//!   u16 seq       this datagram's 16-bit wrapping sequence number (per direction)
//!   rel ack       newest seq received from the other side, written against the ack that
//!                 the newest of our datagrams it acknowledged carried        [ack]
//!   u16 ts        sender's clock, milliseconds, wrapping (every 16th datagram, and every
//!                 one while the sender has no round trip yet)               [ts]
//!   u16 echo_ts   newest ts received from the other side, echoed once      [echo]
//!   u8  hold_ms   how long ago that ts arrived (RTT = now - echo_ts - hold) [echo]
//!   u16 irtt_ms   CTRL only: input round trip, the client's 99th percentile of the time
//!                 from pushing a sample to receiving the frame that carries it; sent when
//!                 it changes and every 16th datagram                              [0x10]
//! CTRL
//!   extras: u8 n (bits 0-4: 0..=16 checksums, 0x40: this client's frame loop stood still
//!           lately (see `pause`; repeated until acknowledged), 0x80: a pause request
//!           follows; never 0),
//!           n x (varint frame, u32 low half of the machine checksum),
//!           [u8 request: bits 1-7 its number (wrapping; the server acts once per number),
//!            bit 0: 1 pause, 0 resume; repeated until a CTRL carrying it is acknowledged]
//!   run (last: it takes the rest of the datagram, so it has no count):
//!           rel first sample index, u8 age_ms: milliseconds since the newest sample was
//!           pushed, 0xff if not known (not in this datagram, or too old) [0x40; without it
//!           the age is 0: a CTRL leaves as its newest sample is pushed], bits:
//!           delta-coded pads (the first against sample `first - 1` with 0x80, else in
//!           full; then per sample as in `codec`), the last byte padded with 1 bits
//! UPDATE
//!   i8  advance   receiver's phase in 1/16 frames (> 0: its inputs arrive early, slow
//!                 down); when it changes and every 16th datagram                  [0x40]
//!   u8  extras    bits 0-5: notices after the run (0..=32), 0x40 lead follows, 0x80 mask
//!                 follows; never 0                                               [0x08]
//!   u8  lead      receiver's sample-to-frame offset at the end of the run; sent until a
//!                 datagram carrying its current value is acknowledged          [extras]
//!   u8  mask      players carried (others are neutral); without it, every slot of the
//!                 session. Sent when it makes the datagram smaller             [extras]
//!   run:    rel from, varint count (next keyframe = from + count), bits: frame-major
//!           delta-coded pads of the carried players (the first frame against frame
//!           `from - 1` with 0x80, else in full)
//!   notices: n x (u8 kind<<4 | peer, u32 frame); kind 1 = left, 2 = desync, 3 = joined
//!            (then u8 len + that many bytes of the player's name, at most 16), 4 = paused
//!            by peer at frame (no frame from it on is published until resumed), 5 =
//!            resumed by peer at frame, 6 = peer's pause request refused (the u32 is
//!            reason << 24 | seconds until it would be granted; reason 1 = too many pauses,
//!            2 = only the player who paused may resume yet)
//! ```
//! Fields that rarely change ride only in some datagrams: the budget of 2.5 KB/s per direction
//! (UDP/IP header and tag included) buys more datagrams, and so faster recovery from loss,
//! the smaller each one is; on a lossy link each side would send every frame if the budget
//! allowed. Mean sizes a joiner sends and receives, 2 players, 100 ms RTT, ±20 ms each way,
//! 5% loss, K = 2, bots pressing buttons, a checksum every 60 frames (the simulator,
//! `cargo bench --bench lockstep_sim -- datagram_sizes`): CTRL 9.2 bytes, UPDATE 13.2. That is what makes a CTRL
//! per frame nearly fit the budget with its 32 bytes of UDP/IP header and tag (60 x 41.2 =
//! 2472 B/s): 59 of the 60 fit the default 2450 B/s, where every CTRL left out costs a
//! sample a frame of waiting, and at 100 ms, ±20 ms each way, enough of those cost the lead
//! a frame. Hence a one-byte ack, no count for the CTRL's sample run, no flags byte
//! when it holds its usual value, and a timestamp in every 16th datagram only.
//!
//! Size cap: no datagram exceeds `wire::MAX_DATAGRAM` (1200). A CTRL holds one player's
//! samples: even changing every frame (at most 18 bits), more than 500 fit, far beyond 2 s.
//! An UPDATE holds every player's: 2 s of 8 players changing every frame is 8 x 120 x 18
//! bits = 2.2 KB, so the server cuts the range into up to 4 consecutive datagrams per round
//! (about 60 such frames each), each with its own sequence number. A client ignores a
//! segment that does not continue the frames it holds, so its ack never claims frames it
//! lacks; it comes again.
//!
//! Decoding never panics: every read is bounds-checked, counts are capped, and unknown flags
//! are rejected, as are trailing bytes after an UPDATE. A CTRL's run has no count, so a CTRL
//! cut at the end of a sample reads as the samples before the cut (all of them sent by the
//! client; UDP delivers a datagram whole or not at all, so this takes a forger).
//!
//! The bodies' items are in `items`, the common head's bits and codec in `head`, and each
//! body's codec in `ctrl` and `update`; each of those imports only the ones before it in
//! that list, and none imports this file.

mod ctrl;
mod head;
mod items;
#[cfg(test)]
mod tests;
mod update;

pub use ctrl::{decode_ctrl, encode_ctrl, pads_fitting};
pub use items::*;
pub use update::{decode_update, encode_update, frames_fitting};
