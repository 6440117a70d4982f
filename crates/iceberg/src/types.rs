//! Iceberg's types: the primitive names of the specification's JSON form, nested `struct`,
//! `list` and `map`, and which type changes the format can apply to existing data.

use std::fmt;

/// A primitive type as the specification names it in JSON.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Primitive {
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Date,
    Time,
    Timestamp,
    Timestamptz,
    TimestampNs,
    TimestamptzNs,
    String,
    Uuid,
    Binary,
    Fixed(u64),
    Decimal {
        precision: u32,
        scale: u32,
    },
    /// Format version 3: a column whose values are all null so far.
    Unknown,
    /// Format version 3: semi-structured values.
    Variant,
    /// Format version 3, with its coordinate reference system when given.
    Geometry(Option<String>),
    /// Format version 3, with its reference system and edge algorithm when given.
    Geography(Option<String>, Option<String>),
}

/// The largest decimal precision the specification allows.
pub const MAX_DECIMAL_PRECISION: u32 = 38;

impl Primitive {
    /// Reads a primitive type name; whitespace inside parameters is allowed
    /// (`decimal(9, 2)`), as the specification asks of readers.
    pub fn parse(text: &str) -> Result<Primitive, String> {
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let simple = match compact.as_str() {
            "boolean" => Some(Primitive::Boolean),
            "int" => Some(Primitive::Int),
            "long" => Some(Primitive::Long),
            "float" => Some(Primitive::Float),
            "double" => Some(Primitive::Double),
            "date" => Some(Primitive::Date),
            "time" => Some(Primitive::Time),
            "timestamp" => Some(Primitive::Timestamp),
            "timestamptz" => Some(Primitive::Timestamptz),
            "timestamp_ns" => Some(Primitive::TimestampNs),
            "timestamptz_ns" => Some(Primitive::TimestamptzNs),
            "string" => Some(Primitive::String),
            "uuid" => Some(Primitive::Uuid),
            "binary" => Some(Primitive::Binary),
            "unknown" => Some(Primitive::Unknown),
            "variant" => Some(Primitive::Variant),
            "geometry" => Some(Primitive::Geometry(None)),
            "geography" => Some(Primitive::Geography(None, None)),
            _ => None,
        };
        if let Some(p) = simple {
            return Ok(p);
        }
        if let Some(n) = compact
            .strip_prefix("fixed[")
            .and_then(|r| r.strip_suffix(']'))
        {
            return match n.parse::<u64>() {
                Ok(len) if len > 0 && len <= i32::MAX as u64 => Ok(Primitive::Fixed(len)),
                _ => Err(format!(
                    "'{text}': the length of fixed[L] must be a positive integer"
                )),
            };
        }
        if let Some(args) = params(&compact, "decimal") {
            return decimal(text, &args);
        }
        if let Some(args) = params(text.trim(), "geometry") {
            return match args.as_slice() {
                [crs] => Ok(Primitive::Geometry(Some(crs.clone()))),
                _ => Err(format!(
                    "'{text}': geometry takes one parameter, geometry(C)"
                )),
            };
        }
        if let Some(args) = params(text.trim(), "geography") {
            return match args.as_slice() {
                [crs] => Ok(Primitive::Geography(Some(crs.clone()), None)),
                [crs, algorithm] => Ok(Primitive::Geography(
                    Some(crs.clone()),
                    Some(algorithm.clone()),
                )),
                _ => Err(format!(
                    "'{text}': geography takes geography(C) or geography(C, A)"
                )),
            };
        }
        Err(format!("'{text}' is not an Iceberg type"))
    }

    /// Whether an identifier field may have this type (not floating point, per the spec).
    pub fn can_identify(&self) -> bool {
        !matches!(
            self,
            Primitive::Float
                | Primitive::Double
                | Primitive::Unknown
                | Primitive::Variant
                | Primitive::Geometry(_)
                | Primitive::Geography(_, _)
        )
    }

    /// The Spark SQL type for DDL, or `None` where Spark has no type for it (Iceberg's
    /// `timestamp` without zone is Spark's `timestamp_ntz`; `timestamptz` is `timestamp`).
    pub fn spark(&self) -> Option<String> {
        Some(match self {
            Primitive::Boolean => "boolean".into(),
            Primitive::Int => "int".into(),
            Primitive::Long => "bigint".into(),
            Primitive::Float => "float".into(),
            Primitive::Double => "double".into(),
            Primitive::Date => "date".into(),
            Primitive::Timestamp => "timestamp_ntz".into(),
            Primitive::Timestamptz => "timestamp".into(),
            Primitive::String => "string".into(),
            Primitive::Binary => "binary".into(),
            Primitive::Decimal { precision, scale } => format!("decimal({precision},{scale})"),
            _ => return None,
        })
    }
}

