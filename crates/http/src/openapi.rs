//! The OpenAPI 3 description of the API, written as data: its operations, with those of the
//! route modules, are the routes served ([`crate::ROUTES`]); a test checks each one is.

use serde_json::{Map, Value, json};

/// `(method, path, summary)` for every operation.
pub const OPERATIONS: &[(&str, &str, &str)] = &[
    ("GET", "/", "Liveness: an empty object."),
    (
        "POST",
        "/",
        "Accepts any JSON object and answers an empty one.",
    ),
    (
        "GET",
        "/v1/metadata/id",
        "The registry's cluster identifiers.",
    ),
    ("GET", "/v1/metadata/version", "The server version."),
    (
        "GET",
        "/contexts",
        "Contexts: the default '.' first, then every other context by name (contextPrefix, offset, limit).",
    ),
    (
        "DELETE",
        "/contexts/{context}",
        "Deletes a context that holds no subject (soft-deleted ones included); 42211 otherwise.",
    ),
    (
        "GET",
        "/schemas",
        "Every subject version, filtered by subjectPrefix (default context unless ':*:'), deleted, latestOnly and ruleType; aliases=true adds the subjects aliased and lists each version's aliases.",
    ),
    ("GET", "/schemas/types", "The schema types supported."),
    (
        "GET",
        "/schemas/ids/{id}",
        "The schema with a global id (even if its versions are soft-deleted).",
    ),
    (
        "GET",
        "/schemas/ids/{id}/schema",
        "The raw schema text of a global id.",
    ),
    (
        "GET",
        "/schemas/ids/{id}/subjects",
        "Subjects holding a version with this id.",
    ),
    (
        "GET",
        "/schemas/ids/{id}/versions",
        "Subject-version pairs holding this id.",
    ),
    (
        "GET",
        "/schemas/guids/{guid}",
        "The schema with a guid (MD5 of the stored record, as Confluent 8 frames messages).",
    ),
    (
        "GET",
        "/schemas/guids/{guid}/ids",
        "The ids holding a guid, as [{context, id}].",
    ),
    (
        "GET",
        "/subjects",
        "Subjects, filtered by subjectPrefix, deleted and deletedOnly.",
    ),
    (
        "POST",
        "/subjects/{subject}",
        "Looks a schema up in a subject.",
    ),
    (
        "DELETE",
        "/subjects/{subject}",
        "Deletes a subject (soft, or permanent=true after a soft delete).",
    ),
    (
        "GET",
        "/subjects/{subject}/metadata",
        "The latest version whose metadata has the given key/value pairs.",
    ),
    (
        "GET",
        "/subjects/{subject}/versions",
        "Version numbers of a subject.",
    ),
    (
        "POST",
        "/subjects/{subject}/versions",
        "Registers a schema; 409 names the findings that make it incompatible.",
    ),
    (
        "GET",
        "/subjects/{subject}/versions/{version}",
        "One version (a number, latest or -1).",
    ),
    (
        "DELETE",
        "/subjects/{subject}/versions/{version}",
        "Deletes a version (soft, or permanent=true after a soft delete).",
    ),
    (
        "GET",
        "/subjects/{subject}/versions/{version}/schema",
        "The raw schema text of a version.",
    ),
    (
        "GET",
        "/subjects/{subject}/versions/{version}/referencedby",
        "Ids of schemas referencing a version.",
    ),
    (
        "GET",
        "/config",
        "The global compatibility level and settings.",
    ),
    (
        "PUT",
        "/config",
        "Updates the global config (partial update).",
    ),
    (
        "DELETE",
        "/config",
        "Removes the global config, returning it.",
    ),
    (
        "GET",
        "/config/{subject}",
        "A subject's config; 40408 without one unless defaultToGlobal=true.",
    ),
    (
        "PUT",
        "/config/{subject}",
        "Updates a subject's config (partial update).",
    ),
    (
        "DELETE",
        "/config/{subject}",
        "Removes a subject's config, returning it.",
    ),
    ("GET", "/mode", "The global mode."),
    ("PUT", "/mode", "Sets the global mode."),
    ("DELETE", "/mode", "Removes the global mode, returning it."),
    (
        "GET",
        "/mode/{subject}",
        "A subject's mode; 40409 without one unless defaultToGlobal=true.",
    ),
    (
        "PUT",
        "/mode/{subject}",
        "Sets a subject's mode (IMPORT needs an empty subject unless force=true).",
    ),
    (
        "DELETE",
        "/mode/{subject}",
        "Removes a subject's mode, returning it.",
    ),
    (
        "POST",
        "/compatibility/subjects/{subject}/versions",
        "Tests a schema as registration would.",
    ),
    (
        "POST",
        "/compatibility/subjects/{subject}/versions/{version}",
        "Tests a schema against one version.",
    ),
    ("GET", "/metrics", "Prometheus metrics."),
    ("GET", "/health/live", "The process is up."),
    ("GET", "/health/ready", "The store answers."),
    ("GET", "/openapi.json", "This document."),
    (
        "GET",
        "/covenant/v1/audit",
        "The audit trail, oldest first: every change and denied attempt with time, principal, source, operation, target, outcome and request id. Filters principal, subject, operation, outcome, since, until; paging with after (the previous page's next) and limit (1-1000, default 100).",
    ),
    (
        "GET",
        "/covenant/v1/consumers",
        "Declared consumers (includeRetired=true adds retired ones).",
    ),
    (
        "POST",
        "/covenant/v1/consumers",
        "Declares a consumer: owner, purpose, cadence, criticality, contact, client ids, the fields it reads and its environment (production or non-production); 40901 when it would read a frozen field.",
    ),
    ("GET", "/covenant/v1/consumers/{consumer}", "One consumer."),
    (
        "PUT",
        "/covenant/v1/consumers/{consumer}",
        "Replaces a consumer's declaration; new reads of frozen fields and new reader versions keeping them are refused (40901).",
    ),
    (
        "POST",
        "/covenant/v1/consumers/{consumer}/retire",
        "Retires a consumer: its declarations stop counting, the record stays.",
    ),
    (
        "POST",
        "/covenant/v1/usage",
        "Records a usage report; the answer flags deprecated fields read, unattributed use and new use after a freeze. A non-production consumer reading a field under enforcement gets 410 (41001) with the receipt; the report is recorded.",
    ),
    (
        "GET",
        "/covenant/v1/usage",
        "Field reads per reporter, filtered by subject, field, consumer or unattributed=true, from and to.",
    ),
    (
        "GET",
        "/covenant/v1/usage/readers",
        "Reports per reporter and reader schema, with the same filters.",
    ),
    (
        "GET",
        "/covenant/v1/usage/counts",
        "Records by schema version, unknown enum values and decode failures over a range.",
    ),
    (
        "GET",
        "/covenant/v1/findings",
        "Findings from usage reports between from and to.",
    ),
    (
        "GET",
        "/covenant/v1/deprecations",
        "Deprecation records, of one subject when given.",
    ),
    (
        "POST",
        "/covenant/v1/deprecations",
        "Announces a deprecation: target, old and new promise, replacement, owners, window and notes.",
    ),
    (
        "GET",
        "/covenant/v1/deprecations/{id}",
        "A deprecation record with the removal gate's current verdict.",
    ),
    (
        "PATCH",
        "/covenant/v1/deprecations/{id}",
        "Updates a record's contract, replacement, owners, window or notes; each update is kept with who made it.",
    ),
    (
        "GET",
        "/covenant/v1/deprecations/{id}/record",
        "The deprecation record as text for review.",
    ),
    (
        "POST",
        "/covenant/v1/deprecations/{id}/stage",
        "Moves a deprecation one stage forward (when its entry conditions hold) or back; 'removable' needs a clear removal gate, the window ended, evidence recorded and a passed canary.",
    ),
    (
        "POST",
        "/covenant/v1/deprecations/{id}/evidence",
        "Attaches evidence: a usage query (run and stored with its result), a sign-off, a replay result, a canary run or a non-production omission.",
    ),
    (
        "POST",
        "/covenant/v1/deprecations/{id}/exceptions",
        "Records an approved exception that overrides one blocker.",
    ),
    (
        "POST",
        "/covenant/v1/subjects/{subject}/check",
        "Judges a candidate exactly as registering it would (mode, data contracts, compatibility with the semantic rules and approvals, the removal gate) without writing anything: is_compatible, messages and findings, the removal gate's blockers, or what the registration would do.",
    ),
    (
        "POST",
        "/covenant/v1/subjects/{subject}/removal-gate",
        "Previews the removal gate for a candidate schema (or a list of fields) without registering it.",
    ),
    (
        "GET",
        "/covenant/v1/subjects/{subject}/readers",
        "Who fetched which version of the subject (schema by id, version, lookup), counted per reader (principal, else User-Agent) within the usage retention, with the consumer each reader is attributed to now (null: unattributed).",
    ),
    (
        "GET",
        "/covenant/v1/subjects/{subject}/approvals",
        "The subject's approvals (accepted risk on record), with their state now: live, expired or revoked.",
    ),
    (
        "POST",
        "/covenant/v1/subjects/{subject}/approvals",
        "Accepts the findings of one rule (at one path, when given) for one exact candidate schema, with a reason and an optional expiry; a registration of that candidate then goes through and names the approval. Needs the Approve operation on the subject.",
    ),
    (
        "POST",
        "/covenant/v1/subjects/{subject}/approvals/{id}/revoke",
        "Revokes an approval; registrations stop counting it.",
    ),
];

