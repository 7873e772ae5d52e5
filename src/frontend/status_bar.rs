//! The netplay status bar: rows of text in a black strip below the game's image.
//!
//! Drawn over the game, the status covered what arcade games keep in their top rows (the
//! score, player 1's health bar), and the game's own text ran on beside it. Below the image
//! it hides nothing; the window grows by the strip. The line arrives as " | "-separated
//! segments (`Feed::status_line`), packed onto as few rows as the image's width allows.

use lightcycles::font::{glyph, ADVANCE, GLYPH_H, GLYPH_W};

/// Rows a netplay window reserves at least: the player's own numbers and the peers' (a
/// 2-player session's fit on two rows down to 224 pixels wide, a vertical game's).
pub const DEFAULT_ROWS: u32 = 2;

/// Grey level of the rule between the game and the bar.
const RULE: u8 = 96;

/// Pixel rows one text row takes: the glyph plus a pixel of space above and below.
const ROW_H: usize = GLYPH_H + 2;

/// Height in pixels of a bar with `rows` rows of text (0 rows: no bar): the rule, the rows
/// and a pixel below the last.
pub fn height(rows: u32) -> u32 {
    if rows == 0 {
        0
    } else {
        (rows as usize * ROW_H + 2) as u32
    }
}

/// Splits `line` into rows no wider than `width` pixels: segments stay whole on one row
/// when they fit, two spaces apart; a segment longer than a row breaks at its spaces, and
/// a word longer than a row is cut.
pub fn layout(line: &str, width: u32) -> Vec<String> {
    let cols = (width as usize).saturating_sub(2) / ADVANCE;
    let mut rows: Vec<String> = Vec::new();
    if cols == 0 {
        return rows;
    }
    let mut row = String::new();
    for segment in line.split(" | ").map(str::trim).filter(|s| !s.is_empty()) {
        if segment.chars().count() <= cols {
            put(segment, "  ", cols, &mut rows, &mut row);
        } else {
            // Start the long segment on a row of its own, then wrap it word by word.
            if !row.is_empty() {
                rows.push(std::mem::take(&mut row));
            }
            for word in segment.split(' ').filter(|w| !w.is_empty()) {
                put(word, " ", cols, &mut rows, &mut row);
            }
        }
    }
    if !row.is_empty() {
        rows.push(row);
    }
    rows
}

/// Appends `piece` to `row`, `gap` apart, or starts a new row with it (cut to `cols`).
fn put(piece: &str, gap: &str, cols: usize, rows: &mut Vec<String>, row: &mut String) {
    let len = |s: &str| s.chars().count();
    if !row.is_empty() && len(row) + len(gap) + len(piece) <= cols {
        row.push_str(gap);
        row.push_str(piece);
    } else {
        if !row.is_empty() {
            rows.push(std::mem::take(row));
        }
        row.extend(piece.chars().take(cols));
    }
}

/// Fills the bar (the frame's pixel rows from `top` down, `width` pixels wide) with black
/// under a grey rule and writes `rows` into it, white, in the built-in game's 5x7 font.
/// Rows that do not fit are left out.
pub fn draw(frame: &mut [u8], width: u32, top: u32, rows: &[String]) {
    let width = width as usize;
    let height = frame.len() / 4 / width.max(1);
    let top = (top as usize).min(height);
    for px in frame[top * width * 4..height * width * 4].chunks_exact_mut(4) {
        px.copy_from_slice(&[0, 0, 0, 255]);
    }
    // A grey rule on the bar's top row tells the game's own bottom line from the status.
    if top < height {
        for px in frame[top * width * 4..(top + 1) * width * 4].chunks_exact_mut(4) {
            px.copy_from_slice(&[RULE, RULE, RULE, 255]);
        }
    }
    write(frame, width as u32, (1, top + 2), rows);
}

