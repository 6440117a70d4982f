//! What each route asks of its caller: one table, consulted by the authorization layer
//! before any handler runs. A test fails when a route of [`crate::ROUTES`] is missing here.

use super::Operation::{self, Admin, Approve, Configure, Delete, Govern, Read, Write};
use axum::http::Method;

/// What a route's operation applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Open to everyone, authenticated or not: health, discovery and the API description.
    Public,
    /// The registry as a whole (`Config:` in the auth file): global config and mode,
    /// metrics, and governance records, which span subjects (consumers, usage, deprecations:
    /// read and written with `Govern`, so a plain reader learns no subject names from them).
    Global,
    /// The `{subject}` path parameter.
    Subject,
    /// Any caller may ask; the handler answers only what the caller may read (listings,
    /// schema ids readable through some permitted subject).
    Filtered,
    /// The subject named in the request body (usage reports): the layer admits a caller
    /// holding the operation somewhere (the registry or some subject), and the handler checks
    /// it on the named subject (or the registry) through `Access`, refusing through
    /// `audit::refuse`. So a reader's account needs only a grant on the subjects it reads.
    BodySubject,
    /// The `{name}` of a DEK Registry route: a KEK (`Kek:<name>`).
    Kek,
    /// A DEK: the operation on both the `{name}` KEK and the `{subject}`.
    Dek,
    /// The KEK named in the body (its creation): admitted like [`Target::BodySubject`], then
    /// checked on `Kek:<name>` by the handler.
    BodyKek,
}

