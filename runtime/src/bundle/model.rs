//! The catalogue as a bundle carries it: rules in effective priority order, their matchers,
//! the automata's pattern tables and the prefilter's literals.

use serde::{Deserialize, Serialize};

use crate::policy::RecoveryPolicy;

use crate::structured::{Body, Headers};
use crate::vocab::{
    Class, Confidence, EvidenceField, Phase, Scope, Source, TextView, TimingExtractor,
};

/// Everything in a bundle except the automata's bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogueModel {
    /// The redaction rules the catalogue was checked with.
    pub redaction_version: String,
    /// Tier names, highest priority first.
    pub tiers: Vec<String>,
    /// Declared codes.
    pub codes: Vec<CodeEntry>,
    /// Rules in effective priority order: the first that fires wins.
    pub rules: Vec<RuleEntry>,
    /// One entry per text view that any rule reads.
    pub views: Vec<ViewEntry>,
    /// Prefilter: literals (ASCII lowercase, or CJK) of which a gated rule needs at least one.
    pub literals: Vec<LiteralEntry>,
    /// The catalogue's recovery policy (format 6); `None` when the catalogue has no `policy`
    /// block, and in bundles of older formats: the loader gives those the reference's defaults.
    pub policy: Option<RecoveryPolicy>,
    /// Prefilter conjuncts (format 7): a gated rule may fire only when every literal of one of
    /// its conjuncts occurs. Bundles of older formats required any one of a rule's literals:
    /// they are given one conjunct per literal.
    pub requirements: Vec<RequirementEntry>,
}

/// One conjunct of a gated rule's prefilter requirement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequirementEntry {
    /// The rule (index into [`CatalogueModel::rules`]).
    pub rule: u32,
    /// The literals (indices into [`CatalogueModel::literals`]) that must all occur, the most
    /// selective first (the runtime's one pass looks for all of them at once; the order is kept
    /// for readers that look for the first before the others).
    pub literals: Vec<u32>,
}

/// One conjunct per literal a rule is listed under: the requirement of formats 3 to 6, in which
/// any one literal of a rule admitted it.
fn literal_conjuncts(literals: &[LiteralEntry]) -> Vec<RequirementEntry> {
    literals
        .iter()
        .enumerate()
        .flat_map(|(id, literal)| {
            literal.rules.iter().map(move |rule| RequirementEntry {
                rule: *rule,
                literals: vec![id as u32],
            })
        })
        .collect()
}

/// The catalogue model of format 7, in which every pattern had a DFA: read and converted.
#[derive(Debug, Deserialize)]
pub(crate) struct CatalogueModelV7 {
    redaction_version: String,
    tiers: Vec<String>,
    codes: Vec<CodeEntry>,
    rules: Vec<RuleEntry>,
    views: Vec<ViewEntryV7>,
    literals: Vec<LiteralEntry>,
    policy: Option<RecoveryPolicy>,
    requirements: Vec<RequirementEntry>,
}

impl From<CatalogueModelV7> for CatalogueModel {
    fn from(old: CatalogueModelV7) -> CatalogueModel {
        CatalogueModel {
            redaction_version: old.redaction_version,
            tiers: old.tiers,
            codes: old.codes,
            rules: old.rules,
            views: views_v7(old.views),
            literals: old.literals,
            policy: old.policy,
            requirements: old.requirements,
        }
    }
}

/// The catalogue model of format 6, whose prefilter admitted a rule on any one of its literals:
/// read and converted ([`literal_conjuncts`]).
#[derive(Debug, Deserialize)]
pub(crate) struct CatalogueModelV6 {
    redaction_version: String,
    tiers: Vec<String>,
    codes: Vec<CodeEntry>,
    rules: Vec<RuleEntry>,
    views: Vec<ViewEntryV7>,
    literals: Vec<LiteralEntry>,
    policy: Option<RecoveryPolicy>,
}

