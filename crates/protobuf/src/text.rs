//! A parser for `.proto` text of the usual shape: it gives exactly the descriptor and source
//! info that `protox_parse::parse` gives, at a fraction of the cost.
//!
//! Why not only `protox_parse`: on a file of 100 messages × 50 fields it spent about 50 M
//! instructions, half of them in building and sorting source info through a line table, and
//! caused more than half of the page faults of a `covenant check` (`benches/RESULTS.md`). This
//! parser lexes by hand, knows each token's line and column as it reads it and allocates
//! little besides the descriptor itself.
//!
//! It covers what schemas in a registry are made of: `syntax`, `package`, `import`, messages
//! (fields, maps, oneofs, nested messages and enums, reserved numbers and names), enums,
//! services, and options with plain names and identifier, integer or string values, with
//! every kind of comment. For anything else (extensions, groups, custom `(options)`, floats,
//! escapes in strings, `default` values) and for every error, [`parse`] returns `None` and
//! the caller parses with `protox`, which also words the error. The tests hold both parsers to
//! the same output on every file this one accepts.

use prost_types::source_code_info::Location;
use prost_types::{
    DescriptorProto, EnumDescriptorProto, EnumOptions, EnumValueDescriptorProto, EnumValueOptions,
    FieldDescriptorProto, FieldOptions, FileDescriptorProto, FileOptions, MessageOptions,
    MethodDescriptorProto, MethodOptions, OneofDescriptorProto, OneofOptions,
    ServiceDescriptorProto, ServiceOptions, SourceCodeInfo, UninterpretedOption, descriptor_proto,
    enum_descriptor_proto, field_descriptor_proto, uninterpreted_option,
};

/// The descriptor `protox_parse::parse(name, source)` gives, or `None` when `source` is not of
/// the shape this parser covers or is not valid.
pub(crate) fn parse(name: &str, source: &str) -> Option<FileDescriptorProto> {
    parse_keeping(name, source, Keep::Everything)
}

/// The same descriptor with the source info of its declarations only: where each message,
/// field, oneof, enum, value and reserved range is, and its comments. That is all that
/// locating findings and reading comments use, and a quarter of the locations (a field has
/// five: itself, its name, number, label and type).
pub(crate) fn parse_declarations(name: &str, source: &str) -> Option<FileDescriptorProto> {
    parse_keeping(name, source, Keep::Declarations)
}

/// Which source info locations a parse keeps.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Keep {
    Everything,
    Declarations,
}

fn parse_keeping(name: &str, source: &str, keep: Keep) -> Option<FileDescriptorProto> {
    if i32::try_from(source.len()).is_err() {
        return None;
    }
    generate(name, source, keep).ok()
}

/// Not for this parser: the caller goes to `protox`.
#[derive(Debug)]
struct Unsupported;

type Result<T> = std::result::Result<T, Unsupported>;

/// Deeper nesting is an error in `protox` (and `protoc`).
const MAX_MESSAGE_NESTING_DEPTH: u32 = 31;
const MAX_MESSAGE_FIELD_NUMBER: i32 = 536_870_911;

// Field numbers of the descriptor messages, for source info paths.
const FILE_PACKAGE: i32 = 2;
const FILE_DEPENDENCY: i32 = 3;
const FILE_MESSAGE_TYPE: i32 = 4;
const FILE_ENUM_TYPE: i32 = 5;
const FILE_SERVICE: i32 = 6;
const FILE_OPTIONS: i32 = 8;
const FILE_PUBLIC_DEPENDENCY: i32 = 10;
const FILE_WEAK_DEPENDENCY: i32 = 11;
const FILE_SYNTAX: i32 = 12;
const MESSAGE_NAME: i32 = 1;
const MESSAGE_FIELD: i32 = 2;
const MESSAGE_NESTED_TYPE: i32 = 3;
const MESSAGE_ENUM_TYPE: i32 = 4;
const MESSAGE_OPTIONS: i32 = 7;
const MESSAGE_ONEOF_DECL: i32 = 8;
const MESSAGE_RESERVED_RANGE: i32 = 9;
const MESSAGE_RESERVED_NAME: i32 = 10;
const RANGE_START: i32 = 1;
const RANGE_END: i32 = 2;
const FIELD_NAME: i32 = 1;
const FIELD_NUMBER: i32 = 3;
const FIELD_LABEL: i32 = 4;
const FIELD_TYPE: i32 = 5;
const FIELD_TYPE_NAME: i32 = 6;
const FIELD_OPTIONS: i32 = 8;
const FIELD_JSON_NAME: i32 = 10;
const ONEOF_NAME: i32 = 1;
const ONEOF_OPTIONS: i32 = 2;
const ENUM_NAME: i32 = 1;
const ENUM_VALUE: i32 = 2;
const ENUM_OPTIONS: i32 = 3;
const ENUM_RESERVED_RANGE: i32 = 4;
const ENUM_RESERVED_NAME: i32 = 5;
const ENUM_VALUE_NAME: i32 = 1;
const ENUM_VALUE_NUMBER: i32 = 2;
const ENUM_VALUE_OPTIONS: i32 = 3;
const SERVICE_NAME: i32 = 1;
const SERVICE_METHOD: i32 = 2;
const SERVICE_OPTIONS: i32 = 3;
const METHOD_NAME: i32 = 1;
const METHOD_INPUT_TYPE: i32 = 2;
const METHOD_OUTPUT_TYPE: i32 = 3;
const METHOD_OPTIONS: i32 = 4;
const METHOD_CLIENT_STREAMING: i32 = 5;
const METHOD_SERVER_STREAMING: i32 = 6;
const UNINTERPRETED_OPTION: i32 = 999;

/// A place in the source: zero-based line and byte column, as source info counts them.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Pos {
    line: i32,
    col: i32,
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Span {
    start: Pos,
    end: Pos,
}

impl Span {
    fn to(self, end: Span) -> Span {
        Span {
            start: self.start,
            end: end.end,
        }
    }

    /// Source info's form: three numbers when the span is on one line, else four.
    fn resolved(self) -> Vec<i32> {
        if self.start.line == self.end.line {
            vec![self.start.line, self.start.col, self.end.col]
        } else {
            vec![self.start.line, self.start.col, self.end.line, self.end.col]
        }
    }
}

/// A token; a comment's text waits in [`Lexer::comment`] until it is taken.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Tok<'a> {
    Ident(&'a str),
    Int(u64),
    /// A string literal without escapes.
    Str(&'a str),
    Dot,
    Minus,
    LeftBrace,
    RightBrace,
    LeftBracket,
    RightBracket,
    LeftAngle,
    RightAngle,
    Comma,
    Equals,
    Semicolon,
    LeftParen,
    RightParen,
    /// Anything else that may stand in valid text (`+`, `:`): never accepted here.
    Other,
    LineComment,
    BlockComment,
    Newline,
}

impl Tok<'_> {
    fn is_comment_or_newline(&self) -> bool {
        matches!(self, Tok::LineComment | Tok::BlockComment | Tok::Newline)
    }

    fn is_ident(&self, word: &str) -> bool {
        matches!(self, Tok::Ident(w) if *w == word)
    }
}

struct Lexer<'a> {
    text: &'a str,
    pos: usize,
    line: i32,
    line_start: usize,
    started: bool,
    /// The text of the comment just lexed.
    comment: String,
}

impl<'a> Lexer<'a> {
    fn here(&self) -> Pos {
        Pos {
            line: self.line,
            col: (self.pos - self.line_start) as i32,
        }
    }

    /// Moves to `end`, counting the lines passed.
    fn advance(&mut self, end: usize) {
        let bytes = self.text.as_bytes();
        for (i, &b) in bytes[self.pos..end].iter().enumerate() {
            if b == b'\n' {
                self.line += 1;
                self.line_start = self.pos + i + 1;
            }
        }
        self.pos = end;
    }

    fn next(&mut self) -> Result<Option<(Tok<'a>, Span)>> {
        let bytes = self.text.as_bytes();
        while self.pos < bytes.len()
            && matches!(bytes[self.pos], b'\t' | 0x0b | 0x0c | b'\r' | b' ')
        {
            self.pos += 1;
        }
        let Some(&b) = bytes.get(self.pos) else {
            return Ok(None);
        };
        self.started = true;
        let start = self.pos;
        let start_pos = self.here();
        let one = |tok| (tok, start + 1);
        let (tok, end) = match b {
            b'\n' => one(Tok::Newline),
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                let end = scan(bytes, start, |c| c.is_ascii_alphanumeric() || c == b'_');
                (Tok::Ident(&self.text[start..end]), end)
            }
            b'0'..=b'9' => self.int(start)?,
            b'.' if bytes.get(start + 1).is_some_and(u8::is_ascii_digit) => {
                return Err(Unsupported);
            }
            b'.' => one(Tok::Dot),
            b'"' | b'\'' => {
                let content = start + 1;
                let close = scan(bytes, content, |c| {
                    c != b && c != b'\\' && c != b'\n' && c != 0
                });
                if bytes.get(close) != Some(&b) {
                    return Err(Unsupported);
                }
                (Tok::Str(&self.text[content..close]), close + 1)
            }
            b'/' if bytes.get(start + 1) == Some(&b'/') => {
                let newline = scan(bytes, start, |c| c != b'\n');
                let end = (newline + 1).min(bytes.len());
                self.comment = normalize_newlines(&self.text[start + 2..end]);
                (Tok::LineComment, end)
            }
            b'/' if bytes.get(start + 1) == Some(&b'*') => {
                let (comment, end) = self.block_comment(start)?;
                self.comment = comment;
                (Tok::BlockComment, end)
            }
            b'-' => one(Tok::Minus),
            b'{' => one(Tok::LeftBrace),
            b'}' => one(Tok::RightBrace),
            b'[' => one(Tok::LeftBracket),
            b']' => one(Tok::RightBracket),
            b'<' => one(Tok::LeftAngle),
            b'>' => one(Tok::RightAngle),
            b',' => one(Tok::Comma),
            b'=' => one(Tok::Equals),
            b';' => one(Tok::Semicolon),
            b'(' => one(Tok::LeftParen),
            b')' => one(Tok::RightParen),
            b'+' | b':' => one(Tok::Other),
            _ => return Err(Unsupported),
        };
        let end_pos = if tok.is_comment_or_newline() {
            self.advance(end);
            self.here()
        } else {
            self.pos = end;
            self.here()
        };
        Ok(Some((
            tok,
            Span {
                start: start_pos,
                end: end_pos,
            },
        )))
    }

    /// An integer literal: decimal, octal (`0…`) or hexadecimal (`0x…`). What could be a float,
    /// or runs into a letter, is not for this parser.
    fn int(&self, start: usize) -> Result<(Tok<'a>, usize)> {
        let bytes = self.text.as_bytes();
        let (digits, end, radix) =
            if bytes[start] == b'0' && matches!(bytes.get(start + 1), Some(b'x' | b'X')) {
                let end = scan(bytes, start + 2, |c| c.is_ascii_hexdigit());
                (start + 2..end, end, 16)
            } else if bytes[start] == b'0' {
                let end = scan(bytes, start + 1, |c| (b'0'..=b'7').contains(&c));
                (start..end, end, 8)
            } else {
                let end = scan(bytes, start, |c| c.is_ascii_digit());
                (start..end, end, 10)
            };
        if digits.is_empty()
            || bytes
                .get(end)
                .is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.')
        {
            return Err(Unsupported);
        }
        let value = u64::from_str_radix(&self.text[digits], radix).map_err(|_| Unsupported)?;
        Ok((Tok::Int(value), end))
    }

    /// A block comment as `protox` reads it: each line's leading whitespace and one `*` taken
    /// off, and the horizontal whitespace after `*/` taken with it.
    fn block_comment(&self, start: usize) -> Result<(String, usize)> {
        let text = self.text;
        let bytes = text.as_bytes();
        let mut out = String::new();
        let mut i = start + 2;
        let mut run = i;
        loop {
            match bytes.get(i) {
                None => return Err(Unsupported),
                Some(b'*') if bytes.get(i + 1) == Some(&b'/') => {
                    out.push_str(&text[run..i]);
                    let end = scan(bytes, i + 2, |c| {
                        matches!(c, b'\t' | 0x0b | 0x0c | b'\r' | b' ')
                    });
                    return Ok((normalize_newlines(&out), end));
                }
                Some(b'/') if bytes.get(i + 1) == Some(&b'*') => return Err(Unsupported),
                Some(b'\n') => {
                    out.push_str(&text[run..i]);
                    out.push('\n');
                    let rest = &text[i + 1..];
                    let stripped = rest.trim_start();
                    i = i + 1 + (rest.len() - stripped.len());
                    if stripped.starts_with('*') && !stripped.starts_with("*/") {
                        i += 1;
                    }
                    run = i;
                }
                Some(_) => i += 1,
            }
        }
    }
}

