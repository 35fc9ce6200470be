//! The rule walk: guards, the literal prefilter's verdict (`super::prefilter`), one overlapping
//! DFA pass per text view (plus exact confirmation of the few over-approximated patterns), then
//! the first rule in priority order that fires, and the classification it answers with.

use std::cell::OnceCell;

use regex_automata::dfa::Automaton as _;
use regex_automata::{Input, PatternSet};

use super::LoadError;
use super::automata::Automata;
use super::lazy_regex::{self, LazyRegex};
use super::literal_table::LiteralTable;
use super::model::{
    CatalogueModel, CodeEntry, GuardsEntry, MatcherEntry, MatcherKindEntry, RemediationEntry,
    RuleEntry,
};
use super::prefilter::Prefilter;
use super::trace::{Step, Trace};
use crate::evidence::{Classification, Evidence};
use crate::sanitize;
use crate::text::{self, TextViews};
use crate::vocab::{Confidence, EvidenceField, TextView};

#[derive(Debug)]
struct ViewEngine {
    view: TextView,
    dfas: Vec<usize>,
    /// Per global pattern: position of its DFA in `dfas`, pattern id there, and its exact regex.
    patterns: Vec<ViewPattern>,
}

#[derive(Debug)]
struct ViewPattern {
    /// Position of its DFA in [`ViewEngine::dfas`] and its pattern id there; `None` for a
    /// pattern only rules behind the prefilter read, which [`ViewPattern::exact`] searches.
    dfa: Option<(usize, usize)>,
    /// The pattern as a regex: to search for it when it has no DFA, to confirm a DFA match
    /// when the DFA over-approximates it, to read capture groups, and to find where it matched
    /// when an excerpt must show it.
    exact: LazyRegex,
    /// Whether a DFA match must be confirmed by [`ViewPattern::exact`] (the DFA widened the
    /// pattern's bounded gaps).
    confirm: bool,
}

#[derive(Debug)]
pub(super) struct Engine {
    automata: Automata,
    prefilter: Prefilter,
    /// Everything else, which needs only the catalogue model.
    prepared: Prepared,
}

/// What one rule walk over a piece of evidence found ([`Engine::classify`]).
pub(super) struct Walked {
    pub(super) classification: Classification,
    /// The winner's position in priority order.
    pub(super) winner: Option<usize>,
    /// Whether a rule above low confidence got past the prefilter or needs none (so could
    /// fire on this text, or on a reading that only cuts its lines down); always true when
    /// one won.
    pub(super) above_low_admitted: bool,
}

#[derive(Debug, Default)]
struct RuleRegexes {
    /// For each matcher then veto: a regex for `ignore_case` prefix/whole literals.
    literal: Vec<Option<LazyRegex>>,
    remediation: Option<LazyRegex>,
}

fn compile(pattern: &str) -> Result<LazyRegex, LoadError> {
    LazyRegex::new(pattern.to_owned())
}

fn literal_regex(matcher: &MatcherEntry) -> Result<Option<LazyRegex>, LoadError> {
    match &matcher.kind {
        MatcherKindEntry::Prefix {
            literal,
            ignore_case: true,
            ..
        } => compile(&format!(r"(?i)\A(?:{})", regex::escape(literal))).map(Some),
        MatcherKindEntry::Whole {
            literal,
            ignore_case: true,
        } => compile(&format!(r"(?i)\A(?:{})\z", regex::escape(literal))).map(Some),
        _ => Ok(None),
    }
}

/// Every view's engine: its DFAs and its patterns, whose syntax the caller checks.
fn view_engines(model: &CatalogueModel) -> Vec<ViewEngine> {
    let mut views = Vec::new();
    for view in &model.views {
        let dfa_indices: Vec<usize> = view
            .dfas
            .iter()
            .map(|dfa| dfa.section as usize - 1)
            .collect();
        let mut patterns = Vec::new();
        for pattern in &view.patterns {
            patterns.push(ViewPattern {
                dfa: pattern
                    .dfa
                    .map(|slot| (slot.dfa as usize, slot.pattern as usize)),
                exact: LazyRegex::checked_elsewhere(pattern.pattern.clone()),
                confirm: pattern.approximate,
            });
        }
        views.push(ViewEngine {
            view: view.view,
            dfas: dfa_indices,
            patterns,
        });
    }
    views
}