impl From<CatalogueModelV6> for CatalogueModel {
    fn from(old: CatalogueModelV6) -> CatalogueModel {
        CatalogueModel {
            requirements: literal_conjuncts(&old.literals),
            redaction_version: old.redaction_version,
            tiers: old.tiers,
            codes: old.codes,
            rules: old.rules,
            views: views_v7(old.views),
            literals: old.literals,
            policy: old.policy,
        }
    }
}

/// The catalogue model of format 5, which carried no recovery policy: read and converted (the
/// loader gives it the reference's defaults).
#[derive(Debug, Deserialize)]
pub(crate) struct CatalogueModelV5 {
    redaction_version: String,
    tiers: Vec<String>,
    codes: Vec<CodeEntry>,
    rules: Vec<RuleEntry>,
    views: Vec<ViewEntryV7>,
    literals: Vec<LiteralEntry>,
}

impl From<CatalogueModelV5> for CatalogueModel {
    fn from(old: CatalogueModelV5) -> CatalogueModel {
        CatalogueModel {
            redaction_version: old.redaction_version,
            tiers: old.tiers,
            codes: old.codes,
            rules: old.rules,
            views: views_v7(old.views),
            requirements: literal_conjuncts(&old.literals),
            literals: old.literals,
            policy: None,
        }
    }
}

/// A declared code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeEntry {
    /// Name.
    pub name: String,
    /// Class.
    pub class: Class,
    /// Flags.
    pub auto_retryable: bool,
    /// Flags.
    pub fallback_allowed: bool,
    /// Flags.
    pub user_action: bool,
    /// Default scope.
    pub scope: Scope,
    /// Remediation token.
    pub remediation: Option<String>,
}

/// A rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleEntry {
    /// Stable id.
    pub id: String,
    /// Doc comment.
    pub doc: String,
    /// Index into [`CatalogueModel::codes`].
    pub code: u32,
    /// Confidence.
    pub confidence: Confidence,
    /// Scope.
    pub scope: Scope,
    /// Index into [`CatalogueModel::tiers`].
    pub tier: u32,
    /// Structured guards.
    pub guards: GuardsEntry,
    /// All must hold.
    pub matchers: Vec<MatcherEntry>,
    /// None may hold.
    pub vetoes: Vec<MatcherEntry>,
    /// Timing extractors.
    pub timing: Vec<TimingExtractor>,
    /// The JSON Pointers the rule names for `body_reset` (`body_reset "/error/resets_at"`), read
    /// in order before its usual places.
    pub body_reset_at: Vec<String>,
    /// A fixed, redaction-clean excerpt reported instead of the evidence text.
    pub excerpt: Option<String>,
    /// Remediation.
    pub remediation: Option<RemediationEntry>,
    /// Whether the prefilter may skip this rule when none of its literals occurs.
    pub gated: bool,
    /// Number of inline examples and counterexamples the compiler verified.
    pub verified_examples: u32,
}

/// Structured guards; `None` means any value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuardsEntry {
    /// Allowed phases.
    pub phase: Option<Vec<Phase>>,
    /// Allowed provider ids.
    pub provider_id: Option<Vec<String>>,
    /// Allowed sources.
    pub source: Option<Vec<Source>>,
    /// Allowed HTTP statuses.
    pub http_status: Option<Vec<u16>>,
    /// Allowed exit codes.
    pub exit_code: Option<Vec<i32>>,
    /// Fields that must be present.
    pub present: Vec<EvidenceField>,
    /// Guards on response headers (`when header "name" …`), all required.
    pub headers: Vec<KeyedGuardEntry>,
    /// Guards on the error body (`when body "/pointer" …`), all required.
    pub body: Vec<KeyedGuardEntry>,
}

/// A guard on one header (by lowercase name) or one JSON Pointer of the body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyedGuardEntry {
    /// The header name (ASCII lowercase) or the JSON Pointer.
    pub key: String,
    /// The values allowed; `None` for `present`.
    pub values: Option<Vec<String>>,
}

