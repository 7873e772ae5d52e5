//! Drawing a `Game` into a 320x240 XRGB8888 framebuffer (0x00RRGGBB per pixel).

use crate::font::{glyph, text_width, ADVANCE, GLYPH_H, GLYPH_W};
use crate::game::{Game, Mode, Phase, SeatKind, MAX_PLAYERS, SCREEN_H, SCREEN_W, SPARK_FRAMES};
use crate::grid::{GRID_H, GRID_W};

/// Pixels per grid cell (square).
pub const CELL: usize = 2;
/// Top-left pixel of the arena.
pub const ARENA_X: usize = 4;
pub const ARENA_Y: usize = 22;
const ARENA_PX_W: usize = GRID_W * CELL;
const ARENA_PX_H: usize = GRID_H * CELL;
/// Cells between the faint guide lines of the arena floor.
const GUIDE_EVERY: usize = 8;

const BLACK: u32 = 0x000000;
const FLOOR: u32 = 0x000A16;
const GUIDE: u32 = 0x0B2238;
const WALL: u32 = 0x2F6FD0;
const WHITE: u32 = 0xFFFFFF;
const GREY: u32 = 0x808890;
const TITLE: u32 = 0x40E0FF;
const PANEL: u32 = 0x00040A;

/// Each seat's colour, bright enough to tell apart on the dark floor.
pub const PLAYER_COLORS: [u32; MAX_PLAYERS] = [
    0xFF3C3C, 0x3CB4FF, 0xFFE03C, 0x3CFF64, 0xFF5AFF, 0xFF9628, 0x9A8CFF, 0xE8E8E8,
];

/// Trails are the seat colour at 3/4 brightness; heads are full brightness.
fn dim(c: u32) -> u32 {
    let r = ((c >> 16) & 0xFF) * 3 / 4;
    let g = ((c >> 8) & 0xFF) * 3 / 4;
    let b = (c & 0xFF) * 3 / 4;
    (r << 16) | (g << 8) | b
}

/// Mixes `c` towards black by `num/den`.
fn fade(c: u32, num: u32, den: u32) -> u32 {
    let r = ((c >> 16) & 0xFF) * num / den;
    let g = ((c >> 8) & 0xFF) * num / den;
    let b = (c & 0xFF) * num / den;
    (r << 16) | (g << 8) | b
}

/// Draws the whole frame. Does nothing if `fb` is smaller than 320x240.
pub fn draw(game: &Game, fb: &mut [u32]) {
    let Some(fb) = fb.get_mut(..SCREEN_W * SCREEN_H) else {
        return;
    };
    fb.fill(BLACK);
    draw_arena(game, fb);
    draw_sparks(game, fb);
    draw_hud(game, fb);
    draw_center(game, fb);
    draw_status(game, fb);
}

fn draw_arena(game: &Game, fb: &mut [u32]) {
    // Walls: a 2-pixel frame around the arena.
    fill_rect(
        fb,
        ARENA_X - 2,
        ARENA_Y - 2,
        ARENA_PX_W + 4,
        ARENA_PX_H + 4,
        WALL,
    );
    let mut trail = [0u32; MAX_PLAYERS + 1];
    for (i, c) in PLAYER_COLORS.iter().enumerate() {
        trail[i + 1] = dim(*c);
    }
    let cells = game.grid().as_bytes();
    for cy in 0..GRID_H {
        let row = &cells[cy * GRID_W..(cy + 1) * GRID_W];
        let line_row = cy % GUIDE_EVERY == 0;
        let y0 = ARENA_Y + cy * CELL;
        let start = y0 * SCREEN_W + ARENA_X;
        let px = &mut fb[start..start + ARENA_PX_W];
        for (cx, (&v, out)) in row.iter().zip(px.chunks_exact_mut(CELL)).enumerate() {
            let c = if v != 0 {
                trail[usize::from(v).min(MAX_PLAYERS)]
            } else if line_row || cx % GUIDE_EVERY == 0 {
                GUIDE
            } else {
                FLOOR
            };
            out.fill(c);
        }
        // Cells are square: repeat the pixel row.
        for dy in 1..CELL {
            fb.copy_within(start..start + ARENA_PX_W, start + dy * SCREEN_W);
        }
    }
    let show_heads = game.mode() != Mode::Join;
    for (seat, r) in game.riders().iter().enumerate() {
        if r.riding && show_heads {
            let x = ARENA_X + usize::from(r.x) * CELL;
            let y = ARENA_Y + usize::from(r.y) * CELL;
            // A blinking white core makes heads easy to find at round start.
            let c = if game.phase() == Phase::Ready && (game.frame() / 8).is_multiple_of(2) {
                WHITE
            } else {
                PLAYER_COLORS[seat]
            };
            fill_rect(fb, x, y, CELL, CELL, c);
        }
    }
}

