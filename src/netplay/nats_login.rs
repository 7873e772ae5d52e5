//! How a fleet server signs in to NATS: [`NatsAuth`] is what `serve --directory-*` and the
//! environment ask for, [`NatsLogin`] the same read and checked, and [`Secret`] a value that
//! is never printed. Secrets come from files or the environment, never the command line; a
//! missing or wrong file is an error naming it when serve starts, not a failed connection
//! later. Must not import the directory client, the serve loop or the window.

use std::fmt;
use std::path::{Path, PathBuf};

use super::NetplayError;

/// A secret read from a file or the environment: never printed.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(pub String);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// Environment variable holding the NATS password when no `--directory-password-file`.
pub const PASSWORD_ENV: &str = "FRAMELOCK_DIRECTORY_PASSWORD";
/// Environment variable holding the NATS token when no `--directory-token-file`.
pub const TOKEN_ENV: &str = "FRAMELOCK_DIRECTORY_TOKEN";

/// How a fleet server signs in to NATS, as asked (`serve --directory-*` flags and the
/// environment); [`NatsAuth::load`] reads and checks the files. One way of signing in at
/// most: user and password, a token, an nkey seed, or a `.creds` file (JWT and nkey).
#[derive(Clone, Debug, Default)]
pub struct NatsAuth {
    pub user: Option<String>,
    pub password_file: Option<PathBuf>,
    /// [`PASSWORD_ENV`]'s value (used without `password_file`).
    pub password_env: Option<Secret>,
    pub token_file: Option<PathBuf>,
    /// [`TOKEN_ENV`]'s value (used without `token_file`).
    pub token_env: Option<Secret>,
    /// A file holding an nkey user seed (`SU...`).
    pub nkey_file: Option<PathBuf>,
    /// A NATS `.creds` file.
    pub creds_file: Option<PathBuf>,
    /// CA certificates (PEM) to trust NATS's certificate with; TLS is then required.
    pub tls_ca: Option<PathBuf>,
    /// This server's certificate and key (PEM), for NATS that verifies clients.
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
}

/// [`NatsAuth`] read and checked: what [`NatsLogin::options`] gives the NATS client.
#[derive(Clone, Debug, Default)]
pub struct NatsLogin {
    user_password: Option<(String, Secret)>,
    token: Option<Secret>,
    nkey: Option<Secret>,
    creds: Option<Secret>,
    tls_ca: Option<PathBuf>,
    tls_client: Option<(PathBuf, PathBuf)>,
}

/// Warns when a secret file may be read by other users of the machine (as ssh does).
pub fn warn_if_shared(flag: &str, path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(meta) = std::fs::metadata(path) {
            if meta.permissions().mode() & 0o077 != 0 {
                tracing::warn!(
                    "serve: {flag} {}: other users of this machine may read it; \
                     `chmod 600` it",
                    path.display()
                );
            }
        }
    }
    #[cfg(not(unix))]
    let _ = (flag, path);
}

/// A secret file's text, trimmed; an error naming the flag and the file.
fn read_secret(flag: &str, path: &Path) -> Result<Secret, NetplayError> {
    warn_if_shared(flag, path);
    read_text(flag, path)
}

/// A file's text, trimmed; an error naming the flag and the file.
fn read_text(flag: &str, path: &Path) -> Result<Secret, NetplayError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        NetplayError::Directory(format!("{flag} {}: cannot read it: {e}", path.display()))
    })?;
    let text = text.trim();
    if text.is_empty() {
        return Err(NetplayError::Directory(format!(
            "{flag} {}: the file is empty",
            path.display()
        )));
    }
    Ok(Secret(text.to_string()))
}