impl KeyedGuardEntry {
    /// Whether the guard holds on a header: the header is there and, unless the guard is
    /// `present`, its value equals one of the values, ignoring ASCII case (HTTP header values
    /// such as `true`/`false` are case-insensitive tokens).
    pub fn holds_on_header(&self, headers: Option<&Headers>) -> bool {
        let Some(value) = headers.and_then(|headers| headers.get(&self.key)) else {
            return false;
        };
        match &self.values {
            None => true,
            Some(values) => values
                .iter()
                .any(|allowed| allowed.eq_ignore_ascii_case(value)),
        }
    }

    /// Whether the guard holds on a body: something is at the pointer (`present`; a null too),
    /// or some value there (a string, or the JSON text of a number or boolean; with `*`, of
    /// any array element) equals one of the values exactly.
    pub fn holds_on_body(&self, body: Option<&Body>) -> bool {
        let Some(body) = body else {
            return false;
        };
        match &self.values {
            None => body.has(&self.key),
            Some(values) => body
                .select(&self.key)
                .iter()
                .any(|found| values.contains(found)),
        }
    }
}

/// A text matcher.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatcherEntry {
    /// The view it reads.
    pub view: TextView,
    /// The JSON Pointer of the body whose values it reads, for [`TextView::Body`] (and only
    /// for it).
    pub pointer: Option<String>,
    /// What it tests.
    pub kind: MatcherKindEntry,
}

/// What a text matcher tests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum MatcherKindEntry {
    /// A pattern of the view's automata.
    Pattern {
        /// Index into the view's [`ViewEntry::patterns`].
        pattern: u32,
        /// `where group N == field`.
        group_equals: Option<(u32, EvidenceField)>,
    },
    /// Trimmed text starts with a literal; the trimmed rest has a byte length in bounds.
    Prefix {
        /// Literal.
        literal: String,
        /// Case-insensitive.
        ignore_case: bool,
        /// Inclusive byte bounds.
        suffix: Option<(u32, u32)>,
    },
    /// Trimmed text equals a literal.
    Whole {
        /// Literal.
        literal: String,
        /// Case-insensitive.
        ignore_case: bool,
    },
}

/// How a remediation is obtained.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum RemediationEntry {
    /// A fixed token.
    Token(String),
    /// A capture group of a pattern over a view; vetoes the rule when absent.
    Capture {
        /// The pattern (lowered syntax).
        pattern: String,
        /// The group.
        group: u32,
        /// The view.
        view: TextView,
    },
}

/// The automata of one text view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViewEntry {
    /// The view.
    pub view: TextView,
    /// The patterns; their order is their global index in the view.
    pub patterns: Vec<PatternEntry>,
    /// Number of DFAs (sections) of this view, in bundle order.
    pub dfas: Vec<DfaEntry>,
}

/// A pattern of a view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PatternEntry {
    /// The pattern (lowered syntax), exactly as it must match.
    pub pattern: String,
    /// The DFA that searches for it. `None` (format 8) for a pattern that only rules behind the
    /// prefilter read: it is searched by its regex, compiled on first use, and only when the
    /// prefilter admits one of those rules, so carrying and validating a DFA for it would cost
    /// every load and nearly never pay.
    pub dfa: Option<DfaSlot>,
    /// The DFA holds an over-approximation (bounded gaps widened): a DFA match must be
    /// confirmed by the exact pattern.
    pub approximate: bool,
    /// Size of the pattern's DFA built alone, in bytes (for `faultline inspect`); 0 for a
    /// pattern without a DFA, for which none is built.
    pub alone_bytes: u64,
}

/// Where a pattern lies in the DFAs of its view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DfaSlot {
    /// The DFA (index into [`ViewEntry::dfas`]).
    pub dfa: u32,
    /// The pattern's id inside that DFA.
    pub pattern: u32,
}

