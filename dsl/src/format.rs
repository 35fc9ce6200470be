//! The canonical formatter.
//!
//! Canonical form: one item per line or block; blocks separated by one blank line; clauses
//! indented four spaces, one per line, in a fixed order (metadata, priority, guards, matchers,
//! examples; clause order never changes meaning); lists and evidence objects on one line;
//! literals written back exactly as the author wrote them. Every comment is kept: each is
//! anchored to the item or clause it precedes or trails, and moves with it.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::ast::*;
use crate::codes::Code;
use crate::diagnostic::Diagnostic;
use crate::parser::parse;
use crate::source::{SourceFile, Span};

/// Why a file could not be formatted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The file has syntax errors; the formatter never rewrites text it cannot parse.
    #[error("the file has {} syntax error(s); fix them before formatting", .0.len())]
    Syntax(Vec<Diagnostic>),
}

/// Formats one file. Idempotent: formatting the output again gives the same text.
pub fn format(file: &Arc<SourceFile>) -> Result<String, FormatError> {
    let (syntax, diagnostics) = parse(file);
    let syntax_errors: Vec<_> = diagnostics
        .into_iter()
        .filter(|d| d.code() == Code::SyntaxError)
        .collect();
    if !syntax_errors.is_empty() {
        return Err(FormatError::Syntax(syntax_errors));
    }
    let printer = Printer {
        file,
        anchors: anchor_comments(file, &syntax),
    };
    Ok(printer.print(&syntax))
}

/// Where a comment is put back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Anchor {
    /// Before item `i`, on lines of their own.
    ItemLeading(usize),
    /// After item `i`, on its (last) line.
    ItemTrailing(usize),
    /// Between a block's doc comments and its keyword.
    BlockPreKeyword(usize),
    /// On the `rule id {` line.
    BlockHeader(usize),
    /// Before clause `c` of block `i`.
    ClauseLeading(usize, usize),
    /// After clause `c` of block `i`, on its line.
    ClauseTrailing(usize, usize),
    /// After the last clause of block `i`, before `}`.
    BlockFooter(usize),
    /// Inside the policy block `i` (put back by position: settings are never reordered).
    InPolicy(usize),
    /// After the last item.
    EndOfFile,
}

fn same_line(file: &SourceFile, a: usize, b: usize) -> bool {
    file.line_column(a).line == file.line_column(b).line
}

fn anchor_comments(file: &SourceFile, syntax: &SyntaxFile) -> BTreeMap<Anchor, Vec<Comment>> {
    let mut anchors: BTreeMap<Anchor, Vec<Comment>> = BTreeMap::new();
    for comment in &syntax.comments {
        let at = comment.span.start;
        let anchor = match syntax
            .items
            .iter()
            .position(|item| item.span().start <= at && at < item.span().end)
        {
            Some(index) => match syntax.items.get(index) {
                Some(Item::Code(block) | Item::Rule(block)) => {
                    anchor_in_block(file, index, block, at)
                }
                Some(Item::Policy(_)) => Anchor::InPolicy(index),
                _ => Anchor::ItemLeading(index),
            },
            None => match syntax.items.iter().position(|item| item.span().start > at) {
                Some(next) => {
                    let previous_end = next
                        .checked_sub(1)
                        .and_then(|p| syntax.items.get(p))
                        .map(|item| item.span().end);
                    match previous_end {
                        Some(end) if same_line(file, end, at) => Anchor::ItemTrailing(next - 1),
                        _ => Anchor::ItemLeading(next),
                    }
                }
                None => match syntax.items.last() {
                    Some(last) if same_line(file, last.span().end, at) => {
                        Anchor::ItemTrailing(syntax.items.len() - 1)
                    }
                    _ => Anchor::EndOfFile,
                },
            },
        };
        anchors.entry(anchor).or_default().push(comment.clone());
    }
    anchors
}

