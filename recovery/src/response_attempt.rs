//! The response-attempt retry boundary (AC .26–.28): the retraction of an abandoned provider
//! response attempt's transcript records.
//!
//! A provider can abandon a partially streamed response and retry it inside the same prompt.
//! The abandoned attempt's assistant and thinking rows must then disappear before the
//! replacement streams, without touching anything the prompt committed earlier.
//! The engine's tracker (private, driven through [`crate::Recovery`]) follows one agent
//! execution's prompts: which records the current attempt allocated and where the last commit
//! boundary was. When a boundary arrives it returns the
//! [`TranscriptEffect`]s that retract the abandoned attempt (AC .27, .28), which the
//! orchestrator applies in order (drop the pending history segment, delete rows, publish), all
//! before it forwards the next provider update.
//!
//! Recognising the boundary in the provider's protocol metadata is the ACP adapter's job
//! (`faultline_acp::dialect`); it reaches the engine as a typed event, and the tracker checks
//! its generation against the active prompt.
//!
//! What this module deliberately does *not* own: the prompt's output and effect fences
//! (reference §D.2). They stay sticky for the whole prompt, and no [`TranscriptEffect`] names
//! them, so deleting transcript rows can never turn a later terminal failure into permission
//! for an automatic replay (AC .28).

use std::collections::HashSet;
use std::fmt;

use serde::{Deserialize, Serialize};

/// An orchestrator transcript record id: the row an assistant or thinking message is stored as.
///
/// This is the orchestrator's own id, not the provider's protocol message id: a provider may
/// reuse a protocol id across a commit boundary, but the orchestrator maps it to the existing
/// row.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct MessageId(String);

impl MessageId {
    /// Wraps a record id.
    pub fn new(id: impl Into<String>) -> Self {
        MessageId(id.into())
    }

    /// The record id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The kind of a streamed transcript record. Tool rows are never reported: they are effects,
/// not attempt output, and a boundary must never remove them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    /// An assistant message; its text also feeds the fallback assistant history.
    Assistant,
    /// A thinking (reasoning) message.
    Thinking,
}

/// Where a tool call sits, which decides whether it is a commit boundary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolScope {
    /// A tool call of the prompt's own turn: it commits every record visible so far. The
    /// default: when nobody says where a tool call sits, the records before it are kept.
    #[default]
    TopLevel,
    /// A tool call inside a subagent (under a parent tool call). It neither commits nor can
    /// be retracted: tool rows never enter the eligible list, so a reset cannot reach the
    /// parent tool row either.
    Nested,
}

/// How a prompt generation stopped owning the execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptEnd {
    /// The prompt returned.
    Completed,
    /// The prompt was cancelled, or replaced by a cancellation.
    Cancelled,
    /// The prompt was handed off to the foreground.
    HandedOff,
}

/// One thing that happened to the execution, in stream order: what the engine feeds the
/// tracker.
///
/// Events naming a generation other than the active one are stale and ignored; so is
/// generation zero, which never identifies a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AttemptEvent {
    /// A prompt generation started. Generations only move forward: a start at or below the
    /// highest generation already started (including zero) is stale and ignored, which is
    /// also why a boundary can never reach back into a completed generation.
    PromptStarted {
        /// The new prompt generation.
        generation: u64,
    },
    /// The lifecycle allocated a new record. It becomes eligible for retraction unless this
    /// prompt has already seen the id (a reused row never becomes eligible again).
    RecordAllocated {
        /// The prompt generation the output belongs to.
        generation: u64,
        /// The newly allocated record.
        id: MessageId,
        /// Assistant or thinking.
        kind: RecordKind,
    },
    /// Output was appended to an existing record, for example a provider reusing a protocol
    /// id across a commit boundary. Never makes the record eligible.
    RecordContinued {
        /// The prompt generation the output belongs to.
        generation: u64,
        /// The existing record appended to.
        id: MessageId,
        /// Assistant or thinking.
        kind: RecordKind,
    },
    /// A tool call started. A [`ToolScope::TopLevel`] call is a commit boundary.
    ToolCall {
        /// The prompt generation the tool call belongs to.
        generation: u64,
        /// Top-level or nested under a subagent.
        scope: ToolScope,
    },
    /// A response-attempt retry boundary the adapter recognised. The generation is checked
    /// here: a zero or stale one (the active prompt may have changed since the update was
    /// recognised) is refused before anything is detached.
    ResponseAttemptReset {
        /// The generation whose response attempt was abandoned.
        generation: u64,
    },
    /// The prompt generation ended. Stale ends are ignored so a late completion of an older
    /// prompt cannot clear the current prompt's tracking.
    PromptEnded {
        /// The generation that ended.
        generation: u64,
        /// Why it ended.
        reason: PromptEnd,
    },
    /// The execution was torn down: nothing is tracked any more. A new execution gets a
    /// new tracker.
    TornDown,
}

