//! The documentation is true: every ```rules block of `docs/language.md` and `docs/policy.md`
//! checks clean (with the page's prelude) and is canonically formatted; and every acceptance
//! criterion (`AC .N`) and design section (`§X.N`) cited anywhere in the repository is defined
//! in `docs/requirements.md`, which defines AC .1–.29 once each.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "integration tests report failure by panicking"
)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use faultline_dsl::{MemorySources, SourceFile, format, load};
use regex::Regex;

struct Block {
    info: String,
    text: String,
    line: usize,
}

fn rules_blocks(markdown: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut current: Option<Block> = None;
    for (index, line) in markdown.lines().enumerate() {
        match (&mut current, line.strip_prefix("```")) {
            (None, Some(info)) if info.starts_with("rules") => {
                current = Some(Block {
                    info: info.to_owned(),
                    text: String::new(),
                    line: index + 1,
                });
            }
            (Some(_), Some("")) => blocks.extend(current.take()),
            (Some(block), _) => {
                block.text.push_str(line);
                block.text.push('\n');
            }
            _ => {}
        }
    }
    blocks
}

#[test]
fn every_language_example_checks_clean_and_is_formatted() {
    check_examples("docs/language.md", 13);
}

#[test]
fn every_policy_example_checks_clean_and_is_formatted() {
    check_examples("docs/policy.md", 1);
}

/// Every ```rules block of `page` is canonically formatted and checks clean; a plain `rules`
/// block is checked after the page's `rules,prelude` block.
fn check_examples(page: &str, at_least: usize) {
    let markdown = std::fs::read_to_string(common::root().join(page)).unwrap();
    let blocks = rules_blocks(&markdown);
    let prelude = blocks
        .iter()
        .find(|b| b.info == "rules,prelude")
        .map(|b| b.text.clone());
    assert!(
        blocks.len() >= at_least,
        "{page}: only {} examples found",
        blocks.len()
    );
    for block in &blocks {
        let at = format!("{page}:{}", block.line);
        let formatted = format(&SourceFile::new(at.clone(), block.text.clone())).unwrap();
        assert_eq!(
            formatted, block.text,
            "{at}: the example is not canonically formatted"
        );
        let text = match block.info.as_str() {
            "rules,prelude" | "rules,standalone" => block.text.clone(),
            "rules" => format!(
                "{}\n{}",
                prelude.as_deref().expect("the page has a prelude"),
                block.text
            ),
            other => panic!("{at}: unknown block kind `{other}`"),
        };
        let mut sources = MemorySources::new();
        sources.insert("example.rules", text);
        let (loaded, load_diagnostics) = load(Path::new("example.rules"), &sources).unwrap();
        let checked = faultline_compiler::check(&loaded);
        let problems: Vec<String> = load_diagnostics
            .iter()
            .chain(&checked.diagnostics)
            .map(|d| format!("{}: {}", d.code(), d.message()))
            .collect();
        assert!(problems.is_empty(), "{at}: {problems:#?}");
    }
}

/// The requirements document every citation points into.
const REQUIREMENTS: &str = "docs/requirements.md";

/// The acceptance criteria the requirements restate.
const CRITERIA: std::ops::RangeInclusive<u32> = 1..=29;

/// Every `.rs`, `.md` and `.rules` file of the repository (build output and git data left out),
/// as `(path relative to the root, text)`, sorted by path.
fn citing_files() -> Vec<(String, String)> {
    let root = common::root();
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(directory) = pending.pop() {
        for entry in std::fs::read_dir(&directory).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            // `file_type` does not follow symbolic links, so a link can never loop the walk.
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                if name != "target" && name != ".git" {
                    pending.push(path);
                }
            } else if kind.is_file()
                && matches!(
                    path.extension().and_then(|e| e.to_str()),
                    Some("rs" | "md" | "rules")
                )
            {
                let relative = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                found.push((relative, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    found.sort();
    found
}

/// The 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset].matches('\n').count() + 1
}

/// What a citation names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Name {
    /// `AC .N`.
    Criterion(u32),
    /// `§X.N`, or a whole part such as `§D` (no number).
    Section(char, Option<u32>),
}

impl std::fmt::Display for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Name::Criterion(n) => write!(f, "AC .{n}"),
            Name::Section(part, Some(n)) => write!(f, "§{part}.{n}"),
            Name::Section(part, None) => write!(f, "§{part}"),
        }
    }
}

