//! Classification throughput, faultline's compiled bundle against the engines it replaces, all on
//! the same inputs in one run: the reference interpreter (one `regex::Regex` per rule, tried in
//! priority order: how Kandev classifies), one `regex::RegexSet` per text view, and, with
//! `--features vectorscan`, one Vectorscan (Hyperscan) block-mode database per text view.
//!
//! Three input sets, one criterion group each: ordinary agent prose (the common, rejecting
//! path), real error messages, and 4 KiB stderr blobs (some with a real error near the end).
//! Then faultline alone on long texts (rules match the last MiB of the text): a log of 256 KiB,
//! 1 MiB and 4 MiB ending with a real error, and one 1 MiB line of JSON dense with URLs,
//! paths and secrets, each classified and redacted alone, to show both stay linear up to the
//! bound and flat beyond it.
//! Every engine computes the same thing, the winning rule (priority order, guards, vetoes,
//! remediation captures); before anything is timed, every engine's winner is checked against
//! the reference on every input.
//!
//! Then the redaction alone, per input set (`redaction_*` groups): the diagnostic tier as the
//! text views apply it now (`redaction_new`: one trigger scan, then only the passes that can
//! fire), as it was before the trigger prefilter (`redaction_reference`, the runtime's
//! `sanitize/reference.rs`), and the trigger scan alone (`trigger_scan`), side by side; a
//! second closing table gives their medians and ratios.
//!
//! Run with `cargo bench --bench classify` (add `--features vectorscan` for Vectorscan, which
//! needs Debian's `libvectorscan-dev`). A closing table gives, per input set and engine, the
//! median ns per classification and MB/s. `FAULTLINE_BENCH_BASELINE=<root .rules>` also times a
//! second catalogue (`faultline_baseline`) beside the repository's, in the same run;
//! `FAULTLINE_BENCH_WITHOUT_REGEXSET=1` leaves the `RegexSet` engine out (see [`WITHOUT_REGEXSET`]).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::print_stderr,
    reason = "a benchmark fails by panicking, and reports its inputs and results on standard error"
)]

use std::cell::OnceCell;
use std::collections::HashMap;
use std::hint::black_box;
use std::time::{Duration, SystemTime};

use criterion::{Criterion, Throughput};
use faultline_compiler::Compilation;
use faultline_compiler::ir::{Catalogue, Guards, MatcherKind, RemediationSpec, TextMatcher};
use faultline_compiler::priority::Priority;
use faultline_compiler::reference::{Reference, field as text_field, guards_hold};
use faultline_runtime::{Bundle, Evidence, EvidenceField, TextView, TextViews, holds_credential};
use regex::{Regex, RegexSet, RegexSetBuilder};

/// The automaton walk the trigger scan uses (`crate::literal_walk` there).
#[allow(
    unused_imports,
    dead_code,
    reason = "`cargo bench --no-run` compiles the module's tests without running a harness"
)]
#[path = "../runtime/src/literal_walk.rs"]
mod literal_walk;
/// The redaction before its trigger prefilter, and the prefilter alone: compiled into this
/// benchmark from the runtime's sources, since neither is public API.
#[path = "../runtime/src/sanitize/reference.rs"]
mod redaction_reference;
#[allow(
    dead_code,
    reason = "the benchmark calls the scan, not every helper of the module"
)]
#[path = "../runtime/src/sanitize/triggers.rs"]
mod redaction_triggers;

/// The input sets and criterion's medians, shared with `growth.rs` and `cli.rs`.
#[path = "shared/mod.rs"]
mod shared;

use shared::{error_messages, long_texts, median, prose_chunks, stderr_blobs, text_bytes};

/// The winner as every engine reports it: the rule id and its remediation capture, if any.
type Winner = Option<(String, Option<String>)>;

// ---------------------------------------------------------------------------------------------
// The rules as the set-based engines see them: every `regex`/`contains` matcher of every rule,
// veto and remediation capture is one pattern of its view's set; `prefix`/`whole` matchers,
// which test the trimmed text from its start, are anchored regexes run directly.
// ---------------------------------------------------------------------------------------------

#[cfg_attr(
    not(feature = "vectorscan"),
    allow(dead_code, reason = "named in the Vectorscan fallback report")
)]
const VIEWS: [TextView; 2] = [TextView::Raw, TextView::Sanitized];

fn view_index(view: TextView) -> usize {
    match view {
        TextView::Raw => 0,
        // Body views are tested value by value (`Test::Body`), never through a view's set.
        TextView::Sanitized | TextView::Body => 1,
    }
}

enum Test {
    /// A matcher on the error body: its regex over every value at its pointer (`anchored`:
    /// over the trimmed value, with a suffix bound for `prefix`), any one matching.
    Body {
        pointer: String,
        regex: Regex,
        anchored: Option<Option<(usize, usize)>>,
        group: Option<(u32, EvidenceField)>,
    },
    /// Pattern `pattern` of the view's set; with `where group N == field`, confirmed by captures.
    Set {
        view: usize,
        pattern: usize,
        group: Option<(u32, EvidenceField, Regex)>,
    },
    /// A `prefix`/`whole` matcher: an anchored regex over the trimmed text.
    Anchored {
        view: usize,
        regex: Regex,
        suffix: Option<Option<(usize, usize)>>,
    },
}

struct SetRule {
    id: String,
    guards: Guards,
    matchers: Vec<Test>,
    vetoes: Vec<Test>,
    capture: Option<(Regex, u32, usize)>,
}