fn scan(bytes: &[u8], from: usize, keep: impl Fn(u8) -> bool) -> usize {
    let mut i = from;
    while i < bytes.len() && keep(bytes[i]) {
        i += 1;
    }
    i
}

fn normalize_newlines(s: &str) -> String {
    if s.contains("\r\n") {
        s.replace("\r\n", "\n")
    } else {
        s.to_string()
    }
}

/// The comments pending before and after an element, as `protox` (and `protoc`) attach them.
#[derive(Default)]
struct Comments {
    leading_detached: Vec<String>,
    leading: Option<String>,
    trailing: Option<String>,
    is_trailing: bool,
    is_line_comment: bool,
}

impl Comments {
    fn block_comment(&mut self, comment: String) {
        if self.leading.is_some() {
            self.flush();
        }
        self.leading = Some(comment);
    }

    fn line_comment(&mut self, comment: String) {
        if self.leading.is_some() && !self.is_line_comment {
            self.flush();
        }
        match &mut self.leading {
            None => self.leading = Some(comment),
            Some(current) => current.push_str(&comment),
        }
        self.is_line_comment = true;
    }

    fn detach(&mut self) {
        self.is_trailing = false;
    }

    fn flush(&mut self) {
        if self.is_trailing {
            self.trailing = self.leading.take();
            self.is_trailing = false;
        } else {
            self.leading_detached.extend(self.leading.take());
        }
        self.is_line_comment = false;
    }

    fn reset(&mut self) {
        self.leading = None;
        self.leading_detached.clear();
        self.trailing = None;
        self.is_trailing = true;
        self.is_line_comment = false;
    }
}

/// An element's comments, once attached.
#[derive(Default)]
struct Attached {
    leading_detached: Vec<String>,
    leading: Option<String>,
    trailing: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Syntax {
    Proto2,
    Proto3,
}

struct Ident<'a> {
    value: &'a str,
    span: Span,
}

struct Int {
    negative: bool,
    value: u64,
    span: Span,
}

impl Int {
    fn as_i32(&self) -> Option<i32> {
        if self.negative {
            if self.value == i32::MAX as u64 + 1 {
                Some(i32::MIN)
            } else {
                Some(-i32::try_from(self.value).ok()?)
            }
        } else {
            i32::try_from(self.value).ok()
        }
    }

    fn as_i64(&self) -> Option<i64> {
        if self.negative {
            if self.value == i64::MAX as u64 + 1 {
                Some(i64::MIN)
            } else {
                Some(-i64::try_from(self.value).ok()?)
            }
        } else {
            i64::try_from(self.value).ok()
        }
    }
}

/// A dotted name, joined without the whitespace or comments that may stand between its parts.
struct DottedName {
    text: String,
    span: Span,
}

enum OptionValue<'a> {
    Ident(Ident<'a>),
    Int(Int),
    Str { value: String, span: Span },
}

impl OptionValue<'_> {
    fn span(&self) -> Span {
        match self {
            OptionValue::Ident(i) => i.span,
            OptionValue::Int(i) => i.span,
            OptionValue::Str { span, .. } => *span,
        }
    }
}

struct OptionBody<'a> {
    name: Vec<Ident<'a>>,
    value: OptionValue<'a>,
}

impl OptionBody<'_> {
    fn span(&self) -> Span {
        self.name[0].span.to(self.value.span())
    }

    fn has_name(&self, name: &str) -> bool {
        matches!(self.name.as_slice(), [part] if part.value == name)
    }
}

struct OptionStatement<'a> {
    body: OptionBody<'a>,
    comments: Attached,
    span: Span,
}

struct OptionList<'a> {
    options: Vec<OptionBody<'a>>,
    span: Span,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Label {
    Optional,
    Required,
    Repeated,
}

enum Ty {
    Scalar(field_descriptor_proto::Type),
    Named(DottedName),
}

enum FieldKind {
    Normal { ty: Ty, ty_span: Span },
    Map { ty_span: Span, key: Ty, value: Ty },
}

struct Field<'a> {
    label: Option<(Label, Span)>,
    kind: FieldKind,
    name: Ident<'a>,
    number: Int,
    options: Option<OptionList<'a>>,
    comments: Attached,
    span: Span,
}

struct Oneof<'a> {
    name: Ident<'a>,
    fields: Vec<Field<'a>>,
    options: Vec<OptionStatement<'a>>,
    comments: Attached,
    span: Span,
}

enum RangeEnd {
    None,
    Int(Int),
    Max(Span),
}

struct Range {
    start: Int,
    end: RangeEnd,
}

impl Range {
    fn end_span(&self) -> Span {
        match &self.end {
            RangeEnd::None => self.start.span,
            RangeEnd::Int(end) => end.span,
            RangeEnd::Max(span) => *span,
        }
    }

    fn span(&self) -> Span {
        self.start.span.to(self.end_span())
    }
}

enum ReservedKind {
    Ranges(Vec<Range>),
    Names(Vec<(String, Span)>),
}

struct Reserved {
    kind: ReservedKind,
    comments: Attached,
    span: Span,
}

enum MessageItem<'a> {
    Field(Field<'a>),
    Enum(Enum<'a>),
    Message(Message<'a>),
    Oneof(Oneof<'a>),
}

struct Message<'a> {
    name: Ident<'a>,
    items: Vec<MessageItem<'a>>,
    options: Vec<OptionStatement<'a>>,
    reserved: Vec<Reserved>,
    comments: Attached,
    span: Span,
}

struct EnumValue<'a> {
    name: Ident<'a>,
    number: Int,
    options: Option<OptionList<'a>>,
    comments: Attached,
    span: Span,
}

struct Enum<'a> {
    name: Ident<'a>,
    values: Vec<EnumValue<'a>>,
    options: Vec<OptionStatement<'a>>,
    reserved: Vec<Reserved>,
    comments: Attached,
    span: Span,
}

enum ImportKind {
    Public,
    Weak,
}

struct Import {
    kind: Option<(ImportKind, Span)>,
    value: String,
    comments: Attached,
}

struct Package {
    name: String,
    comments: Attached,
    span: Span,
}

enum FileItem<'a> {
    Message(Message<'a>),
    Enum(Enum<'a>),
    Service(Service<'a>),
}

struct Method<'a> {
    name: Ident<'a>,
    input: DottedName,
    client_streaming: Option<Span>,
    output: DottedName,
    server_streaming: Option<Span>,
    options: Vec<OptionStatement<'a>>,
    comments: Attached,
    span: Span,
}

struct Service<'a> {
    name: Ident<'a>,
    methods: Vec<Method<'a>>,
    options: Vec<OptionStatement<'a>>,
    comments: Attached,
    span: Span,
}

struct File<'a> {
    syntax: Syntax,
    syntax_statement: Option<(Span, Attached)>,
    package: Option<Package>,
    imports: Vec<(Import, Span)>,
    options: Vec<OptionStatement<'a>>,
    span: Span,
}

