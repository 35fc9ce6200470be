//! The checked catalogue: every name resolved against the runtime's vocabularies, every regex
//! validated and lowered to its RE2-flavoured form, every example completed from its rule's
//! guards. Later stages (priority, collision analysis, automata) read only this.

use std::sync::Arc;

use faultline_dsl::{SourceFile, Span};
use faultline_runtime::{
    Class, Confidence, Evidence, EvidenceField, RecoveryPolicy, Scope, TextView, TimingExtractor,
};

/// Where a checked entity is written, for diagnostics of later stages.
#[derive(Debug, Clone)]
pub struct Origin {
    /// The file.
    pub file: Arc<SourceFile>,
    /// The span (for a rule: its name).
    pub span: Span,
}

/// A checked catalogue.
#[derive(Debug, Clone)]
pub struct Catalogue {
    /// The catalogue's name.
    pub name: String,
    /// The version stamped on classifications, e.g. `provider-errors.v1`.
    pub version: String,
    /// Tier names, highest priority first.
    pub tiers: Vec<String>,
    /// Declared provider ids.
    pub providers: Vec<String>,
    /// Declared codes, in declaration order.
    pub codes: Vec<CodeDef>,
    /// Rules, in declaration order (not priority order).
    pub rules: Vec<RuleDef>,
    /// The recovery policy of the `policy` block; `None` when the catalogue has none (its
    /// bundle then carries the reference's defaults).
    pub policy: Option<RecoveryPolicy>,
}

/// A declared semantic code.
#[derive(Debug, Clone)]
pub struct CodeDef {
    /// Its name, e.g. `provider_overloaded`.
    pub name: String,
    /// Its policy class.
    pub class: Class,
    /// Invariant flags.
    pub auto_retryable: bool,
    /// Invariant flags.
    pub fallback_allowed: bool,
    /// Invariant flags.
    pub user_action: bool,
    /// The default scope of rules with this code.
    pub scope: Scope,
    /// A remediation token, e.g. `start_fresh_session`.
    pub remediation: Option<String>,
    /// Its doc comment.
    pub doc: String,
    /// Where it is declared.
    pub origin: Origin,
}

/// A rule's index in [`Catalogue::rules`] (declaration order, not priority order).
///
/// Only a catalogue hands these out ([`Catalogue::indices`], [`Catalogue::index_of`]) and
/// only the catalogue it came from (and that catalogue's [`crate::Priority`]) reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RuleIndex(usize);

impl RuleIndex {
    /// The index for position `index` of [`Catalogue::rules`].
    pub(crate) fn new(index: usize) -> Self {
        RuleIndex(index)
    }

    /// The index as a `usize`, for indexing the catalogue's rules.
    pub fn as_usize(self) -> usize {
        self.0
    }
}

impl std::fmt::Display for RuleIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl Catalogue {
    /// The rule at `index`.
    pub fn rule(&self, index: RuleIndex) -> Option<&RuleDef> {
        self.rules.get(index.as_usize())
    }

    /// The index of the rule with id `id`.
    pub fn index_of(&self, id: &str) -> Option<RuleIndex> {
        self.rules
            .iter()
            .position(|rule| rule.id == id)
            .map(RuleIndex::new)
    }

    /// Every rule with its index, in declaration order.
    pub fn indices(&self) -> impl Iterator<Item = (RuleIndex, &RuleDef)> {
        self.rules
            .iter()
            .enumerate()
            .map(|(index, rule)| (RuleIndex::new(index), rule))
    }
}

/// A checked rule.
#[derive(Debug, Clone)]
pub struct RuleDef {
    /// The stable id.
    pub id: String,
    /// Its doc comment.
    pub doc: String,
    /// The code it assigns.
    pub code: String,
    /// Its confidence.
    pub confidence: Confidence,
    /// Its scope (explicit, or the code's default).
    pub scope: Scope,
    /// Index into [`Catalogue::tiers`].
    pub tier: usize,
    /// Explicit rank inside the tier (lower wins), if any.
    pub rank: Option<i64>,
    /// Rules this one must win against.
    pub before: Vec<String>,
    /// Rules that must win against this one.
    pub after: Vec<String>,
    /// Structured guards (all must hold).
    pub guards: Guards,
    /// Text matchers (all must match).
    pub matchers: Vec<TextMatcher>,
    /// Vetoes (any one matching stops the rule).
    pub vetoes: Vec<TextMatcher>,
    /// Timing extractors to run when the rule wins.
    pub timing: Vec<TimingExtractor>,
    /// The JSON Pointers named for `body_reset` (`body_reset "/error/resets_at"`), in order.
    pub body_reset_at: Vec<String>,
    /// The remediation it reports.
    pub remediation: Option<RemediationSpec>,
    /// A fixed, redaction-clean text reported instead of the evidence's excerpt.
    pub excerpt: Option<String>,
    /// Evidence the rule must win on.
    pub examples: Vec<Example>,
    /// Evidence the rule must not fire on.
    pub counterexamples: Vec<Example>,
    /// Where it is declared (the span of its id).
    pub origin: Origin,
}

