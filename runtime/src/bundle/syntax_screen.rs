//! A quick screen for the patterns' syntax at load: one pass over a pattern that says "certainly
//! valid" for the plain syntax the compiler writes, so that only the rest needs the full parse.
//!
//! Checking every pattern's syntax with `regex-syntax`'s parser was about 40% of loading the
//! repository bundle (perf: its parse allocates a syntax tree node per literal character, then
//! walks it for the nesting limit and frees it), though the compiler only ever writes patterns
//! that parse. The screen reads a strict subset of the syntax the parser accepts: literals, the
//! escapes the parser allows, Perl classes, bracketed classes (nested too) without set operations,
//! groups with flags (never `x`, which changes what a blank means), and repetitions of something
//! repeatable. Anything else, or anything it is unsure of, it leaves to the parser. So it never
//! refuses a pattern; it only lets one skip the parse, and only when the parser would accept it
//! (`certainly_valid(p)` implies that the parser accepts `p`, which the property test below
//! checks against the parser itself on generated patterns).
//!
//! The nesting limit holds too: the parser counts a level for each group, repetition,
//! alternation, concatenation and bracketed class, so at most four levels per group or class
//! plus the top level's two; the screen accepts at most [`MAX_GROUP_DEPTH`] groups and classes
//! deep together, far under the limit.

/// The deepest nesting of groups and classes the screen accepts: `4 · 40 + 2` levels stays
/// under the parser's limit of 250 (see [`super::lazy_regex`]).
const MAX_GROUP_DEPTH: usize = 40;

/// The most digits a counted repetition's bound may have here (the parser reads any `u32`).
const MAX_COUNT_DIGITS: usize = 6;

/// Whether `pattern` certainly parses; `false` means "not known": ask the parser.
pub(super) fn certainly_valid(pattern: &str) -> bool {
    let mut screen = Screen {
        rest: pattern,
        depth: 0,
        repeatable: false,
    };
    screen.run().is_some()
}

/// Whether `byte` stands for itself wherever it appears outside a class: every byte but the
/// ASCII ones with a meaning in the syntax (a non-ASCII byte is part of a literal character).
fn is_plain(byte: u8) -> bool {
    !matches!(
        byte,
        b'\\' | b'(' | b')' | b'|' | b'*' | b'+' | b'?' | b'{' | b'}' | b'[' | b']' | b'^' | b'$'
    )
}

struct Screen<'p> {
    /// What is left of the pattern.
    rest: &'p str,
    depth: usize,
    /// Whether the item just read can take a repetition operator (not at a start, after `|`,
    /// an assertion, a flags group or another repetition).
    repeatable: bool,
}

/// `None`: not known to be valid.
type Verdict = Option<()>;