/// Durably remove these records, then publish one `response_attempt_reset` with their ids.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Retraction {
    /// The prompt generation the records belong to.
    pub generation: u64,
    /// The abandoned attempt's records in allocation order; never empty.
    pub message_ids: Vec<MessageId>,
}

/// What the orchestrator must do to its transcript and history, in the order given, before it
/// forwards the next update.
///
/// No variant touches output or effect evidence: those fences are not this module's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "effect", rename_all = "snake_case")]
pub enum TranscriptEffect {
    /// Discard the assistant-history segment not yet committed, so abandoned text never
    /// enters a later fallback resume context. Committed history is not rewritten.
    DropUncommittedHistory {
        /// The prompt generation whose pending segment is dropped.
        generation: u64,
    },
    /// Remove the abandoned attempt's records.
    Retract(Retraction),
}

/// The active prompt generation's attempt-local state.
#[derive(Debug)]
struct ActivePrompt {
    generation: u64,
    /// Records allocated since the last commit boundary or reset, in allocation order.
    eligible: Vec<MessageId>,
    /// Every record this prompt has allocated or appended to. A record seen once can never
    /// become eligible again, whatever the caller later reports.
    seen: HashSet<MessageId>,
    /// Assistant text has streamed since the history was last committed or dropped.
    history_pending: bool,
}

/// Tracks one agent execution's response attempts and emits the retraction of an abandoned
/// attempt (AC .27, .28): the engine's transcript part.
///
/// Sans-I/O: the engine feeds it every [`AttemptEvent`] in stream order, and the orchestrator
/// applies the returned effects before forwarding the next provider update; that is what puts
/// the retraction before any replacement output.
#[derive(Debug, Default)]
pub(crate) struct AttemptTracker {
    /// The highest generation ever started; later starts must exceed it.
    highest_started: u64,
    /// `None` between prompts, after teardown, and before the first start.
    active: Option<ActivePrompt>,
}

impl AttemptTracker {
    /// A tracker with no active prompt.
    pub(crate) fn new() -> Self {
        AttemptTracker::default()
    }

    /// The active prompt generation, if a prompt owns the execution.
    #[cfg(test)]
    pub(crate) fn active_generation(&self) -> Option<u64> {
        self.active.as_ref().map(|prompt| prompt.generation)
    }

    /// The records a boundary would retract now, in allocation order.
    pub(crate) fn eligible(&self) -> &[MessageId] {
        self.active
            .as_ref()
            .map_or(&[], |prompt| prompt.eligible.as_slice())
    }

    /// Applies one event; returns what to do, in order. Only an accepted
    /// [`AttemptEvent::ResponseAttemptReset`] returns anything, and a repeated one with no
    /// new output returns nothing.
    #[must_use = "the effects retract the abandoned attempt and must be applied"]
    pub(crate) fn handle(&mut self, event: AttemptEvent) -> Vec<TranscriptEffect> {
        match event {
            AttemptEvent::PromptStarted { generation } => {
                // `highest_started` starts at zero, so this also refuses generation zero.
                if generation > self.highest_started {
                    self.highest_started = generation;
                    self.active = Some(ActivePrompt {
                        generation,
                        eligible: Vec::new(),
                        seen: HashSet::new(),
                        history_pending: false,
                    });
                }
            }
            AttemptEvent::RecordAllocated {
                generation,
                id,
                kind,
            } => {
                if let Some(prompt) = self.current(generation) {
                    prompt.history_pending |= kind == RecordKind::Assistant;
                    if prompt.seen.insert(id.clone()) {
                        prompt.eligible.push(id);
                    }
                }
            }
            AttemptEvent::RecordContinued {
                generation,
                id,
                kind,
            } => {
                if let Some(prompt) = self.current(generation) {
                    prompt.history_pending |= kind == RecordKind::Assistant;
                    // A record first met through an append predates this attempt (or this
                    // tracker): remember it so no later report can make it eligible.
                    prompt.seen.insert(id);
                }
            }
            AttemptEvent::ToolCall {
                generation,
                scope: ToolScope::TopLevel,
            } => {
                // The orchestrator flushes the visible records and their history at the
                // tool call, so they are committed: no later boundary may touch them.
                if let Some(prompt) = self.current(generation) {
                    prompt.eligible.clear();
                    prompt.history_pending = false;
                }
            }
            AttemptEvent::ToolCall {
                scope: ToolScope::Nested,
                ..
            } => {}
            AttemptEvent::ResponseAttemptReset { generation } => {
                // A stale or zero generation matches no active prompt, so it is refused here,
                // before anything is detached.
                if let Some(prompt) = self.current(generation) {
                    return Self::reset(prompt);
                }
            }
            AttemptEvent::PromptEnded { generation, .. } => {
                if self.current(generation).is_some() {
                    self.active = None;
                }
            }
            AttemptEvent::TornDown => self.active = None,
        }
        Vec::new()
    }