/// The part of an engine that needs only the catalogue model: every view's engine (each
/// distinct pattern's syntax checked), the rules' own regexes, and which rules the prefilter
/// cannot skip. A load builds it while another thread checks the bundle's hash and reads its
/// literal table (see [`super::Bundle::from_bytes`]); [`Engine::new`] adds the prefilter.
#[derive(Debug)]
pub(super) struct Prepared {
    views: Vec<ViewEngine>,
    /// Whether some literal the prefilter requires holds a line break (see
    /// [`Engine::literals_span_lines`]).
    literals_span_lines: bool,
    /// Rules above low confidence that fire on their structured guards alone (no text
    /// matcher) or that the prefilter never skips, with the structured parts their guards
    /// need: the gate checks their guards first.
    ungated: Vec<(usize, Parts)>,
    /// Every rule the prefilter cannot skip (no text matcher, or not gated), in order: with the
    /// rules the prefilter admits, the only rules a classification evaluates, so that its cost
    /// follows what the text mentions, not the size of the catalogue.
    unskippable: Vec<usize>,
    /// Those of [`Prepared::unskippable`] whose guards need no structured part (status, exit
    /// code, headers, body): the only ones that can fire on text-only evidence, the usual kind.
    unskippable_textual: Vec<usize>,
    /// Per rule: compiled case-insensitive literal regexes and capture regexes, by matcher.
    rule_regexes: Vec<RuleRegexes>,
    /// What the catalogue's catch-all (its last rule) answers, without excerpt and catalogue
    /// version: the answer should no rule ever fire. Taken from the catalogue, so that the
    /// runtime never makes up a code or a rule of its own.
    catch_all: Classification,
}

impl Prepared {
    pub(super) fn of(model: &CatalogueModel) -> Result<Prepared, LoadError> {
        let views = view_engines(model);
        {
            let mut patterns: Vec<&str> = views
                .iter()
                .flat_map(|view| view.patterns.iter().map(|pattern| pattern.exact.pattern()))
                .collect();
            patterns.sort_unstable();
            patterns.dedup();
            patterns
                .iter()
                .try_for_each(|pattern| lazy_regex::check_syntax(pattern))?;
        }
        let catch_all = model
            .rules
            .last()
            .and_then(|rule| {
                let code = model.codes.get(rule.code as usize)?;
                Some(answer(rule, code, None, String::new(), ""))
            })
            .ok_or_else(|| LoadError::malformed("the bundle has no rules"))?;
        let ungated = model
            .rules
            .iter()
            .enumerate()
            .filter(|(_, rule)| {
                rule.confidence != Confidence::Low && (rule.matchers.is_empty() || !rule.gated)
            })
            .map(|(index, rule)| (index, Parts::needed_by(&rule.guards)))
            .collect();
        let unskippable: Vec<usize> = model
            .rules
            .iter()
            .enumerate()
            .filter(|(_, rule)| rule.matchers.is_empty() || !rule.gated)
            .map(|(index, _)| index)
            .collect();
        let unskippable_textual = unskippable
            .iter()
            .copied()
            .filter(|index| {
                model
                    .rules
                    .get(*index)
                    .is_none_or(|rule| Parts::NONE.covers(Parts::needed_by(&rule.guards)))
            })
            .collect();
        let mut rule_regexes = Vec::new();
        for rule in &model.rules {
            let mut regexes = RuleRegexes::default();
            for matcher in rule.matchers.iter().chain(&rule.vetoes) {
                regexes.literal.push(literal_regex(matcher)?);
            }
            if let Some(RemediationEntry::Capture { pattern, .. }) = &rule.remediation {
                regexes.remediation = Some(compile(pattern)?);
            }
            rule_regexes.push(regexes);
        }
        let literals_span_lines = model
            .literals
            .iter()
            .any(|literal| literal.literal.contains(['\n', '\r']));
        Ok(Prepared {
            views,
            literals_span_lines,
            ungated,
            unskippable,
            unskippable_textual,
            rule_regexes,
            catch_all,
        })
    }
}

impl Engine {
    /// Bytes of memory of the prefilter's literal table, when the bundle carried one.
    /// Gives every regex of the engine that `compiled` knows its compiled form (see
    /// [`LazyRegex::adopt`]).
    pub(super) fn adopt_regexes(&self, compiled: &mut dyn FnMut(&str) -> Option<regex::Regex>) {
        let views = self.prepared.views.iter().flat_map(|view| &view.patterns);
        let rules = self.prepared.rule_regexes.iter().flat_map(|rule| {
            rule.literal
                .iter()
                .flatten()
                .chain(rule.remediation.as_ref())
        });
        for regex in views.map(|pattern| &pattern.exact).chain(rules) {
            if let Some(found) = compiled(regex.pattern()) {
                regex.adopt(found);
            }
        }
    }