/// `(method, route template, operation, target)` for every route served.
pub const ROUTE_ACCESS: &[(&str, &str, Operation, Target)] = &[
    ("GET", "/", Read, Target::Public),
    ("POST", "/", Read, Target::Public),
    ("GET", "/v1/metadata/id", Read, Target::Public),
    ("GET", "/v1/metadata/version", Read, Target::Public),
    ("GET", "/contexts", Read, Target::Filtered),
    ("DELETE", "/contexts/{context}", Admin, Target::Global),
    ("GET", "/exporters", Read, Target::Global),
    ("POST", "/exporters", Admin, Target::Global),
    ("GET", "/exporters/{name}", Admin, Target::Global),
    ("PUT", "/exporters/{name}", Admin, Target::Global),
    ("DELETE", "/exporters/{name}", Admin, Target::Global),
    ("GET", "/exporters/{name}/config", Admin, Target::Global),
    ("PUT", "/exporters/{name}/config", Admin, Target::Global),
    ("PUT", "/exporters/{name}/pause", Admin, Target::Global),
    ("PUT", "/exporters/{name}/resume", Admin, Target::Global),
    ("PUT", "/exporters/{name}/reset", Admin, Target::Global),
    ("GET", "/exporters/{name}/status", Read, Target::Global),
    ("GET", "/schemas", Read, Target::Filtered),
    ("GET", "/schemas/types", Read, Target::Public),
    ("GET", "/schemas/ids/{id}", Read, Target::Filtered),
    ("GET", "/schemas/ids/{id}/schema", Read, Target::Filtered),
    ("GET", "/schemas/ids/{id}/subjects", Read, Target::Filtered),
    ("GET", "/schemas/ids/{id}/versions", Read, Target::Filtered),
    ("GET", "/schemas/guids/{guid}", Read, Target::Filtered),
    ("GET", "/schemas/guids/{guid}/ids", Read, Target::Filtered),
    ("GET", "/subjects", Read, Target::Filtered),
    ("POST", "/subjects/{subject}", Read, Target::Subject),
    ("DELETE", "/subjects/{subject}", Delete, Target::Subject),
    ("GET", "/subjects/{subject}/metadata", Read, Target::Subject),
    ("GET", "/subjects/{subject}/versions", Read, Target::Subject),
    (
        "POST",
        "/subjects/{subject}/versions",
        Write,
        Target::Subject,
    ),
    (
        "GET",
        "/subjects/{subject}/versions/{version}",
        Read,
        Target::Subject,
    ),
    (
        "DELETE",
        "/subjects/{subject}/versions/{version}",
        Delete,
        Target::Subject,
    ),
    (
        "GET",
        "/subjects/{subject}/versions/{version}/schema",
        Read,
        Target::Subject,
    ),
    (
        "GET",
        "/subjects/{subject}/versions/{version}/referencedby",
        Read,
        Target::Subject,
    ),
    ("GET", "/config", Read, Target::Global),
    ("PUT", "/config", Configure, Target::Global),
    ("DELETE", "/config", Configure, Target::Global),
    ("GET", "/config/{subject}", Read, Target::Subject),
    ("PUT", "/config/{subject}", Write, Target::Subject),
    ("DELETE", "/config/{subject}", Write, Target::Subject),
    ("GET", "/mode", Read, Target::Global),
    ("PUT", "/mode", Configure, Target::Global),
    ("DELETE", "/mode", Configure, Target::Global),
    ("GET", "/mode/{subject}", Read, Target::Subject),
    ("PUT", "/mode/{subject}", Write, Target::Subject),
    ("DELETE", "/mode/{subject}", Write, Target::Subject),
    (
        "POST",
        "/compatibility/subjects/{subject}/versions",
        Read,
        Target::Subject,
    ),
    (
        "POST",
        "/compatibility/subjects/{subject}/versions/{version}",
        Read,
        Target::Subject,
    ),
    ("GET", "/metrics", Read, Target::Global),
    ("GET", "/health/live", Read, Target::Public),
    ("GET", "/health/ready", Read, Target::Public),
    ("GET", "/openapi.json", Read, Target::Public),
    ("GET", "/covenant/v1/consumers", Govern, Target::Global),
    ("POST", "/covenant/v1/consumers", Govern, Target::Global),
    (
        "GET",
        "/covenant/v1/consumers/{consumer}",
        Govern,
        Target::Global,
    ),
    (
        "PUT",
        "/covenant/v1/consumers/{consumer}",
        Govern,
        Target::Global,
    ),
    (
        "POST",
        "/covenant/v1/consumers/{consumer}/retire",
        Govern,
        Target::Global,
    ),
    ("POST", "/covenant/v1/usage", Govern, Target::BodySubject),
    ("GET", "/covenant/v1/usage", Govern, Target::Global),
    ("GET", "/covenant/v1/usage/readers", Govern, Target::Global),
    ("GET", "/covenant/v1/usage/counts", Govern, Target::Global),
    ("GET", "/covenant/v1/findings", Govern, Target::Global),
    ("GET", "/covenant/v1/audit", Admin, Target::Global),
    ("GET", "/covenant/v1/deprecations", Govern, Target::Global),
    (
        "PATCH",
        "/covenant/v1/deprecations/{id}",
        Govern,
        Target::Global,
    ),
    ("POST", "/covenant/v1/deprecations", Govern, Target::Global),
    (
        "GET",
        "/covenant/v1/deprecations/{id}",
        Govern,
        Target::Global,
    ),
    (
        "GET",
        "/covenant/v1/deprecations/{id}/record",
        Govern,
        Target::Global,
    ),
    (
        "POST",
        "/covenant/v1/deprecations/{id}/stage",
        Govern,
        Target::Global,
    ),
    (
        "POST",
        "/covenant/v1/deprecations/{id}/evidence",
        Govern,
        Target::Global,
    ),
    (
        "POST",
        "/covenant/v1/deprecations/{id}/exceptions",
        Govern,
        Target::Global,
    ),
    (
        "POST",
        "/covenant/v1/subjects/{subject}/removal-gate",
        Read,
        Target::Subject,
    ),
    (
        "GET",
        "/covenant/v1/subjects/{subject}/readers",
        Read,
        Target::Subject,
    ),
    (
        "GET",
        "/covenant/v1/subjects/{subject}/approvals",
        Read,
        Target::Subject,
    ),
    (
        "POST",
        "/covenant/v1/subjects/{subject}/approvals",
        Approve,
        Target::Subject,
    ),
    (
        "POST",
        "/covenant/v1/subjects/{subject}/approvals/{id}/revoke",
        Approve,
        Target::Subject,
    ),
    (
        "POST",
        "/covenant/v1/subjects/{subject}/plan",
        Read,
        Target::Subject,
    ),
    (
        "POST",
        "/covenant/v1/subjects/{subject}/check",
        Read,
        Target::Subject,
    ),
    (
        "GET",
        "/covenant/v1/subjects/{subject}/samples",
        Read,
        Target::Subject,
    ),
    (
        "GET",
        "/covenant/v1/subjects/{subject}/versions/{version}/samples",
        Read,
        Target::Subject,
    ),
    (
        "POST",
        "/covenant/v1/subjects/{subject}/versions/{version}/samples",
        Govern,
        Target::Subject,
    ),
    (
        "DELETE",
        "/covenant/v1/subjects/{subject}/versions/{version}/samples",
        Govern,
        Target::Subject,
    ),
    (
        "DELETE",
        "/covenant/v1/subjects/{subject}/versions/{version}/samples/{sampleId}",
        Govern,
        Target::Subject,
    ),
    (
        "POST",
        "/covenant/v1/subjects/{subject}/versions/{version}/live",
        Govern,
        Target::Subject,
    ),
    (
        "DELETE",
        "/covenant/v1/subjects/{subject}/versions/{version}/live",
        Govern,
        Target::Subject,
    ),
    (
        "POST",
        "/covenant/v1/subjects/{subject}/profiles",
        Govern,
        Target::Subject,
    ),
    (
        "GET",
        "/covenant/v1/subjects/{subject}/profiles",
        Read,
        Target::Subject,
    ),
    (
        "GET",
        "/covenant/v1/subjects/{subject}/profiles/trend",
        Read,
        Target::Subject,
    ),
    (
        "GET",
        "/covenant/v1/subjects/{subject}/profiles/findings",
        Read,
        Target::Subject,
    ),
    (
        "GET",
        "/covenant/v1/subjects/{subject}/profiles/{profileId}",
        Read,
        Target::Subject,
    ),
    ("GET", "/dek-registry/v1/keks", Read, Target::Filtered),
    ("POST", "/dek-registry/v1/keks", Write, Target::BodyKek),
    ("GET", "/dek-registry/v1/keks/{name}", Read, Target::Kek),
    ("PUT", "/dek-registry/v1/keks/{name}", Write, Target::Kek),
    (
        "DELETE",
        "/dek-registry/v1/keks/{name}",
        Delete,
        Target::Kek,
    ),
    (
        "POST",
        "/dek-registry/v1/keks/{name}/undelete",
        Write,
        Target::Kek,
    ),
    (
        "POST",
        "/dek-registry/v1/keks/{name}/test",
        Write,
        Target::Kek,
    ),
    (
        "GET",
        "/dek-registry/v1/keks/{name}/deks",
        Read,
        Target::Kek,
    ),
    // The subject is in the body: the handler checks it.
    (
        "POST",
        "/dek-registry/v1/keks/{name}/deks",
        Write,
        Target::Kek,
    ),
    (
        "GET",
        "/dek-registry/v1/keks/{name}/deks/{subject}",
        Read,
        Target::Dek,
    ),
    (
        "POST",
        "/dek-registry/v1/keks/{name}/deks/{subject}",
        Write,
        Target::Dek,
    ),
    (
        "DELETE",
        "/dek-registry/v1/keks/{name}/deks/{subject}",
        Delete,
        Target::Dek,
    ),
    (
        "POST",
        "/dek-registry/v1/keks/{name}/deks/{subject}/undelete",
        Write,
        Target::Dek,
    ),
    (
        "GET",
        "/dek-registry/v1/keks/{name}/deks/{subject}/versions",
        Read,
        Target::Dek,
    ),
    (
        "GET",
        "/dek-registry/v1/keks/{name}/deks/{subject}/versions/{version}",
        Read,
        Target::Dek,
    ),
    (
        "DELETE",
        "/dek-registry/v1/keks/{name}/deks/{subject}/versions/{version}",
        Delete,
        Target::Dek,
    ),
    (
        "POST",
        "/dek-registry/v1/keks/{name}/deks/{subject}/versions/{version}/undelete",
        Write,
        Target::Dek,
    ),
];

