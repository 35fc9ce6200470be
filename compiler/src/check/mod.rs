//! The front-end checker: resolves names, validates values and regexes, and builds the checked
//! [`Catalogue`]. It never stops at the first problem: every item is checked and every problem
//! becomes a diagnostic, and the catalogue it returns holds every entity that checked clean.
//!
//! One module per kind of thing checked: [`declarations`] (header, tiers, providers, codes),
//! [`values`] (closed vocabularies, numbers, provider ids, tokens), [`rules`] (rule blocks and
//! their order relations), [`guards`] (`when` clauses), [`matchers`] (`match`/`unless`
//! clauses, patterns, literals, remediation captures), [`examples`] (inline evidence) and
//! [`policy`] (the `policy` block).

mod declarations;
mod examples;
mod guards;
mod matchers;
mod policy;
mod rules;
mod values;

use std::collections::HashMap;
use std::sync::Arc;

use faultline_dsl::ast::{self, Block, Item};
use faultline_dsl::{Code, Diagnostic, LoadedCatalogue, SourceFile};

use crate::ir::*;
use crate::pattern::{self, PatternProblem};

/// The largest byte bound a suffix may have, the excerpt's: a `prefix` matcher describes one
/// short message, not a log.
pub const MAX_EXCERPT_BYTES: i64 = 4096;
/// The largest rank.
pub const MAX_RANK: i64 = 1_000_000;

/// The result of checking a catalogue.
#[derive(Debug)]
pub struct Checked {
    /// Everything that checked clean. When there are errors it is partial.
    pub catalogue: Catalogue,
    /// Every problem found, in file and position order.
    pub diagnostics: Vec<Diagnostic>,
}

impl Checked {
    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// Checks a loaded catalogue. `diagnostics` from loading are not repeated here.
pub fn check(loaded: &LoadedCatalogue) -> Checked {
    check_with(loaded, &pattern::prepare)
}

/// How the checker validates and lowers one pattern (an incremental session memoizes it).
pub(crate) type LowerFn<'a> =
    dyn Fn(&str) -> Result<pattern::LoweredPattern, Vec<PatternProblem>> + 'a;

/// [`check`], with pattern lowering supplied by the caller.
pub(crate) fn check_with(loaded: &LoadedCatalogue, lower: &LowerFn<'_>) -> Checked {
    check_within(loaded, lower, crate::lower::Budget::default().pattern_bytes)
}

/// [`check_with`], refusing patterns and literals longer than `pattern_bytes` (FL0109): parsing
/// a pattern costs memory in proportion to its length, before any automaton budget applies.
pub(crate) fn check_within(
    loaded: &LoadedCatalogue,
    lower: &LowerFn<'_>,
    pattern_bytes: usize,
) -> Checked {
    let mut checker = Checker {
        diagnostics: Vec::new(),
        lower,
        pattern_bytes,
    };
    let catalogue = checker.run(loaded);
    let mut diagnostics = checker.diagnostics;
    diagnostics.sort_by_key(Diagnostic::sort_key);
    Checked {
        catalogue,
        diagnostics,
    }
}

struct Checker<'l> {
    diagnostics: Vec<Diagnostic>,
    lower: &'l LowerFn<'l>,
    /// The longest pattern or literal accepted, in bytes.
    pattern_bytes: usize,
}

fn doc_text(block: &Block) -> String {
    block
        .docs
        .iter()
        .map(|doc| doc.value.strip_prefix(' ').unwrap_or(&doc.value))
        .collect::<Vec<_>>()
        .join("\n")
}

impl Checker<'_> {
    fn push(&mut self, diagnostic: Diagnostic) {
        self.diagnostics.push(diagnostic);
    }

    fn run(&mut self, loaded: &LoadedCatalogue) -> Catalogue {
        let mut declarations = self.declarations(loaded);
        self.shared_vetoes(&mut declarations);
        self.unused_vetoes(loaded, &declarations);
        let mut codes = Vec::new();
        for file in &loaded.files {
            for item in &file.syntax.items {
                if let Item::Code(block) = item {
                    let first = declarations
                        .codes
                        .get(&block.name.value)
                        .is_some_and(|first| std::ptr::eq(*first, block));
                    if first && let Some(code) = self.code_block(&file.source, block) {
                        codes.push(code);
                    }
                }
            }
        }
        let code_index: HashMap<&str, &CodeDef> = codes
            .iter()
            .map(|code| (code.name.as_str(), code))
            .collect();
        let mut rules = Vec::new();
        for file in &loaded.files {
            for item in &file.syntax.items {
                if let Item::Rule(block) = item {
                    let first = declarations
                        .rules
                        .get(&block.name.value)
                        .is_some_and(|(_, first)| std::ptr::eq(*first, block));
                    if first
                        && let Some(rule) =
                            self.rule_block(&file.source, block, &declarations, &code_index)
                    {
                        rules.push(rule);
                    }
                }
            }
        }
        let (name, version) = self.header(loaded);
        let policy = self.policy(loaded, &codes);
        Catalogue {
            name,
            version,
            tiers: declarations.tiers,
            providers: declarations.providers,
            codes,
            rules,
            policy,
        }
    }

    /// Reports clauses that appear twice and returns the first of each single-valued kind.
    fn single<'b>(
        &mut self,
        file: &Arc<SourceFile>,
        block: &'b Block,
        keyword: &str,
    ) -> Option<&'b ast::Clause> {
        let mut matching = block
            .clauses
            .iter()
            .filter(|clause| clause.kind.keyword() == keyword);
        let first = matching.next()?;
        for again in matching {
            self.push(
                Diagnostic::new(
                    Code::DuplicateClause,
                    format!("`{keyword}` appears twice in `{}`", block.name.value),
                )
                .primary(file, again.span, "second clause")
                .secondary(file, first.span, "first clause")
                .help(format!("a block has at most one `{keyword}`; keep one")),
            );
        }
        Some(first)
    }

    fn require(
        &mut self,
        file: &Arc<SourceFile>,
        block: &Block,
        keyword: &str,
        kind: &str,
        example: &str,
    ) -> bool {
        if block
            .clauses
            .iter()
            .any(|clause| clause.kind.keyword() == keyword)
        {
            return true;
        }
        self.push(
            Diagnostic::new(
                Code::MissingClause,
                format!("{kind} `{}` has no `{keyword}`", block.name.value),
            )
            .primary(file, block.name.span, format!("missing `{keyword}`"))
            .help(format!("add `{example}` to the block")),
        );
        false
    }

    fn misplaced(
        &mut self,
        file: &Arc<SourceFile>,
        block_kind: &str,
        clause: &ast::Clause,
        help: &str,
    ) {
        self.push(
            Diagnostic::new(
                Code::MisplacedClause,
                format!(
                    "`{}` is not allowed in a `{block_kind}` block",
                    clause.kind.keyword()
                ),
            )
            .primary(file, clause.keyword, "not allowed here")
            .help(help.to_owned()),
        );
    }
}
