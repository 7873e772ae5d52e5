//! The headless player's chat input: lines typed on standard input, when it is a terminal.

use std::io::{BufRead, IsTerminal};

use crate::app::chat_board::ChatBoard;

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
