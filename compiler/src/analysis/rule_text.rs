//! Rule text: a rule's firing condition over text as search components (its matchers must
//! match, its vetoes must not), with whether that representation is exact.

use faultline_runtime::{EvidenceField, TextView};

use crate::db::Db;
use crate::ir::{MatcherKind, RemediationSpec, RuleDef, TextMatcher};

use super::automaton::{ComponentBudget, component_automaton};
use super::search::{Component, Polarity};

/// A regex matcher's pattern, for the overlap analysis: its view, the body pointer of a body
/// view, the pattern and its required words.
pub(super) type MatcherPattern = (TextView, Option<String>, String, Option<Vec<String>>);

/// A rule's firing condition over text.
#[derive(Debug, Default)]
pub(super) struct RuleText {
    /// Components whose conjunction (with polarities) the rule needs.
    pub(super) components: Vec<Component>,
    /// Whether the components represent the rule exactly.
    pub(super) exact: bool,
    /// Patterns of its regex matchers (for overlap).
    pub(super) patterns: Vec<MatcherPattern>,
    /// A capture pattern whose group must equal an evidence field, for filling witnesses.
    pub(super) group_fill: Option<(String, u32, EvidenceField)>,
}

fn whitespace_class() -> &'static str {
    r"\p{White_Space}"
}

/// The pattern a matcher is analysed as, and whether that is exact.
fn matcher_pattern(matcher: &TextMatcher) -> (String, bool) {
    let case = |ignore_case: bool| if ignore_case { "(?i)" } else { "" };
    let ws = whitespace_class();
    match &matcher.kind {
        MatcherKind::Regex {
            lowered,
            group_equals,
            ..
        } => (lowered.clone(), group_equals.is_none()),
        MatcherKind::Contains {
            literal,
            ignore_case,
        } => (
            format!("{}{}", case(*ignore_case), regex_syntax::escape(literal)),
            true,
        ),
        MatcherKind::Whole {
            literal,
            ignore_case,
        } => (
            format!(
                r"(?s)\A{ws}*(?:{}{}){ws}*\z",
                case(*ignore_case),
                regex_syntax::escape(literal)
            ),
            true,
        ),
        MatcherKind::Prefix {
            literal,
            ignore_case,
            suffix,
        } => {
            let head = format!(
                r"(?s)\A{ws}*(?:{}{})",
                case(*ignore_case),
                regex_syntax::escape(literal)
            );
            match suffix {
                None => (head, true),
                Some((0, _)) => (head, false),
                Some(_) => (format!(r"{head}{ws}*[^{ws}]"), false),
            }
        }
    }
}

/// The length of the rule's longest text pattern: what its automata cost to build grows with it.
pub(super) fn longest_pattern(rule: &RuleDef) -> usize {
    rule.matchers
        .iter()
        .chain(&rule.vetoes)
        .map(|matcher| matcher_pattern(matcher).0.len())
        .max()
        .unwrap_or(0)
}

pub(super) fn rule_text(db: &dyn Db, rule: &RuleDef, budget: &ComponentBudget) -> RuleText {
    let mut text = RuleText {
        exact: true,
        ..RuleText::default()
    };
    let component = |pattern: String,
                     polarity: Polarity,
                     (view, pointer): (TextView, Option<String>),
                     text: &mut RuleText| {
        match component_automaton(db, &pattern, budget) {
            // A widened automaton over-approximates: sound for a positive matcher only.
            Ok((_, approximate)) if !(approximate && polarity == Polarity::MustNot) => {
                text.exact &= !approximate;
                text.components.push(Component {
                    pattern,
                    polarity,
                    view,
                    pointer,
                });
            }
            _ => text.exact = false,
        }
    };
    for matcher in &rule.matchers {
        let (pattern, exact) = matcher_pattern(matcher);
        text.exact &= exact;
        if let MatcherKind::Regex {
            lowered,
            group_equals: Some((group, field)),
            ..
        } = &matcher.kind
        {
            text.group_fill = Some((lowered.clone(), *group, *field));
        }
        if let MatcherKind::Regex { lowered, .. } = &matcher.kind {
            let words =
                crate::db::required_words(db, crate::db::PatternText::new(db, lowered.clone()))
                    .clone();
            text.patterns.push((
                matcher.view,
                matcher.pointer.clone(),
                lowered.clone(),
                words,
            ));
        }
        let place = (matcher.view, matcher.pointer.clone());
        component(pattern, Polarity::Must, place, &mut text);
    }
    for veto in &rule.vetoes {
        let (pattern, exact) = matcher_pattern(veto);
        if exact {
            let place = (veto.view, veto.pointer.clone());
            component(pattern, Polarity::MustNot, place, &mut text);
        } else {
            text.exact = false;
        }
    }
    if let Some(RemediationSpec::Capture { lowered, view, .. }) = &rule.remediation {
        component(lowered.clone(), Polarity::Must, (*view, None), &mut text);
    }
    text
}
