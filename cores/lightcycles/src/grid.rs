//! The arena: a grid of cells, each empty or holding one seat's trail.

/// Arena width in cells.
pub const GRID_W: usize = 156;
/// Arena height in cells.
pub const GRID_H: usize = 102;
/// Number of cells; also the size of the memory exposed as system RAM.
pub const GRID_CELLS: usize = GRID_W * GRID_H;
/// A cell value meaning "no trail"; seat `i` writes `i + 1`.
pub const EMPTY: u8 = 0;

/// A heading on the grid.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Dir {
    Up = 0,
    Down = 1,
    Left = 2,
    Right = 3,
}

impl Dir {
    pub const ALL: [Dir; 4] = [Dir::Up, Dir::Down, Dir::Left, Dir::Right];

    /// Decodes a serialised heading.
    pub fn from_u8(v: u8) -> Option<Dir> {
        Dir::ALL.get(usize::from(v)).copied()
    }

    pub fn opposite(self) -> Dir {
        match self {
            Dir::Up => Dir::Down,
            Dir::Down => Dir::Up,
            Dir::Left => Dir::Right,
            Dir::Right => Dir::Left,
        }
    }

    /// The heading after a quarter turn to the left (counter-clockwise on screen).
    pub fn left(self) -> Dir {
        match self {
            Dir::Up => Dir::Left,
            Dir::Left => Dir::Down,
            Dir::Down => Dir::Right,
            Dir::Right => Dir::Up,
        }
    }

    pub fn right(self) -> Dir {
        self.left().opposite()
    }

    /// Cell offset of one step (y grows downwards).
    pub fn delta(self) -> (i32, i32) {
        match self {
            Dir::Up => (0, -1),
            Dir::Down => (0, 1),
            Dir::Left => (-1, 0),
            Dir::Right => (1, 0),
        }
    }
}

/// One step from `(x, y)` towards `dir`, or `None` when that leaves the arena (a wall).
pub fn step_from(x: u8, y: u8, dir: Dir) -> Option<(u8, u8)> {
    let (dx, dy) = dir.delta();
    let nx = i32::from(x) + dx;
    let ny = i32::from(y) + dy;
    if nx < 0 || ny < 0 || nx >= GRID_W as i32 || ny >= GRID_H as i32 {
        return None;
    }
    Some((nx as u8, ny as u8))
}

/// The trail grid, row-major, one byte per cell.
#[derive(Clone, PartialEq, Eq)]
pub struct Grid {
    cells: [u8; GRID_CELLS],
}

impl Default for Grid {
    fn default() -> Self {
        Grid {
            cells: [EMPTY; GRID_CELLS],
        }
    }
}

impl std::fmt::Debug for Grid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let used = self.cells.iter().filter(|&&c| c != EMPTY).count();
        write!(f, "Grid({used} cells used)")
    }
}

impl Grid {
    pub fn get(&self, x: u8, y: u8) -> u8 {
        self.cells[usize::from(y) * GRID_W + usize::from(x)]
    }

    pub fn set(&mut self, x: u8, y: u8, v: u8) {
        self.cells[usize::from(y) * GRID_W + usize::from(x)] = v;
    }

    pub fn is_free(&self, x: u8, y: u8) -> bool {
        self.get(x, y) == EMPTY
    }

    pub fn clear(&mut self) {
        self.cells.fill(EMPTY);
    }

    /// Removes one seat's whole trail (the cycle "derezzes" after a crash).
    pub fn erase(&mut self, value: u8) {
        for c in self.cells.iter_mut() {
            if *c == value {
                *c = EMPTY;
            }
        }
    }

    /// Free cells in a straight line from `(x, y)` towards `dir`, stopping at `limit`.
    pub fn free_run(&self, x: u8, y: u8, dir: Dir, limit: u32) -> u32 {
        let (mut cx, mut cy) = (x, y);
        let mut n = 0;
        while n < limit {
            match step_from(cx, cy, dir) {
                Some((nx, ny)) if self.is_free(nx, ny) => {
                    n += 1;
                    cx = nx;
                    cy = ny;
                }
                _ => break,
            }
        }
        n
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.cells
    }

    pub fn as_mut_bytes(&mut self) -> &mut [u8] {
        &mut self.cells
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walls_stop_steps() {
        assert_eq!(step_from(0, 5, Dir::Left), None);
        assert_eq!(step_from(0, 0, Dir::Up), None);
        assert_eq!(step_from((GRID_W - 1) as u8, 0, Dir::Right), None);
        assert_eq!(step_from(0, (GRID_H - 1) as u8, Dir::Down), None);
        assert_eq!(step_from(3, 3, Dir::Right), Some((4, 3)));
    }

    #[test]
    fn turns_are_quarter_turns() {
        for d in Dir::ALL {
            assert_eq!(d.left().right(), d);
            assert_ne!(d.left(), d.opposite());
            assert_eq!(d.left().left(), d.opposite());
        }
    }

    #[test]
    fn free_run_counts_to_the_first_trail() {
        let mut g = Grid::default();
        g.set(10, 4, 3);
        assert_eq!(g.free_run(5, 4, Dir::Right, 100), 4);
        assert_eq!(g.free_run(5, 4, Dir::Left, 100), 5);
        g.erase(3);
        assert!(g.is_free(10, 4));
    }
}