/// The parameters of `name(a, b)`, trimmed; `None` when `text` is not of that shape.
fn params(text: &str, name: &str) -> Option<Vec<String>> {
    let inner = text.strip_prefix(name)?.trim_start();
    let inner = inner.strip_prefix('(')?.strip_suffix(')')?;
    Some(inner.split(',').map(|p| p.trim().to_string()).collect())
}

fn decimal(text: &str, args: &[String]) -> Result<Primitive, String> {
    let [p, s] = args else {
        return Err(format!("'{text}': decimal takes decimal(P, S)"));
    };
    let (Ok(precision), Ok(scale)) = (p.parse::<u32>(), s.parse::<u32>()) else {
        return Err(format!(
            "'{text}': precision and scale must be non-negative integers"
        ));
    };
    if precision == 0 || precision > MAX_DECIMAL_PRECISION {
        return Err(format!(
            "'{text}': decimal precision must be between 1 and {MAX_DECIMAL_PRECISION}"
        ));
    }
    if scale > precision {
        return Err(format!(
            "'{text}': decimal scale cannot exceed its precision"
        ));
    }
    Ok(Primitive::Decimal { precision, scale })
}

impl fmt::Display for Primitive {
    /// The specification's spelling, as the Java and Python implementations write it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Primitive::Boolean => f.write_str("boolean"),
            Primitive::Int => f.write_str("int"),
            Primitive::Long => f.write_str("long"),
            Primitive::Float => f.write_str("float"),
            Primitive::Double => f.write_str("double"),
            Primitive::Date => f.write_str("date"),
            Primitive::Time => f.write_str("time"),
            Primitive::Timestamp => f.write_str("timestamp"),
            Primitive::Timestamptz => f.write_str("timestamptz"),
            Primitive::TimestampNs => f.write_str("timestamp_ns"),
            Primitive::TimestamptzNs => f.write_str("timestamptz_ns"),
            Primitive::String => f.write_str("string"),
            Primitive::Uuid => f.write_str("uuid"),
            Primitive::Binary => f.write_str("binary"),
            Primitive::Fixed(n) => write!(f, "fixed[{n}]"),
            Primitive::Decimal { precision, scale } => write!(f, "decimal({precision}, {scale})"),
            Primitive::Unknown => f.write_str("unknown"),
            Primitive::Variant => f.write_str("variant"),
            Primitive::Geometry(None) => f.write_str("geometry"),
            Primitive::Geometry(Some(c)) => write!(f, "geometry({c})"),
            Primitive::Geography(None, _) => f.write_str("geography"),
            Primitive::Geography(Some(c), None) => write!(f, "geography({c})"),
            Primitive::Geography(Some(c), Some(a)) => write!(f, "geography({c}, {a})"),
        }
    }
}

/// Whether data written as `from` can be read as `to`: the same type, or a promotion.
///
/// The specification's table allows int→long, float→double and decimal precision widening
/// with the same scale in every format version, and in version 3 also date→timestamp(_ns)
/// and unknown→any type. The reference implementations (Java `TypeUtil.isPromotionAllowed`,
/// which iceberg-rust mirrors) allow only the first three, and Covenant follows them: a table
/// is changed by one of those engines, so a change they refuse cannot be applied whatever the
/// specification permits. Date→timestamp also changes the result of a partition transform on
/// the column.
pub fn promotable(from: &Primitive, to: &Primitive) -> bool {
    match (from, to) {
        _ if from == to => true,
        (Primitive::Int, Primitive::Long) | (Primitive::Float, Primitive::Double) => true,
        (
            Primitive::Decimal {
                precision: p,
                scale: s,
            },
            Primitive::Decimal {
                precision: q,
                scale: t,
            },
        ) => s == t && p <= q,
        _ => false,
    }
}

/// A type in the specification's JSON form, with the ids of list elements and map entries.
#[derive(Debug, Clone, PartialEq)]
pub enum Type {
    Primitive(Primitive),
    Struct(Vec<crate::Field>),
    List {
        element_id: i32,
        element_required: bool,
        element: Box<Type>,
    },
    Map {
        key_id: i32,
        key: Box<Type>,
        value_id: i32,
        value_required: bool,
        value: Box<Type>,
    },
}