/// Every rule in priority order, and every view's pattern list (deduplicated).
struct Plan {
    rules: Vec<SetRule>,
    patterns: [Vec<String>; 2],
}

fn escaped(literal: &str, ignore_case: bool) -> String {
    format!(
        "{}{}",
        if ignore_case { "(?i)" } else { "" },
        regex::escape(literal)
    )
}

impl Plan {
    fn new(catalogue: &Catalogue, priority: &Priority) -> Plan {
        let mut patterns: [Vec<String>; 2] = [Vec::new(), Vec::new()];
        let mut known: [HashMap<String, usize>; 2] = [HashMap::new(), HashMap::new()];
        let mut intern = |view: usize, pattern: String| -> usize {
            *known[view].entry(pattern.clone()).or_insert_with(|| {
                patterns[view].push(pattern);
                patterns[view].len() - 1
            })
        };
        let mut test = |matcher: &TextMatcher| -> Test {
            if let Some(pointer) = &matcher.pointer {
                let case = |ignore_case: bool| if ignore_case { "(?i)" } else { "" };
                let (pattern, anchored, group) = match &matcher.kind {
                    MatcherKind::Regex {
                        lowered,
                        group_equals,
                        ..
                    } => (lowered.clone(), None, *group_equals),
                    MatcherKind::Contains {
                        literal,
                        ignore_case,
                    } => (escaped(literal, *ignore_case), None, None),
                    MatcherKind::Prefix {
                        literal,
                        ignore_case,
                        suffix,
                    } => (
                        format!(r"{}\A{}", case(*ignore_case), regex::escape(literal)),
                        Some(*suffix),
                        None,
                    ),
                    MatcherKind::Whole {
                        literal,
                        ignore_case,
                    } => (
                        format!(r"{}\A{}\z", case(*ignore_case), regex::escape(literal)),
                        Some(None),
                        None,
                    ),
                };
                return Test::Body {
                    pointer: pointer.clone(),
                    regex: Regex::new(&pattern).unwrap(),
                    anchored,
                    group,
                };
            }
            let view = view_index(matcher.view);
            match &matcher.kind {
                MatcherKind::Regex {
                    lowered,
                    group_equals,
                    ..
                } => Test::Set {
                    view,
                    pattern: intern(view, lowered.clone()),
                    group: group_equals
                        .map(|(group, field)| (group, field, Regex::new(lowered).unwrap())),
                },
                MatcherKind::Contains {
                    literal,
                    ignore_case,
                } => Test::Set {
                    view,
                    pattern: intern(view, escaped(literal, *ignore_case)),
                    group: None,
                },
                MatcherKind::Prefix {
                    literal,
                    ignore_case,
                    suffix,
                } => Test::Anchored {
                    view,
                    regex: Regex::new(&format!(
                        r"{}\A{}",
                        if *ignore_case { "(?i)" } else { "" },
                        regex::escape(literal)
                    ))
                    .unwrap(),
                    suffix: Some(*suffix),
                },
                MatcherKind::Whole {
                    literal,
                    ignore_case,
                } => Test::Anchored {
                    view,
                    regex: Regex::new(&format!(
                        r"{}\A{}\z",
                        if *ignore_case { "(?i)" } else { "" },
                        regex::escape(literal)
                    ))
                    .unwrap(),
                    suffix: None,
                },
            }
        };
        let mut rules = Vec::new();
        for &index in priority.order() {
            let rule = &catalogue.rules[index.as_usize()];
            let matchers = rule.matchers.iter().map(&mut test).collect();
            let vetoes = rule.vetoes.iter().map(&mut test).collect();
            let capture = match &rule.remediation {
                Some(RemediationSpec::Capture {
                    lowered,
                    group,
                    view,
                    ..
                }) => Some((Regex::new(lowered).unwrap(), *group, view_index(*view))),
                _ => None,
            };
            rules.push(SetRule {
                id: rule.id.clone(),
                guards: rule.guards.clone(),
                matchers,
                vetoes,
                capture,
            });
        }
        Plan { rules, patterns }
    }

