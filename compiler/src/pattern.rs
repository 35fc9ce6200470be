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
pub(crate) const DOWNSTREAM_NEST_LIMIT: u32 = MAX_NEST_LIMIT + 8;

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

/// Largest number of code points on the smaller side of a class (the class or its complement)
/// for which lowering checks whether case folding changes it.
const FOLD_CHECK_LIMIT: u32 = 4096;

/// Flags that decide whether a bracketed class may leave case-insensitive matching.
#[derive(Debug, Clone, Copy, Default)]
struct ClassFlags {
    case_insensitive: bool,
    /// `(?-u)` or `(?x)` is in force: the class is not checked alone.
    other: bool,
}

impl ClassFlags {
    fn apply(&mut self, flags: &ast::Flags) {
        let mut negated = false;
        for item in &flags.items {
            match item.kind {
                ast::FlagsItemKind::Negation => negated = true,
                ast::FlagsItemKind::Flag(ast::Flag::CaseInsensitive) => {
                    self.case_insensitive = !negated;
                }
                ast::FlagsItemKind::Flag(ast::Flag::Unicode) if negated => self.other = true,
                ast::FlagsItemKind::Flag(ast::Flag::IgnoreWhitespace) if !negated => {
                    self.other = true;
                }
                ast::FlagsItemKind::Flag(_) => {}
            }
        }
    }
}

/// The spans of the bracketed classes of `node` that hold another class, that case-insensitive
/// matching leaves unchanged (closed under simple case folding), and that `(?i)` is in force for.
fn fold_free_classes(
    node: &Ast,
    pattern: &str,
    flags: &mut ClassFlags,
    found: &mut Vec<Range<usize>>,
) {
    match node {
        Ast::Flags(set) => flags.apply(&set.flags),
        Ast::ClassBracketed(class)
            if flags.case_insensitive && !flags.other && nests_a_class(&class.kind) =>
        {
            let range = span_range(&class.span);
            if pattern.get(range.clone()).is_some_and(class_is_fold_closed) {
                found.push(range);
            }
        }
        Ast::Repetition(repetition) => fold_free_classes(&repetition.ast, pattern, flags, found),
        Ast::Group(group) => {
            let mut inner = *flags;
            if let ast::GroupKind::NonCapturing(group_flags) = &group.kind {
                inner.apply(group_flags);
            }
            fold_free_classes(&group.ast, pattern, &mut inner, found);
        }
        Ast::Alternation(alternation) => {
            for branch in &alternation.asts {
                fold_free_classes(branch, pattern, flags, found);
            }
        }
        Ast::Concat(concat) => {
            for part in &concat.asts {
                fold_free_classes(part, pattern, flags, found);
            }
        }
        _ => {}
    }
}

/// Whether a class holds another bracketed class (such as a lowered `\S`): only then does
/// `regex` fold a large set under `(?i)`; a class alone is folded before it is negated.
fn nests_a_class(set: &ast::ClassSet) -> bool {
    fn item_nests(item: &ast::ClassSetItem) -> bool {
        match item {
            ast::ClassSetItem::Bracketed(_) => true,
            ast::ClassSetItem::Union(union) => union.items.iter().any(item_nests),
            _ => false,
        }
    }
    match set {
        ast::ClassSet::Item(item) => item_nests(item),
        ast::ClassSet::BinaryOp(_) => true,
    }
}

/// Whether the class written `class` (a bracketed class, compiled case-sensitively) is closed
/// under simple case folding, so that `(?i)` gives it the same members. The smaller side (the
/// class or its complement, which is closed exactly when the class is) is folded, and only when
/// it is small: otherwise the answer is a conservative `false`.
fn class_is_fold_closed(class: &str) -> bool {
    let Ok(hir) = regex_syntax::ParserBuilder::new().build().parse(class) else {
        return false;
    };
    let regex_syntax::hir::HirKind::Class(regex_syntax::hir::Class::Unicode(members)) = hir.kind()
    else {
        return false;
    };
    let size = |class: &regex_syntax::hir::ClassUnicode| -> u32 {
        class
            .ranges()
            .iter()
            .map(|range| u32::from(range.end()) - u32::from(range.start()) + 1)
            .sum()
    };
    let mut complement = members.clone();
    complement.negate();
    let smaller = if size(members) <= size(&complement) {
        members.clone()
    } else {
        complement
    };
    if size(&smaller) > FOLD_CHECK_LIMIT {
        return false;
    }
    let mut folded = smaller.clone();
    folded.case_fold_simple();
    folded == smaller
}

