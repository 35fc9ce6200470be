//! A deliberately naive reference model of one session's recovery evidence, written from the
//! reference (§A.5, §A.6, §D.1–§D.5, §D.7, §D.8, §G) and the acceptance criteria (.2, .8,
//! .12–.16, .20–.24) rather than from the engine, and a state-machine property test that runs
//! long random event sequences through both and compares every outcome and verdict.
//!
//! The model keeps no incremental state: it keeps the whole event history (and the outcomes it
//! already gave) and answers each event by scanning that history — the current attempt is
//! everything since the last `PromptBegan`, each of its events is correlated by replaying the
//! identity rules, and the fences, the diagnostic record and Cursor's pending marker are read
//! off the correlated events directly. Classification-dependent facts (the classifier itself,
//! the projection, the Cursor chunk grammar) reuse the runtime's public helpers; the point is
//! to cross-check the state machine, not the classifier. The containment rule (AC .23: trim,
//! collapse whitespace, case-sensitive, whole) is the model's own.
//!
//! Beside the agreement, two properties are checked over every random sequence, each against
//! the model's notion of the attempt and of its settlement, never the engine's (issue 17): no
//! verdict is automatic unless the gate's documented conditions hold for that attempt
//! (`check_automatic_only_when_the_gate_holds`), and after a retirement nothing is automatic
//! until a new attempt binds in full (`check_nothing_automatic_after_retirement`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "integration tests report failure by panicking"
)]

mod common;

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::LazyLock;
use std::time::SystemTime;

use faultline_acp::dialect::recovery_profile;
use faultline_recovery::cursor::{self, RetriableChunk};
use faultline_recovery::projection::{PromptError, ProviderProjection, project_prompt_error};
use faultline_recovery::prompt::{
    Claim, Disposition, LifecycleSnapshot, MAX_PROVIDER_DIAGNOSTIC_BYTES, Outcome, Role, Safety,
    Verdict, provider_diagnostic_candidate,
};
use faultline_recovery::response_attempt::ToolScope;
use faultline_recovery::{Effect, Recovery, RecoveryEvent as Event};
use faultline_runtime::{Bundle, Classification, Evidence};
use faultline_runtime::{Class, Confidence, Phase};
use proptest::prelude::*;
use serde_json::json;

static BUNDLE: LazyLock<Bundle> = LazyLock::new(common::catalogue_bundle);

// ---------------------------------------------------------------------------------------------
// Text pools
// ---------------------------------------------------------------------------------------------

const OVERLOADED_CHUNK: &str = "API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}";
const OVERLOADED_TERMINAL: &str = "Internal error: API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}";
const PROXY_CHUNK: &str = "API Error: 403 {\"error\":{\"type\":\"proxy_error\",\"message\":\"credentials were refused\"}}";

const PROVIDERS: &[&str] = &["claude-acp", CURSOR, "codex-acp", ""];

/// The adapter id whose chunks Cursor's observer reads (§D.5 check 1).
const CURSOR: &str = "cursor-acp";

/// Streamed chunk texts: real diagnostics, prose quoting them, ordinary prose, empty text,
/// Cursor markers and vetoed or malformed markers.
const CHUNK_TEXTS: &[&str] = &[
    OVERLOADED_CHUNK,
    "API Error: 500 Internal Server Error",
    "API Error: 500 Internal Server Error.",
    "  API Error:   500 Internal Server Error  ",
    PROXY_CHUNK,
    "The provider answered API Error: 529 overloaded, so I will wait and try the request again",
    "I got API Error: 500 Internal Server Error from the gateway, retrying now",
    "Selected model is at capacity. Please try a different model.",
    "peer disconnected before response",
    "rate limit exceeded",
    "Let me look at the file.",
    "thinking",
    "",
    "  \n",
    "Error: RetriableError: [unavailable] PING timed out",
    "  error: retriableerror: Connection stalled  ",
    "Error: RetriableError: HTTP/2 stream closed with error code CANCEL (0x8)",
    "Error: RetriableError: [canceled] Connection stalled",
    "Error: RetriableError: context canceled_by_client",
    "Error: RetriableError: context deadline exceeded",
    "Error: RetriableError:",
    "I saw Error: RetriableError: Connection stalled",
    // Issue 17: whitespace is output; every deadline, cancellation and escalation vetoes;
    // texts that differ only where redaction would hide it.
    "\n",
    "\u{a0}\u{3000}",
    "Error: RetriableError: deadline exceeded",
    "Error: RetriableError: context cancelled",
    "Error: RetriableError: retry escalated",
    "API Error: 500 Internal Server Error see https://attacker.example/phish",
    "Error: RetriableError: Connection stalled",
];

/// Terminal messages: matching, containing, diverging, unclassified, empty.
const TERMINAL_TEXTS: &[&str] = &[
    OVERLOADED_TERMINAL,
    OVERLOADED_CHUNK,
    "Internal error: API Error: 500 Internal Server Error. Try again later.",
    "API Error: 500 Internal Server Error",
    "API Error: 500 Internal server error",
    "API Error: 500 Internal Server Error, then API Error: 529 overloaded_error",
    "Internal error: API Error: 403 {\"error\":{\"type\":\"proxy_error\",\"message\":\"credentials were refused\"}}",
    "Selected model is at capacity",
    "Internal error",
    "rate limit exceeded",
    "Error: RetriableError: Connection stalled",
    "Error: RetriableError: [unavailable] PING timed out",
    "Internal error: API Error: 500 Internal Server Error see https://status.example/x1",
    "",
];

const EXECUTIONS: &[Option<&str>] = &[None, Some("exec-1"), Some("exec-2")];
const GENERATIONS: &[u64] = &[0, 1, 2, 7];
const MODELS: &[&str] = &[
    "claude-sonnet-4",
    "gpt-5",
    "",
    "https://attacker.example/m",
    "claude\nsonnet",
];
const OCCURRED_AT: &[&str] = &["2026-10-01T08:00:00Z", "2026-10-03T23:59:59Z"];

/// A `session/prompt` error as the agent's JSON-RPC error object carries it, read the way the
/// event log and the adapter read it.
fn prompt_error(code: i64, message: &str, data: Option<serde_json::Value>) -> PromptError {
    let mut object = json!({"code": code, "message": message});
    if let Some(data) = data {
        object["data"] = data;
    }
    serde_json::from_value(object).unwrap()
}

fn data(index: usize) -> Option<serde_json::Value> {
    match index {
        0 => None,
        1 => Some(json!({"error": "peer disconnected before response"})),
        2 => Some(json!({"errorKind": "server_error"})),
        3 => Some(json!({"errorKind": "has space", "secret": "sk-live"})),
        _ => Some(json!("API Error: 529 overloaded")),
    }
}

// ---------------------------------------------------------------------------------------------
// Memoized classification facts
// ---------------------------------------------------------------------------------------------

/// (phase, provider, text, clock) → classification.
type ClassificationCache = HashMap<(Option<Phase>, String, String, String), Classification>;

thread_local! {
    static CLASSIFIED: RefCell<ClassificationCache> =
        RefCell::new(HashMap::new());
    static MARKED: RefCell<HashMap<(String, u8, String), bool>> = RefCell::new(HashMap::new());
}

/// Classifies `text` as standard error for `provider` in `phase`, with the clock at `at`.
fn classify_in(phase: Phase, provider: &str, text: &str, at: &str) -> Classification {
    let key = (
        Some(phase),
        provider.to_owned(),
        text.to_owned(),
        at.to_owned(),
    );
    if let Some(found) = CLASSIFIED.with(|cache| cache.borrow().get(&key).cloned()) {
        return found;
    }
    let now = if at.is_empty() {
        SystemTime::UNIX_EPOCH
    } else {
        faultline_runtime::parse_instant(at).unwrap()
    };
    let evidence = {
        let mut built = Evidence::new();
        built.phase = Some(phase);
        built.provider_id = (!provider.is_empty()).then(|| provider.to_owned());
        built.stderr = Some(text.to_owned());
        built
    };
    let classification = BUNDLE.classify_at(&evidence, now);
    CLASSIFIED.with(|cache| cache.borrow_mut().insert(key, classification.clone()));
    classification
}

/// How the marker and the correlation classify (§D.3, §D.4): `prompt_send`, the adapter's
/// provider id, a fixed clock.
fn classify(provider: &str, text: &str) -> Classification {
    classify_in(Phase::PromptSend, provider, text, "")
}

/// High confidence and fallback-eligible (§D.3 "marker = Confidence==high && FallbackAllowed").
fn eligible(classification: &Classification) -> bool {
    classification.confidence == Confidence::High && classification.fallback_allowed
}

/// Whether the code's policy allows recovering at all (retry or fallback) once the boundary is
/// safe; a low-confidence or unclassified result never does (§F, §G.4).
fn policy_recovers(classification: &Classification, same_provider_only: bool) -> bool {
    classification.confidence != Confidence::Low
        && classification.class != Class::Unclassified
        && (classification.auto_retryable
            || (classification.fallback_allowed && !same_provider_only))
}

fn marked(provider: &str, role: Role, text: &str) -> bool {
    let role_key = match role {
        Role::Assistant => 0,
        Role::Thought => 1,
        Role::User => 2,
    };
    let key = (provider.to_owned(), role_key, text.to_owned());
    if let Some(found) = MARKED.with(|cache| cache.borrow().get(&key).copied()) {
        return found;
    }
    let decided = provider_diagnostic_candidate(&BUNDLE, provider, role, text);
    MARKED.with(|cache| cache.borrow_mut().insert(key, decided));
    decided
}