impl Type {
    /// The kind, for messages about a change of kind: `struct`, `list`, `map` or the primitive.
    pub fn kind(&self) -> String {
        match self {
            Type::Primitive(p) => p.to_string(),
            Type::Struct(_) => "struct".into(),
            Type::List { .. } => "list".into(),
            Type::Map { .. } => "map".into(),
        }
    }

    pub fn primitive(&self) -> Option<&Primitive> {
        match self {
            Type::Primitive(p) => Some(p),
            _ => None,
        }
    }

    /// The Spark SQL type, for `ADD COLUMN`; `None` when some part has no Spark type.
    pub fn spark(&self) -> Option<String> {
        match self {
            Type::Primitive(p) => p.spark(),
            Type::Struct(fields) => {
                let parts: Option<Vec<String>> = fields
                    .iter()
                    .map(|f| {
                        let not_null = if f.required { " NOT NULL" } else { "" };
                        Some(format!("{}: {}{not_null}", quote(&f.name), f.ty.spark()?))
                    })
                    .collect();
                Some(format!("struct<{}>", parts?.join(", ")))
            }
            Type::List { element, .. } => Some(format!("array<{}>", element.spark()?)),
            Type::Map { key, value, .. } => {
                Some(format!("map<{}, {}>", key.spark()?, value.spark()?))
            }
        }
    }
}

impl fmt::Display for Type {
    /// A compact readable form: `struct<a: int, b: string>`, `list<long>`, `map<string, int>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Primitive(p) => write!(f, "{p}"),
            Type::Struct(fields) => {
                f.write_str("struct<")?;
                for (i, field) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}: {}", field.name, field.ty)?;
                }
                f.write_str(">")
            }
            Type::List { element, .. } => write!(f, "list<{element}>"),
            Type::Map { key, value, .. } => write!(f, "map<{key}, {value}>"),
        }
    }
}

/// Spark SQL's keywords that cannot stand as a plain identifier: those reserved under ANSI
/// mode (`spark.sql.ansi.enabled`) and those strict-non-reserved in the default mode (Spark's
/// "SQL Keywords" table, docs/sql-ref-ansi-compliance.md). Quoting them is right in both
/// modes. Sorted, for a binary search.
const SPARK_RESERVED: [&str; 73] = [
    "ALL",
    "AND",
    "ANTI",
    "ANY",
    "AS",
    "AUTHORIZATION",
    "BOTH",
    "CASE",
    "CAST",
    "CHECK",
    "COLLATE",
    "COLUMN",
    "CONSTRAINT",
    "CREATE",
    "CROSS",
    "CURRENT_DATE",
    "CURRENT_TIME",
    "CURRENT_TIMESTAMP",
    "CURRENT_USER",
    "DISTINCT",
    "ELSE",
    "END",
    "ESCAPE",
    "EXCEPT",
    "FALSE",
    "FETCH",
    "FILTER",
    "FOR",
    "FOREIGN",
    "FROM",
    "FULL",
    "GRANT",
    "GROUP",
    "HAVING",
    "IN",
    "INNER",
    "INTERSECT",
    "INTO",
    "IS",
    "JOIN",
    "LATERAL",
    "LEADING",
    "LEFT",
    "MINUS",
    "NATURAL",
    "NOT",
    "NULL",
    "ON",
    "ONLY",
    "OR",
    "ORDER",
    "OUTER",
    "OVERLAPS",
    "PRIMARY",
    "REFERENCES",
    "RIGHT",
    "SELECT",
    "SEMI",
    "SESSION_USER",
    "SOME",
    "TABLE",
    "THEN",
    "TIME",
    "TO",
    "TRAILING",
    "TRUE",
    "UNION",
    "UNIQUE",
    "UNKNOWN",
    "USER",
    "USING",
    "WHEN",
    "WHERE",
];

/// A Spark SQL identifier, back-quoted when it is not a plain word or is a reserved keyword
/// (a column named `order`).
pub fn quote(name: &str) -> String {
    let plain = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && SPARK_RESERVED
            .binary_search(&name.to_ascii_uppercase().as_str())
            .is_err();
    if plain {
        name.to_string()
    } else {
        format!("`{}`", name.replace('`', "``"))
    }
}