impl Screen<'_> {
    fn next(&mut self) -> Option<char> {
        let mut chars = self.rest.chars();
        let c = chars.next();
        self.rest = chars.as_str();
        c
    }

    fn peek(&self) -> Option<char> {
        self.rest.chars().next()
    }

    fn run(&mut self) -> Verdict {
        loop {
            // Runs of literal characters, most of a pattern, are skipped a byte at a time. The
            // run ends before an ASCII byte, so it ends on a character boundary.
            let plain = self.rest.bytes().take_while(|byte| is_plain(*byte)).count();
            if plain > 0 {
                self.rest = self.rest.get(plain..)?;
                self.repeatable = true;
            }
            let Some(c) = self.next() else { break };
            match c {
                '\\' => {
                    self.repeatable = self.escape_outside_class()?;
                }
                '(' => self.open_group()?,
                ')' => {
                    self.depth = self.depth.checked_sub(1)?;
                    self.repeatable = true;
                }
                '|' => self.repeatable = false,
                '*' | '+' | '?' => self.repetition()?,
                '{' => self.counted_repetition()?,
                '[' => {
                    self.class()?;
                    self.repeatable = true;
                }
                '^' | '$' => self.repeatable = false,
                // Literal in the parser, but nothing the compiler writes unescaped: leave them.
                ']' | '}' => return None,
                _ => self.repeatable = true,
            }
        }
        (self.depth == 0).then_some(())
    }

    /// After `\` outside a class: whether the item read is repeatable.
    fn escape_outside_class(&mut self) -> Option<bool> {
        let c = self.next()?;
        match c {
            'd' | 'D' | 's' | 'S' | 'w' | 'W' | 't' | 'n' | 'r' | 'f' | 'v' | 'a' => Some(true),
            // Assertions; `\b{…}` is the parser's special word boundary syntax: leave it.
            'b' | 'B' => (self.peek() != Some('{')).then_some(false),
            'A' | 'z' => Some(false),
            'x' | 'u' | 'U' => self.hex_literal(c).map(|_| true),
            'p' | 'P' => self.unicode_class().then_some(true),
            _ => regex_syntax::is_escapeable_character(c).then_some(true),
        }
    }

    /// After `\p` or `\P`: one letter, or a braced name of letters, digits and `_`.
    fn unicode_class(&mut self) -> bool {
        match self.next() {
            Some('{') => {
                let mut length = 0;
                loop {
                    match self.next() {
                        Some('}') if length > 0 => return true,
                        Some(c) if c.is_ascii_alphanumeric() || c == '_' => {
                            length += 1;
                        }
                        _ => return false,
                    }
                }
            }
            Some(c) => c.is_ascii_alphabetic(),
            None => false,
        }
    }

    /// After `(`: a capture group, a non-capturing group with flags, or a flags group.
    fn open_group(&mut self) -> Verdict {
        if self.peek() == Some('?') {
            self.next();
            let mut seen = String::new();
            let mut negated = false;
            let mut flag_after_negation = false;
            loop {
                match self.next()? {
                    ':' => break,
                    ')' => {
                        // A flags group: nothing to repeat after it.
                        if seen.is_empty() || (negated && !flag_after_negation) {
                            return None;
                        }
                        self.repeatable = false;
                        return Some(());
                    }
                    '-' if !negated => negated = true,
                    flag @ ('i' | 'm' | 's' | 'u' | 'U' | 'R') if !seen.contains(flag) => {
                        seen.push(flag);
                        flag_after_negation |= negated;
                    }
                    _ => return None,
                }
            }
            if negated && !flag_after_negation {
                return None;
            }
        }
        self.depth += 1;
        if self.depth > MAX_GROUP_DEPTH {
            return None;
        }
        self.repeatable = false;
        Some(())
    }

    /// After `*`, `+` or `?`: an optional `?` (lazy).
    fn repetition(&mut self) -> Verdict {
        if !self.repeatable {
            return None;
        }
        if self.peek() == Some('?') {
            self.next();
        }
        self.repeatable = false;
        Some(())
    }

    /// After `{`: `{n}`, `{n,}` or `{n,m}` with `n ≤ m`, then an optional `?`.
    fn counted_repetition(&mut self) -> Verdict {
        if !self.repeatable {
            return None;
        }
        let min = self.decimal()?;
        match self.next()? {
            '}' => {}
            ',' => {
                if self.peek() == Some('}') {
                    self.next();
                } else {
                    let max = self.decimal()?;
                    if max < min || self.next()? != '}' {
                        return None;
                    }
                }
            }
            _ => return None,
        }
        if self.peek() == Some('?') {
            self.next();
        }
        self.repeatable = false;
        Some(())
    }

    fn decimal(&mut self) -> Option<u32> {
        let mut value: u32 = 0;
        let mut digits = 0;
        while let Some(digit) = self.peek().and_then(|c| c.to_digit(10)) {
            if digits == MAX_COUNT_DIGITS {
                return None;
            }
            self.next();
            value = value * 10 + digit;
            digits += 1;
        }
        (digits > 0).then_some(value)
    }

    /// After `[`: a class of literals, ranges, escapes and nested classes, without set operations.
    fn class(&mut self) -> Verdict {
        if self.peek() == Some('^') {
            self.next();
        }
        // A `]` or a `-` first is a literal.
        let mut previous = match self.peek() {
            Some(']') | Some('-') => {
                let literal = self.next()?;
                ClassItem::Literal(literal)
            }
            _ => ClassItem::Start,
        };
        loop {
            let c = self.next()?;
            previous = match c {
                ']' if previous != ClassItem::Start => return Some(()),
                // A nested class (the compiler writes `[^[^\t\n\x0C\r ]\n]` for `[^\S\n]`); an
                // ASCII class (`[:alpha:]`) is left to the parser.
                '[' if self.peek() != Some(':') => {
                    self.depth += 1;
                    if self.depth > MAX_GROUP_DEPTH {
                        return None;
                    }
                    self.class()?;
                    self.depth -= 1;
                    ClassItem::Other
                }
                '[' => return None,
                '&' | '~' if self.peek() == Some(c) => return None,
                '-' => {
                    if self.peek() == Some(']') {
                        ClassItem::Other
                    } else if let ClassItem::Literal(start) = previous {
                        let end = match self.next()? {
                            '\\' => match self.escape_in_class()? {
                                ClassItem::Literal(end) => end,
                                _ => return None,
                            },
                            '[' | ']' | '-' | '&' | '~' => return None,
                            end => end,
                        };
                        if end < start {
                            return None;
                        }
                        ClassItem::Other
                    } else {
                        return None;
                    }
                }
                '\\' => self.escape_in_class()?,
                literal => ClassItem::Literal(literal),
            };
        }
    }

    /// After `\` inside a class.
    fn escape_in_class(&mut self) -> Option<ClassItem> {
        let c = self.next()?;
        let literal = match c {
            'd' | 'D' | 's' | 'S' | 'w' | 'W' => return Some(ClassItem::Other),
            'p' | 'P' => return self.unicode_class().then_some(ClassItem::Other),
            't' => '\t',
            'n' => '\n',
            'r' => '\r',
            'f' => '\x0C',
            'v' => '\x0B',
            'a' => '\x07',
            'x' | 'u' | 'U' => return self.hex_literal(c).map(ClassItem::Literal),
            _ if regex_syntax::is_escapeable_character(c) => c,
            _ => return None,
        };
        Some(ClassItem::Literal(literal))
    }

    /// After `\x`, `\u` or `\U`: the character of a fixed number of hex digits (2, 4, 8) or of
    /// a braced scalar value; `None` when it is not certainly valid.
    fn hex_literal(&mut self, kind: char) -> Option<char> {
        let fixed = match kind {
            'x' => 2,
            'u' => 4,
            _ => 8,
        };
        let mut value: u32 = 0;
        if self.peek() == Some('{') {
            self.next();
            let mut digits = 0;
            loop {
                match self.next()? {
                    '}' if digits > 0 => break,
                    c if c.is_ascii_hexdigit() && digits < 6 => {
                        value = value * 16 + c.to_digit(16)?;
                        digits += 1;
                    }
                    _ => return None,
                }
            }
        } else {
            for _ in 0..fixed {
                value = value * 16 + self.next()?.to_digit(16)?;
            }
        }
        char::from_u32(value)
    }
}

