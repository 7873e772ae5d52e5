//! The outgoing stream: the published frames some receiver still lacks ([`History`]), and
//! what each receiver, player or spectator, was sent and acknowledged of them and of the
//! notices ([`Stream`]); [`build_round`] writes its UPDATEs. Holds no inputs and no
//! publication policy (it sends what was published, and the advance it is given) and
//! imports nothing of the rest of the server.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::input::Inputs;

use super::super::frame::Frame;
use super::super::link::PeerLink;
use super::super::msg::{self, FrameRun, Notice, Update};
use super::super::stats::Traffic;

/// Desync notices queued per receiver at most (the first ones matter).
const MAX_DESYNC_NOTICES: usize = 8;
/// Datagrams one UPDATE round may be split into when a peer lacks more frames than fit one
/// (8 players whose input changes every frame fill one with about 60 frames).
const MAX_SEGMENTS: usize = 4;

/// What an UPDATE carried, kept until it is acknowledged (see [`PeerLink`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct SentUpdate {
    frames_end: Frame,
    notices_end: u32,
    /// The lead it named, if any.
    lead: Option<u8>,
}

/// Published frames `base..frontier` that some receiver still lacks, and the one before
/// them (the base their delta coding starts from).
#[derive(Debug)]
pub(super) struct History {
    pub frames: VecDeque<Inputs>,
    pub base: Frame,
}

impl History {
    pub fn new() -> History {
        History {
            frames: VecDeque::new(),
            base: Frame::ZERO,
        }
    }

    /// The next keyframe: every frame before it is published.
    pub fn frontier(&self) -> Frame {
        self.base.plus(self.frames.len() as u32)
    }

    /// Publishes the next frame.
    pub fn push(&mut self, inputs: Inputs) {
        self.frames.push_back(inputs);
    }

    /// Forgets frames every receiver holds (they all hold those before `oldest`), but the
    /// newest of them (the next UPDATE's first frame is delta-coded against it), and keeps
    /// `retain` for late streams.
    pub fn forget(&mut self, oldest: Frame, retain: usize) {
        while self.base.next() < oldest && self.frames.len() > retain {
            self.frames.pop_front();
            self.base = self.base.next();
        }
    }
}

/// What one receiver was sent and acknowledged of the published frames and the notices.
#[derive(Debug)]
pub(super) struct Stream {
    /// The receiver holds every frame before this one.
    pub acked: Frame,
    /// End of the frames sent to it so far: it holds at most these.
    sent_end: Frame,
    /// The first frame of its stream (0, or where a late joiner's or spectator's start
    /// state is): the UPDATE that starts there carries its first frame in full.
    first: Frame,
    /// The lead named in the newest UPDATE it acknowledged (it knows that one).
    lead_acked: Option<u8>,
    notices: VecDeque<(u32, Notice)>,
    next_notice: u32,
    /// The advance last told to it.
    advance_sent: Option<i8>,
    /// Something new to tell it (frames, notices): send without waiting for the timer.
    pub dirty: bool,
    /// Further segments of the current round, sent before anything else.
    pub queued: VecDeque<Vec<u8>>,
}

impl Stream {
    /// A stream that starts at `first`, with something to send at once.
    pub fn new(first: Frame) -> Stream {
        Stream {
            acked: first,
            sent_end: first,
            first,
            lead_acked: None,
            notices: VecDeque::new(),
            next_notice: 0,
            advance_sent: None,
            dirty: true,
            queued: VecDeque::new(),
        }
    }

    /// Starts the stream again at `start` (a fresh state); its notices stay.
    pub fn restart(&mut self, start: Frame) {
        self.acked = start;
        self.sent_end = start;
        self.first = start;
        self.lead_acked = None;
        self.queued.clear();
        self.dirty = true;
    }

    /// Queues a notice (desyncs only up to `MAX_DESYNC_NOTICES`).
    pub fn notify(&mut self, n: Notice) {
        let desyncs = self
            .notices
            .iter()
            .filter(|(_, n)| matches!(n, Notice::Desync { .. }))
            .count();
        if matches!(n, Notice::Desync { .. }) && desyncs >= MAX_DESYNC_NOTICES {
            return;
        }
        self.notices.push_back((self.next_notice, n));
        self.next_notice += 1;
        self.dirty = true;
    }

    /// The receiver acknowledged an UPDATE that carried `rec`.
    pub fn acked(&mut self, rec: SentUpdate) {
        self.acked = self.acked.max(rec.frames_end);
        if rec.lead.is_some() {
            self.lead_acked = rec.lead;
        }
        while self
            .notices
            .front()
            .is_some_and(|(id, _)| *id < rec.notices_end)
        {
            self.notices.pop_front();
        }
    }
}