    /// The winner, given a scanner that reports, for one view's text, which of its patterns
    /// match. Each view is sanitized and scanned at most once, and only when a rule whose
    /// guards hold needs it.
    fn decide(&self, evidence: &Evidence, scan: &dyn Fn(usize, &str) -> Vec<bool>) -> Winner {
        let views = TextViews::new(evidence);
        let text = |view: usize| -> &str {
            if view == 0 {
                views.raw()
            } else {
                views.sanitized()
            }
        };
        let hits: [OnceCell<Vec<bool>>; 2] = [OnceCell::new(), OnceCell::new()];
        let holds = |test: &Test| -> bool {
            match test {
                Test::Body {
                    pointer,
                    regex,
                    anchored,
                    group,
                } => {
                    let values = evidence
                        .body
                        .as_ref()
                        .map(|body| body.select(pointer))
                        .unwrap_or_default();
                    values.iter().any(|value| match (anchored, group) {
                        (Some(suffix), _) => {
                            let trimmed = value.trim();
                            regex.find(trimmed).is_some_and(|found| {
                                let rest = trimmed[found.end()..].trim().len();
                                suffix.is_none_or(|(min, max)| min <= rest && rest <= max)
                            })
                        }
                        (None, None) => regex.is_match(value),
                        (None, Some((group, field))) => {
                            text_field(evidence, *field).is_some_and(|expected| {
                                regex.captures_iter(value).any(|captures| {
                                    captures
                                        .get(*group as usize)
                                        .is_some_and(|g| g.as_str() == expected)
                                })
                            })
                        }
                    })
                }
                Test::Set {
                    view,
                    pattern,
                    group,
                } => {
                    let hit = hits[*view].get_or_init(|| scan(*view, text(*view)))[*pattern];
                    match group {
                        None => hit,
                        Some((group, field, regex)) => {
                            hit && text_field(evidence, *field).is_some_and(|expected| {
                                regex.captures_iter(text(*view)).any(|captures| {
                                    captures
                                        .get(*group as usize)
                                        .is_some_and(|g| g.as_str() == expected)
                                })
                            })
                        }
                    }
                }
                Test::Anchored {
                    view,
                    regex,
                    suffix,
                } => {
                    let trimmed = text(*view).trim();
                    match suffix {
                        None => regex.is_match(trimmed),
                        Some(suffix) => regex.find(trimmed).is_some_and(|found| {
                            let rest = trimmed[found.end()..].trim().len();
                            suffix.is_none_or(|(min, max)| min <= rest && rest <= max)
                        }),
                    }
                }
            }
        };
        for rule in &self.rules {
            if !guards_hold(&rule.guards, evidence)
                || !rule.matchers.iter().all(holds)
                || rule.vetoes.iter().any(holds)
            {
                continue;
            }
            match &rule.capture {
                None => return Some((rule.id.clone(), None)),
                Some((regex, group, view)) => {
                    if let Some(value) = regex
                        .captures(text(*view))
                        .and_then(|c| c.get(*group as usize))
                        .filter(|value| !holds_credential(value.as_str()))
                    {
                        return Some((rule.id.clone(), Some(value.as_str().to_owned())));
                    }
                }
            }
        }
        None
    }
}

// ---------------------------------------------------------------------------------------------
// The engines.
// ---------------------------------------------------------------------------------------------

/// One `regex::RegexSet` per view over every pattern of that view.
struct RegexSetEngine {
    plan: Plan,
    sets: Vec<RegexSet>,
}

impl RegexSetEngine {
    fn new(plan: Plan) -> RegexSetEngine {
        let sets = plan
            .patterns
            .iter()
            // The default 10 MiB compiled-size limit no longer holds every pattern of a view in
            // one set; this engine is a yardstick, so it gets room.
            .map(|patterns| {
                RegexSetBuilder::new(patterns)
                    .size_limit(1 << 30)
                    .dfa_size_limit(1 << 30)
                    .build()
                    .unwrap()
            })
            .collect();
        RegexSetEngine { plan, sets }
    }

    fn classify(&self, evidence: &Evidence) -> Winner {
        self.plan.decide(evidence, &|view, text| {
            let set = &self.sets[view];
            let found = set.matches(text);
            (0..set.len()).map(|i| found.matched(i)).collect()
        })
    }

    /// The rejecting path as a `RegexSet` user would write it: redact, then ask whether any
    /// pattern matches at all (guards ignored, so it only over-approximates).
    fn any_match(&self, evidence: &Evidence) -> bool {
        let views = TextViews::new(evidence);
        self.sets[view_index(TextView::Raw)].is_match(views.raw())
            || self.sets[view_index(TextView::Sanitized)].is_match(views.sanitized())
    }
}

/// The rejecting path with one `regex::Regex` per pattern, tried in turn (the reference
/// interpreter's engine): redact, then stop at the first pattern that matches.
struct SequentialGate {
    regexes: [Vec<Regex>; 2],
}

impl SequentialGate {
    fn new(plan: &Plan) -> SequentialGate {
        let compile = |patterns: &Vec<String>| {
            patterns
                .iter()
                .map(|pattern| Regex::new(pattern).unwrap())
                .collect()
        };
        SequentialGate {
            regexes: [compile(&plan.patterns[0]), compile(&plan.patterns[1])],
        }
    }

    fn any_match(&self, evidence: &Evidence) -> bool {
        let views = TextViews::new(evidence);
        if self.regexes[view_index(TextView::Raw)]
            .iter()
            .any(|regex| regex.is_match(views.raw()))
        {
            return true;
        }
        self.regexes[view_index(TextView::Sanitized)]
            .iter()
            .any(|regex| regex.is_match(views.sanitized()))
    }
}

#[cfg(feature = "vectorscan")]
mod vectorscan {
    //! One Vectorscan block-mode database per view over every pattern of that view, each
    //! pattern reported once (`SINGLEMATCH`). The patterns are in the `regex` crate's syntax
    //! (`(?-u:\b)`, `\p{…}`, nested classes), which Vectorscan does not read, so each is parsed
    //! with `regex-syntax` and printed back from its HIR in the PCRE subset Vectorscan compiles
    //! (case folding and Perl classes are already explicit in the HIR, so the translation keeps
    //! the meaning exactly).
    //!
    //! Two constructs are not printed exactly, as a Vectorscan user would handle them: a counted
    //! repetition of more than [`LONGEST_EXACT_REPEAT`] items that can be several UTF-8 bytes
    //! long (the catalogue's bounded gaps, `[^\n]{0,400}`, `.{0,120}?`) is widened to an
    //! unbounded one, since Vectorscan expands it byte by byte per repetition and a union with a
    //! few of them never finished compiling (over 20 minutes); and a line anchor inside a pattern,
    //! which Vectorscan rejects, is left out when the exact pattern does not compile. Such a
    //! pattern is compiled in prefilter mode (`HS_FLAG_PREFILTER`: a match means the pattern may
    //! match) and every hit is confirmed by the pattern's `regex::Regex` over the same text,
    //! so the scan reports exactly the patterns that match. `HS_FLAG_PREFILTER` alone does not
    //! help (`[^\n]{0,512}` does not compile within 60 s in that mode either, the expansion
    //! comes before its reductions); widening does (both views' databases build in about 5 s).
    //! A pattern Vectorscan still cannot compile is matched by a `regex::Regex` in the same scan
    //! instead, and reported on standard error.