fn anchor_in_block(file: &SourceFile, index: usize, block: &Block, at: usize) -> Anchor {
    if at < block.keyword.start {
        return Anchor::BlockPreKeyword(index);
    }
    let first_clause_start = block
        .clauses
        .first()
        .map_or(block.close.start, |clause| clause.span.start);
    if at < first_clause_start && same_line(file, block.name.span.end, at) {
        return Anchor::BlockHeader(index);
    }
    if let Some(inside) = block
        .clauses
        .iter()
        .position(|c| c.span.start <= at && at < c.span.end)
    {
        return Anchor::ClauseLeading(index, inside);
    }
    match block
        .clauses
        .iter()
        .position(|clause| clause.span.start > at)
    {
        Some(next) => match next.checked_sub(1).and_then(|p| block.clauses.get(p)) {
            Some(previous) if same_line(file, previous.span.end, at) => {
                Anchor::ClauseTrailing(index, next - 1)
            }
            _ => Anchor::ClauseLeading(index, next),
        },
        None => match block.clauses.last() {
            Some(last) if same_line(file, last.span.end, at) => {
                Anchor::ClauseTrailing(index, block.clauses.len() - 1)
            }
            _ => Anchor::BlockFooter(index),
        },
    }
}

/// The canonical position of a clause kind inside a block.
fn clause_order(kind: &ClauseKind) -> u8 {
    match kind {
        ClauseKind::Code(_) => 0,
        ClauseKind::Class(_) => 1,
        ClauseKind::Flags(_) => 2,
        ClauseKind::Confidence(_) => 3,
        ClauseKind::Scope(_) => 4,
        ClauseKind::Remediation(Remediation::Token(_)) => 5,
        ClauseKind::Tier(_) => 6,
        ClauseKind::Rank(_) => 7,
        ClauseKind::Before(_) => 8,
        ClauseKind::After(_) => 9,
        ClauseKind::When(_) => 10,
        ClauseKind::Match(_) => 11,
        ClauseKind::Unless(_) | ClauseKind::UnlessShared(_) => 12,
        ClauseKind::Timing(_) => 13,
        ClauseKind::Remediation(Remediation::Capture { .. }) => 14,
        ClauseKind::Excerpt(_) => 15,
        ClauseKind::Example(_) => 16,
        ClauseKind::Counterexample(_) => 17,
    }
}

struct Printer<'a> {
    file: &'a SourceFile,
    anchors: BTreeMap<Anchor, Vec<Comment>>,
}

