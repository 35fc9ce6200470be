//! Regex validation and lowering to faultline's regex semantics.
//!
//! faultline regexes use the syntax of Rust's `regex` crate with RE2's meaning for Perl classes
//! and word boundaries: `\d`, `\s`, `\w` and `\b` are ASCII, as in Go, where the reference
//! catalogue was written. Lowering rewrites them textually into explicit ASCII classes and
//! `(?-u:…)` boundaries, so that every engine (the DFA, the reference interpreter, benchmarks'
//! competitors) compiles the very same pattern, and no pattern needs a Unicode word boundary,
//! which a DFA cannot represent.

use std::ops::Range;

use regex_syntax::ast::{self, Ast};

/// Default nesting limit for regex syntax: deeper patterns are rejected (FL0027), not
/// overflowed. Configurable through [`crate::Budget::nest_limit`], up to [`MAX_NEST_LIMIT`].
pub const NEST_LIMIT: u32 = 100;

/// The largest nesting limit a configuration may set: every later stage walks syntax trees
/// recursively, and this depth stays far from the stack's end.
pub const MAX_NEST_LIMIT: u32 = 1000;

/// Nesting later stages accept when they parse a validated pattern again: the front end's limit
/// plus room for the few groups the analysis wraps a pattern in.
const DOWNSTREAM_NEST_LIMIT: u32 = MAX_NEST_LIMIT + 8;

/// Parses a pattern that the front end validated (or wrapped) into a syntax tree.
pub fn parse_hir(pattern: &str) -> Result<regex_syntax::hir::Hir, Box<regex_syntax::Error>> {
    regex_syntax::ParserBuilder::new()
        .nest_limit(DOWNSTREAM_NEST_LIMIT)
        .build()
        .parse(pattern)
        .map_err(Box::new)
}

/// Compiles a pattern with the `regex` crate under a size limit (of its compiled program, in
/// bytes; the lazy DFA cache gets the runtime's limit), the way the runtime compiles exact and
/// capture regexes when a bundle loads.
pub fn regex(pattern: &str, size_limit: usize) -> Result<regex::Regex, regex::Error> {
    regex::RegexBuilder::new(pattern)
        .size_limit(size_limit)
        .dfa_size_limit(faultline_runtime::build::REGEX_DFA_SIZE_LIMIT)
        .nest_limit(DOWNSTREAM_NEST_LIMIT)
        .build()
}

/// A problem with a pattern, located by byte range in the pattern text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatternProblem {
    /// The pattern does not parse or translate.
    Invalid {
        /// What is wrong.
        message: String,
        /// Where, in the pattern.
        range: Range<usize>,
    },
    /// The pattern can match the empty string.
    MatchesEmpty,
    /// An explicit Unicode flag asks for a word boundary no DFA can represent.
    UnicodeWordBoundary {
        /// The boundary's range in the pattern.
        range: Range<usize>,
    },
}

/// A validated, lowered pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoweredPattern {
    /// The pattern every engine compiles.
    pub lowered: String,
    /// Number of explicit capture groups.
    pub capture_groups: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UnicodeFlag {
    /// Not mentioned: faultline's RE2 semantics apply.
    Default,
    /// `(?u)`: the author asked for Unicode.
    ExplicitOn,
    /// `(?-u)`: the author asked for ASCII/bytes.
    ExplicitOff,
}

const ASCII_DIGIT: &str = "0-9";
const ASCII_SPACE: &str = r"\t\n\x0C\r ";
const ASCII_WORD: &str = "0-9A-Za-z_";

fn perl_ascii(kind: &ast::ClassPerlKind) -> &'static str {
    match kind {
        ast::ClassPerlKind::Digit => ASCII_DIGIT,
        ast::ClassPerlKind::Space => ASCII_SPACE,
        ast::ClassPerlKind::Word => ASCII_WORD,
    }
}

struct Lowering {
    replacements: Vec<(Range<usize>, String)>,
    problems: Vec<PatternProblem>,
}

impl Lowering {
    fn flags(&mut self, flags: &ast::Flags, state: &mut UnicodeFlag) {
        let mut negated = false;
        for item in &flags.items {
            match item.kind {
                ast::FlagsItemKind::Negation => negated = true,
                ast::FlagsItemKind::Flag(ast::Flag::Unicode) => {
                    *state = if negated {
                        UnicodeFlag::ExplicitOff
                    } else {
                        UnicodeFlag::ExplicitOn
                    };
                }
                ast::FlagsItemKind::Flag(_) => {}
            }
        }
    }