// ---------------------------------------------------------------------------------------------
// The naive model
// ---------------------------------------------------------------------------------------------

/// How an event's claim relates to the attempt (§A.5 `promptIdentityMatchesLocked`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Corr {
    Current,
    Stale,
    Poisoned,
}

/// What a correlated event contributes to the attempt's evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// Ordinary output (§D.2 output fence): clears a recorded diagnostic.
    Output,
    /// Tool activity (§D.2 effect fence).
    Effect,
    /// A marked assistant chunk that classifies high and fallback-eligible (§D.3).
    Diagnostic { code: String, text: String },
    /// A marked chunk that does not classify so: ordinary output, reported as demoted.
    Demoted,
    /// Cursor's control chunk (§D.5): suppressed, not output.
    CursorMarker { observed: String },
    /// A lifecycle diagnostic that is not eligible: output, without clearing a diagnostic.
    LifecycleOutput,
    /// Counts as nothing (a user echo, an empty chunk).
    Nothing,
    /// Not evidence (binds, terminal events).
    None,
}

fn claim_of(event: &Event) -> Option<&Claim> {
    match event {
        Event::PromptBegan { claim }
        | Event::PromptBound { claim }
        | Event::Chunk { claim, .. }
        | Event::PartialResult { claim }
        | Event::ToolCall { claim, .. }
        | Event::ToolUpdate { claim }
        | Event::PromptReturned { claim, .. }
        | Event::PromptFailed { claim, .. } => Some(claim),
        Event::ModelSettled { .. } | Event::LifecycleRetired | Event::EventUnreadable => None,
        other => panic!("the model covers the prompt-attempt evidence only, not {other:?}"),
    }
}

/// §D.3: the orchestrator observes only non-empty assistant and reasoning chunks; a user
/// echo or an empty chunk never reaches the record (nor its correlation). Whitespace is not
/// empty (docs/recovery.md, "Decisions where the spec is silent").
fn reaches_record(event: &Event) -> bool {
    match event {
        Event::Chunk { role, text, .. } => *role != Role::User && !text.is_empty(),
        _ => true,
    }
}

/// Whether a chunk is a marked assistant chunk (a provider-diagnostic candidate).
fn marked_assistant(event: &Event) -> bool {
    matches!(
        event,
        Event::Chunk {
            role: Role::Assistant,
            provider_diagnostic_candidate: true,
            ..
        }
    )
}

/// AC .23: trim, collapse every whitespace run to one space, nothing else.
fn normalize_spec(text: &str) -> String {
    let mut out = String::new();
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// AC .23: the whole normalized diagnostic inside the normalized raw terminal message; an
/// empty one never, nor one past the engine's documented bound.
fn contained(diagnostic: &str, terminal: &str) -> bool {
    let diagnostic = normalize_spec(diagnostic);
    !diagnostic.is_empty()
        && diagnostic.len() <= MAX_PROVIDER_DIAGNOSTIC_BYTES
        && normalize_spec(terminal).contains(&diagnostic)
}

fn is_terminal(event: &Event) -> bool {
    matches!(
        event,
        Event::PromptReturned { .. } | Event::PromptFailed { .. }
    )
}

/// The identity rules replayed over the current attempt.
#[derive(Debug, Clone)]
struct Identity {
    execution: Option<String>,
    generation: u64,
    poisoned: bool,
    /// Once the identity became complete: whether no earlier record had held it (new).
    registered: Option<bool>,
    /// Whether it became complete, and new, at the begin or at a bind (what re-opens a
    /// lifecycle retired before the attempt began; an adopted value does not).
    bound_new: bool,
}

impl Identity {
    fn complete(&self) -> bool {
        self.execution.is_some() && self.generation != 0
    }

    /// One component: the record's value against the claim's (§A.5): the record has one and
    /// the claim none → poison; a different one → stale; the record has none → adoptable.
    fn component<T: PartialEq>(record: Option<&T>, claimed: Option<&T>) -> Corr {
        match (record, claimed) {
            (Some(_), None) => Corr::Poisoned,
            (Some(have), Some(got)) if have != got => Corr::Stale,
            _ => Corr::Current,
        }
    }

    fn correlate(&self, claim: &Claim) -> Corr {
        let exec = Identity::component(self.execution.as_ref(), claim.execution_id.as_ref());
        if exec != Corr::Current {
            return exec;
        }
        let some_gen = |g: u64| (g != 0).then_some(g);
        Identity::component(
            some_gen(self.generation).as_ref(),
            some_gen(claim.generation).as_ref(),
        )
    }

    /// `bindPromptAttempt` (§A.5): a bind whose exec or generation differs from the record's
    /// poisons; otherwise it fills the empty slots. A bind *lacking* a value the record has
    /// differs from it too (§A.5 "different", §G.4 "an identity without exec/gen once bound →
    /// poisoned").
    fn bind_conflicts(&self, claim: &Claim) -> bool {
        let differs = |have: Option<&str>, got: Option<&str>| have.is_some() && have != got;
        let some_gen = |g: u64| (g != 0).then(|| g.to_string());
        differs(self.execution.as_deref(), claim.execution_id.as_deref())
            || differs(
                some_gen(self.generation).as_deref(),
                some_gen(claim.generation).as_deref(),
            )
    }

    fn adopt(&mut self, claim: &Claim) {
        if self.execution.is_none() {
            self.execution.clone_from(&claim.execution_id);
        }
        if self.generation == 0 {
            self.generation = claim.generation;
        }
    }

    /// Once complete, the identity is new unless an earlier record held the same execution at
    /// this or a later generation; a reused identity's record is poisoned (its evidence is
    /// gone). `binding`: completed by the begin or a bind.
    fn register(&mut self, highest: &HashMap<String, u64>, binding: bool) {
        if self.registered.is_some() || !self.complete() {
            return;
        }
        let execution = self.execution.as_deref().unwrap();
        let new = self.generation > highest.get(execution).copied().unwrap_or(0);
        self.registered = Some(new);
        if new {
            self.bound_new = binding;
        } else {
            self.poisoned = true;
        }
    }
}

/// The model: the provider and the whole history of events and of the outcomes it gave.
struct Model {
    provider: String,
    events: Vec<Event>,
    outcomes: Vec<Outcome>,
    /// The indices of the begins that started a record (every begin but a repeat of the
    /// current record's full identity), kept as the history grows.
    begins: Vec<usize>,
}

/// Everything the model reads off the history before one event.
#[derive(Clone, Copy)]
struct View<'h> {
    provider: &'h str,
    history: &'h [Event],
    outcomes: &'h [Outcome],
    begins: &'h [usize],
}

