//! The pest front end. Pest's `Parser`, `Rule` and pairs stay in this module: the rest of the
//! crate sees only the syntax tree and diagnostics.
//!
//! After a syntax error the file is re-parsed item by item (an item starts at a line beginning
//! with a top-level keyword or a doc comment), so one run reports the syntax error of every
//! broken item and still returns every item that parses.

use std::sync::Arc;

use pest::Parser as _;
use pest::iterators::Pair;

use crate::ast::*;
use crate::codes::Code;
use crate::diagnostic::Diagnostic;
use crate::source::{SourceFile, Span};

#[derive(pest_derive::Parser)]
#[grammar = "grammar.pest"]
struct RulesParser;

/// The keywords that start a top-level item.
const ITEM_KEYWORDS: &[&str] = &[
    "catalogue",
    "include",
    "tiers",
    "provider",
    "code",
    "rule",
    "policy",
    "veto",
];

/// Parses one file. Always returns a tree (of the items that parsed) and the syntax
/// diagnostics found; an empty diagnostic list means the whole file parsed.
pub fn parse(file: &Arc<SourceFile>) -> (SyntaxFile, Vec<Diagnostic>) {
    let mut builder = Builder {
        file,
        offset: 0,
        diagnostics: Vec::new(),
        comments: Vec::new(),
    };
    match RulesParser::parse(Rule::file, file.text()) {
        Ok(mut pairs) => {
            let items = pairs
                .next()
                .map(|pair| builder.items(pair))
                .unwrap_or_default();
            let comments = std::mem::take(&mut builder.comments);
            (SyntaxFile { items, comments }, builder.diagnostics)
        }
        Err(whole_file_error) => {
            let mut items = Vec::new();
            let mut syntax_errors = 0;
            for (start, end) in item_chunks(file.text()) {
                let Some(chunk) = file.text().get(start..end) else {
                    continue;
                };
                builder.offset = start;
                match RulesParser::parse(Rule::file, chunk) {
                    Ok(mut pairs) => {
                        if let Some(pair) = pairs.next() {
                            items.extend(builder.items(pair));
                        }
                    }
                    Err(error) => {
                        syntax_errors += 1;
                        let diagnostic = syntax_error(file, &error, start, end);
                        builder.diagnostics.push(diagnostic);
                    }
                }
            }
            if syntax_errors == 0 {
                // The chunking hid the error (it should not); report the whole-file error.
                builder.diagnostics.push(syntax_error(
                    file,
                    &whole_file_error,
                    0,
                    file.text().len(),
                ));
            }
            let comments = std::mem::take(&mut builder.comments);
            (SyntaxFile { items, comments }, builder.diagnostics)
        }
    }
}

/// Splits a file into byte ranges that each start at a top-level item.
fn item_chunks(text: &str) -> Vec<(usize, usize)> {
    let mut starts = vec![0];
    let mut line_start = 0;
    let mut doc_run_start: Option<usize> = None;
    for line in text.split_inclusive('\n') {
        let is_doc = line.starts_with("///") && !line.starts_with("////");
        let starts_item = ITEM_KEYWORDS.iter().any(|keyword| {
            line.strip_prefix(keyword).is_some_and(|rest| {
                rest.chars()
                    .next()
                    .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'))
            })
        });
        if starts_item {
            let start = doc_run_start.unwrap_or(line_start);
            if start > 0 && starts.last() != Some(&start) {
                starts.push(start);
            }
        }
        doc_run_start = if is_doc {
            doc_run_start.or(Some(line_start))
        } else {
            None
        };
        line_start += line.len();
    }
    let mut chunks = Vec::new();
    for (index, start) in starts.iter().enumerate() {
        let end = starts.get(index + 1).copied().unwrap_or(text.len());
        chunks.push((*start, end));
    }
    chunks
}

