//! What an exporter is asked to do, in Confluent's shape (`CreateExporterRequest`): which
//! subjects, under which names and in which context of the destination, and how to reach it.

use covenant_store::context;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where exported subjects land in the destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "UPPERCASE")]
pub enum ContextType {
    /// A context named after the exporter (`.{name}`).
    #[default]
    Auto,
    /// The context given in `context`.
    Custom,
    /// The subjects' own names, as they are.
    None,
}

/// An exporter's specification as stored and as `GET /exporters/{name}` answers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExporterSpec {
    pub name: String,
    /// Subject names or patterns (`*` matches any run of characters); `["*"]` by default.
    pub subjects: Vec<String>,
    pub context_type: ContextType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// How a subject is renamed in the destination: `${subject}` stands for its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject_rename_format: Option<String>,
    /// How a KEK is renamed in the destination's DEK Registry: `${kek}` stands for its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kek_rename_format: Option<String>,
    /// The destination: `schema.registry.url`, `basic.auth.user.info`, `bearer.auth.token`, ...
    pub config: BTreeMap<String, String>,
}

/// Why a specification is refused, with Confluent's error code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("Invalid exporter name '{0}'")]
    InvalidName(String),
    #[error("{0}")]
    InvalidConfig(String),
    #[error("Invalid subjects: {0}")]
    InvalidSubjects(String),
}

impl SpecError {
    pub fn error_code(&self) -> u32 {
        match self {
            SpecError::InvalidName(_) => 40950,
            SpecError::InvalidConfig(_) => 40951,
            SpecError::InvalidSubjects(_) => 40952,
        }
    }
}

pub const URL_KEY: &str = "schema.registry.url";

/// The config key that turns off copying the DEK Registry's keys (`"false"`); they are
/// copied by default, as Confluent's exporters copy them.
pub const EXPORT_KEYS_KEY: &str = "covenant.export.keys";

/// What the API shows instead of a credential; sent back in a change, it keeps the stored one.
pub const HIDDEN: &str = "[hidden]";

/// Whether a destination config key holds a credential: never answered by the API.
pub fn is_secret_key(key: &str) -> bool {
    let key = key.trim().to_ascii_lowercase();
    key == "basic.auth.user.info"
        || key == "bearer.auth.token"
        || ["password", ".key", "secret", "token", "user.info"]
            .iter()
            .any(|end| key.ends_with(end))
}

/// Splits `scheme://userinfo@rest` into its scheme part, userinfo and the rest; `None`
/// when the URL names no userinfo.
fn split_userinfo(url: &str) -> Option<(&str, &str, &str)> {
    let start = url.find("://")? + 3;
    let authority_end = url[start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| start + i);
    let at = url[start..authority_end].rfind('@')? + start;
    Some((&url[..start], &url[start..at], &url[at + 1..]))
}

/// The URL without the user name and password it may carry, for messages.
pub fn url_without_userinfo(url: &str) -> String {
    match split_userinfo(url) {
        Some((scheme, _, rest)) => format!("{scheme}{rest}"),
        None => url.to_string(),
    }
}

/// The URL with the user name and password it may carry replaced by [`HIDDEN`].
fn url_redacted(url: &str) -> String {
    match split_userinfo(url) {
        Some((scheme, _, rest)) => format!("{scheme}{HIDDEN}@{rest}"),
        None => url.to_string(),
    }
}

/// The password of the URL's userinfo, if it has one.
pub(crate) fn url_password(url: &str) -> Option<&str> {
    let (_, userinfo, _) = split_userinfo(url)?;
    userinfo
        .split_once(':')
        .map(|(_, password)| password)
        .filter(|p| !p.is_empty())
}

/// A destination config as the API shows it: credentials (and a password in the URL)
/// replaced by [`HIDDEN`].
pub fn redacted_config(config: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    config
        .iter()
        .map(|(k, v)| {
            let shown = if is_secret_key(k) {
                HIDDEN.to_string()
            } else if k == URL_KEY {
                url_redacted(v)
            } else {
                v.clone()
            };
            (k.clone(), shown)
        })
        .collect()
}