fn parameters(path: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let id = if path.starts_with("/covenant/v1/deprecations") {
        "Deprecation id."
    } else if path.contains("/approvals/") {
        "Approval id."
    } else {
        "Global schema id."
    };
    for (name, description) in [
        ("id", id),
        ("consumer", "Consumer name."),
        ("subject", "Subject name, percent-encoded."),
        ("version", "A version number, 'latest' or -1."),
        ("sampleId", "A stored sample's id."),
        ("profileId", "A stored profile's id."),
        ("guid", "A schema guid, in UUID form or as 32 hex digits."),
        ("context", "A context name: '.ctx', 'ctx' or ':.ctx:'."),
        ("name", "Exporter name."),
    ] {
        if path.contains(&format!("{{{name}}}")) {
            out.push(json!({
                "name": name, "in": "path", "required": true,
                "description": description, "schema": {"type": "string"}
            }));
        }
    }
    out
}

/// The body an operation takes, as a reference into `components/schemas`, so that generated
/// requests (and readers) see the fields the server reads.
fn request_body(method: &str, path: &str) -> Option<Value> {
    let schema = match (method, path) {
        ("POST", "/subjects/{subject}/versions" | "/subjects/{subject}")
        | ("POST", "/compatibility/subjects/{subject}/versions")
        | ("POST", "/compatibility/subjects/{subject}/versions/{version}") => "SchemaRequest",
        ("PUT", "/config" | "/config/{subject}") => "Config",
        ("PUT", "/mode" | "/mode/{subject}") => "Mode",
        ("POST" | "PUT", _) => "Object",
        _ => return None,
    };
    let reference = json!({"schema": {"$ref": format!("#/components/schemas/{schema}")}});
    Some(json!({
        "required": true,
        "content": {
            "application/vnd.schemaregistry.v1+json": reference,
            "application/json": reference,
        }
    }))
}

