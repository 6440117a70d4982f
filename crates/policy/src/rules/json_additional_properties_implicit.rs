//! An open or closed JSON Schema object should be a decision, not an accident.

use crate::pair::Pair;
use covenant_engine::{Finding, Node, NodeKind, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "JSON_ADDITIONAL_PROPERTIES_IMPLICIT",
    format: "json",
    category: "semantic",
    // Info: an implicit `additionalProperties` is valid and means `true`; the finding asks
    // the contract to make the choice deliberately, on objects a change introduces.
    default_severity: Severity::Info,
    summary: "A JSON Schema object leaves `additionalProperties` implicit, so whether extra properties are part of the contract was never decided: open content lets typos and accidental producer fields through, closed content makes additions break old validators.",
    bad_example: "{\"type\": \"object\", \"properties\": {\"caseId\": {\"type\": \"string\"}}}",
    good_example: "{\"type\": \"object\", \"properties\": {\"caseId\": {\"type\": \"string\"}}, \"additionalProperties\": false}",
    hint: "Declare `additionalProperties` explicitly: `true` (open: old consumers ignore new fields, but typos slip through) or `false` (closed: stricter, but additive changes break old validators).",
    peers: &[],
};

fn is_object(node: &Node) -> bool {
    node.kind == NodeKind::Record || node.type_name.split('|').any(|t| t == "object")
}

pub(crate) fn check(pair: &Pair<'_>) -> Vec<Finding> {
    if pair.format() != "json" {
        return Vec::new();
    }
    let mut findings = Vec::new();
    for new in pair.new_nodes() {
        if !is_object(new.node) || new.node.additional_properties.is_some() {
            continue;
        }
        // Reported once, when the implicit object appears, not on every later version.
        if pair
            .old_at(&new.node.path)
            .is_some_and(|o| is_object(o.node) && o.node.additional_properties.is_none())
        {
            continue;
        }
        let path = if new.node.path.is_empty() {
            "#"
        } else {
            new.node.path.as_str()
        };
        findings.push(Finding::new(
            &RULE,
            new.node.path.clone(),
            format!(
                "The object at '{path}' leaves 'additionalProperties' implicit, so it accepts any extra property without the contract saying so."
            ),
        ));
    }
    findings
}

#[cfg(test)]
mod tests {
    use crate::rules::testkit::*;
    use covenant_engine::FieldTree;

    #[test]
    fn implicit_root_and_nested_objects_are_reported_once() {
        let mut new = json(vec![
            property("caseId", "string"),
            property("address", "object")
                .open(None)
                .child(property("city", "string")),
            property("meta", "object").open(Some(true)),
        ]);
        new.root.additional_properties = None;
        let findings = run(
            "JSON_ADDITIONAL_PROPERTIES_IMPLICIT",
            &FieldTree::empty("JSON"),
            &new,
            &none(),
        );
        let paths: Vec<&str> = findings.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["#", "#/properties/address"]);
        assert_eq!(
            findings[0].message,
            "The object at '#' leaves 'additionalProperties' implicit, so it accepts any extra property without the contract saying so."
        );
        assert!(run("JSON_ADDITIONAL_PROPERTIES_IMPLICIT", &new, &new, &none()).is_empty());
    }

    #[test]
    fn making_a_declared_object_implicit_is_reported() {
        let old = json(vec![]);
        let mut new = json(vec![]);
        new.root.additional_properties = None;
        assert_eq!(
            run("JSON_ADDITIONAL_PROPERTIES_IMPLICIT", &old, &new, &none()).len(),
            1
        );
    }

    #[test]
    fn only_json_schemas() {
        let mut tree = avro("Case", vec![]);
        tree.root.additional_properties = None;
        assert!(
            run(
                "JSON_ADDITIONAL_PROPERTIES_IMPLICIT",
                &FieldTree::empty("AVRO"),
                &tree,
                &none()
            )
            .is_empty()
        );
    }
}
