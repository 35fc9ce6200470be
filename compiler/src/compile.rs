//! The whole pipeline for one catalogue: check, order, lower, write and reload the bundle,
//! then verify the inline examples and analyse collisions against the compiled classifier.

use faultline_dsl::{Code, Diagnostic, LoadedCatalogue};
use faultline_runtime::{Bundle, Evidence};
use sha2::{Digest, Sha256};

use std::collections::HashMap;
use std::path::Path;

use faultline_dsl::SourceProvider;
use salsa::Setter as _;

use crate::analysis::{self, AnalysisBudget};
use crate::db::{Database, Db, SourceInput, parsed};
use crate::ir::{Catalogue, Example, ExampleEvidence, RuleDef};
use crate::lower::{self, Budget, PatternReport};
use crate::priority::{self, Priority};

/// Compiler configuration: the automaton and analysis budgets.
#[derive(Debug, Clone, Copy, Default)]
pub struct Compiler {
    budget: Budget,
    analysis: AnalysisBudget,
}

/// Everything one compilation produced.
#[derive(Debug)]
pub struct Compilation {
    /// The checked catalogue (partial when there are errors).
    pub catalogue: Catalogue,
    /// The effective order, when the catalogue checked clean enough to have one.
    pub priority: Option<Priority>,
    /// Every finding, sorted by file and position.
    pub diagnostics: Vec<Diagnostic>,
    /// The bundle, when there are no errors.
    pub bundle: Option<Vec<u8>>,
    /// The bundle as built, even when its verification (examples, analysis) found errors: for
    /// tools that test it, never for shipping.
    pub built: Option<Vec<u8>>,
    /// How each pattern was lowered.
    pub patterns: Vec<PatternReport>,
}

impl Compilation {
    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// The evidence an example stands for.
pub fn example_evidence(evidence: &ExampleEvidence) -> Evidence {
    Evidence {
        phase: evidence.phase,
        provider_id: evidence.provider_id.clone(),
        source: evidence.source,
        exit_code: evidence.exit_code,
        http_status: evidence.http_status,
        reset_hint: evidence.reset_hint.clone(),
        stderr: evidence.stderr.clone(),
        stdout: evidence.stdout.clone(),
        managed_runtime_package_spec: evidence.managed_runtime_package_spec.clone(),
    }
}

/// SHA-256 over every source file, in load order: name, NUL, text, NUL.
pub fn manifest_hash(loaded: &LoadedCatalogue) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for file in &loaded.files {
        hasher.update(file.source.name().as_bytes());
        hasher.update([0]);
        hasher.update(file.source.text().as_bytes());
        hasher.update([0]);
    }
    hasher.finalize().into()
}

fn is_catch_all(rule: &RuleDef) -> bool {
    let guards = &rule.guards;
    guards.phase.is_none()
        && guards.provider_id.is_none()
        && guards.source.is_none()
        && guards.http_status.is_none()
        && guards.exit_code.is_none()
        && guards.present.is_empty()
        && rule.matchers.is_empty()
        && rule.vetoes.is_empty()
        && !matches!(
            rule.remediation,
            Some(crate::ir::RemediationSpec::Capture { .. })
        )
}

impl Compiler {
    /// A compiler with the default budgets.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the automaton size budget.
    #[must_use]
    pub fn budget(mut self, budget: Budget) -> Self {
        self.budget = budget;
        self
    }

    /// Sets the collision-analysis budget.
    #[must_use]
    pub fn analysis_budget(mut self, analysis: AnalysisBudget) -> Self {
        self.analysis = analysis;
        self
    }

    /// Runs the whole pipeline once. Loading diagnostics are the caller's. To reuse work across
    /// compilations (watch mode, editors), keep a [`Session`].
    pub fn compile(&self, loaded: &LoadedCatalogue) -> Compilation {
        self.compile_in(&Database::default(), loaded)
    }

