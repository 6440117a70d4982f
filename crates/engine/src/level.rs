use crate::budget::Metered;
use crate::{CheckOptions, Finding, Format, Severity};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Confluent's compatibility levels: a direction and a scope (latest or all earlier versions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Level {
    None,
    #[default]
    Backward,
    BackwardTransitive,
    Forward,
    ForwardTransitive,
    Full,
    FullTransitive,
}

impl Level {
    pub const ALL: [Level; 7] = [
        Level::None,
        Level::Backward,
        Level::BackwardTransitive,
        Level::Forward,
        Level::ForwardTransitive,
        Level::Full,
        Level::FullTransitive,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "NONE",
            Level::Backward => "BACKWARD",
            Level::BackwardTransitive => "BACKWARD_TRANSITIVE",
            Level::Forward => "FORWARD",
            Level::ForwardTransitive => "FORWARD_TRANSITIVE",
            Level::Full => "FULL",
            Level::FullTransitive => "FULL_TRANSITIVE",
        }
    }

    /// Whether the candidate is compared with every earlier version, not only the latest.
    pub fn is_transitive(self) -> bool {
        matches!(
            self,
            Level::BackwardTransitive | Level::ForwardTransitive | Level::FullTransitive
        )
    }

    /// The directions this level checks.
    pub fn directions(self) -> &'static [Direction] {
        match self {
            Level::None => &[],
            Level::Backward | Level::BackwardTransitive => &[Direction::Backward],
            Level::Forward | Level::ForwardTransitive => &[Direction::Forward],
            Level::Full | Level::FullTransitive => &[Direction::Backward, Direction::Forward],
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Level {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let upper = s.trim().to_ascii_uppercase().replace('-', "_");
        Level::ALL
            .into_iter()
            .find(|l| l.as_str() == upper)
            .ok_or_else(|| format!("Invalid compatibility level: {s}"))
    }
}

/// Which side reads which.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// The new schema reads data written with the earlier one.
    Backward,
    /// The earlier schema reads data written with the new one.
    Forward,
}

/// An earlier version in a subject's history.
#[derive(Debug, Clone, Copy)]
pub struct PriorVersion<'a, S> {
    pub version: i64,
    pub schema: &'a S,
}

/// The outcome of a check: compatible unless some finding is an error.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    pub compatible: bool,
    pub findings: Vec<Finding>,
}

impl Report {
    pub fn from_findings(findings: Vec<Finding>) -> Report {
        let compatible = !findings.iter().any(|f| f.severity == Severity::Error);
        Report {
            compatible,
            findings,
        }
    }

    pub fn errors(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| f.is_error())
    }
}

/// One pass of a level over a candidate and one earlier version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pass {
    pub direction: Direction,
    /// Whether rules about the history of the schema run in this pass. They describe the
    /// change from the earlier version to the candidate, so a level runs them once per pair
    /// (FULL in its backward pass), not once per direction.
    pub history: bool,
}

/// Findings for one direction between the candidate and one earlier version, history rules
/// included.
pub fn check_pair<F: Format>(
    m: Metered<'_>,
    direction: Direction,
    candidate: &F::Schema,
    earlier: &F::Schema,
    options: &CheckOptions,
) -> Vec<Finding> {
    let pass = Pass {
        direction,
        history: true,
    };
    check_in_pass::<F>(m, pass, candidate, earlier, options)
}

fn check_in_pass<F: Format>(
    m: Metered<'_>,
    pass: Pass,
    candidate: &F::Schema,
    earlier: &F::Schema,
    options: &CheckOptions,
) -> Vec<Finding> {
    let mut findings = match pass.direction {
        Direction::Backward => F::check_pass(m, candidate, earlier, options, pass),
        Direction::Forward => F::check_pass(m, earlier, candidate, options, pass),
    };
    // Formats skip building most unwanted infos; this catches the rest.
    findings.retain(|f| options.wants(f.severity));
    findings
}

/// Judges `candidate` against `history` (oldest first) at `level`, as Confluent defines it:
/// non-transitive levels compare with the latest version only, transitive ones with every
/// version. Unlike Confluent, every failing version is reported, each finding tagged with
/// the version it came from, and the candidate's own lint findings are included once.
pub fn check_history<F: Format>(
    m: Metered<'_>,
    level: Level,
    candidate: &F::Schema,
    history: &[PriorVersion<'_, F::Schema>],
    options: &CheckOptions,
) -> Report {
    let mut findings = F::lint(candidate, options);
    findings.retain(|f| options.wants(f.severity));
    let in_scope: &[PriorVersion<'_, F::Schema>] = if level.is_transitive() {
        history
    } else {
        match history.last() {
            Some(_) => &history[history.len() - 1..],
            None => &[],
        }
    };
    for prior in in_scope.iter().rev() {
        for (i, &direction) in level.directions().iter().enumerate() {
            let pass = Pass {
                direction,
                history: i == 0,
            };
            for mut finding in check_in_pass::<F>(m, pass, candidate, prior.schema, options) {
                finding.version = Some(prior.version);
                say_which_version(&mut finding.message, direction, prior.version);
                findings.push(finding);
            }
        }
    }
    Report::from_findings(findings)
}

/// Appends which version reads which to a finding's message, in place: a long history
/// yields hundreds of thousands of findings, and a new string for each one showed up in
/// profiles.
fn say_which_version(message: &mut String, direction: Direction, version: i64) {
    use std::fmt::Write;
    // Writing into a String cannot fail.
    let _ = match direction {
        Direction::Backward => write!(
            message,
            " (new schema reading data written with version {version})"
        ),
        Direction::Forward => write!(
            message,
            " (version {version} reading data written with the new schema)"
        ),
    };
}
