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
    /// Whether a pair is compatible, for choosing union branches: only the verdict is kept,
    /// not the issues with their paths, so trying every branch of a union against every
    /// branch of another costs one entry per pair instead of all their issues.
    verdicts: HashMap<(NodeId, NodeId), bool>,
    /// True while `calculate` only needs a verdict (nested issues are then not collected).
    verdict_only: bool,
    /// How many pairs are being compared one inside the other.
    depth: usize,
    empty: Rc<Vec<Issue>>,
}

/// Nested pair comparisons deeper than this spend the whole budget instead of risking the
/// stack. Parsing bounds each schema's depth, but a reader cycle and a writer cycle of
/// different lengths walk together for the product of their lengths before a pair repeats.
const MAX_PAIR_DEPTH: usize = 512;

impl<'a> Checker<'a> {
    pub fn new(r: &'a Arena, w: &'a Arena) -> Self {
        Checker {
            r,
            w,
            memo: HashMap::new(),
            verdicts: HashMap::new(),
            verdict_only: false,
            depth: 0,
            empty: Rc::new(Vec::new()),
        }
    }

    pub fn check_root(&mut self) -> Vec<Issue> {
        self.get(self.r.root, self.w.root).as_ref().clone()
    }

    fn get(&mut self, r: NodeId, w: NodeId) -> Rc<Vec<Issue>> {
        if self.r.same_shape(r, self.w, w) {
            return self.empty.clone();
        }
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
        if !self.enter() {
            return self.empty.clone();
        }
        self.memo.insert((r, w), None);
        let result = Rc::new(self.calculate(r, w));
        self.memo.insert((r, w), Some(result.clone()));
        self.depth -= 1;
        result
    }

    /// One more nested pair, charged to the budget; false when the walk must stop (the
    /// budget is spent, and the partial result will be discarded).
    fn enter(&mut self) -> bool {
        if self.depth >= MAX_PAIR_DEPTH {
            covenant_engine::budget::exhaust();
            return false;
        }
        if covenant_engine::budget::charge(1) {
            return false;
        }
        self.depth += 1;
        true
    }

    /// Whether a reader of `r` can read `w`, like `!incompatible(&self.get(r, w))` without
    /// keeping issues. A pair met again while in progress counts as compatible, as in `get`.
    fn compatible(&mut self, r: NodeId, w: NodeId) -> bool {
        if self.r.same_shape(r, self.w, w) {
            return true;
        }
        if let Some(done) = self.verdicts.get(&(r, w)) {
            return *done;
        }
        match self.memo.get(&(r, w)) {
            Some(Some(issues)) => return !incompatible(issues),
            Some(None) => return true,
            None => {}
        }
        if self.r.kind(r).is_primitive() && self.w.kind(w).is_primitive() {
            return !incompatible(&self.calculate(r, w));
        }
        if !self.enter() {
            return true;
        }
        self.verdicts.insert((r, w), true);
        let outer = std::mem::replace(&mut self.verdict_only, true);
        let verdict = !incompatible(&self.calculate(r, w));
        self.verdict_only = outer;
        self.verdicts.insert((r, w), verdict);
        self.depth -= 1;
        verdict
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
        // A schema reads itself with no finding: identical sub-schemas need no walk.
        if self.r.same_shape(r, self.w, w) {
            return;
        }
        if self.verdict_only {
            if !self.compatible(r, w) {
                out.push(type_mismatch::issue("", "", ""));
            }
            return;
        }
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
                    // reader alias (Java throws when several match; we take the first). The
                    // field at the same position is tried first: it is the one when fields
                    // were only added at the end. Leading fields that are the same on both
                    // sides read each other and are skipped.
                    let same = self.r.shapes.common_fields(r, &self.w.shapes, w);
                    for (i, rf) in rr.fields.iter().enumerate().skip(same) {
                        let found = match wr.fields.get(i) {
                            Some(wf) if wf.name == rf.name => Some(wf),
                            // The writer's fields are all named like earlier reader fields.
                            _ if same == wr.fields.len() && rf.aliases.is_empty() => None,
                            _ => wr
                                .field(&rf.name)
                                .or_else(|| rf.aliases.iter().find_map(|a| wr.field(a))),
                        };
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
                        if !self.compatible(r, wb) {
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
            // The branch named like the writer's type first: it is the one that matches
            // when any does, which keeps a large union against its own types linear.
            let label = self.w.branch_label(w);
            let mut rbs = rbs.clone();
            if let Some(i) = rbs.iter().position(|b| self.r.branch_label(*b) == label) {
                rbs.swap(0, i);
            }
            for rb in rbs {
                if self.compatible(rb, w) {
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

#[cfg(test)]
mod tests {
    use crate::rules::test_support::{findings, pair};

    fn record(fields: &str) -> String {
        format!(r#"{{"type":"record","name":"R","fields":[{fields}]}}"#)
    }

    #[test]
    fn fields_after_a_shared_prefix_are_still_judged() {
        let shared = r#"{"name":"a","type":"int"},{"name":"b","type":"string"}"#;
        let writer = record(&format!(r#"{shared},{{"name":"c","type":"int"}}"#));
        let reader = record(&format!(
            r#"{shared},{{"name":"c","type":"string"}},{{"name":"d","type":"long"}}"#
        ));
        assert_eq!(
            findings(&reader, &writer),
            vec![
                pair("TYPE_MISMATCH", "/fields/c/type"),
                pair("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/d"),
            ]
        );
    }

    #[test]
    fn a_later_reader_field_may_read_a_shared_writer_field_by_alias() {
        let writer = record(r#"{"name":"a","type":"int"}"#);
        let reader =
            record(r#"{"name":"a","type":"int"},{"name":"b","aliases":["a"],"type":"string"}"#);
        assert_eq!(
            findings(&reader, &writer),
            vec![pair("TYPE_MISMATCH", "/fields/b/type")]
        );
    }

    #[test]
    fn identical_sub_schemas_inside_different_records_have_no_findings() {
        let line = r#"{"name":"line","type":{"type":"record","name":"L","fields":[{"name":"x","type":["null","int"]}]}}"#;
        let writer = record(line);
        let reader = record(&format!(
            r#"{{"name":"z","type":"int","default":0}},{line}"#
        ));
        assert!(findings(&reader, &writer).is_empty());
        assert!(findings(&writer, &reader).is_empty());
    }

    #[test]
    fn fields_found_away_from_their_position_in_a_large_record_are_judged() {
        // Past the size where fields are found through an index.
        let fields: Vec<String> = (0..40)
            .map(|i| format!(r#"{{"name":"f{i}","type":"int"}}"#))
            .collect();
        let writer = record(&fields.join(","));
        let mut reordered = fields.clone();
        reordered.reverse();
        reordered[0] = r#"{"name":"f39","type":"string"}"#.to_string();
        let reader = record(&reordered.join(","));
        assert_eq!(
            findings(&reader, &writer),
            vec![pair("TYPE_MISMATCH", "/fields/f39/type")]
        );
    }
}
