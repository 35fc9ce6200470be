//! The front-end checker: resolves names, validates values and regexes, and builds the checked
//! [`Catalogue`]. It never stops at the first problem: every item is checked and every problem
//! becomes a diagnostic, and the catalogue it returns holds every entity that checked clean.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use faultline_dsl::ast::{self, Block, ClauseKind, GuardTest, Item, List, StringLit, Value};
use faultline_dsl::{Code, Diagnostic, LoadedCatalogue, SourceFile, Span};
use faultline_runtime::{
    Class, Confidence, EvidenceField, Flag, Phase, Scope, Source, TextView, TimingExtractor,
};

use crate::ir::*;
use crate::pattern::{self, PatternProblem};
use crate::suggest;

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
pub type LowerFn<'a> = dyn Fn(&str) -> Result<pattern::LoweredPattern, Vec<PatternProblem>> + 'a;

/// [`check`], with pattern lowering supplied by the caller.
pub fn check_with(loaded: &LoadedCatalogue, lower: &LowerFn<'_>) -> Checked {
    check_within(loaded, lower, crate::lower::Budget::default().pattern_bytes)
}

/// [`check_with`], refusing patterns and literals longer than `pattern_bytes` (FL0109): parsing
/// a pattern costs memory in proportion to its length, before any automaton budget applies.
pub fn check_within(
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

/// A value of a closed vocabulary (`faultline_runtime::vocab`) as the checker looks it up by
/// name, with the code its unknown names are reported under.
trait Vocabulary: Sized + Copy + 'static {
    const KIND: &'static str;
    const CODE: Code;
    fn lookup(name: &str) -> Option<Self>;
    fn all_names() -> Vec<&'static str>;
}

macro_rules! checked_vocabulary {
    ($type:ty, $code:expr) => {
        impl Vocabulary for $type {
            const KIND: &'static str = <$type>::KIND;
            const CODE: Code = $code;
            fn lookup(name: &str) -> Option<Self> {
                <$type>::from_name(name)
            }
            fn all_names() -> Vec<&'static str> {
                <$type>::names().collect()
            }
        }
    };
}

checked_vocabulary!(Class, Code::UnknownClass);
checked_vocabulary!(Confidence, Code::UnknownConfidence);
checked_vocabulary!(Scope, Code::UnknownScope);
checked_vocabulary!(Phase, Code::UnknownPhase);
checked_vocabulary!(Source, Code::UnknownSource);
checked_vocabulary!(Flag, Code::UnknownName);
checked_vocabulary!(TextView, Code::UnknownName);
checked_vocabulary!(TimingExtractor, Code::UnknownName);
checked_vocabulary!(EvidenceField, Code::UnknownName);

/// Declarations gathered from every file before blocks are checked.
struct Declarations<'a> {
    tiers: Vec<String>,
    providers: Vec<String>,
    codes: BTreeMap<String, &'a Block>,
    /// Rule id → (file, block), first definition.
    rules: HashMap<String, (&'a Arc<SourceFile>, &'a Block)>,
}