    fn walk(&mut self, node: &Ast, state: &mut UnicodeFlag) {
        match node {
            Ast::Flags(set) => self.flags(&set.flags, state),
            Ast::ClassPerl(class) if *state == UnicodeFlag::Default => {
                let open = if class.negated { "[^" } else { "[" };
                self.replacements.push((
                    span_range(&class.span),
                    format!("{open}{}]", perl_ascii(&class.kind)),
                ));
            }
            Ast::ClassBracketed(class) => self.class_set(&class.kind, *state),
            Ast::Assertion(assertion) => self.assertion(assertion, *state),
            Ast::Repetition(repetition) => self.walk(&repetition.ast, state),
            Ast::Group(group) => {
                let mut inner = *state;
                if let ast::GroupKind::NonCapturing(flags) = &group.kind {
                    self.flags(flags, &mut inner);
                }
                self.walk(&group.ast, &mut inner);
            }
            Ast::Alternation(alternation) => {
                for branch in &alternation.asts {
                    self.walk(branch, state);
                }
            }
            Ast::Concat(concat) => {
                for part in &concat.asts {
                    self.walk(part, state);
                }
            }
            _ => {}
        }
    }

    fn class_set(&mut self, set: &ast::ClassSet, state: UnicodeFlag) {
        match set {
            ast::ClassSet::Item(item) => self.class_item(item, state),
            ast::ClassSet::BinaryOp(op) => {
                self.class_set(&op.lhs, state);
                self.class_set(&op.rhs, state);
            }
        }
    }

    fn class_item(&mut self, item: &ast::ClassSetItem, state: UnicodeFlag) {
        match item {
            ast::ClassSetItem::Perl(class) if state == UnicodeFlag::Default => {
                let replacement = if class.negated {
                    format!("[^{}]", perl_ascii(&class.kind))
                } else {
                    perl_ascii(&class.kind).to_owned()
                };
                self.replacements
                    .push((span_range(&class.span), replacement));
            }
            ast::ClassSetItem::Bracketed(inner) => self.class_set(&inner.kind, state),
            ast::ClassSetItem::Union(union) => {
                for inner in &union.items {
                    self.class_item(inner, state);
                }
            }
            _ => {}
        }
    }

    fn assertion(&mut self, assertion: &ast::Assertion, state: UnicodeFlag) {
        use ast::AssertionKind as Kind;
        let ascii = match assertion.kind {
            Kind::WordBoundary => r"\b",
            Kind::NotWordBoundary => r"\B",
            Kind::WordBoundaryStart | Kind::WordBoundaryStartAngle => r"\b{start}",
            Kind::WordBoundaryEnd | Kind::WordBoundaryEndAngle => r"\b{end}",
            Kind::WordBoundaryStartHalf => r"\b{start-half}",
            Kind::WordBoundaryEndHalf => r"\b{end-half}",
            _ => return,
        };
        match state {
            UnicodeFlag::Default => self
                .replacements
                .push((span_range(&assertion.span), format!("(?-u:{ascii})"))),
            UnicodeFlag::ExplicitOn => {
                self.problems.push(PatternProblem::UnicodeWordBoundary {
                    range: span_range(&assertion.span),
                });
            }
            UnicodeFlag::ExplicitOff => {}
        }
    }
}

fn span_range(span: &ast::Span) -> Range<usize> {
    span.start.offset..span.end.offset
}

fn translate(pattern: &str, nest_limit: u32) -> Result<regex_syntax::hir::Hir, PatternProblem> {
    regex_syntax::ParserBuilder::new()
        .nest_limit(nest_limit)
        .build()
        .parse(pattern)
        .map_err(|error| match error {
            regex_syntax::Error::Parse(error) => PatternProblem::Invalid {
                message: error.kind().to_string(),
                range: span_range(error.span()),
            },
            regex_syntax::Error::Translate(error) => PatternProblem::Invalid {
                message: error.kind().to_string(),
                range: span_range(error.span()),
            },
            other => PatternProblem::Invalid {
                message: other.to_string(),
                range: 0..pattern.len(),
            },
        })
}

/// Validates a pattern and rewrites it in faultline's regex semantics (RE2's ASCII classes and
/// boundaries), the form every engine compiles, under the default nesting limit.
pub fn prepare(pattern: &str) -> Result<LoweredPattern, Vec<PatternProblem>> {
    prepare_with(pattern, NEST_LIMIT)
}