fn draw_sparks(game: &Game, fb: &mut [u32]) {
    for (seat, s) in game.sparks.iter().enumerate() {
        if s.age == 0 {
            continue;
        }
        let age = u32::from(s.age);
        let c = fade(PLAYER_COLORS[seat], u32::from(SPARK_FRAMES) + 1 - age, 41);
        let cx = (ARENA_X + usize::from(s.x) * CELL + CELL / 2) as i32;
        let cy = (ARENA_Y + usize::from(s.y) * CELL + CELL / 2) as i32;
        let r = (age / 2 + 1) as i32;
        // Eight debris points flying outwards, plus a flash at the crash site.
        for (dx, dy) in [
            (1, 0),
            (-1, 0),
            (0, 1),
            (0, -1),
            (1, 1),
            (1, -1),
            (-1, 1),
            (-1, -1),
        ] {
            plot_arena(fb, cx + dx * r, cy + dy * r, c);
            plot_arena(fb, cx + dx * r + 1, cy + dy * r, c);
        }
        if age < 8 {
            for dy in -2..=2 {
                for dx in -2..=2 {
                    plot_arena(fb, cx + dx, cy + dy, WHITE);
                }
            }
        }
    }
}

/// Sets one pixel if it lies inside the arena.
fn plot_arena(fb: &mut [u32], x: i32, y: i32, c: u32) {
    let (ax, ay) = (ARENA_X as i32, ARENA_Y as i32);
    if x >= ax && y >= ay && x < ax + ARENA_PX_W as i32 && y < ay + ARENA_PX_H as i32 {
        fb[y as usize * SCREEN_W + x as usize] = c;
    }
}

fn draw_hud(game: &Game, fb: &mut [u32]) {
    match game.mode() {
        Mode::Match | Mode::MatchOver => {
            for (seat, s) in game.seats().iter().enumerate() {
                if s.kind == SeatKind::Absent {
                    continue;
                }
                let x = seat * 40 + 2;
                let riding = game.riders()[seat].riding || game.mode() == Mode::MatchOver;
                let c = if riding {
                    PLAYER_COLORS[seat]
                } else {
                    dim(dim(PLAYER_COLORS[seat]))
                };
                let tag = if s.kind == SeatKind::Cpu { 'C' } else { 'P' };
                draw_text(fb, x, 2, &format!("{tag}{} {}", seat + 1, s.points), c, 1);
                draw_text(fb, x, 11, &format!("{:05}", s.score.min(99_999)), c, 1);
            }
        }
        Mode::Attract | Mode::Join => {
            let t = "LIGHT CYCLES";
            draw_text(fb, 2, 2, t, TITLE, 1);
            let hi = format!("HI SCORE {:05}", game.hiscore().min(99_999));
            draw_text(fb, SCREEN_W - 2 - text_width(&hi, 1), 2, &hi, WHITE, 1);
            draw_text(fb, 2, 11, "1-8 PLAYERS", GREY, 1);
        }
    }
}

fn draw_center(game: &Game, fb: &mut [u32]) {
    let blink = (game.frame() / 20).is_multiple_of(2);
    let mid = ARENA_Y + ARENA_PX_H / 2;
    match game.mode() {
        Mode::Attract => {
            panel(fb, mid - 44, 88);
            centered(fb, mid - 38, "LIGHT CYCLES", TITLE, 3);
            let call = if game.settings().freeplay || game.credits() > 0 {
                "PRESS START"
            } else {
                "INSERT COIN"
            };
            if blink {
                centered(fb, mid - 4, call, WHITE, 2);
            }
            let hi = format!("HI SCORE {:05}", game.hiscore().min(99_999));
            centered(fb, mid + 24, &hi, GREY, 1);
            centered(fb, mid + 34, "SELECT: COIN   START: PLAY", GREY, 1);
        }
        Mode::Join => {
            panel(fb, mid - 50, 100);
            centered(fb, mid - 44, "PRESS START TO JOIN", WHITE, 1);
            let secs = u32::from(game.timer).div_ceil(60);
            centered(fb, mid - 32, &secs.to_string(), TITLE, 2);
            for (seat, s) in game.seats().iter().enumerate() {
                let col = seat % 2;
                let row = seat / 2;
                let x = SCREEN_W / 2 - 90 + col * 100;
                let y = mid - 8 + row * 12;
                let (label, c) = if s.kind == SeatKind::Human {
                    ("READY", PLAYER_COLORS[seat])
                } else {
                    ("---", dim(dim(PLAYER_COLORS[seat])))
                };
                draw_text(fb, x, y, &format!("P{} {label}", seat + 1), c, 1);
            }
        }
        Mode::Match => match game.phase() {
            Phase::Ready => {
                panel(fb, mid - 22, 40);
                centered(fb, mid - 16, &format!("ROUND {}", game.round()), WHITE, 2);
                if blink {
                    centered(fb, mid + 4, "GET READY", TITLE, 1);
                }
            }
            Phase::Riding => {}
            Phase::Over => {
                panel(fb, mid - 14, 28);
                match game.round_winner() {
                    Some(w) => {
                        let name = seat_name(game, w);
                        let t = format!("{name} WINS THE ROUND");
                        centered(fb, mid - 8, &t, PLAYER_COLORS[w], 2);
                    }
                    None => centered(fb, mid - 8, "DRAW", WHITE, 2),
                }
            }
        },
        Mode::MatchOver => {
            panel(fb, mid - 30, 56);
            if let Some(w) = game.match_winner() {
                let t = format!("{} WINS!", seat_name(game, w));
                centered(fb, mid - 24, &t, PLAYER_COLORS[w], 3);
            }
            if blink {
                centered(fb, mid + 8, "GAME OVER", WHITE, 2);
            }
        }
    }
}