impl RuleDef {
    /// How a diagnostic names the rule's veto `index` (0-based, in compiled order, where a veto
    /// set's members stand in its place): `` `unless prose_quoting` (its member `guide_prose`) ``
    /// for a shared veto, `` `unless` 2 `` by its clause for one written inline (members of one
    /// set share their clause's span, so the clause is counted by distinct spans).
    pub fn veto_clause(&self, index: usize) -> Option<String> {
        let veto = self.vetoes.get(index)?;
        if let Some(shared) = &veto.shared {
            return Some(shared.to_string());
        }
        let mut clauses: Vec<Span> = Vec::new();
        for earlier in self.vetoes.get(..=index)? {
            if !clauses.contains(&earlier.span) {
                clauses.push(earlier.span);
            }
        }
        Some(format!("`unless` {}", clauses.len()))
    }

    /// Whether the rule reads text (and so follows the example convention).
    pub fn matches_text(&self) -> bool {
        !self.matchers.is_empty()
    }
}

/// Structured guards; `None` means "any value". The same type the bundle carries.
pub type Guards = faultline_runtime::build::GuardsEntry;

/// A text matcher over one view of the evidence text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextMatcher {
    /// Which rendering of the text it reads.
    pub view: TextView,
    /// The JSON Pointer of the body whose values it reads, for [`TextView::Body`] only.
    pub pointer: Option<String>,
    /// What it tests.
    pub kind: MatcherKind,
    /// Where its pattern or literal is written (in the file of its rule), for diagnostics of
    /// later stages such as an automaton that exceeds its budget; for a shared veto, the name
    /// of its use (`unless <name>`) in the rule.
    pub span: Span,
    /// For a shared veto, how the rule names it, so that a diagnostic can say which veto stopped
    /// the rule.
    pub shared: Option<SharedVetoUse>,
}

/// How a rule names a shared veto: `unless <used_as>`, where `used_as` is the veto itself or a
/// veto set holding it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedVetoUse {
    /// The name after `unless`.
    pub used_as: String,
    /// The shared veto's own name (a member of `used_as` when that is a veto set).
    pub veto: String,
}

impl std::fmt::Display for SharedVetoUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.used_as == self.veto {
            write!(f, "`unless {}`", self.used_as)
        } else {
            write!(f, "`unless {}` (its member `{}`)", self.used_as, self.veto)
        }
    }
}

/// What a text matcher tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MatcherKind {
    /// A regex, lowered to RE2 semantics (ASCII `\b`, `\d`, `\s`, `\w`).
    Regex {
        /// The pattern as written.
        written: String,
        /// The pattern every engine compiles.
        lowered: String,
        /// `where group N == field`.
        group_equals: Option<(u32, EvidenceField)>,
    },
    /// The Unicode-trimmed text starts with `literal`, and what follows, trimmed, has a byte
    /// length within `suffix`.
    Prefix {
        /// The literal.
        literal: String,
        /// Compare ignoring case (Unicode simple case folding).
        ignore_case: bool,
        /// Inclusive byte bounds on the trimmed remainder.
        suffix: Option<(usize, usize)>,
    },
    /// The Unicode-trimmed text is exactly `literal`.
    Whole {
        /// The literal.
        literal: String,
        /// Compare ignoring case.
        ignore_case: bool,
    },
    /// The text contains `literal`.
    Contains {
        /// The literal.
        literal: String,
        /// Compare ignoring case.
        ignore_case: bool,
    },
}

/// How a rule's remediation value is obtained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemediationSpec {
    /// A fixed token.
    Token(String),
    /// A capture group of a regex over one view; the rule is vetoed when it does not match.
    Capture {
        /// The lowered pattern.
        lowered: String,
        /// The group.
        group: u32,
        /// The view.
        view: TextView,
        /// Where the pattern is written (in the file of its rule).
        span: Span,
    },
}

/// An inline example or counterexample.
#[derive(Debug, Clone)]
pub struct Example {
    /// The evidence, completed with the rule's single-valued guards (`prompt_send` when
    /// neither the example nor the rule names a phase).
    pub evidence: Evidence,
    /// Where it is written.
    pub origin: Origin,
}
