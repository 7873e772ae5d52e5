//! Chat between the session's machines and the [`ChatBoard`]: a message shown and logged,
//! the lines typed said, and the headless player's lines typed on standard input.

use std::io::{BufRead, IsTerminal};
use std::time::Instant;

use crate::app::options::PlayOptions;
use crate::frontend::chat_board::{ChatBoard, ChatShow, Shown, ShownFrom};
use crate::session::{ChatLine, ChatRefused, Participant};

/// The chat of the whole session, from the lobby on: `play`'s window shows it, and a
/// headless player's terminal lines go to it.
pub fn session_board(show: ChatShow, play: &mut PlayOptions) -> ChatBoard {
    let chat = ChatBoard::new(show);
    if play.headless {
        read_stdin(&chat);
    }
    play.chat = Some(chat.clone());
    chat
}

/// Logs and shows a message (someone else's, or this player's own) unless `--chat` hides it.
pub fn show(board: &ChatBoard, now: Instant, line: ChatLine) {
    if !board.shows(line.is_spectator()) {
        return;
    }
    tracing::info!("chat: {line}");
    let from = match line.from.player() {
        Some(p) => ShownFrom::Player { port: p.index() },
        None => ShownFrom::Spectator,
    };
    board.post(Shown {
        from,
        name: line.name,
        text: line.text,
        at: now,
    });
}

/// Says the lines typed since the last call; returns those said, to show and record. A
/// line typed while this player is not in the session (still joining, or reconnecting)
/// waits on the board for it; one refused (too fast) is noted there. Drain the
/// participant's `poll_transmit` afterwards.
pub fn say_typed(board: &ChatBoard, participant: &mut Participant, now: Instant) -> Vec<ChatLine> {
    let (mut said, mut wait) = (Vec::new(), Vec::new());
    for text in board.take_typed() {
        match participant.say(now, &text) {
            Ok(line) => said.push(line),
            Err(ChatRefused::NotConnected) => wait.push(text),
            Err(e) => {
                tracing::warn!("chat: {e}");
                board.note(now, e.to_string());
            }
        }
    }
    for text in wait {
        board.type_line(text);
    }
    said
}

/// Reads lines from standard input into `board`, if standard input is a terminal (a
/// script's pipe or `/dev/null` is not read: `--say` is for scripts). A thread of its own
/// blocks on the terminal; it ends with the process.
pub fn read_stdin(board: &ChatBoard) {
    if !std::io::stdin().is_terminal() {
        return;
    }
    tracing::info!("chat: type a line and press Enter to say it to everyone");
    let board = board.clone();
    let spawned = std::thread::Builder::new()
        .name("chat-stdin".into())
        .spawn(move || {
            for line in std::io::stdin().lock().lines() {
                match line {
                    Ok(line) if !line.trim().is_empty() => board.type_line(line),
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("chat: cannot read standard input: {e}");
    }
}
