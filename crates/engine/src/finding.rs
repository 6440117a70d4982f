use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::fmt;

/// How much a finding matters. Only `Error` makes a change incompatible.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }

    pub fn parse(text: &str) -> Option<Severity> {
        match text.to_ascii_lowercase().as_str() {
            "info" => Some(Severity::Info),
            "warning" | "warn" => Some(Severity::Warning),
            "error" => Some(Severity::Error),
            _ => None,
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One thing a check noticed about a change, with enough context for a person to act on it.
///
/// `path` is a JSON-pointer-like path into the schema (for example
/// `/fields/customer/fields/id`), named by field and type names rather than array indexes so
/// that it stays readable. `version` is the earlier version the finding was found against, set
/// by the level machinery; pairwise checks leave it `None`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// Borrowed from the rule's spec: a long history yields hundreds of thousands of findings,
    /// and copying the id and the hint into each showed up in profiles.
    pub rule: Cow<'static, str>,
    pub severity: Severity,
    pub path: String,
    pub message: String,
    pub hint: Cow<'static, str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,
}

impl Finding {
    /// A finding with the rule's default hint; most rules need nothing more.
    pub fn new(
        rule: &crate::RuleSpec,
        path: impl Into<String>,
        message: impl Into<String>,
    ) -> Finding {
        Finding {
            rule: Cow::Borrowed(rule.id),
            severity: rule.default_severity,
            path: path.into(),
            message: message.into(),
            hint: Cow::Borrowed(rule.hint),
            version: None,
        }
    }

    pub fn with_hint(mut self, hint: impl Into<Cow<'static, str>>) -> Finding {
        self.hint = hint.into();
        self
    }

    pub fn with_severity(mut self, severity: Severity) -> Finding {
        self.severity = severity;
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}
