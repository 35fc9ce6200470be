//! Compiled rule bundles: the file format, its validated loader, and classification.
//!
//! A bundle is untrusted input. [`Bundle::from_bytes`] checks the framing (magic, versions, a
//! content hash over every other byte of the file, endianness, header, section table), decodes the catalogue model and validates every
//! index in it, deserializes every DFA with regex-automata's checked deserializer, and compiles
//! the exact patterns; any failure is a typed [`BundleError`], never a panic.

mod classify;
pub mod model;
pub mod wire;

use std::time::SystemTime;

use regex_automata::dfa::dense;

pub use classify::{Step, Trace};
use model::{CatalogueModel, MatcherEntry, MatcherKindEntry, RemediationEntry};
pub use wire::Header;

use crate::sanitize::REDACTION_VERSION;

/// Size limit, in bytes, of the compiled program of every regex a bundle's patterns are
/// compiled to when it loads (exact confirmation of widened patterns, captures, case-folded
/// literals). The compiler checks every pattern against it (FL0109), so a bundle it accepts
/// always loads.
pub const REGEX_SIZE_LIMIT: usize = 10 << 20;

/// Size limit, in bytes, of the lazy DFA cache of each such regex.
pub const REGEX_DFA_SIZE_LIMIT: usize = 2 << 20;

/// Why a bundle could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BundleError {
    /// The input ends before a field it must hold.
    #[error("the bundle is truncated: {needed} bytes needed, {len} present")]
    Truncated {
        /// Bytes needed.
        needed: usize,
        /// Bytes present.
        len: usize,
    },
    /// The input does not start with the bundle magic.
    #[error("not a faultline bundle (bad magic bytes)")]
    BadMagic,
    /// The bundle needs a newer reader.
    #[error(
        "the bundle (format {format_version}) needs reader version {min_reader_version}; this reader is version {reader_version}"
    )]
    TooNew {
        /// The bundle's format version.
        format_version: u16,
        /// The reader version it needs.
        min_reader_version: u16,
        /// This reader's version.
        reader_version: u16,
    },
    /// The bundle is older than this reader supports.
    #[error(
        "the bundle's format version {format_version} is older than the oldest readable, {oldest_readable}; rebuild it"
    )]
    TooOld {
        /// The bundle's format version.
        format_version: u16,
        /// The oldest format this reader reads.
        oldest_readable: u16,
    },
    /// The content hash does not match the rest of the file (header or body): it is corrupt.
    #[error("the bundle's content hash does not match its contents (corrupted file)")]
    HashMismatch,
    /// The automata were serialized by an incompatible regex-automata.
    #[error(
        "the automata were serialized by regex-automata {bundle}; this runtime reads {runtime}.x"
    )]
    RegexAutomataVersion {
        /// The bundle's version.
        bundle: String,
        /// The family this runtime reads.
        runtime: &'static str,
    },
    /// The catalogue was checked with other redaction rules than this runtime applies.
    #[error("the bundle was checked with redaction `{bundle}`; this runtime applies `{runtime}`")]
    RedactionVersion {
        /// The bundle's redaction version.
        bundle: String,
        /// This runtime's.
        runtime: &'static str,
    },
    /// A DFA section failed regex-automata's validation.
    #[error("automaton section {section} is invalid: {message}")]
    Automaton {
        /// The section index.
        section: usize,
        /// What regex-automata reported.
        message: String,
    },
    /// Anything else that is inconsistent.
    #[error("the bundle is malformed: {0}")]
    Malformed(String),
}

impl BundleError {
    fn malformed(what: impl Into<String>) -> Self {
        BundleError::Malformed(what.into())
    }
}

/// A loaded, validated bundle, ready to classify. `Send + Sync`: share one per process.
#[derive(Debug)]
pub struct Bundle {
    header: Header,
    model: CatalogueModel,
    engine: classify::Engine,
    positions: std::collections::HashMap<String, usize>,
}

