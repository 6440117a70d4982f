//! Reader/writer compatibility, walking both schemas the way Java's
//! `SchemaCompatibility.ReaderWriterCompatibilityChecker` does (which is Confluent's Avro
//! check), but collecting every incompatibility with a readable path. The verdict logic is
//! Java's; the per-rule decisions and messages live in `crate::rules`.

use crate::model::{Arena, Kind, NodeId};
use crate::rules::{
    fixed_size_mismatch, logical_type_changed, missing_enum_symbols, missing_union_branch,
    name_mismatch, reader_field_missing_default_value, type_mismatch,
};
use covenant_engine::{RuleSpec, Severity};
use std::collections::HashMap;
use std::rc::Rc;

/// One finding before it is turned into a [`covenant_engine::Finding`]; `path` is relative to
/// the (reader, writer) pair it was found under, so memoized results can be reused at any
/// location.
#[derive(Debug, Clone)]
pub struct Issue {
    pub rule: &'static RuleSpec,
    pub path: String,
    pub message: String,
    /// Replaces the rule's hint where the situation needs a more specific one.
    pub hint: Option<&'static str>,
}

impl Issue {
    pub fn new(
        rule: &'static RuleSpec,
        path: impl Into<String>,
        message: impl Into<String>,
    ) -> Issue {
        Issue {
            rule,
            path: path.into(),
            message: message.into(),
            hint: None,
        }
    }

    pub fn with_hint(mut self, hint: &'static str) -> Issue {
        self.hint = Some(hint);
        self
    }
}

fn incompatible(issues: &[Issue]) -> bool {
    issues
        .iter()
        .any(|i| i.rule.default_severity == Severity::Error)
}

pub struct Checker<'a> {
    pub r: &'a Arena,
    pub w: &'a Arena,
    /// `None` marks a pair whose check is in progress: met again, it counts as compatible
    /// (Java's RECURSION_IN_PROGRESS), which is what ends recursion on recursive types.
    memo: HashMap<(NodeId, NodeId), Option<Rc<Vec<Issue>>>>,
    empty: Rc<Vec<Issue>>,
}

impl<'a> Checker<'a> {
    pub fn new(r: &'a Arena, w: &'a Arena) -> Self {
        Checker {
            r,
            w,
            memo: HashMap::new(),
            empty: Rc::new(Vec::new()),
        }
    }

    pub fn check_root(&mut self) -> Vec<Issue> {
        self.get(self.r.root, self.w.root).as_ref().clone()
    }

    fn get(&mut self, r: NodeId, w: NodeId) -> Rc<Vec<Issue>> {
        // Primitive pairs cannot recurse; memoizing them would only cost time.
        if self.r.kind(r).is_primitive() && self.w.kind(w).is_primitive() {
            let issues = self.calculate(r, w);
            return if issues.is_empty() {
                self.empty.clone()
            } else {
                Rc::new(issues)
            };
        }
        match self.memo.get(&(r, w)) {
            Some(Some(done)) => return done.clone(),
            Some(None) => return self.empty.clone(),
            None => {}
        }
        self.memo.insert((r, w), None);
        let result = Rc::new(self.calculate(r, w));
        self.memo.insert((r, w), Some(result.clone()));
        result
    }

    fn nested(&mut self, segment: &str, r: NodeId, w: NodeId, out: &mut Vec<Issue>) {
        self.nested_with(|| segment.to_string(), r, w, out)
    }

    /// Like `nested`, building the path segment only when there is something to report.
    fn nested_with(
        &mut self,
        segment: impl FnOnce() -> String,
        r: NodeId,
        w: NodeId,
        out: &mut Vec<Issue>,
    ) {
        let issues = self.get(r, w);
        if issues.is_empty() {
            return;
        }
        let segment = segment();
        for issue in issues.iter() {
            out.push(Issue {
                rule: issue.rule,
                path: format!("{segment}{}", issue.path),
                message: issue.message.clone(),
                hint: issue.hint,
            });
        }
    }