/// The parser of `protox_parse`, step for step where comments are concerned: which tokens are
/// peeked with comments taken as leading or trailing, and which skip them, decides where each
/// comment lands.
struct Parser<'a> {
    lexer: Lexer<'a>,
    peeked: Option<Option<(Tok<'a>, Span)>>,
    comments: Comments,
    depth: u32,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Parser<'a> {
        Parser {
            lexer: Lexer {
                text,
                pos: 0,
                line: 0,
                line_start: 0,
                started: false,
                comment: String::new(),
            },
            peeked: None,
            comments: Comments::default(),
            depth: 0,
        }
    }

    fn peek_comments(&mut self) -> Result<Option<&(Tok<'a>, Span)>> {
        if self.peeked.is_none() {
            self.peeked = Some(self.lexer.next()?);
        }
        Ok(self.peeked.as_ref().and_then(Option::as_ref))
    }

    fn peek_kind(&mut self) -> Result<Option<(Tok<'a>, Span)>> {
        Ok(self.peek_comments()?.copied())
    }

    fn bump(&mut self) -> (Tok<'a>, Span) {
        let Some(Some((tok, span))) = self.peeked.take() else {
            unreachable!("bump follows a peek that found a token");
        };
        if !tok.is_comment_or_newline() {
            self.comments.reset();
        }
        (tok, span)
    }

    fn bump_comment(&mut self) -> String {
        self.bump();
        std::mem::take(&mut self.lexer.comment)
    }

    fn peek(&mut self) -> Result<Option<(Tok<'a>, Span)>> {
        if self.lexer.started {
            match self.peek_kind()? {
                Some((Tok::LineComment, _)) => {
                    let comment = self.bump_comment();
                    self.comments.line_comment(comment);
                    self.comments.flush();
                }
                Some((Tok::BlockComment, _)) => {
                    let comment = self.bump_comment();
                    if let Some((Tok::Newline, _)) = self.peek_kind()? {
                        self.bump();
                        self.comments.block_comment(comment);
                    } else {
                        return self.peek_skip_comments();
                    }
                }
                Some((Tok::Newline, _)) => {
                    self.bump();
                }
                tok => return Ok(tok),
            }
        }
        loop {
            match self.peek_kind()? {
                Some((Tok::LineComment, _)) => {
                    let comment = self.bump_comment();
                    self.comments.line_comment(comment);
                }
                Some((Tok::BlockComment, _)) => {
                    let comment = self.bump_comment();
                    self.comments.block_comment(comment);
                    if let Some((Tok::Newline, _)) = self.peek_kind()? {
                        self.bump();
                    }
                }
                Some((Tok::Newline, _)) => {
                    self.bump();
                    self.comments.flush();
                    self.comments.detach();
                }
                tok @ (None | Some((Tok::RightBrace | Tok::RightBracket | Tok::RightParen, _))) => {
                    self.comments.flush();
                    return Ok(tok);
                }
                Some((Tok::Other, _)) => return Err(Unsupported),
                tok => return Ok(tok),
            }
        }
    }

    fn peek_skip_comments(&mut self) -> Result<Option<(Tok<'a>, Span)>> {
        loop {
            match self.peek_kind()? {
                Some((tok, _)) if tok.is_comment_or_newline() => {
                    self.bump();
                }
                tok => return Ok(tok),
            }
        }
    }

    fn leading_comments(&mut self) -> Result<(Vec<String>, Option<String>)> {
        self.peek()?;
        Ok((
            std::mem::take(&mut self.comments.leading_detached),
            self.comments.leading.take(),
        ))
    }

    fn trailing_comment(
        &mut self,
        (detached, leading): (Vec<String>, Option<String>),
    ) -> Result<Attached> {
        self.peek()?;
        Ok(Attached {
            leading_detached: detached,
            leading,
            trailing: self.comments.trailing.take(),
        })
    }

    fn expect(&mut self, tok: Tok<'static>) -> Result<Span> {
        match self.peek_skip_comments()? {
            Some((found, _)) if found == tok => Ok(self.bump().1),
            _ => Err(Unsupported),
        }
    }

    fn expect_word(&mut self, word: &str) -> Result<Span> {
        match self.peek_skip_comments()? {
            Some((found, _)) if found.is_ident(word) => Ok(self.bump().1),
            _ => Err(Unsupported),
        }
    }

    fn ident(&mut self) -> Result<Ident<'a>> {
        match self.peek_skip_comments()? {
            Some((Tok::Ident(value), span)) => {
                self.bump();
                Ok(Ident { value, span })
            }
            _ => Err(Unsupported),
        }
    }

    fn int(&mut self) -> Result<Int> {
        let start = match self.peek_skip_comments()? {
            Some((Tok::Minus, span)) => {
                self.bump();
                Some(span)
            }
            _ => None,
        };
        match self.peek_skip_comments()? {
            Some((Tok::Int(value), end)) => {
                self.bump();
                Ok(Int {
                    negative: start.is_some(),
                    value,
                    span: start.map_or(end, |s| s.to(end)),
                })
            }
            _ => Err(Unsupported),
        }
    }

    /// A string literal; adjacent literals are one string.
    fn string(&mut self) -> Result<(String, Span)> {
        let (mut value, mut span) = match self.peek_skip_comments()? {
            Some((Tok::Str(s), span)) => {
                self.bump();
                (s.to_string(), span)
            }
            _ => return Err(Unsupported),
        };
        while let Some((Tok::Str(s), next)) = self.peek_skip_comments()? {
            self.bump();
            value.push_str(s);
            span = span.to(next);
        }
        Ok((value, span))
    }

    /// `a.b.c`, up to one of `terminators`.
    fn full_ident(
        &mut self,
        first: Ident<'a>,
        terminators: &[Tok<'static>],
        ident_ends: bool,
    ) -> Result<DottedName> {
        let mut text = first.value.to_string();
        let start = first.span;
        let mut end = first.span;
        loop {
            match self.peek_skip_comments()? {
                Some((Tok::Dot, _)) => {
                    self.bump();
                }
                Some((tok, _))
                    if terminators.contains(&tok)
                        || (ident_ends && matches!(tok, Tok::Ident(_))) =>
                {
                    return Ok(DottedName {
                        text,
                        span: start.to(end),
                    });
                }
                _ => return Err(Unsupported),
            }
            let part = self.ident()?;
            text.push('.');
            text.push_str(part.value);
            end = part.span;
        }
    }

    fn type_name(&mut self, terminators: &[Tok<'static>], ident_ends: bool) -> Result<DottedName> {
        let leading_dot = match self.peek()? {
            Some((Tok::Dot, span)) => {
                self.bump();
                Some(span)
            }
            Some((Tok::Ident(_), _)) => None,
            _ => return Err(Unsupported),
        };
        let first = self.ident()?;
        let mut name = self.full_ident(first, terminators, ident_ends)?;
        if let Some(dot) = leading_dot {
            name.text.insert(0, '.');
            name.span = dot.to(name.span);
        }
        Ok(name)
    }

    /// The file up to its first statement: its syntax, which every declaration's descriptor
    /// depends on, and nothing else yet.
    fn file_start(&mut self) -> Result<File<'a>> {
        let (syntax, syntax_statement, span) = match self.peek()? {
            Some((tok, _)) if tok.is_ident("syntax") => {
                let (syntax, span, comments) = self.syntax()?;
                (syntax, Some((span, comments)), span)
            }
            Some((_, span)) => (Syntax::Proto2, None, span),
            None => return Err(Unsupported),
        };
        Ok(File {
            syntax,
            syntax_statement,
            package: None,
            imports: Vec::new(),
            options: Vec::new(),
            span,
        })
    }

    /// The rest of `file`'s statements; each message, enum and service goes to `item` as soon
    /// as it is parsed, so that its syntax tree is freed before the next one is read (a large
    /// file's whole tree was a few megabytes of fresh memory).
    fn file_statements(
        &mut self,
        file: &mut File<'a>,
        mut item: impl FnMut(FileItem<'a>) -> Result<()>,
    ) -> Result<()> {
        loop {
            let statement_span = match self.peek()? {
                None => break,
                Some((Tok::Semicolon, s)) => {
                    self.bump();
                    s
                }
                Some((Tok::Ident(word), _)) => match word {
                    "import" => {
                        let (import, s) = self.import()?;
                        file.imports.push((import, s));
                        s
                    }
                    "package" => {
                        if file.package.is_some() {
                            return Err(Unsupported);
                        }
                        let p = self.package()?;
                        let s = p.span;
                        file.package = Some(p);
                        s
                    }
                    "option" => {
                        let o = self.option_statement()?;
                        let s = o.span;
                        file.options.push(o);
                        s
                    }
                    "message" => {
                        let m = self.message()?;
                        let s = m.span;
                        item(FileItem::Message(m))?;
                        s
                    }
                    "enum" => {
                        let e = self.enumeration()?;
                        let s = e.span;
                        item(FileItem::Enum(e))?;
                        s
                    }
                    "service" => {
                        let service = self.service()?;
                        let s = service.span;
                        item(FileItem::Service(service))?;
                        s
                    }
                    _ => return Err(Unsupported),
                },
                Some(_) => return Err(Unsupported),
            };
            file.span = file.span.to(statement_span);
        }
        Ok(())
    }

    fn syntax(&mut self) -> Result<(Syntax, Span, Attached)> {
        let leading = self.leading_comments()?;
        let start = self.expect_word("syntax")?;
        self.expect(Tok::Equals)?;
        let syntax = match self.peek()? {
            Some((Tok::Str(_), _)) => match self.string()?.0.as_str() {
                "proto2" => Syntax::Proto2,
                "proto3" => Syntax::Proto3,
                _ => return Err(Unsupported),
            },
            _ => return Err(Unsupported),
        };
        let end = self.expect(Tok::Semicolon)?;
        let comments = self.trailing_comment(leading)?;
        Ok((syntax, start.to(end), comments))
    }

    fn package(&mut self) -> Result<Package> {
        let leading = self.leading_comments()?;
        let start = self.expect_word("package")?;
        let first = self.ident()?;
        let name = self.full_ident(first, &[Tok::Semicolon], false)?;
        let end = self.expect(Tok::Semicolon)?;
        let comments = self.trailing_comment(leading)?;
        Ok(Package {
            name: name.text,
            comments,
            span: start.to(end),
        })
    }

    fn import(&mut self) -> Result<(Import, Span)> {
        let leading = self.leading_comments()?;
        let start = self.expect_word("import")?;
        let kind = match self.peek_skip_comments()? {
            Some((tok, span)) if tok.is_ident("weak") => {
                self.bump();
                Some((ImportKind::Weak, span))
            }
            Some((tok, span)) if tok.is_ident("public") => {
                self.bump();
                Some((ImportKind::Public, span))
            }
            Some((Tok::Str(_), _)) => None,
            _ => return Err(Unsupported),
        };
        let (value, _) = self.string()?;
        if !is_valid_import(&value) {
            return Err(Unsupported);
        }
        let end = self.expect(Tok::Semicolon)?;
        let comments = self.trailing_comment(leading)?;
        Ok((
            Import {
                kind,
                value,
                comments,
            },
            start.to(end),
        ))
    }

    fn message(&mut self) -> Result<Message<'a>> {
        let leading = self.leading_comments()?;
        let start = self.expect_word("message")?;
        let name = self.ident()?;
        self.expect(Tok::LeftBrace)?;
        let comments = self.trailing_comment(leading)?;
        if self.depth >= MAX_MESSAGE_NESTING_DEPTH {
            return Err(Unsupported);
        }
        self.depth += 1;
        let (items, options, reserved, end) = self.message_body()?;
        self.depth -= 1;
        Ok(Message {
            name,
            items,
            options,
            reserved,
            comments,
            span: start.to(end),
        })
    }

    #[allow(clippy::type_complexity)]
    fn message_body(
        &mut self,
    ) -> Result<(
        Vec<MessageItem<'a>>,
        Vec<OptionStatement<'a>>,
        Vec<Reserved>,
        Span,
    )> {
        let mut items = Vec::new();
        let mut options = Vec::new();
        let mut reserved = Vec::new();
        let end = loop {
            match self.peek()? {
                Some((Tok::Ident("oneof"), _)) => items.push(MessageItem::Oneof(self.oneof()?)),
                Some((Tok::Ident("enum"), _)) => items.push(MessageItem::Enum(self.enumeration()?)),
                Some((Tok::Ident("message"), _)) => {
                    items.push(MessageItem::Message(self.message()?))
                }
                Some((Tok::Ident("option"), _)) => options.push(self.option_statement()?),
                Some((Tok::Ident("reserved"), _)) => reserved.push(self.reserved(true)?),
                Some((Tok::Ident("extend" | "extensions"), _)) => return Err(Unsupported),
                Some((Tok::Dot | Tok::Ident(_), _)) => {
                    items.push(MessageItem::Field(self.field()?))
                }
                Some((Tok::Semicolon, _)) => {
                    self.bump();
                }
                Some((Tok::RightBrace, _)) => break self.bump().1,
                _ => return Err(Unsupported),
            }
        };
        Ok((items, options, reserved, end))
    }

    fn field(&mut self) -> Result<Field<'a>> {
        let leading = self.leading_comments()?;
        let (label, start) = match self.peek()? {
            Some((Tok::Ident(word @ ("optional" | "required" | "repeated")), span)) => {
                self.bump();
                let label = match word {
                    "optional" => Label::Optional,
                    "required" => Label::Required,
                    _ => Label::Repeated,
                };
                (Some((label, span)), span)
            }
            Some((Tok::Dot | Tok::Ident(_), span)) => (None, span),
            _ => return Err(Unsupported),
        };
        let kind = match self.peek()? {
            Some((Tok::Ident("map"), _)) => {
                let ty_start = self.expect_word("map")?;
                self.expect(Tok::LeftAngle)?;
                let (key, _) = self.field_type(&[Tok::Comma], false)?;
                self.expect(Tok::Comma)?;
                let (value, _) = self.field_type(&[Tok::RightAngle], false)?;
                let ty_end = self.expect(Tok::RightAngle)?;
                FieldKind::Map {
                    ty_span: ty_start.to(ty_end),
                    key,
                    value,
                }
            }
            Some((Tok::Ident("group"), _)) => return Err(Unsupported),
            _ => {
                let (ty, ty_span) = self.field_type(&[], true)?;
                FieldKind::Normal { ty, ty_span }
            }
        };
        let name = self.ident()?;
        self.expect(Tok::Equals)?;
        let number = self.int()?;
        let options = self.options_list_or_end()?;
        let end = self.expect(Tok::Semicolon)?;
        let comments = self.trailing_comment(leading)?;
        Ok(Field {
            label,
            kind,
            name,
            number,
            options,
            comments,
            span: start.to(end),
        })
    }

    fn field_type(&mut self, terminators: &[Tok<'static>], ident_ends: bool) -> Result<(Ty, Span)> {
        use field_descriptor_proto::Type;
        let scalar = match self.peek()? {
            Some((Tok::Ident(word), span)) => match word {
                "double" => Some((Type::Double, span)),
                "float" => Some((Type::Float, span)),
                "int32" => Some((Type::Int32, span)),
                "int64" => Some((Type::Int64, span)),
                "uint32" => Some((Type::Uint32, span)),
                "uint64" => Some((Type::Uint64, span)),
                "sint32" => Some((Type::Sint32, span)),
                "sint64" => Some((Type::Sint64, span)),
                "fixed32" => Some((Type::Fixed32, span)),
                "fixed64" => Some((Type::Fixed64, span)),
                "sfixed32" => Some((Type::Sfixed32, span)),
                "sfixed64" => Some((Type::Sfixed64, span)),
                "bool" => Some((Type::Bool, span)),
                "string" => Some((Type::String, span)),
                "bytes" => Some((Type::Bytes, span)),
                _ => None,
            },
            Some((Tok::Dot, _)) => None,
            _ => return Err(Unsupported),
        };
        match scalar {
            Some((ty, span)) => {
                self.bump();
                Ok((Ty::Scalar(ty), span))
            }
            None => {
                let name = self.type_name(terminators, ident_ends)?;
                let span = name.span;
                Ok((Ty::Named(name), span))
            }
        }
    }

    fn options_list_or_end(&mut self) -> Result<Option<OptionList<'a>>> {
        match self.peek_skip_comments()? {
            Some((Tok::LeftBracket, _)) => Ok(Some(self.options_list()?)),
            Some((Tok::Semicolon, _)) => Ok(None),
            _ => Err(Unsupported),
        }
    }

    fn options_list(&mut self) -> Result<OptionList<'a>> {
        let start = self.expect(Tok::LeftBracket)?;
        let mut options = vec![self.option_body()?];
        let end = loop {
            match self.peek_skip_comments()? {
                Some((Tok::Comma, _)) => {
                    self.bump();
                    options.push(self.option_body()?);
                }
                Some((Tok::RightBracket, _)) => break self.bump().1,
                _ => return Err(Unsupported),
            }
        };
        Ok(OptionList {
            options,
            span: start.to(end),
        })
    }

    fn option_statement(&mut self) -> Result<OptionStatement<'a>> {
        let leading = self.leading_comments()?;
        let start = self.expect_word("option")?;
        let body = self.option_body()?;
        let end = self.expect(Tok::Semicolon)?;
        let comments = self.trailing_comment(leading)?;
        Ok(OptionStatement {
            body,
            comments,
            span: start.to(end),
        })
    }

    /// `name.part = value` with plain names and identifier, integer or string values; extension
    /// names in parentheses, floats and message values go to `protox`.
    fn option_body(&mut self) -> Result<OptionBody<'a>> {
        let mut name = vec![self.option_name_part()?];
        loop {
            match self.peek_skip_comments()? {
                Some((Tok::Dot, _)) => {
                    self.bump();
                    name.push(self.option_name_part()?);
                }
                Some((Tok::Equals, _)) => {
                    self.bump();
                    break;
                }
                _ => return Err(Unsupported),
            }
        }
        let value = match self.peek_skip_comments()? {
            Some((Tok::Minus, start)) => {
                self.bump();
                match self.peek_skip_comments()? {
                    Some((Tok::Int(value), end)) => {
                        self.bump();
                        OptionValue::Int(Int {
                            negative: true,
                            value,
                            span: start.to(end),
                        })
                    }
                    _ => return Err(Unsupported),
                }
            }
            Some((Tok::Ident(_), _)) => OptionValue::Ident(self.ident()?),
            Some((Tok::Int(value), span)) => {
                self.bump();
                OptionValue::Int(Int {
                    negative: false,
                    value,
                    span,
                })
            }
            Some((Tok::Str(_), _)) => {
                let (value, span) = self.string()?;
                OptionValue::Str { value, span }
            }
            _ => return Err(Unsupported),
        };
        Ok(OptionBody { name, value })
    }

    fn option_name_part(&mut self) -> Result<Ident<'a>> {
        match self.peek()? {
            Some((Tok::Ident(_), _)) => self.ident(),
            _ => Err(Unsupported),
        }
    }

    fn oneof(&mut self) -> Result<Oneof<'a>> {
        let leading = self.leading_comments()?;
        let start = self.expect_word("oneof")?;
        let name = self.ident()?;
        self.expect(Tok::LeftBrace)?;
        let comments = self.trailing_comment(leading)?;
        let mut fields = Vec::new();
        let mut options = Vec::new();
        let end = loop {
            match self.peek()? {
                Some((Tok::Ident("option"), _)) => options.push(self.option_statement()?),
                Some((Tok::Semicolon, _)) => {
                    self.bump();
                }
                Some((Tok::RightBrace, _)) => break self.bump().1,
                Some((Tok::Dot | Tok::Ident(_), _)) => fields.push(self.field()?),
                _ => return Err(Unsupported),
            }
        };
        Ok(Oneof {
            name,
            fields,
            options,
            comments,
            span: start.to(end),
        })
    }

    fn enumeration(&mut self) -> Result<Enum<'a>> {
        let leading = self.leading_comments()?;
        let start = self.expect_word("enum")?;
        let name = self.ident()?;
        self.expect(Tok::LeftBrace)?;
        let comments = self.trailing_comment(leading)?;
        let mut values = Vec::new();
        let mut options = Vec::new();
        let mut reserved = Vec::new();
        let end = loop {
            match self.peek()? {
                Some((Tok::Ident("option"), _)) => options.push(self.option_statement()?),
                Some((Tok::Ident("reserved"), _)) => reserved.push(self.reserved(false)?),
                Some((Tok::Semicolon, _)) => {
                    self.bump();
                }
                Some((Tok::Ident(_), _)) => values.push(self.enum_value()?),
                Some((Tok::RightBrace, _)) => break self.bump().1,
                _ => return Err(Unsupported),
            }
        };
        Ok(Enum {
            name,
            values,
            options,
            reserved,
            comments,
            span: start.to(end),
        })
    }

    fn service(&mut self) -> Result<Service<'a>> {
        let leading = self.leading_comments()?;
        let start = self.expect_word("service")?;
        let name = self.ident()?;
        self.expect(Tok::LeftBrace)?;
        let comments = self.trailing_comment(leading)?;
        let mut methods = Vec::new();
        let mut options = Vec::new();
        let end = loop {
            match self.peek()? {
                Some((Tok::Ident("rpc"), _)) => methods.push(self.method()?),
                Some((Tok::Ident("option"), _)) => options.push(self.option_statement()?),
                Some((Tok::Semicolon, _)) => {
                    self.bump();
                }
                Some((Tok::RightBrace, _)) => break self.bump().1,
                _ => return Err(Unsupported),
            }
        };
        Ok(Service {
            name,
            methods,
            options,
            comments,
            span: start.to(end),
        })
    }

    fn method(&mut self) -> Result<Method<'a>> {
        let leading = self.leading_comments()?;
        let start = self.expect_word("rpc")?;
        let name = self.ident()?;
        self.expect(Tok::LeftParen)?;
        let client_streaming = self.stream()?;
        let input = self.type_name(&[Tok::RightParen], false)?;
        self.expect(Tok::RightParen)?;
        self.expect_word("returns")?;
        self.expect(Tok::LeftParen)?;
        let server_streaming = self.stream()?;
        let output = self.type_name(&[Tok::RightParen], false)?;
        self.expect(Tok::RightParen)?;
        let mut options = Vec::new();
        let end = match self.peek_skip_comments()? {
            Some((Tok::Semicolon, span)) => {
                self.bump();
                span
            }
            Some((Tok::LeftBrace, _)) => {
                self.bump();
                loop {
                    match self.peek()? {
                        Some((Tok::Ident("option"), _)) => options.push(self.option_statement()?),
                        Some((Tok::RightBrace, _)) => break self.bump().1,
                        Some((Tok::Semicolon, _)) => {
                            self.bump();
                        }
                        _ => return Err(Unsupported),
                    }
                }
            }
            _ => return Err(Unsupported),
        };
        let comments = self.trailing_comment(leading)?;
        Ok(Method {
            name,
            input,
            client_streaming,
            output,
            server_streaming,
            options,
            comments,
            span: start.to(end),
        })
    }

    /// `stream` before a method's type, or nothing before a type name.
    fn stream(&mut self) -> Result<Option<Span>> {
        match self.peek_skip_comments()? {
            Some((tok, span)) if tok.is_ident("stream") => {
                self.bump();
                Ok(Some(span))
            }
            Some((Tok::Dot | Tok::Ident(_), _)) => Ok(None),
            _ => Err(Unsupported),
        }
    }

    fn enum_value(&mut self) -> Result<EnumValue<'a>> {
        let leading = self.leading_comments()?;
        let name = self.ident()?;
        self.expect(Tok::Equals)?;
        let number = self.int()?;
        let options = self.options_list_or_end()?;
        let end = self.expect(Tok::Semicolon)?;
        let comments = self.trailing_comment(leading)?;
        Ok(EnumValue {
            span: name.span.to(end),
            name,
            number,
            options,
            comments,
        })
    }

    fn reserved(&mut self, in_message: bool) -> Result<Reserved> {
        let leading = self.leading_comments()?;
        let start = self.expect_word("reserved")?;
        match self.peek_skip_comments()? {
            Some((Tok::Int(_) | Tok::Minus, _)) => {
                let mut ranges = vec![self.range(in_message)?];
                loop {
                    match self.peek_skip_comments()? {
                        Some((Tok::Comma, _)) => {
                            self.bump();
                            ranges.push(self.range(in_message)?);
                        }
                        Some((Tok::Semicolon, _)) => break,
                        _ => return Err(Unsupported),
                    }
                }
                let end = self.expect(Tok::Semicolon)?;
                let comments = self.trailing_comment(leading)?;
                Ok(Reserved {
                    kind: ReservedKind::Ranges(ranges),
                    comments,
                    span: start.to(end),
                })
            }
            Some((Tok::Str(_), _)) => {
                let mut names = vec![self.reserved_name()?];
                let end = loop {
                    match self.peek_skip_comments()? {
                        Some((Tok::Comma, _)) => {
                            self.bump();
                            names.push(self.reserved_name()?);
                        }
                        Some((Tok::Semicolon, _)) => break self.bump().1,
                        _ => return Err(Unsupported),
                    }
                };
                let comments = self.trailing_comment(leading)?;
                Ok(Reserved {
                    kind: ReservedKind::Names(names),
                    comments,
                    span: start.to(end),
                })
            }
            _ => Err(Unsupported),
        }
    }

    fn reserved_name(&mut self) -> Result<(String, Span)> {
        let (name, span) = self.string()?;
        if !is_valid_ident(&name) {
            return Err(Unsupported);
        }
        Ok((name, span))
    }

    fn range(&mut self, in_message: bool) -> Result<Range> {
        let start = self.int()?;
        let end = match self.peek_skip_comments()? {
            Some((tok, _)) if tok.is_ident("to") => {
                self.bump();
                match self.peek_skip_comments()? {
                    Some((Tok::Int(_) | Tok::Minus, _)) => RangeEnd::Int(self.int()?),
                    Some((tok, span)) if tok.is_ident("max") => {
                        self.bump();
                        RangeEnd::Max(span)
                    }
                    _ => return Err(Unsupported),
                }
            }
            Some((Tok::Comma | Tok::Semicolon, _)) => RangeEnd::None,
            _ => return Err(Unsupported),
        };
        let range = Range { start, end };
        // The numbers protox would refuse.
        let valid = |n: &Int| match n.as_i32() {
            Some(v) if in_message => (1..=MAX_MESSAGE_FIELD_NUMBER).contains(&v),
            Some(_) => true,
            None => false,
        };
        let end_valid = match &range.end {
            RangeEnd::Int(n) => valid(n),
            _ => true,
        };
        if !valid(&range.start) || !end_valid {
            return Err(Unsupported);
        }
        Ok(range)
    }
}