    /// Whether some literal the prefilter requires holds a line break, so that cutting lines
    /// down (an unwrapped reading) could make one appear where the text as given has none.
    pub(super) fn literals_span_lines(&self) -> bool {
        self.prepared.literals_span_lines
    }

    pub(super) fn literal_table_bytes(&self) -> Option<usize> {
        self.prefilter.literal_table_bytes()
    }

    /// The engine of `model`: what was `prepared` from it, searching with `automata` and
    /// gating with the literal table read from the bundle (format 9; `None` for older formats
    /// and for a bundle without literals, when the prefilter's automaton is built now).
    pub(super) fn new(
        model: &CatalogueModel,
        automata: Automata,
        prepared: Prepared,
        literal_table: Option<LiteralTable>,
    ) -> Result<Engine, LoadError> {
        Ok(Engine {
            automata,
            prefilter: Prefilter::new(model, literal_table)?,
            prepared,
        })
    }

    /// The memory, in bytes, of the automaton in bundle section `section` (0 for none).
    pub(super) fn automaton_memory(&self, section: u32) -> usize {
        (section as usize)
            .checked_sub(1)
            .and_then(|index| self.automata.all().get(index))
            .map_or(0, |dfa| dfa.memory_usage())
    }

    /// Whether a rule that is not low-confidence could fire on `evidence` (ignoring priority).
    /// Never sanitizes and never runs an automaton: structured guards, then the required
    /// literals over the raw text. Sound because every gated rule's match implies one of its
    /// literals in the raw text (see the compiler's `literals` module); ungated rules whose
    /// guards hold answer `true`.
    /// Whether a rule above low confidence that the prefilter never skips has its guards
    /// hold on `evidence`.
    fn ungated_may_fire(&self, model: &CatalogueModel, evidence: &Evidence) -> bool {
        let carried = Parts::carried_by(evidence);
        self.prepared.ungated.iter().any(|(index, needed)| {
            carried.covers(*needed)
                && model
                    .rules
                    .get(*index)
                    .is_some_and(|rule| failed_guard(&rule.guards, evidence).is_none())
        })
    }

    pub(super) fn may_classify(&self, model: &CatalogueModel, evidence: &Evidence) -> bool {
        if self.ungated_may_fire(model, evidence) {
            return true;
        }
        let guards_hold = |index: usize| {
            model
                .rules
                .get(index)
                .is_some_and(|rule| failed_guard(&rule.guards, evidence).is_none())
        };
        // Every other rule above low confidence is gated: one of its literals must occur in the
        // text rules read. Every word of the sanitized view is in that raw view or introduced
        // by the redaction (which the literals never require).
        let views = TextViews::new(evidence);
        self.prefilter.any_admitted(views.raw(), guards_hold)
    }

    /// Evaluates one rule alone: whether it fires on `evidence`, whatever outranks it.
    pub(super) fn fires(
        &self,
        model: &CatalogueModel,
        position: usize,
        evidence: &Evidence,
    ) -> Option<Step> {
        let rule = model.rules.get(position)?;
        let texts = TextViews::new(evidence);
        let matched = self.scan_cells();
        let admitted = rule.gated
            && self
                .prefilter
                .admitted_rules(texts.raw())
                .contains(&position);
        Some(
            self.evaluate(position, rule, evidence, &texts, &matched, admitted)
                .step(),
        )
    }

