//! Compiled rule bundles: the file format, its validated loader, read-only views of what a
//! bundle holds, and classification.
//!
//! A bundle is untrusted input. [`Bundle::from_bytes`] checks the framing (magic, versions, a
//! content hash over every other byte of the file, endianness, header, section table), decodes
//! the catalogue model and validates every index in it, deserializes every DFA with
//! regex-automata's checked deserializer, and compiles the exact patterns; any failure is a
//! typed [`LoadError`], never a panic.
//!
//! - `wire`: the file format and its reader; `write` (feature `bundle-writer`): its writer.
//! - `model`: the catalogue as a bundle carries it (private: the compiler reaches it through
//!   `crate::build`).
//! - `validate`: the loader's checks of the model and the automata.
//! - `view`: the read-only views callers read instead of the model.
//! - `prefilter`, `classify`, `trace`: classification (the literal gate, the rule walk, and
//!   what a traced classification records).

mod automata;
mod classify;
mod error;
mod lazy_regex;
pub(crate) use lazy_regex::build as build_regex;
mod literal_table;
pub(crate) mod model;
mod prefilter;
mod syntax_screen;
mod trace;
mod validate;
mod view;
pub(crate) mod wire;
#[cfg(feature = "bundle-writer")]
pub(crate) mod write;

use std::collections::HashMap;
use std::time::SystemTime;

pub use error::{LoadError, LoadErrorKind};
use model::CatalogueModel;
pub use trace::{Step, Trace};
pub use view::{
    AutomatonView, HeaderView, MatcherKind, MatcherView, PatternView, RulePosition, RuleView,
};
use wire::Header;

use crate::policy::RecoveryPolicy;
use crate::sanitize::REDACTION_VERSION;
use crate::vocab::Class;

/// Size limit, in bytes, of the compiled program of every regex a bundle's patterns are
/// compiled to, on first use (exact confirmation of widened patterns, captures, case-folded
/// literals). The compiler checks every pattern against it (FL0109), so every regex of a
/// bundle it accepts compiles.
pub const REGEX_SIZE_LIMIT: usize = 10 << 20;

/// Size limit, in bytes, of the lazy DFA cache of each such regex. A cache grows only as a
/// regex's searches need states, and is cleared and rebuilt when full; after a few clears that
/// gained little the `regex` crate gives the search to its slower NFA engines. The catalogue's
/// widest rules (the generic HTTP 400, 401 and 429 client lines, dozens of clients' status lines
/// under `(?i)` with bounded gaps, and the "says/returns … error" prose vetoes of `(?m)^[^\n]*`
/// form) need more than 4 MiB on ordinary error messages, the largest more than 16 MiB: at 4 MiB
/// rebuilding their states was 29% of the instructions of classifying every fixture (callgrind,
/// 758 rules). At 32 MiB none is cleared on those inputs, classifying them takes 44% fewer
/// instructions, and peak memory of `faultline classify --jobs 2` over 5,000 shuffled 4 KiB
/// error blobs rose 4% (279 to 291 MB). The cache stays a bound, not an allocation: a regex that
/// never needs the room never takes it.
pub const REGEX_DFA_SIZE_LIMIT: usize = 32 << 20;

/// A loaded, validated bundle, ready to classify. `Send + Sync`: share one per process.
#[derive(Debug)]
pub struct Bundle {
    header: Header,
    model: CatalogueModel,
    engine: classify::Engine,
    positions: HashMap<String, RulePosition>,
    policy: RecoveryPolicy,
}

// An orchestrator loads one bundle and shares it between threads: that must stay possible.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Bundle>();
};

/// A bundle's sections by role.
struct Sections<'a> {
    model: &'a [u8],
    dfas: Vec<&'a [u8]>,
    /// Empty when the bundle carries none (and in formats before 9).
    literal_table: &'a [u8],
}

