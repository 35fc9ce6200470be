//! Required literals: for each rule, a set of words of which at least one must occur in any
//! text the rule fires on. The runtime's prefilter finds them in one multi-literal pass, so that
//! ordinary prose, which contains none of them, never reaches an automaton.
//!
//! A requirement is derived from the regex syntax tree, never by harvesting every literal in a
//! pattern (that is not conservative: `x(?:verylongtoken)?y`). Words are runs of ASCII letters,
//! digits and `_`, lowercased, of at least [`MIN_WORD`] characters. Redaction only removes text
//! and writes markers between non-word characters, so a word of the sanitized view is also in
//! the raw text the prefilter scans, except the words of the markers it introduces
//! (`faultline_runtime::build::INTRODUCED_WORDS`): a requirement on any part of those is
//! dropped, and the rule is never skipped.

use regex_syntax::hir::{Class, Hir, HirKind};

/// The shortest useful prefilter word.
pub const MIN_WORD: usize = 3;
/// Alternations with more branches make a rule ungated rather than flood the prefilter.
pub const MAX_ALTERNATIVES: usize = 64;

/// At least one of these words occurs in every match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// Lowercase words.
    pub words: Vec<String>,
}

impl Requirement {
    /// The length of the shortest word: how selective the requirement is.
    fn strength(&self) -> usize {
        self.words.iter().map(String::len).min().unwrap_or(0)
    }
}

/// The character a class stands for when it is one ASCII word character, possibly with its case
/// variants (including the non-ASCII KELVIN SIGN and LONG S that fold to `k` and `s`).
fn single_word_char(class: &Class) -> Option<char> {
    let chars: Vec<char> = match class {
        Class::Unicode(unicode) => {
            let mut chars = Vec::new();
            for range in unicode.iter() {
                if (range.end() as u32).saturating_sub(range.start() as u32) > 3 {
                    return None;
                }
                chars.extend(range.start()..=range.end());
            }
            chars
        }
        Class::Bytes(bytes) => {
            let mut chars = Vec::new();
            for range in bytes.iter() {
                if range.end().saturating_sub(range.start()) > 3 {
                    return None;
                }
                chars.extend((range.start()..=range.end()).map(char::from));
            }
            chars
        }
    };
    let lower: Vec<char> = chars
        .iter()
        .map(|c| match c {
            '\u{212A}' => 'k',
            '\u{017F}' => 's',
            other => other.to_ascii_lowercase(),
        })
        .collect();
    let first = *lower.first()?;
    let is_word = first.is_ascii_alphanumeric() || first == '_';
    (is_word && lower.iter().all(|c| *c == first)).then_some(first)
}

/// One element of a concatenation: a known word character, or something else.
enum Atom {
    Char(char),
    Other(Option<Requirement>),
}

fn atom(hir: &Hir) -> Atom {
    match hir.kind() {
        HirKind::Class(class) => match single_word_char(class) {
            Some(c) => Atom::Char(c),
            None => Atom::Other(None),
        },
        HirKind::Literal(_) | HirKind::Concat(_) => Atom::Other(requirement(hir)),
        _ => Atom::Other(requirement(hir)),
    }
}

fn better(a: Option<Requirement>, b: Option<Requirement>) -> Option<Requirement> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b.strength() > a.strength() { b } else { a }),
        (a, None) => a,
        (None, b) => b,
    }
}

fn run_requirement(run: &str) -> Option<Requirement> {
    (run.len() >= MIN_WORD).then(|| Requirement {
        words: vec![run.to_owned()],
    })
}