/// `lowered` with each bracketed class that holds another class and that `(?i)` leaves unchanged
/// wrapped in `(?-i:…)`.
///
/// The same matches, far cheaper to compile: under `(?i)` the `regex` crate folds a class with a
/// large range one code point at a time, about a million of them for `[^\S\n]` (lowered to
/// `[^[^\t\n\x0C\r ]\n]`), which made single patterns take up to 20 ms to compile on first
/// use.
fn without_needless_folding(lowered: &str) -> String {
    let Ok(parsed) = ast::parse::ParserBuilder::new()
        .nest_limit(DOWNSTREAM_NEST_LIMIT)
        .build()
        .parse(lowered)
    else {
        return lowered.to_owned();
    };
    let mut found = Vec::new();
    fold_free_classes(&parsed, lowered, &mut ClassFlags::default(), &mut found);
    let mut wrapped = lowered.to_owned();
    found.sort_by_key(|range| std::cmp::Reverse(range.start));
    for range in found {
        if wrapped.is_char_boundary(range.start) && wrapped.is_char_boundary(range.end) {
            wrapped.insert(range.end, ')');
            wrapped.insert_str(range.start, "(?-i:");
        }
    }
    wrapped
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
    let mut lowering = Lowering {
        replacements: Vec::new(),
        problems: Vec::new(),
    };
    lowering.walk(&parsed, &mut UnicodeFlag::Default);
    if !lowering.problems.is_empty() {
        // A translation error of the pattern as written comes first, at its exact place.
        translate(pattern, nest_limit).map_err(|problem| vec![problem])?;
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
    let lowered = without_needless_folding(&lowered);
    // The rewrite adds one group per boundary: parse it with room for that. The pattern as
    // written is translated only when this fails, to place the error exactly: the rewrite spells
    // classes and boundaries out in ASCII and takes classes out of case-insensitive groups, which
    // removes no translation error, and translating the written pattern's case-insensitive
    // classes (case folding every code point of `[^\n]`) was a tenth of checking the catalogue.
    let hir = translate(&lowered, DOWNSTREAM_NEST_LIMIT).map_err(|problem| {
        if let Err(placed) = translate(pattern, nest_limit) {
            return vec![placed];
        }
        match problem {
            // The rewrite cannot introduce an error the original did not have; if it ever does,
            // blame the whole pattern rather than an offset in text the author never wrote.
            PatternProblem::Invalid { message, .. } => vec![PatternProblem::Invalid {
                message,
                range: 0..pattern.len(),
            }],
            other => vec![other],
        }
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
        // `[\s\S]` holds a negated class, which case folding leaves unchanged: it is taken out of
        // `(?i)`, where compiling it would fold every code point.
        assert_eq!(
            lowered,
            r"(?i)(?-u:\b)529(?-u:\b)[^\n]*[\t\n\x0C\r ][0-9]+(?-i:[\t\n\x0C\r [^\t\n\x0C\r ]]){0,3}[^0-9A-Za-z_]"
        );
    }

    #[test]
    fn only_classes_case_folding_leaves_unchanged_leave_case_insensitive_matching() {
        for (pattern, lowered) in [
            // Whitespace but a newline: no letter, so unchanged by folding.
            (r"(?i)a[^\S\n]b", r"(?i)a(?-i:[^[^\t\n\x0C\r ]\n])b"),
            // `k` folds to the Kelvin sign: the class must stay case-insensitive.
            (r"(?i)a[k[^\S]]b", r"(?i)a[k[^[^\t\n\x0C\r ]]]b"),
            // Not under `(?i)`, or turned off for the class: nothing to take out.
            (r"a[^\S\n]b", r"a[^[^\t\n\x0C\r ]\n]b"),
            (r"(?i)x(?-i:a[^\S\n]b)", r"(?i)x(?-i:a[^[^\t\n\x0C\r ]\n]b)"),
        ] {
            assert_eq!(prepare(pattern).unwrap().lowered, lowered, "{pattern}");
        }
        // The same set of matches as the class left under `(?i)`: the syntax trees are equal.
        for (pattern, left_folded) in [
            (r"(?i)a[^\S\n]+b", r"(?i)a[^[^\t\n\x0C\r ]\n]+b"),
            (
                r"(?i)a[\s\S]{0,3}b",
                r"(?i)a[\t\n\x0C\r [^\t\n\x0C\r ]]{0,3}b",
            ),
            (r"(?i)a[[^\W]&&[^k]]b", r"(?i)a[[^[^0-9A-Za-z_]]&&[^k]]b"),
        ] {
            let lowered = prepare(pattern).unwrap().lowered;
            assert_eq!(
                parse_hir(&lowered).unwrap(),
                parse_hir(left_folded).unwrap(),
                "{pattern} lowered to {lowered}"
            );
        }
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
    fn translation_errors_are_placed_in_the_pattern_as_written() {
        // Only the lowered pattern is translated when it is valid; an error is still placed in
        // the text the author wrote, not in the rewrite (whose offsets differ after `\s`).
        let pattern = r"(?i)\s+rate\p{NoSuchProperty}limit";
        let problems = prepare(pattern).unwrap_err();
        let [PatternProblem::Invalid { range, .. }] = problems.as_slice() else {
            panic!("{problems:?}")
        };
        assert_eq!(&pattern[range.clone()], r"\p{NoSuchProperty}");
        // Bytes that are not UTF-8 are refused where they are written.
        let pattern = r"limit(?-u:\xFF)";
        let problems = prepare(pattern).unwrap_err();
        let [PatternProblem::Invalid { range, .. }] = problems.as_slice() else {
            panic!("{problems:?}")
        };
        assert_eq!(&pattern[range.clone()], r"\xFF");
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
