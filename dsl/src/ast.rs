//! The syntax tree of one `.rules` file, with a span on every node.
//!
//! The tree is a faithful picture of the text: names are not resolved and values are not
//! validated here (the compiler's checker does that), so that every mistake can be reported
//! against the exact text that contains it. Comments are kept beside the tree for the formatter.

use serde::Serialize;

use crate::source::Span;

/// A value with the span of the text it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Spanned<T> {
    /// The value.
    pub value: T,
    /// Where it is written.
    pub span: Span,
}

/// A name: an identifier or a rule id, as written.
pub type Name = Spanned<String>;

/// A whole file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SyntaxFile {
    /// Top-level items, in file order.
    pub items: Vec<Item>,
    /// Ordinary `//` comments, in file order (doc comments belong to their block).
    pub comments: Vec<Comment>,
}

/// An ordinary `//` comment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Comment {
    /// The comment text including the leading `//`, without the line break.
    pub text: String,
    /// Where it is written.
    pub span: Span,
}

/// A top-level item.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "item", rename_all = "snake_case")]
pub enum Item {
    /// `catalogue "name" version "name.v1"`
    Header(Header),
    /// `include "other.rules"`
    Include(Include),
    /// `tiers [structured, provider, …]`
    Tiers(TiersDecl),
    /// `provider "claude-acp"`
    Provider(ProviderDecl),
    /// `code name { … }`
    Code(Block),
    /// `rule id { … }`
    Rule(Block),
    /// `policy { … }`: the catalogue's recovery policy.
    Policy(PolicyBlock),
    /// `veto <name> <matcher>`: a veto that rules share as `unless <name>`.
    Veto(Box<VetoDecl>),
}

impl Item {
    /// The span of the whole item (a block's span includes its doc comments).
    pub fn span(&self) -> Span {
        match self {
            Item::Header(header) => header.span,
            Item::Include(include) => include.span,
            Item::Tiers(tiers) => tiers.span,
            Item::Provider(provider) => provider.span,
            Item::Code(block) | Item::Rule(block) => block.span,
            Item::Policy(policy) => policy.span,
            Item::Veto(veto) => veto.span,
        }
    }
}

/// The catalogue header.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Header {
    /// The whole item.
    pub span: Span,
    /// The catalogue's name.
    pub name: StringLit,
    /// The catalogue's version string, e.g. `provider-errors.v1`.
    pub version: StringLit,
}

/// An include of another file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Include {
    /// The whole item.
    pub span: Span,
    /// The path, relative to this file's directory.
    pub path: StringLit,
}

/// The tier list, highest priority first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TiersDecl {
    /// The whole item.
    pub span: Span,
    /// The `tiers` keyword.
    pub keyword: Span,
    /// The tiers.
    pub tiers: List,
}

/// A provider declaration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProviderDecl {
    /// The whole item.
    pub span: Span,
    /// The provider id.
    pub id: StringLit,
}

/// A shared veto: a matcher declared once, with a name, which rules use as `unless <name>`
/// (the same prose veto is wanted by many rules); or a veto set, several shared vetoes that rules
/// name at once.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VetoDecl {
    /// From the first doc comment (or keyword) to the end of the matcher or set.
    pub span: Span,
    /// `///` doc comment lines, without the `///` marker.
    pub docs: Vec<Spanned<String>>,
    /// The `veto` keyword.
    pub keyword: Span,
    /// The name rules use it by.
    pub name: Name,
    /// What it vetoes.
    pub body: VetoBody,
}

/// What a shared veto declaration names.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum VetoBody {
    /// `veto <name> <matcher>`: one matcher.
    Matcher(Box<Matcher>),
    /// `veto <name> [<veto>, <veto>, …]`: other shared vetoes (each declared with a matcher),
    /// all of which `unless <name>` applies.
    Set(VetoSet),
}