/// Puts the stored value back wherever `given` sends the redacted one (as a client that
/// read the config and changed another key does); a placeholder with nothing stored behind
/// it is refused rather than stored as a credential.
pub fn restore_hidden(
    given: &mut BTreeMap<String, String>,
    stored: &BTreeMap<String, String>,
) -> Result<(), SpecError> {
    for (key, value) in given.iter_mut() {
        if !value.contains(HIDDEN) {
            continue;
        }
        match stored.get(key) {
            Some(old) if is_secret_key(key) && value == HIDDEN => *value = old.clone(),
            Some(old) if key == URL_KEY && *value == url_redacted(old) => *value = old.clone(),
            _ => {
                return Err(SpecError::InvalidConfig(format!(
                    "config '{key}' holds the placeholder {HIDDEN}, and no value is stored to keep; give the value itself"
                )));
            }
        }
    }
    Ok(())
}

/// Subject patterns per exporter, and characters per pattern (a subject name's limit).
pub const MAX_PATTERNS: usize = 1000;
pub const MAX_PATTERN_CHARS: usize = 1024;

impl ExporterSpec {
    /// Checks what an exporter needs to run: a usable name, a destination URL, subject
    /// patterns and a context when `CUSTOM` asks for one.
    pub fn validate(&self) -> Result<(), SpecError> {
        let name_ok = !self.name.is_empty()
            && self.name.len() <= 255
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !name_ok {
            return Err(SpecError::InvalidName(self.name.clone()));
        }
        match self.config.get(URL_KEY) {
            Some(url) if url.starts_with("http://") || url.starts_with("https://") => {}
            _ => {
                return Err(SpecError::InvalidConfig(format!(
                    "The exporter config needs '{URL_KEY}', an http:// or https:// URL"
                )));
            }
        }
        if self.subjects.is_empty() || self.subjects.iter().any(|s| s.is_empty()) {
            return Err(SpecError::InvalidSubjects(
                "give at least one subject name or pattern".into(),
            ));
        }
        if self.subjects.len() > MAX_PATTERNS
            || self
                .subjects
                .iter()
                .any(|s| s.chars().count() > MAX_PATTERN_CHARS)
        {
            return Err(SpecError::InvalidSubjects(format!(
                "at most {MAX_PATTERNS} names or patterns of at most {MAX_PATTERN_CHARS} characters"
            )));
        }
        if let Some(format) = &self.kek_rename_format
            && covenant_registry::deks::check_name(&format.replace("${kek}", "k")).is_err()
        {
            return Err(SpecError::InvalidConfig(format!(
                "kekRenameFormat '{format}' does not make a valid KEK name (a letter or _ first, then letters, digits, _ and -)"
            )));
        }
        match self.config.get(EXPORT_KEYS_KEY).map(String::as_str) {
            None | Some("true") | Some("false") => {}
            Some(other) => {
                return Err(SpecError::InvalidConfig(format!(
                    "config '{EXPORT_KEYS_KEY}' must be true or false, not '{other}'"
                )));
            }
        }
        if self.context_type == ContextType::Custom {
            let given = self.context.as_deref().unwrap_or("");
            if given.is_empty() || context::normalize_context(given).is_none() {
                return Err(SpecError::InvalidConfig(format!(
                    "contextType CUSTOM needs a valid 'context', not '{given}'"
                )));
            }
        }
        Ok(())
    }

    /// This specification as the API shows it: credentials hidden.
    pub fn redacted(&self) -> ExporterSpec {
        ExporterSpec {
            config: redacted_config(&self.config),
            ..self.clone()
        }
    }

    /// Whether a source subject is exported.
    pub fn exports(&self, subject: &str) -> bool {
        self.subjects.iter().any(|p| glob(p, subject))
    }

    /// The destination context: `None` keeps each subject's own.
    fn destination_context(&self) -> Option<String> {
        match self.context_type {
            ContextType::None => None,
            ContextType::Auto => Some(format!(".{}", self.name)),
            ContextType::Custom => self.context.as_deref().and_then(context::normalize_context),
        }
    }