fn is_valid_import(s: &str) -> bool {
    s.split('/')
        .all(|c| !c.is_empty() && !c.contains('\\') && c != "." && c != "..")
        && !std::path::Path::new(s).is_absolute()
}

fn is_valid_ident(s: &str) -> bool {
    let bytes = s.as_bytes();
    !bytes.is_empty()
        && bytes[0].is_ascii_alphabetic()
        && bytes[1..]
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || c == b'_')
}

fn to_pascal_case(name: &str) -> String {
    let mut result = String::with_capacity(name.len());
    let mut upper_next = true;
    for ch in name.chars() {
        if ch == '_' {
            upper_next = true;
        } else if upper_next {
            result.push(ch.to_ascii_uppercase());
            upper_next = false;
        } else {
            result.push(ch);
        }
    }
    result
}

/// The descriptor and its source info, in the order `protox_parse` generates them: the order
/// of locations with equal paths survives its (unstable) sort only when the input is the same.
fn generate(name: &str, source: &str, keep: Keep) -> Result<FileDescriptorProto> {
    // About one location for every six bytes of a file of fields, a quarter of them
    // declarations, so the array seldom grows.
    let expected = match keep {
        Keep::Everything => source.len() / 6,
        Keep::Declarations => source.len() / 24,
    };
    let mut parser = Parser::new(source);
    let mut file = parser.file_start()?;
    let mut cx = Context {
        syntax: file.syntax,
        path: Vec::with_capacity(16),
        locations: Vec::with_capacity(expected),
        keep,
    };
    let mut declared = Declared::default();
    parser.file_statements(&mut file, |item| cx.item(item, &mut declared))?;
    let items = cx.locations.len();
    let (mut descriptor, head) = cx.file(name, file, declared)?;
    // The file's own locations that come before its declarations' were recorded after them.
    let in_written_order =
        |locations: &mut [Location]| locations[..items + head].rotate_right(head);
    sort_by_path(&mut cx.locations, in_written_order);
    descriptor.source_code_info = Some(SourceCodeInfo {
        location: cx.locations,
    });
    Ok(descriptor)
}

