//! Core options (libretro "variables"): definitions registered by the core, values
//! requested by the caller, and the C strings handed back through GET_VARIABLE.

use std::collections::HashMap;
use std::ffi::{c_char, CString};

use super::HostError;

/// One option as the core declared it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionDef {
    pub key: String,
    pub description: String,
    /// Allowed values; never empty.
    pub values: Vec<String>,
    pub default: String,
}

impl OptionDef {
    /// Parses a v0 `SET_VARIABLES` value: `"Description; default|other|..."`.
    pub fn from_v0(key: &str, spec: &str) -> Option<OptionDef> {
        let (description, list) = spec.split_once("; ").or_else(|| spec.split_once(';'))?;
        let values: Vec<String> = list
            .trim_start()
            .split('|')
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
            .collect();
        let default = values.first()?.clone();
        Some(OptionDef {
            key: key.to_owned(),
            description: description.trim().to_owned(),
            values,
            default,
        })
    }

    /// Builds a definition from v1/v2 parts; an absent or unknown default means the first value.
    pub fn new(
        key: &str,
        description: &str,
        values: Vec<String>,
        default: Option<&str>,
    ) -> Option<OptionDef> {
        let first = values.first()?.clone();
        let default = match default {
            Some(d) if values.iter().any(|v| v == d) => d.to_owned(),
            _ => first,
        };
        Some(OptionDef {
            key: key.to_owned(),
            description: description.to_owned(),
            values,
            default,
        })
    }

    fn check(&self, value: &str) -> Result<(), HostError> {
        if self.values.iter().any(|v| v == value) {
            Ok(())
        } else {
            Err(HostError::InvalidOption {
                key: self.key.clone(),
                value: value.to_owned(),
                allowed: self.values.join("|"),
            })
        }
    }
}

/// The option store of one core instance.
#[derive(Default)]
pub struct Options {
    defs: Vec<OptionDef>,
    current: HashMap<String, String>,
    /// Values the caller set for keys the core has not registered (yet).
    pending: Vec<(String, String)>,
    /// Host-chosen defaults (e.g. for netplay); below caller values, never warned about.
    soft_defaults: Vec<(String, String)>,
    /// Strings returned through GET_VARIABLE. Superseded ones are retired, not freed,
    /// because a core may still hold the pointer it was given.
    issued: HashMap<String, CString>,
    retired: Vec<CString>,
    updated: bool,
    /// An invalid caller value met during registration (inside a callback, where it
    /// cannot be returned); reported by the next `Core` call that can fail.
    deferred_error: Option<HostError>,
}

impl Options {
    pub fn new(requested: &[(String, String)]) -> Options {
        Options {
            pending: requested.to_vec(),
            ..Options::default()
        }
    }

