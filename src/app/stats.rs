//! `--stats-json FILE`: what a run did, written once at exit.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::wording::io_reason;

#[derive(Debug, thiserror::Error)]
#[error("cannot write stats {}: {}", .path.display(), io_reason(.io))]
pub struct StatsError {
    pub path: PathBuf,
    pub io: std::io::Error,
}

/// A core checksum as the stats file spells it: 16 lowercase hex digits.
pub fn checksum_hex(checksum: u64) -> String {
    format!("{checksum:016x}")
}

/// Writes `stats` as pretty JSON (parent directories created).
pub fn write(path: &Path, stats: &Map<String, Value>) -> Result<(), StatsError> {
    let err = |io| StatsError {
        path: path.to_path_buf(),
        io,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    let mut text = serde_json::to_string_pretty(stats).map_err(|e| err(e.into()))?;
    text.push('\n');
    std::fs::write(path, text).map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_json() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/stats.json");
        let mut m = Map::new();
        m.insert("checksum".into(), checksum_hex(0xab).into());
        write(&path, &m).unwrap();
        let back: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(back["checksum"], "00000000000000ab");
    }
}