    fn calculate(&mut self, r: NodeId, w: NodeId) -> Vec<Issue> {
        let (rk, wk) = (self.r.kind(r), self.w.kind(w));
        let mut out = Vec::new();
        if std::mem::discriminant(rk) == std::mem::discriminant(wk) {
            match (rk, wk) {
                (Kind::Array(ri), Kind::Array(wi)) => self.nested("/items", *ri, *wi, &mut out),
                (Kind::Map(rv), Kind::Map(wv)) => self.nested("/values", *rv, *wv, &mut out),
                (Kind::Fixed(rf), Kind::Fixed(wf)) => {
                    out.extend(name_mismatch::check(&rf.named, &wf.named, "fixed"));
                    out.extend(fixed_size_mismatch::check(rf, wf));
                    out.extend(logical_type_changed::check(self.r.node(r), self.w.node(w)));
                }
                (Kind::Enum(re), Kind::Enum(we)) => {
                    out.extend(name_mismatch::check(&re.named, &we.named, "enum"));
                    out.extend(missing_enum_symbols::check(re, we));
                }
                (Kind::Record(rr), Kind::Record(wr)) => {
                    out.extend(name_mismatch::check(&rr.named, &wr.named, "record"));
                    // Java's `lookupWriterField`: same name, else a writer field named by a
                    // reader alias (Java throws when several match; we take the first).
                    let by_name: HashMap<&str, &crate::model::Field> =
                        wr.fields.iter().map(|f| (f.name.as_str(), f)).collect();
                    for rf in &rr.fields {
                        let found = by_name.get(rf.name.as_str()).copied().or_else(|| {
                            rf.aliases
                                .iter()
                                .find_map(|a| by_name.get(a.as_str()).copied())
                        });
                        match found {
                            Some(wf) => self.nested_with(
                                || format!("/fields/{}/type", rf.name),
                                rf.ty,
                                wf.ty,
                                &mut out,
                            ),
                            None if rf.default.is_some() => {}
                            None => {
                                let path = format!("/fields/{}", rf.name);
                                if let Kind::Enum(e) = self.r.kind(rf.ty)
                                    && e.default.is_some()
                                {
                                    // Java compares the reader's enum with the writer's whole
                                    // record here, which always fails as a type mismatch.
                                    out.push(type_mismatch::enum_default_without_field(
                                        &format!("{path}/type"),
                                        &rf.name,
                                        &wr.named.name.full(),
                                    ));
                                } else {
                                    out.push(reader_field_missing_default_value::issue(
                                        &path,
                                        &rf.name,
                                        &wr.named.name.full(),
                                    ));
                                }
                            }
                        }
                    }
                }
                (Kind::Union(_), Kind::Union(wbs)) => {
                    for wb in wbs.clone() {
                        if incompatible(&self.get(r, wb)) {
                            out.push(missing_union_branch::writer_branch(
                                &format!("/{}", self.w.branch_label(wb)),
                                &self.r.describe(r),
                                &self.w.describe(wb),
                            ));
                        }
                    }
                }
                _ => out.extend(logical_type_changed::check(self.r.node(r), self.w.node(w))),
            }
            return out;
        }
        if let Kind::Union(wbs) = wk {
            for wb in wbs.clone() {
                self.nested("", r, wb, &mut out);
            }
            return out;
        }
        if let Kind::Union(rbs) = rk {
            for rb in rbs.clone() {
                if !incompatible(&self.get(rb, w)) {
                    return out;
                }
            }
            out.push(missing_union_branch::reader_union(
                "",
                &self.r.describe(r),
                &self.w.describe(w),
            ));
            return out;
        }
        if !type_mismatch::promotes(rk, wk) {
            out.push(type_mismatch::issue(
                "",
                &self.r.describe(r),
                &self.w.describe(w),
            ));
        }
        out
    }
}