/// One citation found in a repository file.
struct Citation {
    /// `path:line`.
    at: String,
    /// The citation as written.
    text: String,
    /// What it names, or why it names nothing sensible.
    names: Result<Vec<Name>, String>,
}

/// Every range `first..=last`, or an error for a backwards one.
fn span(first: u32, last: u32) -> Result<std::ops::RangeInclusive<u32>, String> {
    if first <= last {
        Ok(first..=last)
    } else {
        Err(format!("the range runs backwards ({first} > {last})"))
    }
}

/// Acceptance-criterion citations: `AC .12`, `AC .9–.11, .25`, `acceptance criteria (.2, .8,`
/// continued on the next comment line, and test names such as `fn ac_12_ac_14_…`. A range names
/// every criterion in it.
fn criterion_citations(file: &str, text: &str) -> Vec<Citation> {
    let item = r"\.\d+(?:\s*[–-]\s*\.?\d+)?";
    let list = Regex::new(&format!(
        r"\b(?:AC|[Aa]cceptance criteri(?:a|on)) \(?({item}(?:,\s*(?://[/!]?\s*)?{item})*)"
    ))
    .unwrap();
    let one = Regex::new(r"\.(\d+)(?:\s*[–-]\s*\.?(\d+))?").unwrap();
    let test_name = Regex::new(r"\bfn ((?:ac_\d+_)+)").unwrap();
    let number = Regex::new(r"\d+").unwrap();
    let mut citations = Vec::new();
    for found in list.captures_iter(text) {
        let whole = found.get(0).unwrap();
        let names = one
            .captures_iter(&found[1])
            .map(|item| {
                let first: u32 = item[1].parse().unwrap();
                let last = item.get(2).map_or(first, |m| m.as_str().parse().unwrap());
                span(first, last)
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|ranges| ranges.into_iter().flatten().map(Name::Criterion).collect());
        citations.push(Citation {
            at: format!("{file}:{}", line_of(text, whole.start())),
            text: whole.as_str().to_owned(),
            names,
        });
    }
    for found in test_name.captures_iter(text) {
        let whole = found.get(0).unwrap();
        let names = number
            .find_iter(&found[1])
            .map(|n| Name::Criterion(n.as_str().parse().unwrap()))
            .collect();
        citations.push(Citation {
            at: format!("{file}:{}", line_of(text, whole.start())),
            text: whole.as_str().to_owned(),
            names: Ok(names),
        });
    }
    citations
}

/// Design-section citations: `§D.5`, `§D`, `§D.1–§D.5`, `§D.1–D.10`, `§D.1–10`, and
/// `reference G.16`. A range within one part names every section in it; a range across parts
/// names its two ends.
fn section_citations(file: &str, text: &str) -> Vec<Citation> {
    let pattern = Regex::new(
        r"§([A-Z])(?:\.(\d+)(?:\s*[–-]\s*§?(?:([A-Z])\.)?(\d+))?)?|\breference ([A-Z])\.(\d+)",
    )
    .unwrap();
    let letter = |m: regex::Match<'_>| m.as_str().chars().next().unwrap();
    let mut citations = Vec::new();
    for found in pattern.captures_iter(text) {
        let whole = found.get(0).unwrap();
        // `§X.N` in prose is a placeholder, not a citation of part X.
        let rest = &text.as_bytes()[whole.end()..];
        if found.get(2).is_none()
            && found.get(5).is_none()
            && rest.first() == Some(&b'.')
            && rest.get(1).is_some_and(u8::is_ascii_alphabetic)
        {
            continue;
        }
        let names = if let Some(part) = found.get(5) {
            Ok(vec![Name::Section(
                letter(part),
                Some(found[6].parse().unwrap()),
            )])
        } else {
            let part = letter(found.get(1).unwrap());
            match (found.get(2), found.get(4)) {
                (None, _) => Ok(vec![Name::Section(part, None)]),
                (Some(first), None) => Ok(vec![Name::Section(
                    part,
                    Some(first.as_str().parse().unwrap()),
                )]),
                (Some(first), Some(last)) => {
                    let first: u32 = first.as_str().parse().unwrap();
                    let last: u32 = last.as_str().parse().unwrap();
                    match found.get(3).map(letter) {
                        Some(other) if other != part => Ok(vec![
                            Name::Section(part, Some(first)),
                            Name::Section(other, Some(last)),
                        ]),
                        _ => span(first, last)
                            .map(|r| r.map(|n| Name::Section(part, Some(n))).collect()),
                    }
                }
            }
        };
        citations.push(Citation {
            at: format!("{file}:{}", line_of(text, whole.start())),
            text: whole.as_str().to_owned(),
            names,
        });
    }
    citations
}

/// What `docs/requirements.md` defines, read off its anchored headings
/// (`### <a id="ac-12"></a>AC .12 — …`, `#### <a id="sec-d-5"></a>§D.5 — …`).
struct Requirements {
    text: String,
    /// How many headings define each criterion and each design section or part.
    defined: BTreeMap<Name, usize>,
    /// How many times each explicit anchor id occurs.
    ids: BTreeMap<String, usize>,
    /// Headings whose anchor does not match their label.
    problems: Vec<String>,
}

impl Requirements {
    fn read() -> Requirements {
        let text = std::fs::read_to_string(common::root().join(REQUIREMENTS)).unwrap();
        let heading = Regex::new(r#"(?m)^#{2,6} <a id="([^"]+)"></a>(.*)$"#).unwrap();
        let criterion = Regex::new(r"^AC \.(\d+) — \S").unwrap();
        let section = Regex::new(r"^§([A-Z])(?:\.(\d+))? — \S").unwrap();
        let any_id = Regex::new(r#"\bid="([^"]+)""#).unwrap();
        let mut defined = BTreeMap::new();
        let mut problems = Vec::new();
        for found in heading.captures_iter(&text) {
            let (id, label) = (&found[1], &found[2]);
            let at = format!(
                "{REQUIREMENTS}:{}",
                line_of(&text, found.get(0).unwrap().start())
            );
            let (key, expected) = if let Some(c) = criterion.captures(label) {
                let n: u32 = c[1].parse().unwrap();
                (Name::Criterion(n), format!("ac-{n}"))
            } else if let Some(s) = section.captures(label) {
                let part = s[1].chars().next().unwrap();
                let n: Option<u32> = s.get(2).map(|m| m.as_str().parse().unwrap());
                let lower = part.to_ascii_lowercase();
                let expected = n.map_or(format!("sec-{lower}"), |n| format!("sec-{lower}-{n}"));
                (Name::Section(part, n), expected)
            } else {
                problems.push(format!(
                    "{at}: the anchored heading `{label}` is neither `AC .N — …` nor `§X.N — …`"
                ));
                continue;
            };
            if id != expected {
                problems.push(format!(
                    "{at}: `{label}` has the anchor `{id}`; it must be `{expected}`"
                ));
            }
            *defined.entry(key).or_insert(0) += 1;
        }
        let mut ids = BTreeMap::new();
        for found in any_id.captures_iter(&text) {
            *ids.entry(found[1].to_owned()).or_insert(0) += 1;
        }
        Requirements {
            text,
            defined,
            ids,
            problems,
        }
    }

    /// The problems of every citation in the repository that names something undefined here.
    fn undefined(&self, citations: impl IntoIterator<Item = Citation>, what: &str) -> Vec<String> {
        let mut problems = Vec::new();
        for citation in citations {
            match &citation.names {
                Err(why) => problems.push(format!("{}: `{}`: {why}", citation.at, citation.text)),
                Ok(names) => {
                    for name in names {
                        if !self.defined.contains_key(name) {
                            problems.push(format!(
                                "{}: `{}` cites {name}, which {REQUIREMENTS} does not define as \
                                 {what} (add it there, or correct the citation)",
                                citation.at, citation.text
                            ));
                        }
                    }
                }
            }
        }
        problems
    }
}

#[test]
fn every_cited_acceptance_criterion_is_defined() {
    let requirements = Requirements::read();
    let citations: Vec<Citation> = citing_files()
        .iter()
        .flat_map(|(file, text)| criterion_citations(file, text))
        .collect();
    // The scan must find the repository's citations, or this test would pass vacuously.
    assert!(
        citations.len() >= 40,
        "only {} criterion citations found",
        citations.len()
    );
    let problems = requirements.undefined(citations, "an acceptance criterion");
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn every_cited_design_section_is_defined() {
    let requirements = Requirements::read();
    let citations: Vec<Citation> = citing_files()
        .iter()
        .flat_map(|(file, text)| section_citations(file, text))
        .collect();
    assert!(
        citations.len() >= 40,
        "only {} design-section citations found",
        citations.len()
    );
    let problems = requirements.undefined(citations, "a design section");
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn the_requirements_define_each_criterion_once() {
    let requirements = Requirements::read();
    let mut problems = requirements.problems.clone();
    for n in CRITERIA {
        let headings = requirements.defined.get(&Name::Criterion(n)).copied();
        if headings != Some(1) {
            problems.push(format!(
                "AC .{n} is defined by {} headings; it must be exactly one",
                headings.unwrap_or(0)
            ));
        }
    }
    for (name, &count) in &requirements.defined {
        match name {
            Name::Criterion(n) if !CRITERIA.contains(n) => problems.push(format!(
                "{name} is defined, but the requirements have AC .1–.29 only"
            )),
            Name::Section(..) if count != 1 => problems.push(format!(
                "{name} is defined by {count} headings; it must be exactly one"
            )),
            _ => {}
        }
    }
    for (id, count) in &requirements.ids {
        if *count != 1 {
            problems.push(format!("the anchor `{id}` occurs {count} times"));
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// The reference system is named in one sentence only (where the criteria come from); the
/// README defines "the reference system" for everything else.
#[test]
fn the_requirements_name_the_reference_system_once() {
    let requirements = Requirements::read();
    let named = requirements.text.to_lowercase().matches("kandev").count();
    assert_eq!(
        named, 1,
        "{REQUIREMENTS} names the reference system {named} times; once, in the sentence saying \
         where the criteria come from, is all it may"
    );
}

/// Every link of the requirements resolves: `#…` to one of its anchors, a relative link to a
/// file, and every repository path it names in backquotes exists.
#[test]
fn every_link_and_path_in_the_requirements_resolves() {
    let requirements = Requirements::read();
    let root = common::root();
    let link = Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    let path = Regex::new(
        r"`((?:acp|benches|catalogue|compiler|docs|dsl|examples|fixtures|fuzz|recovery|replay|runtime|src|testkit|tests)/[A-Za-z0-9_./-]*)`",
    )
    .unwrap();
    let mut problems = Vec::new();
    let mut targets = BTreeSet::new();
    for found in link.captures_iter(&requirements.text) {
        targets.insert((found[1].to_owned(), true));
    }
    for found in path.captures_iter(&requirements.text) {
        targets.insert((found[1].to_owned(), false));
    }
    for (target, is_link) in targets {
        if let Some(anchor) = target.strip_prefix('#') {
            if !requirements.ids.contains_key(anchor) {
                problems.push(format!("the link `{target}` names no anchor of the page"));
            }
        } else if target.starts_with("http://") || target.starts_with("https://") {
            continue;
        } else {
            let file = target.split('#').next().unwrap_or_default();
            let resolved = if is_link {
                root.join("docs").join(file)
            } else {
                root.join(file)
            };
            if !resolved.exists() {
                problems.push(format!("`{target}` does not exist in the repository"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{REQUIREMENTS}:\n{}",
        problems.join("\n")
    );
}
