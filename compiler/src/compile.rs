//! The whole pipeline for one catalogue: check, order, lower, write and reload the bundle,
//! then verify the inline examples and analyse collisions against the compiled classifier.

use faultline_dsl::{Code, Diagnostic, LoadedCatalogue, Span};
use faultline_runtime::Bundle;
use sha2::{Digest, Sha256};

use std::collections::HashMap;
use std::path::Path;

use faultline_dsl::SourceProvider;
use salsa::Setter as _;

use crate::analysis::{self, AnalysisBudget};
use crate::db::{Database, Db, SourceInput, parsed};
use crate::ir::{Catalogue, RuleDef, RuleIndex};
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

/// Validates and lowers the catalogue's regexes on worker threads ahead of the checker and the
/// lowering, which then find them memoized: what is known of a regex (its lowered form, its
/// syntax tree and required words, whether the runtime's `regex` compiles it within budget) is
/// most of their time, each case-insensitive pattern's translation being costly, and the
/// patterns are independent of one another.
fn prefetch_patterns(db: &dyn Db, loaded: &LoadedCatalogue, budget: &Budget) {
    use faultline_dsl::ast::{ClauseKind, Item, MatcherKind, VetoBody};
    let mut patterns: Vec<&str> = Vec::new();
    for file in &loaded.files {
        for item in &file.syntax.items {
            let matchers: Vec<&faultline_dsl::ast::Matcher> = match item {
                Item::Rule(block) => block
                    .clauses
                    .iter()
                    .filter_map(|clause| match &clause.kind {
                        ClauseKind::Match(matcher) | ClauseKind::Unless(matcher) => Some(matcher),
                        _ => None,
                    })
                    .collect(),
                Item::Veto(veto) => match &veto.body {
                    VetoBody::Matcher(matcher) => vec![&**matcher],
                    // Its members' matchers are their own declarations'.
                    VetoBody::Set(_) => continue,
                },
                _ => continue,
            };
            for matcher in matchers {
                if let MatcherKind::Regex { pattern, .. } = &matcher.kind
                    && pattern.value.len() <= budget.pattern_bytes
                {
                    patterns.push(&pattern.value);
                }
            }
        }
    }
    crate::db::prefetch_in_parallel(db, &patterns, |db, pattern| {
        let source = crate::db::PatternSource::new(db, (*pattern).to_owned(), budget.nest_limit);
        if let Ok(lowered) = crate::db::lowered_pattern(db, source) {
            let text = crate::db::PatternText::new(db, lowered.lowered.clone());
            let _ = crate::db::required_conjuncts(db, text);
            let key = crate::db::RegexKey::new(db, lowered.lowered.clone(), budget.regex_limit());
            let _ = lower::runtime_regex(db, key);
        }
    });
}