    use std::fmt::Write as _;
    use std::time::Instant;

    use hyperscan::Block;
    use hyperscan::prelude::*;
    use regex::Regex;
    use regex_syntax::hir::{Class, Hir, HirKind, Look};

    use super::{Evidence, Plan, VIEWS, Winner};

    struct ViewDb {
        database: Option<(BlockDatabase, Scratch)>,
        /// How many patterns the view has; a pattern's id in the database is its index.
        slots: usize,
        /// The patterns Vectorscan cannot compile, matched by their regex instead.
        fallback: Vec<(usize, Regex)>,
        /// Per pattern: the regex that confirms a hit of its widened translation, if widened.
        confirm: Vec<Option<Regex>>,
    }

    pub struct VectorscanEngine {
        plan: Plan,
        views: Vec<ViewDb>,
    }

    fn flags() -> CompileFlags {
        // `^`/`$` are printed only for the HIR's line anchors; text anchors print as `\A`/`\z`.
        CompileFlags::SINGLEMATCH | CompileFlags::UTF8 | CompileFlags::MULTILINE
    }

    fn char(out: &mut String, c: char) {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else {
            let _ = write!(out, "\\x{{{:X}}}", u32::from(c));
        }
    }

    /// A pattern in Vectorscan's syntax: the same language, or, when `widened`, a superset of it
    /// whose matches the exact `regex::Regex` must confirm.
    pub struct Translation {
        pub text: String,
        pub widened: bool,
        /// Print line anchors (`^`, `$`) as nothing: Vectorscan rejects a `^` inside a pattern
        /// ("Embedded start anchors not supported"), and an assertion left out only widens.
        drop_line_anchors: bool,
    }

    /// The longest counted repetition of a multi-byte item printed as it is. Under `UTF8`,
    /// Vectorscan expands a character class that spans several UTF-8 lengths into a byte
    /// automaton for every repetition, and its compile time grows steeply with the count:
    /// alone, `\bfoo\b[^\n]{0,16}\bbar\b` compiles in 10 ms, `{0,64}` in 0.2 s, `{0,128}` in
    /// 1.9 s, `{0,256}` in 19 s, `{0,512}` not within 60 s (in prefilter mode neither); a union
    /// holding a few such gaps never finishes. Longer counted repetitions are widened to
    /// unbounded ones (`X{0,400}` to `X*`, 10 ms) and the pattern is confirmed by its regex.
    pub const LONGEST_EXACT_REPEAT: u32 = 16;

    /// The pattern in Vectorscan's syntax, or why it has none; with `drop_line_anchors`, a
    /// superset without its line anchors.
    pub fn translate(pattern: &str, drop_line_anchors: bool) -> Result<Translation, String> {
        let hir = regex_syntax::parse(pattern).map_err(|e| e.to_string())?;
        let mut out = Translation {
            text: String::new(),
            widened: false,
            drop_line_anchors,
        };
        print(&hir, &mut out)?;
        Ok(out)
    }

    fn print(hir: &Hir, translation: &mut Translation) -> Result<(), String> {
        let out = &mut translation.text;
        match hir.kind() {
            HirKind::Empty => {}
            HirKind::Literal(literal) => {
                let text = std::str::from_utf8(&literal.0).map_err(|e| e.to_string())?;
                out.push_str("(?:");
                text.chars().for_each(|c| char(out, c));
                out.push(')');
            }
            HirKind::Class(Class::Unicode(class)) => {
                out.push('[');
                for range in class.ranges() {
                    char(out, range.start());
                    if range.end() != range.start() {
                        out.push('-');
                        char(out, range.end());
                    }
                }
                out.push(']');
            }
            HirKind::Class(Class::Bytes(class)) => {
                if !class.is_ascii() {
                    return Err("a non-ASCII byte class".to_owned());
                }
                out.push('[');
                for range in class.ranges() {
                    char(out, char::from(range.start()));
                    out.push('-');
                    char(out, char::from(range.end()));
                }
                out.push(']');
            }
            HirKind::Look(Look::StartLF | Look::EndLF) if translation.drop_line_anchors => {
                translation.widened = true;
            }
            HirKind::Look(look) => out.push_str(match look {
                Look::Start => "\\A",
                Look::End => "\\z",
                Look::StartLF => "^",
                Look::EndLF => "$",
                Look::WordAscii => "\\b",
                Look::WordAsciiNegate => "\\B",
                other => return Err(format!("look-around {other:?}")),
            }),
            HirKind::Repetition(repetition) => {
                out.push_str("(?:");
                print(&repetition.sub, translation)?;
                let out = &mut translation.text;
                out.push(')');
                // A single-byte item repeats in Vectorscan's bounded-repeat engine at any count.
                let single_byte = repetition.sub.properties().maximum_len() == Some(1);
                let max = match repetition.max {
                    Some(max) if max > LONGEST_EXACT_REPEAT && !single_byte => {
                        translation.widened = true;
                        None
                    }
                    max => max,
                };
                match (repetition.min, max) {
                    (0, None) => out.push('*'),
                    (1, None) => out.push('+'),
                    (0, Some(1)) => out.push('?'),
                    (min, None) => {
                        let _ = write!(out, "{{{min},}}");
                    }
                    (min, Some(max)) => {
                        let _ = write!(out, "{{{min},{max}}}");
                    }
                }
            }
            HirKind::Capture(capture) => {
                out.push_str("(?:");
                print(&capture.sub, translation)?;
                translation.text.push(')');
            }
            HirKind::Concat(parts) => {
                for part in parts {
                    print(part, translation)?;
                }
            }
            HirKind::Alternation(parts) => {
                out.push_str("(?:");
                for (index, part) in parts.iter().enumerate() {
                    if index > 0 {
                        translation.text.push('|');
                    }
                    print(part, translation)?;
                }
                translation.text.push(')');
            }
        }
        Ok(())
    }