impl Bundle {
    /// Loads a bundle, validating everything.
    pub fn from_bytes(bytes: &[u8]) -> Result<Bundle, BundleError> {
        let raw = wire::read(bytes)?;
        let (model_bytes, dfa_sections) = raw
            .sections
            .split_first()
            .ok_or_else(|| BundleError::malformed("no sections"))?;
        let model: CatalogueModel = postcard::from_bytes(model_bytes)
            .map_err(|error| BundleError::malformed(format!("catalogue model: {error}")))?;
        if model.redaction_version != REDACTION_VERSION {
            return Err(BundleError::RedactionVersion {
                bundle: model.redaction_version,
                runtime: REDACTION_VERSION,
            });
        }
        let mut dfas = Vec::with_capacity(dfa_sections.len());
        for (index, section) in dfa_sections.iter().enumerate() {
            dfas.push(load_dfa(index + 1, section)?);
        }
        validate_model(&model, &dfas)?;
        let engine = classify::Engine::new(&model, dfas)?;
        let positions = model
            .rules
            .iter()
            .enumerate()
            .map(|(position, rule)| (rule.id.clone(), position))
            .collect();
        Ok(Bundle {
            header: raw.header,
            model,
            engine,
            positions,
        })
    }

    /// Writes a bundle from its parts (the compiler's emitter). Deterministic.
    pub fn write(
        header: &Header,
        model: &CatalogueModel,
        dfas: &[Vec<u8>],
    ) -> Result<Vec<u8>, BundleError> {
        let model_bytes = postcard::to_allocvec(model)
            .map_err(|error| BundleError::malformed(format!("catalogue model: {error}")))?;
        let mut sections = Vec::with_capacity(dfas.len() + 1);
        sections.push(model_bytes);
        sections.extend(dfas.iter().cloned());
        wire::write(header, &sections)
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// What one rule, alone, does on `evidence` (whether or not it would win); `None` when no
    /// rule has that position.
    pub fn rule_step(&self, position: usize, evidence: &crate::Evidence) -> Option<Step> {
        self.engine.fires(&self.model, position, evidence)
    }

    /// The position of a rule in priority order, by id.
    pub fn rule_position(&self, id: &str) -> Option<usize> {
        self.positions.get(id).copied()
    }

    /// The catalogue model.
    pub fn model(&self) -> &CatalogueModel {
        &self.model
    }

    /// Sizes of the DFAs, in bytes, per view and DFA.
    pub fn automaton_sizes(&self) -> Vec<(crate::TextView, usize)> {
        self.engine.automaton_sizes()
    }

    /// Whether a rule that is not low-confidence could fire on `evidence`: the cheap gate for
    /// hot paths such as deciding the diagnostic marker of every streamed chunk. `false` means
    /// [`Bundle::classify`] would certainly answer with a low-confidence rule (the phase
    /// fallback of the shipped catalogue), so the caller may skip it; `true` means it might
    /// not. It reads the structured guards and scans the raw view (the text's matched tail)
    /// once for the rules' required literals, without redacting the text or running an
    /// automaton.
    pub fn may_classify(&self, evidence: &crate::Evidence) -> bool {
        self.engine.may_classify(&self.model, evidence)
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
        let (mut classification, winner) =
            self.engine
                .classify(&self.model, &self.header.catalogue_version, evidence, None);
        self.attach_timing(&mut classification, winner, evidence, now, None);
        classification
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
        let (mut classification, winner) = self.engine.classify(
            &self.model,
            &self.header.catalogue_version,
            evidence,
            Some(&mut trace),
        );
        self.attach_timing(
            &mut classification,
            winner,
            evidence,
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
        let extractors = winner
            .and_then(|position| self.model.rules.get(position))
            .map(|rule| rule.timing.as_slice())
            .unwrap_or_default();
        if evidence.reset_hint.is_none() && extractors.is_empty() {
            return;
        }
        // Extractors read the raw view: the same bounded tail of the text the rules read.
        let views = (!extractors.is_empty()).then(|| crate::text::TextViews::new(evidence));
        let raw = views.as_ref().map_or("", crate::text::TextViews::raw);
        let hint = crate::timing::resolve(
            evidence.reset_hint.as_deref(),
            extractors,
            raw,
            crate::timing::timestamp(now),
            steps,
        );
        if let Some(hint) = hint {
            classification.reset_hint = Some(hint.rfc3339());
            classification.retry_after = Some(hint.retry_after_seconds());
        }
    }
}

fn load_dfa(section: usize, bytes: &[u8]) -> Result<dense::DFA<Vec<u32>>, BundleError> {
    // regex-automata reads transitions as u32s: copy into 4-aligned memory first.
    let mut aligned = vec![0u32; bytes.len().div_ceil(4)];
    let view: &mut [u8] = bytemuck::cast_slice_mut(&mut aligned);
    if let Some(target) = view.get_mut(..bytes.len()) {
        target.copy_from_slice(bytes);
    }
    let view: &[u8] = bytemuck::cast_slice(&aligned);
    let (dfa, read) =
        dense::DFA::from_bytes(view.get(..bytes.len()).unwrap_or_default()).map_err(|error| {
            BundleError::Automaton {
                section,
                message: error.to_string(),
            }
        })?;
    if read != bytes.len() {
        return Err(BundleError::Automaton {
            section,
            message: format!("{} trailing bytes", bytes.len() - read),
        });
    }
    Ok(dfa.to_owned())
}

fn validate_matcher(
    model: &CatalogueModel,
    matcher: &MatcherEntry,
    rule: &str,
) -> Result<(), BundleError> {
    if let MatcherKindEntry::Pattern { pattern, .. } = matcher.kind {
        let view = model.views.iter().find(|view| view.view == matcher.view);
        let known = view.is_some_and(|view| (pattern as usize) < view.patterns.len());
        if !known {
            return Err(BundleError::malformed(format!(
                "rule `{rule}` refers to pattern {pattern} of a view without it"
            )));
        }
    }
    Ok(())
}

fn validate_model(
    model: &CatalogueModel,
    dfas: &[dense::DFA<Vec<u32>>],
) -> Result<(), BundleError> {
    use regex_automata::dfa::Automaton as _;
    for rule in &model.rules {
        if rule.code as usize >= model.codes.len() || rule.tier as usize >= model.tiers.len() {
            return Err(BundleError::malformed(format!(
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
            return Err(BundleError::malformed(format!(
                "rule `{}` has a fixed excerpt that is not redaction-clean",
                rule.id
            )));
        }
        if let Some(RemediationEntry::Capture { group, .. }) = &rule.remediation
            && *group == 0
        {
            return Err(BundleError::malformed(format!(
                "rule `{}` captures group 0",
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
        return Err(BundleError::malformed(
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
                return Err(BundleError::malformed(format!(
                    "view `{}` refers to missing section {}",
                    view.view, dfa.section
                )));
            };
            let automaton = dfas
                .get(index)
                .ok_or_else(|| BundleError::malformed("missing automaton"))?;
            if automaton.pattern_len() != dfa.pattern_count as usize {
                return Err(BundleError::malformed(format!(
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
        for pattern in &view.patterns {
            let dfa = view.dfas.get(pattern.dfa as usize);
            if dfa.is_none_or(|dfa| pattern.dfa_pattern >= dfa.pattern_count) {
                return Err(BundleError::malformed(format!(
                    "pattern `{}` refers to a missing automaton pattern",
                    pattern.pattern
                )));
            }
        }
    }
    if used_sections.iter().any(|used| !used) {
        return Err(BundleError::malformed(
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
            return Err(BundleError::malformed(format!(
                "prefilter literal `{}` is empty or refers to a missing rule",
                literal.literal
            )));
        }
    }
    Ok(())
}
