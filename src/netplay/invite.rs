//! What a host tells its friends: the game's name and the exact `framelock join` command
//! to type, quoted for a shell. Words only: it must not import the link, the session or
//! the window.

use std::path::Path;

use crate::app::PlayOptions;

/// The content's file name, or what is played without content.
pub(super) fn game_name(play: &PlayOptions) -> String {
    match &play.content {
        Some(path) => path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into(),
        ),
        None if play.core == crate::host::CoreSource::Builtin => "the built-in game".into(),
        None => "the core without content".into(),
    }
}

/// The exact command a friend types to join: the address (and room), the core by name
/// when it is not the built-in one, and the content's file name.
pub(super) fn join_command(addr: &str, room: Option<&str>, play: &PlayOptions) -> String {
    join_command_for(addr, room, &play.core, play.content.as_deref())
}

fn join_command_for(
    addr: &str,
    room: Option<&str>,
    core: &crate::host::CoreSource,
    content: Option<&Path>,
) -> String {
    let mut cmd = format!("framelock join {addr}");
    if let Some(room) = room {
        cmd.push_str(&format!(" --room {}", shell_word(room)));
    }
    if let crate::host::CoreSource::Path(path) = core {
        if let Some(name) = crate::host::catalog::core_name(path) {
            cmd.push_str(&format!(" --core {}", shell_word(&name)));
        }
    }
    if let Some(name) = content.and_then(|p| p.file_name()) {
        cmd.push_str(&format!(" {}", shell_word(&name.to_string_lossy())));
    }
    cmd
}

/// The invite's notes: `first`, then the password if the session has one.
pub(super) fn invite_notes(first: Option<String>, password: bool) -> Vec<String> {
    let mut notes: Vec<String> = first.into_iter().collect();
    if password {
        notes.push("They need the password too (--password).".into());
    }
    notes
}

/// `word` quoted for a shell when it holds anything but plain characters.
pub(super) fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_.,+/:@%=".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_join_command_names_the_core_and_the_content_file_as_typed() {
        use crate::host::CoreSource;
        let gpgx = CoreSource::Path("/opt/cores/genesis_plus_gx_libretro.so".into());
        assert_eq!(
            join_command_for(
                "192.0.2.7:7845",
                None,
                &gpgx,
                Some(Path::new("/home/ana/roms/Sonic 2 (W).md"))
            ),
            "framelock join 192.0.2.7:7845 --core genesis_plus_gx 'Sonic 2 (W).md'"
        );
        assert_eq!(
            join_command_for(
                "play.example.org",
                Some("friday"),
                &CoreSource::Builtin,
                None
            ),
            "framelock join play.example.org --room friday"
        );
        assert_eq!(shell_word("it's.md"), "'it'\\''s.md'");
    }
}
