//! Declarations: the catalogue header, the tier list, providers and codes, gathered from
//! every file before any rule is checked (rules refer to them by name).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use faultline_dsl::ast::{self, Block, ClauseKind, Item, Value};
use faultline_dsl::{Code, Diagnostic, LoadedCatalogue, SourceFile, Span};
use faultline_runtime::{Class, Flag, Scope};

use super::Checker;
use super::doc_text;
use crate::ir::*;

/// Declarations gathered from every file before blocks are checked.
pub(super) struct Declarations<'a> {
    pub(super) tiers: Vec<String>,
    pub(super) providers: Vec<String>,
    pub(super) codes: BTreeMap<String, &'a Block>,
    /// Rule id → (file, block), first definition.
    pub(super) rules: HashMap<String, (&'a Arc<SourceFile>, &'a Block)>,
    /// Shared veto name → (file, declaration), first declaration.
    pub(super) vetoes: BTreeMap<String, (&'a Arc<SourceFile>, &'a ast::VetoDecl)>,
    /// Shared veto name → its matchers as checked once at its declaration: one for a veto, its
    /// members' for a veto set (`None` when it has errors, reported there); filled by
    /// [`Checker::shared_vetoes`].
    pub(super) checked_vetoes: HashMap<String, Option<Vec<TextMatcher>>>,
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
    pub(super) fn header(&mut self, loaded: &LoadedCatalogue) -> (String, String) {
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

    pub(super) fn declarations<'a>(&mut self, loaded: &'a LoadedCatalogue) -> Declarations<'a> {
        let mut tiers_decl: Option<(&Arc<SourceFile>, &ast::TiersDecl)> = None;
        let mut providers: Vec<(String, &Arc<SourceFile>, Span)> = Vec::new();
        let mut codes: BTreeMap<String, &Block> = BTreeMap::new();
        let mut code_files: HashMap<String, &Arc<SourceFile>> = HashMap::new();
        let mut rules: HashMap<String, (&Arc<SourceFile>, &Block)> = HashMap::new();
        let mut vetoes: BTreeMap<String, (&Arc<SourceFile>, &ast::VetoDecl)> = BTreeMap::new();
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
                    Item::Veto(veto) => {
                        let name = &veto.name.value;
                        match vetoes.get(name) {
                            Some((first_file, first)) => {
                                let (first_file, first_span) = (Arc::clone(first_file), first.name.span);
                                self.push(
                                    Diagnostic::new(Code::DuplicateDeclaration, format!("shared veto `{name}` is declared twice"))
                                        .primary(&file.source, veto.name.span, "declared again here")
                                        .secondary(&first_file, first_span, "first declared here")
                                        .help("rules name a shared veto, so its name is declared once: delete this declaration or rename it"),
                                );
                            }
                            None => {
                                vetoes.insert(name.clone(), (&file.source, veto));
                            }
                        }
                    }
                    Item::Header(_) | Item::Include(_) | Item::Policy(_) => {}
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
            vetoes,
            checked_vetoes: HashMap::new(),
        }
    }

    /// Checks each shared veto's matcher once, where it is declared: its errors are reported
    /// there, not at every rule that uses it.
    ///
    /// A veto set's members are resolved after every single veto is checked: each must be declared,
    /// with a matcher (a set inside a set is refused, so that a set reads as the list it is).
    pub(super) fn shared_vetoes(&mut self, declarations: &mut Declarations<'_>) {
        let mut checked: HashMap<String, Option<Vec<TextMatcher>>> = HashMap::new();
        for (name, (file, veto)) in &declarations.vetoes {
            if let ast::VetoBody::Matcher(matcher) = &veto.body {
                let named = |one: TextMatcher| TextMatcher {
                    shared: Some(SharedVetoUse {
                        used_as: name.clone(),
                        veto: name.clone(),
                    }),
                    ..one
                };
                checked.insert(
                    name.clone(),
                    self.matcher(file, matcher).map(|one| vec![named(one)]),
                );
            }
        }
        for (name, (file, veto)) in &declarations.vetoes {
            let ast::VetoBody::Set(set) = &veto.body else {
                continue;
            };
            let mut members = Some(Vec::new());
            for member in &set.members {
                let resolved = match declarations.vetoes.get(&member.value) {
                    Some((_, declared)) => match &declared.body {
                        ast::VetoBody::Matcher(_) => checked.get(&member.value).cloned().flatten(),
                        ast::VetoBody::Set(_) => {
                            self.push(
                                Diagnostic::new(
                                    Code::NestedVetoSet,
                                    format!("veto set `{name}` names the veto set `{}`", member.value),
                                )
                                .primary(file, member.span, "a veto set, not a veto")
                                .help(format!(
                                    "a veto set lists shared vetoes declared with a matcher: list `{}`'s members here instead",
                                    member.value
                                )),
                            );
                            None
                        }
                    },
                    None => {
                        self.push(undeclared_veto(file, member, &declarations.vetoes, false));
                        None
                    }
                };
                members = members.zip(resolved).map(|(mut all, one)| {
                    all.extend(one);
                    all
                });
            }
            checked.insert(name.clone(), members);
        }
        declarations.checked_vetoes = checked;
    }

    /// Reports the shared vetoes no rule uses.
    pub(super) fn unused_vetoes(
        &mut self,
        loaded: &LoadedCatalogue,
        declarations: &Declarations<'_>,
    ) {
        let used: std::collections::HashSet<&str> = loaded
            .files
            .iter()
            .flat_map(|file| &file.syntax.items)
            .filter_map(|item| match item {
                Item::Rule(block) => Some(block),
                _ => None,
            })
            .flat_map(|block| &block.clauses)
            .filter_map(|clause| match &clause.kind {
                ClauseKind::UnlessShared(name) => Some(name.value.as_str()),
                _ => None,
            })
            // A veto set's members are used by it; an unused set is reported itself.
            .chain(
                declarations
                    .vetoes
                    .values()
                    .filter_map(|(_, veto)| match &veto.body {
                        ast::VetoBody::Set(set) => Some(set),
                        ast::VetoBody::Matcher(_) => None,
                    })
                    .flat_map(|set| &set.members)
                    .map(|member| member.value.as_str()),
            )
            .collect();
        for (name, (file, veto)) in &declarations.vetoes {
            if !used.contains(name.as_str()) {
                self.push(
                    Diagnostic::new(
                        Code::UnusedVeto,
                        format!("shared veto `{name}` is never used"),
                    )
                    .primary(file, veto.name.span, "no rule says `unless` with this name")
                    .help(format!(
                        "add `unless {name}` to the rules it was written for, or delete it"
                    )),
                );
            }
        }
    }

    pub(super) fn tier_names(
        &mut self,
        file: &Arc<SourceFile>,
        decl: &ast::TiersDecl,
    ) -> Vec<String> {
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

    pub(super) fn code_block(&mut self, file: &Arc<SourceFile>, block: &Block) -> Option<CodeDef> {
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
}

/// FL0064: `name` (after `unless`, or in a veto set) names no declared shared veto. The help
/// suggests the nearest declared one; after `unless`, writing the matcher inline is the other way.
pub(super) fn undeclared_veto(
    file: &Arc<SourceFile>,
    name: &ast::Name,
    declared: &BTreeMap<String, (&Arc<SourceFile>, &ast::VetoDecl)>,
    after_unless: bool,
) -> Diagnostic {
    let closest = crate::suggest::closest(&name.value, declared.keys().map(String::as_str));
    let help = match (closest, after_unless) {
        (Some(best), _) => format!(
            "did you mean `{best}`? otherwise declare it with `veto {} regex r\"…\"`",
            name.value
        ),
        (None, true) => format!(
            "declare it with `veto {} regex r\"…\"`, or write the matcher inline: `unless regex r\"…\"`",
            name.value
        ),
        (None, false) => format!("declare it with `veto {} regex r\"…\"`", name.value),
    };
    Diagnostic::new(
        Code::UndeclaredVeto,
        format!("no shared veto is named `{}`", name.value),
    )
    .primary(file, name.span, "undeclared shared veto")
    .help(help)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    pub(super) fn versions_end_in_a_positive_version_number() {
        assert!(version_is_valid("provider-errors.v1"));
        assert!(version_is_valid("provider-errors.v12"));
        assert!(!version_is_valid("provider-errors"));
        assert!(!version_is_valid("provider-errors.v0"));
        assert!(!version_is_valid("Provider.v1"));
    }
}