    /// Walks the rules over `evidence` in priority order: the classification, the winner's
    /// position, and whether a rule above low confidence got past the prefilter or needs
    /// none (see [`Walked::above_low_admitted`]).
    pub(super) fn classify(
        &self,
        model: &CatalogueModel,
        catalogue_version: &str,
        evidence: &Evidence,
        trace: Option<&mut Trace>,
    ) -> Walked {
        let texts = TextViews::new(evidence);
        let matched = self.scan_cells();
        let mut winner = None;
        let above_low = |index: usize| {
            model
                .rules
                .get(index)
                .is_some_and(|rule| rule.confidence != Confidence::Low)
        };
        let admitted_above_low;
        if let Some(trace) = trace {
            // A trace evaluates every rule, so it can say what else fired or was vetoed.
            let admitted = self.prefilter.admitted(texts.raw(), model.rules.len());
            admitted_above_low = admitted
                .iter()
                .enumerate()
                .any(|(index, admitted)| *admitted && above_low(index));
            for (index, rule) in model.rules.iter().enumerate() {
                let admitted = admitted.get(index).copied().unwrap_or(false);
                let outcome = self.evaluate(index, rule, evidence, &texts, &matched, admitted);
                trace.steps.push(outcome.step());
                if let (Outcome::Fired(remediation), None) = (outcome, &winner) {
                    winner = Some((index, rule, remediation));
                }
            }
        } else {
            // A gated rule the prefilter does not admit cannot fire: only the rules it admits
            // and those it cannot skip are evaluated, in priority order.
            let mut admitted = self.prefilter.admitted_rules(texts.raw());
            admitted.sort_unstable();
            admitted.dedup();
            admitted_above_low = admitted.iter().any(|index| above_low(*index));
            let unskippable = if Parts::carried_by(evidence) == Parts::NONE {
                &self.prepared.unskippable_textual
            } else {
                &self.prepared.unskippable
            };
            for index in merged(&admitted, unskippable) {
                let Some(rule) = model.rules.get(index) else {
                    continue;
                };
                let outcome = self.evaluate(index, rule, evidence, &texts, &matched, true);
                if let Outcome::Fired(remediation) = outcome {
                    winner = Some((index, rule, remediation));
                    break;
                }
            }
        }
        self.walked(
            model,
            catalogue_version,
            evidence,
            texts,
            winner,
            admitted_above_low,
        )
    }

    /// The walk of [`Engine::classify`] over a reading of evidence whose text as given fell to
    /// a low-confidence rule ([`crate::Evidence::unwrapped`]), for which only a winner above low
    /// confidence answers: `None` as soon as that cannot be (no rule above low confidence is
    /// admitted, or a low-confidence one fires first), without building the answer a
    /// low-confidence winner would give. Otherwise the same walk and answer as
    /// [`Engine::classify`].
    pub(super) fn classify_reading(
        &self,
        model: &CatalogueModel,
        catalogue_version: &str,
        evidence: &Evidence,
    ) -> Option<Walked> {
        let texts = TextViews::new(evidence);
        let mut admitted = self.prefilter.admitted_rules(texts.raw());
        admitted.sort_unstable();
        admitted.dedup();
        let unskippable = if Parts::carried_by(evidence) == Parts::NONE {
            &self.prepared.unskippable_textual
        } else {
            &self.prepared.unskippable
        };
        let low = |index: usize| {
            model
                .rules
                .get(index)
                .is_none_or(|rule| rule.confidence == Confidence::Low)
        };
        let candidates: Vec<usize> = merged(&admitted, unskippable).collect();
        // Past the last candidate above low confidence, only a low-confidence rule can fire.
        let last_above_low = candidates.iter().rposition(|index| !low(*index))?;
        let matched = self.scan_cells();
        for index in candidates.get(..=last_above_low)?.iter().copied() {
            let Some(rule) = model.rules.get(index) else {
                continue;
            };
            let outcome = self.evaluate(index, rule, evidence, &texts, &matched, true);
            if let Outcome::Fired(remediation) = outcome {
                if rule.confidence == Confidence::Low {
                    return None;
                }
                return Some(self.walked(
                    model,
                    catalogue_version,
                    evidence,
                    texts,
                    Some((index, rule, remediation)),
                    true,
                ));
            }
        }
        None
    }