fn describe_rule(rule: Rule) -> Option<&'static str> {
    Some(match rule {
        Rule::kw_catalogue | Rule::header => "`catalogue`",
        Rule::kw_version => "`version`",
        Rule::kw_include | Rule::include => "`include`",
        Rule::kw_tiers | Rule::tiers => "`tiers`",
        Rule::kw_provider | Rule::provider => "`provider`",
        Rule::kw_code | Rule::code_block | Rule::c_code => "`code`",
        Rule::kw_rule | Rule::rule_block => "`rule`",
        Rule::kw_policy | Rule::policy_block => "`policy`",
        Rule::kw_veto | Rule::veto_decl => "`veto`",
        Rule::veto_name => "a shared veto's name",
        Rule::setting | Rule::setting_body => "a setting",
        Rule::policy_list => "a list `[…]`",
        Rule::duration => "a duration such as `5s`",
        Rule::doc => "a `///` doc comment",
        Rule::kw_class | Rule::c_class => "`class`",
        Rule::kw_flags | Rule::c_flags => "`flags`",
        Rule::kw_confidence | Rule::c_confidence => "`confidence`",
        Rule::kw_scope | Rule::c_scope => "`scope`",
        Rule::kw_tier | Rule::c_tier => "`tier`",
        Rule::kw_rank | Rule::c_rank => "`rank`",
        Rule::kw_before | Rule::c_before => "`before`",
        Rule::kw_after | Rule::c_after => "`after`",
        Rule::kw_when | Rule::c_when => "`when`",
        Rule::kw_match | Rule::c_match => "`match`",
        Rule::kw_unless | Rule::c_unless => "`unless`",
        Rule::kw_timing | Rule::c_timing => "`timing`",
        Rule::kw_remediation | Rule::c_remediation => "`remediation`",
        Rule::kw_excerpt | Rule::c_excerpt => "`excerpt`",
        Rule::kw_example | Rule::c_example => "`example`",
        Rule::kw_counterexample | Rule::c_counterexample => "`counterexample`",
        Rule::kw_present | Rule::guard_present => "`present`",
        Rule::kw_in | Rule::guard_in => "`in`",
        Rule::equals | Rule::guard_eq => "`=`",
        Rule::kw_regex | Rule::m_regex => "`regex`",
        Rule::kw_prefix | Rule::m_prefix => "`prefix`",
        Rule::kw_whole | Rule::m_whole => "`whole`",
        Rule::kw_contains | Rule::m_contains => "`contains`",
        Rule::kw_capture | Rule::capture => "`capture`",
        Rule::kw_ignore_case | Rule::ignore_case => "`ignore_case`",
        Rule::kw_suffix | Rule::suffix_bytes => "`suffix`",
        Rule::kw_bytes => "`bytes`",
        Rule::kw_group | Rule::group => "`group`",
        Rule::kw_where | Rule::group_equals => "`where`",
        Rule::kw_on | Rule::view => "`on`",
        Rule::ident => "a name",
        Rule::rule_id => "a rule id",
        Rule::int => "a number",
        Rule::string | Rule::normal_string | Rule::raw_string => "a string",
        Rule::value => "a value",
        Rule::list | Rule::timing_list => "a list `[…]`",
        Rule::timing_item => "a timing extractor",
        Rule::evidence => "a string or `{ … }`",
        Rule::evidence_object => "`{`",
        Rule::evidence_field => "a field name",
        Rule::open_brace => "`{`",
        Rule::close_brace => "`}`",
        Rule::open_bracket => "`[`",
        Rule::close_bracket => "`]`",
        Rule::comma => "`,`",
        Rule::colon => "`:`",
        Rule::double_equals => "`==`",
        Rule::range_op => "`..=`",
        Rule::EOI => "end of file",
        _ => return None,
    })
}

/// What is at `offset`: a word, a string, one character or the end of the input.
fn describe_found(text: &str, offset: usize, chunk_end: usize) -> (String, usize) {
    let rest = text.get(offset..chunk_end).unwrap_or("");
    let Some(first) = rest.chars().next() else {
        return if chunk_end >= text.len() {
            ("end of file".to_owned(), 0)
        } else {
            ("the start of the next item".to_owned(), 0)
        };
    };
    if first.is_ascii_alphanumeric() || first == '_' {
        let word: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
            .collect();
        return (format!("`{word}`"), word.len());
    }
    if first == '\n' || first == '\r' {
        return ("end of line".to_owned(), 0);
    }
    (format!("`{first}`"), first.len_utf8())
}

fn unterminated_string_at(text: &str, offset: usize) -> bool {
    let rest = text.get(offset..).unwrap_or("");
    let body = if let Some(raw) = rest.strip_prefix('r') {
        raw.trim_start_matches('#')
    } else {
        rest
    };
    let Some(after_quote) = body.strip_prefix('"') else {
        return false;
    };
    let line = after_quote.split('\n').next().unwrap_or("");
    // Only a plain `"` ends an ordinary string; an escaped one does not.
    let mut escaped = false;
    for c in line.chars() {
        if escaped {
            escaped = false;
        } else if c == '\\' && !rest.starts_with('r') {
            escaped = true;
        } else if c == '"' {
            return false;
        }
    }
    true
}

