//! Synthetic catalogues of any size, for benchmarks and scale tests: providers with ranked
//! rule lists, each rule a distinct signature with its example and counterexample, and the
//! phase fallback. They check clean by construction.

use std::fmt::Write as _;

/// Providers the rules are spread over.
pub const PROVIDERS: usize = 10;
/// Codes the rules cycle through.
pub const CODES: usize = 5;

/// The text of one rule of a synthetic catalogue; `variant` changes its signature, as an edit
/// would.
pub fn synthetic_rule(index: usize, variant: usize) -> String {
    let provider = index % PROVIDERS;
    let code = index % CODES;
    let rank = index / PROVIDERS;
    let signature = if variant == 0 {
        format!("sig{index}")
    } else {
        format!("sig{index}v{variant}")
    };
    format!(
        "rule synthetic.p{provider}.r{index}.v1 {{\n    code code_{code}\n    confidence high\n    tier provider\n    rank {rank}\n    when provider_id = \"p{provider}\"\n    match regex r\"(?i)\\b{signature}\\s+(?:failed|error)\\b\"\n    example \"{signature} failed\"\n    counterexample \"the {signature} step succeeded\"\n}}\n"
    )
}

/// A catalogue of `rules` rules in one file, with rule `edited` changed to `variant`.
pub fn synthetic_catalogue(rules: usize, edited: Option<(usize, usize)>) -> String {
    let mut text = String::from(
        "catalogue \"synthetic\" version \"synthetic.v1\"\n\ntiers [provider, fallback]\n\n",
    );
    text.push_str(&declarations());
    text.push_str("\ncode unknown {\n    class unclassified\n    flags []\n    scope session\n}\n\nrule fallback.any {\n    code unknown\n    confidence low\n    tier fallback\n}\n");
    for index in 0..rules {
        let variant = match edited {
            Some((rule, variant)) if rule == index => variant,
            _ => 0,
        };
        text.push('\n');
        text.push_str(&synthetic_rule(index, variant));
    }
    text
}

/// The same catalogue as [`synthetic_catalogue`], spread over files as a real catalogue is: a
/// root `catalogue.rules` that includes one file per provider. Returns (relative path, text).
pub fn synthetic_files(rules: usize, edited: Option<(usize, usize)>) -> Vec<(String, String)> {
    let whole = synthetic_catalogue(0, None);
    let mut root = whole;
    let mut files = Vec::new();
    for provider in 0..PROVIDERS {
        let _ = writeln!(root, "\ninclude \"p{provider}.rules\"");
        let mut text = String::new();
        for index in (provider..rules).step_by(PROVIDERS) {
            let variant = match edited {
                Some((rule, variant)) if rule == index => variant,
                _ => 0,
            };
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&synthetic_rule(index, variant));
        }
        files.push((format!("p{provider}.rules"), text));
    }
    files.insert(0, ("catalogue.rules".to_owned(), root));
    files
}

/// How many pattern shapes [`realistic_rule`] cycles through.
pub const SHAPES: usize = 8;

/// A pronounceable made-up word, distinct for every `n` (three syllables in base 70, then the
/// rest of `n` as a fourth): the rare, rule-specific literal a real signature carries
/// (`insufficient_quota`, `RetriableError`), so ordinary prose never contains it.
pub fn made_up_word(n: usize) -> String {
    const CONSONANTS: &[u8] = b"bdfgklmnprstvz";
    const VOWELS: &[u8] = b"aeiou";
    let syllables = CONSONANTS.len() * VOWELS.len();
    let mut word = String::new();
    let mut rest = n;
    for position in 0..4 {
        if position == 3 && rest == 0 {
            break;
        }
        let syllable = rest % syllables;
        rest /= syllables;
        let consonant = CONSONANTS.get(syllable / VOWELS.len()).copied();
        let vowel = VOWELS.get(syllable % VOWELS.len()).copied();
        word.extend(consonant.into_iter().chain(vowel).map(char::from));
    }
    word
}

