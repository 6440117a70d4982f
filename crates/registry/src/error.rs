use covenant_engine::Finding;

/// Why a registry operation failed. The `Display` text is Confluent's message for the case
/// (typos included where clients match on them); the HTTP layer maps each variant to its
/// status and `error_code` in one table.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    #[error("Subject '{0}' not found.")]
    SubjectNotFound(String),
    #[error("Version {0} not found.")]
    VersionNotFound(String),
    #[error("Schema {0} not found")]
    SchemaIdNotFound(i64),
    #[error("Schema not found")]
    SchemaNotFound,
    #[error("Schema {0} not found")]
    SchemaGuidNotFound(String),
    #[error("Subject '{0}' was soft deleted.Set permanent=true to delete permanently")]
    SubjectSoftDeleted(String),
    #[error("Subject '{0}' was not deleted first before being permanently deleted")]
    SubjectNotSoftDeleted(String),
    #[error("Subject '{0}' Version {1} was soft deleted.Set permanent=true to delete permanently")]
    VersionSoftDeleted(String, i64),
    #[error("Subject '{0}' Version {1} was not deleted first before being permanently deleted")]
    VersionNotSoftDeleted(String, i64),
    #[error("Subject '{0}' does not have subject-level compatibility configured")]
    SubjectConfigNotFound(String),
    #[error("Subject '{0}' does not have subject-level mode configured")]
    SubjectModeNotFound(String),
    #[error("{}", incompatible_message(.subject, .findings))]
    Incompatible {
        subject: String,
        findings: Vec<Finding>,
    },
    /// Consumer governance refused a version that drops fields (one blocker per line).
    #[error(
        "Schema being registered removes fields of subject \"{subject}\" that consumers still depend on; blockers:\n{blockers}"
    )]
    RemovalBlocked { subject: String, blockers: String },
    #[error("{0}")]
    InvalidSchema(String),
    #[error(
        "The specified version '{0}' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\""
    )]
    InvalidVersion(String),
    #[error(
        "Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive"
    )]
    InvalidCompatibilityLevel,
    #[error("Invalid mode. Valid values are READWRITE, READONLY, IMPORT and FORWARD.")]
    InvalidMode,
    #[error("Forward mode only supported on global level")]
    ForwardModeOnSubject,
    #[error("{0}")]
    OperationNotPermitted(String),
    #[error(
        "One or more references exist to the schema {{magic=1,keytype=SCHEMA,subject={0},version={1}}}."
    )]
    Referenced(String, i64),
    #[error("The specified subject '{0}' is not a valid.")]
    InvalidSubject(String),
    /// Holds the context's key (`:.ctx:`), as Confluent's message names it.
    #[error("The specified context '{0}' is not empty.")]
    ContextNotEmpty(String),
    #[error("The specified context '{0}' is not a valid context name.")]
    InvalidContext(String),
    #[error("{0}")]
    InvalidRuleSet(String),
    #[error("Error while {0}")]
    Store(String),
    #[error("{0}")]
    InvalidCompatibilityScope(String),
    #[error("{0}")]
    InvalidPolicySettings(String),
    #[error("{0}")]
    InvalidSample(String),
    #[error("Subject '{subject}' already holds {limit} samples, the most a subject may hold.")]
    SampleLimitReached { subject: String, limit: usize },
    #[error("Sample payloads may not be larger than {0} bytes.")]
    SamplePayloadTooLarge(usize),
    #[error("Sample {0} not found.")]
    SampleNotFound(i64),
    #[error("Profile {0} not found.")]
    ProfileNotFound(i64),
    #[error("Subject '{0}' has no stored profile.")]
    NoProfile(String),
    #[error("{0}")]
    InvalidProfile(String),
    /// Judging the schema needed more time or work than one check may spend.
    #[error(
        "The schema is too costly to check: {0}. Simplify the schema (fewer nested or alternative types) or raise the server's check budget."
    )]
    CheckBudgetExceeded(covenant_engine::budget::BudgetExceeded),
    /// The budget across checks is spent: as many checks as may run at once are running.
    #[error(
        "The server is judging as many schemas as it may at once: {what}. Retry in {retry_after_secs} s."
    )]
    ChecksBusy { what: String, retry_after_secs: u64 },
}

/// Names the subject, then each finding with its rule id, path and version, so that a 409
/// says what to change without a second call.
fn incompatible_message(subject: &str, findings: &[Finding]) -> String {
    let details: Vec<String> = findings.iter().map(finding_text).collect();
    format!(
        "Schema being registered is incompatible with an earlier schema for subject \"{subject}\", details: [{}].{}",
        details.join(", "),
        ways_forward(subject, findings)
    )
}

/// The two safe ways past a refusal: the change each hint describes, which needs no approval,
/// or accepted risk on record from whoever holds `Approve` on the subject.
fn ways_forward(subject: &str, findings: &[Finding]) -> String {
    if findings.is_empty() {
        return String::new();
    }
    let rules: std::collections::BTreeSet<&str> =
        findings.iter().map(|f| f.rule.as_ref()).collect();
    let rules: Vec<&str> = rules.into_iter().collect();
    let rule = rules.first().copied().unwrap_or("RULE");
    format!(
        " Ways forward: make the change each hint describes, which needs no approval; or ask a principal holding the Approve operation on subject \"{subject}\" to accept the risk of {} for this exact schema (covenant approve --subject {subject} --rule {rule} --reason TEXT FILE), then register it again.",
        rules.join(", ")
    )
}

/// One finding as a single line: rule id, path, version, reason and hint.
pub fn finding_text(f: &Finding) -> String {
    let path = if f.path.is_empty() { "/" } else { &f.path };
    let version = f
        .version
        .map(|v| format!(" (version {v})"))
        .unwrap_or_default();
    format!(
        "{{rule: {}, path: '{}'{}, reason: {}, hint: {}}}",
        f.rule, path, version, f.message, f.hint
    )
}

pub type RegistryResult<T> = Result<T, RegistryError>;

impl From<covenant_store::StoreError> for RegistryError {
    fn from(e: covenant_store::StoreError) -> Self {
        match e {
            covenant_store::StoreError::ContextNotEmpty(context) => {
                RegistryError::ContextNotEmpty(covenant_store::context::context_key(&context))
            }
            e => RegistryError::Store(format!("accessing the store: {e}")),
        }
    }
}

#[derive(Debug)]
pub(crate) enum GuardRefusal {
    Domain(RegistryError),
    /// A version appeared whose parsed schema was not prepared; prepare again.
    Retry,
}

impl std::fmt::Display for GuardRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GuardRefusal::Domain(e) => write!(f, "{e}"),
            GuardRefusal::Retry => f.write_str("subject changed during registration"),
        }
    }
}

impl std::error::Error for GuardRefusal {}