/// The members of a veto set.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VetoSet {
    /// The brackets and everything between.
    pub span: Span,
    /// The shared vetoes it names, in order.
    pub members: Vec<Name>,
}

/// A `code` or `rule` block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Block {
    /// From the first doc comment (or keyword) to the closing brace.
    pub span: Span,
    /// `///` doc comment lines, without the `///` marker.
    pub docs: Vec<Spanned<String>>,
    /// The `code` or `rule` keyword.
    pub keyword: Span,
    /// The code name or rule id.
    pub name: Name,
    /// The clauses, in file order.
    pub clauses: Vec<Clause>,
    /// The closing brace.
    pub close: Span,
}

/// The `policy` block: settings, each a name with at most one value and an optional body of
/// further settings. Which settings exist, and where, is the checker's business.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyBlock {
    /// From the first doc comment (or keyword) to the closing brace.
    pub span: Span,
    /// `///` doc comment lines, without the `///` marker.
    pub docs: Vec<Spanned<String>>,
    /// The `policy` keyword.
    pub keyword: Span,
    /// The settings, in file order.
    pub settings: Vec<Setting>,
    /// The closing brace.
    pub close: Span,
}

/// One setting of a policy: `name`, `name value`, `name { … }` or `name value { … }`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Setting {
    /// The whole setting.
    pub span: Span,
    /// Its name.
    pub name: Name,
    /// Its value.
    pub value: Option<SettingValue>,
    /// Its body.
    pub body: Option<SettingBody>,
}

/// The braces of a setting and the settings between them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SettingBody {
    /// The braces and everything between.
    pub span: Span,
    /// The settings, in file order.
    pub settings: Vec<Setting>,
}

/// The value of a setting.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "setting_value", rename_all = "snake_case")]
pub enum SettingValue {
    /// A string, number or name.
    Value(Value),
    /// A duration such as `5s`.
    Duration(DurationLit),
    /// `[a, 5s, …]`
    List {
        /// The brackets and everything between.
        span: Span,
        /// The items (never lists).
        items: Vec<SettingValue>,
    },
}

impl SettingValue {
    /// Where the value is written.
    pub fn span(&self) -> Span {
        match self {
            SettingValue::Value(value) => value.span(),
            SettingValue::Duration(duration) => duration.span,
            SettingValue::List { span, .. } => *span,
        }
    }

    /// What kind of value it is, for messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            SettingValue::Value(value) => value.kind_name(),
            SettingValue::Duration(_) => "a duration",
            SettingValue::List { .. } => "a list",
        }
    }
}

/// A duration literal: digits and a unit (`s`, `m`, `h`, `d`). `seconds` is `None` when it does
/// not fit in 64 bits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DurationLit {
    /// The duration in whole seconds, if it fits.
    pub seconds: Option<u64>,
    /// The literal as written.
    pub source: String,
    /// Where it is written.
    pub span: Span,
}

/// One clause of a block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Clause {
    /// The whole clause.
    pub span: Span,
    /// The leading keyword.
    pub keyword: Span,
    /// What the clause says.
    pub kind: ClauseKind,
}

/// What a clause says.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "clause", rename_all = "snake_case")]
pub enum ClauseKind {
    /// `code <name>`
    Code(Name),
    /// `class <class>`
    Class(Name),
    /// `flags [<flag>, …]`
    Flags(List),
    /// `confidence <confidence>`
    Confidence(Name),
    /// `scope <scope>`
    Scope(Name),
    /// `tier <tier>`
    Tier(Name),
    /// `rank <n>`
    Rank(IntLit),
    /// `before <rule id>`
    Before(Name),
    /// `after <rule id>`
    After(Name),
    /// `when <field> …`
    When(Guard),
    /// `match <matcher>`
    Match(Matcher),
    /// `unless <matcher>`
    Unless(Matcher),
    /// `unless <name>`: the shared veto `veto <name> …` declares.
    UnlessShared(Name),
    /// `timing [<extractor>, <extractor> "/pointer", …]`
    Timing(TimingList),
    /// `remediation "<token>"` or `remediation capture r"…" group N`
    Remediation(Remediation),
    /// `excerpt "<fixed text>"`: reported instead of the evidence text
    Excerpt(StringLit),
    /// `example <evidence>`
    Example(Evidence),
    /// `counterexample <evidence>`
    Counterexample(Evidence),
}

