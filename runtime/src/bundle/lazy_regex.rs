//! Regexes a bundle needs only now and then (confirming a widened pattern, reading a capture
//! group, a case-folded `prefix` or `whole` literal, finding where a long text matched),
//! compiled on first use instead of at load.
//!
//! Compiling them all made up more than half of loading a bundle, though most classifications
//! never reach one. Their syntax is still checked at load (a quick screen, or a parse where the
//! screen cannot tell; no automaton), so a bundle with a malformed pattern is refused there;
//! what only compiling can find, a program over [`super::REGEX_SIZE_LIMIT`] (the compiler
//! refuses such patterns, FL0109, so only a hand-made bundle can hold one), makes that regex
//! match nothing, the same answer on every call.
//!
//! Whether a pattern matches and where it matches are compiled apart. Most patterns a process
//! compiles are only ever asked whether they match (a rule the prefilter admits, which then does
//! not fire), and the `regex` crate's full regex builds a reverse automaton, literal prefilters
//! and a one-pass engine for them too: twice the work of the forward lazy DFA that answers
//! `is_match`, and half of classifying a file of a few megabytes. So `is_match` builds only that
//! forward automaton (the same Thompson NFA and lazy DFA the full regex searches with, under the
//! same limits), and the full regex is built when a rule that fired asks for positions or
//! capture groups. Where the lazy DFA gives up on a text (its cache thrashing, as the full
//! regex's would), the Pike VM over the same NFA answers, as the full regex's fallback does.
//! A text over [`MATCHER_MAX_TEXT_BYTES`] is asked of the full regex, whose literal prefilters
//! make long texts cheap.

use std::sync::{Arc, OnceLock};

use regex::Regex;
use regex_automata::Input;
use regex_automata::hybrid::dfa::{Cache as DfaCache, DFA};
use regex_automata::nfa::thompson::{self, WhichCaptures, pikevm};
use regex_automata::util::pool::Pool;
use regex_automata::util::syntax;

use super::LoadError;

/// A regex compiled the first time it is used, then shared by every thread.
#[derive(Debug)]
pub(super) struct LazyRegex {
    pattern: String,
    /// What answers `is_match`, unless the full regex is compiled already.
    matcher: OnceLock<Option<Matcher>>,
    /// The full regex: positions and capture groups.
    compiled: OnceLock<Option<Regex>>,
}

/// Nesting allowed when checking a pattern's syntax at load: the `regex` crate's default, under
/// which these patterns were compiled at load before, and above the compiler's default.
const NEST_LIMIT: u32 = 250;

/// How often the lazy DFA may clear its cache in one search, and the fewest bytes it must have
/// searched per state built, before it gives up on a text: the `regex` crate's own settings, so
/// that the matcher gives up (and the Pike VM answers) where the full regex would.
const MINIMUM_CACHE_CLEARS: usize = 3;
const MINIMUM_BYTES_PER_STATE: usize = 10;

/// The longest text the forward matcher is asked about. A longer one (a log of kilobytes, a
/// stderr blob) goes to the full regex, whose literal prefilters skip to where a match can
/// start; the lazy DFA alone would walk every byte, and where a bounded gap makes it give up,
/// the Pike VM would. Ordinary agent output and real errors are nearly all shorter: 99% of
/// the corpus's chunks are under 1.7 KB, and none over 2 KB.
const MATCHER_MAX_TEXT_BYTES: usize = 2048;

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

/// Checks `pattern`'s syntax: a parse, no automaton, unless the quick screen already knows the
/// parse would succeed (the plain syntax the compiler writes; [`super::syntax_screen`]).
pub(super) fn check_syntax(pattern: &str) -> Result<(), LoadError> {
    if super::syntax_screen::certainly_valid(pattern) {
        return Ok(());
    }
    regex_syntax::ast::parse::ParserBuilder::new()
        .nest_limit(NEST_LIMIT)
        .build()
        .parse(pattern)
        .map(drop)
        .map_err(|error| LoadError::malformed(format!("pattern `{pattern}`: {error}")))
}

/// Search state for one thread: the lazy DFA's cache, and the Pike VM's once it was needed.
struct Caches {
    dfa: DfaCache,
    pikevm: Option<pikevm::Cache>,
}

type CachePool = Pool<
    Caches,
    Box<dyn Fn() -> Caches + Send + Sync + std::panic::UnwindSafe + std::panic::RefUnwindSafe>,
>;

/// The forward half of what the `regex` crate builds for a pattern: its Thompson NFA (the same
/// configuration: syntax, size limit, capture groups) searched by a lazy DFA, with the Pike VM
/// over that NFA where the lazy DFA gives up.
struct Matcher {
    dfa: Arc<DFA>,
    pikevm: pikevm::PikeVM,
    caches: CachePool,
}

impl std::fmt::Debug for Matcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Matcher").finish_non_exhaustive()
    }
}