/// What a bracketed class held last, which decides what a `-` may do next.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ClassItem {
    /// Nothing yet.
    Start,
    /// A single character: a range may start at it.
    Literal(char),
    /// A Perl or Unicode class, a range, or a trailing `-`.
    Other,
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::certainly_valid;

    pub(super) fn parses(pattern: &str) -> bool {
        regex_syntax::ast::parse::ParserBuilder::new()
            .nest_limit(250)
            .build()
            .parse(pattern)
            .is_ok()
    }

    /// The shapes the compiler writes, each certainly valid.
    #[test]
    fn the_compilers_shapes_pass_the_screen() {
        for pattern in [
            r#"(?i)(?-u:\b)per day(?-u:\b)|\((?:TPD|RPD)\)"#,
            r#"[\t\n\x0C\r ]*:[\t\n\x0C\r ]*\\*["']UNSUPPORTED_OPENAI_PARAMS\\*["']"#,
            r#"'[0-9A-Za-z_.\[\]-]{1,60}'[\t\n\x0C\r ]*:"#,
            r#"(?m)^[^\S\n]*(?:⎿[^\S\n]*)?API[^\S\n]+Error[^\S\n]*\(401\b[^\n]{0,300}?\)"#,
            r#"invalid (?:value|type) for ['\u{2018}][^'\u{2019}\n]+['\u{2019}]:"#,
            r#"(?im)^[^\S\n]*\[(?:bug|feature)\](?-i:x)\z|\A\p{Han}\pL"#,
            r#"[]a-]|[^]b]|[-z]|\d{2,}|a{3}?|b+?"#,
            r#"(?m:^)[^[^\t\n\x0C\r ]\n]*|[a[^b]c]"#,
        ] {
            assert!(certainly_valid(pattern), "{pattern}");
            assert!(parses(pattern), "{pattern}");
        }
    }

    /// Shapes the screen leaves to the parser (whether or not the parser accepts them).
    #[test]
    fn doubtful_shapes_are_left_to_the_parser() {
        for pattern in [
            "(?x)a b",
            "(?P<name>a)",
            "[[:alpha:]]",
            "[a[:digit:]]",
            "[a-z&&b]",
            "[a--b]",
            "[z-a]",
            "a{3,2}",
            "a**",
            "*a",
            "(?i)*",
            "^*",
            r"\b{start}",
            r"\Qa\E",
            r"\1",
            r"\x{D800}",
            r"\x{110000}",
            "(?)",
            "(?-)",
            "(?ii)",
            "(?i-:a)",
            "(a",
            "a)",
            "[a",
            "[]",
            "a{",
            "a{1",
            "a}",
            "]",
            r"\",
            r"[\b]",
            r"[\d-z]",
            r"\<",
        ] {
            assert!(!certainly_valid(pattern), "{pattern}");
        }
    }

    #[test]
    fn deep_nesting_is_left_to_the_parser() {
        let deep = format!("{}a{}", "(".repeat(41), ")".repeat(41));
        assert!(!certainly_valid(&deep));
        let shallow = format!("{}a{}", "(?:".repeat(40), ")".repeat(40));
        assert!(certainly_valid(&shallow));
        assert!(parses(&shallow));
    }

    /// Pieces of syntax, valid and not, that generated patterns are made of.
    const PIECES: &[&str] = &[
        "a",
        "Z",
        "0",
        " ",
        "#",
        "-",
        "^",
        "$",
        ".",
        "|",
        "(",
        ")",
        "(?:",
        "(?i)",
        "(?-u:",
        "(?im",
        "(?",
        "-",
        ":",
        "[",
        "]",
        "[^",
        "{",
        "}",
        ",",
        "1",
        "3",
        "*",
        "+",
        "?",
        r"\",
        r"\b",
        r"\d",
        r"\s",
        r"\x0C",
        r"\x{2019}",
        r"\u{D800}",
        r"\pL",
        r"\p{Han}",
        r"\n",
        r"\-",
        r"\[",
        r"\]",
        r"\.",
        r"\z",
        r"\A",
        "&",
        "~",
        "&&",
        "--",
        "⎿",
        "é",
        "x",
        "P<",
        "<",
        ">",
        "=",
        "[^[^",
        "[a[",
        "b]]",
        r"\n]",
        "[:",
        ":]",
        "[^]",
        "[]",
    ];

    pub(super) fn pattern() -> impl Strategy<Value = String> {
        proptest::collection::vec(proptest::sample::select(PIECES), 0..32)
            .prop_map(|pieces| pieces.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]
        /// The screen's promise: what it calls certainly valid, the parser accepts.
        #[test]
        fn what_the_screen_passes_the_parser_accepts(pattern in pattern()) {
            if certainly_valid(&pattern) {
                prop_assert!(parses(&pattern), "the screen passed `{}`, which the parser refuses", pattern);
            }
        }
    }
}

#[cfg(test)]
mod coverage {
    use proptest::strategy::{Strategy, ValueTree};
    use proptest::test_runner::TestRunner;

    use super::certainly_valid;

    /// The property above is only worth something if the screen passes many generated
    /// patterns, including ones near the parser's refusals: count them, and check each.
    #[test]
    fn the_screen_passes_a_fair_share_of_generated_patterns() {
        let mut runner = TestRunner::deterministic();
        let strategy = super::tests::pattern();
        let (mut passed, mut parsed) = (0, 0);
        for _ in 0..50_000 {
            let Ok(tree) = strategy.new_tree(&mut runner) else {
                continue;
            };
            let pattern = tree.current();
            let valid = super::tests::parses(&pattern);
            parsed += usize::from(valid);
            if certainly_valid(&pattern) {
                passed += 1;
                assert!(
                    valid,
                    "the screen passed `{pattern}`, which the parser refuses"
                );
            }
        }
        eprintln!("{passed} passed the screen, {parsed} parse, of 50000");
        assert!(
            passed * 20 >= parsed,
            "{passed} of {parsed} parsing patterns passed the screen"
        );
    }
}