    /// Adds defaults that apply when the caller gave no value for the key.
    pub fn with_soft_defaults(mut self, defaults: &[(&str, &str)]) -> Options {
        self.soft_defaults = defaults
            .iter()
            .map(|&(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        self
    }

    /// Registers (or re-registers) definitions; applies pending caller values for them.
    pub fn register(&mut self, defs: Vec<OptionDef>) {
        for def in defs {
            let key = def.key.clone();
            let keep = self
                .current
                .get(&key)
                .filter(|v| def.values.contains(v))
                .cloned();
            let soft = self
                .soft_defaults
                .iter()
                .find(|(k, v)| *k == key && def.values.contains(v))
                .map(|(_, v)| v.clone());
            let mut value = keep.or(soft).unwrap_or_else(|| def.default.clone());
            if let Some(i) = self.pending.iter().position(|(k, _)| *k == key) {
                let (_, wanted) = self.pending.remove(i);
                match def.check(&wanted) {
                    Ok(()) => value = wanted,
                    Err(e) => {
                        tracing::error!("{e}");
                        self.deferred_error.get_or_insert(e);
                    }
                }
            }
            self.set_current(&key, value);
            match self.defs.iter_mut().find(|d| d.key == key) {
                Some(slot) => *slot = def,
                None => self.defs.push(def),
            }
        }
        self.updated = true;
    }

    fn set_current(&mut self, key: &str, value: String) {
        if self.current.get(key) == Some(&value) {
            return;
        }
        if let Some(old) = self.issued.remove(key) {
            self.retired.push(old);
        }
        self.current.insert(key.to_owned(), value);
        self.updated = true;
    }

    /// Sets a value. Keys the core has not registered are kept pending while
    /// `accept_unregistered` (before content is loaded: some cores register late).
    pub fn set(
        &mut self,
        key: &str,
        value: &str,
        accept_unregistered: bool,
    ) -> Result<(), HostError> {
        match self.defs.iter().find(|d| d.key == key) {
            Some(def) => {
                def.check(value)?;
                self.set_current(key, value.to_owned());
                Ok(())
            }
            None if accept_unregistered => {
                self.pending.retain(|(k, _)| k != key);
                self.pending.push((key.to_owned(), value.to_owned()));
                Ok(())
            }
            None => Err(HostError::UnknownOption(key.to_owned())),
        }
    }

    /// The pointer GET_VARIABLE answers with: the current value, or the caller's pending
    /// value for a key the core asks about without having declared it. Stays valid until
    /// the store is dropped.
    pub fn value_ptr(&mut self, key: &str) -> Option<*const c_char> {
        let value = match self.current.get(key) {
            Some(v) => v.clone(),
            None => self.pending.iter().find(|(k, _)| k == key)?.1.clone(),
        };
        let entry = self
            .issued
            .entry(key.to_owned())
            .or_insert_with(|| CString::new(value.replace('\0', "")).unwrap_or_default());
        Some(entry.as_ptr())
    }

    /// GET_VARIABLE_UPDATE: whether anything changed since the last query.
    pub fn take_updated(&mut self) -> bool {
        std::mem::take(&mut self.updated)
    }

    pub fn take_deferred_error(&mut self) -> Option<HostError> {
        self.deferred_error.take()
    }

    /// Caller values for keys the core never registered; drained (to warn once).
    pub fn take_unregistered(&mut self) -> Vec<(String, String)> {
        std::mem::take(&mut self.pending)
    }

    /// Every registered key with its current value, in registration order.
    pub fn values(&self) -> Vec<(String, String)> {
        self.defs
            .iter()
            .map(|d| {
                let v = self
                    .current
                    .get(&d.key)
                    .cloned()
                    .unwrap_or_else(|| d.default.clone());
                (d.key.clone(), v)
            })
            .collect()
    }

    pub fn definitions(&self) -> &[OptionDef] {
        &self.defs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn read(p: *const c_char) -> String {
        // SAFETY: pointers from value_ptr stay valid while the store lives.
        unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_owned()
    }

    #[test]
    fn parses_v0_specs() {
        let d = OptionDef::from_v0("gpgx_x", "Region; auto|ntsc-u|pal").unwrap();
        assert_eq!(d.description, "Region");
        assert_eq!(d.values, ["auto", "ntsc-u", "pal"]);
        assert_eq!(d.default, "auto");
        assert!(OptionDef::from_v0("k", "no separator").is_none());
        assert!(OptionDef::from_v0("k", "Empty; ").is_none());
        let d = OptionDef::new("k", "K", vec!["a".into(), "b".into()], Some("zz")).unwrap();
        assert_eq!(d.default, "a");
    }

    #[test]
    fn applies_requested_values_when_registered() {
        let mut o = Options::new(&[("k".into(), "b".into()), ("other".into(), "1".into())]);
        o.register(vec![OptionDef::from_v0("k", "K; a|b").unwrap()]);
        assert_eq!(o.values(), [("k".to_owned(), "b".to_owned())]);
        assert_eq!(read(o.value_ptr("k").unwrap()), "b");
        assert!(o.take_updated());
        assert!(!o.take_updated());
        assert_eq!(
            o.take_unregistered(),
            [("other".to_owned(), "1".to_owned())]
        );
        assert!(o.value_ptr("nope").is_none());
    }

    #[test]
    fn soft_defaults_yield_to_the_caller() {
        let soft = [("hiscores", "disabled"), ("other", "x")];
        let mut o = Options::new(&[]).with_soft_defaults(&soft);
        o.register(vec![
            OptionDef::from_v0("hiscores", "H; enabled|disabled").unwrap()
        ]);
        assert_eq!(o.values()[0].1, "disabled");
        assert!(o.take_unregistered().is_empty());
        let mut o =
            Options::new(&[("hiscores".into(), "enabled".into())]).with_soft_defaults(&soft);
        o.register(vec![
            OptionDef::from_v0("hiscores", "H; enabled|disabled").unwrap()
        ]);
        assert_eq!(o.values()[0].1, "enabled");
    }

    #[test]
    fn invalid_values_name_key_and_allowed_values() {
        let mut o = Options::new(&[("k".into(), "c".into())]);
        o.register(vec![OptionDef::from_v0("k", "K; a|b").unwrap()]);
        let e = o.take_deferred_error().unwrap().to_string();
        assert!(e.contains("k") && e.contains("a|b"), "{e}");
        assert_eq!(o.values()[0].1, "a");
        let e = o.set("k", "x", false).unwrap_err().to_string();
        assert!(e.contains("a|b"), "{e}");
        assert!(o.set("unknown", "x", false).is_err());
        assert!(o.set("late", "x", true).is_ok());
    }

    #[test]
    fn old_pointers_stay_valid_after_a_change() {
        let mut o = Options::new(&[]);
        o.register(vec![OptionDef::from_v0("k", "K; a|b").unwrap()]);
        let before = o.value_ptr("k").unwrap();
        o.set("k", "b", false).unwrap();
        assert!(o.take_updated());
        let after = o.value_ptr("k").unwrap();
        assert_eq!(read(before), "a");
        assert_eq!(read(after), "b");
    }
}