/// A multi-part table name (`catalog.db.table`) as Spark SQL reads it: split at the dots
/// outside back-quotes, each part quoted as [`quote`] quotes a column (`cat.db.my-table`
/// becomes ``cat.db.`my-table` ``); parts already back-quoted are kept as written.
pub fn quote_table(name: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut part = String::new();
    let mut quoted = false;
    let mut chars = name.chars().peekable();
    // Each part as (its name, whether it was back-quoted), unquoted as it is read.
    let mut was_quoted = false;
    let finish = |part: &mut String, was_quoted: &mut bool, parts: &mut Vec<String>| {
        parts.push(if *was_quoted {
            format!("`{}`", part.replace('`', "``"))
        } else {
            quote(part)
        });
        part.clear();
        *was_quoted = false;
    };
    while let Some(c) = chars.next() {
        match c {
            '`' if quoted && chars.peek() == Some(&'`') => {
                chars.next();
                part.push('`');
            }
            '`' if quoted => quoted = false,
            '`' if part.is_empty() => {
                quoted = true;
                was_quoted = true;
            }
            '.' if !quoted => finish(&mut part, &mut was_quoted, &mut parts),
            c => part.push(c),
        }
    }
    finish(&mut part, &mut was_quoted, &mut parts);
    parts.join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_accept_whitespace_and_print_in_the_spec_spelling() {
        let d = Primitive::parse("decimal( 9 ,2 )").expect("decimal");
        assert_eq!(
            d,
            Primitive::Decimal {
                precision: 9,
                scale: 2
            }
        );
        assert_eq!(d.to_string(), "decimal(9, 2)");
        assert_eq!(Primitive::parse("fixed[ 16 ]"), Ok(Primitive::Fixed(16)));
        assert_eq!(
            Primitive::parse("geography(srid:4326, spherical)"),
            Ok(Primitive::Geography(
                Some("srid:4326".into()),
                Some("spherical".into())
            ))
        );
    }

    #[test]
    fn bad_parameters_are_refused_with_the_reason() {
        for (text, why) in [
            ("decimal(39, 2)", "between 1 and 38"),
            ("decimal(4, 5)", "scale cannot exceed"),
            ("decimal(4)", "decimal(P, S)"),
            ("fixed[0]", "positive integer"),
            ("fixed[-3]", "positive integer"),
            ("varchar", "not an Iceberg type"),
        ] {
            let err = Primitive::parse(text).expect_err(text);
            assert!(err.contains(why), "{text}: {err}");
        }
    }

    #[test]
    fn promotions_are_those_the_reference_implementations_apply() {
        let dec = |precision, scale| Primitive::Decimal { precision, scale };
        assert!(promotable(&Primitive::Int, &Primitive::Long));
        assert!(promotable(&Primitive::Float, &Primitive::Double));
        assert!(promotable(&dec(9, 2), &dec(18, 2)));
        assert!(!promotable(&dec(9, 2), &dec(18, 3)), "scale must stay");
        assert!(!promotable(&dec(18, 2), &dec(9, 2)), "no narrowing");
        assert!(!promotable(&Primitive::Long, &Primitive::Int));
        assert!(!promotable(&Primitive::Date, &Primitive::Timestamp));
        assert!(!promotable(&Primitive::Unknown, &Primitive::Int));
        assert!(!promotable(&Primitive::String, &Primitive::Binary));
    }

    #[test]
    fn spark_names_follow_spark_not_iceberg() {
        assert_eq!(Primitive::Long.spark().as_deref(), Some("bigint"));
        assert_eq!(
            Primitive::Timestamp.spark().as_deref(),
            Some("timestamp_ntz")
        );
        assert_eq!(Primitive::Timestamptz.spark().as_deref(), Some("timestamp"));
        assert_eq!(Primitive::Uuid.spark(), None);
        assert_eq!(quote("price increment"), "`price increment`");
        assert_eq!(quote("tick_size"), "tick_size");
    }

    #[test]
    fn reserved_words_and_table_names_are_quoted() {
        let mut sorted = SPARK_RESERVED;
        sorted.sort_unstable();
        assert_eq!(sorted, SPARK_RESERVED, "the binary search needs the order");
        for reserved in ["order", "ORDER", "Select", "from", "group", "table", "user"] {
            assert_eq!(quote(reserved), format!("`{reserved}`"));
        }
        for plain in [
            "orders",
            "ordered_at",
            "status",
            "exchange",
            "first",
            "date",
        ] {
            assert_eq!(quote(plain), plain);
        }
        assert_eq!(quote_table("cat.db.my-table"), "cat.db.`my-table`");
        assert_eq!(quote_table("catalog.db.table"), "catalog.db.`table`");
        assert_eq!(
            quote_table("refdata.silver_instruments"),
            "refdata.silver_instruments"
        );
        assert_eq!(quote_table("cat.`my.db`.t"), "cat.`my.db`.t");
        assert_eq!(quote_table("cat.db.`odd``name`"), "cat.db.`odd``name`");
        assert_eq!(quote_table("`order`"), "`order`");
    }
}