impl Matcher {
    /// `None` where the full regex would not compile either (syntax, size limit) or where the
    /// lazy DFA cannot serve at all (a cache limit too small for its first states; a Unicode
    /// word boundary or a match of nothing, which only a hand-made bundle holds): the full regex
    /// decides those.
    fn new(pattern: &str, size_limit: usize, cache_capacity: usize) -> Option<Matcher> {
        let nfa = thompson::Compiler::new()
            .syntax(syntax::Config::new().nest_limit(NEST_LIMIT))
            .configure(
                thompson::Config::new()
                    .nfa_size_limit(Some(size_limit))
                    .which_captures(WhichCaptures::All),
            )
            .build(pattern)
            .ok()?;
        // A match of nothing needs the full regex's handling of empty matches inside a
        // character's bytes; the compiler refuses such patterns, so only a hand-made bundle
        // holds one.
        if nfa.has_empty() {
            return None;
        }
        let dfa = DFA::builder()
            .configure(
                DFA::config()
                    .cache_capacity(cache_capacity)
                    .minimum_cache_clear_count(Some(MINIMUM_CACHE_CLEARS))
                    .minimum_bytes_per_state(Some(MINIMUM_BYTES_PER_STATE)),
            )
            .build_from_nfa(nfa.clone())
            .ok()?;
        let pikevm = pikevm::PikeVM::new_from_nfa(nfa).ok()?;
        let dfa = Arc::new(dfa);
        let for_caches = Arc::clone(&dfa);
        let caches: CachePool = Pool::new(Box::new(move || Caches {
            dfa: for_caches.create_cache(),
            pikevm: None,
        }));
        Some(Matcher {
            dfa,
            pikevm,
            caches,
        })
    }

    fn is_match(&self, text: &str) -> bool {
        let mut caches = self.caches.get();
        let input = Input::new(text).earliest(true);
        match self.dfa.try_search_fwd(&mut caches.dfa, &input) {
            Ok(found) => found.is_some(),
            Err(_) => {
                // A cache that gave up would give up again at once on the next search that
                // needs a new state: start the next one afresh.
                caches.dfa.reset(&self.dfa);
                let cache = caches
                    .pikevm
                    .get_or_insert_with(|| self.pikevm.create_cache());
                self.pikevm.is_match(cache, input)
            }
        }
    }
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
            matcher: OnceLock::new(),
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