impl View<'_> {
    fn last_begin(&self) -> Option<usize> {
        self.begins.last().copied()
    }

    /// The end of the span of the record begun at `begin`: the next record's begin.
    fn span_end(&self, begin: usize) -> usize {
        self.begins
            .iter()
            .copied()
            .find(|&later| later > begin)
            .unwrap_or(self.history.len())
    }

    /// Per execution, the highest generation a record begun before `begin` held in full.
    fn highest_before(&self, begin: usize) -> HashMap<String, u64> {
        let mut highest: HashMap<String, u64> = HashMap::new();
        for &earlier in self.begins.iter().take_while(|&&earlier| earlier < begin) {
            let (identity, _) = self.replay_with(earlier, self.span_end(earlier), None);
            if let (Some(execution), true) = (identity.execution.clone(), identity.complete()) {
                let entry = highest.entry(execution).or_insert(0);
                *entry = (*entry).max(identity.generation);
            }
        }
        highest
    }

    /// The current attempt's identity after replaying its events, and each event's
    /// correlation (index, correlation) — binds and begins included.
    fn replay(&self, begin: usize) -> (Identity, Vec<(usize, Corr)>) {
        self.replay_until(begin, self.history.len())
    }

    /// The record begun at `begin`, replayed over the events before `end` (repeated begins
    /// change nothing).
    fn replay_until(&self, begin: usize, end: usize) -> (Identity, Vec<(usize, Corr)>) {
        let highest = self.highest_before(begin);
        self.replay_with(begin, end, Some(&highest))
    }

    /// [`View::replay_until`], registering the identity against `highest` (`None`: the
    /// identity's values only).
    fn replay_with(
        &self,
        begin: usize,
        end: usize,
        highest: Option<&HashMap<String, u64>>,
    ) -> (Identity, Vec<(usize, Corr)>) {
        let none = HashMap::new();
        let highest = highest.unwrap_or(&none);
        let begun = claim_of(&self.history[begin]).unwrap();
        let mut identity = Identity {
            execution: begun.execution_id.clone(),
            generation: begun.generation,
            poisoned: false,
            registered: None,
            bound_new: false,
        };
        identity.register(highest, true);
        let mut correlations = vec![(begin, Corr::Current)];
        for (index, event) in self.history.iter().enumerate().take(end).skip(begin + 1) {
            if matches!(event, Event::PromptBegan { .. }) {
                continue;
            }
            let Some(claim) = claim_of(event).filter(|_| reaches_record(event)) else {
                continue;
            };
            let corr = if let Event::PromptBound { claim } = event {
                if identity.bind_conflicts(claim) {
                    Corr::Poisoned
                } else {
                    identity.adopt(claim);
                    identity.register(highest, true);
                    Corr::Current
                }
            } else {
                let corr = identity.correlate(claim);
                if corr == Corr::Current {
                    identity.adopt(claim);
                    identity.register(highest, false);
                }
                corr
            };
            if corr == Corr::Poisoned {
                identity.poisoned = true;
            }
            correlations.push((index, corr));
        }
        (identity, correlations)
    }

    /// Whether an event of the session could not be read.
    fn session_poisoned(&self) -> bool {
        self.history
            .iter()
            .any(|e| matches!(e, Event::EventUnreadable))
    }

    /// Whether the retry lifecycle reads as retired: retired, and no attempt begun since has
    /// bound its full identity — a new one — at its begin or a bind.
    fn retired(&self) -> bool {
        let Some(retired_at) = self
            .history
            .iter()
            .rposition(|e| matches!(e, Event::LifecycleRetired))
        else {
            return false;
        };
        // Only a *new* attempt re-opens it (the `Event::LifecycleRetired` docs: "until a new
        // attempt binds its full identity"; §A.5, §F.6; issue 17 item 2): a record begun since
        // the retirement whose identity no earlier record held, bound in full.
        // Each record sees only the events before the next begin: a bind after a later begin
        // binds that later record, not this one.
        let re_opened = self
            .begins
            .iter()
            .enumerate()
            .filter(|&(_, &begin)| begin > retired_at)
            .any(|(position, &begin)| {
                let end = self
                    .begins
                    .get(position + 1)
                    .copied()
                    .unwrap_or(self.history.len());
                self.replay_until(begin, end).0.bound_new
            });
        !re_opened
    }

    /// The execution of the record current just before `index`.
    fn record_execution_at(&self, index: usize) -> Option<String> {
        let begin = self.begins.iter().copied().rfind(|&begin| begin < index)?;
        self.replay_with(begin, index, None).0.execution
    }

    /// The model a projection for a failure claiming `claim` carries (§D.8; docs/recovery.md,
    /// "A settled model belongs to its execution"): the last non-empty settled model, if it was
    /// settled under the failing attempt's execution and no begin of another execution (or of
    /// an unknown one) came after it.
    fn settled_model(&self, claim: &Claim) -> Option<String> {
        let begins = self.begins;
        // (execution settled under, model id), walked forward.
        let mut model: Option<(Option<String>, String)> = None;
        for (index, event) in self.history.iter().enumerate() {
            match event {
                Event::ModelSettled {
                    model_id,
                    execution_id,
                } if !model_id.is_empty() => {
                    let execution = execution_id
                        .clone()
                        .or_else(|| self.record_execution_at(index));
                    model = Some((execution, model_id.clone()));
                }
                Event::PromptBegan { claim } if begins.contains(&index) => {
                    // A model settled before its record's execution was known belongs to
                    // that execution once the record learned it.
                    if let Some((execution @ None, _)) = model.as_mut() {
                        *execution = self.record_execution_at(index);
                    }
                    if model.as_ref().is_some_and(|(execution, _)| {
                        execution.is_none() || *execution != claim.execution_id
                    }) {
                        model = None;
                    }
                }
                _ => {}
            }
        }
        let (settled_under, model_id) = model?;
        let record = self
            .last_begin()
            .and_then(|begin| self.replay(begin).0.execution);
        if let (Some(record), Some(claimed)) = (&record, &claim.execution_id)
            && record != claimed
        {
            return None;
        }
        // A model that survived every begin without an execution was settled under the
        // current record: it takes the record's execution once that is known.
        let settled_under = settled_under.or_else(|| record.clone());
        let failing = record.clone().or_else(|| claim.execution_id.clone());
        let carried = match (&settled_under, &failing) {
            (None, _) => record.is_none(),
            (Some(settled), Some(failing)) => settled == failing,
            (Some(_), None) => false,
        };
        carried.then_some(model_id)
    }

    /// What a correlated event contributes, read directly from its fields.
    fn kind(&self, event: &Event) -> Kind {
        match event {
            Event::PartialResult { .. } => Kind::Output,
            Event::ToolCall { .. } | Event::ToolUpdate { .. } => Kind::Effect,
            Event::Chunk {
                claim,
                role,
                text,
                provider_diagnostic_candidate,
            } => {
                if *role == Role::User || text.is_empty() {
                    return Kind::Nothing;
                }
                // §D.5: Cursor's observer runs first, on a current assistant chunk of the
                // active non-zero generation.
                if self.provider == CURSOR
                    && *role == Role::Assistant
                    && claim.generation != 0
                    && let RetriableChunk::Marker { observed } = cursor::retriable_chunk(text)
                {
                    return Kind::CursorMarker { observed };
                }
                if *role == Role::Assistant && *provider_diagnostic_candidate {
                    // §D.3 observeProviderDiagnostic step 1: its code (AC .21: it never
                    // clears a recorded diagnostic, whatever the code).
                    let classification = classify(self.provider, text);
                    if eligible(&classification) && !normalize_spec(text).is_empty() {
                        Kind::Diagnostic {
                            code: classification.code,
                            text: text.clone(),
                        }
                    } else {
                        Kind::Demoted
                    }
                } else {
                    Kind::Output
                }
            }
            // The settling failure's lifecycle diagnostic was imported into the record,
            // re-classified: not eligible, it is ordinary output (§D.3).
            Event::PromptFailed {
                lifecycle: Some(snapshot),
                ..
            } => match &snapshot.provider_diagnostic_text {
                Some(text) => {
                    let classification = classify(self.provider, text);
                    if eligible(&classification) && !normalize_spec(text).is_empty() {
                        Kind::Diagnostic {
                            code: classification.code,
                            text: text.clone(),
                        }
                    } else {
                        Kind::LifecycleOutput
                    }
                }
                None => Kind::None,
            },
            _ => Kind::None,
        }
    }

    /// The current attempt's correlated evidence events (index, kind), in order.
    fn evidence(&self, correlations: &[(usize, Corr)]) -> Vec<(usize, Kind)> {
        let first_terminal = correlations
            .iter()
            .find(|(index, corr)| *corr == Corr::Current && is_terminal(&self.history[*index]))
            .map(|(index, _)| *index);
        correlations
            .iter()
            // Stale or poisoning evidence changes nothing, its lifecycle snapshot included
            // (§A.5 "reject as stale"; §D.3 imports only a correlated failure's diagnostic).
            .filter(|(_, corr)| *corr == Corr::Current)
            .flat_map(|&(index, _)| {
                let kinds = match &self.history[index] {
                    // A re-delivered terminal changes nothing: the prompt settles once (§D.5
                    // "exactly one"; the settled verdict is immutable).
                    Event::PromptFailed { .. }
                        if first_terminal.is_some_and(|first| index != first) =>
                    {
                        vec![Kind::None]
                    }
                    // The settling failure's snapshot is merged into the record: its diagnostic
                    // (first), then the output and tool activity the lifecycle saw.
                    event @ Event::PromptFailed {
                        lifecycle: Some(snapshot),
                        ..
                    } => {
                        let mut kinds = vec![self.kind(event)];
                        if snapshot.output_observed {
                            kinds.push(Kind::LifecycleOutput);
                        }
                        if snapshot.effect_observed {
                            kinds.push(Kind::Effect);
                        }
                        kinds
                    }
                    event => vec![self.kind(event)],
                };
                kinds.into_iter().map(move |kind| (index, kind))
            })
            .collect()
    }

    /// The recorded diagnostic (§D.3, §D.2): the first marked eligible chunk that no output,
    /// diagnostic or tool preceded, unless ordinary output came after it (a marked chunk never
    /// clears it, AC .21).
    fn recorded(evidence: &[(usize, Kind)]) -> Option<(String, String)> {
        let first = evidence.iter().position(|(_, k)| {
            matches!(
                k,
                Kind::Output
                    | Kind::Demoted
                    | Kind::Effect
                    | Kind::Diagnostic { .. }
                    | Kind::LifecycleOutput
            )
        })?;
        let Kind::Diagnostic { code, text } = &evidence[first].1 else {
            return None;
        };
        let cleared = evidence[first + 1..]
            .iter()
            .any(|(_, k)| matches!(k, Kind::Output));
        (!cleared).then(|| (code.clone(), text.clone()))
    }

    /// The output fence: ordinary output, or a diagnostic that was recorded at some point.
    fn output(evidence: &[(usize, Kind)]) -> bool {
        let any_output = evidence
            .iter()
            .any(|(_, k)| matches!(k, Kind::Output | Kind::Demoted | Kind::LifecycleOutput));
        let first_was_diagnostic = evidence
            .iter()
            .find(|(_, k)| {
                matches!(
                    k,
                    Kind::Output | Kind::Demoted | Kind::Effect | Kind::Diagnostic { .. }
                )
            })
            .is_some_and(|(_, k)| matches!(k, Kind::Diagnostic { .. }));
        any_output || first_was_diagnostic
    }

    fn effect(evidence: &[(usize, Kind)]) -> bool {
        evidence.iter().any(|(_, k)| *k == Kind::Effect)
    }

    /// Whether an event supersedes a pending Cursor marker (§D.5 "Supersession and re-arm"):
    /// a non-empty assistant or thought chunk, or a new tool call; not a tool update, nor a
    /// partial utility result (neither is on §D.5's list).
    /// Whitespace is output but no sign that Cursor resumed (docs/recovery.md).
    fn supersedes(event: &Event, kind: &Kind) -> bool {
        match event {
            Event::ToolCall { .. } => true,
            Event::Chunk { text, .. } => {
                !text.trim().is_empty()
                    && matches!(kind, Kind::Output | Kind::Demoted | Kind::Diagnostic { .. })
            }
            _ => false,
        }
    }

    /// Cursor's pending marker: the last control chunk no later progress superseded.
    fn cursor_pending(&self, evidence: &[(usize, Kind)]) -> Option<String> {
        let last = evidence
            .iter()
            .rposition(|(_, k)| matches!(k, Kind::CursorMarker { .. }))?;
        let superseded = evidence[last + 1..]
            .iter()
            .any(|(index, kind)| View::supersedes(&self.history[*index], kind))
            // The prompt settling consumes the marker: exactly one failure (§D.5), so the
            // attempt's first current terminal event after it. A stale terminal changes nothing
            // (§A.5; AC .2, .12).
            || evidence
                .iter()
                .find(|(index, _)| is_terminal(&self.history[*index]))
                .is_some_and(|(index, _)| *index > evidence[last].0);
        match &evidence[last].1 {
            Kind::CursorMarker { observed } if !superseded => Some(observed.clone()),
            _ => None,
        }
    }

    /// The stored terminal outcome of the attempt, if a current terminal event settled it:
    /// every later terminal event that correlates with the attempt — a claim that fills a slot
    /// the record lacked included (§A.5 adoption) — gets it (§D.5 "exactly one"; the
    /// `Outcome::Failed` docs; the settled verdict is immutable).
    fn settled(&self, correlations: &[(usize, Corr)]) -> Option<Outcome> {
        correlations
            .iter()
            .find(|(index, corr)| *corr == Corr::Current && is_terminal(&self.history[*index]))
            .map(|(index, _)| self.outcomes[*index].clone())
    }

    /// The verdict on a terminal failure whose projection is given (§D.1, §D.4, §A.5, §A.6);
    /// `raw` is the terminal's text before projection, `structured` whether it is a
    /// `session/prompt` error (not Cursor's barrier failure).
    fn verdict(
        &self,
        claim: &Claim,
        projection: ProviderProjection,
        failure: (&str, bool),
        lifecycle: Option<&LifecycleSnapshot>,
        occurred_at: &str,
    ) -> Verdict {
        let (raw, structured) = failure;
        let terminal = classify(self.provider, projection.message());
        let mut recorded_provider_diagnostic = None;
        let safety = 'safety: {
            // An unreadable event outranks everything: nothing of the session is known.
            let poisoned = self.session_poisoned();
            // "No attempt was ever begun" outranks a retired lifecycle: the reference's
            // flag order (§A.5) gives no reason, the `Safety` docs do.
            let Some(begin) = self.last_begin() else {
                break 'safety if poisoned {
                    Safety::SessionPoisoned
                } else {
                    Safety::NoRecord
                };
            };
            let (mut identity, mut correlations) = self.replay(begin);
            let corr = identity.correlate(claim);
            if corr == Corr::Current {
                identity.adopt(claim);
                identity.register(&self.highest_before(begin), false);
            }
            correlations.push((self.history.len(), corr));
            let evidence = self.evidence(&correlations[..correlations.len() - 1]);
            let mut diagnostic = View::recorded(&evidence);
            let mut output = View::output(&evidence);
            let effect = View::effect(&evidence);
            let mut lifecycle_output = false;
            // The lifecycle's diagnostic is re-classified and imported into the record like
            // the stream's (§D.3 `observeLifecycleProviderDiagnosticLocked`): not eligible, it
            // is ordinary output; otherwise first wins, and only before output or tools.
            // Only a current failure's snapshot counts: stale evidence changes nothing (§A.5).
            let current_snapshot = lifecycle.filter(|_| corr == Corr::Current);
            if let Some(text) = current_snapshot.and_then(|l| l.provider_diagnostic_text.as_ref()) {
                let classification = classify(self.provider, text);
                if !eligible(&classification) || normalize_spec(text).is_empty() {
                    // Ordinary output closes the output fence (§D.2, §G.4 fail closed), also
                    // when the stream already recorded a diagnostic. It does not clear that
                    // diagnostic as a streamed output chunk would (§D.2): that changes only
                    // `recorded_provider_diagnostic`, the verdict is output-observed either way.
                    lifecycle_output = true;
                } else if !output && !effect && diagnostic.is_none() {
                    output = true;
                    diagnostic = Some((classification.code, text.clone()));
                }
            }
            // The verdict reports the record's diagnostic (the `Verdict::recorded_provider_diagnostic`
            // docs: "if one was recorded and not cleared"), whichever attempt the failure
            // claims; a stale failure's own snapshot never reaches it (above).
            recorded_provider_diagnostic = diagnostic.as_ref().map(|(code, _)| code.clone());
            if poisoned {
                break 'safety Safety::SessionPoisoned;
            }
            if self.retired() {
                break 'safety Safety::LifecycleRetired;
            }
            if corr == Corr::Stale {
                break 'safety Safety::Stale;
            }
            // §D.1 is a conjunction; the reason named is the first failed conjunct in the
            // gate's documented order (docs/recovery.md "Verdicts"): the lifecycle saying
            // "unknown" comes before the identity checks.
            if lifecycle.is_some_and(|snapshot| !snapshot.evidence_known)
                || identity.poisoned
                || corr == Corr::Poisoned
            {
                break 'safety Safety::EvidenceUnknown;
            }
            if identity.execution.is_none() {
                break 'safety Safety::MissingExecution;
            }
            if identity.generation == 0 {
                break 'safety Safety::ZeroGeneration;
            }
            // Lifecycle merge (§A.5): OR the lifecycle's flags into the record's.
            let effect = effect || lifecycle.is_some_and(|l| l.effect_observed);
            if (lifecycle_output || lifecycle.is_some_and(|l| l.output_observed)) && !effect {
                break 'safety Safety::OutputObserved;
            }
            if effect {
                break 'safety Safety::EffectObserved;
            }
            // AC .16: a diagnostic of a stale generation stops automatic recovery.
            let stale_diagnostic =
                correlations[..correlations.len() - 1]
                    .iter()
                    .any(|&(index, corr)| {
                        corr == Corr::Stale && marked_assistant(&self.history[index])
                    });
            if stale_diagnostic {
                break 'safety Safety::StaleProviderDiagnostic;
            }
            match diagnostic {
                // AC .16's exemption needs a structured prompt error.
                Some(_) if !structured => Safety::OutputObserved,
                Some((code, text)) => {
                    if !(eligible(&terminal) && terminal.code == code) {
                        Safety::ProviderDiagnosticCodeDiffers {
                            recorded: code,
                            // The spelling of "none that is high-confidence and
                            // fallback-eligible" (the `Safety::ProviderDiagnosticCodeDiffers` docs).
                            terminal: if eligible(&terminal) {
                                terminal.code.clone()
                            } else {
                                "no high-confidence, fallback-eligible code".to_owned()
                            },
                        }
                    } else if !contained(&text, raw) {
                        Safety::ProviderDiagnosticNotContained { code }
                    } else {
                        Safety::SafeProviderDiagnosticConfirmed { code }
                    }
                }
                None if output => Safety::OutputObserved,
                None => Safety::Safe,
            }
        };
        // §A.6: effect → tool_execution; output or unknown → streaming; else prompt_send.
        let phase = match &safety {
            Safety::Safe | Safety::SafeProviderDiagnosticConfirmed { .. } => Phase::PromptSend,
            Safety::EffectObserved => Phase::ToolExecution,
            _ => Phase::Streaming,
        };
        let classification = classify_in(phase, self.provider, projection.message(), occurred_at);
        // AC .15: Cursor's RetriableError retains the selected provider.
        let same_provider_only = self.provider == CURSOR
            && (!structured || cursor::retriable_chunk(raw) != RetriableChunk::Ordinary);
        let disposition =
            if safety.is_safe() && policy_recovers(&classification, same_provider_only) {
                Disposition::Automatic
            } else {
                Disposition::Manual
            };
        Verdict {
            projection,
            classification,
            recorded_provider_diagnostic,
            safety,
            disposition,
            same_provider_only,
            duplicate: false,
        }
    }

    /// The outcome of `event`, given everything before it.
    fn outcome(&self, event: &Event) -> Outcome {
        match event {
            Event::PromptBegan { claim } => {
                if let Some(&current) = self.begins.last()
                    && claim.execution_id.is_some()
                    && claim.generation != 0
                {
                    let (identity, _) = self.replay(current);
                    if identity.execution == claim.execution_id
                        && identity.generation == claim.generation
                    {
                        return Outcome::AttemptRepeated;
                    }
                }
                // A new record: poisoned when its full identity is an earlier record's.
                let mut identity = Identity {
                    execution: claim.execution_id.clone(),
                    generation: claim.generation,
                    poisoned: false,
                    registered: None,
                    bound_new: false,
                };
                identity.register(&self.highest_before(self.history.len()), true);
                return if identity.registered == Some(false) {
                    Outcome::Poisoned
                } else {
                    Outcome::AttemptBegan
                };
            }
            Event::ModelSettled { .. } => return Outcome::ModelSettled,
            Event::LifecycleRetired => return Outcome::Retired,
            Event::EventUnreadable => return Outcome::SessionPoisoned,
            Event::PromptFailed {
                claim,
                error,
                occurred_at,
                lifecycle,
            } => {
                if let Some(begin) = self.last_begin() {
                    let (identity, correlations) = self.replay(begin);
                    if identity.correlate(claim) == Corr::Current
                        && let Some(stored) = self.settled(&correlations)
                    {
                        return duplicate(stored);
                    }
                }
                let model = self.settled_model(claim);
                let projection = project_prompt_error(error, self.provider, model.as_deref());
                return Outcome::Failed(Box::new(self.verdict(
                    claim,
                    projection,
                    (&error.message, true),
                    lifecycle.as_ref(),
                    occurred_at,
                )));
            }
            Event::Chunk { .. } if !reaches_record(event) => return Outcome::Nothing,
            _ => {}
        }
        let Some(begin) = self.last_begin() else {
            return Outcome::NoRecord;
        };
        let claim = claim_of(event).unwrap();
        let (identity, correlations) = self.replay(begin);
        if let Event::PromptBound { claim } = event {
            if identity.bind_conflicts(claim) {
                return Outcome::Poisoned;
            }
            let mut bound = identity.clone();
            bound.adopt(claim);
            bound.register(&self.highest_before(begin), true);
            return if bound.registered == Some(false) {
                Outcome::Poisoned
            } else {
                Outcome::Bound
            };
        }
        match identity.correlate(claim) {
            // AC .16: a stale generation's diagnostic is ignored, but said so.
            Corr::Stale if marked_assistant(event) => return Outcome::StaleProviderDiagnostic,
            Corr::Stale => return Outcome::Stale,
            Corr::Poisoned => return Outcome::Poisoned,
            Corr::Current => {}
        }
        let evidence = self.evidence(&correlations);
        if let Event::PromptReturned { occurred_at, .. } = event {
            if let Some(stored) = self.settled(&correlations) {
                return duplicate(stored);
            }
            return match self.cursor_pending(&evidence) {
                Some(observed) => {
                    // §D.5: one structured failure; the Cursor path carries no metadata
                    // beyond its own source and provider (§D.8 "return earlier").
                    let projection = ProviderProjection::cursor_retriable(&observed, CURSOR);
                    Outcome::Failed(Box::new(self.verdict(
                        claim,
                        projection,
                        (&observed, false),
                        None,
                        occurred_at,
                    )))
                }
                None => Outcome::Completed,
            };
        }
        // The event with the adopted identity counts as the attempt's.
        let kind = self.kind(event);
        // A marked chunk first: nothing recorded, no output, no tool (§D.3 steps 3, 4).
        let blocked = evidence.iter().any(|(_, k)| {
            matches!(
                k,
                Kind::Output
                    | Kind::Demoted
                    | Kind::Effect
                    | Kind::Diagnostic { .. }
                    | Kind::LifecycleOutput
            )
        });
        // A chunk reports that it superseded Cursor's marker, unless it was a marked chunk
        // that reports what became of it (recorded, or ignored).
        if self.cursor_pending(&evidence).is_some()
            && View::supersedes(event, &kind)
            && matches!(event, Event::Chunk { .. })
            && match kind {
                Kind::Output => true,
                Kind::Demoted => !blocked,
                _ => false,
            }
        {
            return Outcome::CursorMarkerSuperseded;
        }
        let diagnostic_before = View::recorded(&evidence).is_some();
        match kind {
            Kind::Output => Outcome::Output {
                cleared_diagnostic: diagnostic_before,
            },
            Kind::Effect => Outcome::Effect,
            Kind::Demoted | Kind::Diagnostic { .. } if blocked => {
                Outcome::ProviderDiagnosticIgnored
            }
            Kind::Demoted => Outcome::ProviderDiagnosticDemoted,
            Kind::Diagnostic { code, .. } => Outcome::ProviderDiagnosticRecorded { code },
            Kind::CursorMarker { .. } => Outcome::CursorMarkerPending,
            Kind::Nothing | Kind::None | Kind::LifecycleOutput => Outcome::Nothing,
        }
    }
}

