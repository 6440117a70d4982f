//! The Spark SQL `ALTER TABLE` statements that take a table from one schema to the next, as
//! Iceberg's Spark integration documents them, each with the same operation in a structured
//! form (the `UpdateSchema` call of the Java and Python APIs).
//!
//! A change Iceberg cannot apply (an incompatible type change, optional to required, a
//! required column without a default, a reused id, a field moved between structs, a dropped
//! partition source, a changed initial default) gets no statements at all: the plan is
//! refused with the findings that say why. Statements run in an order that keeps every
//! name valid when it is used: drops, renames (parents first; a swap goes through a
//! temporary name), type promotions, `DROP NOT NULL`, comments, additions, then moves.

use crate::IcebergSchema;
use crate::index::{Column, Index, Role};
use crate::rules::{self, Change, Pair, type_change};
use crate::types::quote;
use covenant_engine::Finding;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// The table name used when none is given.
pub const DEFAULT_TABLE: &str = "catalog.db.table";

/// One schema operation, in the form of the `UpdateSchema` APIs. Paths are lists of names
/// from the top-level column (`["points", "element", "x"]`), valid at the time the operation
/// runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum DdlOp {
    DeleteColumn {
        path: Vec<String>,
    },
    RenameColumn {
        path: Vec<String>,
        to: String,
    },
    UpdateType {
        path: Vec<String>,
        #[serde(rename = "type")]
        ty: String,
    },
    MakeOptional {
        path: Vec<String>,
    },
    UpdateDoc {
        path: Vec<String>,
        doc: String,
    },
    /// `type` is the specification's JSON form of the column's type.
    AddColumn {
        path: Vec<String>,
        #[serde(rename = "type")]
        ty: serde_json::Value,
        doc: Option<String>,
    },
    MoveFirst {
        path: Vec<String>,
    },
    MoveAfter {
        path: Vec<String>,
        after: String,
    },
    SetIdentifierFields {
        fields: Vec<String>,
    },
    /// Partition evolution (`UpdatePartitionSpec`); `field` is a transform expression
    /// (`day(valid_from)`) or the name of a partition field.
    AddPartitionField {
        field: String,
    },
    DropPartitionField {
        field: String,
    },
    ReplacePartitionField {
        field: String,
        with: String,
    },
}

/// One statement with its operation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Statement {
    pub sql: String,
    #[serde(flatten)]
    pub op: DdlOp,
}

/// The statements, or why there are none.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DdlPlan {
    pub table: String,
    pub statements: Vec<Statement>,
    /// Differences the statements do not carry (a removed doc, ids Iceberg assigns itself).
    pub notes: Vec<String>,
}

/// The plan from `old` to `new` on `table`, or the findings that make the change one Iceberg
/// cannot apply. The statements name the table quoted as Spark reads it (`cat.db.my-table`
/// as ``cat.db.`my-table` ``); the plan keeps the name as given.
pub fn plan_ddl(
    old: &IcebergSchema,
    new: &IcebergSchema,
    table: &str,
) -> Result<DdlPlan, Vec<Finding>> {
    let named = table;
    let table = &crate::types::quote_table(named);
    let mut refused: Vec<Finding> = rules::readability(new, old);
    refused.extend(rules::history(old, new));
    refused.retain(|f| f.is_error() && f.rule != rules::identifier_fields_changed::RULE.id);
    let pair = Pair::new(old, new);
    let mut planner = Planner {
        table,
        pair: &pair,
        out: Vec::new(),
        notes: Vec::new(),
        refused,
    };
    planner.drops();
    planner.renames();
    planner.updates();
    planner.adds();
    planner.moves();
    planner.identifiers();
    planner
        .out
        .extend(crate::partition::statements(old, new, table));
    if !planner.refused.is_empty() {
        return Err(planner.refused);
    }
    Ok(DdlPlan {
        table: named.to_string(),
        statements: planner.out,
        notes: planner.notes,
    })
}

struct Planner<'p, 'a> {
    table: &'p str,
    pair: &'p Pair<'a>,
    out: Vec<Statement>,
    notes: Vec<String>,
    refused: Vec<Finding>,
}

fn sql_path(path: &[String]) -> String {
    path.iter().map(|p| quote(p)).collect::<Vec<_>>().join(".")
}

fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'"))
}