/// Flags an operation reads from its query string.
fn query_parameters(method: &str, path: &str) -> Vec<Value> {
    let flag = |name: &str, description: &str| {
        json!({"name": name, "in": "query", "required": false,
               "description": description, "schema": {"type": "boolean"}})
    };
    match (method, path) {
        ("DELETE", "/subjects/{subject}" | "/subjects/{subject}/versions/{version}") => {
            vec![flag("permanent", "Delete for good (after a soft delete).")]
        }
        ("POST", "/subjects/{subject}/versions") => vec![
            flag("normalize", "Register the normalized form."),
            flag("force", "Skip the compatibility check."),
        ],
        ("POST", "/subjects/{subject}") => vec![
            flag("normalize", "Look up the normalized form."),
            flag("deleted", "Also find soft-deleted versions."),
        ],
        ("GET", "/subjects" | "/subjects/{subject}/versions" | "/schemas") => {
            vec![flag("deleted", "Include soft-deleted entries.")]
        }
        _ if path.starts_with("/covenant/v1/subjects/{subject}/profiles") => {
            profile_query(method, path)
        }
        _ => Vec::new(),
    }
}

/// The query parameters of the profile routes.
fn profile_query(method: &str, path: &str) -> Vec<Value> {
    let param = |name: &str, kind: &str, description: &str| {
        json!({"name": name, "in": "query", "required": false,
               "description": description, "schema": {"type": kind}})
    };
    let paging = || {
        vec![
            param("offset", "integer", "Profiles to skip."),
            param(
                "limit",
                "integer",
                "Profiles to return (default 100, at most 1000).",
            ),
        ]
    };
    match (
        method,
        path.trim_start_matches("/covenant/v1/subjects/{subject}/profiles"),
    ) {
        ("POST", "") => vec![
            param(
                "from",
                "string",
                "Start of the window (RFC 3339 or ms; default: to).",
            ),
            param(
                "to",
                "string",
                "End of the window (RFC 3339 or ms; default: now).",
            ),
        ],
        ("GET", "") => paging(),
        ("GET", "/trend") => {
            let mut out = vec![param(
                "path",
                "string",
                "The field path, e.g. /vendor_data/marginTradingAllowed.",
            )];
            out.extend(paging());
            out
        }
        ("GET", "/findings") => vec![
            param(
                "promoteShare",
                "number",
                "Overrides profileThresholds.promoteShare.",
            ),
            param(
                "promoteGroups",
                "integer",
                "Overrides profileThresholds.promoteGroups.",
            ),
            param(
                "removeShare",
                "number",
                "Overrides profileThresholds.removeShare.",
            ),
        ],
        _ => Vec::new(),
    }
}