/// A re-delivered terminal of a settled attempt (issue 17, item 1): the settled verdict,
/// marked a duplicate, manual; a completion stays one.
fn duplicate(settled: Outcome) -> Outcome {
    match settled {
        Outcome::Failed(verdict) => Outcome::Failed(Box::new(Verdict {
            duplicate: true,
            disposition: Disposition::Manual,
            ..*verdict
        })),
        other => other,
    }
}

impl Model {
    fn new(provider: &str) -> Model {
        Model {
            provider: provider.to_owned(),
            events: Vec::new(),
            outcomes: Vec::new(),
            begins: Vec::new(),
        }
    }

    fn view(&self) -> View<'_> {
        View {
            provider: &self.provider,
            history: &self.events,
            outcomes: &self.outcomes,
            begins: &self.begins,
        }
    }

    fn apply(&mut self, event: &Event) -> Outcome {
        let outcome = self.view().outcome(event);
        if matches!(event, Event::PromptBegan { .. }) && outcome != Outcome::AttemptRepeated {
            self.begins.push(self.events.len());
        }
        self.events.push(event.clone());
        self.outcomes.push(outcome.clone());
        outcome
    }
}

// ---------------------------------------------------------------------------------------------
// Random sessions
// ---------------------------------------------------------------------------------------------

