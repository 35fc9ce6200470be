//! What a traced classification records: for every rule in priority order, whether it fired
//! and if not why, and every source of a reset time consulted. `faultline explain` and the
//! compiler's witness verification read it; the classification itself never does.

use super::view::RulePosition;
use crate::text::Unwrapping;
use crate::timing::HintStep;
use crate::vocab::EvidenceField;

/// What happened to one rule during a classification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Step {
    /// A guard on this field does not hold.
    Guard(EvidenceField),
    /// None of the rule's literals occurs in the text.
    Prefiltered,
    /// This matcher (0-based) does not match.
    NoMatch(usize),
    /// This veto (0-based) matched.
    Vetoed(usize),
    /// The remediation capture found nothing.
    NoCapture,
    /// The rule fired.
    Fired,
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Step::Guard(field) => write!(f, "guard on `{field}` does not hold"),
            Step::Prefiltered => f.write_str("none of its literals occurs (prefilter)"),
            Step::NoMatch(index) => write!(f, "matcher {} does not match", index + 1),
            Step::Vetoed(index) => write!(f, "vetoed by `unless` {}", index + 1),
            Step::NoCapture => f.write_str("remediation capture found nothing"),
            Step::Fired => f.write_str("fired"),
        }
    }
}

/// What happened to every rule during one classification, by position in priority order
/// ([`crate::Bundle::classify_traced`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trace {
    /// One step per rule, in priority order.
    pub(crate) steps: Vec<Step>,
    /// Every source of a reset time consulted, in order.
    pub(crate) timing: Vec<HintStep>,
    /// The reading the steps are of, when the text as given fell to a low-confidence rule and
    /// an unwrapped reading of it did not.
    pub(crate) unwrapped: Option<Unwrapping>,
}

impl Trace {
    /// Every rule's step, in priority order.
    pub fn steps(&self) -> impl ExactSizeIterator<Item = (RulePosition, Step)> + '_ {
        self.steps
            .iter()
            .enumerate()
            .map(|(index, step)| (RulePosition::from_index(index), *step))
    }

    /// What happened to the rule at `position`.
    pub fn step(&self, position: RulePosition) -> Option<Step> {
        self.steps.get(position.as_usize()).copied()
    }

    /// Whether the rule at `position` fired.
    pub fn fired(&self, position: RulePosition) -> bool {
        self.step(position) == Some(Step::Fired)
    }

    /// The position of the first rule that fired: the winner.
    pub fn winner(&self) -> Option<RulePosition> {
        self.steps
            .iter()
            .position(|step| *step == Step::Fired)
            .map(RulePosition::from_index)
    }

    /// Every source of a reset time consulted, in order.
    pub fn timing(&self) -> &[HintStep] {
        &self.timing
    }

    /// The unwrapped reading of the text the steps are of ([`crate::Evidence::unwrapped`]);
    /// `None` when they are of the text as given.
    pub fn unwrapped(&self) -> Option<Unwrapping> {
        self.unwrapped
    }
}