    /// The active prompt, if `generation` is the one it belongs to.
    fn current(&mut self, generation: u64) -> Option<&mut ActivePrompt> {
        self.active
            .as_mut()
            .filter(|prompt| prompt.generation == generation)
    }

    /// Detaches the abandoned attempt: the history segment first, then the records, the
    /// order the reference system's lifecycle resets its local state before publishing.
    fn reset(prompt: &mut ActivePrompt) -> Vec<TranscriptEffect> {
        let generation = prompt.generation;
        let mut effects = Vec::new();
        if std::mem::take(&mut prompt.history_pending) {
            effects.push(TranscriptEffect::DropUncommittedHistory { generation });
        }
        // Retracted ids stay in `seen`: a second reset can only reach records allocated
        // after this one.
        let message_ids = std::mem::take(&mut prompt.eligible);
        if !message_ids.is_empty() {
            effects.push(TranscriptEffect::Retract(Retraction {
                generation,
                message_ids,
            }));
        }
        effects
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GEN: u64 = 7;

    fn id(text: &str) -> MessageId {
        MessageId::new(text)
    }

    fn ids(texts: &[&str]) -> Vec<MessageId> {
        texts.iter().map(|text| id(text)).collect()
    }

    fn start(generation: u64) -> AttemptEvent {
        AttemptEvent::PromptStarted { generation }
    }

    fn alloc(generation: u64, text: &str, kind: RecordKind) -> AttemptEvent {
        AttemptEvent::RecordAllocated {
            generation,
            id: id(text),
            kind,
        }
    }

    fn assistant(text: &str) -> AttemptEvent {
        alloc(GEN, text, RecordKind::Assistant)
    }

    fn thinking(text: &str) -> AttemptEvent {
        alloc(GEN, text, RecordKind::Thinking)
    }

    fn append(text: &str) -> AttemptEvent {
        AttemptEvent::RecordContinued {
            generation: GEN,
            id: id(text),
            kind: RecordKind::Assistant,
        }
    }

    fn tool(scope: ToolScope) -> AttemptEvent {
        AttemptEvent::ToolCall {
            generation: GEN,
            scope,
        }
    }

    fn reset(generation: u64) -> AttemptEvent {
        AttemptEvent::ResponseAttemptReset { generation }
    }

    fn retract(generation: u64, texts: &[&str]) -> TranscriptEffect {
        TranscriptEffect::Retract(Retraction {
            generation,
            message_ids: ids(texts),
        })
    }

    fn drop_history(generation: u64) -> TranscriptEffect {
        TranscriptEffect::DropUncommittedHistory { generation }
    }

    /// A tracker with prompt `GEN` started and these events applied, none producing effects.
    fn tracker_with(events: Vec<AttemptEvent>) -> AttemptTracker {
        let mut tracker = AttemptTracker::new();
        for event in std::iter::once(start(GEN)).chain(events) {
            assert_eq!(tracker.handle(event), Vec::new());
        }
        tracker
    }

    // ---- AC .26: the generation of a boundary ------------------------------------------

    #[test]
    fn ac_26_zero_generation_is_not_a_boundary() {
        // The tracker refuses it before detaching anything.
        let mut tracker = tracker_with(vec![assistant("a1")]);
        assert_eq!(tracker.handle(reset(0)), Vec::new());
        assert_eq!(tracker.eligible(), ids(&["a1"]));
        // And a zero-generation prompt never becomes active.
        let mut idle = AttemptTracker::new();
        assert_eq!(idle.handle(start(0)), Vec::new());
        assert_eq!(idle.active_generation(), None);
    }

    #[test]
    fn ac_26_stale_generation_is_ignored() {
        // Recognised for GEN, but the prompt moved on before the tracker saw it: the
        // replacement prompt's records are untouched.
        let mut tracker = tracker_with(vec![
            assistant("old"),
            start(GEN + 1),
            alloc(GEN + 1, "new", RecordKind::Assistant),
        ]);
        assert_eq!(tracker.handle(reset(GEN)), Vec::new());
        assert_eq!(tracker.eligible(), ids(&["new"]));
        // Stale output cannot join the current attempt either.
        assert_eq!(tracker.handle(assistant("late")), Vec::new());
        assert_eq!(tracker.eligible(), ids(&["new"]));
    }

    #[test]
    fn ac_26_multiple_sequential_boundaries() {
        let mut tracker = tracker_with(vec![thinking("t1"), assistant("a1")]);
        assert_eq!(
            tracker.handle(reset(GEN)),
            vec![drop_history(GEN), retract(GEN, &["t1", "a1"])]
        );
        for event in [thinking("t2"), assistant("a2")] {
            assert_eq!(tracker.handle(event), Vec::new());
        }
        // The second boundary reaches only what the second attempt allocated.
        assert_eq!(
            tracker.handle(reset(GEN)),
            vec![drop_history(GEN), retract(GEN, &["t2", "a2"])]
        );
        assert_eq!(tracker.handle(assistant("a3")), Vec::new());
        assert_eq!(
            tracker.handle(reset(GEN)),
            vec![drop_history(GEN), retract(GEN, &["a3"])]
        );
        assert_eq!(tracker.active_generation(), Some(GEN));
    }

    // ---- AC .27: retraction ----------------------------------------------------------------

    #[test]
    fn ac_27_retraction_lists_ids_in_allocation_order_before_replacement() {
        let mut tracker = tracker_with(vec![
            assistant("a1"),
            append("a1"),
            thinking("t1"),
            assistant("a2"),
            append("a2"),
        ]);
        let effects = tracker.handle(reset(GEN));
        assert_eq!(
            effects,
            vec![drop_history(GEN), retract(GEN, &["a1", "t1", "a2"])]
        );
        // The effects come out of the boundary itself, so they are applied before the
        // replacement's first chunk is even handled; the replacement is not retracted.
        assert_eq!(tracker.handle(assistant("replacement")), Vec::new());
        assert_eq!(tracker.eligible(), ids(&["replacement"]));
    }

    #[test]
    fn ac_27_assistant_and_thinking_records_are_both_retracted() {
        // Thinking alone: the rows go, but there is no assistant history to drop.
        let mut tracker = tracker_with(vec![thinking("t1"), thinking("t2")]);
        assert_eq!(
            tracker.handle(reset(GEN)),
            vec![retract(GEN, &["t1", "t2"])]
        );
    }

    #[test]
    fn ac_27_appending_to_an_earlier_record_does_not_make_it_eligible() {
        // `early` was created before this tracker saw the prompt (or before the attempt).
        let mut tracker = tracker_with(vec![append("early"), assistant("a1")]);
        assert_eq!(
            tracker.handle(reset(GEN)),
            vec![drop_history(GEN), retract(GEN, &["a1"])]
        );
        // Even a later allocation report for it cannot make it eligible.
        let mut tracker = tracker_with(vec![append("early"), assistant("early")]);
        assert_eq!(tracker.handle(reset(GEN)), vec![drop_history(GEN)]);
    }

    // ---- AC .28: cleanup boundaries and safety ---------------------------------------------

    #[test]
    fn ac_28_commit_boundary_preserves_earlier_records() {
        let mut tracker = tracker_with(vec![
            thinking("t1"),
            assistant("a1"),
            tool(ToolScope::TopLevel),
            assistant("a2"),
        ]);
        assert_eq!(
            tracker.handle(reset(GEN)),
            vec![drop_history(GEN), retract(GEN, &["a2"])]
        );
    }

    #[test]
    fn ac_28_reused_protocol_id_never_becomes_eligible_again() {
        // The provider reuses `a1`'s protocol id after the tool call: the lifecycle continues
        // the committed row, which must survive the reset.
        let mut tracker = tracker_with(vec![
            assistant("a1"),
            tool(ToolScope::TopLevel),
            append("a1"),
            assistant("a2"),
        ]);
        assert_eq!(
            tracker.handle(reset(GEN)),
            vec![drop_history(GEN), retract(GEN, &["a2"])]
        );
        // A duplicate allocation report for a retracted row cannot revive it either.
        assert_eq!(tracker.handle(assistant("a2")), Vec::new());
        assert_eq!(tracker.handle(reset(GEN)), vec![drop_history(GEN)]);
    }

    #[test]
    fn ac_28_only_appends_to_committed_row_drop_history_but_retract_nothing() {
        let mut tracker = tracker_with(vec![
            assistant("a1"),
            tool(ToolScope::TopLevel),
            append("a1"),
        ]);
        // No row deletion (no truncation-offset guessing), but the abandoned appended text
        // must still leave the pending history.
        assert_eq!(tracker.handle(reset(GEN)), vec![drop_history(GEN)]);
    }

    #[test]
    fn ac_28_nested_tool_call_cannot_remove_the_parent_tool_row() {
        let mut tracker = tracker_with(vec![
            assistant("a1"),
            tool(ToolScope::TopLevel),
            tool(ToolScope::Nested),
            assistant("sub1"),
            tool(ToolScope::Nested),
            assistant("sub2"),
        ]);
        // Nested calls do not commit; but tool rows never enter the list, so the reset
        // reaches only the records after the parent tool call.
        let effects = tracker.handle(reset(GEN));
        assert_eq!(
            effects,
            vec![drop_history(GEN), retract(GEN, &["sub1", "sub2"])]
        );
    }

    #[test]
    fn ac_28_repeated_boundary_without_output_is_a_no_op() {
        let mut tracker = tracker_with(vec![assistant("a1")]);
        assert_eq!(
            tracker.handle(reset(GEN)),
            vec![drop_history(GEN), retract(GEN, &["a1"])]
        );
        for _ in 0..3 {
            assert_eq!(tracker.handle(reset(GEN)), Vec::new());
        }
        // A boundary right after a commit, or before any output, is a no-op too.
        let mut tracker = tracker_with(vec![assistant("a1"), tool(ToolScope::TopLevel)]);
        assert_eq!(tracker.handle(reset(GEN)), Vec::new());
        let mut tracker = tracker_with(Vec::new());
        assert_eq!(tracker.handle(reset(GEN)), Vec::new());
    }

    /// A stand-in for the orchestrator's fallback assistant history, driven only by the
    /// stream and the tracker's effects.
    #[derive(Debug, Default)]
    struct History {
        committed: String,
        pending: String,
    }

    impl History {
        fn commit(&mut self) {
            self.committed.push_str(&std::mem::take(&mut self.pending));
        }

        fn apply(&mut self, effects: &[TranscriptEffect]) {
            for effect in effects {
                match effect {
                    TranscriptEffect::DropUncommittedHistory { .. } => self.pending.clear(),
                    TranscriptEffect::Retract(_) => {}
                }
            }
        }
    }

    #[test]
    fn ac_28_abandoned_text_not_in_resume_context() {
        let mut tracker = tracker_with(Vec::new());
        let mut history = History::default();
        let mut stream = |event: AttemptEvent, text: &str, history: &mut History| {
            if matches!(
                event,
                AttemptEvent::ToolCall {
                    scope: ToolScope::TopLevel,
                    ..
                }
            ) {
                history.commit();
            }
            history.pending.push_str(text);
            let effects = tracker.handle(event);
            history.apply(&effects);
            effects
        };

        stream(assistant("a1"), "Reading the file. ", &mut history);
        stream(tool(ToolScope::TopLevel), "", &mut history);
        stream(assistant("a2"), "The answer is 4", &mut history);
        stream(append("a2"), "2, because", &mut history);
        let effects = stream(reset(GEN), "", &mut history);
        assert_eq!(effects, vec![drop_history(GEN), retract(GEN, &["a2"])]);
        stream(assistant("a3"), "The answer is 42.", &mut history);
        history.commit(); // the prompt completes

        assert_eq!(history.committed, "Reading the file. The answer is 42.");
        assert!(!history.committed.contains("because"));
    }

    /// The prompt's output and effect fences (§D.2), which the orchestrator owns.
    #[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
    struct Fences {
        output_observed: bool,
        effect_observed: bool,
    }

    impl Fences {
        fn observe(&mut self, event: &AttemptEvent) {
            match event {
                AttemptEvent::RecordAllocated { .. } | AttemptEvent::RecordContinued { .. } => {
                    self.output_observed = true;
                }
                AttemptEvent::ToolCall { .. } => self.effect_observed = true,
                _ => {}
            }
        }

        /// Exhaustive on purpose: a new effect variant must decide here, in review, whether
        /// it may touch the fences. None may.
        fn apply(&mut self, effect: &TranscriptEffect) {
            match effect {
                TranscriptEffect::DropUncommittedHistory { .. } | TranscriptEffect::Retract(_) => {}
            }
        }
    }

    #[test]
    fn ac_28_fences_survive_retraction() {
        let mut tracker = AttemptTracker::new();
        let mut fences = Fences::default();
        for event in [
            start(GEN),
            thinking("t1"),
            tool(ToolScope::TopLevel),
            assistant("a1"),
            reset(GEN),
            reset(GEN),
        ] {
            fences.observe(&event);
            for effect in tracker.handle(event) {
                fences.apply(&effect);
            }
        }
        // Rows were retracted, yet the prompt still counts as having produced output and
        // effects: a later terminal failure gets no replay permission from the reset.
        assert_eq!(
            fences,
            Fences {
                output_observed: true,
                effect_observed: true
            }
        );
    }

    #[test]
    fn ac_28_reset_never_reaches_into_a_completed_generation() {
        for reason in [
            PromptEnd::Completed,
            PromptEnd::Cancelled,
            PromptEnd::HandedOff,
        ] {
            let mut tracker = tracker_with(vec![assistant("a1")]);
            let end = AttemptEvent::PromptEnded {
                generation: GEN,
                reason,
            };
            assert_eq!(tracker.handle(end), Vec::new());
            assert_eq!(tracker.active_generation(), None);
            assert_eq!(tracker.handle(reset(GEN)), Vec::new(), "{reason:?}");
            // The completed generation cannot be started again to reopen it.
            assert_eq!(tracker.handle(start(GEN)), Vec::new());
            assert_eq!(tracker.handle(reset(GEN)), Vec::new(), "{reason:?}");
            assert!(tracker.eligible().is_empty());
        }
    }

    #[test]
    fn ac_28_prompt_lifecycle_clears_tracking() {
        // A new prompt starts with nothing eligible.
        let mut tracker = tracker_with(vec![assistant("a1")]);
        assert_eq!(tracker.handle(start(GEN + 1)), Vec::new());
        assert!(tracker.eligible().is_empty());
        assert_eq!(tracker.handle(reset(GEN + 1)), Vec::new());
        // Teardown forgets everything.
        let mut tracker = tracker_with(vec![assistant("a1")]);
        assert_eq!(tracker.handle(AttemptEvent::TornDown), Vec::new());
        assert_eq!(tracker.active_generation(), None);
        assert_eq!(tracker.handle(reset(GEN)), Vec::new());
    }

    #[test]
    fn ac_28_stale_end_does_not_clear_the_current_prompt() {
        let mut tracker = tracker_with(vec![
            start(GEN + 1),
            alloc(GEN + 1, "a1", RecordKind::Assistant),
        ]);
        let stale_end = AttemptEvent::PromptEnded {
            generation: GEN,
            reason: PromptEnd::Completed,
        };
        assert_eq!(tracker.handle(stale_end), Vec::new());
        assert_eq!(tracker.active_generation(), Some(GEN + 1));
        assert_eq!(
            tracker.handle(reset(GEN + 1)),
            vec![drop_history(GEN + 1), retract(GEN + 1, &["a1"])]
        );
    }

    // ---- A naive reference model, and the tracker checked against it -----------------------

    mod model {
        use std::collections::HashSet;

        use super::super::*;

        /// The active prompt's attempt: `(generation, eligible, assistant text pending)`.
        pub(super) type View = Option<(u64, Vec<MessageId>, bool)>;

        /// What the active prompt's attempt looks like after `history`, recomputed from the
        /// whole history every time.
        pub(super) fn view(history: &[AttemptEvent]) -> View {
            // Which prompt is active, and where it started.
            let mut highest = 0;
            let mut active: Option<(u64, usize)> = None;
            for (index, event) in history.iter().enumerate() {
                match event {
                    AttemptEvent::PromptStarted { generation } if *generation > highest => {
                        highest = *generation;
                        active = Some((*generation, index));
                    }
                    AttemptEvent::PromptEnded { generation, .. }
                        if active.map(|(g, _)| g) == Some(*generation) =>
                    {
                        active = None;
                    }
                    AttemptEvent::TornDown => active = None,
                    _ => {}
                }
            }
            let (generation, started) = active?;
            let ours = |g: &u64| *g == generation;
            let prompt = &history[started + 1..];

            // The attempt begins after the prompt's last commit boundary or reset.
            let attempt_start = prompt
                .iter()
                .rposition(|event| match event {
                    AttemptEvent::ToolCall {
                        generation: g,
                        scope: ToolScope::TopLevel,
                    }
                    | AttemptEvent::ResponseAttemptReset { generation: g } => ours(g),
                    _ => false,
                })
                .map_or(0, |position| position + 1);

            // Eligible: the attempt's allocations of ids this prompt never met before.
            let mut met = HashSet::new();
            let mut eligible = Vec::new();
            let mut pending = false;
            for (index, event) in prompt.iter().enumerate() {
                let (g, id, kind, allocated) = match event {
                    AttemptEvent::RecordAllocated {
                        generation,
                        id,
                        kind,
                    } => (generation, id, kind, true),
                    AttemptEvent::RecordContinued {
                        generation,
                        id,
                        kind,
                    } => (generation, id, kind, false),
                    _ => continue,
                };
                if !ours(g) {
                    continue;
                }
                let first_meeting = met.insert(id);
                if index >= attempt_start {
                    pending |= *kind == RecordKind::Assistant;
                    if allocated && first_meeting {
                        eligible.push(id.clone());
                    }
                }
            }
            Some((generation, eligible, pending))
        }

        /// What handling `event` must return, given the view of the history before it.
        pub(super) fn effects(before: &View, event: &AttemptEvent) -> Vec<TranscriptEffect> {
            let AttemptEvent::ResponseAttemptReset { generation } = event else {
                return Vec::new();
            };
            let Some((active, eligible, pending)) = before.clone() else {
                return Vec::new();
            };
            if active != *generation {
                return Vec::new();
            }
            let mut out = Vec::new();
            if pending {
                out.push(TranscriptEffect::DropUncommittedHistory { generation: active });
            }
            if !eligible.is_empty() {
                out.push(TranscriptEffect::Retract(Retraction {
                    generation: active,
                    message_ids: eligible,
                }));
            }
            out
        }
    }

    mod properties {
        use proptest::prelude::*;

        use super::super::*;
        use super::model;

        /// A generation relative to the highest started so far, so random sequences keep
        /// hitting the active prompt as well as stale, zero and future ones.
        #[derive(Debug, Clone, Copy)]
        enum Gen {
            Next,
            Current,
            Stale,
            Zero,
        }

        #[derive(Debug, Clone)]
        enum Step {
            Start(Gen),
            Allocate(Gen, u8, RecordKind),
            Continue(Gen, u8, RecordKind),
            Tool(Gen, ToolScope),
            Reset(Gen),
            End(Gen, PromptEnd),
            TearDown,
        }

        /// Picks one of `weights.len()` outcomes from `roll`, each as likely as its weight.
        fn pick(roll: u32, weights: &[u32]) -> usize {
            let mut roll = roll % weights.iter().sum::<u32>();
            for (index, weight) in weights.iter().enumerate() {
                if roll < *weight {
                    return index;
                }
                roll -= weight;
            }
            unreachable!("the roll is below the total weight")
        }

        /// Decodes one random number into a step. Generating plain numbers and decoding them
        /// is several times cheaper in debug builds than nested `prop_oneof!` trees, which
        /// keeps 4096 long sequences within the time budget; shrinking still removes steps
        /// and moves each toward `Start(Next)`.
        fn decode(roll: u32) -> Step {
            const GENS: [Gen; 4] = [Gen::Next, Gen::Current, Gen::Stale, Gen::Zero];
            let variant = roll % 22;
            let rest = roll / 22;
            // Starts mostly open the next prompt; everything else mostly hits the current one.
            let start_gen = GENS[pick(rest % 45, &[6, 1, 1, 1])];
            let event_gen = GENS[pick(rest % 45, &[1, 12, 1, 1])];
            let rest = rest / 45;
            // A small id pool makes reuse (within and across attempts and prompts) common.
            let id = (rest % 6) as u8;
            let kind = [RecordKind::Assistant, RecordKind::Thinking][(rest / 6 % 2) as usize];
            let scope = [ToolScope::TopLevel, ToolScope::Nested][(rest / 6 % 2) as usize];
            let reason = [
                PromptEnd::Completed,
                PromptEnd::Cancelled,
                PromptEnd::HandedOff,
            ][(rest / 6 % 3) as usize];
            match pick(variant, &[2, 8, 4, 2, 4, 1, 1]) {
                0 => Step::Start(start_gen),
                1 => Step::Allocate(event_gen, id, kind),
                2 => Step::Continue(event_gen, id, kind),
                3 => Step::Tool(event_gen, scope),
                4 => Step::Reset(event_gen),
                5 => Step::End(event_gen, reason),
                _ => Step::TearDown,
            }
        }

        fn resolve(step: &Step, highest: u64) -> AttemptEvent {
            let generation = |g: Gen| match g {
                Gen::Next => highest + 1,
                Gen::Current => highest,
                Gen::Stale => highest.saturating_sub(1),
                Gen::Zero => 0,
            };
            let record = |i: u8| MessageId::new(format!("m{i}"));
            match *step {
                Step::Start(g) => AttemptEvent::PromptStarted {
                    generation: generation(g),
                },
                Step::Allocate(g, i, kind) => AttemptEvent::RecordAllocated {
                    generation: generation(g),
                    id: record(i),
                    kind,
                },
                Step::Continue(g, i, kind) => AttemptEvent::RecordContinued {
                    generation: generation(g),
                    id: record(i),
                    kind,
                },
                Step::Tool(g, scope) => AttemptEvent::ToolCall {
                    generation: generation(g),
                    scope,
                },
                Step::Reset(g) => AttemptEvent::ResponseAttemptReset {
                    generation: generation(g),
                },
                Step::End(g, reason) => AttemptEvent::PromptEnded {
                    generation: generation(g),
                    reason,
                },
                Step::TearDown => AttemptEvent::TornDown,
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(4096))]

            /// Every output and every observable state of the tracker equals the naive
            /// model's, recomputed from the full history after each event.
            #[test]
            fn tracker_matches_the_reference_model(steps in prop::collection::vec(any::<u32>().prop_map(decode), 0..=60)) {
                let mut tracker = AttemptTracker::new();
                let mut history: Vec<AttemptEvent> = Vec::new();
                let mut highest = 0;
                // Per generation: every id retracted so far, to check nothing goes twice.
                let mut retracted: Vec<(u64, MessageId)> = Vec::new();
                let mut before = model::view(&history);
                for step in &steps {
                    let event = resolve(step, highest);
                    if let AttemptEvent::PromptStarted { generation } = event {
                        highest = highest.max(generation);
                    }
                    let expected = model::effects(&before, &event);
                    let actual = tracker.handle(event.clone());
                    prop_assert_eq!(&actual, &expected, "after {:?}, on {:?}", history, event);

                    for effect in &actual {
                        if let TranscriptEffect::Retract(retraction) = effect {
                            prop_assert!(!retraction.message_ids.is_empty());
                            for id in &retraction.message_ids {
                                let key = (retraction.generation, id.clone());
                                prop_assert!(!retracted.contains(&key), "{:?} retracted twice", key);
                                retracted.push(key);
                            }
                        }
                    }

                    history.push(event);
                    before = model::view(&history);
                    prop_assert_eq!(tracker.active_generation(), before.as_ref().map(|v| v.0));
                    let eligible = before.as_ref().map_or(&[][..], |v| v.1.as_slice());
                    prop_assert_eq!(tracker.eligible(), eligible);
                }
            }
        }
    }
}