/// Orders locations by path, as protox's unstable sort does. When no two share a path there is
/// one order, found here by sorting packed keys: moving the 120-byte locations through the
/// sort and comparing their paths through pointers was half the cost of parsing a large file.
/// When some do share a path, or a path is too deep to pack, the sort runs as protox runs it,
/// on the locations in the order protox records them (`in_written_order` restores it), since
/// the order among equal paths is that sort's own.
fn sort_by_path(locations: &mut [Location], in_written_order: impl FnOnce(&mut [Location])) {
    let keys: Option<Vec<(u128, usize)>> = locations
        .iter()
        .enumerate()
        .map(|(i, l)| Some((packed(&l.path)?, i)))
        .collect();
    let Some(mut keys) = keys else {
        in_written_order(locations);
        locations.sort_unstable_by(|l, r| l.path.cmp(&r.path));
        return;
    };
    sort_nearly_sorted(&mut keys);
    if keys.windows(2).any(|w| w[0].0 == w[1].0) {
        in_written_order(locations);
        locations.sort_unstable_by(|l, r| l.path.cmp(&r.path));
        return;
    }
    // In place: a second array of locations would be fresh memory, page faults and all.
    let mut destination = vec![0; keys.len()];
    for (place, &(_, i)) in keys.iter().enumerate() {
        destination[i] = place;
    }
    drop(keys);
    for i in 0..locations.len() {
        while destination[i] != i {
            let to = destination[i];
            locations.swap(i, to);
            destination.swap(i, to);
        }
    }
}

/// Sorts keys generated nearly in order. Each top-level declaration's locations come
/// together, so the runs of one declaration are put in order by their first two path parts,
/// and inside a run by insertion: a field's own location comes after its name's and number's,
/// a few moves each. A run that needs more moves than a small multiple of its length (nested
/// declarations before many fields) is sorted outright.
fn sort_nearly_sorted(keys: &mut Vec<(u128, usize)>) {
    let top = |k: &(u128, usize)| (k.0 >> 96) as u32;
    let mut runs: Vec<(u32, std::ops::Range<usize>)> = Vec::new();
    let mut start = 0;
    for i in 1..=keys.len() {
        if i == keys.len() || top(&keys[i]) != top(&keys[start]) {
            runs.push((top(&keys[start]), start..i));
            start = i;
        }
    }
    runs.sort_by_key(|(group, _)| *group);
    if runs.windows(2).any(|w| w[0].0 == w[1].0) {
        keys.sort_unstable();
        return;
    }
    let mut sorted = Vec::with_capacity(keys.len());
    for (_, range) in runs {
        let run = &mut keys[range];
        insertion_sort(run);
        sorted.extend_from_slice(run);
    }
    *keys = sorted;
}

fn insertion_sort(run: &mut [(u128, usize)]) {
    let mut budget = run.len().saturating_mul(8);
    for i in 1..run.len() {
        let mut j = i;
        while j > 0 && run[j - 1].0 > run[j].0 {
            if budget == 0 {
                run.sort_unstable();
                return;
            }
            run.swap(j - 1, j);
            j -= 1;
            budget -= 1;
        }
    }
}

/// A path of at most eight parts below 65,535 as one number that orders as the path does
/// (each part plus one in sixteen bits, from the top; a shorter path has zeros after it).
fn packed(path: &[i32]) -> Option<u128> {
    if path.len() > 8 {
        return None;
    }
    let mut key = 0u128;
    for (i, &part) in path.iter().enumerate() {
        let part = u16::try_from(part).ok().filter(|&p| p < u16::MAX)?;
        key |= u128::from(part + 1) << (112 - 16 * i);
    }
    Some(key)
}

struct Context {
    syntax: Syntax,
    path: Vec<i32>,
    locations: Vec<Location>,
    keep: Keep,
}

/// A file's top-level declarations, in the order written.
#[derive(Default)]
struct Declared {
    messages: Vec<DescriptorProto>,
    enums: Vec<EnumDescriptorProto>,
    services: Vec<ServiceDescriptorProto>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    Message,
    Oneof,
}

fn index(i: usize) -> i32 {
    // The file is shorter than i32::MAX bytes, so are its counts.
    i32::try_from(i).unwrap_or(i32::MAX)
}

impl Context {
    /// The location of a part of a declaration (its name, number, type, an option): kept only
    /// when everything is.
    fn span(&mut self, span: Span) {
        if self.keep == Keep::Everything {
            self.declaration_span(span);
        }
    }

    /// The location of a declaration without comments of its own (a reserved range).
    fn declaration_span(&mut self, span: Span) {
        self.locations.push(Location {
            path: self.path.clone(),
            span: span.resolved(),
            ..Default::default()
        });
    }

    fn span_for(&mut self, items: &[i32], span: Span) {
        self.path.extend_from_slice(items);
        self.span(span);
        self.path.truncate(self.path.len() - items.len());
    }

    fn comments(&mut self, span: Span, comments: Attached) {
        self.locations.push(Location {
            path: self.path.clone(),
            span: span.resolved(),
            leading_comments: comments.leading,
            trailing_comments: comments.trailing,
            leading_detached_comments: comments.leading_detached,
        });
    }

    fn comments_for(&mut self, items: &[i32], span: Span, comments: Attached) {
        self.path.extend_from_slice(items);
        self.comments(span, comments);
        self.path.truncate(self.path.len() - items.len());
    }

    fn pop(&mut self, n: usize) {
        self.path.truncate(self.path.len() - n);
    }

    /// One top-level declaration, as the parser hands it over.
    fn item(&mut self, item: FileItem<'_>, declared: &mut Declared) -> Result<()> {
        match item {
            FileItem::Message(m) => {
                self.path
                    .extend([FILE_MESSAGE_TYPE, index(declared.messages.len())]);
                declared.messages.push(self.message(m)?);
                self.pop(2);
            }
            FileItem::Enum(e) => {
                self.path
                    .extend([FILE_ENUM_TYPE, index(declared.enums.len())]);
                declared.enums.push(self.enumeration(e)?);
                self.pop(2);
            }
            FileItem::Service(service) => {
                self.path
                    .extend([FILE_SERVICE, index(declared.services.len())]);
                declared.services.push(self.service(service)?);
                self.pop(2);
            }
        }
        Ok(())
    }

    /// The file's descriptor around its `declared` items, and how many locations it recorded
    /// that protox records before the items' (the file's span, its package and imports).
    fn file(
        &mut self,
        name: &str,
        file: File<'_>,
        declared: Declared,
    ) -> Result<(FileDescriptorProto, usize)> {
        let head = self.locations.len();
        self.span(file.span);
        let package = file.package.map(|p| {
            self.comments_for(&[FILE_PACKAGE], p.span, p.comments);
            p.name
        });
        let mut dependency = Vec::with_capacity(file.imports.len());
        let mut public_dependency = Vec::new();
        let mut weak_dependency = Vec::new();
        for (import, span) in file.imports {
            let i = index(dependency.len());
            self.comments_for(&[FILE_DEPENDENCY, i], span, import.comments);
            dependency.push(import.value);
            match import.kind {
                Some((ImportKind::Public, span)) => {
                    self.span_for(
                        &[FILE_PUBLIC_DEPENDENCY, index(public_dependency.len())],
                        span,
                    );
                    public_dependency.push(i);
                }
                Some((ImportKind::Weak, span)) => {
                    self.span_for(&[FILE_WEAK_DEPENDENCY, index(weak_dependency.len())], span);
                    weak_dependency.push(i);
                }
                None => {}
            }
        }
        let head = self.locations.len() - head;
        self.path.push(FILE_OPTIONS);
        let options = self.options(file.options)?;
        self.path.pop();
        if let Some((span, comments)) = file.syntax_statement {
            self.comments_for(&[FILE_SYNTAX], span, comments);
        }
        let descriptor = FileDescriptorProto {
            name: Some(name.to_owned()),
            package,
            dependency,
            public_dependency,
            weak_dependency,
            message_type: declared.messages,
            enum_type: declared.enums,
            service: declared.services,
            extension: Vec::new(),
            options: options.map(|uninterpreted_option| FileOptions {
                uninterpreted_option,
                ..Default::default()
            }),
            source_code_info: None,
            syntax: (file.syntax == Syntax::Proto3).then(|| "proto3".to_string()),
        };
        Ok((descriptor, head))
    }

