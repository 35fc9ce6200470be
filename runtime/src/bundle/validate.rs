//! The loader's checks of what neither the framing (`super::wire`) nor the automata's checked
//! deserializer (`super::automata`) covers: every index of the catalogue model in range, so
//! that the rule walk never meets a dangling reference in a bundle that loaded.

use regex_automata::dfa::dense;

use super::LoadError;
use super::model::{self, CatalogueModel, MatcherEntry, MatcherKindEntry, RemediationEntry};
use crate::vocab::TextView;

fn validate_matcher(
    model: &CatalogueModel,
    matcher: &MatcherEntry,
    rule: &str,
) -> Result<(), LoadError> {
    // A matcher on the body reads the values at a well-formed pointer; one on the text has none.
    let pointer_fits = match (&matcher.pointer, matcher.view) {
        (Some(pointer), TextView::Body) => crate::structured::parse_pointer(pointer).is_some(),
        (None, TextView::Body) | (Some(_), _) => false,
        (None, _) => true,
    };
    if !pointer_fits {
        return Err(LoadError::malformed(format!(
            "rule `{rule}` has a matcher whose JSON Pointer does not fit its view `{}`",
            matcher.view
        )));
    }
    if let MatcherKindEntry::Pattern { pattern, .. } = matcher.kind {
        let view = model.views.iter().find(|view| view.view == matcher.view);
        let known = view.is_some_and(|view| (pattern as usize) < view.patterns.len());
        if !known {
            return Err(LoadError::malformed(format!(
                "rule `{rule}` refers to pattern {pattern} of a view without it"
            )));
        }
    }
    Ok(())
}

pub(super) fn validate_model(
    model: &CatalogueModel,
    dfas: &[dense::DFA<&[u32]>],
) -> Result<(), LoadError> {
    use regex_automata::dfa::Automaton as _;
    for rule in &model.rules {
        if rule.code as usize >= model.codes.len() || rule.tier as usize >= model.tiers.len() {
            return Err(LoadError::malformed(format!(
                "rule `{}` refers to a missing code or tier",
                rule.id
            )));
        }
        for matcher in rule.matchers.iter().chain(&rule.vetoes) {
            validate_matcher(model, matcher, &rule.id)?;
        }
        if let Some(excerpt) = &rule.excerpt
            && (excerpt.len() > crate::sanitize::MAX_EXCERPT_BYTES
                || crate::sanitize::diagnostic(excerpt) != *excerpt)
        {
            return Err(LoadError::malformed(format!(
                "rule `{}` has a fixed excerpt that is not redaction-clean",
                rule.id
            )));
        }
        if let Some(RemediationEntry::Capture { group, view, .. }) = &rule.remediation
            && (*group == 0 || *view == TextView::Body)
        {
            return Err(LoadError::malformed(format!(
                "rule `{}` captures group 0 or from the body",
                rule.id
            )));
        }
    }
    let catch_all = model.rules.last().is_some_and(|rule| {
        rule.guards == model::GuardsEntry::default()
            && rule.matchers.is_empty()
            && rule.vetoes.is_empty()
            && !matches!(rule.remediation, Some(RemediationEntry::Capture { .. }))
    });
    if !catch_all {
        return Err(LoadError::malformed(
            "the last rule is not a catch-all, so some evidence would classify as nothing",
        ));
    }
    let mut used_sections = vec![false; dfas.len()];
    for view in &model.views {
        for dfa in &view.dfas {
            let index = (dfa.section as usize)
                .checked_sub(1)
                .filter(|index| *index < dfas.len());
            let Some(index) = index else {
                return Err(LoadError::malformed(format!(
                    "view `{}` refers to missing section {}",
                    view.view, dfa.section
                )));
            };
            let automaton = dfas
                .get(index)
                .ok_or_else(|| LoadError::malformed("missing automaton"))?;
            if automaton.pattern_len() != dfa.pattern_count as usize {
                return Err(LoadError::malformed(format!(
                    "section {} has {} patterns, the model says {}",
                    dfa.section,
                    automaton.pattern_len(),
                    dfa.pattern_count
                )));
            }
            if let Some(used) = used_sections.get_mut(index) {
                *used = true;
            }
        }
        // A pattern without a DFA is searched by its regex, whose syntax the engine checks.
        for pattern in &view.patterns {
            let Some(slot) = pattern.dfa else { continue };
            let dfa = view.dfas.get(slot.dfa as usize);
            if dfa.is_none_or(|dfa| slot.pattern >= dfa.pattern_count) {
                return Err(LoadError::malformed(format!(
                    "pattern `{}` refers to a missing automaton pattern",
                    pattern.pattern
                )));
            }
        }
    }
    if used_sections.iter().any(|used| !used) {
        return Err(LoadError::malformed(
            "an automaton section is not used by any view",
        ));
    }
    for literal in &model.literals {
        if literal.literal.is_empty()
            || literal
                .rules
                .iter()
                .any(|rule| *rule as usize >= model.rules.len())
        {
            return Err(LoadError::malformed(format!(
                "prefilter literal `{}` is empty or refers to a missing rule",
                literal.literal
            )));
        }
    }
    validate_requirements(model)
}

/// Every conjunct names a gated rule and literals listed as admitting that rule (so that the
/// literals' fold flags cover it), and every gated rule has a conjunct: a gated rule without one
/// could never be admitted.
fn validate_requirements(model: &CatalogueModel) -> Result<(), LoadError> {
    let mut has_conjunct = vec![false; model.rules.len()];
    for requirement in &model.requirements {
        let rule = requirement.rule;
        let gated = model
            .rules
            .get(rule as usize)
            .is_some_and(|rule| rule.gated);
        let listed = |literal: &u32| {
            model
                .literals
                .get(*literal as usize)
                .is_some_and(|literal| literal.rules.contains(&rule))
        };
        if !gated || requirement.literals.is_empty() || !requirement.literals.iter().all(listed) {
            return Err(LoadError::malformed(format!(
                "a prefilter conjunct of rule {rule} is empty, names a missing or ungated rule, or a literal that does not list the rule"
            )));
        }
        if let Some(slot) = has_conjunct.get_mut(rule as usize) {
            *slot = true;
        }
    }
    let unreachable = model
        .rules
        .iter()
        .zip(&has_conjunct)
        .find(|(rule, has)| rule.gated && !rule.matchers.is_empty() && !**has);
    if let Some((rule, _)) = unreachable {
        return Err(LoadError::malformed(format!(
            "gated rule `{}` has no prefilter conjunct",
            rule.id
        )));
    }
    Ok(())
}