fn is_catch_all(rule: &RuleDef) -> bool {
    let guards = &rule.guards;
    guards.phase.is_none()
        && guards.provider_id.is_none()
        && guards.source.is_none()
        && guards.http_status.is_none()
        && guards.exit_code.is_none()
        && guards.present.is_empty()
        && guards.headers.is_empty()
        && guards.body.is_empty()
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
    /// compilations (watch mode, editors), keep a [`CompileSession`].
    pub fn compile(&self, loaded: &LoadedCatalogue) -> Compilation {
        self.compile_in(&Database::default(), loaded, &[])
    }

    /// [`Compiler::compile`] for a catalogue whose loading reported `loading` (syntax errors
    /// leave blocks out): the rules that checked clean are still analysed, as when some rules
    /// have errors, and a missing catch-all is not judged.
    pub fn compile_loaded(&self, loaded: &LoadedCatalogue, loading: &[Diagnostic]) -> Compilation {
        self.compile_in(&Database::default(), loaded, loading)
    }

    /// Check, order and lower: everything before verification. Rules with errors are left
    /// out and the rest go on, so that one run reports every mistake.
    fn stage(&self, db: &dyn Db, loaded: &LoadedCatalogue, loading: &[Diagnostic]) -> Stage {
        let nest_limit = self.budget.nest_limit;
        prefetch_patterns(db, loaded, &self.budget);
        let checked = crate::check::check_within(
            loaded,
            &|pattern: &str| {
                let source = crate::db::PatternSource::new(db, pattern.to_owned(), nest_limit);
                crate::db::lowered_pattern(db, source).clone()
            },
            self.budget.pattern_bytes,
        );
        let mut diagnostics = checked.diagnostics;
        let catalogue = checked.catalogue;
        let front_end_errors = loading.iter().chain(&diagnostics).any(Diagnostic::is_error);
        let (priority, cycles) = priority::order(&catalogue);
        diagnostics.extend(cycles);
        // A missing catch-all may be a rule with errors: only judged on a clean front end.
        if !front_end_errors {
            diagnostics.extend(catch_all_problem(loaded, &catalogue, &priority));
        }
        let mut scope = analysis_scope(loaded, &catalogue, &priority);
        if front_end_errors {
            // A rule is well-formed only if no error lies inside its block (an invalid escape
            // in a literal is reported while parsing, and the rule still checks).
            let with_errors =
                rules_with_errors(loaded, &catalogue, loading.iter().chain(&diagnostics));
            for (slot, broken) in scope.analysed.iter_mut().zip(with_errors) {
                *slot &= !broken;
            }
        }
        let (lowered, lowering) =
            lower::lower(db, &catalogue, &priority, &self.budget, &scope.analysed);
        diagnostics.extend(lowering);
        diagnostics.extend(lower::ungated_rules(db, &catalogue, &lowered.included));
        let clean = !front_end_errors && !diagnostics.iter().any(Diagnostic::is_error);
        let scope = analysis::Scope {
            analysed: lowered.included.clone(),
            partial: !clean,
            ..scope
        };
        Stage {
            catalogue,
            diagnostics,
            priority,
            lowered,
            scope,
            clean,
        }
    }

    /// Writes and reloads the bundle of a stage; when the catalogue has errors, the bundle (of
    /// the rules that checked clean) only serves the analysis, and gets a stand-in catch-all
    /// if it lacks one. The bundle adopts the regexes the check compiled (its examples and
    /// witnesses are classified next).
    fn load(
        &self,
        db: &dyn Db,
        loaded: &LoadedCatalogue,
        stage: &mut Stage,
    ) -> Option<(Vec<u8>, Bundle)> {
        if !stage.clean {
            let Stage {
                catalogue, lowered, ..
            } = stage;
            if catalogue.codes.is_empty() || catalogue.tiers.is_empty() {
                return None;
            }
            lower::ensure_catch_all(catalogue, lowered);
        }
        match lower::write_and_load(&stage.catalogue, &stage.lowered, manifest_hash(loaded)) {
            Ok(built) => {
                lower::adopt_checked_regexes(db, &built.1, &self.budget);
                Some(built)
            }
            Err(error) => {
                stage.diagnostics.push(bundle_does_not_load(loaded, &error));
                None
            }
        }
    }

    fn compile_in(
        &self,
        db: &dyn Db,
        loaded: &LoadedCatalogue,
        loading: &[Diagnostic],
    ) -> Compilation {
        let mut stage = self.stage(db, loaded, loading);
        let built = self.load(db, loaded, &mut stage);
        let Stage {
            catalogue,
            mut diagnostics,
            priority,
            lowered,
            scope,
            clean,
        } = stage;
        let mut compilation = Compilation {
            catalogue,
            priority: None,
            diagnostics: Vec::new(),
            bundle: None,
            built: None,
            patterns: lowered.patterns.clone(),
        };
        if let Some((bytes, bundle)) = built {
            let compiled = analysis::Compiled::new(&bundle, &lowered.order);
            diagnostics.extend(analysis::check_examples(
                &compilation.catalogue,
                &priority,
                &compiled,
                &scope,
            ));
            diagnostics.extend(analysis::analyze(
                db,
                analysis::Inputs {
                    catalogue: &compilation.catalogue,
                    priority: &priority,
                    bundle: &compiled,
                    budget: &self.analysis,
                    lowering: &self.budget,
                    scope: &scope,
                },
            ));
            // Only the catalogue's own bundle is handed out, never one built around errors.
            if clean {
                compilation.built = Some(bytes);
            }
        }
        compilation.priority = Some(priority);
        compilation.bundle = compilation
            .built
            .clone()
            .filter(|_| !diagnostics.iter().any(Diagnostic::is_error));
        compilation.diagnostics = sorted(diagnostics);
        compilation
    }

    /// How two rules (by id) are ordered, and, when nothing orders them, what the collision
    /// analysis concludes about them: the verdict `faultline check` reaches for the pair.
    /// `None` when either id is not a rule that checked clean.
    pub fn pair_verdict(
        &self,
        loaded: &LoadedCatalogue,
        a: &str,
        b: &str,
    ) -> Option<(Catalogue, Priority, analysis::PairVerdict)> {
        let db = Database::default();
        let mut stage = self.stage(&db, loaded, &[]);
        let (a, b) = (stage.catalogue.index_of(a)?, stage.catalogue.index_of(b)?);
        let verdict = match self.load(&db, loaded, &mut stage) {
            Some((_, bundle)) => analysis::pair_verdict(
                &db,
                analysis::Inputs {
                    catalogue: &stage.catalogue,
                    priority: &stage.priority,
                    bundle: &analysis::Compiled::new(&bundle, &stage.lowered.order),
                    budget: &self.analysis,
                    lowering: &self.budget,
                    scope: &stage.scope,
                },
                a,
                b,
            ),
            None if !stage.priority.unordered(a, b) => analysis::PairVerdict::Ordered,
            None => analysis::PairVerdict::Undecided,
        };
        Some((stage.catalogue, stage.priority, verdict))
    }
}