fn owned(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

impl Planner<'_, '_> {
    fn push(&mut self, sql: String, op: DdlOp) {
        self.out.push(Statement {
            sql: format!("ALTER TABLE {} {sql};", self.table),
            op,
        });
    }

    fn drops(&mut self) {
        let dropped: Vec<Vec<String>> = self
            .pair
            .deleted_fields()
            .map(|c| owned(&c.names))
            .collect();
        for path in dropped {
            self.push(
                format!("DROP COLUMN {}", sql_path(&path)),
                DdlOp::DeleteColumn { path },
            );
        }
    }

    /// Renames grouped by struct, parents first; within a struct a rename waits until its
    /// target name is free, and a cycle (a swap) goes through a temporary name.
    fn renames(&mut self) {
        let pair = self.pair;
        let mut groups: BTreeMap<Option<i32>, Vec<(i32, String, String)>> = BTreeMap::new();
        let mut order: Vec<Option<i32>> = Vec::new();
        for (old, new) in pair.matched() {
            if new.role == Role::Field && old.name != new.name {
                if !groups.contains_key(&new.parent) {
                    order.push(new.parent);
                }
                groups.entry(new.parent).or_default().push((
                    new.id,
                    old.name.to_string(),
                    new.name.to_string(),
                ));
            }
        }
        for parent in order {
            let prefix = match parent.and_then(|p| pair.new.get(p)) {
                Some(p) => owned(&p.names),
                None => Vec::new(),
            };
            let mut taken: BTreeSet<String> = pair
                .old
                .children_of(parent)
                .into_iter()
                .filter(|id| pair.new.get(*id).is_some())
                .filter_map(|id| pair.old.get(id).map(|c| c.name.to_string()))
                .collect();
            let mut pending = groups.remove(&parent).unwrap_or_default();
            while !pending.is_empty() {
                let ready = pending.iter().position(|(_, _, to)| !taken.contains(to));
                let (i, to) = match ready {
                    Some(i) => (i, pending[i].2.clone()),
                    None => {
                        let mut temp = format!("{}__renaming", pending[0].1);
                        while taken.contains(&temp) {
                            temp.push('_');
                        }
                        (0, temp)
                    }
                };
                let from = pending[i].1.clone();
                let mut path = prefix.clone();
                path.push(from.clone());
                self.push(
                    format!("RENAME COLUMN {} TO {}", sql_path(&path), quote(&to)),
                    DdlOp::RenameColumn {
                        path,
                        to: to.clone(),
                    },
                );
                taken.remove(&from);
                taken.insert(to.clone());
                if to == pending[i].2 {
                    pending.remove(i);
                } else {
                    pending[i].1 = to;
                }
            }
        }
    }

    fn updates(&mut self) {
        let pair = self.pair;
        for (old, new) in pair.matched() {
            let path = owned(&new.names);
            if let Some(Change::Promoted) = type_change(old.ty, new.ty) {
                let spark = new.ty.spark().unwrap_or_else(|| new.ty.to_string());
                self.push(
                    format!("ALTER COLUMN {} TYPE {spark}", sql_path(&path)),
                    DdlOp::UpdateType {
                        path: path.clone(),
                        ty: new.ty.to_string(),
                    },
                );
            }
            if old.required && !new.required {
                self.push(
                    format!("ALTER COLUMN {} DROP NOT NULL", sql_path(&path)),
                    DdlOp::MakeOptional { path: path.clone() },
                );
            }
            let docs = (
                old.field.and_then(|f| f.doc.as_ref()),
                new.field.and_then(|f| f.doc.as_ref()),
            );
            match docs {
                (a, Some(b)) if a != Some(b) => {
                    self.push(format!("ALTER COLUMN {} COMMENT {}", sql_path(&path), literal(b)), DdlOp::UpdateDoc { path, doc: b.clone() });
                }
                (Some(_), None) => self.notes.push(format!("The doc of '{}' was removed; Spark SQL has no statement to remove a column comment.", path.join("."))),
                _ => {}
            }
        }
    }

    fn adds(&mut self) {
        let pair = self.pair;
        let added: Vec<&Column<'_>> = pair.added_fields().collect();
        for c in added {
            let path = owned(&c.names);
            let Some(field) = c.field else { continue };
            if field.initial_default.is_some() || field.write_default.is_some() {
                self.refuse(c, "has a default value, which Spark SQL DDL cannot set; use the Java or Python UpdateSchema API");
                continue;
            }
            let Some(spark) = field.ty.spark() else {
                self.refuse(
                    c,
                    &format!("has type {}, which Spark SQL has no type for", field.ty),
                );
                continue;
            };
            let comment = field
                .doc
                .as_ref()
                .map(|d| format!(" COMMENT {}", literal(d)))
                .unwrap_or_default();
            let ty =
                serde_json::from_str(&crate::canonical::type_json(&field.ty)).unwrap_or_default();
            self.push(
                format!("ADD COLUMN {} {spark}{comment}", sql_path(&path)),
                DdlOp::AddColumn {
                    path,
                    ty,
                    doc: field.doc.clone(),
                },
            );
        }
        if pair.added_fields().next().is_some() {
            self.notes.push("Iceberg assigns the ids of added columns itself (above the table's last-column-id); the ids in the new schema are not carried by the statements.".into());
        }
    }

    fn refuse(&mut self, c: &Column<'_>, why: &str) {
        self.refused.push(
            Finding::new(
                &rules::column_added::RULE,
                c.pointer.clone(),
                format!("Column '{}' {why}.", c.names.join(".")),
            )
            .with_severity(covenant_engine::Severity::Error),
        );
    }

    /// Per struct: surviving columns in their old order with added ones at the end, moved
    /// into the new order by placing each column outside a longest kept run after its new
    /// predecessor.
    fn moves(&mut self) {
        let pair = self.pair;
        let parents: Vec<Option<i32>> = {
            let mut seen = BTreeSet::new();
            let mut list = vec![None];
            for c in pair.new.iter() {
                if matches!(c.ty, crate::types::Type::Struct(_)) && seen.insert(c.id) {
                    list.push(Some(c.id));
                }
            }
            list
        };
        for parent in parents {
            let target = pair.new.children_of(parent);
            let mut current: Vec<i32> = pair
                .old
                .children_of(parent)
                .into_iter()
                .filter(|id| pair.new.get(*id).is_some_and(|c| c.parent == parent))
                .collect();
            current.extend(target.iter().filter(|id| pair.old.get(**id).is_none()));
            let moved: BTreeSet<i32> = rules::column_moved::moved(&current, &target)
                .into_iter()
                .collect();
            for (i, id) in target.iter().enumerate() {
                if !moved.contains(id) {
                    continue;
                }
                let Some(c) = pair.new.get(*id) else { continue };
                let path = owned(&c.names);
                match i.checked_sub(1).and_then(|p| pair.new.get(target[p])) {
                    None => self.push(
                        format!("ALTER COLUMN {} FIRST", sql_path(&path)),
                        DdlOp::MoveFirst { path },
                    ),
                    Some(before) => {
                        let after = before.name.to_string();
                        self.push(
                            format!("ALTER COLUMN {} AFTER {}", sql_path(&path), quote(&after)),
                            DdlOp::MoveAfter { path, after },
                        );
                    }
                }
            }
        }
    }

    fn identifiers(&mut self) {
        let (old, new) = (
            &self.pair.old_schema.identifier_field_ids,
            &self.pair.new_schema.identifier_field_ids,
        );
        let as_set = |ids: &[i32]| ids.iter().copied().collect::<BTreeSet<i32>>();
        if as_set(old) == as_set(new) {
            return;
        }
        let names = |index: &Index<'_>, ids: &[i32]| -> Vec<String> {
            ids.iter()
                .filter_map(|id| index.get(*id))
                .map(|c| c.names.join("."))
                .collect()
        };
        let fields = names(&self.pair.new, new);
        if fields.is_empty() {
            let dropped = names(&self.pair.old, old);
            let list = dropped
                .iter()
                .map(|n| quote(n))
                .collect::<Vec<_>>()
                .join(", ");
            self.push(
                format!("DROP IDENTIFIER FIELDS {list}"),
                DdlOp::SetIdentifierFields { fields },
            );
        } else {
            let list = fields
                .iter()
                .map(|n| n.split('.').map(quote).collect::<Vec<_>>().join("."))
                .collect::<Vec<_>>()
                .join(", ");
            self.push(
                format!("SET IDENTIFIER FIELDS {list}"),
                DdlOp::SetIdentifierFields { fields },
            );
        }
    }
}

impl DdlPlan {
    /// The statements, one a line, with the notes as SQL comments.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for s in &self.statements {
            out.push_str(&s.sql);
            out.push('\n');
        }
        if self.statements.is_empty() {
            out.push_str("-- no schema change\n");
        }
        for n in &self.notes {
            out.push_str(&format!("-- {n}\n"));
        }
        out
    }
}