/// The automata of one text view in formats 3 to 7, where every pattern had a DFA.
#[derive(Debug, Deserialize)]
pub(crate) struct ViewEntryV7 {
    view: TextView,
    patterns: Vec<PatternEntryV7>,
    dfas: Vec<DfaEntry>,
}

#[derive(Debug, Deserialize)]
struct PatternEntryV7 {
    pattern: String,
    dfa: u32,
    dfa_pattern: u32,
    approximate: bool,
    alone_bytes: u64,
}

impl From<ViewEntryV7> for ViewEntry {
    fn from(old: ViewEntryV7) -> ViewEntry {
        ViewEntry {
            view: old.view,
            patterns: old
                .patterns
                .into_iter()
                .map(|pattern| PatternEntry {
                    pattern: pattern.pattern,
                    dfa: Some(DfaSlot {
                        dfa: pattern.dfa,
                        pattern: pattern.dfa_pattern,
                    }),
                    approximate: pattern.approximate,
                    alone_bytes: pattern.alone_bytes,
                })
                .collect(),
            dfas: old.dfas,
        }
    }
}

fn views_v7(views: Vec<ViewEntryV7>) -> Vec<ViewEntry> {
    views.into_iter().map(ViewEntry::from).collect()
}

/// One DFA of a view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DfaEntry {
    /// Index of the bundle section holding its bytes.
    pub section: u32,
    /// Number of patterns it was built from.
    pub pattern_count: u32,
}

/// A prefilter literal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiteralEntry {
    /// A literal of `[a-z0-9_]` (ASCII lowercase), possibly joined by single ASCII punctuation
    /// characters (`i/o`), or of CJK characters (which have no case). Any bytes are looked for
    /// as they are, ASCII-case-insensitively.
    pub literal: String,
    /// The literal contains `k` or `s`, which case-insensitive patterns also match as U+212A
    /// and U+017F: text holding either character passes the prefilter for it.
    pub folds_beyond_ascii: bool,
    /// Rules (indices into [`CatalogueModel::rules`]) it admits.
    pub rules: Vec<u32>,
}

/// The catalogue model of format 4, whose text matchers read only the evidence text (no
/// [`TextView::Body`] pointer): read and converted, so that a stored format-4 bundle keeps
/// classifying as it was built to.
#[derive(Debug, Deserialize)]
pub(crate) struct CatalogueModelV4 {
    redaction_version: String,
    tiers: Vec<String>,
    codes: Vec<CodeEntry>,
    rules: Vec<RuleEntryV4>,
    views: Vec<ViewEntryV7>,
    literals: Vec<LiteralEntry>,
}

/// A format-4 rule: [`RuleEntry`] with [`MatcherEntryV4`] matchers and no `body_reset_at`.
#[derive(Debug, Deserialize)]
struct RuleEntryV4 {
    id: String,
    doc: String,
    code: u32,
    confidence: Confidence,
    scope: Scope,
    tier: u32,
    guards: GuardsEntry,
    matchers: Vec<MatcherEntryV4>,
    vetoes: Vec<MatcherEntryV4>,
    timing: Vec<TimingExtractor>,
    excerpt: Option<String>,
    remediation: Option<RemediationEntry>,
    gated: bool,
    verified_examples: u32,
}

/// A format-4 matcher: [`MatcherEntry`] without a pointer.
#[derive(Debug, Deserialize)]
struct MatcherEntryV4 {
    view: TextView,
    kind: MatcherKindEntry,
}

impl From<MatcherEntryV4> for MatcherEntry {
    fn from(old: MatcherEntryV4) -> MatcherEntry {
        MatcherEntry {
            view: old.view,
            pointer: None,
            kind: old.kind,
        }
    }
}