    fn compile_in(&self, db: &dyn Db, loaded: &LoadedCatalogue) -> Compilation {
        let checked = crate::check::check_with(loaded, &|pattern: &str| {
            crate::db::lowered_pattern(db, crate::db::PatternText::new(db, pattern.to_owned()))
                .clone()
        });
        let mut diagnostics = checked.diagnostics;
        let catalogue = checked.catalogue;
        if diagnostics.iter().any(Diagnostic::is_error) {
            return Compilation {
                catalogue,
                priority: None,
                diagnostics,
                bundle: None,
                built: None,
                patterns: Vec::new(),
            };
        }
        let (priority, cycles) = priority::order(&catalogue);
        diagnostics.extend(cycles);
        // The last rule in priority order must fire on everything: then every evidence
        // classifies, and nothing is ordered after a rule that would shadow it.
        let last = priority.order.last().and_then(|&i| catalogue.rules.get(i));
        let earlier_catch_all = priority
            .order
            .iter()
            .filter_map(|&i| catalogue.rules.get(i))
            .find(|rule| is_catch_all(rule));
        if !last.is_some_and(is_catch_all) {
            let mut diagnostic =
                Diagnostic::new(Code::NoCatchAll, "no rule fires on every piece of evidence");
            if let Some(last) = priority.order.last().and_then(|&i| catalogue.rules.get(i)) {
                diagnostic = diagnostic.primary(
                    &last.origin.file,
                    last.origin.span,
                    "the lowest-priority rule has guards or matchers",
                );
            } else if let Some(file) = loaded.files.first() {
                diagnostic = diagnostic.primary(
                    &file.source,
                    faultline_dsl::Span::new(0, 0),
                    "the catalogue has no rules",
                );
            }
            let help = match earlier_catch_all {
                Some(rule) => format!(
                    "`{}` fires on everything, so it must come last: move it to the last tier, or rank it after every other rule there",
                    rule.id
                ),
                None => {
                    "add a catch-all rule in the last tier: no `when`, no `match`, confidence low"
                        .to_owned()
                }
            };
            diagnostics.push(diagnostic.help(help));
        }
        let mut compilation = Compilation {
            catalogue,
            priority: None,
            diagnostics: Vec::new(),
            bundle: None,
            built: None,
            patterns: Vec::new(),
        };
        if diagnostics.iter().any(Diagnostic::is_error) {
            compilation.priority = Some(priority);
            compilation.diagnostics = sorted(diagnostics);
            return compilation;
        }
        let lowered = match lower::lower(db, &compilation.catalogue, &priority, &self.budget) {
            Ok(lowered) => lowered,
            Err(errors) => {
                diagnostics.extend(errors);
                compilation.priority = Some(priority);
                compilation.diagnostics = sorted(diagnostics);
                return compilation;
            }
        };
        compilation.patterns = lowered.patterns.clone();
        let bytes = lower::write_bundle(&compilation.catalogue, &lowered, manifest_hash(loaded));
        let bundle = match bytes
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|b| Bundle::from_bytes(b).map_err(|e| e.to_string()))
        {
            Ok(bundle) => bundle,
            Err(error) => {
                diagnostics.push(Diagnostic::new(
                    Code::AutomatonTooLarge,
                    format!("the compiled bundle does not load: {error}"),
                ));
                compilation.priority = Some(priority);
                compilation.diagnostics = sorted(diagnostics);
                return compilation;
            }
        };
        diagnostics.extend(check_examples(&compilation.catalogue, &bundle));
        diagnostics.extend(analysis::analyze(
            db,
            &compilation.catalogue,
            &priority,
            &bundle,
            &self.analysis,
        ));
        compilation.priority = Some(priority);
        compilation.built = bytes.ok();
        compilation.bundle = compilation
            .built
            .clone()
            .filter(|_| !diagnostics.iter().any(Diagnostic::is_error));
        compilation.diagnostics = sorted(diagnostics);
        compilation
    }
}