/// The text of rule `index` of a realistic synthetic catalogue: one of [`SHAPES`] pattern shapes
/// taken from the repository catalogue, cycled by index, each built around made-up words unique
/// to the rule:
///
/// 0. a case-insensitive phrase with `\s+` between words, and a veto for its test-report form;
/// 1. a phrase whose last word is an alternation (`failed|error|timed\s+out|refused`);
/// 2. a bounded gap on one line, `\bA\b[^\n]{0,64}\bB\s+(?:exceeded|exhausted)\b` (the shape
///    that dominates compile cost);
/// 3. a JSON or Python-dict envelope, `["'](?:code|type)["']\s*:\s*["']a_b["']`;
/// 4. a line-anchored `(?im)^\s*(?:error|fatal):\s*A\s+B\b`;
/// 5. an HTTP status, then a bounded gap `[^\n]{0,40}` and a word;
/// 6. a `contains … ignore_case` literal;
/// 7. a union of three alternatives.
///
/// One rule in four is guarded by its provider (tier `provider`), the others apply to every
/// agent (tier `neutral`), as in the repository catalogue; every rule has its own rank,
/// `rank_base + index`.
pub fn realistic_rule(index: usize, rank_base: usize) -> String {
    let word = |k: usize| made_up_word(index * 3 + k);
    let (a, b, c) = (word(0), word(1), word(2));
    let (tier, guard) = if index.is_multiple_of(4) {
        (
            "provider",
            format!("    when provider_id = \"p{}\"\n", index % PROVIDERS),
        )
    } else {
        ("neutral", String::new())
    };
    let code = index % CODES;
    let body = match index % SHAPES {
        0 => format!(
            "    match regex r\"(?i)\\b{a}\\s+{b}\\s+(?:failed|error)\\b\"\n    unless regex r\"(?i)\\b{a}\\s+{b}\\s+failed\\s+tests?\\b\"\n    example \"{a} {b} failed: connection reset by peer\"\n    counterexample \"fixed the {a} {b} failed tests in CI\"\n"
        ),
        1 => format!(
            "    match regex r\"(?i)\\b{a}\\s+{b}\\s+(?:failed|error|timed\\s+out|refused)\\b\"\n    example \"upstream {a} {b} timed out after 30s\"\n    counterexample \"the {a} {b} step succeeded\"\n"
        ),
        2 => format!(
            "    match regex r\"(?i)\\b{a}\\b[^\\n]{{0,64}}\\b{b}\\s+(?:exceeded|exhausted)\\b\"\n    example \"{a} request for org-123: {b} exceeded, retry later\"\n    counterexample \"{b} exceeded before {a} started\"\n"
        ),
        3 => format!(
            "    match regex r#\"[\"'](?:code|type)[\"']\\s*:\\s*[\"']{a}_{b}[\"']\"#\n    example \"Error code: 429 - {{'error': {{'message': 'try again', 'type': '{a}_{b}', 'code': None}}}}\"\n    counterexample \"the {a}_{b} code is documented in the API reference\"\n"
        ),
        4 => format!(
            "    match regex r\"(?im)^\\s*(?:error|fatal):\\s*{a}\\s+{b}\\b\"\n    example \"Error: {a} {b} while streaming the response\"\n    counterexample \"we saw {a} {b} in the logs, no error\"\n"
        ),
        5 => format!(
            "    match regex r\"(?i)\\b(?:status|code)[\\s:=]+(?:429|502|503|529)\\b[^\\n]{{0,40}}\\b{a}\\b\"\n    example \"HTTP status 503 from upstream: {a}\"\n    counterexample \"{a} returned status 200\"\n"
        ),
        6 => format!(
            "    match contains \"{a} {b} unavailable\" ignore_case\n    example \"the {a} {b} unavailable, please retry\"\n    counterexample \"{a} {b} is available again\"\n"
        ),
        _ => format!(
            "    match regex r\"(?i)\\b{a}\\s*(?:unavailable|overloaded)\\b|\\b{b}_{c}\\b|\\bno\\s+{c}\\s+available\\b\"\n    example \"request failed: {b}_{c}\"\n    counterexample \"{c} and {b} are both available\"\n"
        ),
    };
    format!(
        "rule realistic.s{shape}.r{index}.v1 {{\n    code code_{code}\n    confidence high\n    tier {tier}\n    rank {rank}\n{guard}{body}}}\n",
        shape = index % SHAPES,
        rank = rank_base + index
    )
}

/// A realistic synthetic catalogue of `rules` rules ([`realistic_rule`]), spread over one file
/// per provider under a root `catalogue.rules`. Returns (relative path, text).
pub fn realistic_files(rules: usize) -> Vec<(String, String)> {
    let mut root = String::from(
        "catalogue \"realistic\" version \"realistic.v1\"\n\ntiers [provider, neutral, fallback]\n\n",
    );
    root.push_str(&declarations());
    root.push_str("\ncode unknown {\n    class unclassified\n    flags []\n    scope session\n}\n\nrule fallback.any {\n    code unknown\n    confidence low\n    tier fallback\n}\n");
    let mut files = Vec::new();
    for provider in 0..PROVIDERS {
        let _ = writeln!(root, "\ninclude \"p{provider}.rules\"");
        let mut text = String::new();
        for index in (provider..rules).step_by(PROVIDERS) {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&realistic_rule(index, 0));
        }
        files.push((format!("p{provider}.rules"), text));
    }
    files.insert(0, ("catalogue.rules".to_owned(), root));
    files
}

/// The providers and codes synthetic and realistic rules name.
fn declarations() -> String {
    let mut text = String::new();
    for provider in 0..PROVIDERS {
        let _ = writeln!(text, "provider \"p{provider}\"");
    }
    for code in 0..CODES {
        let _ = write!(
            text,
            "\ncode code_{code} {{\n    class transient\n    flags [auto_retryable, fallback_allowed]\n    scope provider\n}}\n"
        );
    }
    text
}

/// `rules` realistic rules ([`realistic_rule`]) as one file to include in another catalogue
/// (whose tiers include `provider` and `neutral`), with the providers and codes they name: how
/// a real catalogue grows. Ranks start at `rank_base`, after the host catalogue's own.
pub fn realistic_extension(rules: usize, rank_base: usize) -> String {
    let mut text = declarations();
    for index in 0..rules {
        text.push('\n');
        text.push_str(&realistic_rule(index, rank_base));
    }
    text
}
