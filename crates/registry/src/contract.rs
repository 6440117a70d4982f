//! Data contracts set in config (`defaultMetadata`, `overrideMetadata`, `defaultRuleSet`,
//! `overrideRuleSet`), merged into a registration as Confluent does:
//! `effective = merge(merge(default, specific), override)`, where *specific* is the request's
//! metadata or rule set, or the previous version's when the request has none.

use crate::{RegistryError, RegistryResult};
use serde_json::{Map, Value};

/// The contract settings of the most specific config scope that has any config at all.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Contract {
    pub default_metadata: Option<Value>,
    pub override_metadata: Option<Value>,
    pub default_rule_set: Option<Value>,
    pub override_rule_set: Option<Value>,
}

impl Contract {
    /// Reads the four keys of one config scope's settings; nulls count as absent.
    pub fn from_extra(extra: &Map<String, Value>) -> Contract {
        let get = |k: &str| extra.get(k).filter(|v| !v.is_null()).cloned();
        Contract {
            default_metadata: get("defaultMetadata"),
            override_metadata: get("overrideMetadata"),
            default_rule_set: get("defaultRuleSet"),
            override_rule_set: get("overrideRuleSet"),
        }
    }

    pub fn is_empty(&self) -> bool {
        self == &Contract::default()
    }

    /// The metadata a registration stores, given the specific one.
    pub fn metadata(&self, specific: Option<Value>) -> Option<Value> {
        if self.default_metadata.is_none() && self.override_metadata.is_none() {
            return specific;
        }
        let merged = merge_metadata(self.default_metadata.clone(), specific);
        merge_metadata(merged, self.override_metadata.clone())
    }

    /// The rule set a registration stores, given the specific one.
    pub fn rule_set(&self, specific: Option<Value>) -> Option<Value> {
        if self.default_rule_set.is_none() && self.override_rule_set.is_none() {
            return specific;
        }
        let merged = merge_rule_sets(self.default_rule_set.clone(), specific);
        merge_rule_sets(merged, self.override_rule_set.clone())
    }
}

fn present(v: Option<Value>) -> Option<Value> {
    v.filter(|v| !v.is_null())
}

/// Metadata merge: `tags` and `properties` key by key (the later value wins), `sensitive`
/// unioned. Keys and the sensitive set come out sorted, as Confluent keeps them.
pub fn merge_metadata(earlier: Option<Value>, later: Option<Value>) -> Option<Value> {
    let (earlier, later) = match (present(earlier), present(later)) {
        (None, l) => return l,
        (e, None) => return e,
        (Some(e), Some(l)) => (e, l),
    };
    let mut out = Map::new();
    for key in ["tags", "properties"] {
        let mut merged: std::collections::BTreeMap<String, Value> = Default::default();
        for side in [&earlier, &later] {
            if let Some(Value::Object(m)) = side.get(key) {
                for (k, v) in m {
                    merged.insert(k.clone(), v.clone());
                }
            }
        }
        if !merged.is_empty() {
            out.insert(key.into(), Value::Object(merged.into_iter().collect()));
        }
    }
    let mut sensitive: std::collections::BTreeSet<String> = Default::default();
    for side in [&earlier, &later] {
        if let Some(Value::Array(items)) = side.get("sensitive") {
            sensitive.extend(items.iter().filter_map(Value::as_str).map(str::to_string));
        }
    }
    if !sensitive.is_empty() {
        out.insert(
            "sensitive".into(),
            Value::Array(sensitive.into_iter().map(Value::String).collect()),
        );
    }
    Some(Value::Object(out))
}

/// Rule set merge, per list: the earlier rules not replaced by a same-named later rule, then
/// the later rules. `enableAt` comes from the later set when it has one.
pub fn merge_rule_sets(earlier: Option<Value>, later: Option<Value>) -> Option<Value> {
    let (earlier, later) = match (present(earlier), present(later)) {
        (None, l) => return l,
        (e, None) => return e,
        (Some(e), Some(l)) => (e, l),
    };
    let mut out = Map::new();
    for list in ["migrationRules", "domainRules", "encodingRules"] {
        let rules = |side: &Value| match side.get(list) {
            Some(Value::Array(a)) => a.clone(),
            _ => Vec::new(),
        };
        let (old, new) = (rules(&earlier), rules(&later));
        let replaced = |rule: &Value| {
            let name = rule.get("name");
            name.is_some() && new.iter().any(|n| n.get("name") == name)
        };
        let merged: Vec<Value> = old
            .iter()
            .filter(|r| !replaced(r))
            .cloned()
            .chain(new.iter().cloned())
            .collect();
        if !merged.is_empty() {
            out.insert(list.into(), Value::Array(merged));
        }
    }
    if let Some(at) = later
        .get("enableAt")
        .or_else(|| earlier.get("enableAt"))
        .filter(|v| !v.is_null())
    {
        out.insert("enableAt".into(), at.clone());
    }
    Some(Value::Object(out))
}

