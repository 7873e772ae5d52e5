//! CPU riders: a simple deterministic steering rule (look ahead, turn towards open space).

use crate::grid::{Dir, Grid};
use crate::rng::Rng;

/// How far ahead a rider counts free cells before deciding.
const LOOK: u32 = 64;
/// Keep going straight while at least this many cells are free ahead.
const SAFE_AHEAD: u32 = 6;
/// One move in this many, a CPU rider turns on a whim (if the turn is roomy).
const WANDER_ONE_IN: u32 = 48;
/// A whimsical turn needs this much room.
const WANDER_ROOM: u32 = 10;

/// The heading a CPU rider at `(x, y)` facing `dir` takes for its next move.
/// Consumes randomness from `rng`, which lives in the game state.
pub fn steer(grid: &Grid, x: u8, y: u8, dir: Dir, rng: &mut Rng) -> Dir {
    let ahead = grid.free_run(x, y, dir, LOOK);
    let left = grid.free_run(x, y, dir.left(), LOOK);
    let right = grid.free_run(x, y, dir.right(), LOOK);
    let coin = rng.below(2) == 0;
    if ahead >= SAFE_AHEAD {
        if rng.below(WANDER_ONE_IN) == 0 {
            let (first, second) = if coin {
                ((dir.left(), left), (dir.right(), right))
            } else {
                ((dir.right(), right), (dir.left(), left))
            };
            if first.1 >= WANDER_ROOM {
                return first.0;
            }
            if second.1 >= WANDER_ROOM {
                return second.0;
            }
        }
        return dir;
    }
    // Danger ahead: take whichever of the three has the most room; ties by coin flip.
    let mut best = (dir, ahead);
    let turns = if coin {
        [(dir.left(), left), (dir.right(), right)]
    } else {
        [(dir.right(), right), (dir.left(), left)]
    };
    for t in turns {
        if t.1 > best.1 {
            best = t;
        }
    }
    best.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::{GRID_H, GRID_W};

    #[test]
    fn turns_away_from_a_wall() {
        let g = Grid::default();
        let mut rng = Rng::default();
        // One cell from the right wall, heading right: must turn up or down.
        let x = (GRID_W - 2) as u8;
        for _ in 0..20 {
            let d = steer(&g, x, 50, Dir::Right, &mut rng);
            assert!(d == Dir::Up || d == Dir::Down, "{d:?}");
        }
    }

    #[test]
    fn picks_the_open_side() {
        let mut g = Grid::default();
        let y = (GRID_H / 2) as u8;
        // Wall of trail right ahead and a trail just above: only down is open.
        for yy in 0..GRID_H as u8 {
            g.set(40, yy, 1);
        }
        for xx in 0..40 {
            g.set(xx, y - 1, 2);
        }
        let mut rng = Rng::default();
        for _ in 0..20 {
            assert_eq!(steer(&g, 38, y, Dir::Right, &mut rng), Dir::Down);
        }
    }

    #[test]
    fn same_seed_same_choices() {
        let g = Grid::default();
        let (mut a, mut b) = (Rng::default(), Rng::default());
        for i in 0..500u32 {
            let x = (i % 150) as u8;
            assert_eq!(
                steer(&g, x, 20, Dir::Right, &mut a),
                steer(&g, x, 20, Dir::Right, &mut b)
            );
        }
    }
}