fn syntax_error(
    file: &Arc<SourceFile>,
    error: &pest::error::Error<Rule>,
    chunk_start: usize,
    chunk_end: usize,
) -> Diagnostic {
    let local = match error.location {
        pest::error::InputLocation::Pos(pos) => pos,
        pest::error::InputLocation::Span((start, _)) => start,
    };
    let offset = chunk_start + local;
    let text = file.text();
    // A string that is not closed on its line is a better story than "expected …".
    let string_start = text.get(..offset).and_then(|before| {
        let line_start = before.rfind('\n').map_or(0, |index| index + 1);
        (line_start..=offset).find(|&start| {
            text.get(start..)
                .is_some_and(|s| s.starts_with('"') || s.starts_with("r\"") || s.starts_with("r#"))
                && unterminated_string_at(text, start)
        })
    });
    if let Some(start) = string_start {
        let line_end = text
            .get(start..)
            .and_then(|s| s.find('\n'))
            .map_or(text.len(), |index| start + index);
        return Diagnostic::new(Code::SyntaxError, "unterminated string")
            .primary(file, Span::new(start, line_end), "this string is not closed on its line")
            .help("close the string with `\"` before the end of the line; strings cannot span lines (write `\\n` for a line break)");
    }
    let mut expected: Vec<&str> = match &error.variant {
        pest::error::ErrorVariant::ParsingError { positives, .. } => positives
            .iter()
            .filter_map(|rule| describe_rule(*rule))
            .collect(),
        pest::error::ErrorVariant::CustomError { .. } => Vec::new(),
    };
    expected.sort_unstable();
    expected.dedup();
    let (found, found_len) = describe_found(text, offset, chunk_end);
    let expected_text = match expected.as_slice() {
        [] => "a top-level item".to_owned(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} or {}", init.join(", "), last),
    };
    let is_clause_position = expected.contains(&"`match`") && expected.contains(&"`}`");
    let expected_text = if is_clause_position {
        "a clause or `}`".to_owned()
    } else {
        expected_text
    };
    let help = if is_clause_position {
        format!(
            "{found} does not start a clause; a block holds clauses such as `code`, `confidence`, `tier`, `when`, `match` and `example` (see docs/language.md)"
        )
    } else if expected.contains(&"`rule`") && expected.contains(&"`code`") {
        "a file holds `catalogue`, `include`, `tiers`, `provider`, `code`, `rule`, `veto` and `policy` items (see docs/language.md)".to_owned()
    } else {
        format!("write {expected_text} here (see docs/language.md for the syntax)")
    };
    Diagnostic::new(
        Code::SyntaxError,
        format!("expected {expected_text}, found {found}"),
    )
    .primary(
        file,
        Span::new(offset, offset + found_len),
        format!("unexpected {found}"),
    )
    .help(help)
}

struct Builder<'a> {
    file: &'a Arc<SourceFile>,
    /// Offset of the parsed text in the file (non-zero when re-parsing one item).
    offset: usize,
    diagnostics: Vec<Diagnostic>,
    comments: Vec<Comment>,
}

/// The children of a pair that carry meaning (comments are collected separately).
fn children<'i>(pair: &Pair<'i, Rule>) -> impl Iterator<Item = Pair<'i, Rule>> {
    pair.clone()
        .into_inner()
        .filter(|child| child.as_rule() != Rule::COMMENT)
}

fn effective_end(pair: &Pair<'_, Rule>) -> usize {
    match children(pair).last() {
        Some(last) => effective_end(&last),
        None => pair.as_span().end(),
    }
}

fn find<'i>(pair: &Pair<'i, Rule>, rule: Rule) -> Option<Pair<'i, Rule>> {
    children(pair).find(|child| child.as_rule() == rule)
}