impl<'a> Sections<'a> {
    fn of(raw: &wire::RawBundle<'a>) -> Result<Sections<'a>, LoadError> {
        let (model, other_sections) = raw
            .sections
            .split_first()
            .ok_or_else(|| LoadError::malformed("no sections"))?;
        // Format 9 ends with the prefilter's literal table; the DFAs lie between.
        let (dfas, literal_table) = if raw.header.format_version >= 9 {
            let (table, dfas) = other_sections
                .split_last()
                .ok_or_else(|| LoadError::malformed("no literal table section"))?;
            (dfas, *table)
        } else {
            (other_sections, &[][..])
        };
        Ok(Sections {
            model,
            dfas: dfas.to_vec(),
            literal_table,
        })
    }
}

/// What a load makes of a bundle's bytes besides its hash and literal table.
struct Interpreted {
    model: CatalogueModel,
    policy: RecoveryPolicy,
    automata: automata::Automata,
    prepared: classify::Prepared,
}

/// Decodes and validates the catalogue model (of `format_version`), its policy and the
/// automata, and prepares what of the engine needs only them (the patterns' syntax checked).
fn interpret(
    model_bytes: &[u8],
    dfa_sections: &[&[u8]],
    format_version: u16,
) -> Result<Interpreted, LoadError> {
    let model: CatalogueModel = match format_version {
        3 => postcard::from_bytes::<model::CatalogueModelV3>(model_bytes).map(CatalogueModel::from),
        4 => postcard::from_bytes::<model::CatalogueModelV4>(model_bytes).map(CatalogueModel::from),
        5 => postcard::from_bytes::<model::CatalogueModelV5>(model_bytes).map(CatalogueModel::from),
        6 => postcard::from_bytes::<model::CatalogueModelV6>(model_bytes).map(CatalogueModel::from),
        7 => postcard::from_bytes::<model::CatalogueModelV7>(model_bytes).map(CatalogueModel::from),
        _ => postcard::from_bytes(model_bytes),
    }
    .map_err(|error| LoadError::malformed(format!("catalogue model: {error}")))?;
    // A bundle without a policy (an older format, or a catalogue without a `policy` block)
    // gets the reference's defaults; a policy it carries must be valid.
    let policy = model
        .policy
        .clone()
        .unwrap_or_else(RecoveryPolicy::reference);
    policy
        .validate()
        .map_err(|error| LoadError::malformed(error.to_string()))?;
    if model.redaction_version != REDACTION_VERSION {
        return Err(error::Repr::RedactionVersion {
            bundle: model.redaction_version,
            runtime: REDACTION_VERSION,
        }
        .into());
    }
    let automata = automata::Automata::load(dfa_sections)?;
    validate::validate_model(&model, automata.all())?;
    let prepared = classify::Prepared::of(&model)?;
    Ok(Interpreted {
        model,
        policy,
        automata,
        prepared,
    })
}

impl Bundle {
    /// Loads a bundle, validating everything.
    ///
    /// Checking the content hash and reading the prefilter's literal table (together most of a
    /// load) need only the bundle's bytes, so a second thread does them while this one decodes
    /// and validates the catalogue model, the automata and the patterns' syntax; where no thread
    /// can be started, all of it happens here. What is reported is what checking in order would
    /// report: a hash mismatch wins over every error found meanwhile.
    pub fn from_bytes(bytes: &[u8]) -> Result<Bundle, LoadError> {
        let prefix = wire::read_prefix(bytes)?;
        // The framing is read before the threads start; an error in it is reported only once
        // the hash is known to hold (otherwise the mismatch is).
        let framed = wire::read_framing(bytes, &prefix).and_then(|raw| {
            let sections = Sections::of(&raw)?;
            Ok((raw.header, sections))
        });
        let (header, sections) = match framed {
            Ok(framed) => framed,
            Err(error) => {
                wire::verify_hash(bytes, &prefix)?;
                return Err(error);
            }
        };
        let Sections {
            model: model_bytes,
            dfas: dfa_sections,
            literal_table,
        } = sections;
        let integrity = || {
            wire::verify_hash(bytes, &prefix)?;
            literal_table::LiteralTable::from_bytes(literal_table)
        };
        let (interpreted, table) = std::thread::scope(|scope| {
            let spawned = std::thread::Builder::new()
                .name("faultline-bundle-load".to_owned())
                .spawn_scoped(scope, integrity);
            let interpreted = interpret(model_bytes, &dfa_sections, header.format_version);
            let table = match spawned {
                Ok(checking) => checking.join().unwrap_or_else(|_| {
                    Err(LoadError::malformed("checking the bundle's hash failed"))
                }),
                Err(_) => integrity(),
            };
            (interpreted, table)
        });
        let table = match table {
            Err(error) if error.kind() == LoadErrorKind::HashMismatch => return Err(error),
            table => table,
        };
        let Interpreted {
            model,
            policy,
            automata,
            prepared,
        } = interpreted?;
        let engine = classify::Engine::new(&model, automata, prepared, table?)?;
        let positions = model
            .rules
            .iter()
            .enumerate()
            .map(|(index, rule)| (rule.id.clone(), RulePosition::from_index(index)))
            .collect();
        Ok(Bundle {
            header,
            model,
            engine,
            positions,
            policy,
        })
    }

