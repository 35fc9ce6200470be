//! Read-only views of a loaded bundle: its header, its rules in priority order with their
//! matchers, and its automata. They are what `faultline inspect` and `faultline explain` print
//! and what an orchestrator may log; the wire model they read stays private, so the format can
//! change without breaking a caller.

use std::fmt::Write as _;

use super::model::{CatalogueModel, MatcherEntry, MatcherKindEntry, PatternEntry, RuleEntry};
use super::wire::Header;
use crate::vocab::{Class, Confidence, Scope, TextView, TimingExtractor};

/// A rule's position in a bundle's effective priority order (0 = highest). Positions come from
/// the bundle ([`crate::Bundle::rule_position`], [`crate::Bundle::rules`], a
/// [`crate::Trace`]) and mean something only for the bundle they came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RulePosition(usize);

impl RulePosition {
    pub(crate) const fn from_index(index: usize) -> RulePosition {
        RulePosition(index)
    }

    /// The position as an index (0-based) into the priority order.
    pub const fn as_usize(self) -> usize {
        self.0
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut out, byte| {
        let _ = write!(out, "{byte:02x}");
        out
    })
}

/// A bundle's header: its versions, its catalogue and its hashes.
#[derive(Debug, Clone, Copy)]
pub struct HeaderView<'a> {
    pub(super) header: &'a Header,
    pub(super) redaction_version: &'a str,
}

impl<'a> HeaderView<'a> {
    /// The bundle's format version.
    pub fn format_version(&self) -> u16 {
        self.header.format_version
    }

    /// The oldest reader version that reads it.
    pub fn min_reader_version(&self) -> u16 {
        self.header.min_reader_version
    }

    /// The catalogue's name.
    pub fn catalogue_name(&self) -> &'a str {
        &self.header.catalogue_name
    }

    /// The catalogue's version: every classification names it.
    pub fn catalogue_version(&self) -> &'a str {
        &self.header.catalogue_version
    }

    /// The version of the compiler that built the bundle.
    pub fn compiler_version(&self) -> &'a str {
        &self.header.compiler_version
    }

    /// The regex-automata serialization family of the automata.
    pub fn regex_automata_version(&self) -> &'a str {
        &self.header.regex_automata_version
    }

    /// The redaction rules the catalogue was checked with (this runtime's: a bundle checked
    /// with others does not load).
    pub fn redaction_version(&self) -> &'a str {
        self.redaction_version
    }

    /// SHA-256 of every byte of the file but the hash itself.
    pub fn content_hash(&self) -> &'a [u8; 32] {
        &self.header.content_hash
    }

    /// [`HeaderView::content_hash`] in lowercase hexadecimal.
    pub fn content_hash_hex(&self) -> String {
        hex(&self.header.content_hash)
    }

    /// SHA-256 of the catalogue sources the bundle was built from.
    pub fn manifest_hash(&self) -> &'a [u8; 32] {
        &self.header.manifest_hash
    }

    /// [`HeaderView::manifest_hash`] in lowercase hexadecimal.
    pub fn manifest_hash_hex(&self) -> String {
        hex(&self.header.manifest_hash)
    }
}

/// One rule of a bundle, at its position in the effective priority order.
#[derive(Debug, Clone, Copy)]
pub struct RuleView<'a> {
    pub(super) model: &'a CatalogueModel,
    pub(super) rule: &'a RuleEntry,
    pub(super) position: RulePosition,
}

impl<'a> RuleView<'a> {
    /// Its position in the priority order.
    pub fn position(&self) -> RulePosition {
        self.position
    }

    /// Its stable id.
    pub fn id(&self) -> &'a str {
        &self.rule.id
    }

    /// Its doc comment.
    pub fn doc(&self) -> &'a str {
        &self.rule.doc
    }

    /// The name of the code it classifies as.
    pub fn code(&self) -> &'a str {
        // A loaded bundle's rules all name a declared code.
        self.model
            .codes
            .get(self.rule.code as usize)
            .map_or("", |code| code.name.as_str())
    }

    /// The policy class of its code.
    pub fn class(&self) -> Class {
        self.model
            .codes
            .get(self.rule.code as usize)
            .map_or(Class::Unclassified, |code| code.class)
    }

    /// How sure it is.
    pub fn confidence(&self) -> Confidence {
        self.rule.confidence
    }

    /// What a failure it classifies affects.
    pub fn scope(&self) -> Scope {
        self.rule.scope
    }

    /// The name of its tier.
    pub fn tier(&self) -> &'a str {
        // A loaded bundle's rules all name a declared tier.
        self.model
            .tiers
            .get(self.rule.tier as usize)
            .map_or("", String::as_str)
    }

    /// Whether the literal prefilter may skip it when none of its literals occurs.
    pub fn gated(&self) -> bool {
        self.rule.gated
    }

    /// The timing extractors it reads a reset time with, in order.
    pub fn timing(&self) -> &'a [TimingExtractor] {
        &self.rule.timing
    }

    /// Its text matchers, all of which must hold, in order.
    pub fn matchers(&self) -> impl ExactSizeIterator<Item = MatcherView<'a>> + 'a {
        let model = self.model;
        self.rule
            .matchers
            .iter()
            .map(move |matcher| MatcherView { model, matcher })
    }

    /// Its vetoes (`unless`), none of which may hold, in order.
    pub fn vetoes(&self) -> impl ExactSizeIterator<Item = MatcherView<'a>> + 'a {
        let model = self.model;
        self.rule
            .vetoes
            .iter()
            .map(move |matcher| MatcherView { model, matcher })
    }

    /// Whether any of its matchers or vetoes reads `view`.
    pub fn reads(&self, view: TextView) -> bool {
        self.rule
            .matchers
            .iter()
            .chain(&self.rule.vetoes)
            .any(|matcher| matcher.view == view)
    }
}