    fn message(&mut self, m: Message<'_>) -> Result<DescriptorProto> {
        self.comments(m.span, m.comments);
        self.span_for(&[MESSAGE_NAME], m.name.span);
        let real_oneofs = m
            .items
            .iter()
            .filter(|i| matches!(i, MessageItem::Oneof(_)))
            .count();
        let fields = m.items.iter().map(|i| match i {
            MessageItem::Field(_) => 1,
            MessageItem::Oneof(o) => o.fields.len(),
            _ => 0,
        });
        let mut field = Vec::with_capacity(fields.sum());
        let mut nested_type = Vec::new();
        let mut enum_type = Vec::new();
        let mut oneof_decl = vec![OneofDescriptorProto::default(); real_oneofs];
        let mut next_oneof = 0;
        for item in m.items {
            match item {
                MessageItem::Field(f) => {
                    let i = field.len();
                    let scope = Scope::Message;
                    field.push(self.field(f, i, &mut nested_type, Some(&mut oneof_decl), scope)?);
                }
                MessageItem::Enum(e) => {
                    self.path
                        .extend([MESSAGE_ENUM_TYPE, index(enum_type.len())]);
                    enum_type.push(self.enumeration(e)?);
                    self.pop(2);
                }
                MessageItem::Message(nested) => {
                    self.path
                        .extend([MESSAGE_NESTED_TYPE, index(nested_type.len())]);
                    nested_type.push(self.message(nested)?);
                    self.pop(2);
                }
                MessageItem::Oneof(o) => {
                    oneof_decl[next_oneof] =
                        self.oneof(o, next_oneof, &mut nested_type, &mut field)?;
                    next_oneof += 1;
                }
            }
        }
        if m.options
            .iter()
            .any(|o| o.body.has_name("message_set_wire_format"))
        {
            return Err(Unsupported);
        }
        let (ranges, reserved_name) = self.reserved(
            m.reserved,
            (MESSAGE_RESERVED_RANGE, MESSAGE_RESERVED_NAME),
            MAX_MESSAGE_FIELD_NUMBER,
        );
        // A message's range ends after its last number, an enum's at it.
        let reserved_range = ranges
            .into_iter()
            .map(|(start, end)| descriptor_proto::ReservedRange {
                start,
                end: end.map(|n| n + 1),
            })
            .collect();
        self.path.push(MESSAGE_OPTIONS);
        let options = self.options(m.options)?;
        self.path.pop();
        Ok(DescriptorProto {
            name: Some(m.name.value.to_string()),
            field,
            extension: Vec::new(),
            nested_type,
            enum_type,
            extension_range: Vec::new(),
            oneof_decl,
            options: options.map(|uninterpreted_option| MessageOptions {
                uninterpreted_option,
                ..Default::default()
            }),
            reserved_range,
            reserved_name,
        })
    }

    fn field(
        &mut self,
        mut f: Field<'_>,
        field_index: usize,
        messages: &mut Vec<DescriptorProto>,
        oneofs: Option<&mut Vec<OneofDescriptorProto>>,
        scope: Scope,
    ) -> Result<FieldDescriptorProto> {
        use field_descriptor_proto::{Label as L, Type};
        self.path.extend([MESSAGE_FIELD, index(field_index)]);
        self.span_for(&[FIELD_NAME], f.name.span);
        self.span_for(&[FIELD_NUMBER], f.number.span);
        let number = match f.number.as_i32() {
            Some(n @ 1..=MAX_MESSAGE_FIELD_NUMBER) => n,
            _ => return Err(Unsupported),
        };
        let optional = matches!(f.label, Some((Label::Optional, _)));
        let (proto3_optional, oneof_index) = match oneofs {
            Some(oneofs) if self.syntax == Syntax::Proto3 && optional => {
                let name = if f.name.value.starts_with('_') {
                    format!("X{}", f.name.value)
                } else {
                    format!("_{}", f.name.value)
                };
                let i = index(oneofs.len());
                oneofs.push(OneofDescriptorProto {
                    name: Some(name),
                    options: None,
                });
                (Some(true), Some(i))
            }
            None if self.syntax == Syntax::Proto3 && optional => (Some(true), None),
            _ => (None, None),
        };
        if f.options
            .as_ref()
            .is_some_and(|l| l.options.iter().any(|o| o.has_name("default")))
        {
            return Err(Unsupported);
        }
        let name = f.name.value.to_string();
        let (label, r#type, type_name) = match f.kind {
            FieldKind::Normal {
                ty: Ty::Named(ty), ..
            } => {
                let label = self.label(f.label, scope)?;
                self.comments(f.span, std::mem::take(&mut f.comments));
                self.span_for(&[FIELD_TYPE_NAME], ty.span);
                (label, None, Some(ty.text))
            }
            FieldKind::Normal {
                ty: Ty::Scalar(ty),
                ty_span,
            } => {
                let label = self.label(f.label, scope)?;
                self.comments(f.span, std::mem::take(&mut f.comments));
                self.span_for(&[FIELD_TYPE], ty_span);
                (label, Some(ty), None)
            }
            FieldKind::Map {
                ty_span,
                key,
                value,
            } => {
                if scope != Scope::Message || f.label.is_some() {
                    return Err(Unsupported);
                }
                let key = match key {
                    Ty::Scalar(t) if !matches!(t, Type::Double | Type::Float | Type::Bytes) => t,
                    _ => return Err(Unsupported),
                };
                let entry = to_pascal_case(&name) + "Entry";
                self.comments(f.span, std::mem::take(&mut f.comments));
                self.span_for(&[FIELD_TYPE_NAME], ty_span);
                let (value_type, value_type_name) = match value {
                    Ty::Scalar(t) => (Some(t as i32), None),
                    Ty::Named(n) => (None, Some(n.text)),
                };
                messages.push(DescriptorProto {
                    name: Some(entry.clone()),
                    field: vec![
                        FieldDescriptorProto {
                            name: Some("key".to_owned()),
                            json_name: Some("key".to_owned()),
                            label: Some(L::Optional as i32),
                            number: Some(1),
                            r#type: Some(key as i32),
                            ..Default::default()
                        },
                        FieldDescriptorProto {
                            name: Some("value".to_owned()),
                            json_name: Some("value".to_owned()),
                            label: Some(L::Optional as i32),
                            number: Some(2),
                            r#type: value_type,
                            type_name: value_type_name,
                            ..Default::default()
                        },
                    ],
                    options: Some(MessageOptions {
                        map_entry: Some(true),
                        ..Default::default()
                    }),
                    ..Default::default()
                });
                (Some(L::Repeated), Some(Type::Message), Some(entry))
            }
        };
        let json_name = match take_option(&mut f.options, "json_name") {
            Some(o) => {
                self.span_for(&[FIELD_JSON_NAME], o.span());
                self.span_for(&[FIELD_JSON_NAME], o.value.span());
                match o.value {
                    OptionValue::Str { value, .. } => Some(value),
                    _ => return Err(Unsupported),
                }
            }
            None => None,
        };
        self.path.push(FIELD_OPTIONS);
        let options = self.options_list(f.options)?;
        self.pop(3);
        Ok(FieldDescriptorProto {
            name: Some(name),
            number: Some(number),
            label: label.map(|l| l as i32),
            r#type: r#type.map(|t| t as i32),
            type_name,
            extendee: None,
            default_value: None,
            oneof_index,
            json_name,
            options: options.map(|uninterpreted_option| FieldOptions {
                uninterpreted_option,
                ..Default::default()
            }),
            proto3_optional,
        })
    }

    fn label(
        &mut self,
        label: Option<(Label, Span)>,
        scope: Scope,
    ) -> Result<Option<field_descriptor_proto::Label>> {
        use field_descriptor_proto::Label as L;
        match (scope, label) {
            (Scope::Oneof, Some(_)) => Err(Unsupported),
            (Scope::Message, None) if self.syntax == Syntax::Proto2 => Err(Unsupported),
            (_, Some((Label::Required, _))) if self.syntax == Syntax::Proto3 => Err(Unsupported),
            (_, Some((label, span))) => {
                self.span_for(&[FIELD_LABEL], span);
                Ok(Some(match label {
                    Label::Required => L::Required,
                    Label::Repeated => L::Repeated,
                    Label::Optional => L::Optional,
                }))
            }
            (_, None) => Ok(Some(L::Optional)),
        }
    }

    fn oneof(
        &mut self,
        o: Oneof<'_>,
        oneof_index: usize,
        messages: &mut Vec<DescriptorProto>,
        fields: &mut Vec<FieldDescriptorProto>,
    ) -> Result<OneofDescriptorProto> {
        self.path.extend([MESSAGE_ONEOF_DECL, index(oneof_index)]);
        self.comments(o.span, o.comments);
        self.span_for(&[ONEOF_NAME], o.name.span);
        self.path.push(ONEOF_OPTIONS);
        let options = self.options(o.options)?;
        self.path.pop();
        self.pop(2);
        if o.fields.is_empty() {
            return Err(Unsupported);
        }
        for f in o.fields {
            let i = fields.len();
            let mut field = self.field(f, i, messages, None, Scope::Oneof)?;
            field.oneof_index = Some(index(oneof_index));
            fields.push(field);
        }
        Ok(OneofDescriptorProto {
            name: Some(o.name.value.to_string()),
            options: options.map(|uninterpreted_option| OneofOptions {
                uninterpreted_option,
            }),
        })
    }