/// A PEM file that must hold `what` ("CERTIFICATE", "PRIVATE KEY").
fn check_pem(flag: &str, path: &Path, what: &str) -> Result<PathBuf, NetplayError> {
    let text = if what == "PRIVATE KEY" {
        read_secret(flag, path)?
    } else {
        read_text(flag, path)?
    };
    if !text.0.contains("-----BEGIN ") || !text.0.contains(what) {
        return Err(NetplayError::Directory(format!(
            "{flag} {}: no PEM {what} in it",
            path.display()
        )));
    }
    Ok(path.to_path_buf())
}

impl NatsAuth {
    /// Reads the secrets and checks the files, so that a missing or wrong one is an error
    /// now, naming it, rather than a failed connection later.
    pub fn load(&self) -> Result<NatsLogin, NetplayError> {
        let err = |m: &str| NetplayError::Directory(m.to_string());
        let password = match (&self.password_file, &self.password_env) {
            (Some(f), _) => Some(read_secret("--directory-password-file", f)?),
            (None, Some(s)) if !s.0.is_empty() => Some(s.clone()),
            _ => None,
        };
        let user_password = match (&self.user, password) {
            (Some(u), Some(p)) => Some((u.clone(), p)),
            (Some(_), None) => {
                return Err(err(&format!(
                    "--directory-user needs a password: --directory-password-file FILE or \
                     {PASSWORD_ENV}"
                )))
            }
            (None, Some(_)) => {
                return Err(err(
                    "a NATS password needs --directory-user: the user it is for",
                ))
            }
            (None, None) => None,
        };
        let token = match (&self.token_file, &self.token_env) {
            (Some(f), _) => Some(read_secret("--directory-token-file", f)?),
            (None, Some(s)) if !s.0.is_empty() => Some(s.clone()),
            _ => None,
        };
        let nkey = match &self.nkey_file {
            Some(f) => {
                let seed = read_secret("--directory-nkey", f)?;
                match nkeys::KeyPair::from_seed(&seed.0) {
                    Ok(k) if k.key_pair_type() == nkeys::KeyPairType::User => Some(seed),
                    _ => {
                        return Err(err(&format!(
                            "--directory-nkey {}: not an nkey user seed (SU...)",
                            f.display()
                        )))
                    }
                }
            }
            None => None,
        };
        let creds = match &self.creds_file {
            Some(f) => {
                let text = read_secret("--directory-creds", f)?;
                if let Err(e) = async_nats::ConnectOptions::new().credentials(&text.0) {
                    return Err(err(&format!(
                        "--directory-creds {}: not a NATS .creds file: {e}",
                        f.display()
                    )));
                }
                Some(text)
            }
            None => None,
        };
        let ways = [
            user_password.is_some(),
            token.is_some(),
            nkey.is_some(),
            creds.is_some(),
        ];
        if ways.iter().filter(|w| **w).count() > 1 {
            return Err(err(
                "NATS takes one way of signing in: a user and password, a token, an nkey \
                 or a .creds file, not several",
            ));
        }
        let tls_ca = match &self.tls_ca {
            Some(f) => Some(check_pem("--directory-tls-ca", f, "CERTIFICATE")?),
            None => None,
        };
        let tls_client = match (&self.tls_cert, &self.tls_key) {
            (Some(c), Some(k)) => Some((
                check_pem("--directory-tls-cert", c, "CERTIFICATE")?,
                check_pem("--directory-tls-key", k, "PRIVATE KEY")?,
            )),
            (None, None) => None,
            _ => {
                return Err(err(
                    "--directory-tls-cert and --directory-tls-key go together",
                ))
            }
        };
        Ok(NatsLogin {
            user_password,
            token,
            nkey,
            creds,
            tls_ca,
            tls_client,
        })
    }
}

