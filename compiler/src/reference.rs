//! The reference interpreter: the simplest possible evaluation of a checked catalogue, the way
//! the reference system classifies — every rule a `regex::Regex`, tried one after another in
//! effective priority order. It shares nothing with the compiled path but the text views (the
//! bounded tail and its redaction, and the unwrapped readings tried when a low-confidence rule
//! wins), the ingested body (its JSON, read here by a naive pointer
//! walk of its own), the refusal of credential-shaped captures and the effective
//! order, and exists to be compared with it: the compiled bundle must agree with it on every
//! input.

use faultline_runtime::{
    Body, Confidence, Evidence, EvidenceField, TextView, TextViews, Unwrapping, holds_credential,
};
use regex::Regex;

use crate::ir::{Catalogue, Guards, MatcherKind, RemediationSpec, RuleDef, TextMatcher};
use crate::priority::Priority;

/// A catalogue ready for reference evaluation.
#[derive(Debug)]
pub struct Reference {
    rules: Vec<(RuleDef, Vec<Option<Regex>>, Option<Regex>)>,
}

/// Compiles a regex under the runtime's limits: the reference is as bounded as the bundle.
fn compile(pattern: &str) -> Result<Regex, regex::Error> {
    crate::pattern::regex(pattern, faultline_runtime::build::REGEX_SIZE_LIMIT)
}

fn matcher_regex(matcher: &TextMatcher) -> Result<Option<Regex>, regex::Error> {
    match &matcher.kind {
        MatcherKind::Regex { lowered, .. } => compile(lowered).map(Some),
        MatcherKind::Contains {
            literal,
            ignore_case,
        } => compile(&format!(
            "{}{}",
            if *ignore_case { "(?i)" } else { "" },
            regex::escape(literal)
        ))
        .map(Some),
        MatcherKind::Prefix {
            literal,
            ignore_case,
            ..
        } => compile(&format!(
            r"{}\A{}",
            if *ignore_case { "(?i)" } else { "" },
            regex::escape(literal)
        ))
        .map(Some),
        MatcherKind::Whole {
            literal,
            ignore_case,
        } => compile(&format!(
            r"{}\A{}\z",
            if *ignore_case { "(?i)" } else { "" },
            regex::escape(literal)
        ))
        .map(Some),
    }
}

/// An evidence field's value as text (numbers and names spelled as in JSON), for guards and
/// `where group N == field` comparisons.
pub fn field(evidence: &Evidence, field: EvidenceField) -> Option<String> {
    match field {
        EvidenceField::Phase => evidence.phase.map(|p| p.to_string()),
        EvidenceField::ProviderId => evidence.provider_id.clone(),
        EvidenceField::Source => evidence.source.map(|s| s.to_string()),
        EvidenceField::ExitCode => evidence.exit_code.map(|c| c.to_string()),
        EvidenceField::HttpStatus => evidence.http_status.map(|s| s.to_string()),
        EvidenceField::ResetHint => evidence.reset_hint.clone(),
        EvidenceField::Stderr => evidence.stderr.clone(),
        EvidenceField::Stdout => evidence.stdout.clone(),
        EvidenceField::ManagedRuntimePackageSpec => evidence.managed_runtime_package_spec.clone(),
        EvidenceField::Headers => evidence.headers.as_ref().and_then(|headers| {
            let names: Vec<&str> = headers.iter().map(|(name, _)| name).collect();
            Some(names.join(",")).filter(|names| !names.is_empty())
        }),
        EvidenceField::Body => evidence.body.as_ref().map(Body::to_text),
    }
}

/// Collects the values a body matcher reads at `pointer` of a JSON body, walked naively: a
/// segment is a member name (`~1` is `/`, `~0` is `~`), an array index, or `*` for every
/// element; strings are read as they are, numbers and booleans as their JSON text, and nothing
/// else is read.
fn body_values(root: &serde_json::Value, pointer: &str, out: &mut Vec<String>) {
    use serde_json::Value;
    let mut current = vec![root];
    if !pointer.is_empty() {
        let Some(rest) = pointer.strip_prefix('/') else {
            return;
        };
        for raw in rest.split('/') {
            let mut segment = String::new();
            let mut chars = raw.chars();
            while let Some(c) = chars.next() {
                match (c, c == '~') {
                    (_, false) => segment.push(c),
                    (_, true) => match chars.next() {
                        Some('0') => segment.push('~'),
                        Some('1') => segment.push('/'),
                        _ => return,
                    },
                }
            }
            let mut next = Vec::new();
            for value in current {
                match value {
                    Value::Object(map) => next.extend(map.get(&segment)),
                    Value::Array(items) if segment == "*" => next.extend(items.iter()),
                    Value::Array(items) if segment == "0" || !segment.starts_with('0') => {
                        next.extend(segment.parse::<usize>().ok().and_then(|i| items.get(i)));
                    }
                    _ => {}
                }
            }
            current = next;
        }
    }
    for value in current {
        match value {
            Value::String(text) => out.push(text.clone()),
            Value::Number(number) => out.push(number.to_string()),
            Value::Bool(flag) => out.push(flag.to_string()),
            _ => {}
        }
    }
}

