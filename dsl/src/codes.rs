//! The registry of diagnostic codes: one place, one line per code, never reused.
//!
//! Each code's documentation is written beside its declaration (the `///` lines) and is the
//! text of its entry in `docs/diagnostics.md` and of `faultline diagnostic CODE`. A retired code
//! stays in this list, marked retired, so that its number is never given to another meaning.

use serde::Serialize;

/// How serious a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Reported, but fails a check only with `--deny-warnings`.
    Warning,
    /// Fails the check.
    Error,
}

impl Severity {
    /// `error` or `warning`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

macro_rules! diagnostic_codes {
    ( $( $(#[doc = $doc:literal])* $variant:ident = $number:literal, $slug:literal, $severity:ident, $title:literal; )+ ) => {
        /// A stable diagnostic code (`FL0001`…).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[non_exhaustive]
        pub enum Code {
            $( $(#[doc = $doc])* $variant, )+
        }

        impl Code {
            /// Every code, in numeric order.
            pub const ALL: &'static [Code] = &[ $( Code::$variant, )+ ];

            /// The code as printed: `FL0001`.
            pub const fn as_str(self) -> &'static str {
                match self { $( Code::$variant => concat!("FL", $number), )+ }
            }

            /// A short kebab-case name: `syntax-error`.
            pub const fn slug(self) -> &'static str {
                match self { $( Code::$variant => $slug, )+ }
            }

            /// The severity a diagnostic with this code has.
            pub const fn severity(self) -> Severity {
                match self { $( Code::$variant => Severity::$severity, )+ }
            }

            /// A one-line title.
            pub const fn title(self) -> &'static str {
                match self { $( Code::$variant => $title, )+ }
            }

            /// The documentation entry, as Markdown.
            pub fn doc(self) -> String {
                let lines: &[&str] = match self { $( Code::$variant => &[ $( $doc, )* ], )+ };
                lines.iter().map(|line| line.strip_prefix(' ').unwrap_or(line)).collect::<Vec<_>>().join("\n")
            }

            /// Looks a code up by its printed form (`FL0001`, case-insensitive) or its slug.
            pub fn parse(text: &str) -> Option<Code> {
                Code::ALL.iter().copied().find(|code| code.as_str().eq_ignore_ascii_case(text) || code.slug() == text)
            }
        }
    };
}

diagnostic_codes! {
    /// The text does not follow the `.rules` grammar. The message says what the parser expected
    /// at the underlined position.
    ///
    /// After a syntax error the parser resumes at the next top-level item (a line starting with
    /// `rule`, `code`, `provider`, `include`, `tiers`, `catalogue` or `///`), so one run reports
    /// the syntax errors of every item and still checks the items that parsed.
    ///
    /// Fix: correct the text at the caret. `docs/language.md` has the grammar of every construct.
    SyntaxError = "0001", "syntax-error", Error, "syntax error";
    /// A `\` escape in an ordinary string is not one of `\\`, `\"`, `\n`, `\r`, `\t`, `\0` or
    /// `\u{…}` with a valid Unicode scalar value.
    ///
    /// Fix: use a raw string (`r"…"` or `r#"…"#`) for regular expressions, so that backslashes
    /// reach the regex engine unchanged, or write the escape correctly.
    InvalidEscape = "0002", "invalid-escape", Error, "invalid string escape";
    /// A number does not fit where it is used: a rank outside 0..=1000000, an HTTP status outside
    /// 100..=599, an exit code outside 0..=255, a capture group or byte bound that is negative or
    /// too large to represent.
    ///
    /// Fix: use a number in the stated range.
    IntegerOutOfRange = "0003", "integer-out-of-range", Error, "number out of range";
    /// A catalogue has no `catalogue "<name>" version "<version>"` header. Every catalogue names
    /// itself once, in its root file, so that classifications and bundles can say which catalogue
    /// and version produced them.
    ///
    /// Fix: add `catalogue "provider-errors" version "provider-errors.v1"` at the top of the root
    /// file.
    MissingHeader = "0004", "missing-header", Error, "missing catalogue header";
    /// The catalogue version string is not `<name>.v<N>` (lowercase letters, digits, `-`, `_` and
    /// `.`, ending in `.v` and a positive number without leading zeros), e.g. `provider-errors.v1`.
    /// The version is stamped on every classification and must compare exactly.
    ///
    /// Fix: write the version as `provider-errors.v2`.
    MalformedVersion = "0005", "malformed-version", Error, "malformed catalogue version";
    /// An `include` names a file that cannot be read. Paths are relative to the directory of the
    /// file that includes them.
    ///
    /// Fix: correct the path or add the missing file.
    IncludeNotFound = "0006", "include-not-found", Error, "included file not found";
    /// Files include each other in a cycle. The message lists the chain.
    ///
    /// Fix: remove one of the `include` lines in the chain; an include is needed only once per
    /// catalogue, usually in the root file.
    IncludeCycle = "0007", "include-cycle", Error, "include cycle";
    /// Something that must be declared once is declared twice: the catalogue header, the `tiers`
    /// list, a provider, a shared veto, or an entry of a list (a tier, a flag, a phase in
    /// `when … in […]`).
    ///
    /// Fix: delete the second declaration; the note points at the first.
    DuplicateDeclaration = "0008", "duplicate-declaration", Error, "duplicate declaration";
    /// The catalogue has no `tiers [...]` declaration, so rule priority cannot be decided.
    ///
    /// Fix: declare the tiers once, highest priority first, e.g.
    /// `tiers [structured, provider, neutral, runtime, fallback]`.
    MissingTiers = "0009", "missing-tiers", Error, "missing tiers declaration";
    /// Two rules have the same id. Rule ids are stable identifiers stamped on every
    /// classification, so they must be unique across the whole catalogue.
    ///
    /// Fix: rename one rule. When a rule's meaning changes, keep the old id for the old signature
    /// and add a new id (bump the `.vN` suffix) rather than rewriting history.
    DuplicateRuleId = "0010", "duplicate-rule-id", Error, "duplicate rule id";
    /// A rule id is not of the form `family.kind.signature.vN`: two or more dot-separated
    /// segments of lowercase ASCII letters, digits, `_` and `-`, each starting with a letter or
    /// digit. A rule that matches text must end in a version segment `v<N>` (N ≥ 1, no leading
    /// zeros); structured mappings such as `http.429` may omit it.
    ///
    /// Fix: rename the rule, e.g. `claude.stderr.rate.v1`.
    MalformedRuleId = "0011", "malformed-rule-id", Error, "malformed rule id";
    /// Two `code` declarations have the same name.
    ///
    /// Fix: delete or rename one of them.
    DuplicateCode = "0012", "duplicate-code", Error, "duplicate code declaration";
    /// A rule names a semantic code that no `code` block declares. There is no default code: an
    /// undeclared code is always an error, never silently unclassified.
    ///
    /// Fix: correct the spelling (the help suggests the nearest declared code) or declare the code
    /// with its class, flags and scope.
    UndeclaredCode = "0013", "undeclared-code", Error, "undeclared code";
    /// A `class` is not one of `transient`, `hard`, `unclassified`.
    ///
    /// Fix: use one of the three classes.
    UnknownClass = "0014", "unknown-class", Error, "unknown class";
    /// A `confidence` is not one of `high`, `medium`, `low`.
    ///
    /// Fix: use one of the three confidences.
    UnknownConfidence = "0015", "unknown-confidence", Error, "unknown confidence";
    /// A `scope` is not one of `request`, `session`, `task`, `model`, `provider`, `account`,
    /// `host`.
    ///
    /// Fix: use one of the scopes listed in `docs/language.md`.
    UnknownScope = "0016", "unknown-scope", Error, "unknown scope";
    /// A phase is not one of `auth_check`, `process_start`, `session_init`, `prompt_send`,
    /// `streaming`, `tool_execution`, `shutdown`.
    ///
    /// Fix: use one of the lifecycle phases.
    UnknownPhase = "0017", "unknown-phase", Error, "unknown phase";
    /// An evidence source is not one of `acp_prompt_error`, `acp_update`, `managed_stderr`,
    /// `process_exit`, `http`.
    ///
    /// Fix: use one of the evidence sources.
    UnknownSource = "0018", "unknown-source", Error, "unknown evidence source";
    /// A rule or example names a provider id that no `provider "…"` line declares. Provider ids
    /// are declared so that a typo cannot silently make a provider-scoped rule unreachable.
    ///
    /// Fix: correct the id or add `provider "<id>"` to the catalogue.
    UndeclaredProvider = "0019", "undeclared-provider", Error, "undeclared provider";
    /// A rule's `tier` is not in the catalogue's `tiers [...]` list.
    ///
    /// Fix: use a declared tier, or add the tier to the list at the position that gives it the
    /// intended priority.
    UnknownTier = "0020", "unknown-tier", Error, "unknown tier";
    /// A name is not one the language knows in this position: a flag, a text view, a timing
    /// extractor, a guard field or an evidence field. The message says which list it must come
    /// from and the help suggests the nearest name.
    ///
    /// Fix: use a name from the list.
    UnknownName = "0021", "unknown-name", Error, "unknown name";
    /// A block lacks a clause it must have: a rule needs `code`, `confidence` and `tier`; a code
    /// needs `class` and `scope`.
    ///
    /// Fix: add the clause.
    MissingClause = "0022", "missing-clause", Error, "missing clause";
    /// A clause that may appear once in a block appears twice (e.g. two `code` lines), or a rule
    /// has two `when` guards on the same field.
    ///
    /// Fix: keep one. To accept several values of a guard field, write `when <field> in [a, b]`.
    DuplicateClause = "0023", "duplicate-clause", Error, "duplicate clause";
    /// A clause is not allowed in this kind of block: `class` and `flags` belong to `code`
    /// blocks; `confidence`, `tier`, `rank`, `before`, `after`, `when`, `match`, `unless`,
    /// `timing`, `example` and `counterexample` belong to `rule` blocks; a code's `remediation`
    /// is a token, not a capture.
    ///
    /// Fix: move the clause to the right block or delete it.
    MisplacedClause = "0024", "misplaced-clause", Error, "clause not allowed here";
    /// A `before` or `after` names a rule id that the catalogue does not define.
    ///
    /// Fix: correct the id.
    UnknownRuleReference = "0025", "unknown-rule-reference", Error, "unknown rule reference";
    /// A `before` or `after` relates two rules of different tiers. Tiers already order such rules;
    /// relations only order rules inside one tier.
    ///
    /// Fix: delete the relation, or move one rule to the other tier.
    CrossTierOrder = "0026", "cross-tier-order", Error, "order relation across tiers";
    /// A regular expression does not parse. The label points at the offending part of the
    /// pattern.
    ///
    /// faultline regexes use the syntax of Rust's `regex` crate, with RE2 semantics for Perl
    /// classes and word boundaries (`\d`, `\s`, `\w`, `\b` are ASCII); look-around and
    /// backreferences are not supported, because every pattern is compiled to a deterministic
    /// automaton.
    ///
    /// Fix: correct the pattern. Write patterns as raw strings, `r"…"`.
    InvalidRegex = "0027", "invalid-regex", Error, "invalid regular expression";
    /// A regular expression (or a pattern part of a matcher) can match the empty string, so it
    /// would fire on every piece of evidence.
    ///
    /// Fix: make the pattern require at least one character, e.g. replace `a*` with `a+`.
    RegexMatchesEmpty = "0028", "regex-matches-empty", Error, "regex matches the empty string";
    /// A regular expression uses a construct that cannot be compiled to a deterministic
    /// automaton: a Unicode-aware word boundary (`\b` inside an explicit `(?u)` flag, or
    /// `\b{start}`-style boundaries with Unicode enabled).
    ///
    /// faultline's `\b` is already an ASCII word boundary (as in RE2 and Go); only an explicit
    /// request for Unicode word boundaries is refused.
    ///
    /// Fix: remove the `u` flag around the boundary, or write `(?-u:\b)`.
    DfaHostileRegex = "0029", "dfa-hostile-regex", Error, "regex construct cannot be determinized";
    /// A capture refers to a group the pattern does not have: `remediation capture r"…" group N`
    /// or `match regex r"…" where group N == <field>` with N larger than the pattern's number of
    /// capture groups, or N = 0 for a remediation (group 0 is the whole match, which is rarely the
    /// value wanted).
    ///
    /// Fix: add the capture group to the pattern or correct N.
    MissingCaptureGroup = "0030", "missing-capture-group", Error, "missing capture group";
    /// A `prefix`, `whole` or `contains` matcher has an empty (or whitespace-only) literal, which
    /// would match every text; or a `prefix` or `whole` literal starts or ends with whitespace,
    /// which can never match because those matchers compare the trimmed text.
    ///
    /// Fix: write the literal the matcher should require, without surrounding whitespace.
    EmptyLiteral = "0031", "empty-literal", Error, "empty or untrimmed literal";
    /// A `suffix MIN..=MAX bytes` bound is out of range: MIN greater than MAX, or MAX larger than
    /// 4096 (the excerpt bound: a `prefix` matcher describes one short message, not a log).
    ///
    /// Fix: use 0 ≤ MIN ≤ MAX ≤ 4096, e.g. `suffix 1..=256 bytes`.
    ByteBoundOutOfRange = "0032", "byte-bound-out-of-range", Error, "byte bound out of range";
    /// A rule that matches text lacks an `example` (evidence it must classify as) or a
    /// `counterexample` (prose it must not fire on). The catalogue convention is at least one of
    /// each per text rule, because agents routinely quote the errors they read.
    ///
    /// Fix: add `example "<real, sanitized message>"` and `counterexample "<prose quoting it>"`.
    MissingExample = "0033", "missing-example", Error, "missing example";
    /// A value has the wrong type for its position: a string where a number is needed (HTTP
    /// status, exit code), a bare name where a string is needed (provider id, text), or a list
    /// where one value is needed.
    ///
    /// Fix: write the value with the type the message names.
    TypeMismatch = "0034", "type-mismatch", Error, "value of the wrong type";
    /// A `.rules` file in a catalogue directory is not reached from the root file
    /// (`catalogue.rules`) by any `include`, so its rules are silently not part of the catalogue.
    ///
    /// Fix: include it from the root file, or delete it.
    UnreachableFile = "0035", "unreachable-file", Warning, "file not included by the catalogue";
    /// A rule's fixed `excerpt` is empty, longer than the 4096-byte excerpt bound, or not
    /// already redaction-clean: the diagnostic tier would change it (it holds something shaped
    /// like a secret, an id, a URL path or a local path). A fixed excerpt replaces the evidence
    /// text precisely so that nothing sensitive is reported; it must be safe as written.
    ///
    /// Fix: write placeholders such as `<release-date>` or `<package>` for the values.
    UnsafeExcerpt = "0036", "unsafe-excerpt", Error, "fixed excerpt is not redaction-clean";
    /// An `include` leaves the catalogue's directory (the directory of its root file): its path
    /// is absolute, its `..` components climb above that directory, or it resolves through a
    /// symbolic link to a file outside it. The file is not read, so nothing of it can appear
    /// in a diagnostic: a catalogue checked in CI may come from an untrusted pull request, and
    /// checking it must not read other files of the machine.
    ///
    /// Fix: move the file into the catalogue's directory (or below it) and include it by a
    /// path relative to the including file.
    IncludeEscapesRoot = "0037", "include-escapes-root", Error, "include leaves the catalogue's directory";
    /// An included file is not text: it is not UTF-8, or it holds a control character other
    /// than tab, line feed, carriage return or form feed (a NUL byte marks a binary file). It
    /// is not parsed, and none of its content is shown.
    ///
    /// Fix: include only `.rules` source files; correct the path.
    IncludeNotText = "0038", "include-not-text", Error, "included file is not text";
    /// A `when body "…"` guard or an `on body "…"` text view names a malformed JSON Pointer
    /// (RFC 6901): a pointer is empty (the whole body) or starts with `/`, and a `~` in it must
    /// be `~0` (for `~`) or `~1` (for `/`). A `*` segment stands for every element of an array.
    ///
    /// Fix: write the path from the body's root, such as `"/error/details/*/reason"`.
    MalformedPointer = "0039", "malformed-pointer", Error, "malformed JSON Pointer";
    /// A guard tests structured evidence that ingestion never keeps, so it can never hold: a
    /// header that carries credentials (`authorization`, `cookie`, `x-api-key`, any name with
    /// `secret`, `password`, `api-key`, … or ending in `token`), a header name that is not a
    /// visible-ASCII token, or a header value ingestion drops (a credential shape, or more
    /// than 1024 bytes).
    ///
    /// Fix: guard on a header the provider sends without credentials (`x-should-retry`,
    /// `retry-after`, `x-request-id`), or test the error body instead.
    DroppedAtIngestion = "0040", "dropped-at-ingestion", Error, "guard on evidence ingestion drops";
    /// A guard key (a quoted string after the field) is given to a field other than `header` or
    /// `body`, or `header`/`body` is tested without one: only response headers and the error
    /// body are keyed, by header name and JSON Pointer.
    ///
    /// Fix: write `when header "name" = "value"` or `when body "/pointer" = "value"`, or drop
    /// the key of another field (`when http_status = 429`); `when headers present` and `when
    /// body present` test the fields as a whole.
    MisplacedGuardKey = "0041", "misplaced-guard-key", Error, "guard key on the wrong field";
    /// Two guards of a rule on the error body can never hold together: one tests the value at a
    /// JSON Pointer without `*` (so that value is a string, number or boolean), and the other a
    /// pointer below it (`when body "/error" = "x"` beside `when body "/error/code" = "y"`). The
    /// rule could never fire.
    ///
    /// Fix: test the outer pointer with `present` (an object is present), or drop one of the
    /// guards.
    ImpossibleGuard = "0042", "impossible-guard", Error, "body guards that cannot hold together";
    /// A JSON Pointer is missing where one is read, or given where none is: a text matcher
    /// `on body` reads the string values at a pointer of the error body and needs one (`on
    /// body "/error/message"`); the `sanitized` and `raw` views are the evidence text and take
    /// none; a remediation capture reads the evidence text only.
    ///
    /// Fix: write `on body "/error/message"` to match the body's message, or drop the pointer
    /// after `on sanitized`/`on raw`; capture a remediation from the text.
    MisplacedPointer = "0043", "misplaced-pointer", Error, "JSON Pointer missing or misplaced";
    /// A setting of the `policy` block is not one the block (or the section it is in) has.
    /// The message lists the settings that section knows (docs/policy.md lists them all).
    ///
    /// Fix: correct the spelling, or move the setting to the section it belongs to (`max` and
    /// `initial` go in `retry { … }`, `steps` in `ladder { … }`).
    UnknownPolicySetting = "0050", "unknown-policy-setting", Error, "unknown policy setting";
    /// One section of the policy sets the same thing twice (two `max` in one `retry`, two
    /// labels for one code, two `ladder` sections), so which one holds would depend on order.
    ///
    /// Fix: keep one.
    DuplicatePolicySetting = "0051", "duplicate-policy-setting", Error, "policy setting given twice";
    /// A section of the policy lacks a setting it needs: a class policy without
    /// `on_exhausted`, an enabled `retry` without `max` or `initial`, an enabled
    /// `wait_for_reset` without `max`, a `ladder` without `steps`, `attempts` or
    /// `reset_within`, `labels` without `otherwise`.
    ///
    /// Fix: add the setting the message names.
    MissingPolicySetting = "0052", "missing-policy-setting", Error, "policy setting missing";
    /// A policy setting has the wrong kind of value: a number where a duration is expected
    /// (`initial 5` instead of `initial 5s`), a name where a list is expected, a value on a
    /// section that takes a body, and so on.
    ///
    /// Fix: write the kind of value the message names.
    PolicyValueKind = "0053", "policy-value-kind", Error, "policy value of the wrong kind";
    /// A policy value lies outside its allowed range (reference §F.1): `max` retries 1–10, the
    /// `initial` interval 1 s–1 h, the reset wait's `max` 1 s–7 d; a ladder of 1–16 steps of
    /// 1 s–1 h each and 1–20 attempts; `reset_within` at most 1 h; a notice label of 1–120
    /// bytes on one line.
    ///
    /// Fix: choose a value inside the range the message states.
    PolicyOutOfRange = "0054", "policy-out-of-range", Error, "policy value out of range";
    /// A disabled section stores something other than zeros: `retry off { max 3 }`. The
    /// reference refuses such a document, because a value that does nothing reads as if it
    /// did.
    ///
    /// Fix: enable the section (drop `off`), or set its values to zero (`max 0, initial 0s`)
    /// or drop them.
    DisabledSectionNotZero = "0055", "disabled-section-not-zero", Error, "disabled section stores values";
    /// Two policies are written for one class (two `class transient { … }`), or for one code:
    /// which one applies would depend on their order.
    ///
    /// Fix: merge them into one.
    DuplicateClassPolicy = "0056", "duplicate-class-policy", Error, "two policies for one class";
    /// The policy does not cover every class that has one: both `class transient { … }` and
    /// `class hard { … }` are needed (`unclassified` never has one: it always stops).
    ///
    /// Fix: add the missing class's policy; `retry off`, `wait_for_reset off` and
    /// `on_exhausted skip` is the reference's default.
    IncompleteClassCoverage = "0057", "incomplete-class-coverage", Error, "class without a policy";
    /// A class policy names a class that does not exist, or `unclassified`, which never has a
    /// policy (an unclassified failure always stops for manual recovery).
    ///
    /// Fix: write `class transient` or `class hard`.
    UnknownPolicyClass = "0058", "unknown-policy-class", Error, "no such policy class";
    /// A row of the decision table names an outcome that does not exist. The outcomes are
    /// `short_retry`, `long_retry`, `fallback`, `park` and `manual`: orchestrators act on
    /// these and nothing else.
    ///
    /// Fix: use one of the five outcomes.
    UnknownOutcome = "0059", "unknown-outcome", Error, "unknown decision outcome";
    /// A code named in the policy (a code policy, a decision row, a label) is not declared by
    /// any `code` block, so the setting could never apply.
    ///
    /// Fix: correct the name, or declare the code.
    UnknownPolicyCode = "0060", "unknown-policy-code", Error, "policy names an undeclared code";
    /// A name in the policy is not one of its vocabulary: a decision context (`kanban`,
    /// `office`), a confidence (`high`, `medium`, `low`), an exhaustion action (`skip`,
    /// `stop`), or `off` for a section.
    ///
    /// Fix: use one of the names the message lists.
    UnknownPolicyName = "0061", "unknown-policy-name", Error, "unknown name in the policy";
    /// The catalogue has two `policy` blocks. One catalogue has one recovery policy.
    ///
    /// Fix: merge them into one block.
    DuplicatePolicy = "0062", "duplicate-policy", Error, "two policy blocks";
    /// A decision row can never apply: an earlier row applies to every failure it would (the
    /// earlier row's context, codes, confidences and reset condition include this row's), so
    /// the first-match table never reaches it.
    ///
    /// Fix: move the row above the one that covers it, or delete it.
    UnreachableDecision = "0063", "unreachable-decision", Warning, "decision row can never apply";
    /// A rule says `unless <name>`, and no `veto <name> …` item of the catalogue declares a
    /// shared veto of that name. A shared veto is declared once, in any file of the catalogue,
    /// and any rule may use it.
    ///
    /// Fix: correct the name (the help suggests the nearest declared veto), declare the veto with
    /// `veto <name> regex r"…"`, or write the matcher inline: `unless regex r"…"`.
    UndeclaredVeto = "0064", "undeclared-veto", Error, "undeclared shared veto";
    /// A shared veto (`veto <name> …`) that no rule uses (`unless <name>`). It vetoes nothing, and
    /// is usually left over from an edit.
    ///
    /// Fix: use it in the rules it was written for, or delete it.
    UnusedVeto = "0065", "unused-veto", Warning, "shared veto never used";
    /// A veto set (`veto <name> [a, b]`) names another veto set. A set lists shared vetoes
    /// declared with a matcher, so that what `unless <name>` applies reads off one line.
    ///
    /// Fix: list the other set's members instead of its name.
    NestedVetoSet = "0066", "nested-veto-set", Error, "veto set inside a veto set";
    /// `before`, `after` and ranks order rules into a cycle, so no effective order exists. The
    /// message lists the cycle; the labels show each relation on it.
    ///
    /// Fix: remove one relation of the cycle or change a rank.
    PriorityCycle = "0101", "priority-cycle", Error, "priority cycle";
    /// Two rules of the same tier that neither ranks nor relations order can both fire on one
    /// piece of evidence and give different outcomes (code, class, confidence or scope). The
    /// witness is the shortest such evidence, verified by the compiled classifier.
    ///
    /// Fix: declare which wins (`before`/`after` or ranks), or narrow one rule so that the
    /// witness no longer fires it.
    Tie = "0102", "tie", Error, "unordered rules collide";
    /// A rule can never win: on every piece of evidence it fires on, a higher-priority rule
    /// fires too. The labels name the covering rules.
    ///
    /// Fix: delete the rule, or move it above the rules that shadow it.
    ShadowedRule = "0103", "shadowed-rule", Error, "rule can never win";
    /// A rule fires on no evidence at all: its guards contradict each other, or its matchers
    /// cannot hold together, or its vetoes cover everything its matchers accept.
    ///
    /// Fix: correct the matcher or guard that makes it unsatisfiable, or delete the rule.
    DeadRule = "0104", "dead-rule", Error, "rule fires on nothing";
    /// An `unless` veto never matches where its rule's matchers do, so it never vetoes
    /// anything; or it vetoes every text its rule's matchers accept.
    ///
    /// Fix: correct the veto, or delete it.
    DeadVeto = "0105", "dead-veto", Error, "veto is dead";
    /// Two rules of one tier have signatures that match the same span of text: every text the
    /// second matches there, the first matches too. Redundant signatures drift apart over time.
    ///
    /// Fix: keep one signature, or make them disjoint.
    SameSpanOverlap = "0106", "same-span-overlap", Warning, "signatures overlap";
    /// An inline `example` does not classify as its rule when run through the compiled bundle,
    /// or a `counterexample` fires its rule. The message shows what won instead.
    ///
    /// Fix: correct the rule, the example, or the priority that let another rule win.
    ExampleFailed = "0107", "example-failed", Error, "inline example fails";
    /// The collision analysis of a pair of rules exceeded its budget (states explored), so it
    /// could not prove they never collide; the pair is treated as colliding.
    ///
    /// Fix: order the two rules explicitly, or raise the budget with `--analysis-budget`.
    AnalysisBudget = "0108", "analysis-budget", Error, "analysis budget exceeded";
    /// A pattern does not fit one of the budgets that bound compiling it: its length (a
    /// literal's too), its NFA (bounded repetitions are expanded into copies, so
    /// `a{1000}{1000}` is a million states), the determinizer's working memory or its DFA's
    /// size (even after bounded gaps were widened for the automaton and confirmed exactly at
    /// runtime), or the exact regex the runtime confirms such matches with. The label is on the pattern and the message quotes the
    /// budget in force; the rule is left out of the bundle and the other rules are still
    /// analysed. The budgets and their defaults are listed in docs/bundle.md.
    ///
    /// Fix: simplify the pattern (nested or long bounded repetitions and large Unicode classes
    /// are the usual cause), or raise the budget (`--dfa-budget` for the DFA and
    /// determinization).
    AutomatonTooLarge = "0109", "automaton-too-large", Error, "automaton exceeds its size budget";
    /// No rule fires on every piece of evidence, so some evidence would classify as nothing.
    /// Classification must always return a result.
    ///
    /// Fix: add a catch-all rule in the last tier: no `when`, no `match`, low confidence.
    NoCatchAll = "0110", "no-catch-all", Error, "no catch-all rule";
    /// A pattern that passed validation cannot be compiled to an automaton or a regex for a
    /// reason other than a budget (a budget is FL0109): the automaton library refuses it. The
    /// label is on the pattern; the rule is left out of the bundle and the other rules are
    /// still analysed. The front end refuses every construct known to cause this (FL0027,
    /// FL0029), so no catalogue is known to trigger it; its test builds the failure directly.
    ///
    /// Fix: rewrite the pattern with simpler constructs, and report the pattern, since the front
    /// end should have refused it with a precise code.
    PatternNotCompiled = "0111", "pattern-not-compiled", Error, "pattern cannot be compiled";
    /// The bundle compiled from the catalogue does not load in the runtime that will read it:
    /// the runtime's validating loader refuses what the compiler wrote. Inline examples and the
    /// collision analysis, which run on the reloaded bundle, are skipped. Every check the
    /// loader makes is made earlier, on the source, by the compiler, so no catalogue is known to
    /// trigger it; its test builds the failure directly.
    ///
    /// Fix: none in the catalogue; report it with the catalogue, since it is a bug in the
    /// compiler or the bundle format.
    BundleDoesNotLoad = "0112", "bundle-does-not-load", Error, "compiled bundle does not load";
    /// A rule reads the evidence text, but the literal prefilter finds no word it can require of
    /// every text the rule fires on, so the rule is never skipped: every piece of evidence runs
    /// the automata, and ordinary output is no longer turned away before them. The prefilter
    /// words are runs of at least three ASCII letters, digits or `_`, or of at least two Chinese,
    /// Japanese or Korean characters (ideographs, kana, Hangul), that every match must
    /// contain; an alternative made only of other non-ASCII text (accented or Cyrillic letters,
    /// which have case variants), punctuation, short tokens or
    /// optional parts (`(?:token)?`) has none, nor has an alternation of more than 256 branches
    /// that share no word,
    /// and a word the redaction may write (`redacted`, `path`) does not count in the sanitized
    /// view. The label is on the first text matcher of the rule.
    ///
    /// Fix: give every alternative of the pattern a distinctive word that it requires (a
    /// provider's phrase, an error type, a JSON key), or split the rule.
    UngatedRule = "0113", "ungated-rule", Warning, "rule has no prefilter word";
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The whole registry as Markdown: the content of `docs/diagnostics.md`.
pub fn registry_markdown() -> String {
    let mut out = String::from(
        "# Diagnostic codes\n\n\
         <!-- Generated from dsl/src/codes.rs by `FAULTLINE_BLESS=1 cargo test -p faultline-dsl`; do not edit. -->\n\n\
         Every diagnostic faultline prints carries one of these codes. Codes are stable and never\n\
         reused. `faultline diagnostic CODE` prints an entry. Each code has a fixture that triggers it\n\
         in `fixtures/diagnostics/`, named `<CODE>-<what>.rules`.\n\n\
         ## Output formats\n\n\
         `faultline check --format FORMAT` renders the same diagnostics four ways:\n\n\
         - `human` (default): reports with the source underlined, for terminals. A syntax error\n  \
         shows only its own line (the file may not be `.rules` text at all); other reports show a\n  \
         line of context around the underlined text.\n\
         - `json`: one document `{\"version\": 1, \"diagnostics\": [...], \"summary\": {\"errors\": N, \"warnings\": N}}`.\n  \
         Each diagnostic has `code`, `name`, `severity`, `message`, `file`, `start` and `end` (each\n  \
         `{line, column, offset}`: 1-based lines, 1-based columns counted in characters (Unicode\n  \
         scalar values), 0-based byte offsets; `end` is one past the last underlined character),\n  \
         `labels` (each with `file`, `start`, `end`, the underlined `text`, its `message` and\n  \
         `primary`), `help` and `notes`.\n\
         - `sarif`: a SARIF 2.1.0 log; every code is a rule of the `faultline` driver, and the help\n  \
         line is part of each result's message. The run declares `columnKind` `utf16CodeUnits`\n  \
         (SARIF's default): `startColumn`, `endColumn` (one past the region), `charOffset` and\n  \
         `charLength` all count UTF-16 code units, so a character outside the Basic Multilingual\n  \
         Plane, such as an emoji, counts two.\n\
         - `github`: one GitHub Actions workflow command per diagnostic, so that findings appear as\n  \
         annotations on a pull request; `line`, `col`, `endLine` and `endColumn` are those of the\n  \
         JSON format's `start` and `end` (columns in characters).\n\n\
         ## Codes\n\n\
         | Code | Name | Severity | Title |\n|---|---|---|---|\n",
    );
    for code in Code::ALL {
        out.push_str(&format!(
            "| [{code}](#{lower}) | `{slug}` | {severity} | {title} |\n",
            code = code.as_str(),
            lower = code.as_str().to_ascii_lowercase(),
            slug = code.slug(),
            severity = code.severity().as_str(),
            title = code.title(),
        ));
    }
    for code in Code::ALL {
        out.push_str(&format!(
            "\n### {code}\n\n`{slug}` ({severity}): {title}.\n\n{doc}\n",
            code = code.as_str(),
            slug = code.slug(),
            severity = code.severity().as_str(),
            title = code.title(),
            doc = code.doc(),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_numbers_and_slugs_are_unique_and_ordered() {
        let mut numbers = HashSet::new();
        let mut slugs = HashSet::new();
        for window in Code::ALL.windows(2) {
            assert!(
                window[0].as_str() < window[1].as_str(),
                "codes out of order at {}",
                window[1]
            );
        }
        for code in Code::ALL {
            assert!(numbers.insert(code.as_str()), "{code} declared twice");
            assert!(slugs.insert(code.slug()), "slug {} used twice", code.slug());
            assert!(code.as_str().len() == 6 && code.as_str().starts_with("FL"));
        }
    }

    #[test]
    fn every_code_has_a_doc_entry_with_a_fix() {
        for code in Code::ALL {
            let doc = code.doc();
            assert!(doc.len() > 40, "{code} has no real documentation");
            assert!(
                doc.contains("Fix:"),
                "{code}'s documentation does not say how to fix it"
            );
        }
    }

    #[test]
    fn codes_parse_by_number_and_slug() {
        assert_eq!(Code::parse("fl0010"), Some(Code::DuplicateRuleId));
        assert_eq!(
            Code::parse("duplicate-rule-id"),
            Some(Code::DuplicateRuleId)
        );
        assert_eq!(Code::parse("FL9999"), None);
    }

    #[test]
    #[expect(
        clippy::disallowed_methods,
        reason = "this test compares, and on request regenerates, the committed documentation"
    )]
    fn docs_diagnostics_md_is_generated_from_the_registry() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/diagnostics.md");
        let expected = registry_markdown();
        if std::env::var_os("FAULTLINE_BLESS").is_some() {
            std::fs::write(&path, &expected).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == expected,
            "docs/diagnostics.md is out of date: run `FAULTLINE_BLESS=1 cargo test -p faultline-dsl`"
        );
    }
}