    /// The answer of a walk whose first rule to fire is `winner` (its position, rule and
    /// remediation capture; the catch-all when none fired).
    fn walked(
        &self,
        model: &CatalogueModel,
        catalogue_version: &str,
        evidence: &Evidence,
        texts: TextViews<'_>,
        winner: Option<(usize, &RuleEntry, Option<String>)>,
        admitted_above_low: bool,
    ) -> Walked {
        // A validated bundle ends with a catch-all rule, so a winner always exists; the last
        // rule stands in if it ever does not.
        let last = model.rules.len().checked_sub(1);
        let winner = winner.or_else(|| {
            let position = last?;
            Some((position, model.rules.get(position)?, None))
        });
        let found = winner.and_then(|(position, rule, remediation)| {
            Some((
                position,
                rule,
                model.codes.get(rule.code as usize)?,
                remediation,
            ))
        });
        let Some((position, rule, code, remediation)) = found else {
            // Unreachable for a loaded bundle: the catch-all's answer, checked at load, stands in.
            let mut fallback = self.prepared.catch_all.clone();
            fallback.catalogue_version = catalogue_version.to_owned();
            fallback.excerpt = self.excerpt(None, evidence, texts);
            return Walked {
                classification: fallback,
                winner: None,
                above_low_admitted: true,
            };
        };
        // A rule with a fixed excerpt reports it instead of the evidence text.
        let excerpt = match &rule.excerpt {
            Some(fixed) => fixed.clone(),
            None => self.excerpt(Some((position, rule)), evidence, texts),
        };
        let above_low_admitted = rule.confidence != Confidence::Low
            || admitted_above_low
            || self.ungated_may_fire(model, evidence);
        Walked {
            classification: answer(rule, code, remediation, excerpt, catalogue_version),
            winner: Some(position),
            above_low_admitted,
        }
    }

    /// The excerpt of a classification won by `winner` (its position and rule; or by none): the
    /// body value its first matcher matched when that matcher reads the body, redacted;
    /// otherwise the sanitized view, moved out when it fits, else the window of it that shows
    /// the rule's match ([`text::excerpt`]).
    fn excerpt(
        &self,
        winner: Option<(usize, &RuleEntry)>,
        evidence: &Evidence,
        texts: TextViews<'_>,
    ) -> String {
        // A rule whose first matcher reads the body shows the body value it matched, through
        // the same diagnostic-tier redaction as the text.
        if let Some((index, rule)) = winner
            && let Some(matcher) = rule.matchers.first()
            && matcher.view == TextView::Body
        {
            let literal = self
                .prepared
                .rule_regexes
                .get(index)
                .and_then(|r| r.literal.first())
                .and_then(Option::as_ref);
            let matched = body_values(matcher, evidence)
                .into_iter()
                .find(|value| self.holds_on(matcher, literal, evidence, value, None));
            if let Some(value) = matched {
                return sanitize::diagnostic(&value);
            }
        }
        if texts.sanitized().len() <= sanitize::MAX_EXCERPT_BYTES {
            return texts.into_sanitized();
        }
        let at = winner.and_then(|(_, rule)| self.locate(rule, &texts));
        text::excerpt(texts.sanitized(), at).to_owned()
    }

    /// Where, in the sanitized view, the winning rule's first text matcher matched: the last
    /// match of its pattern (agents print their fatal error last; a raw-view match is carried
    /// through the redaction), or the start of the text for a `prefix` or `whole` matcher.
    /// `None` for a rule without text matchers.
    fn locate(&self, rule: &RuleEntry, texts: &TextViews<'_>) -> Option<usize> {
        let matcher = rule.matchers.first()?;
        let MatcherKindEntry::Pattern { pattern, .. } = matcher.kind else {
            return Some(0);
        };
        // The engine's views are the model's, in the same order.
        let index = self
            .prepared
            .views
            .iter()
            .position(|view| view.view == matcher.view)?;
        let regex = self
            .prepared
            .views
            .get(index)?
            .patterns
            .get(pattern as usize)?
            .exact
            .get()?;
        let found = regex.find_iter(texts.get(matcher.view)).last()?;
        match matcher.view {
            TextView::Sanitized => Some(found.start()),
            TextView::Raw => Some(texts.sanitized_offset(found.start())),
            TextView::Body => None,
        }
    }

