//! buf's `FIELD_SAME_DEFAULT` (WIRE and WIRE_JSON).

use crate::buf::*;
use covenant_engine::{Finding, RuleSpec, Severity};
#[allow(unused_imports)]
use prost_reflect::{Kind, Value};

pub static RULE: RuleSpec = RuleSpec {
    id: "FIELD_SAME_DEFAULT",
    format: "protobuf",
    category: "wire",
    default_severity: Severity::Error,
    summary: "A proto2 field's default value changed, so readers fill absent values differently.",
    bad_example: "optional int32 retries = 1 [default = 3]; -> [default = 5]",
    good_example: "keep [default = 3]",
    hint: "Keep the default; introduce a new field if a different default is needed.",
    peers: &["buf:FIELD_SAME_DEFAULT"],
};

pub(crate) fn check(prev: &FieldView, cur: &FieldView, out: &mut Vec<Finding>) {
    let can_have_default = |f: &FieldView| !f.list && !f.map && !matches!(f.kind, Kind::Message(_));
    if !can_have_default(prev) || !can_have_default(cur) {
        return;
    }
    let (prev_default, cur_default) = (prev.default(), cur.default());
    if is_zero(&prev_default) && is_zero(&cur_default) {
        return;
    }
    if !defaults_equal(&prev_default, &cur_default) {
        out.push(Finding::new(
            &RULE,
            cur.path(),
            format!(
                "{} changed default value from {} to {}.",
                cur.describe(),
                printable(&prev_default),
                printable(&cur_default)
            ),
        ));
    }
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::Bool(b) => !b,
        Value::I32(x) | Value::EnumNumber(x) => *x == 0,
        Value::I64(x) => *x == 0,
        Value::U32(x) => *x == 0,
        Value::U64(x) => *x == 0,
        Value::F32(x) => *x == 0.0 && x.is_sign_positive(),
        Value::F64(x) => *x == 0.0 && x.is_sign_positive(),
        Value::String(s) => s.is_empty(),
        Value::Bytes(b) => b.is_empty(),
        _ => true,
    }
}

enum Num {
    Int(i128),
    Float(f64, bool),
    Text(Vec<u8>),
}

fn num(v: &Value) -> Num {
    match v {
        Value::Bool(b) => Num::Int(i128::from(*b)),
        Value::I32(x) | Value::EnumNumber(x) => Num::Int(i128::from(*x)),
        Value::I64(x) => Num::Int(i128::from(*x)),
        Value::U32(x) => Num::Int(i128::from(*x)),
        Value::U64(x) => Num::Int(i128::from(*x)),
        Value::F32(x) => Num::Float(f64::from(*x), true),
        Value::F64(x) => Num::Float(*x, false),
        Value::String(s) => Num::Text(s.as_bytes().to_vec()),
        Value::Bytes(b) => Num::Text(b.to_vec()),
        _ => Num::Text(Vec::new()),
    }
}

fn defaults_equal(a: &Value, b: &Value) -> bool {
    match (num(a), num(b)) {
        (Num::Text(x), Num::Text(y)) => x == y,
        (Num::Text(_), _) | (_, Num::Text(_)) => false,
        (Num::Int(x), Num::Int(y)) => x == y,
        (Num::Float(x, x32), Num::Float(y, y32)) => {
            (x.is_nan() && y.is_nan())
                || if x32 || y32 {
                    (x as f32) == (y as f32)
                } else {
                    x == y
                }
        }
        (Num::Int(i), Num::Float(f, _)) | (Num::Float(f, _), Num::Int(i)) => {
            !f.is_nan() && f == i as f64
        }
    }
}

fn printable(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Bytes(b) => format!("{:?}", b.as_ref()),
        Value::Bool(b) => b.to_string(),
        Value::I32(x) | Value::EnumNumber(x) => x.to_string(),
        Value::I64(x) => x.to_string(),
        Value::U32(x) => x.to_string(),
        Value::U64(x) => x.to_string(),
        Value::F32(x) => x.to_string(),
        Value::F64(x) => x.to_string(),
        _ => String::from("?"),
    }
}

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::{Confluent, Wire};

    const OLD: &str = "syntax = \"proto2\";\nmessage A { optional int32 x = 1 [default = 3]; }\n";
    const NEW: &str = "syntax = \"proto2\";\nmessage A { optional int32 x = 1 [default = 5]; }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, Wire);
    }

    #[test]
    fn silent_without_a_change_or_under_confluent() {
        silent(&RULE, OLD, OLD, Wire);
        silent(&RULE, OLD, NEW, Confluent);
    }
}
