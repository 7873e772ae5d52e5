//! Netplay chat over the game's picture: the last messages at the bottom of the image, each
//! sender's name in its player's colour (a spectator's grey and marked), and the line being
//! typed below them. The rows darken what they cover so that the text reads on any game.

use lightcycles::font::{glyph, ADVANCE, GLYPH_H, GLYPH_W};

use super::chat_board::{Shown, ShownFrom};

/// Name colours by player slot (P1 red, P2 blue, P3 green, P4 yellow), repeating.
pub const PLAYER_COLOURS: [[u8; 3]; 4] =
    [[255, 64, 64], [64, 128, 255], [64, 224, 64], [255, 224, 0]];
/// A spectator's name, and this program's notes.
pub const OTHER_COLOUR: [u8; 3] = [170, 170, 170];
const WHITE: [u8; 3] = [255, 255, 255];
/// Pixel rows one text row takes.
const ROW_H: usize = GLYPH_H + 3;

/// The colour of a line's sender.
pub fn colour(line: &Shown) -> [u8; 3] {
    match line.from {
        ShownFrom::Player { port } => PLAYER_COLOURS[port % PLAYER_COLOURS.len()],
        ShownFrom::Spectator | ShownFrom::Note => OTHER_COLOUR,
    }
}

/// Draws `lines` (oldest first) and the line being typed, if any, over the image: the top
/// `image_h` rows of `frame`, `width` pixels wide. A message too long for a row wraps;
/// the rows fill at most the lower half of the image, the newest kept.
pub fn draw(frame: &mut [u8], width: u32, image_h: u32, lines: &[Shown], typing: Option<&str>) {
    let cols = (width as usize).saturating_sub(4) / ADVANCE;
    if cols < 4 {
        return;
    }
    // (text, colour of its first `n` characters)
    let mut rows: Vec<(String, usize, [u8; 3])> = Vec::new();
    for l in lines {
        let head = match l.from {
            ShownFrom::Note => String::new(),
            ShownFrom::Spectator => format!("{} (spectator): ", l.name),
            ShownFrom::Player { .. } => format!("{}: ", l.name),
        };
        let all: Vec<char> = format!("{head}{}", l.text).chars().collect();
        let mut named = head.chars().count();
        for chunk in all.chunks(cols) {
            rows.push((chunk.iter().collect(), named.min(chunk.len()), colour(l)));
            named = named.saturating_sub(chunk.len());
        }
    }
    if let Some(t) = typing {
        // The newest characters stay in view, after a cursor.
        let line: Vec<char> = format!("say: {t}_").chars().collect();
        let start = line.len().saturating_sub(cols);
        rows.push((line[start..].iter().collect(), 4.min(line.len()), WHITE));
    }
    let max_rows = (image_h as usize / 2) / ROW_H;
    let rows = &rows[rows.len().saturating_sub(max_rows)..];
    let width = width as usize;
    let top = (image_h as usize).saturating_sub(rows.len() * ROW_H + 1);
    for (r, (text, named, name_colour)) in rows.iter().enumerate() {
        let y0 = top + r * ROW_H;
        darken(frame, width, y0, ROW_H);
        for (i, c) in text.chars().enumerate() {
            let colour = if i < *named { *name_colour } else { WHITE };
            put_glyph(frame, width, (2 + i * ADVANCE, y0 + 1), c, colour);
        }
    }
}

/// Darkens `rows` pixel rows from `y0` to a quarter of their brightness.
fn darken(frame: &mut [u8], width: usize, y0: usize, rows: usize) {
    let end = ((y0 + rows) * width * 4).min(frame.len());
    if let Some(area) = frame.get_mut(y0 * width * 4..end) {
        for px in area.chunks_exact_mut(4) {
            for c in &mut px[..3] {
                *c /= 4;
            }
        }
    }
}

fn put_glyph(frame: &mut [u8], width: usize, (x0, y0): (usize, usize), c: char, rgb: [u8; 3]) {
    for (gy, bits) in glyph(c.to_ascii_uppercase()).iter().enumerate() {
        for gx in 0..GLYPH_W {
            let x = x0 + gx;
            if bits & (1 << (GLYPH_W - 1 - gx)) != 0 && x < width {
                let at = ((y0 + gy) * width + x) * 4;
                if let Some(px) = frame.get_mut(at..at + 4) {
                    px[..3].copy_from_slice(&rgb);
                    px[3] = 255;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn count(frame: &[u8], rgb: [u8; 3]) -> usize {
        frame.chunks_exact(4).filter(|p| p[..3] == rgb).count()
    }

    #[test]
    fn names_show_in_their_players_colour_and_a_spectator_is_grey() {
        let (w, h) = (320u32, 240u32);
        let mut frame = vec![200u8; (w * h * 4) as usize];
        let line = |from, name: &str| Shown {
            from,
            name: name.into(),
            text: "gg".into(),
            at: Instant::now(),
        };
        let lines = [
            line(ShownFrom::Player { port: 1 }, "bob"),
            line(ShownFrom::Spectator, "eve"),
        ];
        draw(&mut frame, w, h, &lines, Some("hi"));
        assert!(count(&frame, PLAYER_COLOURS[1]) > 20, "bob in P2 blue");
        assert!(count(&frame, OTHER_COLOUR) > 20, "eve in grey");
        assert_eq!(count(&frame, PLAYER_COLOURS[0]), 0);
        // The top half is left alone; the rows darkened what they cover.
        assert!(frame[..(w * h * 2) as usize].iter().all(|&b| b == 200));
        assert!(frame.chunks_exact(4).any(|p| p[..3] == [50, 50, 50]));
    }
}