/// When the next UPDATE to this receiver is due: its queued segments at once, new frames or
/// notices `batch` after the last send (or, past `listening_until`, at the resend timer),
/// else at the resend timer; each within the send budget.
pub(super) fn send_at(
    link: &PeerLink<SentUpdate>,
    stream: &Stream,
    batch: Duration,
    resend: Duration,
    listening_until: Option<Instant>,
) -> Option<Instant> {
    if !stream.queued.is_empty() {
        Some(link.last_send.unwrap_or(link.last_heard))
    } else if stream.dirty {
        let at = link.last_send.map_or(link.last_heard, |t| t + batch);
        let at = match (link.last_send, listening_until) {
            (Some(t), Some(until)) if at >= until => t + resend,
            _ => at,
        };
        Some(link.budget.ready_at(at))
    } else {
        link.last_send.map(|t| link.budget.ready_at(t + resend))
    }
}

/// What a round's UPDATE is built from.
pub(super) struct RoundCtx<'a> {
    pub frontier: Frame,
    pub history: &'a History,
    pub advance: f64,
    pub session: u32,
    pub players: u8,
    /// False for a spectator too far behind: acks and notices only.
    pub frames: bool,
}

/// Queues this round's UPDATE for one receiver, whose lead counts from sample `input_next`:
/// every frame it lacks, in up to `MAX_SEGMENTS` consecutive datagrams, each carrying the
/// unacknowledged notices.
pub(super) fn build_round(
    link: &mut PeerLink<SentUpdate>,
    s: &mut Stream,
    input_next: u32,
    ctx: &RoundCtx,
    now: Instant,
    total: &mut Traffic,
) {
    let frontier = ctx.frontier;
    let (hist_base, history) = (ctx.history.base, &ctx.history.frames);
    // In order, up to MAX_NOTICES, and up to MAX_NAMED_NOTICES of the named ones.
    let mut named = 0;
    let carried = s
        .notices
        .iter()
        .take(msg::MAX_NOTICES)
        .take_while(|(_, n)| {
            named += usize::from(matches!(n, Notice::Joined { .. }));
            named <= msg::MAX_NAMED_NOTICES
        })
        .count();
    let notices: Vec<Notice> = s.notices.iter().take(carried).map(|(_, n)| *n).collect();
    // Id after the last notice carried: acknowledging a segment covers those.
    let notices_end = match carried {
        0 => s.next_notice,
        n => s.notices[n - 1].0 + 1,
    };
    let mut from = s.acked.max(hist_base);
    for _ in 0..MAX_SEGMENTS {
        let start = (from.since(hist_base) as usize).min(history.len());
        let avail: Vec<Inputs> = if ctx.frames {
            history.range(start..).copied().collect()
        } else {
            Vec::new()
        };
        // The client holds frame `from - 1` (it acknowledged it, or it is the end of the
        // previous segment, which it must take before this one); one whose stream starts
        // at `from` holds nothing yet.
        let base = start
            .checked_sub(1)
            .filter(|_| from > s.first)
            .map(|i| history[i]);
        let n = msg::frames_fitting(&avail, msg::UPDATE_BIT_BUDGET);
        let head = link.next_head(now);
        let advance = msg::refresh(
            (ctx.advance * 16.0).round().clamp(-127.0, 127.0) as i8,
            &mut s.advance_sent,
            head.seq,
        );
        // The lead rides until the client acknowledges a datagram that names it.
        let lead = frontier.0.saturating_sub(input_next).min(255) as u8;
        let lead = (n > 0 && s.lead_acked != Some(lead)).then_some(lead);
        let update = Update {
            head,
            up_lossy: link.loss.lossy(),
            advance,
            frames: (n > 0).then(|| FrameRun {
                from,
                base,
                frames: avail[..n].to_vec(),
                lead,
            }),
            notices: notices.clone(),
        };
        // The client holds frames up to somewhere between what it acknowledged and the
        // end of all we sent (this round's earlier segments included).
        let refs = s.acked.0..=s.sent_end.0.max(from.0);
        from = from.plus(n as u32);
        s.sent_end = s.sent_end.max(from);
        let rec = SentUpdate {
            frames_end: from,
            notices_end,
            lead,
        };
        let bytes = msg::encode_update(ctx.session, ctx.players, &update, refs, link.acks.held());
        link.sent(now, &update.head, rec, bytes.len());
        total.sent(bytes.len(), link.header);
        s.queued.push_back(bytes);
        if n == 0 || from >= frontier {
            break;
        }
    }
    link.last_send = Some(now);
    s.dirty = false;
}
