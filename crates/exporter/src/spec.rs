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
}

/// `*`-wildcard matching (any run of characters) in time linear in the text: the pieces
/// between stars must appear in order, the first at the start and the last at the end, and
/// taking each piece at its earliest place is never worse (so no backtracking is needed).
fn glob(pattern: &str, text: &str) -> bool {
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
    }
}
