//! Property tests over the request surface: random paths, query strings and bodies never
//! produce a 500 or a panic, errors always have Confluent's shape, and a refused request
//! writes nothing.

use crate::common;

use proptest::prelude::*;

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("s".to_string()),
        Just("latest".to_string()),
        Just("-1".to_string()),
        Just("1".to_string()),
        Just("%2F".to_string()),
        Just("a%2Fb".to_string()),
        Just("%00".to_string()),
        Just("%ff%fe".to_string()),
        "[a-zA-Z0-9._~-]{0,12}",
        "-?[0-9]{1,12}",
    ]
}

fn path() -> impl Strategy<Value = String> {
    (
        prop_oneof![
            Just("/subjects/{}/versions"),
            Just("/subjects/{}/versions/{}"),
            Just("/subjects/{}/versions/{}/schema"),
            Just("/subjects/{}/versions/{}/referencedby"),
            Just("/subjects/{}"),
            Just("/schemas/ids/{}"),
            Just("/schemas/ids/{}/subjects"),
            Just("/config/{}"),
            Just("/mode/{}"),
            Just("/compatibility/subjects/{}/versions/{}"),
            Just("/compatibility/subjects/{}/versions"),
            Just("/{}/{}"),
        ],
        segment(),
        segment(),
    )
        .prop_map(|(t, a, b)| t.replacen("{}", &a, 1).replacen("{}", &b, 1))
}

fn query() -> impl Strategy<Value = String> {
    prop::collection::vec(
        (
            prop_oneof![
                Just("deleted"),
                Just("permanent"),
                Just("normalize"),
                Just("verbose"),
                Just("force"),
                Just("format"),
                Just("offset"),
                Just("limit"),
                Just("subjectPrefix"),
                Just("defaultToGlobal"),
            ],
            prop_oneof![
                Just("True".to_string()),
                Just("false".to_string()),
                Just("-1".to_string()),
                Just("99999999999999999999".to_string()),
                "[a-z%0-9]{0,6}"
            ],
        ),
        0..4,
    )
    .prop_map(|pairs| {
        pairs
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("&")
    })
}

fn body() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("{}".to_string()),
        Just("null".to_string()),
        Just("[]".to_string()),
        Just("{\"schema\": null}".to_string()),
        Just("{\"schema\": \"\\\"string\\\"\", \"references\": [{\"name\": \"x\", \"subject\": \"nope\", \"version\": 1}]}".to_string()),
        Just("{\"schema\": \"{\\\"type\\\": \\\"record\\\"}\"}".to_string()),
        Just("{\"schema\": \"x\", \"schemaType\": \"PROTOBUF\"}".to_string()),
        Just("{\"schema\": \"{}\", \"schemaType\": \"JSON\"}".to_string()),
        Just("{\"compatibility\": 5}".to_string()),
        Just("{\"mode\": [1]}".to_string()),
        Just("{\"schema\": \"\\\"int\\\"\", \"id\": -5, \"version\": 0}".to_string()),
        ".{0,64}",
        "\\{\"schema\": \"[^\"\\\\]{0,32}\"\\}",
    ]
}

fn method() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just("GET"), Just("POST"), Just("PUT"), Just("DELETE")]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn never_a_500_and_always_the_confluent_shape(
        method in method(), path in path(), query in query(), body in body()
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        rt.block_on(async {
            let app = common::app();
            let uri = if query.is_empty() { path.clone() } else { format!("{path}?{query}") };
            if uri.parse::<axum::http::Uri>().is_err() {
                return Ok(());
            }
            let before = app.registry.max_id().await.expect("max id");
            let with_body = matches!(method, "POST" | "PUT");
            let r = app.send(method, &uri, with_body.then_some(body.as_str())).await;
            prop_assert!(r.status.as_u16() < 500, "{method} {uri} {body:?} -> {} {}", r.status, r.text);
            if r.status.as_u16() >= 400 {
                let j: serde_json::Value = serde_json::from_str(&r.text)
                    .map_err(|e| TestCaseError::fail(format!("not JSON: {e}: {}", r.text)))?;
                prop_assert!(j["error_code"].is_i64(), "{}", r.text);
                prop_assert!(j["message"].is_string(), "{}", r.text);
                let after = app.registry.max_id().await.expect("max id");
                prop_assert_eq!(before, after, "a refused request wrote a schema");
            }
            Ok(())
        })?;
    }
}