    fn enumeration(&mut self, e: Enum<'_>) -> Result<EnumDescriptorProto> {
        self.comments(e.span, e.comments);
        self.span_for(&[ENUM_NAME], e.name.span);
        let mut value = Vec::with_capacity(e.values.len());
        for v in e.values {
            self.path.extend([ENUM_VALUE, index(value.len())]);
            self.comments(v.span, v.comments);
            self.span_for(&[ENUM_VALUE_NAME], v.name.span);
            self.span_for(&[ENUM_VALUE_NUMBER], v.number.span);
            let number = v.number.as_i32().ok_or(Unsupported)?;
            self.path.push(ENUM_VALUE_OPTIONS);
            let options = self.options_list(v.options)?;
            self.path.pop();
            value.push(EnumValueDescriptorProto {
                name: Some(v.name.value.to_string()),
                number: Some(number),
                options: options.map(|uninterpreted_option| EnumValueOptions {
                    uninterpreted_option,
                    ..Default::default()
                }),
            });
            self.pop(2);
        }
        let (ranges, reserved_name) = self.reserved(
            e.reserved,
            (ENUM_RESERVED_RANGE, ENUM_RESERVED_NAME),
            i32::MAX,
        );
        let reserved_range = ranges
            .into_iter()
            .map(|(start, end)| enum_descriptor_proto::EnumReservedRange { start, end })
            .collect();
        self.path.push(ENUM_OPTIONS);
        let options = self.options(e.options)?;
        self.path.pop();
        Ok(EnumDescriptorProto {
            name: Some(e.name.value.to_string()),
            value,
            options: options.map(|uninterpreted_option| EnumOptions {
                uninterpreted_option,
                ..Default::default()
            }),
            reserved_range,
            reserved_name,
        })
    }

    /// The reserved statements of a message or an enum, their ranges under `tags.0` and names
    /// under `tags.1`: the ranges as written (first and last number, `max` read as `max`) and
    /// the names.
    #[allow(clippy::type_complexity)]
    fn reserved(
        &mut self,
        statements: Vec<Reserved>,
        (range_tag, name_tag): (i32, i32),
        max: i32,
    ) -> (Vec<(Option<i32>, Option<i32>)>, Vec<String>) {
        let mut ranges = Vec::new();
        let mut names = Vec::new();
        for reserved in statements {
            match reserved.kind {
                ReservedKind::Ranges(list) => {
                    self.path.push(range_tag);
                    self.comments(reserved.span, reserved.comments);
                    for range in list {
                        self.path.push(index(ranges.len()));
                        self.declaration_span(range.span());
                        self.span_for(&[RANGE_START], range.start.span);
                        self.span_for(&[RANGE_END], range.end_span());
                        let start = range.start.as_i32();
                        let end = match &range.end {
                            RangeEnd::None => start,
                            RangeEnd::Int(n) => n.as_i32(),
                            RangeEnd::Max(_) => Some(max),
                        };
                        ranges.push((start, end));
                        self.path.pop();
                    }
                    self.path.pop();
                }
                ReservedKind::Names(list) => {
                    self.path.push(name_tag);
                    self.comments(reserved.span, reserved.comments);
                    for (name, span) in list {
                        self.span_for(&[index(names.len())], span);
                        names.push(name);
                    }
                    self.path.pop();
                }
            }
        }
        (ranges, names)
    }

    fn service(&mut self, service: Service<'_>) -> Result<ServiceDescriptorProto> {
        self.comments(service.span, service.comments);
        self.span_for(&[SERVICE_NAME], service.name.span);
        let mut method = Vec::with_capacity(service.methods.len());
        self.path.push(SERVICE_METHOD);
        for m in service.methods {
            self.path.push(index(method.len()));
            self.comments(m.span, m.comments);
            self.span_for(&[METHOD_NAME], m.name.span);
            self.span_for(&[METHOD_INPUT_TYPE], m.input.span);
            self.span_for(&[METHOD_OUTPUT_TYPE], m.output.span);
            if let Some(span) = m.client_streaming {
                self.span_for(&[METHOD_CLIENT_STREAMING], span);
            }
            if let Some(span) = m.server_streaming {
                self.span_for(&[METHOD_SERVER_STREAMING], span);
            }
            self.path.push(METHOD_OPTIONS);
            let options = self.options(m.options)?;
            self.path.pop();
            method.push(MethodDescriptorProto {
                name: Some(m.name.value.to_string()),
                input_type: Some(m.input.text),
                output_type: Some(m.output.text),
                options: options.map(|uninterpreted_option| MethodOptions {
                    uninterpreted_option,
                    ..Default::default()
                }),
                client_streaming: m.client_streaming.map(|_| true),
                server_streaming: m.server_streaming.map(|_| true),
            });
            self.path.pop();
        }
        self.path.pop();
        self.path.push(SERVICE_OPTIONS);
        let options = self.options(service.options)?;
        self.path.pop();
        Ok(ServiceDescriptorProto {
            name: Some(service.name.value.to_string()),
            method,
            options: options.map(|uninterpreted_option| ServiceOptions {
                uninterpreted_option,
                ..Default::default()
            }),
        })
    }

    fn options(
        &mut self,
        statements: Vec<OptionStatement<'_>>,
    ) -> Result<Option<Vec<UninterpretedOption>>> {
        let mut options = Vec::with_capacity(statements.len());
        for statement in statements {
            self.span(statement.span);
            self.comments_for(
                &[UNINTERPRETED_OPTION, index(options.len())],
                statement.span,
                statement.comments,
            );
            options.push(option(statement.body)?);
        }
        Ok((!options.is_empty()).then_some(options))
    }

    fn options_list(
        &mut self,
        list: Option<OptionList<'_>>,
    ) -> Result<Option<Vec<UninterpretedOption>>> {
        let mut options = Vec::new();
        if let Some(list) = list {
            self.span(list.span);
            for body in list.options {
                self.span_for(&[UNINTERPRETED_OPTION, index(options.len())], body.span());
                options.push(option(body)?);
            }
        }
        Ok((!options.is_empty()).then_some(options))
    }
}

fn option(body: OptionBody<'_>) -> Result<UninterpretedOption> {
    let name = body
        .name
        .iter()
        .map(|part| uninterpreted_option::NamePart {
            name_part: part.value.to_string(),
            is_extension: false,
        })
        .collect();
    Ok(match body.value {
        OptionValue::Ident(ident) => UninterpretedOption {
            name,
            identifier_value: Some(ident.value.to_string()),
            ..Default::default()
        },
        OptionValue::Int(int) if int.negative => UninterpretedOption {
            name,
            negative_int_value: Some(int.as_i64().ok_or(Unsupported)?),
            ..Default::default()
        },
        OptionValue::Int(int) => UninterpretedOption {
            name,
            positive_int_value: Some(int.value),
            ..Default::default()
        },
        OptionValue::Str { value, .. } => UninterpretedOption {
            name,
            string_value: Some(value.into_bytes()),
            ..Default::default()
        },
    })
}