    /// Evaluates one rule; `admitted` says whether the prefilter admits it (only read for a
    /// gated rule).
    fn evaluate(
        &self,
        index: usize,
        rule: &RuleEntry,
        evidence: &Evidence,
        texts: &TextViews<'_>,
        matched: &[Vec<OnceCell<PatternSet>>],
        admitted: bool,
    ) -> Outcome {
        if let Some(field) = failed_guard(&rule.guards, evidence) {
            return Outcome::Guard(field);
        }
        if !rule.matchers.is_empty() && rule.gated && !admitted {
            return Outcome::Prefiltered;
        }
        let regexes = self.prepared.rule_regexes.get(index);
        for (position, matcher) in rule.matchers.iter().enumerate() {
            let literal = regexes
                .and_then(|r| r.literal.get(position))
                .and_then(Option::as_ref);
            if !self.holds(matcher, literal, evidence, texts, matched) {
                return Outcome::NoMatch(position);
            }
        }
        for (position, veto) in rule.vetoes.iter().enumerate() {
            let literal = regexes
                .and_then(|r| r.literal.get(rule.matchers.len() + position))
                .and_then(Option::as_ref);
            if self.holds(veto, literal, evidence, texts, matched) {
                return Outcome::Vetoed(position);
            }
        }
        match (
            &rule.remediation,
            regexes.and_then(|r| r.remediation.as_ref()),
        ) {
            (Some(RemediationEntry::Capture { group, view, .. }), Some(regex)) => {
                let captured = regex
                    .get()
                    .and_then(|regex| regex.captures(texts.get(*view)))
                    .and_then(|captures| captures.get(*group as usize))
                    .map(|group| group.as_str().to_owned());
                // A captured value is reported as it is written, so one that holds a credential
                // shape is refused like a missing one: no output field may carry a secret.
                match captured {
                    Some(value) if !sanitize::holds_credential(&value) => {
                        Outcome::Fired(Some(value))
                    }
                    _ => Outcome::NoCapture,
                }
            }
            _ => Outcome::Fired(None),
        }
    }

    fn holds(
        &self,
        matcher: &MatcherEntry,
        literal: Option<&LazyRegex>,
        evidence: &Evidence,
        texts: &TextViews<'_>,
        matched: &[Vec<OnceCell<PatternSet>>],
    ) -> bool {
        if matcher.view == TextView::Body {
            // Any value at the pointer will do (with `*`, any element's).
            return body_values(matcher, evidence)
                .iter()
                .any(|value| self.holds_on(matcher, literal, evidence, value, None));
        }
        self.holds_on(
            matcher,
            literal,
            evidence,
            texts.get(matcher.view),
            Some(matched),
        )
    }

    /// Whether a matcher holds on one text; `matched` caches the scans of the evidence text's
    /// views (a body value is scanned on its own).
    fn holds_on(
        &self,
        matcher: &MatcherEntry,
        literal: Option<&LazyRegex>,
        evidence: &Evidence,
        text: &str,
        matched: Option<&[Vec<OnceCell<PatternSet>>]>,
    ) -> bool {
        match &matcher.kind {
            MatcherKindEntry::Pattern {
                pattern,
                group_equals,
            } => {
                let Some(view_index) = self
                    .prepared
                    .views
                    .iter()
                    .position(|view| view.view == matcher.view)
                else {
                    return false;
                };
                let Some(view) = self.prepared.views.get(view_index) else {
                    return false;
                };
                let Some(ViewPattern {
                    dfa,
                    exact,
                    confirm,
                }) = view.patterns.get(*pattern as usize)
                else {
                    return false;
                };
                let hit = match *dfa {
                    Some((dfa, dfa_pattern)) => {
                        // Each DFA is scanned at most once per classification, and only when a
                        // rule that needs one of its patterns is reached.
                        let scan = || self.scan(view.dfas.get(dfa).copied(), text);
                        let in_set = |set: &PatternSet| {
                            regex_automata::PatternID::new(dfa_pattern)
                                .is_ok_and(|id| set.contains(id))
                        };
                        let found = match matched {
                            Some(matched) => matched
                                .get(view_index)
                                .and_then(|cells| cells.get(dfa))
                                .is_some_and(|cell| in_set(cell.get_or_init(scan))),
                            None => in_set(&scan()),
                        };
                        found && (!*confirm || exact.is_match(text))
                    }
                    None => exact.is_match(text),
                };
                if !hit {
                    return false;
                }
                match group_equals {
                    None => true,
                    Some((group, field)) => {
                        let Some(expected) = text_field(evidence, *field) else {
                            return false;
                        };
                        exact.get().is_some_and(|regex| {
                            regex.captures_iter(text).any(|captures| {
                                captures
                                    .get(*group as usize)
                                    .is_some_and(|g| g.as_str() == expected)
                            })
                        })
                    }
                }
            }
            MatcherKindEntry::Prefix {
                literal: prefix,
                ignore_case,
                suffix,
            } => {
                let trimmed = text.trim();
                let rest = match (ignore_case, literal) {
                    (true, Some(regex)) => regex
                        .get()
                        .and_then(|regex| regex.find(trimmed))
                        .and_then(|found| trimmed.get(found.end()..)),
                    _ => trimmed.strip_prefix(prefix.as_str()),
                };
                let Some(rest) = rest else { return false };
                let rest_len = rest.trim().len();
                suffix.is_none_or(|(min, max)| (min as usize..=max as usize).contains(&rest_len))
            }
            MatcherKindEntry::Whole {
                literal: whole,
                ignore_case,
            } => {
                let trimmed = text.trim();
                match (ignore_case, literal) {
                    (true, Some(regex)) => regex.is_match(trimmed),
                    _ => trimmed == whole,
                }
            }
        }
    }