    impl VectorscanEngine {
        pub fn new(plan: Plan) -> VectorscanEngine {
            let started = Instant::now();
            let mut views = Vec::new();
            for (view, patterns) in plan.patterns.iter().enumerate() {
                let mut compiled = Vec::new();
                let mut fallback = Vec::new();
                let mut confirm: Vec<Option<Regex>> = patterns.iter().map(|_| None).collect();
                for (index, pattern) in patterns.iter().enumerate() {
                    let build = |drop_line_anchors: bool| {
                        let translation = translate(pattern, drop_line_anchors)?;
                        let flags = if translation.widened {
                            flags() | CompileFlags::PREFILTER
                        } else {
                            flags()
                        };
                        let mut candidate = Pattern::with_flags(translation.text, flags)
                            .map_err(|e| e.to_string())?;
                        candidate.id = Some(index);
                        candidate
                            .build::<Block>()
                            .map(|_| (candidate, translation.widened))
                            .map_err(|e| e.to_string())
                    };
                    match build(false).or_else(|error| build(true).map_err(|_| error)) {
                        Ok((candidate, widened)) => {
                            if widened {
                                confirm[index] = Some(Regex::new(pattern).unwrap());
                            }
                            compiled.push(candidate);
                        }
                        Err(error) => {
                            eprintln!(
                                "vectorscan: {:?} pattern {index} `{pattern}` does not compile ({error}); it is matched with regex::Regex instead",
                                VIEWS[view]
                            );
                            fallback.push((index, Regex::new(pattern).unwrap()));
                        }
                    }
                }
                let database = if compiled.is_empty() {
                    None
                } else {
                    let database: BlockDatabase = Patterns(compiled).build().unwrap();
                    let scratch = database.alloc_scratch().unwrap();
                    Some((database, scratch))
                };
                views.push(ViewDb {
                    database,
                    slots: patterns.len(),
                    fallback,
                    confirm,
                });
            }
            let fallbacks: usize = views.iter().map(|v| v.fallback.len()).sum();
            let widened: usize = views
                .iter()
                .map(|v| v.confirm.iter().flatten().count())
                .sum();
            eprintln!(
                "vectorscan: {} patterns in {} databases, built in {:.1} s; {widened} widened and confirmed by regex::Regex, {fallbacks} matched by regex fallback",
                plan.patterns.iter().map(Vec::len).sum::<usize>(),
                views.iter().filter(|v| v.database.is_some()).count(),
                started.elapsed().as_secs_f64()
            );
            VectorscanEngine { plan, views }
        }

        /// The rejecting path with Vectorscan: redact, then scan until the first match.
        pub fn any_match(&self, evidence: &Evidence) -> bool {
            let views = super::TextViews::new(evidence);
            [views.raw(), views.sanitized()]
                .iter()
                .zip(&self.views)
                .any(|(text, db)| {
                    let mut found = false;
                    if let Some((database, scratch)) = &db.database {
                        let _ = database.scan(*text, scratch, |id, _, _, _| {
                            match &db.confirm[id as usize] {
                                Some(regex) if !regex.is_match(text) => Matching::Continue,
                                _ => {
                                    found = true;
                                    Matching::Terminate
                                }
                            }
                        });
                    }
                    found || db.fallback.iter().any(|(_, regex)| regex.is_match(text))
                })
        }

        /// Vectorscan, scanning a union of the catalogue's patterns, misses some matches its
        /// patterns make alone (seen with 904 patterns: a pattern that matches by itself, or
        /// beside any two others, is not reported in the full union, with or without
        /// `HS_FLAG_SINGLEMATCH`). Each pattern whose match `sets` (one `RegexSet` per view,
        /// over the same patterns) finds in one of `inputs` and the union misses is matched by
        /// its `regex::Regex` from then on, and reported on standard error, so every engine
        /// still reports the same matches.
        /// Only inputs on which Vectorscan's winner differs from `expected` are looked at.
        pub fn repair_misses(
            &mut self,
            sets: &[regex::RegexSet],
            inputs: &[Evidence],
            expected: impl Fn(&Evidence) -> Winner,
        ) {
            for input in inputs {
                if self.classify(input) == expected(input) {
                    continue;
                }
                let views = super::TextViews::new(input);
                for (view, text) in [views.raw(), views.sanitized()].into_iter().enumerate() {
                    let found = sets[view].matches(text);
                    let hits = self.hits(view, text);
                    for index in found.iter().filter(|&index| !hits[index]) {
                        let pattern = &self.plan.patterns[view][index];
                        eprintln!(
                            "vectorscan: {:?} pattern {index} matches alone but not in the union; it is matched with regex::Regex instead: `{pattern}`",
                            VIEWS[view]
                        );
                        self.views[view]
                            .fallback
                            .push((index, Regex::new(pattern).unwrap()));
                    }
                }
            }
        }