/// FL0112: the runtime's loader refuses the bundle the compiler wrote. Labelled on the
/// catalogue's header (the start of its root file when it has none): no one rule is to blame.
fn bundle_does_not_load(loaded: &LoadedCatalogue, error: &dyn std::fmt::Display) -> Diagnostic {
    let diagnostic = Diagnostic::new(
        Code::BundleDoesNotLoad,
        format!("the compiled bundle does not load: {error}"),
    );
    let diagnostic = match loaded.files.first() {
        Some(root) => {
            let span = root
                .syntax
                .items
                .iter()
                .find_map(|item| match item {
                    faultline_dsl::ast::Item::Header(header) => Some(header.span),
                    _ => None,
                })
                .unwrap_or(Span::new(0, 0));
            diagnostic.primary(
                &root.source,
                span,
                "the runtime refuses the bundle compiled from this catalogue",
            )
        }
        None => diagnostic,
    };
    diagnostic.help("no edit of the catalogue is expected to fix this: please report it with the catalogue; inline examples and the collision analysis were skipped")
}

/// What a compilation has before verification.
struct Stage {
    catalogue: Catalogue,
    diagnostics: Vec<Diagnostic>,
    priority: Priority,
    lowered: lower::Lowered,
    scope: analysis::Scope,
    /// Whether nothing so far is an error: the bundle is then the catalogue's own.
    clean: bool,
}

/// The last rule in priority order must fire on everything: then every evidence classifies,
/// and nothing is ordered after a rule that would shadow it.
fn catch_all_problem(
    loaded: &LoadedCatalogue,
    catalogue: &Catalogue,
    priority: &Priority,
) -> Option<Diagnostic> {
    let last = priority.order().last().and_then(|&i| catalogue.rule(i));
    if last.is_some_and(is_catch_all) {
        return None;
    }
    let earlier_catch_all = priority
        .order()
        .iter()
        .filter_map(|&i| catalogue.rule(i))
        .find(|rule| is_catch_all(rule));
    let mut diagnostic =
        Diagnostic::new(Code::NoCatchAll, "no rule fires on every piece of evidence");
    if let Some(last) = last {
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
        None => "add a catch-all rule in the last tier: no `when`, no `match`, confidence low"
            .to_owned(),
    };
    Some(diagnostic.help(help))
}