    /// Empty scan results, one per DFA of each view.
    fn scan_cells(&self) -> Vec<Vec<OnceCell<PatternSet>>> {
        self.prepared
            .views
            .iter()
            .map(|view| view.dfas.iter().map(|_| OnceCell::new()).collect())
            .collect()
    }

    /// One overlapping pass of one DFA: every pattern that matches somewhere.
    fn scan(&self, dfa: Option<usize>, text: &str) -> PatternSet {
        let Some(dfa) = dfa.and_then(|index| self.automata.all().get(index)) else {
            return PatternSet::new(0);
        };
        let mut set = PatternSet::new(dfa.pattern_len());
        // The DFAs are built without quit bytes, so the search cannot fail; were it to, no
        // pattern counts as matched and lower-priority rules decide.
        let _ = dfa.try_which_overlapping_matches(&Input::new(text), &mut set);
        set
    }
}

/// The values a matcher on the error body reads: those at its pointer in the evidence's own
/// body (never one lifted from its text, as for body guards).
fn body_values(matcher: &MatcherEntry, evidence: &Evidence) -> Vec<String> {
    match (&matcher.pointer, &evidence.body) {
        (Some(pointer), Some(body)) => body.select(pointer),
        _ => Vec::new(),
    }
}

/// The union of two ascending lists of rule positions, ascending.
fn merged<'a>(a: &'a [usize], b: &'a [usize]) -> impl Iterator<Item = usize> + 'a {
    let (mut a, mut b) = (a.iter().copied().peekable(), b.iter().copied().peekable());
    std::iter::from_fn(move || match (a.peek().copied(), b.peek().copied()) {
        (Some(x), Some(y)) if x == y => {
            a.next();
            b.next()
        }
        (Some(x), Some(y)) if x < y => a.next(),
        (Some(_), Some(_)) => b.next(),
        (Some(_), None) => a.next(),
        (None, _) => b.next(),
    })
}

enum Outcome {
    Guard(EvidenceField),
    Prefiltered,
    NoMatch(usize),
    Vetoed(usize),
    NoCapture,
    Fired(Option<String>),
}

impl Outcome {
    fn step(&self) -> Step {
        match self {
            Outcome::Guard(field) => Step::Guard(*field),
            Outcome::Prefiltered => Step::Prefiltered,
            Outcome::NoMatch(index) => Step::NoMatch(*index),
            Outcome::Vetoed(index) => Step::Vetoed(*index),
            Outcome::NoCapture => Step::NoCapture,
            Outcome::Fired(_) => Step::Fired,
        }
    }
}

fn text_field(evidence: &Evidence, field: EvidenceField) -> Option<&str> {
    match field {
        EvidenceField::ProviderId => evidence.provider_id.as_deref(),
        EvidenceField::ResetHint => evidence.reset_hint.as_deref(),
        EvidenceField::Stderr => evidence.stderr.as_deref(),
        EvidenceField::Stdout => evidence.stdout.as_deref(),
        EvidenceField::ManagedRuntimePackageSpec => {
            evidence.managed_runtime_package_spec.as_deref()
        }
        EvidenceField::Phase
        | EvidenceField::Source
        | EvidenceField::ExitCode
        | EvidenceField::HttpStatus
        | EvidenceField::Headers
        | EvidenceField::Body => None,
    }
}

fn present(evidence: &Evidence, field: EvidenceField) -> bool {
    match field {
        EvidenceField::Phase => evidence.phase.is_some(),
        EvidenceField::Source => evidence.source.is_some(),
        EvidenceField::ExitCode => evidence.exit_code.is_some(),
        EvidenceField::HttpStatus => evidence.http_status.is_some(),
        EvidenceField::Headers => evidence.headers.as_ref().is_some_and(|h| !h.is_empty()),
        EvidenceField::Body => evidence.body.as_ref().is_some_and(|body| !body.is_empty()),
        other => text_field(evidence, other).is_some_and(|text| !text.is_empty()),
    }
}

