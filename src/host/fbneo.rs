//! FBNeo reports a missing or incomplete romset only in its log (its `retro_load_game`
//! still returns true and it shows an error screen): read those lines back.

/// What FBNeo's log says about the romset it just tried to load.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct RomsetReport {
    /// "No romset found at ..." appeared for every location it searched.
    pub not_found: bool,
    /// A romset was found at some location.
    pub found: bool,
    /// ROM files named as required but absent or with a wrong CRC, in log order.
    pub missing: Vec<String>,
}

impl RomsetReport {
    /// Scans log lines (oldest first).
    pub fn from_log<S: AsRef<str>>(lines: &[S]) -> RomsetReport {
        let mut report = RomsetReport::default();
        for line in lines {
            let line = line.as_ref();
            if line.contains("No romset found at") {
                report.not_found = true;
            } else if line.contains("] Romset found at") {
                report.found = true;
            }
            // "[FBNeo] ROM at index N with name X and CRC 0x... is required"
            // "ROM with name X and CRC 0x... is missing"
            let name = rom_name(line, "ROM at index ", " is required")
                .or_else(|| rom_name(line, "ROM with name ", " is missing"));
            if let Some(name) = name {
                if !report.missing.iter().any(|m| m == name) {
                    report.missing.push(name.to_owned());
                }
            }
        }
        report
    }

    /// True if the set is unusable: never found, or found with required ROMs absent.
    pub fn is_incomplete(&self) -> bool {
        !self.missing.is_empty() || (self.not_found && !self.found)
    }
}

fn rom_name<'a>(line: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let rest = &line[line.find(start)?..];
    if !rest.contains(end) {
        return None;
    }
    let after = &rest[rest.find("with name ")? + "with name ".len()..];
    let name = &after[..after.find(" and CRC")?];
    (!name.is_empty()).then_some(name)
}

/// Whether a core is FBNeo (by its `library_name`).
pub fn is_fbneo(library_name: &str) -> bool {
    let name = library_name.to_ascii_lowercase();
    name.contains("fbneo") || name.contains("finalburn neo")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_missing_roms_from_the_log() {
        let log = [
            "[FBNeo] Searching all possible locations for romset sf2",
            "[FBNeo] No romset found at /tmp/x/sf2.zip",
            "[FBNeo] Romset found at /tmp/x/sf2.zip",
            "[FBNeo] ROM at index 0 with name sf2e_30g.11e and CRC 0xfe39ee33 is required",
            "[FBNeo] ROM at index 1 with name sf2e_37g.11f and CRC 0xfb92cd74 is required",
            "[FBNeo] ROM at index 0 with name sf2e_30g.11e and CRC 0xfe39ee33 is required",
        ];
        let r = RomsetReport::from_log(&log);
        assert!(r.is_incomplete());
        assert_eq!(r.missing, ["sf2e_30g.11e", "sf2e_37g.11f"]);
    }

    #[test]
    fn absent_set_is_incomplete_and_found_set_is_not() {
        let r = RomsetReport::from_log(&["[FBNeo] No romset found at /a/sf2.zip"]);
        assert!(r.is_incomplete() && r.missing.is_empty());
        let r = RomsetReport::from_log(&["[FBNeo] Romset found at /a/sf2.zip"]);
        assert!(!r.is_incomplete());
        assert!(is_fbneo("FinalBurn Neo") && !is_fbneo("Genesis Plus GX"));
    }
}