fn sorted(mut diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    diagnostics.sort_by_key(Diagnostic::sort_key);
    diagnostics
}

fn describe(evidence: &Evidence) -> String {
    serde_json::to_string(evidence).unwrap_or_default()
}

/// Runs every inline example through the compiled bundle.
fn check_examples(catalogue: &Catalogue, bundle: &Bundle) -> Vec<Diagnostic> {
    let mut diagnostics = Vec::new();
    for rule in &catalogue.rules {
        let run = |example: &Example| {
            let evidence = example_evidence(&example.evidence);
            let classification = bundle.classify(&evidence);
            let own_step = bundle
                .rule_position(&rule.id)
                .and_then(|position| bundle.rule_step(position, &evidence))
                .map(|step| step.to_string())
                .unwrap_or_default();
            (evidence, classification, own_step)
        };
        for example in &rule.examples {
            let (evidence, classification, own_step) = run(example);
            if classification.rule != rule.id {
                let why = if own_step == "fired" {
                    format!(
                        "`{}` fired but `{}` outranks it",
                        rule.id, classification.rule
                    )
                } else {
                    format!(
                        "`{}` {own_step}; `{}` won with `{}`",
                        rule.id, classification.rule, classification.code
                    )
                };
                diagnostics.push(
                    Diagnostic::new(Code::ExampleFailed, format!("example does not classify as `{}`", rule.id))
                        .primary(&example.origin.file, example.origin.span, why)
                        .note(format!("evidence: {}", describe(&evidence)))
                        .note(format!("sanitized text: {:?}", classification.excerpt))
                        .help("correct the rule or the example; if another rule rightly wins, declare the order with `before`/`after`"),
                );
            }
        }
        for example in &rule.counterexamples {
            let (evidence, classification, own_step) = run(example);
            if own_step == "fired" {
                diagnostics.push(
                    Diagnostic::new(Code::ExampleFailed, format!("counterexample fires `{}`", rule.id))
                        .primary(&example.origin.file, example.origin.span, format!("`{}` fires on this (the winner is `{}`)", rule.id, classification.rule))
                        .note(format!("evidence: {}", describe(&evidence)))
                        .help("narrow the rule (anchor it, or add an `unless` veto), or correct the counterexample"),
                );
            }
        }
    }
    diagnostics
}

/// A compiler with memory: parsing, pattern lowering, automata and analysis queries are
/// tracked, so compiling again after an edit recomputes only what the edit reaches.
#[derive(Debug, Default)]
pub struct Session {
    compiler: Compiler,
    db: Database,
    inputs: HashMap<String, SourceInput>,
}

impl Session {
    /// A session compiling with `compiler`'s budgets.
    pub fn new(compiler: Compiler) -> Self {
        Session {
            compiler,
            db: Database::default(),
            inputs: HashMap::new(),
        }
    }

    /// Loads a catalogue, parsing only the files whose text changed since the last load.
    pub fn load(
        &mut self,
        root: &Path,
        sources: &dyn SourceProvider,
    ) -> std::io::Result<(LoadedCatalogue, Vec<Diagnostic>)> {
        let Session { db, inputs, .. } = self;
        faultline_dsl::load_with(root, sources, &mut |name: &str, text: String| {
            let input = match inputs.get(name) {
                Some(input) => {
                    if input.text(db) != &text {
                        input.set_text(db).to(text);
                    }
                    *input
                }
                None => {
                    let input = SourceInput::new(db, name.to_owned(), text);
                    inputs.insert(name.to_owned(), input);
                    input
                }
            };
            let parsed = parsed(db, input);
            (
                std::sync::Arc::clone(&parsed.source),
                parsed.syntax.clone(),
                parsed.diagnostics.clone(),
            )
        })
    }

    /// Compiles a loaded catalogue, reusing every query result the edit did not reach.
    pub fn compile(&self, loaded: &LoadedCatalogue) -> Compilation {
        self.compiler.compile_in(&self.db, loaded)
    }
}