fn seat_name(game: &Game, seat: usize) -> String {
    if game.seats()[seat].kind == SeatKind::Cpu {
        format!("CPU {}", seat + 1)
    } else {
        format!("P{}", seat + 1)
    }
}

fn draw_status(game: &Game, fb: &mut [u32]) {
    let y = SCREEN_H - 8;
    let credits = if game.settings().freeplay {
        "FREE PLAY".to_string()
    } else {
        format!("CREDITS {:02}", game.credits())
    };
    draw_text(fb, 4, y, &credits, WHITE, 1);
    if matches!(game.mode(), Mode::Match | Mode::MatchOver) {
        let round = format!("ROUND {:02}", game.round().min(99));
        centered(fb, y, &round, WHITE, 1);
        let hi = format!("HI {:05}", game.hiscore().min(99_999));
        draw_text(fb, SCREEN_W - 4 - text_width(&hi, 1), y, &hi, GREY, 1);
    }
}

/// A dark band across the arena behind centred text.
fn panel(fb: &mut [u32], y: usize, h: usize) {
    fill_rect(fb, ARENA_X, y, ARENA_PX_W, h, PANEL);
}

fn centered(fb: &mut [u32], y: usize, text: &str, c: u32, scale: usize) {
    let w = text_width(text, scale);
    draw_text(fb, SCREEN_W.saturating_sub(w) / 2, y, text, c, scale);
}

/// Fills a rectangle, clipped to the screen.
pub fn fill_rect(fb: &mut [u32], x: usize, y: usize, w: usize, h: usize, c: u32) {
    let x1 = (x + w).min(SCREEN_W);
    let y1 = (y + h).min(SCREEN_H);
    for yy in y.min(y1)..y1 {
        let row = yy * SCREEN_W;
        if x < x1 {
            fb[row + x..row + x1].fill(c);
        }
    }
}

/// Draws `text` with its top-left corner at `(x, y)`, each font pixel `scale` pixels wide;
/// clipped to the screen.
pub fn draw_text(fb: &mut [u32], x: usize, y: usize, text: &str, c: u32, scale: usize) {
    let mut pen = x;
    for ch in text.chars() {
        if ch != ' ' {
            let g = glyph(ch);
            for (gy, bits) in g.iter().enumerate().take(GLYPH_H) {
                for gx in 0..GLYPH_W {
                    if bits & (0x10 >> gx) != 0 {
                        fill_rect(fb, pen + gx * scale, y + gy * scale, scale, scale, c);
                    }
                }
            }
        }
        pen += ADVANCE * scale;
        if pen >= SCREEN_W {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_lands_where_asked_and_clips() {
        let mut fb = vec![0u32; SCREEN_W * SCREEN_H];
        draw_text(&mut fb, 10, 10, "I", WHITE, 1);
        // 'I' top row is 0x0E: columns 1..=3 lit.
        assert_eq!(fb[10 * SCREEN_W + 10], 0);
        assert_eq!(fb[10 * SCREEN_W + 11], WHITE);
        assert_eq!(fb[10 * SCREEN_W + 13], WHITE);
        assert_eq!(fb[10 * SCREEN_W + 14], 0);
        // Far off the edges: no panic, nothing drawn off-screen.
        draw_text(&mut fb, SCREEN_W - 3, SCREEN_H - 2, "WW", WHITE, 3);
        fill_rect(&mut fb, SCREEN_W + 5, 0, 10, 10, WHITE);
    }

    #[test]
    fn small_buffers_are_ignored() {
        let g = Game::default();
        let mut fb = vec![0u32; 100];
        draw(&g, &mut fb);
        assert!(fb.iter().all(|&p| p == 0));
    }
}