impl ClauseKind {
    /// The clause's keyword.
    pub fn keyword(&self) -> &'static str {
        match self {
            ClauseKind::Code(_) => "code",
            ClauseKind::Class(_) => "class",
            ClauseKind::Flags(_) => "flags",
            ClauseKind::Confidence(_) => "confidence",
            ClauseKind::Scope(_) => "scope",
            ClauseKind::Tier(_) => "tier",
            ClauseKind::Rank(_) => "rank",
            ClauseKind::Before(_) => "before",
            ClauseKind::After(_) => "after",
            ClauseKind::When(_) => "when",
            ClauseKind::Match(_) => "match",
            ClauseKind::Unless(_) | ClauseKind::UnlessShared(_) => "unless",
            ClauseKind::Timing(_) => "timing",
            ClauseKind::Remediation(_) => "remediation",
            ClauseKind::Excerpt(_) => "excerpt",
            ClauseKind::Example(_) => "example",
            ClauseKind::Counterexample(_) => "counterexample",
        }
    }
}

/// A structured guard: `when <field> = v`, `when <field> in [...]`, `when <field> present`;
/// on structured evidence, with a key: `when header "name" …`, `when body "/pointer" …`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Guard {
    /// The evidence field (`header` or `body` when keyed).
    pub field: Name,
    /// The header name or JSON Pointer, for a keyed guard.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<StringLit>,
    /// The test.
    pub test: GuardTest,
}

/// The test of a guard.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "test", rename_all = "snake_case")]
pub enum GuardTest {
    /// `= value`
    Equals(Value),
    /// `in [values]`
    In(List),
    /// `present`: the field is set (and, for text, non-empty).
    Present(Span),
}

/// A text matcher.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Matcher {
    /// The whole matcher.
    pub span: Span,
    /// Its kind and arguments.
    pub kind: MatcherKind,
    /// `on <view>`; the sanitized view when absent.
    pub view: Option<View>,
}

/// `on <view>`, or `on body "/pointer"`: what a text matcher reads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct View {
    /// The view's name (`sanitized`, `raw`, `body`).
    pub name: Name,
    /// The JSON Pointer of the error body whose values a `body` view reads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pointer: Option<StringLit>,
}

/// The kinds of text matcher.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "matcher", rename_all = "snake_case")]
pub enum MatcherKind {
    /// `regex r"…" [where group N == field]`
    Regex {
        /// The pattern.
        pattern: StringLit,
        /// An equality between a capture group and an evidence field.
        group_equals: Option<GroupEquals>,
    },
    /// `prefix "…" [ignore_case] [suffix MIN..=MAX bytes]`
    Prefix {
        /// The literal the trimmed text starts with.
        literal: StringLit,
        /// `ignore_case`
        ignore_case: Option<Span>,
        /// The bound on what follows the prefix, after trimming.
        suffix: Option<SuffixBytes>,
    },
    /// `whole "…" [ignore_case]`: the trimmed text is exactly the literal.
    Whole {
        /// The literal.
        literal: StringLit,
        /// `ignore_case`
        ignore_case: Option<Span>,
    },
    /// `contains "…" [ignore_case]`
    Contains {
        /// The literal.
        literal: StringLit,
        /// `ignore_case`
        ignore_case: Option<Span>,
    },
}

/// `where group N == field`
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupEquals {
    /// The whole `where …` part.
    pub span: Span,
    /// The capture group.
    pub group: IntLit,
    /// The evidence field it must equal.
    pub field: Name,
}