/// The block of each catalogue rule, as parsed: (file name, block span).
fn rule_blocks(loaded: &LoadedCatalogue, catalogue: &Catalogue) -> Vec<Option<(String, Span)>> {
    let mut by_name: HashMap<(&str, Span), Span> = HashMap::new();
    for file in &loaded.files {
        for item in &file.syntax.items {
            if let faultline_dsl::ast::Item::Rule(block) = item {
                by_name.insert((file.source.name(), block.name.span), block.span);
            }
        }
    }
    catalogue
        .rules
        .iter()
        .map(|rule| {
            let file = rule.origin.file.name();
            by_name
                .get(&(file, rule.origin.span))
                .map(|span| (file.to_owned(), *span))
        })
        .collect()
}

/// Per catalogue rule: whether an error (of `diagnostics`) is reported inside its block.
fn rules_with_errors<'d>(
    loaded: &LoadedCatalogue,
    catalogue: &Catalogue,
    diagnostics: impl Iterator<Item = &'d Diagnostic>,
) -> Vec<bool> {
    let mut errors: HashMap<String, Vec<usize>> = HashMap::new();
    for label in diagnostics
        .filter(|d| d.is_error())
        .filter_map(Diagnostic::primary_label)
    {
        errors
            .entry(label.file().name().to_owned())
            .or_default()
            .push(label.span().start);
    }
    for starts in errors.values_mut() {
        starts.sort_unstable();
    }
    rule_blocks(loaded, catalogue)
        .into_iter()
        .map(|block| {
            block.is_some_and(|(file, span)| {
                errors.get(&file).is_some_and(|starts| {
                    let first = starts.partition_point(|&start| start < span.start);
                    starts.get(first).is_some_and(|&start| start < span.end)
                })
            })
        })
        .collect()
}

/// Which rules the analysis covers, before lowering: every rule that checked clean, with the
/// rules whose order waits on a rule with errors (or on a priority cycle) marked, together with
/// every rule that precedes or follows them (see [`analysis::Scope`]).
fn analysis_scope(
    loaded: &LoadedCatalogue,
    catalogue: &Catalogue,
    priority: &Priority,
) -> analysis::Scope {
    let count = catalogue.rules.len();
    let index: HashMap<&str, RuleIndex> = catalogue
        .indices()
        .map(|(i, rule)| (rule.id.as_str(), i))
        .collect();
    let mut unknown: Vec<RuleIndex> = Vec::new();
    // Clean rules naming a rule that did not check clean.
    for (i, rule) in catalogue.indices() {
        let names_broken = rule
            .before
            .iter()
            .chain(&rule.after)
            .any(|other| !index.contains_key(other.as_str()));
        if names_broken || priority.on_cycle(i) {
            unknown.push(i);
        }
    }
    // Clean rules that a rule with errors names, as written.
    for file in &loaded.files {
        for item in &file.syntax.items {
            let faultline_dsl::ast::Item::Rule(block) = item else {
                continue;
            };
            let clean = index
                .get(block.name.value.as_str())
                .and_then(|&i| catalogue.rule(i))
                .is_some_and(|rule| {
                    std::sync::Arc::ptr_eq(&rule.origin.file, &file.source)
                        && rule.origin.span == block.name.span
                });
            if clean {
                continue;
            }
            for clause in &block.clauses {
                if let faultline_dsl::ast::ClauseKind::Before(name)
                | faultline_dsl::ast::ClauseKind::After(name) = &clause.kind
                    && let Some(&i) = index.get(name.value.as_str())
                {
                    unknown.push(i);
                }
            }
        }
    }
    let mut above = vec![false; count];
    let mut below = vec![false; count];
    unknown.sort_unstable();
    unknown.dedup();
    for &rule in &unknown {
        let tier = catalogue.rule(rule).map(|r| r.tier);
        for ((other, other_rule), (up, down)) in
            catalogue.indices().zip(above.iter_mut().zip(&mut below))
        {
            let same_tier = Some(other_rule.tier) == tier;
            if other == rule || (same_tier && priority.reaches(other, rule)) {
                *up = true;
            }
            if other == rule || (same_tier && priority.reaches(rule, other)) {
                *down = true;
            }
        }
    }
    analysis::Scope {
        analysed: vec![true; count],
        above_unknown: above,
        below_unknown: below,
        partial: false,
    }
}