    /// The catalogue's recovery policy, validated when the bundle loaded.
    pub fn policy(&self) -> &RecoveryPolicy {
        &self.policy
    }

    /// The class the catalogue gives `code`: `unclassified` for a code it does not declare
    /// (reference §G.4: an unknown code fails closed).
    pub fn class_of(&self, code: &str) -> Class {
        self.model
            .codes
            .iter()
            .find(|entry| entry.name == code)
            .map_or(Class::Unclassified, |entry| entry.class)
    }

    /// The header: versions, catalogue, hashes.
    pub fn header(&self) -> HeaderView<'_> {
        HeaderView {
            header: &self.header,
            redaction_version: &self.model.redaction_version,
        }
    }

    /// The rules, in effective priority order (the first that fires wins).
    pub fn rules(&self) -> impl ExactSizeIterator<Item = RuleView<'_>> + '_ {
        self.model
            .rules
            .iter()
            .enumerate()
            .map(|(index, rule)| RuleView {
                model: &self.model,
                rule,
                position: RulePosition::from_index(index),
            })
    }

    /// The rule at `position`.
    pub fn rule(&self, position: RulePosition) -> Option<RuleView<'_>> {
        let rule = self.model.rules.get(position.as_usize())?;
        Some(RuleView {
            model: &self.model,
            rule,
            position,
        })
    }

    /// The position of a rule in priority order, by id.
    pub fn rule_position(&self, id: &str) -> Option<RulePosition> {
        self.positions.get(id).copied()
    }

    /// What one rule, alone, does on `evidence` (whether or not it would win); `None` when no
    /// rule has that position.
    pub fn rule_step(&self, position: RulePosition, evidence: &crate::Evidence) -> Option<Step> {
        self.engine
            .fires(&self.model, position.as_usize(), evidence)
    }

    /// Gives the bundle's regexes the compiled forms `compiled` knows (see
    /// [`crate::build::adopt_regexes`]).
    pub(crate) fn adopt_regexes(&self, compiled: &mut dyn FnMut(&str) -> Option<regex::Regex>) {
        self.engine.adopt_regexes(compiled);
    }

    /// How many codes the catalogue declares.
    pub fn code_count(&self) -> usize {
        self.model.codes.len()
    }

    /// The prefilter's literals (ASCII-lowercase): a gated rule fires only on text holding one
    /// of its literals, compared ASCII-case-insensitively.
    pub fn prefilter_literals(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.model
            .literals
            .iter()
            .map(|literal| literal.literal.as_str())
    }

    /// Bytes of memory of the prefilter's literal table, read from the bundle (format 9) and
    /// checked at load; `None` when the bundle carried none (no literals, or an older format)
    /// and the automaton was built at load.
    pub fn prefilter_table_bytes(&self) -> Option<usize> {
        self.engine.literal_table_bytes()
    }

    /// The automata, per text view in order, with their sizes.
    pub fn automata(&self) -> impl Iterator<Item = AutomatonView> + '_ {
        self.model.views.iter().flat_map(move |view| {
            view.dfas.iter().enumerate().map(move |(index, dfa)| {
                let approximate_patterns = view
                    .patterns
                    .iter()
                    .filter(|pattern| {
                        pattern.approximate
                            && pattern.dfa.is_some_and(|slot| slot.dfa as usize == index)
                    })
                    .count();
                AutomatonView {
                    view: view.view,
                    index,
                    pattern_count: dfa.pattern_count as usize,
                    approximate_patterns,
                    memory_bytes: self.engine.automaton_memory(dfa.section),
                }
            })
        })
    }

    /// Whether a rule that is not low-confidence could fire on `evidence` or on one of its
    /// unwrapped readings ([`Bundle::classify`] reads them): the cheap gate for
    /// hot paths such as deciding the diagnostic marker of every streamed chunk. `false` means
    /// [`Bundle::classify`] would certainly answer with a low-confidence rule (the phase
    /// fallback of the shipped catalogue), so the caller may skip it; `true` means it might
    /// not. It reads the structured guards and scans the raw view (the text's matched tail)
    /// once for the rules' required literals, without redacting the text or running an
    /// automaton.
    pub fn may_classify(&self, evidence: &crate::Evidence) -> bool {
        if self.engine.may_classify(&self.model, evidence) {
            return true;
        }
        // A reading that unescapes JSON log records, or writes a pretty-printed JSON value
        // compactly, may hold a literal the text does not.
        if evidence.may_be_rewritten()
            && crate::Unwrapping::ALL.iter().any(|unwrapping| {
                unwrapping.rewrites_text()
                    && evidence
                        .unwrapped(*unwrapping)
                        .is_some_and(|reading| self.engine.may_classify(&self.model, &reading))
            })
        {
            return true;
        }
        // An unwrapped reading only cuts each line down, so a literal it holds that the text
        // as given does not must span a line break; when no literal holds one (the usual
        // case), the readings need no look of their own.
        self.engine.literals_span_lines()
            && crate::Unwrapping::ALL.iter().any(|unwrapping| {
                !unwrapping.rewrites_text()
                    && evidence
                        .unwrapped(*unwrapping)
                        .is_some_and(|reading| self.engine.may_classify(&self.model, &reading))
            })
    }

    /// Classifies one piece of evidence by the system clock. Always returns a classification.
    pub fn classify(&self, evidence: &crate::Evidence) -> crate::Classification {
        self.classify_at(evidence, SystemTime::now())
    }

    /// Classifies one piece of evidence with the clock fixed at `now`, which timing hints are
    /// validated against (reproducible results). Always returns a classification.
    pub fn classify_at(
        &self,
        evidence: &crate::Evidence,
        now: SystemTime,
    ) -> crate::Classification {
        let (mut classification, winner, reading) = self.classify_text(evidence, None);
        let read = reading.as_ref().unwrap_or(evidence);
        self.attach_timing(&mut classification, winner, read, now, None);
        classification
    }

    /// The rule walk over `evidence`, then, when a rule of low confidence won, over each of its
    /// unwrapped readings ([`Evidence::unwrapped`]) that the prefilter admits, in order: the
    /// first whose winner is above low confidence answers, with the reading it was found in.
    /// The trace, when asked for, is the walk that answered.
    fn classify_text(
        &self,
        evidence: &crate::Evidence,
        mut trace: Option<&mut Trace>,
    ) -> (
        crate::Classification,
        Option<usize>,
        Option<crate::Evidence>,
    ) {
        let version = &self.header.catalogue_version;
        let first = self
            .engine
            .classify(&self.model, version, evidence, trace.as_deref_mut());
        let (classification, winner) = (first.classification, first.winner);
        // A reading only cuts the text's lines down: when no rule above low confidence got
        // past the prefilter on the text as given, none can on a reading, unless a literal
        // holds a line break (see `may_classify`). Most ordinary text ends here.
        // A reading that rewrites text (unescaping JSON log records, compacting pretty-printed
        // JSON) may hold literals the text does not, and is tried whenever it exists.
        let cut_down_can_win = first.above_low_admitted || self.engine.literals_span_lines();
        if classification.confidence != crate::Confidence::Low
            || !(cut_down_can_win || evidence.may_be_rewritten())
        {
            return (classification, winner, None);
        }
        // Readings already walked or refused by the gate: two readings may cut a text alike.
        let mut tried: Vec<crate::Evidence> = Vec::new();
        for unwrapping in crate::Unwrapping::ALL {
            if !cut_down_can_win && !unwrapping.rewrites_text() {
                continue;
            }
            let Some(reading) = evidence.unwrapped(unwrapping) else {
                continue;
            };
            if tried.contains(&reading) {
                continue;
            }
            let answered = match trace.as_deref_mut() {
                // A trace records the reading's whole walk, as `faultline explain` shows it.
                Some(trace) if self.engine.may_classify(&self.model, &reading) => {
                    let mut reread = Trace::default();
                    let walked =
                        self.engine
                            .classify(&self.model, version, &reading, Some(&mut reread));
                    (walked.classification.confidence != crate::Confidence::Low).then(|| {
                        reread.unwrapped = Some(unwrapping);
                        *trace = reread;
                        walked
                    })
                }
                Some(_) => None,
                None => self.engine.classify_reading(&self.model, version, &reading),
            };
            if let Some(walked) = answered {
                return (walked.classification, walked.winner, Some(reading));
            }
            tried.push(reading);
        }
        (classification, winner, None)
    }

    /// Classifies as [`Bundle::classify_at`] and records, for every rule in priority order,
    /// whether it fired and if not why (a guard, the prefilter, a matcher, a veto), and every
    /// source of a reset time consulted.
    pub fn classify_traced(
        &self,
        evidence: &crate::Evidence,
        now: SystemTime,
    ) -> (crate::Classification, Trace) {
        let mut trace = Trace::default();
        let (mut classification, winner, reading) = self.classify_text(evidence, Some(&mut trace));
        self.attach_timing(
            &mut classification,
            winner,
            reading.as_ref().unwrap_or(evidence),
            now,
            Some(&mut trace.timing),
        );
        (classification, trace)
    }

    /// The timing stage: a structured reset time if valid, else the winning rule's extractors.
    fn attach_timing(
        &self,
        classification: &mut crate::Classification,
        winner: Option<usize>,
        evidence: &crate::Evidence,
        now: SystemTime,
        steps: Option<&mut Vec<crate::timing::HintStep>>,
    ) {
        let rule = winner.and_then(|position| self.model.rules.get(position));
        let extractors = rule.map(|rule| rule.timing.as_slice()).unwrap_or_default();
        if evidence.reset_hint.is_none() && extractors.is_empty() {
            return;
        }
        // Extractors read the raw view: the same bounded tail of the text the rules read.
        let views = (!extractors.is_empty()).then(|| crate::text::TextViews::new(evidence));
        let raw = views.as_ref().map_or("", crate::text::TextViews::raw);
        // Without a body of its own, the evidence's text may embed one (`Body::lift`).
        let reads_body = extractors.contains(&crate::TimingExtractor::BodyReset);
        let lifted = (reads_body && evidence.body.is_none())
            .then(|| crate::Body::lift(raw))
            .flatten();
        let fields = crate::timing::Fields {
            headers: evidence.headers.as_ref(),
            body: evidence.body.as_ref().or(lifted.as_ref()),
            body_reset_at: rule
                .map(|rule| rule.body_reset_at.as_slice())
                .unwrap_or_default(),
        };
        let hint = crate::timing::resolve(
            evidence.reset_hint.as_deref(),
            extractors,
            raw,
            fields,
            crate::timing::timestamp(now),
            steps,
        );
        if let Some(hint) = hint {
            classification.reset_hint = Some(hint.rfc3339());
            classification.retry_after = Some(hint.retry_after_seconds());
        }
    }
}