fn doc_text(block: &Block) -> String {
    block
        .docs
        .iter()
        .map(|doc| doc.value.strip_prefix(' ').unwrap_or(&doc.value))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `id` is a well-formed rule id; `versioned` requires a final `vN` segment.
fn rule_id_problem(id: &str, versioned: bool) -> Option<String> {
    let segments: Vec<&str> = id.split('.').collect();
    if segments.len() < 2 {
        return Some("a rule id has at least two dot-separated segments".to_owned());
    }
    for segment in &segments {
        let mut chars = segment.chars();
        let first_ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        if !first_ok
            || !segment
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
        {
            return Some(format!(
                "segment `{segment}` must be lowercase ASCII letters, digits, `_` and `-`, starting with a letter or digit"
            ));
        }
    }
    let is_version = |segment: &str| {
        segment.strip_prefix('v').is_some_and(|digits| {
            !digits.is_empty()
                && digits.chars().all(|c| c.is_ascii_digit())
                && !digits.starts_with('0')
        })
    };
    let last = segments.last().copied().unwrap_or("");
    let looks_like_version = last
        .strip_prefix('v')
        .is_some_and(|rest| !rest.is_empty() && rest.chars().all(|c| c.is_ascii_digit()));
    if looks_like_version && !is_version(last) {
        return Some(format!(
            "version segment `{last}` must be `v` and a positive number without leading zeros"
        ));
    }
    if versioned && !is_version(last) {
        return Some(
            "a rule that matches text must end in a version segment such as `.v1`".to_owned(),
        );
    }
    None
}

fn version_is_valid(version: &str) -> bool {
    match version.rsplit_once(".v") {
        Some((name, number)) => {
            !name.is_empty()
                && name.chars().all(|c| {
                    c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.')
                })
                && !number.is_empty()
                && number.chars().all(|c| c.is_ascii_digit())
                && !number.starts_with('0')
        }
        None => false,
    }
}

impl Checker<'_> {
    fn push(&mut self, diagnostic: Diagnostic) {
        self.diagnostics.push(diagnostic);
    }

    fn run(&mut self, loaded: &LoadedCatalogue) -> Catalogue {
        let declarations = self.declarations(loaded);
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
        Catalogue {
            name,
            version,
            tiers: declarations.tiers,
            providers: declarations.providers,
            codes,
            rules,
        }
    }

    fn header(&mut self, loaded: &LoadedCatalogue) -> (String, String) {
        let mut found: Option<(&Arc<SourceFile>, &ast::Header)> = None;
        for file in &loaded.files {
            for item in &file.syntax.items {
                let Item::Header(header) = item else { continue };
                match found {
                    None => found = Some((&file.source, header)),
                    Some((first_file, first)) => self.push(
                        Diagnostic::new(
                            Code::DuplicateDeclaration,
                            "the catalogue header is declared twice",
                        )
                        .primary(&file.source, header.span, "second header")
                        .secondary(first_file, first.span, "first declared here")
                        .help(
                            "a catalogue names itself once, in its root file; delete this header",
                        ),
                    ),
                }
            }
        }
        match found {
            Some((file, header)) => {
                if !version_is_valid(&header.version.value) {
                    self.push(
                        Diagnostic::new(
                            Code::MalformedVersion,
                            format!("catalogue version `{}` is not of the form `<name>.v<N>`", header.version.value),
                        )
                        .primary(file, header.version.span, "malformed version")
                        .help("write the version as the catalogue name, `.v` and a positive number, e.g. `provider-errors.v1`"),
                    );
                }
                (header.name.value.clone(), header.version.value.clone())
            }
            None => {
                if let Some(root) = loaded.files.first() {
                    let span = root.syntax.items.first().map_or(Span::new(0, 0), |item| {
                        let start = item.span().start;
                        Span::new(start, start)
                    });
                    self.push(
                        Diagnostic::new(Code::MissingHeader, "the catalogue has no `catalogue … version …` header")
                            .primary(&root.source, span, "expected a header in the root file")
                            .help("add `catalogue \"provider-errors\" version \"provider-errors.v1\"` at the top of the root file"),
                    );
                }
                (String::new(), String::new())
            }
        }
    }

    fn declarations<'a>(&mut self, loaded: &'a LoadedCatalogue) -> Declarations<'a> {
        let mut tiers_decl: Option<(&Arc<SourceFile>, &ast::TiersDecl)> = None;
        let mut providers: Vec<(String, &Arc<SourceFile>, Span)> = Vec::new();
        let mut codes: BTreeMap<String, &Block> = BTreeMap::new();
        let mut code_files: HashMap<String, &Arc<SourceFile>> = HashMap::new();
        let mut rules: HashMap<String, (&Arc<SourceFile>, &Block)> = HashMap::new();
        for file in &loaded.files {
            for item in &file.syntax.items {
                match item {
                    Item::Tiers(tiers) => match tiers_decl {
                        None => tiers_decl = Some((&file.source, tiers)),
                        Some((first_file, first)) => self.push(
                            Diagnostic::new(Code::DuplicateDeclaration, "the tier list is declared twice")
                                .primary(&file.source, tiers.keyword, "second `tiers` declaration")
                                .secondary(first_file, first.keyword, "first declared here")
                                .help("declare the tiers once, highest priority first; delete this declaration"),
                        ),
                    },
                    Item::Provider(provider) => {
                        let id = &provider.id.value;
                        if let Some((_, first_file, first_span)) = providers.iter().find(|(name, _, _)| name == id) {
                            let (first_file, first_span) = (Arc::clone(first_file), *first_span);
                            self.push(
                                Diagnostic::new(Code::DuplicateDeclaration, format!("provider `{id}` is declared twice"))
                                    .primary(&file.source, provider.id.span, "declared again here")
                                    .secondary(&first_file, first_span, "first declared here")
                                    .help("delete the second declaration"),
                            );
                        } else if id.trim().is_empty() || id.chars().any(char::is_whitespace) {
                            self.push(
                                Diagnostic::new(Code::TypeMismatch, format!("provider id `{id}` is empty or contains whitespace"))
                                    .primary(&file.source, provider.id.span, "not a provider id")
                                    .help("provider ids are adapter ids such as `claude-acp`, without whitespace"),
                            );
                        } else {
                            providers.push((id.clone(), &file.source, provider.id.span));
                        }
                    }
                    Item::Code(block) => {
                        let name = &block.name.value;
                        match codes.get(name) {
                            Some(first) => {
                                let first_file = code_files.get(name).map_or_else(|| Arc::clone(&file.source), |f| Arc::clone(f));
                                let first_span = first.name.span;
                                self.push(
                                    Diagnostic::new(Code::DuplicateCode, format!("code `{name}` is declared twice"))
                                        .primary(&file.source, block.name.span, "declared again here")
                                        .secondary(&first_file, first_span, "first declared here")
                                        .help("delete or rename one of the declarations"),
                                );
                            }
                            None => {
                                codes.insert(name.clone(), block);
                                code_files.insert(name.clone(), &file.source);
                            }
                        }
                    }
                    Item::Rule(block) => {
                        let id = &block.name.value;
                        match rules.get(id) {
                            Some((first_file, first)) => {
                                let (first_file, first_span) = (Arc::clone(first_file), first.name.span);
                                self.push(
                                    Diagnostic::new(Code::DuplicateRuleId, format!("rule id `{id}` is defined twice"))
                                        .primary(&file.source, block.name.span, "defined again here")
                                        .secondary(&first_file, first_span, "first defined here")
                                        .help("rule ids are stable and unique: rename this rule, e.g. bump its `.vN` suffix for a new signature"),
                                );
                            }
                            None => {
                                rules.insert(id.clone(), (&file.source, block));
                            }
                        }
                    }
                    Item::Header(_) | Item::Include(_) => {}
                }
            }
        }
        let tiers = match tiers_decl {
            Some((file, decl)) => self.tier_names(file, decl),
            None => {
                if let Some(root) = loaded.files.first() {
                    self.push(
                        Diagnostic::new(Code::MissingTiers, "the catalogue declares no `tiers`")
                            .primary(&root.source, Span::new(0, 0), "expected a `tiers [...]` declaration in the catalogue")
                            .help("declare the tiers once, highest priority first, e.g. `tiers [structured, provider, neutral, runtime, fallback]`"),
                    );
                }
                Vec::new()
            }
        };
        Declarations {
            tiers,
            providers: providers.into_iter().map(|(id, _, _)| id).collect(),
            codes,
            rules,
        }
    }

    fn tier_names(&mut self, file: &Arc<SourceFile>, decl: &ast::TiersDecl) -> Vec<String> {
        let mut tiers: Vec<(String, Span)> = Vec::new();
        for value in &decl.tiers.items {
            let Value::Ident(name) = value else {
                self.push(
                    Diagnostic::new(
                        Code::TypeMismatch,
                        format!("a tier is a name, found {}", value.kind_name()),
                    )
                    .primary(file, value.span(), "expected a tier name")
                    .help("write tiers as bare names: `tiers [structured, provider, fallback]`"),
                );
                continue;
            };
            if let Some((_, first)) = tiers.iter().find(|(tier, _)| *tier == name.value) {
                let first = *first;
                self.push(
                    Diagnostic::new(
                        Code::DuplicateDeclaration,
                        format!("tier `{}` is listed twice", name.value),
                    )
                    .primary(file, name.span, "listed again here")
                    .secondary(file, first, "first listed here")
                    .help("each tier has one position in the priority order; delete one"),
                );
                continue;
            }
            tiers.push((name.value.clone(), name.span));
        }
        tiers.into_iter().map(|(tier, _)| tier).collect()
    }

    fn vocab<T: Vocabulary>(&mut self, file: &Arc<SourceFile>, name: &ast::Name) -> Option<T> {
        let found = T::lookup(&name.value);
        if found.is_none() {
            let names = T::all_names();
            self.push(
                Diagnostic::new(T::CODE, format!("unknown {} `{}`", T::KIND, name.value))
                    .primary(file, name.span, format!("not a {}", T::KIND))
                    .help(suggest::help(&name.value, T::KIND, names.iter().copied())),
            );
        }
        found
    }

    fn vocab_value<T: Vocabulary>(&mut self, file: &Arc<SourceFile>, value: &Value) -> Option<T> {
        match value {
            Value::Ident(name) => self.vocab(file, name),
            other => {
                self.type_mismatch(file, other, &format!("a {} name", T::KIND));
                None
            }
        }
    }

    fn type_mismatch(&mut self, file: &Arc<SourceFile>, value: &Value, expected: &str) {
        let help = match value {
            Value::Str(string) => format!("write {expected} without quotes: `{}`", string.value),
            Value::Ident(name) => format!("write {expected}, e.g. `\"{}\"`", name.value),
            Value::Int(_) => format!("write {expected}"),
        };
        self.push(
            Diagnostic::new(
                Code::TypeMismatch,
                format!("expected {expected}, found {}", value.kind_name()),
            )
            .primary(file, value.span(), format!("expected {expected}"))
            .help(help),
        );
    }

    fn int_in(
        &mut self,
        file: &Arc<SourceFile>,
        int: &ast::IntLit,
        range: std::ops::RangeInclusive<i64>,
        what: &str,
    ) -> Option<i64> {
        let value = int.value?;
        if range.contains(&value) {
            return Some(value);
        }
        self.push(
            Diagnostic::new(
                Code::IntegerOutOfRange,
                format!("{what} `{value}` is out of range"),
            )
            .primary(
                file,
                int.span,
                format!("expected {}..={}", range.start(), range.end()),
            )
            .help(format!(
                "a {what} is a number from {} to {}",
                range.start(),
                range.end()
            )),
        );
        None
    }

    fn provider(
        &mut self,
        file: &Arc<SourceFile>,
        value: &Value,
        declared: &[String],
    ) -> Option<String> {
        let Value::Str(string) = value else {
            self.type_mismatch(file, value, "a provider id string");
            return None;
        };
        if declared.contains(&string.value) {
            return Some(string.value.clone());
        }
        self.push(
            Diagnostic::new(
                Code::UndeclaredProvider,
                format!("provider `{}` is not declared", string.value),
            )
            .primary(file, string.span, "undeclared provider")
            .help(
                match suggest::closest(&string.value, declared.iter().map(String::as_str)) {
                    Some(best) => format!(
                        "did you mean `{best}`? otherwise declare it with `provider \"{}\"`",
                        string.value
                    ),
                    None => format!(
                        "declare it with `provider \"{}\"`, or correct the id",
                        string.value
                    ),
                },
            ),
        );
        None
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

    fn code_block(&mut self, file: &Arc<SourceFile>, block: &Block) -> Option<CodeDef> {
        let mut ok = true;
        for clause in &block.clauses {
            match &clause.kind {
                ClauseKind::Class(_)
                | ClauseKind::Flags(_)
                | ClauseKind::Scope(_)
                | ClauseKind::Remediation(ast::Remediation::Token(_)) => {}
                ClauseKind::Remediation(ast::Remediation::Capture { .. }) => {
                    ok = false;
                    self.misplaced(file, "code", clause, "a code's remediation is a fixed token such as `remediation \"start_fresh_session\"`; capture values in a rule");
                }
                _ => {
                    ok = false;
                    self.misplaced(file, "code", clause, "a code block holds `class`, `flags`, `scope` and `remediation`; rule clauses belong in a `rule` block");
                }
            }
        }
        let has_class = self.require(file, block, "class", "code", "class transient");
        let has_flags = self.require(
            file,
            block,
            "flags",
            "code",
            "flags [auto_retryable, fallback_allowed]",
        );
        let has_scope = self.require(file, block, "scope", "code", "scope provider");
        let class = match self.single(file, block, "class").map(|c| &c.kind) {
            Some(ClauseKind::Class(name)) => self.vocab::<Class>(file, name),
            _ => None,
        };
        let scope = match self.single(file, block, "scope").map(|c| &c.kind) {
            Some(ClauseKind::Scope(name)) => self.vocab::<Scope>(file, name),
            _ => None,
        };
        let flags = match self.single(file, block, "flags").map(|c| &c.kind) {
            Some(ClauseKind::Flags(list)) => self.vocab_list::<Flag>(file, list),
            _ => None,
        };
        let remediation = match self.single(file, block, "remediation").map(|c| &c.kind) {
            Some(ClauseKind::Remediation(ast::Remediation::Token(token))) => {
                self.token(file, token)
            }
            _ => None,
        };
        if !(ok && has_class && has_flags && has_scope) {
            return None;
        }
        let (class, scope, flags) = (class?, scope?, flags?);
        Some(CodeDef {
            name: block.name.value.clone(),
            class,
            auto_retryable: flags.contains(&Flag::AutoRetryable),
            fallback_allowed: flags.contains(&Flag::FallbackAllowed),
            user_action: flags.contains(&Flag::UserAction),
            scope,
            remediation,
            doc: doc_text(block),
            origin: Origin {
                file: Arc::clone(file),
                span: block.name.span,
            },
        })
    }

    /// A fixed excerpt must be safe as written: the diagnostic tier leaves it unchanged.
    fn fixed_excerpt(&mut self, file: &Arc<SourceFile>, text: &StringLit) -> Option<String> {
        let problem = if text.value.trim().is_empty() {
            Some("the excerpt is empty".to_owned())
        } else if text.value.len() > faultline_runtime::MAX_EXCERPT_BYTES {
            Some(format!(
                "{} bytes, more than the {}-byte excerpt bound",
                text.value.len(),
                faultline_runtime::MAX_EXCERPT_BYTES
            ))
        } else {
            let redacted = faultline_runtime::redact_diagnostic(&text.value);
            (redacted != text.value).then(|| format!("redaction would rewrite it as `{redacted}`"))
        };
        let Some(problem) = problem else {
            return Some(text.value.clone());
        };
        self.push(
            Diagnostic::new(Code::UnsafeExcerpt, "the fixed excerpt is not redaction-clean")
                .primary(file, text.span, problem)
                .help("write placeholders such as `<release-date>` or `<package>` where the values would be"),
        );
        None
    }

    fn token(&mut self, file: &Arc<SourceFile>, token: &StringLit) -> Option<String> {
        let valid = !token.value.is_empty()
            && token
                .value
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if valid {
            return Some(token.value.clone());
        }
        self.push(
            Diagnostic::new(Code::TypeMismatch, format!("remediation token `{}` is not a snake_case token", token.value))
                .primary(file, token.span, "expected a token such as `start_fresh_session`")
                .help("a remediation token is lowercase ASCII letters, digits and `_`; to report a value from the text, use `remediation capture` in a rule"),
        );
        None
    }

    /// Resolves a list of vocabulary names, reporting unknown and repeated entries.
    fn vocab_list<T: Vocabulary + PartialEq>(
        &mut self,
        file: &Arc<SourceFile>,
        list: &List,
    ) -> Option<Vec<T>> {
        let mut out: Vec<T> = Vec::new();
        let mut ok = true;
        for value in &list.items {
            match self.vocab_value::<T>(file, value) {
                Some(found) if out.contains(&found) => {
                    ok = false;
                    self.push(
                        Diagnostic::new(
                            Code::DuplicateDeclaration,
                            format!("`{}` is listed twice", file.slice(value.span())),
                        )
                        .primary(file, value.span(), "listed again here")
                        .help("delete the repeated entry"),
                    );
                }
                Some(found) => out.push(found),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    fn rule_block(
        &mut self,
        file: &Arc<SourceFile>,
        block: &Block,
        declarations: &Declarations<'_>,
        codes: &HashMap<&str, &CodeDef>,
    ) -> Option<RuleDef> {
        let mut ok = true;
        for clause in &block.clauses {
            if matches!(clause.kind, ClauseKind::Class(_) | ClauseKind::Flags(_)) {
                ok = false;
                self.misplaced(file, "rule", clause, "`class` and `flags` belong to the rule's `code` declaration, which every rule with that code shares");
            }
        }
        let matches_text = block
            .clauses
            .iter()
            .any(|clause| matches!(clause.kind, ClauseKind::Match(_)));
        if let Some(problem) = rule_id_problem(&block.name.value, matches_text) {
            ok = false;
            self.push(
                Diagnostic::new(Code::MalformedRuleId, format!("malformed rule id `{}`", block.name.value))
                    .primary(file, block.name.span, problem)
                    .help("rule ids look like `family.kind.signature.v1`, e.g. `anthropic.overloaded.529.v1`"),
            );
        }
        ok &= self.require(file, block, "code", "rule", "code provider_overloaded");
        ok &= self.require(file, block, "confidence", "rule", "confidence high");
        ok &= self.require(file, block, "tier", "rule", "tier provider");

        let code = match self.single(file, block, "code").map(|c| &c.kind) {
            Some(ClauseKind::Code(name)) => match codes.get(name.value.as_str()) {
                Some(code) => Some(*code),
                None => {
                    if !declarations.codes.contains_key(&name.value) {
                        self.push(
                            Diagnostic::new(Code::UndeclaredCode, format!("code `{}` is not declared", name.value))
                                .primary(file, name.span, "undeclared code")
                                .help(match suggest::closest(&name.value, declarations.codes.keys().map(String::as_str)) {
                                    Some(best) => format!("did you mean `{best}`? otherwise declare it with a `code {} {{ … }}` block", name.value),
                                    None => format!("declare it with `code {} {{ class … flags [...] scope … }}`", name.value),
                                }),
                        );
                    }
                    None
                }
            },
            _ => None,
        };
        let confidence = match self.single(file, block, "confidence").map(|c| &c.kind) {
            Some(ClauseKind::Confidence(name)) => self.vocab::<Confidence>(file, name),
            _ => None,
        };
        let explicit_scope = match self.single(file, block, "scope").map(|c| &c.kind) {
            Some(ClauseKind::Scope(name)) => Some(self.vocab::<Scope>(file, name)),
            _ => None,
        };
        let tier = match self.single(file, block, "tier").map(|c| &c.kind) {
            Some(ClauseKind::Tier(name)) => {
                let index = declarations
                    .tiers
                    .iter()
                    .position(|tier| *tier == name.value);
                if index.is_none() && !declarations.tiers.is_empty() {
                    self.push(
                        Diagnostic::new(
                            Code::UnknownTier,
                            format!("unknown tier `{}`", name.value),
                        )
                        .primary(file, name.span, "not in the catalogue's `tiers` list")
                        .help(suggest::help(
                            &name.value,
                            "tier",
                            declarations.tiers.iter().map(String::as_str),
                        )),
                    );
                }
                index
            }
            _ => None,
        };
        let rank = match self.single(file, block, "rank").map(|c| &c.kind) {
            Some(ClauseKind::Rank(int)) => {
                let rank = self.int_in(file, int, 0..=MAX_RANK, "rank");
                ok &= rank.is_some();
                rank
            }
            _ => None,
        };
        let timing = match self.single(file, block, "timing").map(|c| &c.kind) {
            Some(ClauseKind::Timing(list)) => {
                let timing = self.vocab_list::<TimingExtractor>(file, list);
                ok &= timing.is_some();
                timing.unwrap_or_default()
            }
            _ => Vec::new(),
        };
        let excerpt = match self.single(file, block, "excerpt").map(|c| &c.kind) {
            Some(ClauseKind::Excerpt(text)) => {
                let excerpt = self.fixed_excerpt(file, text);
                ok &= excerpt.is_some();
                excerpt
            }
            _ => None,
        };
        let remediation = match self.single(file, block, "remediation").map(|c| &c.kind) {
            Some(ClauseKind::Remediation(remediation)) => {
                let spec = self.remediation(file, remediation);
                ok &= spec.is_some();
                spec
            }
            _ => None,
        };
        let (before, after) = self.order_relations(file, block, tier, declarations, &mut ok);
        let guards = self.guards(file, block, &declarations.providers, &mut ok);
        let mut matchers = Vec::new();
        let mut vetoes = Vec::new();
        for clause in &block.clauses {
            match &clause.kind {
                ClauseKind::Match(matcher) => match self.matcher(file, matcher) {
                    Some(checked) => matchers.push(checked),
                    None => ok = false,
                },
                ClauseKind::Unless(matcher) => match self.matcher(file, matcher) {
                    Some(checked) => vetoes.push(checked),
                    None => ok = false,
                },
                _ => {}
            }
        }
        let mut examples = Vec::new();
        let mut counterexamples = Vec::new();
        for clause in &block.clauses {
            let (target, evidence) = match &clause.kind {
                ClauseKind::Example(evidence) => (&mut examples, evidence),
                ClauseKind::Counterexample(evidence) => (&mut counterexamples, evidence),
                _ => continue,
            };
            match self.example(file, evidence, &guards, &declarations.providers) {
                Some(example) => target.push(example),
                None => ok = false,
            }
        }
        let has_clause = |keyword: &str| {
            block
                .clauses
                .iter()
                .any(|clause| clause.kind.keyword() == keyword)
        };
        let missing = match (has_clause("example"), has_clause("counterexample")) {
            (false, false) => Some("an `example` and a `counterexample`"),
            (false, true) => Some("an `example`"),
            (true, false) => Some("a `counterexample`"),
            (true, true) => None,
        };
        if let Some(missing) = missing.filter(|_| matches_text) {
            self.push(
                Diagnostic::new(Code::MissingExample, format!("text rule `{}` lacks {missing}", block.name.value))
                    .primary(file, block.name.span, format!("needs {missing}"))
                    .help("every text rule carries a real (sanitized) message it must classify, `example \"…\"`, and prose quoting it that it must not fire on, `counterexample \"…\"`"),
            );
        }
        let code = code?;
        let scope = match explicit_scope {
            Some(scope) => scope?,
            None => code.scope,
        };
        if !ok {
            return None;
        }
        Some(RuleDef {
            id: block.name.value.clone(),
            doc: doc_text(block),
            code: code.name.clone(),
            confidence: confidence?,
            scope,
            tier: tier?,
            rank,
            before,
            after,
            guards,
            matchers,
            vetoes,
            timing,
            remediation,
            excerpt,
            examples,
            counterexamples,
            origin: Origin {
                file: Arc::clone(file),
                span: block.name.span,
            },
        })
    }

    fn order_relations(
        &mut self,
        file: &Arc<SourceFile>,
        block: &Block,
        tier: Option<usize>,
        declarations: &Declarations<'_>,
        ok: &mut bool,
    ) -> (Vec<String>, Vec<String>) {
        let mut before = Vec::new();
        let mut after = Vec::new();
        for clause in &block.clauses {
            let (target, name) = match &clause.kind {
                ClauseKind::Before(name) => (&mut before, name),
                ClauseKind::After(name) => (&mut after, name),
                _ => continue,
            };
            match declarations.rules.get(&name.value) {
                None => {
                    *ok = false;
                    self.push(
                        Diagnostic::new(
                            Code::UnknownRuleReference,
                            format!("no rule has the id `{}`", name.value),
                        )
                        .primary(file, name.span, "unknown rule")
                        .help(
                            match suggest::closest(
                                &name.value,
                                declarations.rules.keys().map(String::as_str),
                            ) {
                                Some(best) => format!("did you mean `{best}`?"),
                                None => {
                                    "order relations name rules of the same tier by their full id"
                                        .to_owned()
                                }
                            },
                        ),
                    );
                }
                Some((other_file, other)) => {
                    let other_tier = other.clauses.iter().find_map(|clause| match &clause.kind {
                        ClauseKind::Tier(tier) => {
                            declarations.tiers.iter().position(|t| *t == tier.value)
                        }
                        _ => None,
                    });
                    if let (Some(mine), Some(theirs)) = (tier, other_tier)
                        && mine != theirs
                    {
                        *ok = false;
                        let (mine_name, theirs_name) = (
                            declarations.tiers.get(mine).cloned().unwrap_or_default(),
                            declarations.tiers.get(theirs).cloned().unwrap_or_default(),
                        );
                        let other_file = Arc::clone(other_file);
                        self.push(
                            Diagnostic::new(
                                Code::CrossTierOrder,
                                format!("`{}` (tier `{mine_name}`) is ordered against `{}` (tier `{theirs_name}`)", block.name.value, name.value),
                            )
                            .primary(file, clause.span, "relation across tiers")
                            .secondary(&other_file, other.name.span, format!("in tier `{theirs_name}`"))
                            .help("tiers already order these rules; delete the relation, or move one rule into the other's tier"),
                        );
                    } else {
                        target.push(name.value.clone());
                    }
                }
            }
        }
        (before, after)
    }

    fn guards(
        &mut self,
        file: &Arc<SourceFile>,
        block: &Block,
        providers: &[String],
        ok: &mut bool,
    ) -> Guards {
        let mut guards = Guards::default();
        let mut seen: Vec<(EvidenceField, Span)> = Vec::new();
        for clause in &block.clauses {
            let ClauseKind::When(guard) = &clause.kind else {
                continue;
            };
            let Some(field) = self.vocab::<EvidenceField>(file, &guard.field) else {
                *ok = false;
                continue;
            };
            if let Some((_, first)) = seen.iter().find(|(f, _)| *f == field) {
                let first = *first;
                *ok = false;
                self.push(
                    Diagnostic::new(Code::DuplicateClause, format!("two guards on `{field}` in `{}`", block.name.value))
                        .primary(file, clause.span, "second guard")
                        .secondary(file, first, "first guard")
                        .help(format!("guards are all required; to accept several values write `when {field} in [a, b]`")),
                );
                continue;
            }
            seen.push((field, clause.span));
            let values: Vec<&Value> = match &guard.test {
                GuardTest::Present(_) => {
                    guards.present.push(field);
                    continue;
                }
                GuardTest::Equals(value) => vec![value],
                GuardTest::In(list) => {
                    if list.items.is_empty() {
                        *ok = false;
                        self.push(
                            Diagnostic::new(
                                Code::TypeMismatch,
                                format!("`when {field} in []` can never hold"),
                            )
                            .primary(file, list.span, "empty list")
                            .help("list at least one value, or delete the guard"),
                        );
                        continue;
                    }
                    list.items.iter().collect()
                }
            };
            let before_count = self.diagnostics.len();
            match field {
                EvidenceField::Phase => {
                    guards.phase = Some(
                        values
                            .iter()
                            .filter_map(|v| self.vocab_value::<Phase>(file, v))
                            .collect(),
                    );
                }
                EvidenceField::Source => {
                    guards.source = Some(
                        values
                            .iter()
                            .filter_map(|v| self.vocab_value::<Source>(file, v))
                            .collect(),
                    );
                }
                EvidenceField::ProviderId => {
                    guards.provider_id = Some(
                        values
                            .iter()
                            .filter_map(|v| self.provider(file, v, providers))
                            .collect(),
                    );
                }
                EvidenceField::HttpStatus => {
                    let statuses = values
                        .iter()
                        .filter_map(|v| self.int_value(file, v, 100..=599, "HTTP status"))
                        .filter_map(|v| u16::try_from(v).ok())
                        .collect();
                    guards.http_status = Some(statuses);
                }
                EvidenceField::ExitCode => {
                    let codes = values
                        .iter()
                        .filter_map(|v| {
                            self.int_value(
                                file,
                                v,
                                i64::from(i32::MIN)..=i64::from(i32::MAX),
                                "exit code",
                            )
                        })
                        .filter_map(|v| i32::try_from(v).ok())
                        .collect();
                    guards.exit_code = Some(codes);
                }
                EvidenceField::ResetHint
                | EvidenceField::Stderr
                | EvidenceField::Stdout
                | EvidenceField::ManagedRuntimePackageSpec => {
                    self.push(
                        Diagnostic::new(Code::TypeMismatch, format!("`{field}` can only be tested with `present`"))
                            .primary(file, clause.span, "not a structured value")
                            .help(format!("write `when {field} present`; to test the text itself, use a `match` clause")),
                    );
                }
            }
            if self.diagnostics.len() > before_count {
                *ok = false;
            }
        }
        guards
    }

    fn int_value(
        &mut self,
        file: &Arc<SourceFile>,
        value: &Value,
        range: std::ops::RangeInclusive<i64>,
        what: &str,
    ) -> Option<i64> {
        match value {
            Value::Int(int) => self.int_in(file, int, range, what),
            other => {
                self.type_mismatch(file, other, &format!("a number ({what})"));
                None
            }
        }
    }

    fn view(&mut self, file: &Arc<SourceFile>, view: Option<&ast::Name>) -> Option<TextView> {
        match view {
            Some(name) => self.vocab::<TextView>(file, name),
            None => Some(TextView::Sanitized),
        }
    }

    /// Refuses a pattern or literal longer than the pattern budget.
    fn within_budget(&mut self, file: &Arc<SourceFile>, text: &StringLit, what: &str) -> bool {
        if text.value.len() <= self.pattern_bytes {
            return true;
        }
        self.push(
            Diagnostic::new(
                Code::AutomatonTooLarge,
                format!(
                    "a {what} exceeds its budget: it is {} bytes long, more than the {} pattern budget",
                    crate::lower::grouped(text.value.len()),
                    crate::lower::bytes(self.pattern_bytes)
                ),
            )
            .primary(file, text.span, "too long to compile: parsing alone needs memory in proportion to its length")
            .help("split the rule into several rules with shorter patterns, or match a shorter, distinctive part of the text (see docs/bundle.md)"),
        );
        false
    }

    fn pattern(
        &mut self,
        file: &Arc<SourceFile>,
        pattern: &StringLit,
    ) -> Option<pattern::LoweredPattern> {
        if !self.within_budget(file, pattern, "pattern") {
            return None;
        }
        match (self.lower)(&pattern.value) {
            Ok(lowered) => Some(lowered),
            Err(problems) => {
                for problem in problems {
                    let diagnostic = match problem {
                        PatternProblem::Invalid { message, range } => {
                            Diagnostic::new(Code::InvalidRegex, format!("invalid regex: {message}"))
                                .primary(file, pattern.span_of(range.start, range.end.max(range.start)), message)
                                .help("faultline regexes use Rust `regex` syntax with RE2 semantics; write them as raw strings `r\"…\"` (see docs/language.md)")
                        }
                        PatternProblem::MatchesEmpty => {
                            Diagnostic::new(Code::RegexMatchesEmpty, format!("regex `{}` matches the empty string", pattern.value))
                                .primary(file, pattern.span, "matches the empty string, so it fires on any text")
                                .help("require at least one character, e.g. replace `x*` with `x+` or remove an empty alternative")
                        }
                        PatternProblem::UnicodeWordBoundary { range } => {
                            Diagnostic::new(Code::DfaHostileRegex, "a Unicode word boundary cannot be compiled to a deterministic automaton")
                                .primary(file, pattern.span_of(range.start, range.end), "Unicode-aware boundary (the `u` flag is set)")
                                .help("remove the `u` flag around it: faultline's `\\b` is already an ASCII word boundary, as in RE2 and Go, or write `(?-u:\\b)`")
                        }
                    };
                    self.push(diagnostic);
                }
                None
            }
        }
    }

    fn literal(
        &mut self,
        file: &Arc<SourceFile>,
        literal: &StringLit,
        kind: &str,
    ) -> Option<String> {
        if !self.within_budget(file, literal, "literal") {
            return None;
        }
        if literal.value.trim().is_empty() {
            self.push(
                Diagnostic::new(
                    Code::EmptyLiteral,
                    format!("`{kind}` matcher with an empty literal"),
                )
                .primary(file, literal.span, "empty, so it would match every text")
                .help(format!("write the text the `{kind}` matcher requires")),
            );
            return None;
        }
        // `prefix` and `whole` compare the trimmed text: surrounding whitespace in the literal
        // could never be there.
        if kind != "contains" && literal.value.trim() != literal.value {
            self.push(
                Diagnostic::new(
                    Code::EmptyLiteral,
                    format!(
                        "`{kind}` literal `{}` has surrounding whitespace",
                        literal.value
                    ),
                )
                .primary(
                    file,
                    literal.span,
                    "the text is trimmed before it is compared, so this whitespace can never match",
                )
                .help(format!(
                    "remove the leading and trailing whitespace: `{kind} \"{}\"`",
                    literal.value.trim()
                )),
            );
            return None;
        }
        Some(literal.value.clone())
    }

    fn matcher(&mut self, file: &Arc<SourceFile>, matcher: &ast::Matcher) -> Option<TextMatcher> {
        let view = self.view(file, matcher.view.as_ref());
        let span = match &matcher.kind {
            ast::MatcherKind::Regex { pattern, .. } => pattern.span,
            ast::MatcherKind::Prefix { literal, .. }
            | ast::MatcherKind::Whole { literal, .. }
            | ast::MatcherKind::Contains { literal, .. } => literal.span,
        };
        let kind = match &matcher.kind {
            ast::MatcherKind::Regex {
                pattern,
                group_equals,
            } => {
                let lowered = self.pattern(file, pattern)?;
                let group_equals = match group_equals {
                    Some(condition) => {
                        let field = self.vocab::<EvidenceField>(file, &condition.field);
                        let group = self.int_in(
                            file,
                            &condition.group,
                            0..=i64::from(u32::MAX),
                            "capture group",
                        )?;
                        let group = u32::try_from(group).ok()?;
                        if group > lowered.capture_groups {
                            self.push(
                                Diagnostic::new(Code::MissingCaptureGroup, format!("the pattern has no capture group {group}"))
                                    .primary(file, condition.group.span, format!("the pattern has {} capture group(s)", lowered.capture_groups))
                                    .secondary(file, pattern.span, "in this pattern")
                                    .help("add the group to the pattern, e.g. `(\\S+@\\S+)`, or correct the number"),
                            );
                            return None;
                        }
                        let field = field?;
                        if !matches!(
                            field,
                            EvidenceField::ProviderId
                                | EvidenceField::ResetHint
                                | EvidenceField::Stderr
                                | EvidenceField::Stdout
                                | EvidenceField::ManagedRuntimePackageSpec
                        ) {
                            self.push(
                                Diagnostic::new(Code::TypeMismatch, format!("a capture group can only equal a text field, not `{field}`"))
                                    .primary(file, condition.field.span, "not a text field")
                                    .help("compare with `provider_id`, `reset_hint`, `stderr`, `stdout` or `managed_runtime_package_spec`; structured fields are tested with `when`"),
                            );
                            return None;
                        }
                        Some((group, field))
                    }
                    None => None,
                };
                MatcherKind::Regex {
                    written: pattern.value.clone(),
                    lowered: lowered.lowered,
                    group_equals,
                }
            }
            ast::MatcherKind::Prefix {
                literal,
                ignore_case,
                suffix,
            } => {
                let literal = self.literal(file, literal, "prefix")?;
                let suffix = match suffix {
                    Some(bound) => Some(self.suffix_bound(file, bound)?),
                    None => None,
                };
                MatcherKind::Prefix {
                    literal,
                    ignore_case: ignore_case.is_some(),
                    suffix,
                }
            }
            ast::MatcherKind::Whole {
                literal,
                ignore_case,
            } => MatcherKind::Whole {
                literal: self.literal(file, literal, "whole")?,
                ignore_case: ignore_case.is_some(),
            },
            ast::MatcherKind::Contains {
                literal,
                ignore_case,
            } => MatcherKind::Contains {
                literal: self.literal(file, literal, "contains")?,
                ignore_case: ignore_case.is_some(),
            },
        };
        Some(TextMatcher {
            view: view?,
            kind,
            span,
        })
    }

    fn suffix_bound(
        &mut self,
        file: &Arc<SourceFile>,
        bound: &ast::SuffixBytes,
    ) -> Option<(usize, usize)> {
        let (min, max) = (bound.min.value?, bound.max.value?);
        let problem = if min < 0 || max < 0 {
            Some("byte bounds cannot be negative")
        } else if min > max {
            Some("the minimum is larger than the maximum")
        } else if max > MAX_EXCERPT_BYTES {
            Some("the maximum is larger than the 4096-byte sanitized excerpt")
        } else {
            None
        };
        if let Some(problem) = problem {
            self.push(
                Diagnostic::new(
                    Code::ByteBoundOutOfRange,
                    format!("byte bound `{min}..={max}` is out of range"),
                )
                .primary(file, bound.span, problem)
                .help("use 0 <= MIN <= MAX <= 4096, e.g. `suffix 1..=256 bytes`"),
            );
            return None;
        }
        Some((usize::try_from(min).ok()?, usize::try_from(max).ok()?))
    }

    fn remediation(
        &mut self,
        file: &Arc<SourceFile>,
        remediation: &ast::Remediation,
    ) -> Option<RemediationSpec> {
        match remediation {
            ast::Remediation::Token(token) => self.token(file, token).map(RemediationSpec::Token),
            ast::Remediation::Capture {
                pattern,
                group,
                view,
            } => {
                let view = self.view(file, view.as_ref());
                let lowered = self.pattern(file, pattern)?;
                let group_number =
                    self.int_in(file, group, 0..=i64::from(u32::MAX), "capture group")?;
                let group_number = u32::try_from(group_number).ok()?;
                if group_number == 0 || group_number > lowered.capture_groups {
                    self.push(
                        Diagnostic::new(Code::MissingCaptureGroup, format!("remediation captures group {group_number}, which the pattern does not have"))
                            .primary(file, group.span, format!("the pattern has {} capture group(s)", lowered.capture_groups))
                            .secondary(file, pattern.span, "in this pattern")
                            .help("wrap the value to report in a group, e.g. `(/[^\\n]*?/\\.npm/_npx/[0-9a-f]+)`, and capture group 1"),
                    );
                    return None;
                }
                Some(RemediationSpec::Capture {
                    lowered: lowered.lowered,
                    group: group_number,
                    view: view?,
                    span: pattern.span,
                })
            }
        }
    }

    fn example(
        &mut self,
        file: &Arc<SourceFile>,
        evidence: &ast::Evidence,
        guards: &Guards,
        providers: &[String],
    ) -> Option<Example> {
        let mut out = ExampleEvidence::default();
        let span = match evidence {
            ast::Evidence::Text(text) => {
                out.stderr = Some(text.value.clone());
                text.span
            }
            ast::Evidence::Object { span, fields } => {
                let mut ok = true;
                let mut seen: Vec<(EvidenceField, Span)> = Vec::new();
                for field in fields {
                    let Some(name) = self.vocab::<EvidenceField>(file, &field.name) else {
                        ok = false;
                        continue;
                    };
                    if let Some((_, first)) = seen.iter().find(|(f, _)| *f == name) {
                        let first = *first;
                        ok = false;
                        self.push(
                            Diagnostic::new(
                                Code::DuplicateDeclaration,
                                format!("field `{name}` is given twice"),
                            )
                            .primary(file, field.name.span, "given again here")
                            .secondary(file, first, "first given here")
                            .help("give each evidence field once"),
                        );
                        continue;
                    }
                    seen.push((name, field.name.span));
                    ok &= self.evidence_field(file, name, &field.value, &mut out, providers);
                }
                if !ok {
                    return None;
                }
                *span
            }
        };
        // Single-valued guards complete the example, so that it exercises the rule in context.
        if out.phase.is_none() {
            out.phase = guards
                .phase
                .as_ref()
                .and_then(|p| single(p))
                .or(Some(Phase::PromptSend));
        }
        if out.provider_id.is_none() {
            out.provider_id = guards.provider_id.as_ref().and_then(|p| single(p));
        }
        if out.source.is_none() {
            out.source = guards.source.as_ref().and_then(|s| single(s));
        }
        if out.http_status.is_none() {
            out.http_status = guards.http_status.as_ref().and_then(|s| single(s));
        }
        if out.exit_code.is_none() {
            out.exit_code = guards.exit_code.as_ref().and_then(|s| single(s));
        }
        Some(Example {
            evidence: out,
            origin: Origin {
                file: Arc::clone(file),
                span,
            },
        })
    }

    fn evidence_field(
        &mut self,
        file: &Arc<SourceFile>,
        field: EvidenceField,
        value: &Value,
        out: &mut ExampleEvidence,
        providers: &[String],
    ) -> bool {
        let text = |checker: &mut Self| match value {
            Value::Str(string) => Some(string.value.clone()),
            other => {
                checker.type_mismatch(file, other, "a string");
                None
            }
        };
        match field {
            EvidenceField::Phase => out.phase = self.vocab_value::<Phase>(file, value),
            EvidenceField::Source => out.source = self.vocab_value::<Source>(file, value),
            EvidenceField::ProviderId => out.provider_id = self.provider(file, value, providers),
            EvidenceField::HttpStatus => {
                out.http_status = self
                    .int_value(file, value, 100..=599, "HTTP status")
                    .and_then(|v| u16::try_from(v).ok());
            }
            EvidenceField::ExitCode => {
                out.exit_code = self
                    .int_value(
                        file,
                        value,
                        i64::from(i32::MIN)..=i64::from(i32::MAX),
                        "exit code",
                    )
                    .and_then(|v| i32::try_from(v).ok());
            }
            EvidenceField::ResetHint => out.reset_hint = text(self),
            EvidenceField::Stderr => out.stderr = text(self),
            EvidenceField::Stdout => out.stdout = text(self),
            EvidenceField::ManagedRuntimePackageSpec => {
                out.managed_runtime_package_spec = text(self)
            }
        }
        match field {
            EvidenceField::Phase => out.phase.is_some(),
            EvidenceField::Source => out.source.is_some(),
            EvidenceField::ProviderId => out.provider_id.is_some(),
            EvidenceField::HttpStatus => out.http_status.is_some(),
            EvidenceField::ExitCode => out.exit_code.is_some(),
            EvidenceField::ResetHint => out.reset_hint.is_some(),
            EvidenceField::Stderr => out.stderr.is_some(),
            EvidenceField::Stdout => out.stdout.is_some(),
            EvidenceField::ManagedRuntimePackageSpec => out.managed_runtime_package_spec.is_some(),
        }
    }
}

fn single<T: Clone>(values: &[T]) -> Option<T> {
    match values {
        [one] => Some(one.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_ids_are_dotted_lowercase_and_text_rules_are_versioned() {
        assert_eq!(rule_id_problem("anthropic.overloaded.529.v1", true), None);
        assert_eq!(rule_id_problem("http.429", false), None);
        assert!(rule_id_problem("http.429", true).is_some());
        assert!(rule_id_problem("Claude.rate.v1", true).is_some());
        assert!(rule_id_problem("claude..rate.v1", true).is_some());
        assert!(rule_id_problem("claude.rate.v01", true).is_some());
        assert!(rule_id_problem("single", false).is_some());
    }

    #[test]
    fn versions_end_in_a_positive_version_number() {
        assert!(version_is_valid("provider-errors.v1"));
        assert!(version_is_valid("provider-errors.v12"));
        assert!(!version_is_valid("provider-errors"));
        assert!(!version_is_valid("provider-errors.v0"));
        assert!(!version_is_valid("Provider.v1"));
    }
}