    /// Where the config of the source's `context` goes at the destination, when this exporter
    /// owns that context (its subjects include `*`, or `:.ctx:*` for a named context): `""`
    /// for the destination's global config, `:.ctx:` for a context's. `None` when it does
    /// not own the context, and for named source contexts under `CUSTOM` and `AUTO`, which
    /// fold into one destination context whose config is the source's global one.
    pub fn context_config_target(&self, source_context: &str) -> Option<String> {
        let default = source_context == context::DEFAULT_CONTEXT;
        let whole = format!("{}*", context::context_key(source_context));
        let owns = self
            .subjects
            .iter()
            .any(|p| p == "*" || (!default && *p == whole));
        if !owns {
            return None;
        }
        match (self.destination_context(), default) {
            (None, true) => Some(String::new()),
            (None, false) => Some(context::context_key(source_context)),
            (Some(destination), true) if destination == context::DEFAULT_CONTEXT => {
                Some(String::new())
            }
            (Some(destination), true) => Some(context::context_key(&destination)),
            (Some(_), false) => None,
        }
    }

    /// The destination subject of a source subject: renamed by `subjectRenameFormat`, then
    /// placed in the destination context (the source context is replaced by it).
    pub fn destination_subject(&self, subject: &str) -> String {
        let rename = |name: &str| match &self.subject_rename_format {
            Some(format) if !format.is_empty() => format.replace("${subject}", name),
            _ => name.to_string(),
        };
        match self.destination_context() {
            None => {
                let (ctx, name) = context::split(subject);
                context::qualify(ctx, &rename(name))
            }
            Some(ctx) => context::qualify(&ctx, &rename(context::unqualified(subject))),
        }
    }

    /// Whether the DEK Registry's keys of exported subjects are copied too.
    pub fn exports_keys(&self) -> bool {
        self.config.get(EXPORT_KEYS_KEY).map(String::as_str) != Some("false")
    }

    /// The destination name of a source KEK: renamed by `kekRenameFormat`. KEK names are
    /// registry-wide, so contexts do not apply to them.
    pub fn destination_kek(&self, kek: &str) -> String {
        match &self.kek_rename_format {
            Some(format) if !format.is_empty() => format.replace("${kek}", kek),
            _ => kek.to_string(),
        }
    }
}