        pub fn classify(&self, evidence: &Evidence) -> Winner {
            self.plan
                .decide(evidence, &|view, text| self.hits(view, text))
        }

        fn hits(&self, view: usize, text: &str) -> Vec<bool> {
            let db = &self.views[view];
            let mut hits = vec![false; db.slots];
            if let Some((database, scratch)) = &db.database {
                database
                    .scan(text, scratch, |id, _, _, _| {
                        hits[id as usize] = true;
                        Matching::Continue
                    })
                    .unwrap();
            }
            for (hit, confirm) in hits.iter_mut().zip(&db.confirm) {
                if let (true, Some(regex)) = (*hit, confirm) {
                    *hit = regex.is_match(text);
                }
            }
            for (index, regex) in &db.fallback {
                hits[*index] = regex.is_match(text);
            }
            hits
        }
    }
}

/// Each long text: faultline's classification against Vectorscan's (both read the text views:
/// the last MiB of the text, and its redaction), and the redaction of the text rules read.
/// The reference interpreter and the `RegexSet` engine are left out: they take seconds per
/// text, and their agreement is checked, once, before anything is timed.
fn bench_long_texts(c: &mut Criterion, engines: &Engines, inputs: &[(&'static str, Evidence)]) {
    for (name, input) in inputs {
        let mut runs: Vec<Run<'_>> = vec![(
            "faultline",
            Box::new(|input| {
                black_box(engines.bundle.classify(input));
            }),
        )];
        #[cfg(feature = "vectorscan")]
        runs.push((
            "vectorscan",
            Box::new(|input| {
                black_box(engines.vectorscan.classify(input));
            }),
        ));
        runs.push((
            "sanitize_only",
            Box::new(|input| {
                black_box(TextViews::new(input).into_sanitized());
            }),
        ));
        bench_group(c, name, std::slice::from_ref(input), runs);
    }
}

// ---------------------------------------------------------------------------------------------
// The run.
// ---------------------------------------------------------------------------------------------

struct Engines {
    bundle: Bundle,
    reference: Reference,
    sequential_gate: SequentialGate,
    regexset: RegexSetEngine,
    #[cfg(feature = "vectorscan")]
    vectorscan: vectorscan::VectorscanEngine,
    /// Another catalogue compiled by the same compiler, timed beside the repository's: how
    /// throughput changed as the catalogue grew (`FAULTLINE_BENCH_BASELINE`).
    baseline: Option<Bundle>,
}

/// The root `.rules` file of a catalogue to time beside the repository's, for example the
/// catalogue before a change (`git archive <commit> catalogue | tar -x -C /tmp/before`, then
/// `FAULTLINE_BENCH_BASELINE=/tmp/before/catalogue/catalogue.rules`).
const BASELINE: &str = "FAULTLINE_BENCH_BASELINE";

/// Set (to anything) to leave the `RegexSet` engine out of the agreement check and the timings.
/// Over the catalogue's 1,500 patterns its overlapping search runs in the Pike VM: checking its
/// agreement on the fixture texts alone takes most of an hour on a two-core machine. Its sets
/// are still built, to repair Vectorscan's missed matches.
const WITHOUT_REGEXSET: &str = "FAULTLINE_BENCH_WITHOUT_REGEXSET";

/// Whether the `RegexSet` engine takes part in this run ([`WITHOUT_REGEXSET`]).
fn with_regexset() -> bool {
    std::env::var_os(WITHOUT_REGEXSET).is_none()
}

fn engines() -> Engines {
    let compilation: Compilation = faultline_testkit::compile(faultline_testkit::CATALOGUE_ROOT);
    let bundle = faultline_testkit::bundle_of(&compilation);
    let priority = compilation.priority.as_ref().unwrap();
    let reference = Reference::new(&compilation.catalogue, priority).unwrap();
    let plan = || Plan::new(&compilation.catalogue, priority);
    Engines {
        bundle,
        reference,
        sequential_gate: SequentialGate::new(&plan()),
        regexset: RegexSetEngine::new(plan()),
        #[cfg(feature = "vectorscan")]
        vectorscan: vectorscan::VectorscanEngine::new(plan()),
        baseline: std::env::var(BASELINE).ok().map(|root_file| {
            let baseline = faultline_testkit::compile(&root_file);
            eprintln!(
                "baseline catalogue `{root_file}`: {} rules (the repository's: {})",
                baseline.catalogue.rules.len(),
                compilation.catalogue.rules.len()
            );
            faultline_testkit::bundle_of(&baseline)
        }),
    }
}