impl NatsLogin {
    /// The NATS client's options with this login (URLs starting `tls://` ask for TLS by
    /// themselves).
    pub fn options(&self) -> async_nats::ConnectOptions {
        let mut o = async_nats::ConnectOptions::new();
        if let Some((user, password)) = &self.user_password {
            o = o.user_and_password(user.clone(), password.0.clone());
        }
        if let Some(token) = &self.token {
            o = o.token(token.0.clone());
        }
        if let Some(seed) = &self.nkey {
            o = o.nkey(seed.0.clone());
        }
        if let Some(creds) = &self.creds {
            // Checked by `NatsAuth::load`.
            o = o
                .credentials(&creds.0)
                .unwrap_or_else(|_| async_nats::ConnectOptions::new());
        }
        if let Some(ca) = &self.tls_ca {
            o = o.add_root_certificates(ca.clone()).require_tls(true);
        }
        if let Some((cert, key)) = &self.tls_client {
            o = o
                .add_client_certificate(cert.clone(), key.clone())
                .require_tls(true);
        }
        o
    }

    /// How it signs in, for the log (no secret).
    pub fn describe(&self) -> String {
        let how = match self {
            NatsLogin {
                user_password: Some((u, _)),
                ..
            } => format!("as user {u}"),
            NatsLogin { token: Some(_), .. } => "with a token".into(),
            NatsLogin { nkey: Some(_), .. } => "with an nkey".into(),
            NatsLogin { creds: Some(_), .. } => "with a .creds file".into(),
            _ => "without credentials".into(),
        };
        if self.tls_ca.is_some() || self.tls_client.is_some() {
            format!("{how}, over TLS")
        } else {
            how
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(auth: NatsAuth) -> Result<NatsLogin, String> {
        auth.load().map_err(|e| e.to_string())
    }

    #[test]
    fn credentials_are_read_and_checked_when_serve_starts_and_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let missing = dir.path().join("missing");
        let e = load(NatsAuth {
            user: Some("fleet".into()),
            password_file: Some(missing.clone()),
            ..NatsAuth::default()
        })
        .unwrap_err();
        assert!(
            e.contains(&format!(
                "--directory-password-file {}: cannot read it",
                missing.display()
            )),
            "{e}"
        );
        let e = load(NatsAuth {
            user: Some("fleet".into()),
            ..NatsAuth::default()
        })
        .unwrap_err();
        assert!(e.contains(PASSWORD_ENV), "{e}");
        let e = load(NatsAuth {
            password_env: Some(Secret("pw".into())),
            ..NatsAuth::default()
        })
        .unwrap_err();
        assert!(e.contains("needs --directory-user"), "{e}");
        let empty = file("empty", "\n");
        let e = load(NatsAuth {
            token_file: Some(empty.clone()),
            ..NatsAuth::default()
        })
        .unwrap_err();
        assert!(e.contains("the file is empty"), "{e}");
        let junk = file("junk", "not a seed\n");
        for auth in [
            NatsAuth {
                nkey_file: Some(junk.clone()),
                ..NatsAuth::default()
            },
            NatsAuth {
                creds_file: Some(junk.clone()),
                ..NatsAuth::default()
            },
            NatsAuth {
                tls_ca: Some(junk.clone()),
                ..NatsAuth::default()
            },
        ] {
            let e = load(auth).unwrap_err();
            assert!(e.contains(&junk.display().to_string()), "{e}");
        }
        let e = load(NatsAuth {
            token_env: Some(Secret("t".into())),
            nkey_file: Some(file("seed", &nkeys::KeyPair::new_user().seed().unwrap())),
            ..NatsAuth::default()
        })
        .unwrap_err();
        assert!(e.contains("one way of signing in"), "{e}");
        // The password file's newline is not part of the password; nothing is printed.
        let login = load(NatsAuth {
            user: Some("fleet".into()),
            password_file: Some(file("pw", "s3cret-pw\n")),
            token_env: None,
            ..NatsAuth::default()
        })
        .unwrap();
        assert_eq!(
            login
                .user_password
                .as_ref()
                .map(|(u, p)| (u.as_str(), p.0.as_str())),
            Some(("fleet", "s3cret-pw"))
        );
        assert!(!format!("{login:?}").contains("s3cret"));
        assert_eq!(login.describe(), "as user fleet");
    }
}