/// Whose claim an event carries: mostly the attempt's, sometimes any (stale, zero, missing).
#[derive(Debug, Clone)]
enum ClaimSpec {
    Current,
    Any(usize, usize),
}

#[derive(Debug, Clone)]
enum Marker {
    Decided,
    Forced(bool),
}

#[derive(Debug, Clone)]
enum Spec {
    Began(usize, usize),
    Bound(ClaimSpec),
    Model(usize, Option<usize>),
    Chunk(ClaimSpec, Role, usize, Marker),
    Partial(ClaimSpec),
    Tool(ClaimSpec),
    ToolUpdate(ClaimSpec),
    Returned(ClaimSpec, usize),
    Failed {
        claim: ClaimSpec,
        message: usize,
        code: i64,
        data: usize,
        occurred_at: usize,
        lifecycle: Option<(bool, bool, bool, Option<usize>)>,
    },
    Retired,
    Unreadable,
}

fn claim_spec() -> impl Strategy<Value = ClaimSpec> {
    prop_oneof![
        8 => Just(ClaimSpec::Current),
        2 => (0..EXECUTIONS.len(), 0..GENERATIONS.len()).prop_map(|(e, g)| ClaimSpec::Any(e, g)),
    ]
}

fn role() -> impl Strategy<Value = Role> {
    prop_oneof![6 => Just(Role::Assistant), 2 => Just(Role::Thought), 1 => Just(Role::User)]
}

fn spec() -> impl Strategy<Value = Spec> {
    let began = prop_oneof![
        4 => (1..EXECUTIONS.len(), 1..GENERATIONS.len()),
        1 => (0..EXECUTIONS.len(), 0..GENERATIONS.len()),
    ]
    .prop_map(|(e, g)| Spec::Began(e, g));
    let marker =
        prop_oneof![4 => Just(Marker::Decided), 1 => any::<bool>().prop_map(Marker::Forced)];
    let lifecycle = prop_oneof![
        4 => Just(None),
        1 => (
            prop::bool::weighted(0.8),
            prop::bool::weighted(0.2),
            prop::bool::weighted(0.2),
            prop::option::of(0..CHUNK_TEXTS.len()),
        )
            .prop_map(Some),
    ];
    let failed = (
        claim_spec(),
        0..TERMINAL_TEXTS.len(),
        prop_oneof![Just(-32603_i64), Just(0_i64)],
        0..5_usize,
        0..OCCURRED_AT.len(),
        lifecycle,
    )
        .prop_map(
            |(claim, message, code, data, occurred_at, lifecycle)| Spec::Failed {
                claim,
                message,
                code,
                data,
                occurred_at,
                lifecycle,
            },
        );
    prop_oneof![
        3 => began,
        1 => claim_spec().prop_map(Spec::Bound),
        1 => (0..MODELS.len(), prop::option::of(1..EXECUTIONS.len()))
            .prop_map(|(m, e)| Spec::Model(m, e)),
        10 => (claim_spec(), role(), 0..CHUNK_TEXTS.len(), marker)
            .prop_map(|(c, r, t, m)| Spec::Chunk(c, r, t, m)),
        1 => claim_spec().prop_map(Spec::Partial),
        1 => claim_spec().prop_map(Spec::Tool),
        1 => claim_spec().prop_map(Spec::ToolUpdate),
        2 => (claim_spec(), 0..OCCURRED_AT.len()).prop_map(|(c, t)| Spec::Returned(c, t)),
        4 => failed,
        1 => Just(Spec::Retired),
    ]
}