/// Every engine's winner on every input, checked against the reference before anything is timed.
fn assert_agreement(engines: &Engines, set: &str, inputs: &[Evidence]) {
    let mut winners: HashMap<String, usize> = HashMap::new();
    for (index, input) in inputs.iter().enumerate() {
        let expected = engines.reference.classify(input);
        let bundle = engines.bundle.classify(input).rule;
        let mut engines_said: Vec<(&str, Option<String>, Winner)> = vec![(
            "faultline",
            Some(bundle),
            expected.clone(), // the bundle's remediation also holds tokens; compare the rule
        )];
        if with_regexset() {
            engines_said.push(("regexset", None, engines.regexset.classify(input)));
        }
        #[cfg(feature = "vectorscan")]
        engines_said.push(("vectorscan", None, engines.vectorscan.classify(input)));
        for (engine, rule, winner) in engines_said {
            let agrees = match &rule {
                Some(rule) => expected.as_ref().map(|(id, _)| id) == Some(rule),
                None => winner == expected,
            };
            assert!(
                agrees,
                "{set} input {index}: {engine} disagrees with the reference ({engine}: {}, reference: {expected:?})\n{}",
                rule.unwrap_or_else(|| format!("{winner:?}")),
                serde_json::to_string(input).unwrap_or_default()
            );
        }
        let rule = expected.map_or_else(|| "(none)".to_owned(), |(id, _)| id);
        *winners.entry(rule).or_default() += 1;
    }
    let mut winners: Vec<_> = winners.into_iter().collect();
    winners.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let shown: Vec<String> = winners
        .iter()
        .take(6)
        .map(|(rule, count)| format!("{rule} ×{count}"))
        .collect();
    eprintln!(
        "{set}: {} inputs, {} bytes of text; every engine agrees on every winner ({} distinct: {}{})",
        inputs.len(),
        text_bytes(inputs),
        winners.len(),
        shown.join(", "),
        if winners.len() > 6 { ", …" } else { "" }
    );
}

const ENGINES: &[&str] = &[
    "faultline",
    "reference",
    "regexset",
    #[cfg(feature = "vectorscan")]
    "vectorscan",
    "sanitize_only",
    "faultline_baseline",
];

/// One engine under test: its name and what it does with one input.
type Run<'a> = (&'static str, Box<dyn Fn(&Evidence) + 'a>);

/// Times every run on every input of one set, as one criterion group.
fn bench_group(c: &mut Criterion, group_name: &str, inputs: &[Evidence], runs: Vec<Run<'_>>) {
    let mut group = c.benchmark_group(group_name);
    group.throughput(Throughput::Bytes(text_bytes(inputs)));
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    for (name, run) in &runs {
        group.bench_function(*name, |b| {
            b.iter(|| {
                for input in inputs {
                    run(black_box(input));
                }
            })
        });
    }
    group.finish();
}

fn bench_set(c: &mut Criterion, engines: &Engines, group_name: &str, inputs: &[Evidence]) {
    let mut runs: Vec<Run<'_>> = vec![
        (
            "faultline",
            Box::new(|input| {
                black_box(engines.bundle.classify(input));
            }),
        ),
        (
            "reference",
            Box::new(|input| {
                black_box(engines.reference.classify(input));
            }),
        ),
        (
            "regexset",
            Box::new(|input| {
                black_box(engines.regexset.classify(input));
            }),
        ),
    ];
    runs.retain(|(engine, _)| *engine != "regexset" || with_regexset());
    #[cfg(feature = "vectorscan")]
    runs.push((
        "vectorscan",
        Box::new(|input| {
            black_box(engines.vectorscan.classify(input));
        }),
    ));
    if let Some(baseline) = &engines.baseline {
        runs.push((
            "faultline_baseline",
            Box::new(|input| {
                black_box(baseline.classify(input));
            }),
        ));
    }
    // Not an engine: what the diagnostic-tier redaction alone costs on the same inputs (every
    // engine applies it, since rules read the sanitized text; faultline's excerpt is it).
    runs.push((
        "sanitize_only",
        Box::new(|input| {
            black_box(TextViews::new(input).into_sanitized());
        }),
    ));
    bench_group(c, group_name, inputs, runs);
}

/// The names of the runs of a `redaction_*` group.
const REDACTION_RUNS: [&str; 3] = ["redaction_new", "redaction_reference", "trigger_scan"];

/// The diagnostic tier alone on one input set: now, before the trigger prefilter, and the
/// trigger scan alone. Each reads the text rules read (the raw view); the new redaction keeps
/// the sanitized view borrowed when it changes nothing, as classification does.
fn bench_redaction(c: &mut Criterion, group_name: &str, inputs: &[Evidence]) {
    for input in inputs {
        let views = TextViews::new(input);
        assert_eq!(
            views.sanitized(),
            redaction_reference::diagnostic_unbounded(views.raw()),
            "the redaction differs from its reference"
        );
    }
    let runs: Vec<Run<'_>> = vec![
        (
            REDACTION_RUNS[0],
            Box::new(|input| {
                black_box(TextViews::new(input).sanitized().len());
            }),
        ),
        (
            REDACTION_RUNS[1],
            Box::new(|input| {
                black_box(redaction_reference::diagnostic_unbounded(
                    TextViews::new(input).raw(),
                ));
            }),
        ),
        (
            REDACTION_RUNS[2],
            Box::new(|input| {
                black_box(redaction_triggers::scan(
                    TextViews::new(input).raw(),
                    redaction_triggers::Triggers::ALL,
                ));
            }),
        ),
    ];
    bench_group(c, group_name, inputs, runs);
}