/// Whether a rule's structured guards hold for `evidence`.
pub fn guards_hold(guards: &Guards, evidence: &Evidence) -> bool {
    fn one_of<T: PartialEq>(allowed: &Option<Vec<T>>, value: Option<T>) -> bool {
        allowed
            .as_ref()
            .is_none_or(|allowed| value.is_some_and(|value| allowed.contains(&value)))
    }
    one_of(&guards.phase, evidence.phase)
        && one_of(&guards.provider_id, evidence.provider_id.clone())
        && one_of(&guards.source, evidence.source)
        && one_of(&guards.http_status, evidence.http_status)
        && one_of(&guards.exit_code, evidence.exit_code)
        && guards
            .present
            .iter()
            .all(|f| field(evidence, *f).is_some_and(|value| !value.is_empty()))
        && guards
            .headers
            .iter()
            .all(|guard| guard.holds_on_header(evidence.headers.as_ref()))
        && guards
            .body
            .iter()
            .all(|guard| guard.holds_on_body(evidence.body.as_ref()))
}

impl Reference {
    /// Prepares a catalogue; the rules are kept in effective order.
    pub fn new(catalogue: &Catalogue, priority: &Priority) -> Result<Reference, regex::Error> {
        let mut rules = Vec::new();
        for &index in priority.order() {
            let Some(rule) = catalogue.rule(index) else {
                continue;
            };
            let regexes = rule
                .matchers
                .iter()
                .chain(&rule.vetoes)
                .map(matcher_regex)
                .collect::<Result<Vec<_>, _>>()?;
            let capture = match &rule.remediation {
                Some(RemediationSpec::Capture { lowered, .. }) => Some(compile(lowered)?),
                _ => None,
            };
            rules.push((rule.clone(), regexes, capture));
        }
        Ok(Reference { rules })
    }

    /// The id of the rule that wins on `evidence`, and its remediation capture. When a rule of
    /// low confidence wins on the text as given, each unwrapped reading
    /// ([`Evidence::unwrapped`]) is tried in order, and the first whose winner is above low
    /// confidence answers, as the runtime does.
    pub fn classify(&self, evidence: &Evidence) -> Option<(String, Option<String>)> {
        let first = self.classify_as_given(evidence);
        let low = |id: &str| {
            self.rules
                .iter()
                .find(|(rule, _, _)| rule.id == id)
                .is_none_or(|(rule, _, _)| rule.confidence == Confidence::Low)
        };
        if first.as_ref().is_some_and(|(id, _)| !low(id)) {
            return first;
        }
        Unwrapping::ALL
            .iter()
            .filter_map(|unwrapping| evidence.unwrapped(*unwrapping))
            .filter_map(|reading| self.classify_as_given(&reading))
            .find(|(id, _)| !low(id))
            .or(first)
    }

    /// The id of the rule that wins on `evidence` as given, and its remediation capture.
    fn classify_as_given(&self, evidence: &Evidence) -> Option<(String, Option<String>)> {
        let views = TextViews::new(evidence);
        let text = |view: TextView| views.get(view);
        let body = evidence
            .body
            .as_ref()
            .filter(|body| body.is_json())
            .and_then(|body| serde_json::to_value(body).ok());
        let holds_on = |matcher: &TextMatcher, regex: Option<&Regex>, view_text: &str| -> bool {
            match (&matcher.kind, regex) {
                (
                    MatcherKind::Regex {
                        group_equals: Some((group, equals)),
                        ..
                    },
                    Some(regex),
                ) => {
                    // An absent field equals nothing, not even an unmatched group.
                    let Some(expected) = field(evidence, *equals) else {
                        return false;
                    };
                    regex.captures_iter(view_text).any(|c| {
                        c.get(*group as usize)
                            .is_some_and(|g| g.as_str() == expected)
                    })
                }
                (MatcherKind::Prefix { suffix, .. }, Some(regex)) => {
                    let trimmed = view_text.trim();
                    regex.find(trimmed).is_some_and(|found| {
                        let rest = trimmed.get(found.end()..).unwrap_or("").trim().len();
                        suffix.is_none_or(|(min, max)| min <= rest && rest <= max)
                    })
                }
                (MatcherKind::Whole { .. }, Some(regex)) => regex.is_match(view_text.trim()),
                (_, Some(regex)) => regex.is_match(view_text),
                (_, None) => false,
            }
        };
        let holds = |matcher: &TextMatcher, regex: Option<&Regex>| -> bool {
            match (&matcher.pointer, matcher.view) {
                (Some(pointer), TextView::Body) => {
                    let mut values = Vec::new();
                    if let Some(body) = &body {
                        body_values(body, pointer, &mut values);
                    }
                    values.iter().any(|value| holds_on(matcher, regex, value))
                }
                _ => holds_on(matcher, regex, text(matcher.view)),
            }
        };
        for (rule, regexes, capture) in &self.rules {
            if !guards_hold(&rule.guards, evidence) {
                continue;
            }
            let (matchers, vetoes) = regexes.split_at(rule.matchers.len().min(regexes.len()));
            if !rule
                .matchers
                .iter()
                .zip(matchers)
                .all(|(m, r)| holds(m, r.as_ref()))
            {
                continue;
            }
            if rule
                .vetoes
                .iter()
                .zip(vetoes)
                .any(|(v, r)| holds(v, r.as_ref()))
            {
                continue;
            }
            match (&rule.remediation, capture) {
                (Some(RemediationSpec::Capture { group, view, .. }), Some(regex)) => {
                    let value = regex
                        .captures(text(*view))
                        .and_then(|c| c.get(*group as usize))
                        .map(|g| g.as_str().to_owned());
                    match value {
                        Some(value) if !holds_credential(&value) => {
                            return Some((rule.id.clone(), Some(value)));
                        }
                        _ => continue,
                    }
                }
                _ => return Some((rule.id.clone(), None)),
            }
        }
        None
    }
}