pub(crate) fn validate_rule_set(rule_set: &Option<Value>) -> RegistryResult<()> {
    let Some(Value::Object(set)) = rule_set else {
        return match rule_set {
            None | Some(Value::Null) => Ok(()),
            Some(_) => Err(RegistryError::InvalidRuleSet(
                "ruleSet must be an object".into(),
            )),
        };
    };
    let mut names = std::collections::HashSet::new();
    for (list, modes) in [
        ("domainRules", &["WRITE", "READ", "WRITEREAD"][..]),
        ("migrationRules", &["UPGRADE", "DOWNGRADE", "UPDOWN"][..]),
        ("encodingRules", &["WRITE", "READ", "WRITEREAD"][..]),
    ] {
        let Some(rules) = set.get(list) else { continue };
        let Value::Array(rules) = rules else {
            return Err(RegistryError::InvalidRuleSet(format!(
                "{list} must be a list"
            )));
        };
        for rule in rules {
            let name = rule.get("name").and_then(Value::as_str).unwrap_or("");
            if name.is_empty() {
                return Err(RegistryError::InvalidRuleSet("Missing rule name".into()));
            }
            if !names.insert(name.to_string()) {
                return Err(RegistryError::InvalidRuleSet(format!(
                    "Found rule with duplicate name '{name}'"
                )));
            }
            if rule
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty()
            {
                return Err(RegistryError::InvalidRuleSet("Missing rule type".into()));
            }
            if let Some(mode) = rule.get("mode").and_then(Value::as_str)
                && !modes.contains(&mode.to_ascii_uppercase().as_str())
            {
                return Err(RegistryError::InvalidRuleSet(if list == "migrationRules" {
                    "Migration rules can only be UPGRADE, DOWNGRADE, UPDOWN".into()
                } else {
                    "Domain rules can only be WRITE, READ, WRITEREAD".into()
                }));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(name: &str, expr: &str) -> Value {
        json!({"name": name, "kind": "CONDITION", "type": "CEL", "expr": expr})
    }

    #[test]
    fn metadata_maps_merge_key_by_key_and_sets_union() {
        let merged = merge_metadata(
            Some(
                json!({"properties": {"owner": "a", "tier": "1"}, "sensitive": ["s2"],
                        "tags": {"Order.ssn": ["PII"]}}),
            ),
            Some(json!({"properties": {"owner": "b", "app": "x"}, "sensitive": ["s1", "s2"]})),
        );
        assert_eq!(
            merged,
            Some(json!({
                "tags": {"Order.ssn": ["PII"]},
                "properties": {"app": "x", "owner": "b", "tier": "1"},
                "sensitive": ["s1", "s2"],
            }))
        );
    }

    #[test]
    fn a_missing_side_leaves_the_other_unchanged() {
        let m = json!({"properties": {"z": "1", "a": "2"}});
        assert_eq!(merge_metadata(None, Some(m.clone())), Some(m.clone()));
        assert_eq!(merge_metadata(Some(m.clone()), Some(Value::Null)), Some(m));
        assert_eq!(merge_rule_sets(None, None), None);
    }

    #[test]
    fn later_rules_replace_same_named_ones_and_others_are_kept() {
        let merged = merge_rule_sets(
            Some(json!({"domainRules": [rule("a", "1"), rule("b", "2")], "enableAt": "ALL"})),
            Some(json!({"domainRules": [rule("b", "3"), rule("c", "4")],
                        "migrationRules": [rule("m", "5")]})),
        );
        assert_eq!(
            merged,
            Some(json!({
                "migrationRules": [rule("m", "5")],
                "domainRules": [rule("a", "1"), rule("b", "3"), rule("c", "4")],
                "enableAt": "ALL",
            }))
        );
    }

    #[test]
    fn override_wins_over_specific_which_wins_over_default() {
        let contract = Contract {
            default_metadata: Some(json!({"properties": {"owner": "default", "tier": "gold"}})),
            override_metadata: Some(json!({"properties": {"owner": "platform"}})),
            default_rule_set: Some(json!({"domainRules": [rule("check", "default")]})),
            override_rule_set: Some(json!({"domainRules": [rule("forced", "x")]})),
        };
        assert_eq!(
            contract.metadata(Some(
                json!({"properties": {"owner": "team", "tier": "silver"}})
            )),
            Some(json!({"properties": {"owner": "platform", "tier": "silver"}}))
        );
        assert_eq!(
            contract.metadata(None),
            Some(json!({"properties": {"owner": "platform", "tier": "gold"}}))
        );
        assert_eq!(
            contract.rule_set(Some(json!({"domainRules": [rule("check", "mine")]}))),
            Some(json!({"domainRules": [rule("check", "mine"), rule("forced", "x")]}))
        );
    }

    #[test]
    fn no_contract_keeps_the_request_as_sent() {
        let contract = Contract::from_extra(&Map::new());
        assert!(contract.is_empty());
        let m = json!({"properties": {"z": "1", "a": "2"}});
        assert_eq!(contract.metadata(Some(m.clone())), Some(m));
        assert_eq!(contract.rule_set(None), None);
    }
}
