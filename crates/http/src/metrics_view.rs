//! `/metrics` as one caller may see it. Series labelled with a subject are shown only to a
//! caller who may read that subject; series labelled with a consumer or client (who reads
//! what) only to one who may also read governance records (`Govern` on the registry). So a
//! principal with `Read` on `Config:` learns no other team's subject, field or client names
//! from the metrics.

use crate::auth::{Access, Operation, Resource};

/// Labels naming who reads: governance knowledge.
const READER_LABELS: [&str; 2] = ["consumer", "client"];

/// The Prometheus text with every sample `access` may not see removed.
pub fn filter(text: &str, access: &Access) -> String {
    let governs = access.allows(Operation::Govern, &Resource::Global);
    if governs && access.allows_everywhere(Operation::Read) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        if line.starts_with('#') || visible(line, access, governs) {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

fn visible(line: &str, access: &Access, governs: bool) -> bool {
    let Some(labels) = labels_of(line) else {
        // A sample without labels, or a line that does not parse: hide what cannot be judged.
        return !line.contains('{');
    };
    labels.iter().all(|(name, value)| match name.as_str() {
        "subject" => access.can_read(value),
        name if READER_LABELS.contains(&name) => governs,
        _ => true,
    })
}

/// The labels of a sample line `name{a="x",b="y"} value`, values unescaped; `None` when the
/// line has no labels or does not parse.
fn labels_of(line: &str) -> Option<Vec<(String, String)>> {
    let open = line.find('{')?;
    let mut rest = &line[open + 1..];
    let mut labels = Vec::new();
    loop {
        rest = rest.trim_start_matches(',');
        if let Some(after) = rest.strip_prefix('}') {
            let _ = after;
            return Some(labels);
        }
        let (name, after) = rest.split_once("=\"")?;
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            let (i, c) = chars.next()?;
            match c {
                '\\' => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                '"' => break i,
                c => value.push(c),
            }
        };
        labels.push((name.trim().to_string(), value));
        rest = &after[end + 1..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{Grant, ResourcePattern};

    fn access(grants: &[(Operation, &str)]) -> Access {
        Access::with_grants(
            grants
                .iter()
                .map(|(op, r)| Grant {
                    operation: *op,
                    resources: ResourcePattern::parse(r).unwrap(),
                })
                .collect(),
        )
    }

    const TEXT: &str = "# TYPE covenant_field_reads_total counter\n\
covenant_field_reads_total{subject=\"team-a-v\",field=\"id\",consumer=\"billing\"} 3\n\
covenant_field_reads_total{subject=\"team-b-v\",field=\"ssn\",consumer=\"fraud\"} 5\n\
covenant_profile_population{subject=\"team-b-v\",path=\"/x\"} 0.5\n\
covenant_profile_population{subject=\"team-a-v\",path=\"/a\\\"b\"} 0.5\n\
covenant_http_requests_total{route=\"/subjects\",method=\"GET\",status=\"200\"} 9\n\
covenant_up 1\n";

    #[test]
    fn a_config_reader_sees_neither_other_subjects_nor_readers() {
        let a = access(&[
            (Operation::Read, "Config:"),
            (Operation::Read, "Subject:team-a"),
        ]);
        let shown = filter(TEXT, &a);
        assert!(!shown.contains("team-b"), "{shown}");
        assert!(!shown.contains("billing"), "{shown}");
        assert!(shown.contains("covenant_profile_population{subject=\"team-a-v\""));
        assert!(shown.contains("covenant_http_requests_total"));
        assert!(shown.contains("covenant_up 1"));
    }

    #[test]
    fn a_governor_of_everything_sees_everything() {
        let a = access(&[(Operation::Govern, "Config:"), (Operation::Read, ".*")]);
        assert_eq!(filter(TEXT, &a), TEXT);
        assert_eq!(filter(TEXT, &Access::unrestricted()), TEXT);
        let partial = access(&[
            (Operation::Govern, "Config:"),
            (Operation::Read, "Subject:team-a"),
        ]);
        let shown = filter(TEXT, &partial);
        assert!(
            shown.contains("billing") && !shown.contains("fraud"),
            "{shown}"
        );
    }

    #[test]
    fn escaped_values_are_read_whole() {
        let labels = labels_of("m{a=\"x\\\"},y\",b=\"z\"} 1").unwrap();
        assert_eq!(
            labels,
            vec![("a".into(), "x\"},y".into()), ("b".into(), "z".into())]
        );
        assert!(labels_of("m 1").is_none());
    }
}