fn sorted(mut diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    diagnostics.sort_by_key(Diagnostic::sort_key);
    diagnostics
}

/// A compiler with memory: parsing, pattern lowering, automata and analysis queries are
/// tracked, so compiling again after an edit recomputes only what the edit reaches.
#[derive(Debug, Default)]
pub struct CompileSession {
    compiler: Compiler,
    db: Database,
    inputs: HashMap<String, SourceInput>,
}

impl CompileSession {
    /// A session compiling with `compiler`'s budgets.
    pub fn new(compiler: Compiler) -> Self {
        CompileSession {
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
        let CompileSession { db, inputs, .. } = self;
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
        self.compiler.compile_in(&self.db, loaded, &[])
    }

    /// [`CompileSession::compile`] for a catalogue whose loading reported `loading` (see
    /// [`Compiler::compile_loaded`]).
    pub fn compile_loaded(&self, loaded: &LoadedCatalogue, loading: &[Diagnostic]) -> Compilation {
        self.compiler.compile_in(&self.db, loaded, loading)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{catalogue, found, loaded, rule};

    #[test]
    fn a_rule_that_reads_only_a_chinese_sentence_is_gated_by_its_words() {
        // new-api's rewritten upstream 429: no ASCII word, yet the prefilter can require its
        // runs of ideographs, so ordinary text never reaches the rule's automaton.
        let loaded = loaded(&catalogue(&rule(
            "test.upstream_saturated.v1",
            "rate_limited",
            "    match regex r\"当前分组上游负载已饱和，请稍后再试\"",
            "当前分组上游负载已饱和，请稍后再试 (request id: 2025)",
        )));
        let compilation = Compiler::new().compile(&loaded);
        use faultline_runtime::Evidence;
        assert!(
            found(&compilation.diagnostics, Code::UngatedRule).is_empty(),
            "{:#?}",
            compilation.diagnostics
        );
        let bundle = Bundle::from_bytes(compilation.bundle.as_deref().unwrap()).unwrap();
        let text = |text: &str| Evidence::new().with_stderr(text);
        assert!(bundle.may_classify(&text("429 当前分组上游负载已饱和，请稍后再试")));
        // Ordinary text, English or Chinese, is turned away before any automaton.
        assert!(!bundle.may_classify(&text("the upstream load is saturated, retry later")));
        assert!(!bundle.may_classify(&text("请稍后再试一次")));
    }

    #[test]
    fn a_bundle_the_runtime_refuses_is_fl0112_on_the_catalogue_header() {
        let loaded = loaded(&catalogue(&rule(
            "test.overloaded.v1",
            "overloaded",
            "    match regex r\"overloaded\"",
            "server overloaded",
        )));
        let compiler = Compiler::new();
        let db = Database::default();
        let mut stage = compiler.stage(&db, &loaded, &[]);
        assert!(stage.clean, "{:#?}", stage.diagnostics);
        // No catalogue makes the compiler write this, but the loader refuses it: a bundle whose
        // last rule (the catch-all) is missing.
        stage.lowered.model.rules.pop();
        assert!(compiler.load(&db, &loaded, &mut stage).is_none());
        let refused = found(&stage.diagnostics, Code::BundleDoesNotLoad);
        let [(label, message, _)] = refused.as_slice() else {
            panic!("{:#?}", stage.diagnostics);
        };
        assert_eq!(label, r#"catalogue "test" version "test.v1""#);
        assert!(message.contains("catch-all"), "{message}");
        let diagnostic = stage
            .diagnostics
            .iter()
            .find(|d| d.code() == Code::BundleDoesNotLoad)
            .unwrap();
        assert!(diagnostic.help_text().is_some_and(|help| !help.is_empty()));
        // The catalogue as written compiles clean, with no FL0112.
        assert!(!Compiler::new().compile(&loaded).has_errors());
    }

    /// Two shared vetoes, and a veto set naming both, declared beside the catalogue's rules.
    const PROSE_VETOES: &str = "\n/// Titles.\nveto title_tag regex r\"(?m)^\\[Bug\\]\"\n\n/// Questions.\nveto question regex r\"\\?[^\\S\\n]*$\"\n\n/// Both.\nveto prose [title_tag, question]\n";

    #[test]
    fn a_veto_set_compiles_as_its_members_listed_one_by_one() {
        let with = |unless: &str| {
            let text = catalogue(&format!(
                "{PROSE_VETOES}{}",
                rule(
                    "test.overloaded.v1",
                    "overloaded",
                    &format!("    match regex r\"overloaded\"\n{unless}"),
                    "server overloaded",
                )
            ));
            let compilation = Compiler::new().compile(&loaded(&text));
            assert!(!compilation.has_errors(), "{:#?}", compilation.diagnostics);
            compilation.bundle.unwrap()
        };
        let set = with("    unless prose");
        let listed = with("    unless title_tag\n    unless question");
        let rules = |bytes: &[u8]| -> Vec<String> {
            let bundle = Bundle::from_bytes(bytes).unwrap();
            bundle.rules().map(|rule| format!("{rule:?}")).collect()
        };
        assert_eq!(rules(&set), rules(&listed));
        // And both veto what either member vetoes.
        let bundle = Bundle::from_bytes(&set).unwrap();
        use faultline_runtime::Evidence;
        let code = |text: &str| bundle.classify(&Evidence::new().with_stderr(text)).code;
        assert_eq!(code("server overloaded").as_str(), "overloaded");
        assert_eq!(code("[Bug] server overloaded").as_str(), "unknown");
        assert_eq!(code("why is the server overloaded?").as_str(), "unknown");
    }

    #[test]
    fn a_failing_example_names_the_veto_as_the_rule_writes_it() {
        let text = catalogue(&format!(
            "{PROSE_VETOES}{}",
            rule(
                "test.overloaded.v1",
                "overloaded",
                "    match regex r\"overloaded\"\n    unless prose\n    unless regex r\"boom\"",
                // At the end: a leading `boom:` would come off as a label in an unwrapped reading.
                "server overloaded boom",
            )
        ))
        .replace(
            "    counterexample \"nothing to see\"",
            "    example \"[Bug] server overloaded\"\n    counterexample \"nothing to see\"",
        );
        let compilation = Compiler::new().compile(&loaded(&text));
        let failed: Vec<String> = compilation
            .diagnostics
            .iter()
            .filter(|d| d.code() == Code::ExampleFailed)
            .filter_map(|d| d.primary_label().map(|label| label.message().to_owned()))
            .collect();
        // The inline veto is the rule's second `unless` clause, though the set's two members
        // come before it in the compiled rule.
        assert!(
            failed
                .iter()
                .any(|label| label.contains("vetoed by `unless` 2;")),
            "{failed:#?}"
        );
        assert!(
            failed
                .iter()
                .any(|label| label.contains("vetoed by `unless prose` (its member `title_tag`)")),
            "{failed:#?}"
        );
    }
}