/// Writes `rows` white in the built-in game's 5x7 font, the first glyph's top-left corner
/// at `(x0, y0)`, a text row every `ROW_H` pixels. Rows that do not fit are left out.
pub fn write(frame: &mut [u8], width: u32, (x0, y0): (usize, usize), rows: &[String]) {
    let width = width as usize;
    let height = frame.len() / 4 / width.max(1);
    for (r, text) in rows.iter().enumerate() {
        let y = y0 + r * ROW_H;
        if y + GLYPH_H > height {
            break;
        }
        for (i, c) in text.chars().enumerate() {
            for (gy, bits) in glyph(c.to_ascii_uppercase()).iter().enumerate() {
                for gx in 0..GLYPH_W {
                    let x = x0 + i * ADVANCE + gx;
                    if bits & (1 << (GLYPH_W - 1 - gx)) != 0 && x < width {
                        frame[((y + gy) * width + x) * 4..][..4].fill(255);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_pack_onto_rows_and_long_ones_wrap_at_spaces() {
        let line = "K 2 lead 9 stalls 0 up 19.2 down 19.4 kbit/s | P2 98 ms 9.6/9.7 | P3 120 ms \
                    9.6/9.7";
        // 320 pixels: 53 columns. The first segment is 44; the peers share the second row.
        assert_eq!(
            layout(line, 320),
            [
                "K 2 lead 9 stalls 0 up 19.2 down 19.4 kbit/s",
                "P2 98 ms 9.6/9.7  P3 120 ms 9.6/9.7"
            ]
        );
        // A wide image takes everything on one row.
        assert_eq!(layout(line, 640).len(), 1);
        // 224 pixels (a vertical arcade game): 37 columns, the first segment wraps at a space
        // and its tail shares a row with the first peer.
        let rows = layout(line, 224);
        assert_eq!(
            rows,
            [
                "K 2 lead 9 stalls 0 up 19.2 down 19.4",
                "kbit/s  P2 98 ms 9.6/9.7",
                "P3 120 ms 9.6/9.7"
            ]
        );
        assert!(rows.iter().all(|r| r.chars().count() <= 37));
        // A word longer than a row is cut, never overflows; a frame too narrow for a
        // glyph gets no rows.
        assert_eq!(layout("ABCDEFGHIJ", 6 * 4 + 2), ["ABCD"]);
        assert!(layout("RTT 5 MS", 4).is_empty());
        assert!(layout("", 320).is_empty());
    }

    #[test]
    fn the_bar_is_drawn_below_the_game_and_leaves_the_game_alone() {
        let (w, game_h) = (120usize, 20usize);
        let h = game_h + height(2) as usize;
        // A white frame stands for the game's image (and what the bar held before).
        let mut frame = vec![255u8; w * h * 4];
        let rows = layout("LEAD 2 | RTT 1 MS", w as u32);
        assert_eq!(rows.len(), 1);
        draw(&mut frame, w as u32, game_h as u32, &rows);
        let rgb = |x: usize, y: usize| frame[(y * w + x) * 4..][..3].to_vec();
        // Every pixel of the game is untouched.
        assert!(frame[..game_h * w * 4].iter().all(|b| *b == 255));
        // A grey rule on its first row; black where there is no text, to its right edge
        // and its last row.
        assert_eq!(rgb(0, game_h), [RULE, RULE, RULE]);
        assert_eq!(rgb(w - 1, game_h), [RULE, RULE, RULE]);
        assert_eq!(rgb(w - 1, game_h + 1), [0, 0, 0]);
        assert_eq!(rgb(w - 1, h - 1), [0, 0, 0]);
        assert_eq!(rgb(0, h - 1), [0, 0, 0]);
        // The text is there: "L" has a full left column.
        assert_eq!(rgb(1, game_h + 2), [255, 255, 255]);
        assert_eq!(rgb(1, game_h + 2 + GLYPH_H - 1), [255, 255, 255]);
        assert_eq!(rgb(1, game_h + 2 + GLYPH_H), [0, 0, 0]);
        // More rows than the bar holds are left out, without panicking.
        let many: Vec<String> = (0..5).map(|i| format!("ROW {i}")).collect();
        draw(&mut frame, w as u32, game_h as u32, &many);
        assert_eq!(height(0), 0);
        assert_eq!(height(2), 2 * (GLYPH_H as u32 + 2) + 2);
    }
}
