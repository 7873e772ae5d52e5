//! Battery-backed save RAM on disk: `<save_dir>/<content stem>.srm`, written atomically.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Where the SRAM of `content` lives.
pub fn path_for(save_dir: &Path, content: &Path) -> PathBuf {
    let stem = content.file_stem().unwrap_or(content.as_os_str());
    let mut name = stem.to_owned();
    name.push(".srm");
    save_dir.join(name)
}

/// Writes `bytes` to a temporary file beside `path`, syncs it, then renames it over
/// `path`, so a crash never leaves a truncated save.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut tmp_name = path.file_name().unwrap_or_default().to_owned();
    tmp_name.push(format!(".tmp{}", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_atomically_next_to_the_target() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_for(dir.path(), Path::new("/roms/sonic.md"));
        assert_eq!(path, dir.path().join("sonic.srm"));
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let entries = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(entries, 1, "no temporary file left behind");
    }
}