/// What a text matcher tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MatcherKind {
    /// A pattern, searched by the view's automata ([`MatcherView::pattern`]).
    Pattern,
    /// The trimmed text starts with a literal.
    Prefix,
    /// The trimmed text equals a literal.
    Whole,
}

/// One text matcher (or veto) of a rule.
#[derive(Debug, Clone, Copy)]
pub struct MatcherView<'a> {
    model: &'a CatalogueModel,
    matcher: &'a MatcherEntry,
}

impl<'a> MatcherView<'a> {
    /// The text view it reads.
    pub fn view(&self) -> TextView {
        self.matcher.view
    }

    /// The JSON Pointer of the body it reads, for a matcher on [`TextView::Body`].
    pub fn pointer(&self) -> Option<&'a str> {
        self.matcher.pointer.as_deref()
    }

    /// What it tests.
    pub fn kind(&self) -> MatcherKind {
        match self.matcher.kind {
            MatcherKindEntry::Pattern { .. } => MatcherKind::Pattern,
            MatcherKindEntry::Prefix { .. } => MatcherKind::Prefix,
            MatcherKindEntry::Whole { .. } => MatcherKind::Whole,
        }
    }

    /// Its pattern, for a [`MatcherKind::Pattern`] matcher.
    pub fn pattern(&self) -> Option<PatternView<'a>> {
        let MatcherKindEntry::Pattern { pattern, .. } = self.matcher.kind else {
            return None;
        };
        self.model
            .views
            .iter()
            .find(|view| view.view == self.matcher.view)
            .and_then(|view| view.patterns.get(pattern as usize))
            .map(|entry| PatternView { entry })
    }
}

/// A pattern as the bundle carries it.
#[derive(Debug, Clone, Copy)]
pub struct PatternView<'a> {
    entry: &'a PatternEntry,
}

impl<'a> PatternView<'a> {
    /// The pattern, in the syntax it was lowered to.
    pub fn source(&self) -> &'a str {
        &self.entry.pattern
    }

    /// Whether its automaton holds an over-approximation (bounded gaps widened) that a match
    /// confirms against the exact pattern.
    pub fn approximate(&self) -> bool {
        self.entry.approximate
    }

    /// The size, in bytes, of its automaton built alone; `None` for a pattern that no DFA of
    /// the bundle searches for (see [`PatternView::has_dfa`]).
    pub fn alone_bytes(&self) -> Option<u64> {
        self.entry.dfa.map(|_| self.entry.alone_bytes)
    }

    /// Whether a DFA of the bundle searches for it. A pattern that only rules behind the
    /// prefilter read has none (format 8): its regex searches for it, compiled on first use.
    pub fn has_dfa(&self) -> bool {
        self.entry.dfa.is_some()
    }
}

/// One automaton of a bundle: the patterns of one text view it searches in one pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AutomatonView {
    pub(super) view: TextView,
    pub(super) index: usize,
    pub(super) pattern_count: usize,
    pub(super) approximate_patterns: usize,
    pub(super) memory_bytes: usize,
}

impl AutomatonView {
    /// The text view it searches.
    pub fn view(&self) -> TextView {
        self.view
    }

    /// Its index among that view's automata.
    pub fn index(&self) -> usize {
        self.index
    }

    /// How many patterns it holds.
    pub fn pattern_count(&self) -> usize {
        self.pattern_count
    }

    /// How many of them it over-approximates (confirmed exactly on a match).
    pub fn approximate_patterns(&self) -> usize {
        self.approximate_patterns
    }

    /// Its size in memory, in bytes.
    pub fn memory_bytes(&self) -> usize {
        self.memory_bytes
    }
}