/// How the authorization layer treats one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// A served route and its rule.
    Route(Operation, Target),
    /// No route for the path (404) or the method (405): answered only to a known caller.
    Unserved,
    /// A served route that the table has no rule for: refused to everyone.
    Missing,
}

/// The rule for a request: `matched` is the route template the router matched, if any. HEAD
/// is served by the GET route and judged by its rule.
pub fn rule_for(method: &Method, matched: Option<&str>) -> Rule {
    let Some(template) = matched else {
        return Rule::Unserved;
    };
    let method = if method == Method::HEAD {
        "GET"
    } else {
        method.as_str()
    };
    let found = ROUTE_ACCESS
        .iter()
        .find(|(m, t, _, _)| *m == method && *t == template);
    match found {
        Some((_, _, op, target)) => Rule::Route(*op, *target),
        None if crate::ROUTES.contains(&(method, template)) => Rule::Missing,
        None => Rule::Unserved,
    }
}

/// The operation and target of a served route (HEAD as GET), `None` for anything else.
pub fn route_access(method: &str, template: &str) -> Option<(Operation, Target)> {
    let method = Method::from_bytes(method.as_bytes()).ok()?;
    match rule_for(&method, Some(template)) {
        Rule::Route(op, target) => Some((op, target)),
        Rule::Unserved | Rule::Missing => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_has_exactly_one_entry() {
        for (method, template) in crate::ROUTES.iter() {
            let n = ROUTE_ACCESS
                .iter()
                .filter(|(m, t, _, _)| m == method && t == template)
                .count();
            assert_eq!(n, 1, "{method} {template} has {n} access entries");
        }
        for (method, template, _, _) in ROUTE_ACCESS {
            assert!(
                crate::ROUTES.contains(&(*method, *template)),
                "{method} {template} is in the access table but not served"
            );
        }
    }

    /// Requests that change state need more than `Read`; the only exceptions are the POSTs
    /// that only ask a question (lookup, compatibility test, gate preview, rollout plan).
    #[test]
    fn changes_need_more_than_read() {
        const QUESTIONS: &[&str] = &[
            "/",
            "/subjects/{subject}",
            "/compatibility/subjects/{subject}/versions",
            "/compatibility/subjects/{subject}/versions/{version}",
            "/covenant/v1/subjects/{subject}/removal-gate",
            "/covenant/v1/subjects/{subject}/plan",
            "/covenant/v1/subjects/{subject}/check",
        ];
        for (method, template, op, target) in ROUTE_ACCESS {
            let changes = *method != "GET" && !(*method == "POST" && QUESTIONS.contains(template));
            // Governance records span subjects, so even reading them takes `Govern`.
            let governance_read = *method == "GET"
                && *target == Target::Global
                && template.starts_with("/covenant/v1/");
            // An exporter's record holds its destination's credentials.
            let exporter_read = *method == "GET"
                && template.starts_with("/exporters/{name}")
                && !template.ends_with("/status");
            assert_eq!(
                changes || governance_read || exporter_read,
                *op != Read,
                "{method} {template} asks for {op}"
            );
        }
        // Karapace's table, where it applies, and Covenant's split of its `Write`.
        for (method, template, op) in [
            ("PUT", "/config", Configure),
            ("PUT", "/config/{subject}", Write),
            ("POST", "/subjects/{subject}/versions", Write),
            ("DELETE", "/subjects/{subject}", Delete),
            ("DELETE", "/subjects/{subject}/versions/{version}", Delete),
            ("POST", "/covenant/v1/deprecations", Govern),
            ("GET", "/covenant/v1/consumers", Govern),
            ("POST", "/covenant/v1/subjects/{subject}/approvals", Approve),
        ] {
            assert_eq!(
                route_access(method, template).map(|r| r.0),
                Some(op),
                "{method} {template}"
            );
        }
    }

    #[test]
    fn every_subject_route_names_a_subject_and_changes_are_never_public() {
        for (method, template, op, target) in ROUTE_ACCESS {
            if *target == Target::Subject || *target == Target::Dek {
                assert!(template.contains("{subject}"), "{template}");
            }
            if *target == Target::Kek || *target == Target::Dek {
                assert!(template.contains("{name}"), "{template}");
            }
            if *op != Read {
                assert_ne!(*target, Target::Public, "{method} {template}");
                assert_ne!(*target, Target::Filtered, "{method} {template}");
            }
        }
    }
}
