//! Regexes a bundle needs only now and then (confirming a widened pattern, reading a capture
//! group, a case-folded `prefix` or `whole` literal, finding where a long text matched),
//! compiled on first use instead of at load.
//!
//! Compiling them all made up more than half of loading a bundle, though most classifications
//! never reach one. Their syntax is still checked at load (a cheap parse, no automaton), so a
//! bundle with a malformed pattern is refused there; what only compiling can find, a program over
//! [`super::REGEX_SIZE_LIMIT`] (the compiler refuses such patterns, FL0109, so only a hand-made
//! bundle can hold one), makes that regex match nothing, the same answer on every call.

use std::sync::OnceLock;

use regex::Regex;

use super::LoadError;

/// A regex compiled the first time it is used, then shared by every thread.
#[derive(Debug)]
pub(super) struct LazyRegex {
    pattern: String,
    compiled: OnceLock<Option<Regex>>,
}

/// Nesting allowed when checking a pattern's syntax at load: the `regex` crate's default, under
/// which these patterns were compiled at load before, and above the compiler's default.
const NEST_LIMIT: u32 = 250;

/// Compiles `pattern` as every regex of a bundle is compiled (a smaller `size_limit` or another
/// `nest_limit` only refuses more patterns; what compiles is the same program).
pub(crate) fn build(
    pattern: &str,
    size_limit: usize,
    nest_limit: u32,
) -> Result<Regex, regex::Error> {
    regex::RegexBuilder::new(pattern)
        .size_limit(size_limit)
        .dfa_size_limit(super::REGEX_DFA_SIZE_LIMIT)
        .nest_limit(nest_limit)
        .build()
}

/// Checks `pattern`'s syntax: a parse, no automaton.
pub(super) fn check_syntax(pattern: &str) -> Result<(), LoadError> {
    regex_syntax::ast::parse::ParserBuilder::new()
        .nest_limit(NEST_LIMIT)
        .build()
        .parse(pattern)
        .map(drop)
        .map_err(|error| LoadError::malformed(format!("pattern `{pattern}`: {error}")))
}

impl LazyRegex {
    /// Checks `pattern`'s syntax now; compiles it on first use.
    pub(super) fn new(pattern: String) -> Result<LazyRegex, LoadError> {
        check_syntax(&pattern)?;
        Ok(LazyRegex::checked_elsewhere(pattern))
    }

    /// A regex for `pattern`, whose syntax the loader checks with [`check_syntax`] before it
    /// returns the bundle (checking many patterns at once lets it spread them over threads).
    pub(super) fn checked_elsewhere(pattern: String) -> LazyRegex {
        LazyRegex {
            pattern,
            compiled: OnceLock::new(),
        }
    }

    /// The pattern it compiles.
    pub(super) fn pattern(&self) -> &str {
        &self.pattern
    }

    /// The compiled regex; `None` if it exceeds the size limits.
    pub(super) fn get(&self) -> Option<&Regex> {
        self.compiled
            .get_or_init(|| build(&self.pattern, super::REGEX_SIZE_LIMIT, NEST_LIMIT).ok())
            .as_ref()
    }

    /// Takes `regex` as its compiled form, unless it has one already. The caller vouches that
    /// it is this pattern compiled by [`build`] under [`super::REGEX_SIZE_LIMIT`].
    pub(super) fn adopt(&self, regex: Regex) {
        let _ = self.compiled.set(Some(regex));
    }

    /// Whether it matches somewhere in `text` (never, if it could not be compiled).
    pub(super) fn is_match(&self, text: &str) -> bool {
        self.get().is_some_and(|regex| regex.is_match(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_pattern_is_refused_when_the_bundle_loads() {
        let error = LazyRegex::new("(?i)unclosed (group".to_owned())
            .err()
            .map(|error| error.to_string());
        assert!(
            error
                .as_deref()
                .is_some_and(|e| e.contains("unclosed (group")),
            "{error:?}"
        );
    }

    #[test]
    fn a_well_formed_pattern_compiles_on_first_use_and_matches() {
        let regex = LazyRegex::new(r"(?i)rate\s+limit".to_owned()).unwrap();
        assert!(regex.compiled.get().is_none(), "compiled before first use");
        assert!(regex.is_match("Rate  LIMIT reached"));
        assert!(!regex.is_match("no limits"));
    }

    #[test]
    fn an_adopted_regex_serves_the_first_use() {
        let pattern = r"(?i)rate\s+limit";
        let regex = LazyRegex::new(pattern.to_owned()).unwrap();
        regex.adopt(build(pattern, super::super::REGEX_SIZE_LIMIT, NEST_LIMIT).unwrap());
        assert!(regex.compiled.get().is_some(), "adopted before first use");
        assert!(regex.is_match("Rate  LIMIT reached"));
        // A regex compiled already keeps its form.
        regex.adopt(build("never", super::super::REGEX_SIZE_LIMIT, NEST_LIMIT).unwrap());
        assert!(regex.is_match("rate limit"));
    }

    #[test]
    fn a_pattern_over_the_size_limit_matches_nothing() {
        // Well-formed, but its program is far beyond the runtime's size limit.
        let regex = LazyRegex::new(r"\w{1000}\w{1000}".to_owned()).unwrap();
        assert!(regex.get().is_none());
        assert!(!regex.is_match(&"a".repeat(3000)));
    }
}
