//! Witness verification: a found text becomes evidence that satisfies the rules' guards, and
//! only what the compiled classifier confirms is reported.

use faultline_runtime::bundle::{REGEX_SIZE_LIMIT, Step};
use faultline_runtime::{Evidence, EvidenceField, Phase, TextView};

use crate::compile::example_evidence;
use crate::ir::{ExampleEvidence, Guards};

use super::Analyzer;
use super::search::{Component, Search};

impl Analyzer<'_> {
    /// Evidence for a witness: the texts joined into stderr, and the structured fields chosen
    /// to satisfy every rule's guards.
    pub(super) fn evidence(&self, rules: &[usize], texts: &[(TextView, String)]) -> Evidence {
        let mut evidence = ExampleEvidence::default();
        let guards: Vec<&Guards> = rules
            .iter()
            .filter_map(|&r| self.catalogue.rules.get(r))
            .map(|r| &r.guards)
            .collect();
        fn pick<T: Clone + PartialEq>(lists: Vec<&Option<Vec<T>>>) -> Option<T> {
            let constrained: Vec<&Vec<T>> = lists.into_iter().flatten().collect();
            let first = constrained.first()?;
            first
                .iter()
                .find(|value| constrained.iter().all(|list| list.contains(value)))
                .cloned()
        }
        evidence.phase = pick(guards.iter().map(|g| &g.phase).collect());
        evidence.provider_id = pick(guards.iter().map(|g| &g.provider_id).collect());
        evidence.source = pick(guards.iter().map(|g| &g.source).collect());
        evidence.http_status = pick(guards.iter().map(|g| &g.http_status).collect());
        evidence.exit_code = pick(guards.iter().map(|g| &g.exit_code).collect());
        let text: Vec<&str> = texts.iter().map(|(_, text)| text.as_str()).collect();
        evidence.stderr = Some(text.join("\n")).filter(|t| !t.is_empty());
        for field in guards.iter().flat_map(|g| g.present.iter()) {
            match field {
                EvidenceField::Phase if evidence.phase.is_none() => {
                    evidence.phase = Some(Phase::PromptSend)
                }
                EvidenceField::Source if evidence.source.is_none() => {
                    evidence.source = Some(faultline_runtime::Source::AcpUpdate)
                }
                EvidenceField::ExitCode if evidence.exit_code.is_none() => {
                    evidence.exit_code = Some(1)
                }
                EvidenceField::HttpStatus if evidence.http_status.is_none() => {
                    evidence.http_status = Some(418)
                }
                EvidenceField::ProviderId if evidence.provider_id.is_none() => {
                    evidence.provider_id = self.catalogue.providers.first().cloned()
                }
                EvidenceField::ResetHint => {
                    evidence.reset_hint = Some("2030-01-01T00:00:00Z".to_owned())
                }
                EvidenceField::Stderr if evidence.stderr.is_none() => {
                    evidence.stderr = Some("x".to_owned())
                }
                EvidenceField::Stdout => evidence.stdout = Some("x".to_owned()),
                EvidenceField::ManagedRuntimePackageSpec => {
                    evidence.managed_runtime_package_spec = Some("pkg@1.0.0".to_owned())
                }
                _ => {}
            }
        }
        for &rule in rules {
            if let Some((pattern, group, field)) =
                self.texts.get(rule).and_then(|t| t.group_fill.clone())
            {
                let raw = evidence.stderr.clone().unwrap_or_default();
                let captured = crate::pattern::regex(&pattern, REGEX_SIZE_LIMIT)
                    .ok()
                    .and_then(|regex| {
                        regex
                            .captures(&raw)
                            .and_then(|c| c.get(group as usize).map(|g| g.as_str().to_owned()))
                    });
                if let (Some(value), EvidenceField::ManagedRuntimePackageSpec) = (captured, field) {
                    evidence.managed_runtime_package_spec = Some(value);
                }
            }
        }
        example_evidence(&evidence)
    }

    pub(super) fn classify(&self, evidence: &Evidence) -> faultline_runtime::Classification {
        self.bundle.classify(evidence)
    }

    /// Whether the rule at bundle position `position` fires on `evidence`, alone.
    pub(super) fn fires(&self, position: usize, evidence: &Evidence) -> bool {
        self.bundle.rule_step(position, evidence) == Some(Step::Fired)
    }

    /// Finds the first witness of a query on which `verify` holds.
    pub(super) fn verified(
        &self,
        rules: &[usize],
        components: &[&Component],
        verify: impl Fn(&Evidence) -> bool,
    ) -> Result<Option<Evidence>, ()> {
        match self.search(components, self.budget.max_witnesses) {
            Search::Empty => Ok(None),
            Search::Exhausted => Err(()),
            Search::Witnesses(witnesses) => {
                for texts in witnesses {
                    let evidence = self.evidence(rules, &texts);
                    if verify(&evidence) {
                        return Ok(Some(evidence));
                    }
                }
                Err(())
            }
        }
    }
}