impl Printer<'_> {
    fn comments(&self, anchor: Anchor) -> &[Comment] {
        self.anchors.get(&anchor).map_or(&[], Vec::as_slice)
    }

    fn trailing(&self, anchor: Anchor) -> String {
        self.comments(anchor)
            .iter()
            .map(|comment| format!(" {}", comment.text.trim_end()))
            .collect()
    }

    fn text(&self, span: Span) -> &str {
        self.file.slice(span)
    }

    /// Whether the source has a blank line between two offsets.
    fn blank_between(&self, from: usize, to: usize) -> bool {
        from < to
            && self
                .file
                .text()
                .get(from..to)
                .is_some_and(|gap| gap.matches('\n').count() >= 2)
    }

    fn print(&self, syntax: &SyntaxFile) -> String {
        let mut out = String::new();
        // The end of the previously printed element, and whether it was a block.
        let mut previous: Option<(usize, bool)> = None;
        for (index, item) in syntax.items.iter().enumerate() {
            // A shared veto stands apart like a block: it has doc comments and is read alone.
            let is_block = matches!(
                item,
                Item::Code(_) | Item::Rule(_) | Item::Policy(_) | Item::Veto(_)
            );
            let mut first_line_of_item = true;
            for comment in self.comments(Anchor::ItemLeading(index)) {
                if let Some((end, was_block)) = previous {
                    let force = was_block || (is_block && first_line_of_item);
                    if force || self.blank_between(end, comment.span.start) {
                        out.push('\n');
                    }
                }
                out.push_str(comment.text.trim_end());
                out.push('\n');
                previous = Some((comment.span.end, false));
                first_line_of_item = false;
            }
            if let Some((end, was_block)) = previous {
                let force = was_block || (is_block && first_line_of_item);
                if force || self.blank_between(end, item.span().start) {
                    out.push('\n');
                }
            }
            self.print_item(&mut out, index, item);
            out.push_str(&self.trailing(Anchor::ItemTrailing(index)));
            out.push('\n');
            let end = self
                .comments(Anchor::ItemTrailing(index))
                .last()
                .map_or(item.span().end, |c| c.span.end);
            previous = Some((end, is_block));
        }
        for comment in self.comments(Anchor::EndOfFile) {
            if let Some((end, was_block)) = previous
                && (was_block || self.blank_between(end, comment.span.start))
            {
                out.push('\n');
            }
            out.push_str(comment.text.trim_end());
            out.push('\n');
            previous = Some((comment.span.end, false));
        }
        out
    }

    fn print_item(&self, out: &mut String, index: usize, item: &Item) {
        match item {
            Item::Header(header) => {
                out.push_str(&format!(
                    "catalogue {} version {}",
                    header.name.source, header.version.source
                ));
            }
            Item::Include(include) => out.push_str(&format!("include {}", include.path.source)),
            Item::Tiers(tiers) => out.push_str(&format!("tiers {}", self.list(&tiers.tiers))),
            Item::Provider(provider) => out.push_str(&format!("provider {}", provider.id.source)),
            Item::Code(block) => self.print_block(out, index, "code", block),
            Item::Rule(block) => self.print_block(out, index, "rule", block),
            Item::Policy(policy) => self.print_policy(out, index, policy),
            Item::Veto(veto) => {
                for doc in &veto.docs {
                    out.push_str(&format!("///{}\n", doc.value.trim_end()));
                }
                let body = match &veto.body {
                    VetoBody::Matcher(matcher) => self.matcher(matcher),
                    VetoBody::Set(set) => format!(
                        "[{}]",
                        set.members
                            .iter()
                            .map(|member| member.value.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                };
                out.push_str(&format!("veto {} {body}", veto.name.value));
            }
        }
    }

    fn print_policy(&self, out: &mut String, index: usize, policy: &PolicyBlock) {
        for doc in &policy.docs {
            out.push_str(&format!("///{}\n", doc.value.trim_end()));
        }
        let comments = self.comments(Anchor::InPolicy(index));
        for comment in comments
            .iter()
            .filter(|c| c.span.start < policy.keyword.start)
        {
            out.push_str(comment.text.trim_end());
            out.push('\n');
        }
        out.push_str("policy {");
        let body_start = policy.keyword.end;
        out.push_str(&self.header_comment(comments, body_start, &policy.settings));
        out.push('\n');
        self.print_settings(
            out,
            &policy.settings,
            1,
            comments,
            body_start,
            policy.close.start,
        );
        out.push('}');
    }

    /// The comment on the line of an opening brace, before the first setting.
    fn header_comment(&self, comments: &[Comment], open: usize, settings: &[Setting]) -> String {
        let first = settings.first().map_or(usize::MAX, |s| s.span.start);
        comments
            .iter()
            .filter(|c| {
                c.span.start >= open
                    && c.span.start < first
                    && same_line(self.file, open, c.span.start)
            })
            .map(|c| format!(" {}", c.text.trim_end()))
            .collect()
    }

    fn print_settings(
        &self,
        out: &mut String,
        settings: &[Setting],
        depth: usize,
        comments: &[Comment],
        open: usize,
        close: usize,
    ) {
        let indent = "    ".repeat(depth);
        let mut previous_end = open;
        for (position, setting) in settings.iter().enumerate() {
            for comment in comments.iter().filter(|c| {
                c.span.start >= previous_end
                    && c.span.start < setting.span.start
                    && !same_line(self.file, previous_end, c.span.start)
            }) {
                out.push_str(&format!("{indent}{}\n", comment.text.trim_end()));
            }
            out.push_str(&indent);
            out.push_str(&setting.name.value);
            if let Some(value) = &setting.value {
                out.push(' ');
                out.push_str(&self.setting_value(value));
            }
            if let Some(body) = &setting.body {
                let commented = comments
                    .iter()
                    .any(|c| body.span.start <= c.span.start && c.span.start < body.span.end);
                let nested = body.settings.iter().any(|inner| inner.body.is_some());
                let inline = self.inline_settings(&body.settings);
                if body.settings.is_empty() {
                    out.push_str(" {}");
                } else if !commented && !nested && indent.len() + inline.len() <= 92 {
                    out.push_str(&format!(" {{ {inline} }}"));
                } else {
                    out.push_str(" {");
                    out.push_str(&self.header_comment(comments, body.span.start, &body.settings));
                    out.push('\n');
                    let inner_close = body.span.end.saturating_sub(1);
                    self.print_settings(
                        out,
                        &body.settings,
                        depth + 1,
                        comments,
                        body.span.start,
                        inner_close,
                    );
                    out.push_str(&indent);
                    out.push('}');
                }
            }
            let next = settings.get(position + 1).map_or(close, |s| s.span.start);
            for comment in comments.iter().filter(|c| {
                c.span.start >= setting.span.end
                    && c.span.start < next
                    && same_line(self.file, setting.span.end, c.span.start)
            }) {
                out.push_str(&format!(" {}", comment.text.trim_end()));
            }
            out.push('\n');
            previous_end = setting.span.end;
        }
        for comment in comments.iter().filter(|c| {
            c.span.start >= previous_end
                && c.span.start < close
                && !same_line(self.file, previous_end, c.span.start)
        }) {
            out.push_str(&format!("{indent}{}\n", comment.text.trim_end()));
        }
    }

    /// Leaf settings on one line: `max 3, initial 5s`.
    fn inline_settings(&self, settings: &[Setting]) -> String {
        let parts: Vec<String> = settings
            .iter()
            .map(|setting| match &setting.value {
                Some(value) => format!("{} {}", setting.name.value, self.setting_value(value)),
                None => setting.name.value.clone(),
            })
            .collect();
        parts.join(", ")
    }

    fn setting_value(&self, value: &SettingValue) -> String {
        match value {
            SettingValue::Value(value) => self.value(value),
            SettingValue::Duration(duration) => duration.source.clone(),
            SettingValue::List { items, .. } => {
                let items: Vec<String> =
                    items.iter().map(|item| self.setting_value(item)).collect();
                format!("[{}]", items.join(", "))
            }
        }
    }

    fn print_block(&self, out: &mut String, index: usize, keyword: &str, block: &Block) {
        for doc in &block.docs {
            out.push_str(&format!("///{}\n", doc.value.trim_end()));
        }
        for comment in self.comments(Anchor::BlockPreKeyword(index)) {
            out.push_str(comment.text.trim_end());
            out.push('\n');
        }
        out.push_str(&format!(
            "{keyword} {} {{{}\n",
            block.name.value,
            self.trailing(Anchor::BlockHeader(index))
        ));
        let mut order: Vec<usize> = (0..block.clauses.len()).collect();
        order.sort_by_key(|&position| {
            block
                .clauses
                .get(position)
                .map_or(u8::MAX, |clause| clause_order(&clause.kind))
        });
        for position in order {
            let Some(clause) = block.clauses.get(position) else {
                continue;
            };
            for comment in self.comments(Anchor::ClauseLeading(index, position)) {
                out.push_str(&format!("    {}\n", comment.text.trim_end()));
            }
            out.push_str("    ");
            out.push_str(&self.clause(clause));
            out.push_str(&self.trailing(Anchor::ClauseTrailing(index, position)));
            out.push('\n');
        }
        for comment in self.comments(Anchor::BlockFooter(index)) {
            out.push_str(&format!("    {}\n", comment.text.trim_end()));
        }
        out.push('}');
    }

    fn clause(&self, clause: &Clause) -> String {
        let keyword = clause.kind.keyword();
        match &clause.kind {
            ClauseKind::Code(name)
            | ClauseKind::Class(name)
            | ClauseKind::Confidence(name)
            | ClauseKind::Scope(name)
            | ClauseKind::Tier(name)
            | ClauseKind::Before(name)
            | ClauseKind::After(name) => format!("{keyword} {}", name.value),
            ClauseKind::Rank(int) => format!("{keyword} {}", self.text(int.span)),
            ClauseKind::Flags(list) => format!("{keyword} {}", self.list(list)),
            ClauseKind::Timing(list) => {
                let items: Vec<String> = list
                    .items
                    .iter()
                    .map(|item| match &item.pointer {
                        Some(pointer) => {
                            format!("{} {}", self.value(&item.extractor), pointer.source)
                        }
                        None => self.value(&item.extractor),
                    })
                    .collect();
                format!("{keyword} [{}]", items.join(", "))
            }
            ClauseKind::When(guard) => {
                let test = match &guard.test {
                    GuardTest::Equals(value) => format!("= {}", self.value(value)),
                    GuardTest::In(list) => format!("in {}", self.list(list)),
                    GuardTest::Present(_) => "present".to_owned(),
                };
                match &guard.key {
                    Some(key) => format!("when {} {} {test}", guard.field.value, key.source),
                    None => format!("when {} {test}", guard.field.value),
                }
            }
            ClauseKind::Match(matcher) | ClauseKind::Unless(matcher) => {
                format!("{keyword} {}", self.matcher(matcher))
            }
            ClauseKind::UnlessShared(name) => format!("unless {}", name.value),
            ClauseKind::Remediation(Remediation::Token(token)) => {
                format!("remediation {}", token.source)
            }
            ClauseKind::Excerpt(text) => format!("excerpt {}", text.source),
            ClauseKind::Remediation(Remediation::Capture {
                pattern,
                group,
                view,
            }) => {
                format!(
                    "remediation capture {} group {}{}",
                    pattern.source,
                    self.text(group.span),
                    self.view(view.as_ref())
                )
            }
            ClauseKind::Example(evidence) | ClauseKind::Counterexample(evidence) => {
                format!("{keyword} {}", self.evidence(evidence))
            }
        }
    }

    fn view(&self, view: Option<&View>) -> String {
        view.map(|view| match &view.pointer {
            Some(pointer) => format!(" on {} {}", view.name.value, pointer.source),
            None => format!(" on {}", view.name.value),
        })
        .unwrap_or_default()
    }

    fn matcher(&self, matcher: &Matcher) -> String {
        let ignore_case = |flag: &Option<Span>| if flag.is_some() { " ignore_case" } else { "" };
        let body = match &matcher.kind {
            MatcherKind::Regex {
                pattern,
                group_equals,
            } => {
                let condition = group_equals
                    .as_ref()
                    .map(|g| {
                        format!(
                            " where group {} == {}",
                            self.text(g.group.span),
                            g.field.value
                        )
                    })
                    .unwrap_or_default();
                format!("regex {}{condition}", pattern.source)
            }
            MatcherKind::Prefix {
                literal,
                ignore_case: flag,
                suffix,
            } => {
                let bound = suffix
                    .as_ref()
                    .map(|s| {
                        format!(
                            " suffix {}..={} bytes",
                            self.text(s.min.span),
                            self.text(s.max.span)
                        )
                    })
                    .unwrap_or_default();
                format!("prefix {}{}{bound}", literal.source, ignore_case(flag))
            }
            MatcherKind::Whole {
                literal,
                ignore_case: flag,
            } => format!("whole {}{}", literal.source, ignore_case(flag)),
            MatcherKind::Contains {
                literal,
                ignore_case: flag,
            } => {
                format!("contains {}{}", literal.source, ignore_case(flag))
            }
        };
        format!("{body}{}", self.view(matcher.view.as_ref()))
    }

    fn evidence(&self, evidence: &Evidence) -> String {
        match evidence {
            Evidence::Text(text) => text.source.clone(),
            Evidence::Object { fields, .. } if fields.is_empty() => "{}".to_owned(),
            Evidence::Object { fields, .. } => {
                let fields: Vec<String> = fields
                    .iter()
                    .map(|field| format!("{}: {}", field.name.value, self.value(&field.value)))
                    .collect();
                format!("{{ {} }}", fields.join(", "))
            }
        }
    }

    fn list(&self, list: &List) -> String {
        let items: Vec<String> = list.items.iter().map(|value| self.value(value)).collect();
        format!("[{}]", items.join(", "))
    }

    fn value(&self, value: &Value) -> String {
        match value {
            Value::Str(string) => string.source.clone(),
            Value::Int(int) => self.text(int.span).to_owned(),
            Value::Ident(name) => name.value.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(text: &str) -> String {
        format(&SourceFile::new("t.rules", text)).unwrap()
    }

    #[test]
    fn clauses_are_reordered_with_their_comments() {
        let input = "rule a.b.v1 { // header\n  // about the example\n  example \"x\"\n  match contains \"x\"   // trailing\n  code c\n  // footer\n}\n";
        let expected = "rule a.b.v1 { // header\n    code c\n    match contains \"x\" // trailing\n    // about the example\n    example \"x\"\n    // footer\n}\n";
        assert_eq!(fmt(input), expected);
        assert_eq!(fmt(expected), expected);
    }

    #[test]
    fn blocks_are_separated_by_one_blank_line_and_simple_items_keep_grouping() {
        let input = "provider \"a\"\nprovider \"b\"\n\n\n\ninclude \"x.rules\"\ncode c { class hard }\ncode d {\n}\n// end\n";
        let expected = "provider \"a\"\nprovider \"b\"\n\ninclude \"x.rules\"\n\ncode c {\n    class hard\n}\n\ncode d {\n}\n\n// end\n";
        assert_eq!(fmt(input), expected);
        assert_eq!(fmt(expected), expected);
    }

    #[test]
    fn policies_keep_their_order_and_comments_and_inline_leaf_bodies() {
        let input = "policy { // all of it\n  class transient {\n retry {max 3,\n initial 5s}\n // why\n on_exhausted skip // trailing\n }\n ladder { steps [5s,10s], attempts 5 }\n // footer\n}\n";
        let expected = "policy { // all of it\n    class transient {\n        retry { max 3, initial 5s }\n        // why\n        on_exhausted skip // trailing\n    }\n    ladder { steps [5s, 10s], attempts 5 }\n    // footer\n}\n";
        assert_eq!(fmt(input), expected);
        assert_eq!(fmt(expected), expected);
    }

    #[test]
    fn shared_vetoes_stand_apart_with_their_docs_and_rules_name_them() {
        let input = "tiers [a]\n/// Commit titles.\nveto   commit_title regex   r\"^fix: \" on raw\nveto table contains \"|\" ignore_case\nrule x.v1 {\n  unless commit_title\n  code c\n}\n";
        let expected = "tiers [a]\n\n/// Commit titles.\nveto commit_title regex r\"^fix: \" on raw\n\nveto table contains \"|\" ignore_case\n\nrule x.v1 {\n    code c\n    unless commit_title\n}\n";
        assert_eq!(fmt(input), expected);
        assert_eq!(fmt(expected), expected);
    }

    #[test]
    fn a_veto_set_prints_its_members_on_one_line() {
        let input = "/// Prose.\nveto prose [ commit_title ,\n  table, ]\n";
        let expected = "/// Prose.\nveto prose [commit_title, table]\n";
        assert_eq!(fmt(input), expected);
        assert_eq!(fmt(expected), expected);
    }

    #[test]
    fn syntax_errors_refuse_to_format() {
        assert!(matches!(
            format(&SourceFile::new("t.rules", "rule {")),
            Err(FormatError::Syntax(_))
        ));
    }
}