/// The rejecting path: how fast each engine turns away ordinary output. faultline answers with
/// its gate (`Bundle::may_classify`: structured guards and the rules' required literals over the
/// raw text, sound without redaction because the compiler proves every gated rule needs one of
/// its literals); the others can only answer soundly after redacting the text, then asking
/// whether any pattern matches at all.
fn bench_rejecting(c: &mut Criterion, engines: &Engines, inputs: &[Evidence]) {
    let mut runs: Vec<Run<'_>> = vec![
        (
            "faultline",
            Box::new(|input| {
                black_box(engines.bundle.may_classify(input));
            }),
        ),
        (
            "reference",
            Box::new(|input| {
                black_box(engines.sequential_gate.any_match(input));
            }),
        ),
        (
            "regexset",
            Box::new(|input| {
                black_box(engines.regexset.any_match(input));
            }),
        ),
        #[cfg(feature = "vectorscan")]
        (
            "vectorscan",
            Box::new(|input| {
                black_box(engines.vectorscan.any_match(input));
            }),
        ),
    ];
    runs.retain(|(engine, _)| *engine != "regexset" || with_regexset());
    if let Some(baseline) = &engines.baseline {
        runs.push((
            "faultline_baseline",
            Box::new(|input| {
                black_box(baseline.may_classify(input));
            }),
        ));
    }
    bench_group(c, "reject_prose", inputs, runs);
}

fn main() {
    let started = SystemTime::now();
    #[cfg_attr(
        not(feature = "vectorscan"),
        allow(unused_mut, reason = "only the Vectorscan engine is repaired in place")
    )]
    let mut engines = engines();
    let (prose, prose_origin) = prose_chunks();
    eprintln!("prose chunks: {prose_origin}");
    let errors = error_messages();
    let blobs = stderr_blobs(&errors);
    let sets: [(&str, &[Evidence]); 3] = [
        ("classify_prose", &prose),
        ("classify_errors", &errors),
        ("classify_stderr_4k", &blobs),
    ];
    #[cfg(feature = "vectorscan")]
    for (_, inputs) in sets {
        engines
            .vectorscan
            .repair_misses(&engines.regexset.sets, inputs, |input| {
                engines.reference.classify(input)
            });
    }
    for (name, inputs) in sets {
        assert_agreement(&engines, name, inputs);
    }
    // The gate is sound on every prose chunk: a rejected chunk classifies low-confidence.
    let rejected = prose
        .iter()
        .filter(|input| !engines.bundle.may_classify(input))
        .inspect(|input| {
            assert_eq!(
                engines.bundle.classify(input).confidence,
                faultline_runtime::Confidence::Low
            );
        })
        .count();
    eprintln!(
        "reject_prose: the gate rejects {rejected} of {} prose chunks without redaction",
        prose.len()
    );
    let mut criterion = Criterion::default().configure_from_args();
    bench_rejecting(&mut criterion, &engines, &prose);
    for (name, inputs) in sets {
        bench_set(&mut criterion, &engines, name, inputs);
    }
    let redaction_sets: [(&str, &[Evidence]); 3] = [
        ("redaction_prose", &prose),
        ("redaction_errors", &errors),
        ("redaction_stderr_4k", &blobs),
    ];
    for (name, inputs) in redaction_sets {
        bench_redaction(&mut criterion, name, inputs);
    }
    let long = long_texts(&errors);
    #[cfg(feature = "vectorscan")]
    for (_, input) in &long {
        engines.vectorscan.repair_misses(
            &engines.regexset.sets,
            std::slice::from_ref(input),
            |input| engines.reference.classify(input),
        );
    }
    for (name, input) in &long {
        assert_agreement(&engines, name, std::slice::from_ref(input));
    }
    bench_long_texts(&mut criterion, &engines, &long);
    criterion.final_summary();

    // The closing table: per set and engine, the median per classification and the throughput.
    let mut table = String::from(
        "\n| input set | engine | ns/classification | MB/s | × faultline time |\n|---|---|---:|---:|---:|\n",
    );
    let rejecting: [(&str, &[Evidence]); 1] = [("reject_prose", &prose)];
    let long_sets: Vec<(&str, &[Evidence])> = long
        .iter()
        .map(|(name, input)| (*name, std::slice::from_ref(input)))
        .collect();
    for (name, inputs) in rejecting.into_iter().chain(sets).chain(long_sets) {
        let bytes = text_bytes(inputs) as f64;
        let ours = median(name, "faultline", started);
        for engine in ENGINES {
            let Some(ns) = median(name, engine, started) else {
                continue;
            };
            table.push_str(&format!(
                "| {name} ({} inputs, {:.0} B avg) | {engine} | {:.0} | {:.1} | {} |\n",
                inputs.len(),
                bytes / inputs.len() as f64,
                ns / inputs.len() as f64,
                bytes / ns * 1e3,
                ours.map_or("".to_owned(), |ours| format!("{:.2}", ns / ours)),
            ));
        }
    }
    eprintln!("{table}");

    // The redaction alone: medians per text, and how the new one compares.
    let mut table = String::from(
        "\n| input set | redaction_new ns | redaction_reference ns | trigger_scan ns | new / reference | new / scan |\n|---|---:|---:|---:|---:|---:|\n",
    );
    for (name, inputs) in redaction_sets {
        let per_text = |run: &str| median(name, run, started).map(|ns| ns / inputs.len() as f64);
        let [new, old, scan] = REDACTION_RUNS.map(per_text);
        let (Some(new), Some(old), Some(scan)) = (new, old, scan) else {
            continue;
        };
        table.push_str(&format!(
            "| {name} ({} inputs) | {new:.0} | {old:.0} | {scan:.0} | {:.3} | {:.2} |\n",
            inputs.len(),
            new / old,
            new / scan,
        ));
    }
    eprintln!("{table}");
}