    /// Whether it matches somewhere in `text` (never, if it could not be compiled): the full
    /// regex answers once it is compiled, the forward matcher until then.
    pub(super) fn is_match(&self, text: &str) -> bool {
        if text.len() > MATCHER_MAX_TEXT_BYTES {
            return self.get().is_some_and(|regex| regex.is_match(text));
        }
        if let Some(compiled) = self.compiled.get() {
            return compiled.as_ref().is_some_and(|regex| regex.is_match(text));
        }
        match self.matcher.get_or_init(|| {
            Matcher::new(
                &self.pattern,
                super::REGEX_SIZE_LIMIT,
                super::REGEX_DFA_SIZE_LIMIT,
            )
        }) {
            Some(matcher) => matcher.is_match(text),
            None => self.get().is_some_and(|regex| regex.is_match(text)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{REGEX_DFA_SIZE_LIMIT, REGEX_SIZE_LIMIT};
    use super::*;
    use proptest::prelude::*;

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

    #[test]
    fn the_matcher_answers_until_a_rule_asks_for_positions() {
        let regex =
            LazyRegex::new(r"(?i)(?-u:\b)rate[\t\n\x0C\r ]+limit(?-u:\b)".to_owned()).unwrap();
        assert!(regex.is_match("429: Rate  LIMIT reached"));
        assert!(!regex.is_match("ratelimit"));
        assert!(
            regex.matcher.get().is_some_and(Option::is_some),
            "the matcher was built"
        );
        assert!(
            regex.compiled.get().is_none(),
            "the full regex was built for is_match"
        );
        let found = regex.get().and_then(|r| r.find("429: Rate  LIMIT reached"));
        assert_eq!(found.map(|m| m.as_str()), Some("Rate  LIMIT"));
        assert!(regex.is_match("rate limit"));
    }

    #[test]
    fn a_long_text_is_asked_of_the_full_regex() {
        let regex = LazyRegex::new(r"(?i)quota[^\n]{0,40}exceeded".to_owned()).unwrap();
        let long = format!("{}Quota was exceeded", "log line\n".repeat(300));
        assert!(long.len() > MATCHER_MAX_TEXT_BYTES);
        assert!(regex.is_match(&long));
        assert!(
            regex.matcher.get().is_none(),
            "the matcher was built for a long text"
        );
        assert!(regex.compiled.get().is_some_and(Option::is_some));
    }

    #[test]
    fn a_pattern_that_can_match_nothing_is_left_to_the_full_regex() {
        assert!(Matcher::new(r"a*", REGEX_SIZE_LIMIT, REGEX_DFA_SIZE_LIMIT).is_none());
        let regex = LazyRegex::new(r"a*".to_owned()).unwrap();
        assert!(regex.is_match("bbb"));
    }

    /// Pieces of the patterns a catalogue holds: lowered ASCII classes and boundaries,
    /// case-insensitive groups, line anchors, bounded gaps, alternations and non-ASCII text.
    fn piece() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("rate".to_owned()),
            Just("limit".to_owned()),
            Just("é".to_owned()),
            Just("Ü".to_owned()),
            Just(r"[\t\n\x0C\r ]+".to_owned()),
            Just(r"[^\n]{0,12}".to_owned()),
            Just(r"[^\n]{1,40}?".to_owned()),
            Just(r"[0-9]+".to_owned()),
            Just(r"(?-u:\b)".to_owned()),
            Just(r"(?m:^)".to_owned()),
            Just(r"(?m:$)".to_owned()),
            Just(r"\.".to_owned()),
            Just(r"(?i:ERROR)".to_owned()),
            Just(r"(?:429|quota|ü)".to_owned()),
            Just(r"[^[^\t\n\x0C\r ]\n]*".to_owned()),
        ]
    }

    fn pattern() -> impl Strategy<Value = String> {
        (
            any::<bool>(),
            proptest::collection::vec(proptest::collection::vec(piece(), 1..5), 1..3),
        )
            .prop_map(|(insensitive, branches)| {
                let body = branches
                    .iter()
                    .map(|pieces| pieces.concat())
                    .collect::<Vec<_>>()
                    .join("|");
                if insensitive {
                    format!("(?i){body}")
                } else {
                    body
                }
            })
    }

    fn text() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![
                Just("rate".to_owned()),
                Just("LIMIT".to_owned()),
                Just("Limit".to_owned()),
                Just(" ".to_owned()),
                Just("\n".to_owned()),
                Just("\t".to_owned()),
                Just(".".to_owned()),
                Just("429".to_owned()),
                Just("quota".to_owned()),
                Just("É".to_owned()),
                Just("ü".to_owned()),
                Just("error".to_owned()),
                Just("x".to_owned()),
            ],
            0..24,
        )
        .prop_map(|parts| parts.concat())
    }

    /// A lazy DFA cache that a bounded gap over varied text outgrows within one search.
    const SMALL_CACHE: usize = 64 << 10;

    #[test]
    fn where_the_lazy_dfa_gives_up_the_pike_vm_answers() {
        let pattern = r"(?i)[^\n]{1,40}?quota[^\n]{0,40}exceeded";
        let matcher = Matcher::new(pattern, REGEX_SIZE_LIMIT, SMALL_CACHE).unwrap();
        // Each `quota` opens another gap, at another distance from the last: the sets of open
        // gaps make far more states than the cache holds.
        let mut seed: u32 = 1;
        let mut text: String = (0..3000)
            .map(|_| {
                seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                format!("quota{}", "x".repeat((seed >> 16) as usize % 13))
            })
            .collect();
        text.push_str(" was exceeded");
        let mut caches = matcher.caches.get();
        let gave_up = matcher
            .dfa
            .try_search_fwd(&mut caches.dfa, &Input::new(&text).earliest(true))
            .is_err();
        drop(caches);
        assert!(gave_up, "the lazy DFA did not give up");
        assert!(matcher.is_match(&text));
        assert!(!matcher.is_match(&text.replace("exceeded", "exceeding")));
    }

    proptest! {
        /// The matcher and the full regex agree on every pattern and text, with the regex's
        /// cache limit and with one so small that the lazy DFA gives up and the Pike VM answers.
        #[test]
        fn the_matcher_agrees_with_the_full_regex(pattern in pattern(), texts in proptest::collection::vec(text(), 1..8)) {
            let Ok(regex) = build(&pattern, REGEX_SIZE_LIMIT, NEST_LIMIT) else {
                return Ok(());
            };
            for capacity in [REGEX_DFA_SIZE_LIMIT, SMALL_CACHE] {
                let Some(matcher) = Matcher::new(&pattern, REGEX_SIZE_LIMIT, capacity) else {
                    // Too small a cache for the first states is the full regex's to answer.
                    let matches_nothing = regex_syntax::Parser::new()
                        .parse(&pattern)
                        .is_ok_and(|hir| hir.properties().minimum_len() == Some(0));
                    prop_assert!(
                        matches_nothing || capacity == SMALL_CACHE,
                        "no matcher for `{}`",
                        pattern
                    );
                    continue;
                };
                for text in &texts {
                    prop_assert_eq!(matcher.is_match(text), regex.is_match(text), "`{}` on {:?}", pattern, text);
                }
            }
        }
    }
}
