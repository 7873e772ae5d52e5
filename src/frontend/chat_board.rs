//! [`ChatBoard`]: what the chat shows and what the player typed, shared by the netplay
//! driver (which says the typed lines and posts what arrives) and the frontend (the
//! window's overlay and input line, a headless player's standard input). It holds no
//! protocol: `session::chat` does.

use std::collections::VecDeque;
use std::str::FromStr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long a message stays over the picture.
pub const SHOWN_FOR: Duration = Duration::from_secs(8);
/// Messages over the picture at most (the latest).
pub const SHOWN_LINES: usize = 5;
/// Characters the window's input line takes: a message's limit (`session::chat::MAX_CHARS`).
pub const MAX_TYPED: usize = 200;

/// Whose messages a player sees (`--chat`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ChatShow {
    /// Everyone's.
    #[default]
    All,
    /// The players' only: spectators' messages are hidden.
    Players,
    /// None.
    Off,
}

impl FromStr for ChatShow {
    type Err = String;
    fn from_str(s: &str) -> Result<ChatShow, String> {
        match s {
            "all" => Ok(ChatShow::All),
            "players" => Ok(ChatShow::Players),
            "off" => Ok(ChatShow::Off),
            _ => Err(format!("--chat takes players, all or off, not {s:?}")),
        }
    }
}

/// Who a line over the picture is from: what its colour and its head say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShownFrom {
    /// The player on pad port `port` (0-based).
    Player {
        /// The port, 0-based.
        port: usize,
    },
    /// A spectator.
    Spectator,
    /// This program (a message refused).
    Note,
}

/// A line over the picture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shown {
    /// Who it is from.
    pub from: ShownFrom,
    /// The sender's name ("" for a note).
    pub name: String,
    /// The text.
    pub text: String,
    /// When it arrived.
    pub at: Instant,
}

#[derive(Debug, Default)]
struct Board {
    show: ChatShow,
    typed: VecDeque<String>,
    shown: VecDeque<Shown>,
    /// The window's input line is open (the player types).
    typing: bool,
}

/// See the module docs. Clones share one board.
#[derive(Clone, Debug, Default)]
pub struct ChatBoard(Arc<Mutex<Board>>);

impl ChatBoard {
    pub fn new(show: ChatShow) -> ChatBoard {
        let board = ChatBoard::default();
        board.lock().show = show;
        board
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Board> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a message from a sender so marked is shown.
    pub fn shows(&self, spectator: bool) -> bool {
        match self.lock().show {
            ChatShow::All => true,
            ChatShow::Players => !spectator,
            ChatShow::Off => false,
        }
    }

    /// The player typed `text` (Enter in the window, a line on standard input).
    pub fn type_line(&self, text: String) {
        self.lock().typed.push_back(text);
    }

    /// The lines typed since the last call, oldest first.
    pub fn take_typed(&self) -> Vec<String> {
        self.lock().typed.drain(..).collect()
    }

    /// Shows a message (the caller checked [`shows`](Self::shows)).
    pub fn post(&self, line: Shown) {
        let mut b = self.lock();
        b.shown.push_back(line);
        while b.shown.len() > SHOWN_LINES {
            b.shown.pop_front();
        }
    }

    /// Shows a note of this program's (a message refused).
    pub fn note(&self, at: Instant, text: String) {
        self.post(Shown {
            from: ShownFrom::Note,
            name: String::new(),
            text,
            at,
        });
    }

    /// The lines over the picture at `now`: the latest [`SHOWN_LINES`], none older than
    /// [`SHOWN_FOR`].
    pub fn visible(&self, now: Instant) -> Vec<Shown> {
        let mut b = self.lock();
        b.shown
            .retain(|l| now.saturating_duration_since(l.at) < SHOWN_FOR);
        b.shown.iter().cloned().collect()
    }

    /// The window's input line opened or closed.
    pub fn set_typing(&self, typing: bool) {
        self.lock().typing = typing;
    }

    /// The player types: its keyboard pad is neutral meanwhile.
    pub fn is_typing(&self) -> bool {
        self.lock().typing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_board_keeps_the_last_five_for_eight_seconds_and_filters() {
        let t0 = Instant::now();
        let b = ChatBoard::new(ChatShow::Players);
        assert!(b.shows(false) && !b.shows(true));
        assert!(!ChatBoard::new(ChatShow::Off).shows(false));
        for i in 0..7u64 {
            b.note(t0 + Duration::from_secs(i), format!("n{i}"));
        }
        let v = b.visible(t0 + Duration::from_secs(7));
        let texts: Vec<_> = v.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(texts, ["n2", "n3", "n4", "n5", "n6"]);
        assert_eq!(b.visible(t0 + Duration::from_secs(13)).len(), 1);
        b.type_line("hi".into());
        assert_eq!(b.take_typed(), ["hi"]);
        assert!(b.take_typed().is_empty());
    }
}