/// `suffix MIN..=MAX bytes`
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SuffixBytes {
    /// The whole bound.
    pub span: Span,
    /// Minimum byte length.
    pub min: IntLit,
    /// Maximum byte length.
    pub max: IntLit,
}

/// A remediation: a fixed token, or a value captured from the text.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "remediation", rename_all = "snake_case")]
pub enum Remediation {
    /// `remediation "start_fresh_session"`
    Token(StringLit),
    /// `remediation capture r"…" group N [on view]`
    Capture {
        /// The pattern.
        pattern: StringLit,
        /// The capture group whose text is the remediation value.
        group: IntLit,
        /// The text view; sanitized when absent.
        view: Option<View>,
    },
}

/// The evidence of an example: a bare string (the stderr text) or an object of fields.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "evidence", rename_all = "snake_case")]
pub enum Evidence {
    /// `"text"`: shorthand for `{ stderr: "text" }`.
    Text(StringLit),
    /// `{ field: value, … }`
    Object {
        /// The braces and everything between.
        span: Span,
        /// The fields, in order.
        fields: Vec<EvidenceField>,
    },
}

/// One `field: value` of an evidence object.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvidenceField {
    /// The field name.
    pub name: Name,
    /// Its value.
    pub value: Value,
}

/// The list of a `timing` clause.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimingList {
    /// The brackets and everything between.
    pub span: Span,
    /// The extractors, in order.
    pub items: Vec<TimingItem>,
}

impl TimingList {
    /// The extractors' names alone, as a plain list.
    pub fn names(&self) -> List {
        List {
            span: self.span,
            items: self
                .items
                .iter()
                .map(|item| item.extractor.clone())
                .collect(),
        }
    }
}

/// One extractor of a `timing` list: `retry_after`, or `body_reset "/error/resets_at"`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimingItem {
    /// The extractor's name.
    pub extractor: Value,
    /// The JSON Pointer of the error body it reads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pointer: Option<StringLit>,
}

/// A list `[a, b, c]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct List {
    /// The brackets and everything between.
    pub span: Span,
    /// The values.
    pub items: Vec<Value>,
}

/// A scalar value.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum Value {
    /// A string literal.
    Str(StringLit),
    /// An integer.
    Int(IntLit),
    /// A bare identifier.
    Ident(Name),
}

impl Value {
    /// Where the value is written.
    pub fn span(&self) -> Span {
        match self {
            Value::Str(string) => string.span,
            Value::Int(int) => int.span,
            Value::Ident(name) => name.span,
        }
    }

    /// What kind of value it is, for messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "a string",
            Value::Int(_) => "a number",
            Value::Ident(_) => "a name",
        }
    }
}

/// An integer literal. `value` is `None` when the digits do not fit in an `i64`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IntLit {
    /// The value, if it fits.
    pub value: Option<i64>,
    /// Where it is written.
    pub span: Span,
}

/// A string literal: its decoded value and how it was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StringLit {
    /// The decoded value (invalid escapes decode to U+FFFD and are reported separately).
    pub value: String,
    /// The literal exactly as written, quotes included; the formatter writes it back unchanged.
    pub source: String,
    /// Where it is written.
    pub span: Span,
    /// For each byte of `value` (and one past the end), its offset in the file.
    #[serde(skip)]
    pub(crate) offsets: Vec<usize>,
}

impl StringLit {
    /// The file offset of byte `index` of the decoded value (clamped to the literal).
    pub fn offset_of(&self, index: usize) -> usize {
        self.offsets
            .get(index)
            .copied()
            .unwrap_or(self.span.end.saturating_sub(1))
    }

    /// The file span of a byte range of the decoded value.
    pub fn span_of(&self, start: usize, end: usize) -> Span {
        let start_offset = self.offset_of(start);
        Span::new(start_offset, self.offset_of(end).max(start_offset))
    }

    /// Whether it was written as a raw string (`r"…"`).
    pub fn is_raw(&self) -> bool {
        self.source.starts_with('r')
    }
}