impl Builder<'_> {
    /// The span of a pair without the whitespace and comments pest lets a rule swallow after its
    /// last token (an optional part that did not match still skips them).
    fn span(&self, pair: &Pair<'_, Rule>) -> Span {
        let start = pair.as_span().start();
        Span::new(self.offset + start, self.offset + effective_end(pair))
    }

    fn name(&self, pair: &Pair<'_, Rule>) -> Name {
        Spanned {
            value: pair.as_str().to_owned(),
            span: self.span(pair),
        }
    }

    fn collect_comments(&mut self, pair: &Pair<'_, Rule>) {
        for inner in pair.clone().into_inner().flatten() {
            if inner.as_rule() == Rule::COMMENT {
                let comment = Comment {
                    text: inner.as_str().trim_end().to_owned(),
                    span: self.span(&inner),
                };
                self.comments.push(comment);
            }
        }
    }

    fn items(&mut self, file_pair: Pair<'_, Rule>) -> Vec<Item> {
        self.collect_comments(&file_pair);
        let mut items = Vec::new();
        for pair in children(&file_pair) {
            let span = self.span(&pair);
            let item = match pair.as_rule() {
                Rule::header => {
                    let mut strings = children(&pair).filter(|p| p.as_rule() == Rule::string);
                    match (strings.next(), strings.next()) {
                        (Some(name), Some(version)) => Item::Header(Header {
                            span,
                            name: self.string(&name),
                            version: self.string(&version),
                        }),
                        _ => continue,
                    }
                }
                Rule::include => match find(&pair, Rule::string) {
                    Some(path) => Item::Include(Include {
                        span,
                        path: self.string(&path),
                    }),
                    None => continue,
                },
                Rule::tiers => match (find(&pair, Rule::kw_tiers), find(&pair, Rule::list)) {
                    (Some(keyword), Some(list)) => Item::Tiers(TiersDecl {
                        span,
                        keyword: self.span(&keyword),
                        tiers: self.list(&list),
                    }),
                    _ => continue,
                },
                Rule::provider => match find(&pair, Rule::string) {
                    Some(id) => Item::Provider(ProviderDecl {
                        span,
                        id: self.string(&id),
                    }),
                    None => continue,
                },
                Rule::code_block => match self.block(&pair, Rule::kw_code, Rule::ident) {
                    Some(block) => Item::Code(block),
                    None => continue,
                },
                Rule::rule_block => match self.block(&pair, Rule::kw_rule, Rule::rule_id) {
                    Some(block) => Item::Rule(block),
                    None => continue,
                },
                Rule::policy_block => match self.policy(&pair) {
                    Some(policy) => Item::Policy(policy),
                    None => continue,
                },
                Rule::veto_decl => match self.veto(&pair) {
                    Some(veto) => Item::Veto(Box::new(veto)),
                    None => continue,
                },
                _ => continue,
            };
            items.push(item);
        }
        items
    }

    fn docs(&self, pair: &Pair<'_, Rule>) -> Vec<Spanned<String>> {
        children(pair)
            .filter(|child| child.as_rule() == Rule::doc)
            .map(|doc| {
                let text = find(&doc, Rule::doc_text)
                    .map(|t| t.as_str().trim_end().to_owned())
                    .unwrap_or_default();
                Spanned {
                    value: text,
                    span: self.span(&doc),
                }
            })
            .collect()
    }

    fn veto(&mut self, pair: &Pair<'_, Rule>) -> Option<VetoDecl> {
        let body = children(pair).find(|child| {
            matches!(
                child.as_rule(),
                Rule::m_regex | Rule::m_prefix | Rule::m_whole | Rule::m_contains | Rule::veto_set
            )
        })?;
        let body = if body.as_rule() == Rule::veto_set {
            VetoBody::Set(VetoSet {
                span: self.span(&body),
                members: children(&body)
                    .filter(|child| child.as_rule() == Rule::veto_name)
                    .map(|member| self.name(&member))
                    .collect(),
            })
        } else {
            VetoBody::Matcher(Box::new(self.matcher(&body)?))
        };
        Some(VetoDecl {
            span: self.span(pair),
            docs: self.docs(pair),
            keyword: self.span(&find(pair, Rule::kw_veto)?),
            name: self.name(&find(pair, Rule::veto_name)?),
            body,
        })
    }

    fn policy(&mut self, pair: &Pair<'_, Rule>) -> Option<PolicyBlock> {
        Some(PolicyBlock {
            span: self.span(pair),
            docs: self.docs(pair),
            keyword: self.span(&find(pair, Rule::kw_policy)?),
            settings: self.settings(pair),
            close: self.span(&find(pair, Rule::close_brace)?),
        })
    }

    fn settings(&mut self, pair: &Pair<'_, Rule>) -> Vec<Setting> {
        children(pair)
            .filter(|child| child.as_rule() == Rule::setting)
            .filter_map(|setting| self.setting(&setting))
            .collect()
    }

    fn setting(&mut self, pair: &Pair<'_, Rule>) -> Option<Setting> {
        let name = self.name(&find(pair, Rule::ident)?);
        let mut value = None;
        let mut body = None;
        for child in children(pair).skip(1) {
            match child.as_rule() {
                Rule::setting_body => {
                    body = Some(SettingBody {
                        span: self.span(&child),
                        settings: self.settings(&child),
                    });
                }
                Rule::comma => {}
                _ => value = self.setting_value(&child),
            }
        }
        // The span ends at the value or body, not at a trailing comma.
        let end = body
            .as_ref()
            .map(|body| body.span.end)
            .or(value.as_ref().map(|value: &SettingValue| value.span().end))
            .unwrap_or(name.span.end);
        Some(Setting {
            span: Span::new(name.span.start, end),
            name,
            value,
            body,
        })
    }

    fn setting_value(&mut self, pair: &Pair<'_, Rule>) -> Option<SettingValue> {
        Some(match pair.as_rule() {
            Rule::string => SettingValue::Value(Value::Str(self.string(pair))),
            Rule::int => SettingValue::Value(Value::Int(self.int(pair))),
            Rule::ident => SettingValue::Value(Value::Ident(self.name(pair))),
            Rule::duration => SettingValue::Duration(self.duration(pair)),
            Rule::policy_list => SettingValue::List {
                span: self.span(pair),
                items: children(pair)
                    .filter(|item| {
                        !matches!(
                            item.as_rule(),
                            Rule::open_bracket | Rule::close_bracket | Rule::comma
                        )
                    })
                    .filter_map(|item| self.setting_value(&item))
                    .collect(),
            },
            _ => return None,
        })
    }

    fn duration(&mut self, pair: &Pair<'_, Rule>) -> DurationLit {
        let span = self.span(pair);
        let source = pair.as_str().to_owned();
        let (digits, unit) = source.split_at(source.len().saturating_sub(1));
        let factor: u64 = match unit {
            "m" => 60,
            "h" => 3600,
            "d" => 86_400,
            _ => 1,
        };
        let seconds = digits
            .parse::<u64>()
            .ok()
            .and_then(|count| count.checked_mul(factor));
        if seconds.is_none() {
            self.diagnostics.push(
                Diagnostic::new(
                    Code::IntegerOutOfRange,
                    format!("duration `{source}` is too long"),
                )
                .primary(self.file, span, "does not fit in 64 bits of seconds")
                .help("write a shorter duration; policy limits are at most days"),
            );
        }
        DurationLit {
            seconds,
            source,
            span,
        }
    }

    fn block(
        &mut self,
        pair: &Pair<'_, Rule>,
        keyword_rule: Rule,
        name_rule: Rule,
    ) -> Option<Block> {
        let keyword = self.span(&find(pair, keyword_rule)?);
        let name = self.name(&find(pair, name_rule)?);
        let close = self.span(&find(pair, Rule::close_brace)?);
        let docs = children(pair)
            .filter(|child| child.as_rule() == Rule::doc)
            .map(|doc| {
                let text = find(&doc, Rule::doc_text)
                    .map(|t| t.as_str().trim_end().to_owned())
                    .unwrap_or_default();
                Spanned {
                    value: text,
                    span: self.span(&doc),
                }
            })
            .collect();
        let clauses = children(pair)
            .filter_map(|child| self.clause(&child))
            .collect();
        Some(Block {
            span: self.span(pair),
            docs,
            keyword,
            name,
            clauses,
            close,
        })
    }

    fn clause(&mut self, pair: &Pair<'_, Rule>) -> Option<Clause> {
        let span = self.span(pair);
        let mut parts = children(pair);
        let keyword = self.span(&parts.next()?);
        let arg = parts.next();
        let kind = match pair.as_rule() {
            Rule::c_code => ClauseKind::Code(self.name(&arg?)),
            Rule::c_class => ClauseKind::Class(self.name(&arg?)),
            Rule::c_flags => ClauseKind::Flags(self.list(&arg?)),
            Rule::c_confidence => ClauseKind::Confidence(self.name(&arg?)),
            Rule::c_scope => ClauseKind::Scope(self.name(&arg?)),
            Rule::c_tier => ClauseKind::Tier(self.name(&arg?)),
            Rule::c_rank => ClauseKind::Rank(self.int(&arg?)),
            Rule::c_before => ClauseKind::Before(self.name(&arg?)),
            Rule::c_after => ClauseKind::After(self.name(&arg?)),
            Rule::c_when => {
                let field = self.name(&arg?);
                let mut test_pair = parts.next()?;
                let key = if test_pair.as_rule() == Rule::string {
                    let key = self.string(&test_pair);
                    test_pair = parts.next()?;
                    Some(key)
                } else {
                    None
                };
                let test = match test_pair.as_rule() {
                    Rule::guard_present => GuardTest::Present(self.span(&test_pair)),
                    Rule::guard_in => GuardTest::In(self.list(&find(&test_pair, Rule::list)?)),
                    Rule::guard_eq => {
                        GuardTest::Equals(self.value(&find(&test_pair, Rule::value)?)?)
                    }
                    _ => return None,
                };
                ClauseKind::When(Guard { field, key, test })
            }
            Rule::c_match => ClauseKind::Match(self.matcher(&arg?)?),
            Rule::c_unless => {
                let arg = arg?;
                if arg.as_rule() == Rule::veto_name {
                    ClauseKind::UnlessShared(self.name(&arg))
                } else {
                    ClauseKind::Unless(self.matcher(&arg)?)
                }
            }
            Rule::c_timing => ClauseKind::Timing(self.timing_list(&arg?)),
            Rule::c_remediation => {
                let arg = arg?;
                match arg.as_rule() {
                    Rule::string => ClauseKind::Remediation(Remediation::Token(self.string(&arg))),
                    Rule::capture => {
                        let pattern = self.string(&find(&arg, Rule::string)?);
                        let group = self.int(&find(&find(&arg, Rule::group)?, Rule::int)?);
                        let view = find(&arg, Rule::view).and_then(|view| self.view(&view));
                        ClauseKind::Remediation(Remediation::Capture {
                            pattern,
                            group,
                            view,
                        })
                    }
                    _ => return None,
                }
            }
            Rule::c_excerpt => ClauseKind::Excerpt(self.string(&arg?)),
            Rule::c_example => ClauseKind::Example(self.evidence(&arg?)?),
            Rule::c_counterexample => ClauseKind::Counterexample(self.evidence(&arg?)?),
            _ => return None,
        };
        Some(Clause {
            span,
            keyword,
            kind,
        })
    }

    fn view(&mut self, pair: &Pair<'_, Rule>) -> Option<View> {
        let name = self.name(&find(pair, Rule::ident)?);
        let pointer = find(pair, Rule::string).map(|pointer| self.string(&pointer));
        Some(View { name, pointer })
    }

    fn matcher(&mut self, pair: &Pair<'_, Rule>) -> Option<Matcher> {
        let span = self.span(pair);
        let view = find(pair, Rule::view).and_then(|view| self.view(&view));
        let literal = self.string(&find(pair, Rule::string)?);
        let ignore_case = find(pair, Rule::ignore_case).map(|p| self.span(&p));
        let kind = match pair.as_rule() {
            Rule::m_regex => {
                let group_equals = match find(pair, Rule::group_equals) {
                    Some(where_pair) => {
                        let group = self.int(&find(&find(&where_pair, Rule::group)?, Rule::int)?);
                        let field = self.name(&find(&where_pair, Rule::ident)?);
                        Some(GroupEquals {
                            span: self.span(&where_pair),
                            group,
                            field,
                        })
                    }
                    None => None,
                };
                MatcherKind::Regex {
                    pattern: literal,
                    group_equals,
                }
            }
            Rule::m_prefix => {
                let suffix = match find(pair, Rule::suffix_bytes) {
                    Some(bound) => {
                        let mut ints = children(&bound).filter(|p| p.as_rule() == Rule::int);
                        let (min, max) = (ints.next()?, ints.next()?);
                        Some(SuffixBytes {
                            span: self.span(&bound),
                            min: self.int(&min),
                            max: self.int(&max),
                        })
                    }
                    None => None,
                };
                MatcherKind::Prefix {
                    literal,
                    ignore_case,
                    suffix,
                }
            }
            Rule::m_whole => MatcherKind::Whole {
                literal,
                ignore_case,
            },
            Rule::m_contains => MatcherKind::Contains {
                literal,
                ignore_case,
            },
            _ => return None,
        };
        Some(Matcher { span, kind, view })
    }

    fn evidence(&mut self, pair: &Pair<'_, Rule>) -> Option<Evidence> {
        let inner = children(pair).next()?;
        match inner.as_rule() {
            Rule::string => Some(Evidence::Text(self.string(&inner))),
            Rule::evidence_object => {
                let mut fields = Vec::new();
                for field in children(&inner).filter(|p| p.as_rule() == Rule::evidence_field) {
                    let name = self.name(&find(&field, Rule::ident)?);
                    let value = self.value(&find(&field, Rule::value)?)?;
                    fields.push(EvidenceField { name, value });
                }
                Some(Evidence::Object {
                    span: self.span(&inner),
                    fields,
                })
            }
            _ => None,
        }
    }

    fn list(&mut self, pair: &Pair<'_, Rule>) -> List {
        let items = children(pair)
            .filter(|p| p.as_rule() == Rule::value)
            .filter_map(|p| self.value(&p))
            .collect();
        List {
            span: self.span(pair),
            items,
        }
    }

    fn timing_list(&mut self, pair: &Pair<'_, Rule>) -> TimingList {
        let items = children(pair)
            .filter(|p| p.as_rule() == Rule::timing_item)
            .filter_map(|item| {
                let extractor = self.value(&find(&item, Rule::value)?)?;
                let pointer = find(&item, Rule::string).map(|pointer| self.string(&pointer));
                Some(TimingItem { extractor, pointer })
            })
            .collect();
        TimingList {
            span: self.span(pair),
            items,
        }
    }

    fn value(&mut self, pair: &Pair<'_, Rule>) -> Option<Value> {
        let inner = children(pair).next()?;
        Some(match inner.as_rule() {
            Rule::string => Value::Str(self.string(&inner)),
            Rule::int => Value::Int(self.int(&inner)),
            Rule::ident => Value::Ident(self.name(&inner)),
            _ => return None,
        })
    }

    fn int(&mut self, pair: &Pair<'_, Rule>) -> IntLit {
        let span = self.span(pair);
        let value = pair.as_str().parse::<i64>().ok();
        if value.is_none() {
            self.diagnostics.push(
                Diagnostic::new(
                    Code::IntegerOutOfRange,
                    format!("number `{}` is too large", pair.as_str()),
                )
                .primary(self.file, span, "does not fit in 64 bits")
                .help("use a number between -9223372036854775808 and 9223372036854775807"),
            );
        }
        IntLit { value, span }
    }

    fn string(&mut self, pair: &Pair<'_, Rule>) -> StringLit {
        let span = self.span(pair);
        let source = pair.as_str().to_owned();
        let literal = children(pair).next();
        match literal.as_ref().map(Pair::as_rule) {
            Some(Rule::raw_string) => {
                let hashes = source
                    .get(1..)
                    .map_or(0, |rest| rest.len() - rest.trim_start_matches('#').len());
                let body_start = 2 + hashes;
                let body_end = source.len().saturating_sub(1 + hashes);
                let value = source.get(body_start..body_end).unwrap_or("").to_owned();
                let offsets = (0..=value.len())
                    .map(|index| span.start + body_start + index)
                    .collect();
                StringLit {
                    value,
                    source,
                    span,
                    offsets,
                }
            }
            _ => self.decode_normal_string(source, span),
        }
    }

    fn decode_normal_string(&mut self, source: String, span: Span) -> StringLit {
        let body = source.get(1..source.len().saturating_sub(1)).unwrap_or("");
        let mut value = String::with_capacity(body.len());
        let mut offsets = Vec::with_capacity(body.len() + 1);
        let mut chars = body.char_indices().peekable();
        while let Some((index, c)) = chars.next() {
            let at = span.start + 1 + index;
            if c != '\\' {
                for byte_index in 0..c.len_utf8() {
                    offsets.push(at + byte_index);
                }
                value.push(c);
                continue;
            }
            let Some((_, escape)) = chars.next() else {
                break;
            };
            let decoded = match escape {
                '\\' => Some('\\'),
                '"' => Some('"'),
                'n' => Some('\n'),
                'r' => Some('\r'),
                't' => Some('\t'),
                '0' => Some('\0'),
                'u' => {
                    let mut digits = String::new();
                    let mut closed = false;
                    if chars.peek().map(|(_, c)| *c) == Some('{') {
                        chars.next();
                        for (_, c) in chars.by_ref() {
                            if c == '}' {
                                closed = true;
                                break;
                            }
                            digits.push(c);
                        }
                    }
                    if closed && (1..=6).contains(&digits.len()) {
                        u32::from_str_radix(&digits, 16)
                            .ok()
                            .and_then(char::from_u32)
                    } else {
                        None
                    }
                }
                _ => None,
            };
            let escape_end = chars
                .peek()
                .map_or(span.end - 1, |(next, _)| span.start + 1 + next);
            let decoded = decoded.unwrap_or_else(|| {
                let escape_span = Span::new(at, escape_end);
                self.diagnostics.push(
                    Diagnostic::new(Code::InvalidEscape, format!("invalid escape `{}` in string", self.file.slice(escape_span)))
                        .primary(self.file, escape_span, "not a known escape")
                        .help("known escapes are `\\\\`, `\\\"`, `\\n`, `\\r`, `\\t`, `\\0` and `\\u{…}`; for a regex, write a raw string `r\"…\"` so backslashes reach the regex unchanged"),
                );
                '\u{FFFD}'
            });
            for _ in 0..decoded.len_utf8() {
                offsets.push(at);
            }
            value.push(decoded);
        }
        offsets.push(span.end.saturating_sub(1));
        StringLit {
            value,
            source,
            span,
            offsets,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_text(text: &str) -> (SyntaxFile, Vec<Diagnostic>) {
        parse(&SourceFile::new("test.rules", text))
    }

    #[test]
    fn chunks_start_at_items_and_their_doc_comments() {
        let text = "tiers [a]\n\n/// doc\n/// more\nrule x.v1 {\n}\ncode y {\n}\n";
        let chunks = item_chunks(text);
        let starts: Vec<&str> = chunks
            .iter()
            .map(|(s, e)| text[*s..*e].lines().next().unwrap())
            .collect();
        assert_eq!(starts, ["tiers [a]", "/// doc", "code y {"]);
    }

    #[test]
    fn raw_and_escaped_strings_decode_and_map_offsets() {
        let (file, diagnostics) = parse_text("provider \"a\\tb\"\ninclude r#\"x\"y\"#\n");
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        let Item::Provider(provider) = &file.items[0] else {
            panic!()
        };
        assert_eq!(provider.id.value, "a\tb");
        // `b` is the 4th byte after the opening quote in the source.
        assert_eq!(provider.id.offset_of(2), provider.id.span.start + 4);
        let Item::Include(include) = &file.items[1] else {
            panic!()
        };
        assert_eq!(include.path.value, "x\"y");
    }

    #[test]
    fn every_broken_item_reports_and_good_items_survive() {
        let text = "rule a.v1 {\n    code\n}\n\nrule b.v1 {\n    code x\n}\n\nrule c.v1 {\n    bogus y\n}\n";
        let (file, diagnostics) = parse_text(text);
        assert_eq!(diagnostics.len(), 2, "{diagnostics:?}");
        assert_eq!(file.items.len(), 1);
        assert!(diagnostics.iter().all(|d| d.code() == Code::SyntaxError));
    }

    #[test]
    fn strings_hold_any_character_but_a_line_break() {
        // Every character class the grammar spells as ranges, at its edges: controls, `!`
        // and `#` beside `"`, `[` and `]` beside `\`, and characters beyond ASCII.
        let inner = "\u{0}\u{1}\t\u{b}\u{c}\u{e} !#[]退出码🙂\u{10FFFF}";
        let (file, diagnostics) = parse_text(&format!(
            "provider r##\"{inner}\\\"#\"##\ninclude \"{inner}\\\\\\\"\"\n"
        ));
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        let Item::Provider(provider) = &file.items[0] else {
            panic!()
        };
        assert_eq!(provider.id.value, format!("{inner}\\\"#"));
        let Item::Include(include) = &file.items[1] else {
            panic!()
        };
        assert_eq!(include.path.value, format!("{inner}\\\""));
        for line_break in ["\n", "\r", "\r\n"] {
            for text in [
                format!("provider r\"a{line_break}b\"\n"),
                format!("provider \"a{line_break}b\"\n"),
                format!("provider \"a\\{line_break}b\"\n"),
            ] {
                let (_, diagnostics) = parse_text(&text);
                assert!(!diagnostics.is_empty(), "{text:?} parsed");
            }
        }
    }

    #[test]
    fn shared_vetoes_are_declared_once_and_named_by_unless() {
        let text = "/// Commit titles.\nveto commit_title regex r\"^fix: \" on raw\nrule x.v1 {\n    unless commit_title\n    unless contains \"a\"\n    unless regexes\n}\n";
        let (file, diagnostics) = parse_text(text);
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        let Item::Veto(veto) = &file.items[0] else {
            panic!("{:?}", file.items[0])
        };
        assert_eq!(veto.name.value, "commit_title");
        assert_eq!(veto.docs[0].value, " Commit titles.");
        let VetoBody::Matcher(matcher) = &veto.body else {
            panic!("{:?}", veto.body)
        };
        assert_eq!(
            &text[matcher.span.start..matcher.span.end],
            "regex r\"^fix: \" on raw"
        );
        let Item::Rule(rule) = &file.items[1] else {
            panic!()
        };
        let kinds: Vec<String> = rule
            .clauses
            .iter()
            .map(|clause| match &clause.kind {
                ClauseKind::UnlessShared(name) => format!("shared {}", name.value),
                ClauseKind::Unless(_) => "inline".to_owned(),
                other => format!("{other:?}"),
            })
            .collect();
        // A name that merely starts with a matcher keyword is a name; a keyword is not.
        assert_eq!(kinds, ["shared commit_title", "inline", "shared regexes"]);
        for keyword in ["regex", "prefix", "whole", "contains"] {
            let (_, diagnostics) = parse_text(&format!("rule x.v1 {{\n    unless {keyword}\n}}\n"));
            assert_eq!(diagnostics.len(), 1, "{keyword}: {diagnostics:?}");
            let (_, diagnostics) = parse_text(&format!("veto {keyword} contains \"a\"\n"));
            assert_eq!(diagnostics.len(), 1, "{keyword}: {diagnostics:?}");
        }
    }

    #[test]
    fn a_veto_set_names_its_members_in_order() {
        let text = "/// Prose.\nveto prose [commit_title, issue_title ,\n guide,]\n";
        let (file, diagnostics) = parse_text(text);
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        let Item::Veto(veto) = &file.items[0] else {
            panic!("{:?}", file.items[0])
        };
        assert_eq!(veto.name.value, "prose");
        let VetoBody::Set(set) = &veto.body else {
            panic!("{:?}", veto.body)
        };
        let members: Vec<&str> = set
            .members
            .iter()
            .map(|member| member.value.as_str())
            .collect();
        assert_eq!(members, ["commit_title", "issue_title", "guide"]);
        assert_eq!(
            &text[set.span.start..set.span.end],
            "[commit_title, issue_title ,\n guide,]"
        );
        // A set is not empty, and holds names, not matchers.
        for bad in ["veto prose []\n", "veto prose [contains \"a\"]\n"] {
            let (_, diagnostics) = parse_text(bad);
            assert!(!diagnostics.is_empty(), "{bad}");
        }
    }
    #[test]
    fn unterminated_string_is_named_as_such() {
        let (_, diagnostics) = parse_text("provider \"claude-acp\n");
        assert_eq!(diagnostics[0].message(), "unterminated string");
    }

    #[test]
    fn invalid_escape_is_reported_at_the_escape() {
        let (_, diagnostics) = parse_text("provider \"a\\qb\"\n");
        assert_eq!(diagnostics[0].code(), Code::InvalidEscape);
        assert_eq!(diagnostics[0].primary_label().unwrap().text(), "\\q");
    }
}
