//! An id that names something else than before: another name with a type that cannot read
//! the old data, or an id the table assigned before (to a column since dropped).

use super::column_renamed::same_data;
use super::{Pair, describe};
use crate::index::Role;
use covenant_engine::{Finding, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "ICEBERG_FIELD_ID_REUSED",
    format: "iceberg",
    category: "structural",
    default_severity: Severity::Error,
    summary: "A field id now names a different column: another name with a type that cannot read the old values, or a new column under an id at or below the table's last-column-id that belonged to a dropped column. Iceberg never reuses ids; old data files would be read as the new column.",
    bad_example: "v1: {\"id\": 14, \"name\": \"legacy_code\", \"type\": \"string\"}\nv2: {\"id\": 14, \"name\": \"max_leverage\", \"type\": \"int\"}",
    good_example: "v2: {\"id\": 31, \"name\": \"max_leverage\", \"type\": \"int\"} (a new id above last-column-id)",
    hint: "Give the new column a new id above the table's last-column-id; let Iceberg assign it (ALTER TABLE ... ADD COLUMN) rather than writing ids by hand.",
    peers: &["iceberg:TableMetadata.lastColumnId"],
};

pub(crate) fn check(pair: &Pair<'_>, out: &mut Vec<Finding>) {
    for (old, new) in pair.matched() {
        if new.role == Role::Field && old.name != new.name && !same_data(old.ty, new.ty) {
            out.push(Finding::new(
                &RULE,
                new.pointer.clone(),
                format!("Field id {} was '{}' of type {} and now names '{}' of type {}; data written for '{}' would be read as '{}'.", new.id, old.names.join("."), old.ty, new.names.join("."), new.ty, old.name, new.name),
            ));
        }
    }
    let Some(last) = pair.old_schema.last_column_id else {
        return;
    };
    for c in pair.new.iter() {
        let top = c.parent.is_none_or(|p| pair.old.get(p).is_some());
        if c.id <= last && pair.old.get(c.id).is_none() && top {
            out.push(Finding::new(
                &RULE,
                c.pointer.clone(),
                format!("New column {} has an id the table already assigned (last-column-id is {last}); that id belonged to a dropped column, whose data files would be read as this column.", describe(c)),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::*;

    #[test]
    fn a_dropped_id_reused_with_another_type_is_refused() {
        let old = schema(&[
            (1, "symbol", true, "string"),
            (14, "legacy_code", false, "string"),
        ]);
        let new = schema(&[
            (1, "symbol", true, "string"),
            (14, "max_leverage", false, "int"),
        ]);
        let f = fires(&RULE, &old, &new);
        assert!(f.is_error());
        assert!(
            f.message
                .contains("Field id 14 was 'legacy_code' of type string"),
            "{}",
            f.message
        );
    }

    #[test]
    fn an_id_at_or_below_last_column_id_is_a_reuse() {
        let meta = r#"{"format-version":2,"last-column-id":3,"current-schema-id":0,"schemas":[{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"a","required":true,"type":"int"}]}],"default-spec-id":0,"partition-specs":[{"spec-id":0,"fields":[]}]}"#;
        let reused = schema(&[(1, "a", true, "int"), (2, "b", false, "string")]);
        let f = fires(&RULE, meta, &reused);
        assert!(f.message.contains("last-column-id is 3"), "{}", f.message);
        let fresh = schema(&[(1, "a", true, "int"), (4, "b", false, "string")]);
        silent(&RULE, meta, &fresh);
    }
}