/// `*`-wildcard matching (any run of characters) in time linear in the text: the pieces
/// between stars must appear in order, the first at the start and the last at the end, and
/// taking each piece at its earliest place is never worse (so no backtracking is needed).
/// Also how `covenant.toml` matches file names.
pub fn glob(pattern: &str, text: &str) -> bool {
    let pieces: Vec<&str> = pattern.split('*').collect();
    let [first, middle @ .., last] = pieces.as_slice() else {
        return pattern == text;
    };
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    for piece in middle {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(context_type: ContextType) -> ExporterSpec {
        ExporterSpec {
            name: "dr".into(),
            subjects: vec!["orders*".into(), "payments".into()],
            context_type,
            context: Some("prod".into()),
            subject_rename_format: Some("dc_${subject}".into()),
            kek_rename_format: Some("dc_${kek}".into()),
            config: BTreeMap::from([(URL_KEY.to_string(), "http://b:8081".to_string())]),
        }
    }

    #[test]
    fn subjects_match_names_and_patterns() {
        let s = spec(ContextType::None);
        assert!(s.exports("orders-value"));
        assert!(s.exports("payments"));
        assert!(!s.exports("payments-value"));
        assert!(glob("*", ""));
        assert!(glob("a*b*c", "aXXbYc"));
        assert!(!glob("a*b", "aXXc"));
        assert!(!glob("a*a", "a"), "the pieces may not overlap");
        assert!(!glob("ab*ba", "aba"));
        assert!(glob("*-value", "orders-value"));
        assert!(glob("orders", "orders") && !glob("orders", "orders2"));
        // Linear: a pathological pattern against a long name answers at once.
        let pattern = format!("{}b", "*a".repeat(500));
        assert!(!glob(&pattern, &"a".repeat(1024)));
    }

    #[test]
    fn destination_names_follow_the_context_type() {
        assert_eq!(
            spec(ContextType::None).destination_subject("orders"),
            "dc_orders"
        );
        assert_eq!(
            spec(ContextType::None).destination_subject(":.a:orders"),
            ":.a:dc_orders"
        );
        assert_eq!(
            spec(ContextType::Custom).destination_subject("orders"),
            ":.prod:dc_orders"
        );
        assert_eq!(
            spec(ContextType::Auto).destination_subject(":.a:orders"),
            ":.dr:dc_orders"
        );
    }

    #[test]
    fn keys_are_exported_by_default_and_keks_renamed_without_context() {
        let mut s = spec(ContextType::Auto);
        assert!(s.exports_keys());
        assert_eq!(s.destination_kek("aws_key"), "dc_aws_key");
        s.kek_rename_format = None;
        assert_eq!(s.destination_kek("aws_key"), "aws_key");
        s.config.insert(EXPORT_KEYS_KEY.into(), "false".into());
        assert!(!s.exports_keys());
    }

    #[test]
    fn credentials_are_hidden_and_kept_when_sent_back() {
        let stored = BTreeMap::from([
            (
                URL_KEY.to_string(),
                "https://u:url-pw-1@b.example:8081/sr".to_string(),
            ),
            ("basic.auth.user.info".to_string(), "u:pw-2".to_string()),
            ("bearer.auth.token".to_string(), "tok-3".to_string()),
            ("ssl.keystore.password".to_string(), "ks-4".to_string()),
            ("bearer.auth.client.secret".to_string(), "cs-5".to_string()),
            ("ssl.key".to_string(), "pem-6".to_string()),
            ("Basic.Auth.User.Info".to_string(), "x:y-7".to_string()),
            ("context.name".to_string(), "visible".to_string()),
        ]);
        let shown = redacted_config(&stored);
        assert_eq!(shown[URL_KEY], "https://[hidden]@b.example:8081/sr");
        assert_eq!(shown["context.name"], "visible");
        for key in stored
            .keys()
            .filter(|k| *k != URL_KEY && *k != "context.name")
        {
            assert_eq!(shown[key], HIDDEN, "{key}");
        }
        let text = format!("{shown:?}");
        for secret in ["url-pw-1", "pw-2", "tok-3", "ks-4", "cs-5", "pem-6", "y-7"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        let mut sent_back = shown.clone();
        sent_back.insert("context.name".into(), "changed".into());
        restore_hidden(&mut sent_back, &stored).unwrap();
        assert_eq!(sent_back["basic.auth.user.info"], "u:pw-2");
        assert_eq!(sent_back[URL_KEY], stored[URL_KEY]);
        assert_eq!(sent_back["context.name"], "changed");
        let mut nothing_behind = BTreeMap::from([("new.password".to_string(), HIDDEN.into())]);
        assert!(restore_hidden(&mut nothing_behind, &stored).is_err());
        let mut other_host = BTreeMap::from([(
            URL_KEY.to_string(),
            "https://[hidden]@evil.example".to_string(),
        )]);
        assert!(restore_hidden(&mut other_host, &stored).is_err());
        assert_eq!(
            url_without_userinfo("http://a:b@h:1/p?q=x@y"),
            "http://h:1/p?q=x@y"
        );
        assert_eq!(url_without_userinfo("http://h:1/a@b"), "http://h:1/a@b");
        assert_eq!(url_password("http://a:b@h"), Some("b"));
    }

    #[test]
    fn validation_names_what_is_wrong() {
        let mut s = spec(ContextType::None);
        assert_eq!(s.validate(), Ok(()));
        s.config.clear();
        assert_eq!(s.validate().unwrap_err().error_code(), 40951);
        let mut s = spec(ContextType::None);
        s.name = "bad name".into();
        assert_eq!(s.validate().unwrap_err().error_code(), 40950);
        let mut s = spec(ContextType::None);
        s.subjects.clear();
        assert_eq!(s.validate().unwrap_err().error_code(), 40952);
        let mut s = spec(ContextType::None);
        s.kek_rename_format = Some("dc.${kek}".into());
        assert_eq!(s.validate().unwrap_err().error_code(), 40951);
        let mut s = spec(ContextType::None);
        s.config.insert(EXPORT_KEYS_KEY.into(), "no".into());
        assert_eq!(s.validate().unwrap_err().error_code(), 40951);
    }
}