/// Turns specs into events: `Current` claims the most recently begun attempt's identity, with
/// later binds filling what it lacked.
fn materialize(provider: &str, specs: &[Spec]) -> Vec<Event> {
    let mut current = Claim {
        execution_id: Some("exec-1".to_owned()),
        generation: 7,
    };
    let any = |e: usize, g: usize| Claim {
        execution_id: EXECUTIONS[e].map(str::to_owned),
        generation: GENERATIONS[g],
    };
    let resolve = |spec: &ClaimSpec, current: &Claim| match spec {
        ClaimSpec::Current => current.clone(),
        ClaimSpec::Any(e, g) => any(*e, *g),
    };
    specs
        .iter()
        .map(|spec| match spec {
            Spec::Began(e, g) => {
                current = any(*e, *g);
                Event::PromptBegan {
                    claim: current.clone(),
                }
            }
            Spec::Bound(claim) => {
                let claim = match claim {
                    ClaimSpec::Current => Claim {
                        execution_id: current
                            .execution_id
                            .clone()
                            .or_else(|| Some("exec-1".to_owned())),
                        generation: if current.generation == 0 {
                            7
                        } else {
                            current.generation
                        },
                    },
                    ClaimSpec::Any(e, g) => any(*e, *g),
                };
                if current.execution_id.is_none() {
                    current.execution_id.clone_from(&claim.execution_id);
                }
                if current.generation == 0 {
                    current.generation = claim.generation;
                }
                Event::PromptBound { claim }
            }
            Spec::Model(m, e) => Event::ModelSettled {
                model_id: MODELS[*m].to_owned(),
                execution_id: e.and_then(|e| EXECUTIONS[e]).map(str::to_owned),
            },
            Spec::Chunk(claim, role, text, marker) => {
                let text = CHUNK_TEXTS[*text];
                Event::Chunk {
                    claim: resolve(claim, &current),
                    role: *role,
                    text: text.to_owned(),
                    provider_diagnostic_candidate: match marker {
                        Marker::Decided => marked(provider, *role, text),
                        Marker::Forced(flag) => *flag,
                    },
                }
            }
            Spec::Partial(claim) => Event::PartialResult {
                claim: resolve(claim, &current),
            },
            Spec::Tool(claim) => Event::ToolCall {
                claim: resolve(claim, &current),
                scope: ToolScope::TopLevel,
            },
            Spec::ToolUpdate(claim) => Event::ToolUpdate {
                claim: resolve(claim, &current),
            },
            Spec::Returned(claim, at) => Event::PromptReturned {
                claim: resolve(claim, &current),
                occurred_at: OCCURRED_AT[*at].to_owned(),
            },
            Spec::Failed {
                claim,
                message,
                code,
                data: d,
                occurred_at,
                lifecycle,
            } => Event::PromptFailed {
                claim: resolve(claim, &current),
                error: prompt_error(*code, TERMINAL_TEXTS[*message], data(*d)),
                occurred_at: OCCURRED_AT[*occurred_at].to_owned(),
                lifecycle: lifecycle.map(|(known, output, effect, text)| LifecycleSnapshot {
                    evidence_known: known,
                    output_observed: output,
                    effect_observed: effect,
                    provider_diagnostic_text: text.map(|t| CHUNK_TEXTS[t].to_owned()),
                }),
            },
            Spec::Retired => Event::LifecycleRetired,
            Spec::Unreadable => Event::EventUnreadable,
        })
        .collect()
}

fn session() -> impl Strategy<Value = (String, Vec<Event>)> {
    (
        prop::sample::select(PROVIDERS),
        prop::collection::vec(spec(), 1..50),
        // Now and then an event that could not be read (issue 17, item 5), somewhere.
        prop::option::weighted(0.1, any::<prop::sample::Index>()),
    )
        .prop_map(|(provider, mut specs, unreadable)| {
            if let Some(at) = unreadable {
                let at = at.index(specs.len() + 1);
                specs.insert(at, Spec::Unreadable);
            }
            let events = materialize(provider, &specs);
            (provider.to_owned(), events)
        })
}

/// The engine's evidence outcome of each event, for a session whose adapter negotiated
/// `provider` (the profile is the adapter's: the model decides Cursor by the id itself).
fn run_engine(provider: &str, events: &[Event]) -> Vec<Outcome> {
    let mut session = Recovery::new(recovery_profile(provider));
    events
        .iter()
        .map(|e| {
            let effects = session.apply(&BUNDLE, e.clone());
            match effects.as_slice() {
                [Effect::Evidence(outcome)] => outcome.clone(),
                other => panic!("expected one evidence outcome, got {other:?}"),
            }
        })
        .collect()
}