impl From<RuleEntryV4> for RuleEntry {
    fn from(rule: RuleEntryV4) -> RuleEntry {
        RuleEntry {
            id: rule.id,
            doc: rule.doc,
            code: rule.code,
            confidence: rule.confidence,
            scope: rule.scope,
            tier: rule.tier,
            guards: rule.guards,
            matchers: rule.matchers.into_iter().map(MatcherEntry::from).collect(),
            vetoes: rule.vetoes.into_iter().map(MatcherEntry::from).collect(),
            timing: rule.timing,
            body_reset_at: Vec::new(),
            excerpt: rule.excerpt,
            remediation: rule.remediation,
            gated: rule.gated,
            verified_examples: rule.verified_examples,
        }
    }
}

impl From<CatalogueModelV4> for CatalogueModel {
    fn from(old: CatalogueModelV4) -> CatalogueModel {
        CatalogueModel {
            redaction_version: old.redaction_version,
            tiers: old.tiers,
            codes: old.codes,
            rules: old.rules.into_iter().map(RuleEntry::from).collect(),
            views: views_v7(old.views),
            requirements: literal_conjuncts(&old.literals),
            literals: old.literals,
            policy: None,
        }
    }
}

/// The catalogue model of format 3, whose rules had no guards on headers or the body either:
/// read and converted like format 4.
#[derive(Debug, Deserialize)]
pub(crate) struct CatalogueModelV3 {
    redaction_version: String,
    tiers: Vec<String>,
    codes: Vec<CodeEntry>,
    rules: Vec<RuleEntryV3>,
    views: Vec<ViewEntryV7>,
    literals: Vec<LiteralEntry>,
}

/// A format-3 rule: [`RuleEntryV4`] with [`GuardsEntryV3`].
#[derive(Debug, Deserialize)]
struct RuleEntryV3 {
    id: String,
    doc: String,
    code: u32,
    confidence: Confidence,
    scope: Scope,
    tier: u32,
    guards: GuardsEntryV3,
    matchers: Vec<MatcherEntryV4>,
    vetoes: Vec<MatcherEntryV4>,
    timing: Vec<TimingExtractor>,
    excerpt: Option<String>,
    remediation: Option<RemediationEntry>,
    gated: bool,
    verified_examples: u32,
}

/// Format-3 guards: [`GuardsEntry`] without `headers` and `body`.
#[derive(Debug, Deserialize)]
struct GuardsEntryV3 {
    phase: Option<Vec<Phase>>,
    provider_id: Option<Vec<String>>,
    source: Option<Vec<Source>>,
    http_status: Option<Vec<u16>>,
    exit_code: Option<Vec<i32>>,
    present: Vec<EvidenceField>,
}

impl From<CatalogueModelV3> for CatalogueModel {
    fn from(old: CatalogueModelV3) -> CatalogueModel {
        CatalogueModel::from(CatalogueModelV4 {
            redaction_version: old.redaction_version,
            tiers: old.tiers,
            codes: old.codes,
            rules: old
                .rules
                .into_iter()
                .map(|rule| RuleEntryV4 {
                    id: rule.id,
                    doc: rule.doc,
                    code: rule.code,
                    confidence: rule.confidence,
                    scope: rule.scope,
                    tier: rule.tier,
                    guards: GuardsEntry {
                        phase: rule.guards.phase,
                        provider_id: rule.guards.provider_id,
                        source: rule.guards.source,
                        http_status: rule.guards.http_status,
                        exit_code: rule.guards.exit_code,
                        present: rule.guards.present,
                        headers: Vec::new(),
                        body: Vec::new(),
                    },
                    matchers: rule.matchers,
                    vetoes: rule.vetoes,
                    timing: rule.timing,
                    excerpt: rule.excerpt,
                    remediation: rule.remediation,
                    gated: rule.gated,
                    verified_examples: rule.verified_examples,
                })
                .collect(),
            views: old.views,
            literals: old.literals,
        })
    }
}