fn components() -> Value {
    json!({
        "Error": {
            "type": "object",
            "required": ["error_code", "message"],
            "properties": {"error_code": {"type": "integer"}, "message": {"type": "string"}}
        },
        "SchemaRequest": {
            "type": "object",
            "required": ["schema"],
            "properties": {
                "schema": {"type": "string", "description": "The schema text."},
                "schemaType": {"type": "string", "enum": ["AVRO", "JSON", "PROTOBUF", "ICEBERG"]},
                "references": {"type": "array", "items": {
                    "type": "object",
                    "required": ["name", "subject", "version"],
                    "properties": {
                        "name": {"type": "string"},
                        "subject": {"type": "string"},
                        "version": {"type": "integer"}
                    }
                }},
                "metadata": {"type": "object"},
                "ruleSet": {"type": "object"},
                "version": {"type": "integer"},
                "id": {"type": "integer"},
                "samples": {
                    "type": "array",
                    "description": "Covenant: payloads written with this schema, decoded with earlier versions as readers under FORWARD and FULL levels.",
                    "items": {
                        "type": "object",
                        "required": ["encoding", "payload"],
                        "properties": {
                            "encoding": {"type": "string", "enum": ["avro", "protobuf", "json", "confluent"]},
                            "payload": {"type": "string", "format": "byte"},
                            "messageName": {"type": "string"}
                        }
                    }
                }
            }
        },
        "Config": {
            "type": "object",
            "properties": {
                "compatibility": {"type": "string", "enum": [
                    "NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD",
                    "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE"]},
                "normalize": {"type": "boolean"}
            }
        },
        "Mode": {
            "type": "object",
            "required": ["mode"],
            "properties": {"mode": {"type": "string", "enum": [
                "READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT"]}}
        },
        "Object": {"type": "object"}
    })
}

/// The document served at `/openapi.json`.
pub fn document() -> Value {
    let mut paths = Map::new();
    for (method, path, summary) in crate::operations() {
        let entry = paths
            .entry(path.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(ops) = entry {
            let mut parameters = parameters(path);
            parameters.extend(query_parameters(method, path));
            let mut operation = json!({
                "summary": summary,
                "parameters": parameters,
                "responses": {
                    "200": {"description": "Success", "content": {"application/vnd.schemaregistry.v1+json": {}}},
                    "default": {"description": "Error", "content": {"application/vnd.schemaregistry.v1+json": {
                        "schema": {"$ref": "#/components/schemas/Error"}}}}
                }
            });
            if let Some(body) = request_body(method, path) {
                operation["requestBody"] = body;
            }
            ops.insert(method.to_ascii_lowercase(), operation);
        }
    }
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "Covenant schema registry",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Confluent Schema Registry compatible REST API."
        },
        "paths": paths,
        "components": {"schemas": components()}
    })
}
