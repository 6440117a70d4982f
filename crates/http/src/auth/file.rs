//! The auth file: Karapace's `registry_authfile` layout, read unchanged, plus Covenant's
//! extensions (roles on users, grants to roles, the `Delete`, `Govern`, `Approve` and `Admin`
//! operations, `SubjectPrefix:` resources).
//!
//! ```json
//! {"users": [{"username": "alice", "algorithm": "scrypt", "salt": "...", "password_hash": "...",
//!             "roles": ["team-a"]}],
//!  "permissions": [{"username": "alice", "operation": "Write", "resource": "Subject:orders-.*"},
//!                  {"role": "team-a", "operation": "Read", "resource": "SubjectPrefix:shared."},
//!                  {"username": "ops", "operation": "Admin", "resource": "Config:"}]}
//! ```
//!
//! Password hashes are Karapace's: `base64(PBKDF2-HMAC-<sha1|sha256|sha512>(password, salt,
//! 5000))` or `base64(scrypt(password, salt, N=2^14, r=8, p=1, 64 bytes))`, the salt taken as
//! UTF-8 text. New entries use scrypt, which is memory-hard and which Karapace also reads.

use super::{Operation, ResourcePattern};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use subtle::ConstantTimeEq;

/// What can go wrong reading, checking or editing an auth file.
#[derive(Debug, thiserror::Error)]
pub enum AuthFileError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a valid auth file: {message}")]
    Syntax { path: PathBuf, message: String },
    #[error("unknown password algorithm '{0}' (expected scrypt, sha1, sha256 or sha512)")]
    Algorithm(String),
    #[error("unknown operation '{0}' (expected Read, Write, Delete, Govern, Approve or Admin)")]
    Operation(String),
    #[error("invalid resource '{resource}': {message}")]
    Resource { resource: String, message: String },
    #[error("permission entry {index} names neither a username nor a role")]
    NoGrantee { index: usize },
    #[error("user '{0}' is not in the file")]
    UnknownUser(String),
    #[error("the password is empty")]
    EmptyPassword,
    #[error("the system random source failed: {0}")]
    Random(String),
}

/// Writes `bytes` to a new file only its owner may read or write (mode 0600 on Unix): it
/// holds password hashes.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let _ = std::fs::remove_file(path);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// One user as stored.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct UserEntry {
    pub username: String,
    pub algorithm: String,
    pub salt: String,
    /// Karapace's name for it; its older files call it `password`.
    #[serde(alias = "password")]
    pub password_hash: String,
    /// Covenant extension: roles the user's grants may be given to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<String>,
}

/// One permission as stored: to a user (Karapace) or to a role (Covenant extension).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct PermissionEntry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    pub operation: String,
    pub resource: String,
}

/// The file's contents, kept in its on-disk shape so edits write back what was read.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct AuthFile {
    #[serde(default)]
    pub users: Vec<UserEntry>,
    /// Karapace's name for it; some of its files call it `acls`.
    #[serde(default, alias = "acls")]
    pub permissions: Vec<PermissionEntry>,
}

/// A password algorithm of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    Scrypt,
    Sha1,
    Sha256,
    Sha512,
}

/// Karapace's PBKDF2 iteration count.
const PBKDF2_ROUNDS: u32 = 5000;

impl Algorithm {
    pub fn parse(text: &str) -> Result<Algorithm, AuthFileError> {
        match text {
            "scrypt" => Ok(Algorithm::Scrypt),
            "sha1" => Ok(Algorithm::Sha1),
            "sha256" => Ok(Algorithm::Sha256),
            "sha512" => Ok(Algorithm::Sha512),
            other => Err(AuthFileError::Algorithm(other.to_string())),
        }
    }

    /// The stored form of `password` under `salt`.
    pub fn hash(self, password: &str, salt: &str) -> String {
        let (pw, salt) = (password.as_bytes(), salt.as_bytes());
        let derived = match self {
            Algorithm::Scrypt => {
                let mut out = [0u8; 64];
                // Constant parameters that `Params::new` accepts; the output length is valid.
                let params = scrypt::Params::new(14, 8, 1).expect("valid scrypt parameters");
                scrypt::scrypt(pw, salt, &params, &mut out).expect("valid scrypt output length");
                out.to_vec()
            }
            Algorithm::Sha1 => {
                pbkdf2::pbkdf2_hmac_array::<sha1::Sha1, 20>(pw, salt, PBKDF2_ROUNDS).to_vec()
            }
            Algorithm::Sha256 => {
                pbkdf2::pbkdf2_hmac_array::<sha2::Sha256, 32>(pw, salt, PBKDF2_ROUNDS).to_vec()
            }
            Algorithm::Sha512 => {
                pbkdf2::pbkdf2_hmac_array::<sha2::Sha512, 64>(pw, salt, PBKDF2_ROUNDS).to_vec()
            }
        };
        STANDARD.encode(derived)
    }
}