/// [`prepare`] under a nesting limit (clamped to [`MAX_NEST_LIMIT`]).
pub fn prepare_with(pattern: &str, nest_limit: u32) -> Result<LoweredPattern, Vec<PatternProblem>> {
    let nest_limit = nest_limit.min(MAX_NEST_LIMIT);
    let parsed = ast::parse::ParserBuilder::new()
        .nest_limit(nest_limit)
        .build()
        .parse(pattern)
        .map_err(|error| {
            vec![PatternProblem::Invalid {
                message: error.kind().to_string(),
                range: span_range(error.span()),
            }]
        })?;
    // Translating the pattern as written reports translation errors at their exact place.
    translate(pattern, nest_limit).map_err(|problem| vec![problem])?;
    let mut lowering = Lowering {
        replacements: Vec::new(),
        problems: Vec::new(),
    };
    lowering.walk(&parsed, &mut UnicodeFlag::Default);
    if !lowering.problems.is_empty() {
        return Err(lowering.problems);
    }
    let mut lowered = pattern.to_owned();
    lowering
        .replacements
        .sort_by_key(|(range, _)| std::cmp::Reverse(range.start));
    for (range, replacement) in &lowering.replacements {
        if lowered.get(range.clone()).is_some() {
            lowered.replace_range(range.clone(), replacement);
        }
    }
    // The rewrite adds one group per boundary: parse it with room for that.
    let hir = translate(&lowered, DOWNSTREAM_NEST_LIMIT).map_err(|problem| match problem {
        // The rewrite cannot introduce an error the original did not have; if it ever does,
        // blame the whole pattern rather than an offset in text the author never wrote.
        PatternProblem::Invalid { message, .. } => vec![PatternProblem::Invalid {
            message,
            range: 0..pattern.len(),
        }],
        other => vec![other],
    })?;
    if hir.properties().minimum_len() == Some(0) {
        return Err(vec![PatternProblem::MatchesEmpty]);
    }
    let capture_groups =
        u32::try_from(hir.properties().explicit_captures_len()).unwrap_or(u32::MAX);
    Ok(LoweredPattern {
        lowered,
        capture_groups,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perl_classes_and_boundaries_become_ascii() {
        let lowered = prepare(r"(?i)\b529\b[^\n]*\s\d+[\s\S]{0,3}\W")
            .unwrap()
            .lowered;
        assert_eq!(
            lowered,
            r"(?i)(?-u:\b)529(?-u:\b)[^\n]*[\t\n\x0C\r ][0-9]+[\t\n\x0C\r [^\t\n\x0C\r ]]{0,3}[^0-9A-Za-z_]"
        );
    }

    #[test]
    fn lowered_patterns_keep_re2_meaning() {
        // `\w` and `\b` are ASCII: `ü` is not a word character, as in Go.
        let whole_word = regex::Regex::new(&prepare(r"^\w+$").unwrap().lowered).unwrap();
        assert!(!whole_word.is_match("aü"));
        let boundary = regex::Regex::new(&prepare(r"^a\b").unwrap().lowered).unwrap();
        assert!(boundary.is_match("aü"));
    }

    #[test]
    fn explicit_unicode_flag_is_kept_for_classes_and_refused_for_boundaries() {
        assert_eq!(prepare(r"(?u:\w)x").unwrap().lowered, r"(?u:\w)x");
        let problems = prepare(r"a(?u)\bb").unwrap_err();
        assert_eq!(
            problems,
            [PatternProblem::UnicodeWordBoundary { range: 5..7 }]
        );
        assert_eq!(prepare(r"(?-u:\b)x").unwrap().lowered, r"(?-u:\b)x");
    }

    #[test]
    fn invalid_and_empty_patterns_are_problems() {
        let Err(problems) = prepare(r"a(b") else {
            panic!()
        };
        assert!(matches!(&problems[0], PatternProblem::Invalid { range, .. } if *range == (1..2)));
        assert_eq!(
            prepare(r"a*|b").unwrap_err(),
            [PatternProblem::MatchesEmpty]
        );
        assert_eq!(prepare(r"\b").unwrap_err(), [PatternProblem::MatchesEmpty]);
    }

    #[test]
    fn capture_groups_are_counted() {
        assert_eq!(prepare(r"(a)(?:b)(?P<c>c)").unwrap().capture_groups, 2);
    }
}
