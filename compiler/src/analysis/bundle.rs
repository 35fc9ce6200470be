//! The analysis's one door into the compiled bundle: classifying evidence, and asking what one
//! rule alone does on it. Every call the analysis (and the example check) makes into
//! `faultline_runtime::bundle` is in this module, so a change of the bundle's API is a change
//! of this file only.

use faultline_runtime::{Bundle, Classification, Evidence, RulePosition, Step};

use crate::ir::RuleIndex;

/// The compiled bundle, and where each catalogue rule sits in it.
#[derive(Debug)]
pub(crate) struct Compiled<'a> {
    bundle: &'a Bundle,
    /// Per catalogue rule: its position in the bundle, when it is in it.
    positions: Vec<Option<RulePosition>>,
}

/// What one rule alone does on one evidence, in the bundle's own words (`fired`, `vetoed`, …).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RuleStep {
    /// Whether the rule fires.
    pub(crate) fired: bool,
    /// The bundle's description of the step.
    pub(crate) said: String,
    /// The veto (0-based, in the rule's order) that stopped the rule, if one did.
    pub(crate) vetoed_by: Option<usize>,
}

impl<'a> Compiled<'a> {
    /// The bundle whose rules are the catalogue's `bundle_order`, in that order (the order the
    /// lowering wrote them in; a stand-in catch-all may follow them).
    pub(crate) fn new(bundle: &'a Bundle, bundle_order: &[RuleIndex]) -> Self {
        let count = bundle_order
            .iter()
            .map(|rule| rule.as_usize() + 1)
            .max()
            .unwrap_or(0);
        let mut positions = vec![None; count];
        for (rule, view) in bundle_order.iter().zip(bundle.rules()) {
            if let Some(slot) = positions.get_mut(rule.as_usize()) {
                *slot = Some(view.position());
            }
        }
        Compiled { bundle, positions }
    }

    /// How the bundle classifies `evidence`.
    pub(crate) fn classify(&self, evidence: &Evidence) -> Classification {
        self.bundle.classify(evidence)
    }

    /// What `rule` alone does on `evidence`; `None` when the rule is not in the bundle.
    pub(crate) fn step(&self, rule: RuleIndex, evidence: &Evidence) -> Option<RuleStep> {
        let position = self.positions.get(rule.as_usize()).copied().flatten()?;
        let step = self.bundle.rule_step(position, evidence)?;
        Some(RuleStep {
            fired: step == Step::Fired,
            said: step.to_string(),
            vetoed_by: match step {
                Step::Vetoed(index) => Some(index),
                _ => None,
            },
        })
    }

    /// Whether `rule` alone fires on `evidence`.
    pub(crate) fn fires(&self, rule: RuleIndex, evidence: &Evidence) -> bool {
        self.step(rule, evidence).is_some_and(|step| step.fired)
    }
}