impl UserEntry {
    /// Whether `password` is this user's, compared in constant time.
    pub fn verify(&self, password: &str) -> bool {
        let Ok(algorithm) = Algorithm::parse(&self.algorithm) else {
            return false;
        };
        let computed = algorithm.hash(password, &self.salt);
        computed
            .as_bytes()
            .ct_eq(self.password_hash.as_bytes())
            .into()
    }
}

/// A random URL-safe salt, as Karapace's `karapace_mkpasswd` makes (16 random bytes).
fn new_salt() -> Result<String, AuthFileError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| AuthFileError::Random(e.to_string()))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

impl AuthFile {
    /// Reads and validates a file; a missing file is an error (use [`AuthFile::load_or_new`]
    /// to create one).
    pub fn load(path: &Path) -> Result<AuthFile, AuthFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| AuthFileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let file: AuthFile = serde_json::from_str(&text).map_err(|e| AuthFileError::Syntax {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        file.validate()?;
        Ok(file)
    }

    /// Like [`AuthFile::load`], but an absent file is an empty one.
    pub fn load_or_new(path: &Path) -> Result<AuthFile, AuthFileError> {
        if path.exists() {
            AuthFile::load(path)
        } else {
            Ok(AuthFile::default())
        }
    }

    /// Writes the file through a temporary sibling and a rename, so a server re-reading it
    /// never sees half of it.
    pub fn save(&self, path: &Path) -> Result<(), AuthFileError> {
        let write_error = |source| AuthFileError::Write {
            path: path.to_path_buf(),
            source,
        };
        let text = serde_json::to_string_pretty(self).expect("the auth file serializes");
        let tmp = path.with_extension("tmp-write");
        write_private(&tmp, (text + "\n").as_bytes()).map_err(write_error)?;
        std::fs::rename(&tmp, path).map_err(write_error)
    }

    /// Checks every algorithm, operation and resource, so a server never starts on a file
    /// it would half understand.
    pub fn validate(&self) -> Result<(), AuthFileError> {
        for user in &self.users {
            Algorithm::parse(&user.algorithm)?;
        }
        for (index, p) in self.permissions.iter().enumerate() {
            if p.username.is_none() && p.role.is_none() {
                return Err(AuthFileError::NoGrantee { index });
            }
            Operation::parse(&p.operation)?;
            ResourcePattern::parse(&p.resource)?;
        }
        Ok(())
    }

    pub fn user(&self, name: &str) -> Option<&UserEntry> {
        self.users.iter().find(|u| u.username == name)
    }

    /// Adds a user or replaces its password, hashed with scrypt under a fresh salt.
    pub fn set_password(&mut self, username: &str, password: &str) -> Result<(), AuthFileError> {
        if password.is_empty() {
            return Err(AuthFileError::EmptyPassword);
        }
        let salt = new_salt()?;
        let password_hash = Algorithm::Scrypt.hash(password, &salt);
        match self.users.iter_mut().find(|u| u.username == username) {
            Some(user) => {
                user.algorithm = "scrypt".into();
                user.salt = salt;
                user.password_hash = password_hash;
            }
            None => self.users.push(UserEntry {
                username: username.to_string(),
                algorithm: "scrypt".into(),
                salt,
                password_hash,
                roles: Vec::new(),
            }),
        }
        Ok(())
    }

    /// Grants `operation` on `resource` to a user; granting twice keeps one entry.
    pub fn grant(
        &mut self,
        username: &str,
        operation: &str,
        resource: &str,
    ) -> Result<(), AuthFileError> {
        let operation = Operation::parse(operation)?.name().to_string();
        ResourcePattern::parse(resource)?;
        let entry = PermissionEntry {
            username: Some(username.to_string()),
            role: None,
            operation,
            resource: resource.to_string(),
        };
        if !self.permissions.contains(&entry) {
            self.permissions.push(entry);
        }
        Ok(())
    }

    /// Removes a user's grant of `operation` on `resource`; returns whether one was there.
    pub fn revoke(
        &mut self,
        username: &str,
        operation: &str,
        resource: &str,
    ) -> Result<bool, AuthFileError> {
        let operation = Operation::parse(operation)?;
        let before = self.permissions.len();
        self.permissions.retain(|p| {
            !(p.username.as_deref() == Some(username)
                && Operation::parse(&p.operation).ok() == Some(operation)
                && p.resource == resource)
        });
        Ok(self.permissions.len() != before)
    }

    /// Every user's (or role's) rights as `grantee: operation on resource` lines.
    pub fn describe(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for user in &self.users {
            let roles = if user.roles.is_empty() {
                String::new()
            } else {
                format!(" (roles: {})", user.roles.join(", "))
            };
            lines.push(format!(
                "user {} [{}]{roles}",
                user.username, user.algorithm
            ));
            for p in self.permissions_of(Some(&user.username), &user.roles) {
                lines.push(format!("  {} on {}", p.operation, p.resource));
            }
        }
        for p in &self.permissions {
            if let Some(name) = &p.username
                && self.user(name).is_none()
            {
                lines.push(format!(
                    "grant to unknown user {name}: {} on {}",
                    p.operation, p.resource
                ));
            }
        }
        lines
    }

    fn permissions_of<'a>(
        &'a self,
        username: Option<&'a str>,
        roles: &'a [String],
    ) -> impl Iterator<Item = &'a PermissionEntry> {
        self.permissions.iter().filter(move |p| {
            (username.is_some() && p.username.as_deref() == username)
                || p.role.as_ref().is_some_and(|r| roles.contains(r))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Karapace's published test vectors (its integration auth file and README).
    #[test]
    fn karapace_hashes_verify() {
        let cases = [
            (
                "scrypt",
                "adminsalt",
                "admin",
                "AG7+ttm/skHjqEZ90yzEkgjy75yaqoucNnQPIP2S++1rYOPXEtm4+AF7WdDGj+J0sIPFdYC9nXYsvkB1xYDYkw==",
            ),
            (
                "sha512",
                "salt",
                "opensesame",
                "uofa7Uw+IolY0GDeCQApTVAUPlBthFYPFQ+QN+kKtXBzSwddiyLrNnIC2UQcA5X+hCL/mHNNqEMA30oIM4oqxA==",
            ),
            (
                "sha1",
                "third-salt",
                "secret",
                "SeUTCvKCE8rj6lHFkyFkhopktuY=",
            ),
            (
                "sha512",
                "iuLouaExTeg9ypqTxqP-dw",
                "secret",
                "R6ghYSXdLGsq6hkQcg8wT4xkD4QToxBhlp7NerTnyB077M+mD2qiN7ZxXCDb4aE+5lExu5P11UpMPYAcVYxSQA==",
            ),
            (
                "sha256",
                "salt",
                "secret",
                "7ZGPbVNZIB/myxbcOkz8BR/eQmW4Yy1zqkF3W7DSWMM=",
            ),
        ];
        for (algorithm, salt, password, hash) in cases {
            let user = UserEntry {
                username: "u".into(),
                algorithm: algorithm.into(),
                salt: salt.into(),
                password_hash: hash.into(),
                roles: vec![],
            };
            assert!(user.verify(password), "{algorithm} {salt}");
            assert!(
                !user.verify("wrong"),
                "{algorithm} accepts a wrong password"
            );
        }
    }

    #[test]
    fn karapace_file_reads_unchanged_and_edits_round_trip() {
        let text = r#"{"users":[{"username":"aladdin","algorithm":"sha512","salt":"salt",
            "password_hash":"uofa7Uw+IolY0GDeCQApTVAUPlBthFYPFQ+QN+kKtXBzSwddiyLrNnIC2UQcA5X+hCL/mHNNqEMA30oIM4oqxA=="}],
            "permissions":[{"username":"aladdin","operation":"Write","resource":"Subject:cave-.*"},
            {"username":"reader","operation":"Read","resource":"Config:"}]}"#;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("auth.json");
        std::fs::write(&path, text).unwrap();
        let mut file = AuthFile::load(&path).unwrap();
        assert!(file.user("aladdin").unwrap().verify("opensesame"));
        file.set_password("bob", "hunter2").unwrap();
        file.grant("bob", "govern", "SubjectPrefix:orders.")
            .unwrap();
        file.grant("bob", "Govern", "SubjectPrefix:orders.")
            .unwrap();
        file.save(&path).unwrap();
        let again = AuthFile::load(&path).unwrap();
        assert_eq!(again, file);
        let bob = again.user("bob").unwrap();
        assert_eq!(bob.algorithm, "scrypt");
        assert!(bob.verify("hunter2") && !bob.verify("hunter3"));
        assert_eq!(again.permissions.len(), 3);
        let mut edited = again.clone();
        assert!(
            edited
                .revoke("bob", "Govern", "SubjectPrefix:orders.")
                .unwrap()
        );
        assert!(
            !edited
                .revoke("bob", "Govern", "SubjectPrefix:orders.")
                .unwrap()
        );
        let described = file.describe().join("\n");
        assert!(
            described.contains("Govern on SubjectPrefix:orders."),
            "{described}"
        );
        assert!(
            described.contains("grant to unknown user reader"),
            "{described}"
        );
    }

    #[test]
    fn invalid_entries_are_refused() {
        let bad = [
            r#"{"users":[{"username":"a","algorithm":"md5","salt":"s","password_hash":"h"}]}"#,
            r#"{"permissions":[{"username":"a","operation":"Fly","resource":"Config:"}]}"#,
            r#"{"permissions":[{"username":"a","operation":"Read","resource":"Subject:("}]}"#,
            r#"{"permissions":[{"username":"a","operation":"Read","resource":"[z-a]"}]}"#,
            r#"{"permissions":[{"operation":"Read","resource":"Config:"}]}"#,
            r#"{"users": 3}"#,
        ];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("auth.json");
        for text in bad {
            std::fs::write(&path, text).unwrap();
            assert!(AuthFile::load(&path).is_err(), "accepted {text}");
        }
        let mut file = AuthFile::default();
        assert!(matches!(
            file.set_password("a", ""),
            Err(AuthFileError::EmptyPassword)
        ));
    }
}