/// Structured parts of evidence, a bit each: those a rule's guards need present, or those an
/// evidence carries. Guards on a part the evidence lacks never hold, so a rule needing a part
/// that is missing is skipped without evaluating its guards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Parts(u8);

impl Parts {
    const NONE: Parts = Parts(0);
    const STATUS: u8 = 1;
    const EXIT_CODE: u8 = 2;
    const HEADERS: u8 = 4;
    const BODY: u8 = 8;

    fn needed_by(guards: &GuardsEntry) -> Parts {
        let mut needed = 0;
        if guards.http_status.is_some() {
            needed |= Parts::STATUS;
        }
        if guards.exit_code.is_some() {
            needed |= Parts::EXIT_CODE;
        }
        if !guards.headers.is_empty() {
            needed |= Parts::HEADERS;
        }
        if !guards.body.is_empty() {
            needed |= Parts::BODY;
        }
        for field in &guards.present {
            needed |= match field {
                EvidenceField::HttpStatus => Parts::STATUS,
                EvidenceField::ExitCode => Parts::EXIT_CODE,
                EvidenceField::Headers => Parts::HEADERS,
                EvidenceField::Body => Parts::BODY,
                _ => 0,
            };
        }
        Parts(needed)
    }

    fn carried_by(evidence: &Evidence) -> Parts {
        let mut carried = 0;
        if evidence.http_status.is_some() {
            carried |= Parts::STATUS;
        }
        if evidence.exit_code.is_some() {
            carried |= Parts::EXIT_CODE;
        }
        if evidence.headers.is_some() {
            carried |= Parts::HEADERS;
        }
        if evidence.body.is_some() {
            carried |= Parts::BODY;
        }
        Parts(carried)
    }

    /// Whether every part of `needed` is in `self`.
    fn covers(self, needed: Parts) -> bool {
        needed.0 & !self.0 == 0
    }
}

fn allowed<T: PartialEq>(allowed: &Option<Vec<T>>, value: Option<&T>) -> bool {
    match allowed {
        None => true,
        Some(values) => value.is_some_and(|value| values.contains(value)),
    }
}

/// The first guard that does not hold, if any.
///
/// Body guards read only the body the evidence carries, never one lifted from its text: a
/// lifted body would let structured rules outrank the text rules that already read those lines,
/// changing the verdict on text-only evidence.
fn failed_guard(guards: &GuardsEntry, evidence: &Evidence) -> Option<EvidenceField> {
    if !allowed(&guards.phase, evidence.phase.as_ref()) {
        return Some(EvidenceField::Phase);
    }
    if !allowed(&guards.provider_id, evidence.provider_id.as_ref()) {
        return Some(EvidenceField::ProviderId);
    }
    if !allowed(&guards.source, evidence.source.as_ref()) {
        return Some(EvidenceField::Source);
    }
    if !allowed(&guards.http_status, evidence.http_status.as_ref()) {
        return Some(EvidenceField::HttpStatus);
    }
    if !allowed(&guards.exit_code, evidence.exit_code.as_ref()) {
        return Some(EvidenceField::ExitCode);
    }
    let missing = guards
        .present
        .iter()
        .copied()
        .find(|field| !present(evidence, *field));
    if missing.is_some() {
        return missing;
    }
    if !guards
        .headers
        .iter()
        .all(|guard| guard.holds_on_header(evidence.headers.as_ref()))
    {
        return Some(EvidenceField::Headers);
    }
    if !guards
        .body
        .iter()
        .all(|guard| guard.holds_on_body(evidence.body.as_ref()))
    {
        return Some(EvidenceField::Body);
    }
    None
}

/// The classification `rule` (of code `code`) answers with.
fn answer(
    rule: &RuleEntry,
    code: &CodeEntry,
    captured: Option<String>,
    excerpt: String,
    catalogue_version: &str,
) -> Classification {
    let remediation = captured.or_else(|| match &rule.remediation {
        Some(RemediationEntry::Token(token)) => Some(token.clone()),
        _ => code.remediation.clone(),
    });
    Classification {
        code: code.name.clone(),
        class: code.class,
        confidence: rule.confidence,
        scope: rule.scope,
        rule: rule.id.clone(),
        catalogue_version: catalogue_version.to_owned(),
        auto_retryable: code.auto_retryable,
        fallback_allowed: code.fallback_allowed,
        user_action: code.user_action,
        reset_hint: None,
        retry_after: None,
        excerpt,
        remediation,
    }
}