fn trace(events: &[Event], upto: usize) -> String {
    events[..=upto]
        .iter()
        .enumerate()
        .map(|(i, e)| format!("  {i}: {}", serde_json::to_string(e).unwrap()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `claim` may belong to the attempt whose full identity `terminal` claims: its
/// execution and generation are the terminal's, or absent.
fn compatible(claim: &Claim, terminal: &Claim) -> bool {
    claim
        .execution_id
        .as_ref()
        .is_none_or(|e| Some(e) == terminal.execution_id.as_ref())
        && (claim.generation == 0 || claim.generation == terminal.generation)
}

/// Property (issue 17): no verdict is ever automatic unless the gate's documented conditions
/// (docs/recovery.md, "Verdicts"; §D.1, §D.4; AC .8, .15, .16, .23) hold for *that* attempt.
/// Which attempt, and whether it had already settled, is the naive model's notion, never the
/// engine's: an automatic verdict must be the model's first settlement of the attempt, so a
/// flaw in the engine's settled verdicts cannot hide here.
fn check_automatic_only_when_the_gate_holds(
    provider: &str,
    events: &[Event],
    outcomes: &[Outcome],
    model: &Model,
) -> Result<(), TestCaseError> {
    for (index, outcome) in outcomes.iter().enumerate() {
        let Outcome::Failed(verdict) = outcome else {
            continue;
        };
        if verdict.disposition != Disposition::Automatic {
            continue;
        }
        let why = |condition: &str| {
            format!(
                "automatic verdict, but {condition}\n{}",
                trace(events, index)
            )
        };
        prop_assert!(!verdict.duplicate, "{}", why("it is a duplicate"));
        prop_assert!(
            !events[..index]
                .iter()
                .any(|e| matches!(e, Event::EventUnreadable)),
            "{}",
            why("an event of the session could not be read")
        );
        let terminal = claim_of(&events[index]).unwrap();
        prop_assert!(
            terminal.execution_id.is_some() && terminal.generation != 0,
            "{}",
            why("the claim is incomplete")
        );
        // The model's view before the terminal: its record, its correlation, its settlement.
        let begins = &model.begins[..model.begins.partition_point(|&b| b < index)];
        let view = View {
            provider,
            history: &events[..index],
            outcomes: &model.outcomes[..index],
            begins,
        };
        let begin = view.last_begin();
        prop_assert!(begin.is_some(), "{}", why("no attempt began"));
        let begin = begin.unwrap();
        let (mut identity, correlations) = view.replay(begin);
        prop_assert!(
            identity.correlate(terminal) == Corr::Current,
            "{}",
            why("the failure is not the current attempt's")
        );
        identity.adopt(terminal);
        identity.register(&view.highest_before(begin), false);
        prop_assert!(
            !identity.poisoned,
            "{}",
            why("the attempt's identity is poisoned")
        );
        prop_assert!(
            view.settled(&correlations).is_none(),
            "{}",
            why("the model had already settled the attempt")
        );
        // The attempt's events (since the model's record began), read off their fields.
        let (raw, structured, snapshot) = match &events[index] {
            Event::PromptFailed {
                error, lifecycle, ..
            } => (error.message.clone(), true, lifecycle.clone()),
            Event::PromptReturned { .. } => (verdict.projection.message().to_owned(), false, None),
            other => panic!("a verdict on {other:?}"),
        };
        let mut explained_by = None;
        for event in &events[begin..index] {
            match event {
                Event::ToolCall { claim, .. } | Event::ToolUpdate { claim } => prop_assert!(
                    !compatible(claim, terminal),
                    "{}",
                    why("the attempt had tool activity")
                ),
                Event::PartialResult { claim } => prop_assert!(
                    !compatible(claim, terminal),
                    "{}",
                    why("the attempt had output")
                ),
                Event::Chunk {
                    claim, role, text, ..
                } if *role != Role::User && !text.is_empty() => {
                    let cursor_marker = provider == CURSOR
                        && *role == Role::Assistant
                        && claim.generation != 0
                        && matches!(cursor::retriable_chunk(text), RetriableChunk::Marker { .. });
                    if !compatible(claim, terminal) {
                        prop_assert!(
                            !marked_assistant(event),
                            "{}",
                            why("a provider diagnostic of another generation arrived")
                        );
                    } else if marked_assistant(event) && !cursor_marker {
                        // Explained only by a matching structured prompt error (AC .16, .23).
                        prop_assert!(
                            structured,
                            "{}",
                            why("a diagnostic before a barrier failure")
                        );
                        explained_by.get_or_insert(text.clone());
                    } else {
                        prop_assert!(cursor_marker, "{}", why("the attempt had output"));
                    }
                }
                _ => {}
            }
        }
        if let Some(snapshot) = &snapshot {
            prop_assert!(
                snapshot.evidence_known && !snapshot.output_observed && !snapshot.effect_observed,
                "{}",
                why("the lifecycle's snapshot says otherwise")
            );
            if let Some(text) = &snapshot.provider_diagnostic_text {
                explained_by.get_or_insert(text.clone());
            }
        }
        if let Some(diagnostic) = explained_by {
            let code = classify(provider, &diagnostic);
            let terminal_code = classify(provider, verdict.projection.message());
            prop_assert!(
                eligible(&code) && eligible(&terminal_code) && code.code == terminal_code.code,
                "{}",
                why("the first diagnostic's code is not the terminal's")
            );
            prop_assert!(
                contained(&diagnostic, &raw),
                "{}",
                why("the first diagnostic is not contained in the raw terminal message")
            );
        }
        let same_provider_only = provider == CURSOR
            && (!structured || cursor::retriable_chunk(&raw) != RetriableChunk::Ordinary);
        prop_assert_eq!(verdict.same_provider_only, same_provider_only);
        prop_assert!(
            policy_recovers(&verdict.classification, same_provider_only),
            "{}",
            why("the code's policy allows no such recovery")
        );
    }
    Ok(())
}

/// Property (issue 17, item 1; A.5, F.6, AC .11): after a retirement, nothing is automatic
/// until a new attempt binds in full — an attempt begun after the retirement whose full
/// identity, bound by a begin or a bind since, no attempt begun before the retirement had.
fn check_nothing_automatic_after_retirement(
    events: &[Event],
    outcomes: &[Outcome],
) -> Result<(), TestCaseError> {
    for (index, outcome) in outcomes.iter().enumerate() {
        let Outcome::Failed(verdict) = outcome else {
            continue;
        };
        if verdict.disposition != Disposition::Automatic {
            continue;
        }
        let Some(retired) = events[..index]
            .iter()
            .rposition(|e| matches!(e, Event::LifecycleRetired))
        else {
            continue;
        };
        let since = &events[retired + 1..index];
        let held_before = |bound: &Claim| {
            events[..retired].iter().any(|e| match e {
                Event::PromptBegan { claim } => {
                    claim.execution_id == bound.execution_id && claim.generation >= bound.generation
                }
                _ => false,
            })
        };
        // Some attempt begun since the retirement bound a full identity no attempt begun
        // before it had (the lifecycle then stays open for the attempts after it).
        let re_opened = since.iter().enumerate().any(|(at, e)| {
            match e {
            Event::PromptBegan { claim } | Event::PromptBound { claim } => {
                claim.execution_id.is_some()
                    && claim.generation != 0
                    && !held_before(claim)
                    && since[..=at].iter().any(|e| {
                        matches!(e, Event::PromptBegan { claim: began } if compatible(began, claim))
                    })
            }
            _ => false,
        }
        });
        prop_assert!(
            re_opened,
            "automatic after the retirement at {} without a new attempt bound in full\n{}",
            retired,
            trace(events, index)
        );
    }
    Ok(())
}

/// Invariant: an attempt settles at most one terminal outcome for its full identity; every
/// re-delivery gets it again, marked a manual duplicate (issue 17, item 1).
fn check_one_settlement(events: &[Event], outcomes: &[Outcome]) -> Result<(), TestCaseError> {
    let mut settled: HashMap<(usize, Option<String>, u64), (usize, &Outcome)> = HashMap::new();
    let mut begin = None;
    for (index, (event, outcome)) in events.iter().zip(outcomes).enumerate() {
        if matches!(event, Event::PromptBegan { .. }) && *outcome != Outcome::AttemptRepeated {
            begin = Some(index);
        }
        let Some(begin) = begin else { continue };
        if !is_terminal(event) {
            continue;
        }
        let claim = claim_of(event).unwrap();
        if claim.execution_id.is_none() || claim.generation == 0 {
            continue;
        }
        let settles = match outcome {
            Outcome::Completed => true,
            // A retired lifecycle or a poisoned session outranks staleness, so it can hide
            // another attempt's failure; only failures known to be this attempt's settle it.
            Outcome::Failed(verdict) => !matches!(
                verdict.safety,
                Safety::Stale
                    | Safety::NoRecord
                    | Safety::LifecycleRetired
                    | Safety::SessionPoisoned
            ),
            _ => false,
        };
        if !settles {
            continue;
        }
        if let Some((first, earlier)) =
            settled.get(&(begin, claim.execution_id.clone(), claim.generation))
        {
            let expected = match earlier {
                Outcome::Failed(verdict) => Outcome::Failed(Box::new(Verdict {
                    duplicate: true,
                    disposition: Disposition::Manual,
                    ..(**verdict).clone()
                })),
                other => (*other).clone(),
            };
            prop_assert_eq!(
                &expected,
                outcome,
                "attempt settled twice (first at {})\n{}",
                first,
                trace(events, index)
            );
        } else {
            // (A first settlement under a full claim may itself be a duplicate: the record
            // settled earlier under a claim that named no execution or generation.)
            settled.insert(
                (begin, claim.execution_id.clone(), claim.generation),
                (index, outcome),
            );
        }
    }
    Ok(())
}

/// Invariant: a stale event never changes a later answer: dropping every event the engine
/// called stale leaves every other outcome as it was.
fn check_stale_is_inert(
    provider: &str,
    events: &[Event],
    outcomes: &[Outcome],
) -> Result<(), TestCaseError> {
    let stale = |outcome: &Outcome| match outcome {
        Outcome::Stale => true,
        // A stale failure does not consume Cursor's pending marker either (§A.5; AC .2, .12).
        Outcome::Failed(verdict) => verdict.safety == Safety::Stale,
        _ => false,
    };
    if !outcomes.iter().any(stale) {
        return Ok(());
    }
    let kept: Vec<(usize, &Event)> = events
        .iter()
        .enumerate()
        .filter(|(i, _)| !stale(&outcomes[*i]))
        .collect();
    let replayed = run_engine(
        provider,
        &kept.iter().map(|(_, e)| (*e).clone()).collect::<Vec<_>>(),
    );
    for ((index, _), outcome) in kept.iter().zip(&replayed) {
        prop_assert_eq!(
            outcome,
            &outcomes[*index],
            "removing stale events changed event {}\n{}",
            index,
            trace(events, *index)
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 6_000,
        max_shrink_iters: 20_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_engine_agrees_with_the_naive_model((provider, events) in session()) {
        let outcomes = run_engine(&provider, &events);
        let mut model = Model::new(&provider);
        for (index, (event, engine)) in events.iter().zip(&outcomes).enumerate() {
            let expected = model.apply(event);
            prop_assert_eq!(
                engine,
                &expected,
                "provider {:?}, event {}\n{}",
                provider,
                index,
                trace(&events, index)
            );
        }
        check_automatic_only_when_the_gate_holds(&provider, &events, &outcomes, &model)?;
        check_nothing_automatic_after_retirement(&events, &outcomes)?;
        check_one_settlement(&events, &outcomes)?;
        check_stale_is_inert(&provider, &events, &outcomes)?;
    }
}

// ---------------------------------------------------------------------------------------------
// Regression tests: minimized event sequences on which the engine once disagreed with the
// reference (found by the property test above), kept so that each rule stays pinned by a
// fixed case whatever the random search happens to draw. Each test's doc cites the rule.
// ---------------------------------------------------------------------------------------------

fn assert_model_agrees(provider: &str, events: &[Event]) {
    let outcomes = run_engine(provider, events);
    let mut model = Model::new(provider);
    for (index, (event, engine)) in events.iter().zip(&outcomes).enumerate() {
        let expected = model.apply(event);
        assert_eq!(engine, &expected, "event {index}\n{}", trace(events, index));
    }
    for check in [
        check_automatic_only_when_the_gate_holds(provider, events, &outcomes, &model),
        check_nothing_automatic_after_retirement(events, &outcomes),
        check_one_settlement(events, &outcomes),
    ] {
        if let Err(error) = check {
            panic!("{error}");
        }
    }
}

/// The engine's verdict on event `index` of `events`.
fn verdict_at(provider: &str, events: &[Event], index: usize) -> Verdict {
    match &run_engine(provider, events)[index] {
        Outcome::Failed(verdict) => (**verdict).clone(),
        other => panic!("expected a verdict, got {other:?}"),
    }
}

fn overloaded_failure(claim: Claim) -> Event {
    Event::PromptFailed {
        claim,
        error: prompt_error(-32603, OVERLOADED_TERMINAL, None),
        occurred_at: OCCURRED_AT[0].to_owned(),
        lifecycle: None,
    }
}

/// Issue 17, item 1, the issue's own log: a terminal failure re-delivered after the lifecycle
/// was retired was automatic again, in the engine and in this model alike (both returned the
/// settled verdict before consulting the retirement). Now it is a manual duplicate.
#[test]
fn a_settled_failure_re_delivered_after_retirement_is_a_manual_duplicate() {
    let events = [
        Event::PromptBegan {
            claim: full("exec-1", 7),
        },
        overloaded_failure(full("exec-1", 7)),
        Event::LifecycleRetired,
        overloaded_failure(full("exec-1", 7)),
    ];
    assert_model_agrees("claude-acp", &events);
    let verdict = verdict_at("claude-acp", &events, 3);
    assert_eq!(
        (verdict.disposition, verdict.duplicate),
        (Disposition::Manual, true)
    );
}

/// Issue 17, item 2: begin, tool call, retired, the same begin again, terminal — the repeated
/// begin neither re-opens the lifecycle nor wipes the effect fence.
#[test]
fn a_repeated_begin_after_retirement_keeps_the_attempt_manual() {
    let events = [
        Event::PromptBegan {
            claim: full("exec-1", 7),
        },
        Event::ToolCall {
            claim: full("exec-1", 7),
            scope: ToolScope::TopLevel,
        },
        Event::LifecycleRetired,
        Event::PromptBegan {
            claim: full("exec-1", 7),
        },
        overloaded_failure(full("exec-1", 7)),
    ];
    assert_model_agrees("claude-acp", &events);
    assert_eq!(
        verdict_at("claude-acp", &events, 4).disposition,
        Disposition::Manual
    );
}

fn full(execution: &str, generation: u64) -> Claim {
    Claim {
        execution_id: Some(execution.to_owned()),
        generation,
    }
}

/// §A.5 `bindPromptAttempt` ("a *different* exec or gen → evidenceKnown=false") and §G.4
/// ("an identity without exec/gen once bound → poisoned"): a bind that lacks the execution
/// and generation the record already bound is not a no-op `Bound`.
#[test]
fn an_identity_less_bind_after_a_full_bind_poisons() {
    assert_model_agrees(
        "claude-acp",
        &[
            Event::PromptBegan {
                claim: Claim::default(),
            },
            Event::PromptBound {
                claim: full("exec-1", 7),
            },
            Event::PromptBound {
                claim: Claim::default(),
            },
        ],
    );
}

/// The `Event::LifecycleRetired` and `Session` docs ("evidence reads as unknown until a *new*
/// attempt binds its full identity"; "re-opens only once a new attempt's full identity is
/// bound") and §A.5 (a retired lifecycle reads every flag as false; nothing re-opens it short
/// of a new attempt): re-binding the attempt that was current when its retry loop was retired
/// must not make that attempt's failure automatic again.
#[test]
fn re_binding_the_retired_attempt_does_not_re_open_the_lifecycle() {
    assert_model_agrees(
        "claude-acp",
        &[
            Event::PromptBegan {
                claim: full("exec-1", 1),
            },
            Event::LifecycleRetired,
            Event::PromptBound {
                claim: full("exec-1", 1),
            },
            Event::PromptFailed {
                claim: full("exec-1", 1),
                error: prompt_error(-32603, OVERLOADED_TERMINAL, None),
                occurred_at: OCCURRED_AT[0].to_owned(),
                lifecycle: None,
            },
        ],
    );
}

/// Found by the model test: a bind belongs to the record current when it arrives. Here a record
/// begun after the retirement without an identity is superseded by another begin; the bind that
/// follows conflicts with that later record (poisoning it) and binds nothing, so nothing new was
/// bound and the lifecycle stays retired. The model used to replay the earlier record over the
/// later record's events, saw the bind complete it, and re-opened the lifecycle.
#[test]
fn a_bind_after_a_later_begin_does_not_re_open_a_retired_lifecycle_through_an_earlier_record() {
    let none = Claim {
        execution_id: None,
        generation: 0,
    };
    let generation_only = Claim {
        execution_id: None,
        generation: 1,
    };
    assert_model_agrees(
        "claude-acp",
        &[
            Event::PromptBegan {
                claim: full("exec-2", 1),
            },
            Event::LifecycleRetired,
            Event::PromptBegan { claim: none },
            Event::PromptBegan {
                claim: generation_only,
            },
            Event::PromptBound {
                claim: full("exec-1", 2),
            },
            Event::PromptFailed {
                claim: full("exec-1", 1),
                error: prompt_error(-32603, OVERLOADED_TERMINAL, None),
                occurred_at: OCCURRED_AT[0].to_owned(),
                lifecycle: None,
            },
        ],
    );
}

/// §D.5 "Supersession and re-arm": a pending marker is cleared by "a later non-empty assistant
/// or thought chunk in the same generation, or a new tool call" — a list that a partial
/// utility result is not on (AC .12's "no later progress" does not widen it). The marker stays
/// pending and the prompt yields one structured failure (manual: the partial result is output)
/// instead of completing with the control chunk suppressed.
#[test]
fn a_partial_result_does_not_supersede_a_cursor_marker() {
    assert_model_agrees(
        "cursor-acp",
        &[
            Event::PromptBegan {
                claim: full("exec-1", 1),
            },
            Event::Chunk {
                claim: full("exec-1", 1),
                role: Role::Assistant,
                text: "Error: RetriableError: [unavailable] PING timed out".to_owned(),
                provider_diagnostic_candidate: false,
            },
            Event::PartialResult {
                claim: full("exec-1", 1),
            },
            Event::PromptReturned {
                claim: full("exec-1", 1),
                occurred_at: OCCURRED_AT[0].to_owned(),
            },
        ],
    );
}

/// The `Outcome::Failed` docs ("exactly one per prompt"), the settled verdict's docs
/// ("immutable, so a re-delivered terminal event gets the same answer whatever arrived in
/// between") and §D.5 ("exactly one" terminal event per prompt): once the initial launch's
/// prompt completed, a later failure claiming that attempt — adopting the execution id the
/// launch record lacked (§A.5) — gets the stored `Completed`, not a fresh verdict (which here
/// would be `Safe`/`Automatic`: an automatic retry of a prompt that already completed).
#[test]
fn a_completed_prompt_is_not_failed_again_by_a_claim_that_adopts_the_execution() {
    let launch = Claim {
        execution_id: None,
        generation: 1,
    };
    assert_model_agrees(
        "claude-acp",
        &[
            Event::PromptBegan {
                claim: launch.clone(),
            },
            Event::PromptReturned {
                claim: launch,
                occurred_at: OCCURRED_AT[0].to_owned(),
            },
            Event::PromptFailed {
                claim: full("exec-1", 1),
                error: prompt_error(-32603, OVERLOADED_TERMINAL, None),
                occurred_at: OCCURRED_AT[0].to_owned(),
                lifecycle: None,
            },
        ],
    );
}

/// §A.5 (a different generation is stale: rejected, it changes nothing), AC .2 and AC .12
/// ("stale evidence … stay[s] ordinary output"): a failure of another generation must not
/// consume the current attempt's pending Cursor marker: the current prompt still yields its
/// one structured failure instead of completing.
#[test]
fn a_stale_failure_does_not_consume_a_pending_cursor_marker() {
    let stale = |generation| Event::PromptFailed {
        claim: full("exec-1", generation),
        error: prompt_error(-32603, OVERLOADED_TERMINAL, None),
        occurred_at: OCCURRED_AT[0].to_owned(),
        lifecycle: None,
    };
    assert_model_agrees(
        "cursor-acp",
        &[
            Event::PromptBegan {
                claim: full("exec-1", 7),
            },
            Event::Chunk {
                claim: full("exec-1", 7),
                role: Role::Assistant,
                text: "Error: RetriableError: [unavailable] PING timed out".to_owned(),
                provider_diagnostic_candidate: false,
            },
            stale(6),
            Event::PromptReturned {
                claim: full("exec-1", 7),
                occurred_at: OCCURRED_AT[0].to_owned(),
            },
        ],
    );
}

/// §D.3: the orchestrator imports the lifecycle's diagnostic with
/// `observeLifecycleProviderDiagnosticLocked`, "which re-classifies; an empty text or a
/// non-high / non-fallback result counts as ordinary output" — and ordinary output closes the
/// fence (§D.2, §G.4 fail closed), also when the stream already recorded a diagnostic: no
/// automatic retry.
#[test]
fn a_non_eligible_lifecycle_diagnostic_counts_as_output() {
    assert_model_agrees(
        "claude-acp",
        &[
            Event::PromptBegan {
                claim: full("exec-1", 1),
            },
            Event::Chunk {
                claim: full("exec-1", 1),
                role: Role::Assistant,
                text: OVERLOADED_CHUNK.to_owned(),
                provider_diagnostic_candidate: true,
            },
            Event::PromptFailed {
                claim: full("exec-1", 1),
                error: prompt_error(-32603, OVERLOADED_TERMINAL, None),
                occurred_at: OCCURRED_AT[0].to_owned(),
                lifecycle: Some(LifecycleSnapshot {
                    evidence_known: true,
                    provider_diagnostic_text: Some("peer disconnected before response".to_owned()),
                    ..LifecycleSnapshot::default()
                }),
            },
        ],
    );
}

/// §A.5 (a stale identity is rejected: "reject as stale and do not poison"; the import
/// `observeLifecycleProviderDiagnosticLocked` runs only on a correlated event), AC .2 and
/// AC .16 ("stale generation … shall keep the diagnostic as ordinary output"): another
/// execution's failure must not plant its lifecycle diagnostic in the current attempt's
/// record, where it would report a diagnostic the current attempt never streamed and, first
/// winning, decide later correlations.
#[test]
fn a_stale_failure_does_not_import_its_lifecycle_diagnostic() {
    let failed = |claim: Claim, lifecycle| Event::PromptFailed {
        claim,
        error: prompt_error(-32603, OVERLOADED_TERMINAL, None),
        occurred_at: OCCURRED_AT[0].to_owned(),
        lifecycle,
    };
    assert_model_agrees(
        "claude-acp",
        &[
            Event::PromptBegan {
                claim: full("exec-2", 1),
            },
            failed(
                full("exec-1", 1),
                Some(LifecycleSnapshot {
                    evidence_known: false,
                    provider_diagnostic_text: Some(OVERLOADED_CHUNK.to_owned()),
                    ..LifecycleSnapshot::default()
                }),
            ),
            failed(full("exec-2", 1), None),
        ],
    );
}