/// The requirement of a syntax tree, if it has one.
pub fn requirement(hir: &Hir) -> Option<Requirement> {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => None,
        HirKind::Literal(literal) => {
            // A literal's bytes: keep the best run of word characters.
            let text = String::from_utf8_lossy(&literal.0).to_ascii_lowercase();
            text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter_map(run_requirement)
                .fold(None, |best, next| better(best, Some(next)))
        }
        HirKind::Class(class) => {
            single_word_char(class).and_then(|c| run_requirement(&c.to_string()))
        }
        HirKind::Repetition(repetition) if repetition.min >= 1 => requirement(&repetition.sub),
        HirKind::Repetition(_) => None,
        HirKind::Capture(capture) => requirement(&capture.sub),
        HirKind::Concat(parts) => {
            let mut best = None;
            let mut run = String::new();
            for part in parts {
                // A literal inside a concatenation contributes its characters to the run.
                if let HirKind::Literal(literal) = part.kind() {
                    let text = String::from_utf8_lossy(&literal.0).to_ascii_lowercase();
                    for c in text.chars() {
                        if c.is_ascii_alphanumeric() || c == '_' {
                            run.push(c);
                        } else {
                            best = better(best, run_requirement(&run));
                            run.clear();
                        }
                    }
                    continue;
                }
                match atom(part) {
                    Atom::Char(c) => run.push(c),
                    Atom::Other(requirement) => {
                        best = better(best, run_requirement(&run));
                        run.clear();
                        best = better(best, requirement);
                    }
                }
            }
            better(best, run_requirement(&run))
        }
        HirKind::Alternation(branches) => {
            let mut words = Vec::new();
            for branch in branches {
                words.extend(requirement(branch)?.words);
            }
            words.sort();
            words.dedup();
            (words.len() <= MAX_ALTERNATIVES).then_some(Requirement { words })
        }
    }
}

/// The requirement of a literal matched as written (`contains`, `prefix`, `whole`).
pub fn literal_requirement(literal: &str) -> Option<Requirement> {
    literal
        .to_ascii_lowercase()
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter_map(run_requirement)
        .fold(None, |best, next| better(best, Some(next)))
}

/// Whether a requirement could be satisfied by a word the redaction introduces, so that the
/// raw text need not contain it. A required word is a run of word characters; the markers the
/// redaction writes are bracketed by non-word characters, so an occurrence that overlaps a
/// marker lies inside one of the marker's own words: only a part of an introduced word (`act`
/// of `redacted`) can appear without being in the raw text. A longer word that merely contains
/// one (`invalid` contains `id`) cannot be spelled by a marker.
pub fn touches_introduced_words(requirement: &Requirement) -> bool {
    requirement.words.iter().any(|word| {
        faultline_runtime::build::INTRODUCED_WORDS
            .iter()
            .any(|introduced| introduced.contains(word.as_str()))
    })
}

/// The requirement of a pattern (in lowered syntax).
pub fn pattern_requirement(pattern: &str) -> Option<Requirement> {
    let hir = crate::pattern::parse_hir(pattern).ok()?;
    requirement(&hir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(pattern: &str) -> Option<Vec<String>> {
        pattern_requirement(&crate::pattern::prepare(pattern).unwrap().lowered).map(|r| r.words)
    }

    #[test]
    fn requirements_are_required_words_only() {
        assert_eq!(
            words(r"(?i)\b529\b[^\n]*overloaded|overloaded[^\n]*\b529\b|\boverloaded_error\b"),
            Some(vec!["overloaded".into(), "overloaded_error".into()])
        );
        assert_eq!(
            words(r"(?i)too\s+many\s+requests"),
            Some(vec!["requests".into()])
        );
        // An optional part is not required; a short word is useless.
        assert_eq!(words(r"x(?:verylongtoken)?y"), None);
        assert_eq!(words(r"ab|verylongtoken"), None);
        assert_eq!(
            words(r"(?i)peer disconnected|connection closed"),
            Some(vec!["connection".into(), "disconnected".into()])
        );
    }

    #[test]
    fn case_folding_classes_count_as_their_letter() {
        // `(?i)k` is [Kk\u{212A}], `(?i)s` is [Ss\u{17F}].
        assert_eq!(
            words(r"(?i)rate_limit_exceeded"),
            Some(vec!["rate_limit_exceeded".into()])
        );
        assert_eq!(words(r"(?i)tasks"), Some(vec!["tasks".into()]));
    }
}