/// Takes the first option named exactly `name` out of `list`, as protox does for `json_name`.
fn take_option<'a>(list: &mut Option<OptionList<'a>>, name: &str) -> Option<OptionBody<'a>> {
    let list = list.as_mut()?;
    let i = list.options.iter().position(|o| o.has_name(name))?;
    Some(list.options.remove(i))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/peer-corpus");

    /// Files in this parser's shape, with every kind of comment and option it takes.
    const IN_SHAPE: &[&str] = &[
        "syntax = \"proto3\";\npackage a.b;\nmessage M { string s = 1; }\n",
        "syntax = 'proto2';\n\n// file comment\n\npackage p; // trailing\nimport \"x/y.proto\";\nimport public \"z.proto\";\nimport weak \"w.proto\";\n/* detached\n * block */\n\n/** doc\n * more */\nmessage A {\n  // leading\n  optional int32 a = 1; // trailing a\n  required string b = 2 [deprecated = true];\n  repeated .p.A c = 3 [packed = false, json_name = \"cee\"];\n  /* block before */ optional B d = 4;\n  // detached one\n\n  // attached\n  optional A.Inner e = 5;\n  message Inner { optional int32 x = 1; }\n  enum E { E0 = 0; E1 = 1 [deprecated = true]; E2 = -2; reserved 5 to 9, 12; reserved \"OLD\"; option allow_alias = true; }\n  reserved 10, 20 to 30, 100 to max;\n  reserved \"f\", \"g\";\n  option deprecated = true;\n  option no_standard_descriptor_accessor = false;\n}\nmessage B {}\n",
        "syntax = \"proto3\";\n\noption java_package = \"com.example\" \".x\";\noption java_multiple_files = true;\noption optimize_for = SPEED;\n\n// Enum doc\nenum Status {\n  STATUS_UNSPECIFIED = 0; // none\n  STATUS_OPEN = 1;\n}\n\nmessage Order {\n  string id = 1;\n  optional string note = 2;\n  optional string _hidden = 3;\n  map<string, int64> counts = 4;\n  map<int32, Order> children = 5 [json_name = \"kids\"];\n  oneof payment {\n    // card\n    string card = 6;\n    int64 cash = 7 [json_name = \"c\", deprecated = true];\n    option uninterpreted = 1;\n  }\n  oneof other { bytes raw = 8; }\n  Status status = 9;\n  repeated double amounts = 10;\n  fixed64 f64 = 11; sfixed32 sf = 0x0C; uint32 u = 015;\n  ;\n}\n",
        "syntax = \"proto3\";\r\npackage crlf;\r\n// comment\r\nmessage C {\r\n  int32 a = 1; // t\r\n}\r\n",
        "message P {\n  optional group G = 1 { optional int32 x = 2; }\n}\n",
        "syntax = \"proto3\";\nmessage Deep { message L1 { message L2 { message L3 { int32 x = 1; } } } L1.L2.L3 d = 1; .Deep.L1 e = 2; }\n",
        "syntax = \"proto3\";\n/* a */ /* b */\nmessage T {\n  int32 a = 1; /* t1 */ /* t2 */\n  int32 b = 2;\n  /* c */\n  int32 c = 3;\n}\n/* end */",
        "syntax = \"proto3\";\nmessage E {\n  int32 a = 1;\n  // last\n}\n// after all\n",
        "syntax = \"proto3\";\nmessage F { int32 a = 1 [ json_name = \"x\" ]; int32 b = 2 [ deprecated=true, json_name=\"y\" ]; int32 c = 3 [json_name = \"z\", json_name = \"w\"]; }",
        "syntax = \"proto3\";\npackage svc;\n// The service.\nservice Orders { // trailing\n  option deprecated = true;\n  // Places one.\n  rpc Place(Order) returns (.svc.Order);\n  rpc Watch(stream Order) returns (stream svc.Order) { option deprecated = true; ; }\n  ;\n  rpc Ping ( Order ) returns ( Order ) {} // done\n}\nmessage Order { string id = 1; }\nservice Empty {}\n",
        "syntax = \"proto3\";\nmessage G { reserved 1; reserved 2; // two\n reserved 3 to 4; reserved \"a\"; reserved \"b\"; option deprecated = true; option deprecated = false; }",
    ];

    /// Out of this parser's shape or invalid: `parse` must leave them to protox.
    const OUT_OF_SHAPE: &[&str] = &[
        "",
        "syntax = \"proto3\";\nservice S { rpc R(M) returns (M) { option (x) = 1; } }\nmessage M {}\n",
        "syntax = \"proto3\";\nmessage M { int32 a = 1 [(custom) = 1]; }\n",
        "syntax = \"proto2\";\nmessage M { optional int32 a = 1 [default = 5]; }\n",
        "syntax = \"proto3\";\nmessage M { double a = 1 [deprecated = true]; option x = 1.5; }\n",
        "syntax = \"proto3\";\nmessage M { string a = 1; } extend M { int32 b = 2; }\n",
        "syntax = \"proto2\";\nmessage M { extensions 100 to 200; }\n",
        "syntax = \"proto3\";\nmessage M { int32 a = 0; }\n",
        "syntax = \"proto3\";\nmessage M { required int32 a = 1; }\n",
        "syntax = \"proto2\";\nmessage M { int32 a = 1; }\n",
        "syntax = \"proto3\";\nmessage M { map<float, int32> a = 1; }\n",
        "syntax = \"proto3\";\nmessage M { oneof o {} }\n",
        "syntax = \"proto3\";\nmessage M { string a = 1 }\n",
        "syntax = \"proto3\";\nmessage M { string a = \"x\\n\"; }\n",
        "syntax = \"proto3\";\npackage a;\npackage b;\n",
        "syntax = \"proto4\";\n",
        "syntax = \"proto3\";\nmessage M { int32 a = 1abc; }\n",
        "syntax = \"proto3\";\n/* open /* nested */ */\nmessage M {}\n",
        "syntax = \"proto3\";\n# hash\nmessage M {}\n",
        "syntax = \"proto3\";\nimport \"../x.proto\";\n",
    ];

    fn corpus_texts() -> Vec<String> {
        let root = Path::new(CORPUS);
        if !root.exists() {
            println!("peer corpus not found at {CORPUS}: checking the local cases only");
            return Vec::new();
        }
        let mut texts = Vec::new();
        let mut stack = vec![root.join("protobuf-buf")];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "proto") {
                    texts.extend(std::fs::read_to_string(&path));
                }
            }
        }
        let jsonl = std::fs::read_to_string(root.join("protobuf.jsonl")).unwrap_or_default();
        for line in jsonl.lines() {
            let Ok(case) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            for key in ["writer", "reader"] {
                texts.extend(case[key].as_str().map(str::to_string));
            }
        }
        for file in [
            "confluent-protobuf-diff-schema-examples.json",
            "confluent-protobuf-diff-schema-examples-with-meta.json",
        ] {
            let text = std::fs::read_to_string(root.join(file)).unwrap_or_default();
            let cases: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap_or_default();
            for case in cases {
                for key in ["original_schema", "update_schema"] {
                    texts.extend(case[key].as_str().map(str::to_string));
                }
            }
        }
        texts
    }

    /// A file of `messages` messages of `fields` fields each, like the benchmark's.
    fn generated(messages: usize, fields: usize) -> String {
        let mut text = String::from(
            "syntax = \"proto3\";\n\npackage bench.v1;\n\nenum Status {\n  STATUS_UNSPECIFIED = 0;\n  STATUS_OPEN = 1;\n}\n",
        );
        let kinds = [
            "string name",
            "int64 count",
            "double amount",
            "bool flag",
            "repeated string tags",
            "Status status",
            "Message0 child",
            "map<string, int32> counters",
        ];
        for m in 0..messages {
            text.push_str(&format!("\n// Message {m}.\nmessage Message{m} {{\n"));
            for f in 0..fields {
                text.push_str(&format!("  {}_{f} = {};\n", kinds[f % kinds.len()], f + 1));
            }
            text.push_str("  reserved 900 to 910;\n}\n");
        }
        text
    }

    /// `ours` must be what protox gives whenever it gives anything.
    fn agrees(text: &str) -> Option<bool> {
        let ours = parse("schema.proto", text)?;
        match protox_parse::parse("schema.proto", text) {
            Ok(theirs) => Some(ours == theirs),
            Err(_) => Some(false),
        }
    }

    fn assert_agrees(text: &str) -> bool {
        match agrees(text) {
            Some(true) => true,
            Some(false) => panic!(
                "differs from protox on:\n{text}\nours: {:#?}\nprotox: {:#?}",
                parse("schema.proto", text),
                protox_parse::parse("schema.proto", text)
            ),
            None => false,
        }
    }

    #[test]
    fn files_in_shape_parse_as_protox_parses_them() {
        for (i, text) in IN_SHAPE.iter().enumerate() {
            // The group case is out of shape on purpose, between in-shape neighbours.
            if text.contains("group") {
                assert!(parse("schema.proto", text).is_none());
                continue;
            }
            assert!(assert_agrees(text), "case {i} was left to protox:\n{text}");
        }
        assert!(assert_agrees(&generated(100, 50)));
        // Declarations before many fields: more moves than the insertion sort is allowed.
        let mut nested_first = String::from("syntax = \"proto3\";\nmessage Outer {\n");
        for i in 0..20 {
            nested_first.push_str(&format!("  enum E{i} {{ E{i}_ZERO = 0; E{i}_ONE = 1; }}\n"));
            nested_first.push_str(&format!("  message N{i} {{ int32 x = 1; }}\n"));
        }
        for i in 1..=200 {
            nested_first.push_str(&format!("  N{} f{i} = {i};\n", i % 20));
        }
        nested_first.push_str("}\nenum Last { LAST_ZERO = 0; }\nmessage Tail { Last l = 1; }\n");
        assert!(assert_agrees(&nested_first));
    }

    /// The declarations' source info is the full one's, for each path it keeps once: the same
    /// first location (span and comments), and the same descriptor besides.
    #[test]
    fn declarations_keep_what_locating_and_comments_read() {
        let mut texts: Vec<String> = IN_SHAPE.iter().map(|t| t.to_string()).collect();
        texts.extend(corpus_texts());
        texts.push(generated(20, 30));
        let mut compared = 0;
        for text in &texts {
            let (Some(mut full), Some(mut kept)) = (
                parse("schema.proto", text),
                parse_declarations("schema.proto", text),
            ) else {
                continue;
            };
            let full_info = full.source_code_info.take().unwrap_or_default();
            let kept_info = kept.source_code_info.take().unwrap_or_default();
            assert_eq!(full, kept, "{text}");
            let first = |info: &SourceCodeInfo, path: &[i32]| {
                info.location.iter().find(|l| l.path == path).cloned()
            };
            // A path that several statements share (`reserved` twice in one message) is
            // nobody's declaration: which of them comes first is the sort's own.
            let once =
                |path: &[i32]| kept_info.location.iter().filter(|l| l.path == path).count() == 1;
            for location in kept_info.location.iter().filter(|l| once(&l.path)) {
                assert_eq!(
                    first(&kept_info, &location.path),
                    first(&full_info, &location.path),
                    "{text}"
                );
            }
            let fields: usize = full.message_type.iter().map(|m| m.field.len()).sum();
            assert!(kept_info.location.len() >= fields, "{text}");
            compared += 1;
        }
        assert!(compared >= IN_SHAPE.len() - 1);
    }

    #[test]
    fn files_out_of_shape_are_left_to_protox() {
        for text in OUT_OF_SHAPE {
            assert!(parse("schema.proto", text).is_none(), "taken:\n{text}");
        }
    }

    #[test]
    fn corpus_files_parse_as_protox_parses_them() {
        let texts = corpus_texts();
        let taken = texts.iter().filter(|t| assert_agrees(t)).count();
        println!(
            "{taken} of {} corpus files in this parser's shape",
            texts.len()
        );
        if !texts.is_empty() {
            assert!(
                taken * 2 > texts.len(),
                "only {taken} of {} taken",
                texts.len()
            );
        }
    }

    /// Small edits of every file (bytes dropped, lines doubled, comments, blank lines and
    /// statements put in), 40 of each.
    fn edited_texts() -> Vec<String> {
        const INSERTS: &[&str] = &[
            "\n",
            "\n\n",
            "// c\n",
            "/* b */",
            "/* b */\n",
            " ",
            ";",
            "}",
            "{",
            "optional ",
            "repeated ",
            "reserved 7;",
            "option deprecated = true;",
            "= 3",
            "[json_name = \"j\"]",
            "message N { int32 n = 1; }",
            "enum Q { Q0 = 0; }",
            "\"s\"",
            "-",
            ".",
            "0x1f",
            "oneof o { int32 z = 99; }",
            "map<string, string> m = 98;",
            "\r\n",
            "//\n",
            "/**/",
        ];
        let mut texts: Vec<String> = IN_SHAPE.iter().map(|t| t.to_string()).collect();
        texts.extend(corpus_texts());
        texts.push(generated(3, 9));
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |bound: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % bound.max(1) as u64) as usize
        };
        let mut out = Vec::new();
        for text in &texts {
            for _ in 0..40 {
                let mut edited = text.clone();
                for _ in 0..1 + next(3) {
                    let at = next(edited.len() + 1);
                    let at = (0..=at)
                        .rev()
                        .find(|&i| edited.is_char_boundary(i))
                        .unwrap_or(0);
                    match next(3) {
                        0 => {
                            let end = (at + 1 + next(8)).min(edited.len());
                            let end = (end..=edited.len())
                                .find(|&i| edited.is_char_boundary(i))
                                .unwrap_or(edited.len());
                            edited.replace_range(at..end, "");
                        }
                        1 => edited.insert_str(at, INSERTS[next(INSERTS.len())]),
                        _ => {
                            let line_start = edited[..at].rfind('\n').map_or(0, |i| i + 1);
                            let line_end =
                                edited[at..].find('\n').map_or(edited.len(), |i| at + i + 1);
                            let line = edited[line_start..line_end].to_string();
                            edited.insert_str(line_end, &line);
                        }
                    }
                }
                out.push(edited);
            }
        }
        out
    }

    /// Whatever this parser takes of the edited files, protox parses to the same descriptor.
    #[test]
    fn edited_files_parse_as_protox_parses_them() {
        let texts = edited_texts();
        let edits = texts.len();
        let taken = texts.iter().filter(|t| assert_agrees(t)).count();
        println!(
            "{taken} of {edits} edited files in this parser's shape, all as protox parses them"
        );
        assert!(taken > 0);
    }

    /// The pool's answer for a file: its compiled descriptor, or every error.
    fn compiled(file: FileDescriptorProto) -> std::result::Result<FileDescriptorProto, String> {
        let mut pool = prost_reflect::DescriptorPool::global();
        for (name, text) in crate::builtin::FILES {
            let builtin = protox_parse::parse(name, text).expect("a built-in file parses");
            pool.add_file_descriptor_proto(builtin)
                .expect("a built-in file compiles");
        }
        let name = file.name().to_string();
        pool.add_file_descriptor_proto(file)
            .map_err(|e| format!("{e:?}"))?;
        Ok(pool
            .get_file_by_name(&name)
            .expect("the file just added")
            .file_descriptor_proto()
            .clone())
    }

    /// Qualifying field types from the root (`crate::qualify`) changes no compiled descriptor
    /// and no error, on every corpus file and edited file this parser takes.
    #[test]
    fn qualified_types_compile_as_written_ones() {
        let mut texts = corpus_texts();
        texts.extend(edited_texts());
        texts.push(generated(20, 12));
        let (mut files, mut changed, mut refused) = (0, 0, 0);
        for text in &texts {
            let Some(written) = parse_declarations("schema.proto", text) else {
                continue;
            };
            let mut qualified = written.clone();
            crate::qualify::qualify_local_types(&mut qualified);
            files += 1;
            changed += usize::from(qualified != written);
            let expected = compiled(written);
            refused += usize::from(expected.is_err());
            assert_eq!(compiled(qualified), expected, "on:\n{text}");
        }
        println!("{files} files, {changed} with qualified types, {refused} refused by the pool");
        assert!(
            changed * 10 > files,
            "only {changed} of {files} had types to qualify"
        );
    }
}
