//! The `policy` block: the catalogue's recovery policy (reference §F), checked setting by
//! setting against the ranges and consistency rules of §F.1, and built into the runtime's
//! [`RecoveryPolicy`]. Sections the block leaves out (the ladder, the decision table, the
//! labels) keep the reference's defaults; both class policies are required.

use std::collections::HashMap;
use std::ops::RangeInclusive;
use std::sync::Arc;

use faultline_dsl::ast::{PolicyBlock, Setting, SettingValue, Value};
use faultline_dsl::{Code, Diagnostic, LoadedCatalogue, SourceFile, Span};
use faultline_runtime::{
    Class, ClassPolicy, CodePolicy, Confidence, DecisionContext, DecisionOutcome, DecisionRow,
    INITIAL_INTERVAL_RANGE, LADDER_ATTEMPTS_RANGE, LADDER_STEP_RANGE, LADDER_STEPS_RANGE,
    MAX_LABEL_BYTES, MAX_RETRIES_RANGE, MAX_WAIT_RANGE, NoticeLabel, OnExhausted,
    RESET_WITHIN_RANGE, RETRY_OFF, RecoveryPolicy, ResetWaitSection, RetryLadder, RetrySection,
    WAIT_OFF,
};

use super::Checker;
use crate::ir::CodeDef;
use crate::suggest;

const TOP: &[&str] = &["class", "code", "ladder", "decisions", "labels"];
const CLASS_POLICY: &[&str] = &["retry", "wait_for_reset", "on_exhausted"];
const RETRY: &[&str] = &["max", "initial"];
const WAIT: &[&str] = &["max"];
const LADDER: &[&str] = &["steps", "attempts", "reset_within"];
const ROW: &[&str] = &["context", "codes", "confidence", "reset_within"];

/// One file's view for diagnostics.
struct At<'f> {
    file: &'f Arc<SourceFile>,
}

fn u32_range(range: &RangeInclusive<u32>) -> RangeInclusive<u64> {
    u64::from(*range.start())..=u64::from(*range.end())
}

fn seconds_text(seconds: u64) -> String {
    match seconds {
        0 => "0s".to_owned(),
        s if s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

impl Checker<'_> {
    /// Checks the catalogue's `policy` block, if it has one. `None` when there is none or it has
    /// errors (the errors are reported).
    pub(super) fn policy(
        &mut self,
        loaded: &LoadedCatalogue,
        codes: &[CodeDef],
    ) -> Option<RecoveryPolicy> {
        let mut blocks = loaded.files.iter().flat_map(|file| {
            file.syntax.items.iter().filter_map(move |item| match item {
                faultline_dsl::ast::Item::Policy(block) => Some((&file.source, block)),
                _ => None,
            })
        });
        let (file, block) = blocks.next()?;
        for (again_file, again) in blocks {
            self.push(
                Diagnostic::new(
                    Code::DuplicatePolicy,
                    "the catalogue has two `policy` blocks",
                )
                .primary(again_file, again.keyword, "second policy")
                .secondary(file, block.keyword, "first policy")
                .help("one catalogue has one recovery policy: merge the blocks"),
            );
        }
        let errors_before = self.diagnostics.iter().filter(|d| d.is_error()).count();
        let policy = self.policy_block(&At { file }, block, codes);
        let errors_after = self.diagnostics.iter().filter(|d| d.is_error()).count();
        (errors_after == errors_before).then_some(policy)
    }

    fn policy_block(
        &mut self,
        at: &At<'_>,
        block: &PolicyBlock,
        codes: &[CodeDef],
    ) -> RecoveryPolicy {
        let mut policy = RecoveryPolicy::reference();
        let declared: Vec<&str> = codes.iter().map(|code| code.name.as_str()).collect();
        let settings = self.section(at, "policy", &block.settings, TOP, &["class", "code"]);
        let mut classes: HashMap<Class, &Setting> = HashMap::new();
        let mut code_policies: Vec<(&Setting, CodePolicy)> = Vec::new();
        for setting in &block.settings {
            match setting.name.value.as_str() {
                "class" => {
                    let Some(name) =
                        self.ident(at, setting, "a class name (`transient` or `hard`)")
                    else {
                        continue;
                    };
                    let class = match Class::from_name(&name.0) {
                        Some(class @ (Class::Transient | Class::Hard)) => class,
                        _ => {
                            let help = if name.0 == "unclassified" {
                                "`unclassified` never has a policy: an unclassified failure always stops for manual recovery".to_owned()
                            } else {
                                suggest::help(&name.0, "policy class", ["transient", "hard"])
                            };
                            self.push(
                                Diagnostic::new(
                                    Code::UnknownPolicyClass,
                                    format!("`{}` is not a class with a policy", name.0),
                                )
                                .primary(at.file, name.1, "no policy for this class")
                                .help(help),
                            );
                            continue;
                        }
                    };
                    if let Some(first) = classes.get(&class) {
                        self.push(
                            Diagnostic::new(
                                Code::DuplicateClassPolicy,
                                format!("two policies for class `{class}`"),
                            )
                            .primary(at.file, name.1, "second policy")
                            .secondary(at.file, first.name.span, "first policy")
                            .help("merge the two into one `class` section"),
                        );
                        continue;
                    }
                    classes.insert(class, setting);
                    let parsed = self.class_policy(at, setting);
                    match class {
                        Class::Transient => policy.transient = parsed,
                        _ => policy.hard = parsed,
                    }
                }
                "code" => {
                    let Some(name) = self.ident(at, setting, "a code name") else {
                        continue;
                    };
                    if !declared.contains(&name.0.as_str()) {
                        self.unknown_code(at, &name.0, name.1, &declared);
                        continue;
                    }
                    if let Some((first, _)) =
                        code_policies.iter().find(|(_, entry)| entry.code == name.0)
                    {
                        self.push(
                            Diagnostic::new(
                                Code::DuplicateClassPolicy,
                                format!("two policies for code `{}`", name.0),
                            )
                            .primary(at.file, name.1, "second policy")
                            .secondary(at.file, first.name.span, "first policy")
                            .help("merge the two into one `code` section"),
                        );
                        continue;
                    }
                    let parsed = self.class_policy(at, setting);
                    code_policies.push((
                        setting,
                        CodePolicy {
                            code: name.0,
                            policy: parsed,
                        },
                    ));
                }
                _ => {}
            }
        }
        policy.codes = code_policies.into_iter().map(|(_, entry)| entry).collect();
        for (class, example) in [(Class::Transient, "transient"), (Class::Hard, "hard")] {
            if !classes.contains_key(&class) {
                self.push(
                    Diagnostic::new(
                        Code::IncompleteClassCoverage,
                        format!("the policy has no policy for class `{class}`"),
                    )
                    .primary(at.file, block.keyword, format!("no `class {example}`"))
                    .help(format!(
                        "add `class {example} {{ retry off, wait_for_reset off, on_exhausted skip }}` (the reference's default) or the policy you want"
                    )),
                );
            }
        }
        if let Some(ladder) = settings.get("ladder") {
            policy.ladder = self.ladder(at, ladder);
        }
        if let Some(decisions) = settings.get("decisions") {
            policy.decisions = self.decisions(at, decisions, &declared);
        }
        if let Some(labels) = settings.get("labels") {
            let (labels, otherwise) = self.labels(at, labels, &declared);
            policy.labels = labels;
            if let Some(otherwise) = otherwise {
                policy.default_label = otherwise;
            }
        }
        policy
    }

    /// Reports unknown and repeated settings of one section; returns the first of each name
    /// (`repeatable` names may appear more than once).
    fn section<'s>(
        &mut self,
        at: &At<'_>,
        what: &str,
        settings: &'s [Setting],
        known: &[&'static str],
        repeatable: &[&str],
    ) -> HashMap<&'s str, &'s Setting> {
        let mut seen: HashMap<&str, &Setting> = HashMap::new();
        for setting in settings {
            let name = setting.name.value.as_str();
            if !known.contains(&name) {
                self.push(
                    Diagnostic::new(
                        Code::UnknownPolicySetting,
                        format!("`{name}` is not a setting of `{what}`"),
                    )
                    .primary(at.file, setting.name.span, "unknown setting")
                    .help(suggest::help(
                        name,
                        "setting",
                        known.iter().copied(),
                    )),
                );
                continue;
            }
            if let Some(first) = seen.get(name) {
                if !repeatable.contains(&name) {
                    self.push(
                        Diagnostic::new(
                            Code::DuplicatePolicySetting,
                            format!("`{name}` is set twice in `{what}`"),
                        )
                        .primary(at.file, setting.name.span, "second setting")
                        .secondary(at.file, first.name.span, "first setting")
                        .help(format!("`{what}` sets `{name}` once; keep one")),
                    );
                }
                continue;
            }
            seen.insert(name, setting);
        }
        seen
    }

    fn kind(&mut self, at: &At<'_>, span: Span, found: &str, expected: &str, example: &str) {
        self.push(
            Diagnostic::new(
                Code::PolicyValueKind,
                format!("expected {expected}, found {found}"),
            )
            .primary(at.file, span, format!("expected {expected}"))
            .help(format!("write {expected}, e.g. `{example}`")),
        );
    }

    fn missing(&mut self, at: &At<'_>, span: Span, what: &str, name: &str, example: &str) {
        self.push(
            Diagnostic::new(
                Code::MissingPolicySetting,
                format!("`{what}` has no `{name}`"),
            )
            .primary(at.file, span, format!("missing `{name}`"))
            .help(format!("add `{example}`")),
        );
    }

    fn out_of_range(&mut self, at: &At<'_>, span: Span, what: &str, value: &str, range: &str) {
        self.push(
            Diagnostic::new(
                Code::PolicyOutOfRange,
                format!("{what} {value} is outside {range}"),
            )
            .primary(at.file, span, format!("allowed: {range}"))
            .help(format!(
                "choose {what} in {range} (reference §F.1; docs/policy.md)"
            )),
        );
    }

    fn unknown_code(&mut self, at: &At<'_>, name: &str, span: Span, declared: &[&str]) {
        self.push(
            Diagnostic::new(
                Code::UnknownPolicyCode,
                format!("the policy names code `{name}`, which is not declared"),
            )
            .primary(at.file, span, "not a declared code")
            .help(suggest::help(name, "code", declared.iter().copied())),
        );
    }

    fn unknown_name(&mut self, at: &At<'_>, span: Span, name: &str, kind: &str, names: &[&str]) {
        self.push(
            Diagnostic::new(Code::UnknownPolicyName, format!("unknown {kind} `{name}`"))
                .primary(at.file, span, format!("not a {kind}"))
                .help(suggest::help(name, kind, names.iter().copied())),
        );
    }

    /// The setting's value as a name, and its span.
    fn ident(&mut self, at: &At<'_>, setting: &Setting, expected: &str) -> Option<(String, Span)> {
        match &setting.value {
            Some(SettingValue::Value(Value::Ident(name))) => Some((name.value.clone(), name.span)),
            Some(other) => {
                self.kind(at, other.span(), other.kind_name(), expected, "skip");
                None
            }
            None => {
                self.kind(
                    at,
                    setting.name.span,
                    "nothing",
                    expected,
                    &format!("{} <name>", setting.name.value),
                );
                None
            }
        }
    }

    fn seconds(&mut self, at: &At<'_>, setting: &Setting) -> Option<(u64, Span)> {
        match &setting.value {
            Some(SettingValue::Duration(duration)) => Some((duration.seconds?, duration.span)),
            Some(other) => {
                let example = match other {
                    SettingValue::Value(Value::Int(int)) => {
                        format!("{}s", at.file.slice(int.span))
                    }
                    _ => "5s".to_owned(),
                };
                self.kind(at, other.span(), other.kind_name(), "a duration", &example);
                None
            }
            None => {
                self.kind(at, setting.name.span, "nothing", "a duration", "5s");
                None
            }
        }
    }

    fn number(&mut self, at: &At<'_>, setting: &Setting) -> Option<(u64, Span)> {
        match &setting.value {
            Some(SettingValue::Value(Value::Int(int))) => {
                let value = int.value?;
                match u64::try_from(value) {
                    Ok(value) => Some((value, int.span)),
                    Err(_) => {
                        self.out_of_range(
                            at,
                            int.span,
                            &setting.name.value,
                            &value.to_string(),
                            "0 and above",
                        );
                        None
                    }
                }
            }
            Some(other) => {
                self.kind(at, other.span(), other.kind_name(), "a number", "3");
                None
            }
            None => {
                self.kind(at, setting.name.span, "nothing", "a number", "3");
                None
            }
        }
    }

    /// The body's settings; a value where only a body belongs is reported.
    fn body<'s>(&mut self, at: &At<'_>, setting: &'s Setting, allow_value: bool) -> &'s [Setting] {
        if !allow_value && let Some(value) = &setting.value {
            self.kind(
                at,
                value.span(),
                value.kind_name(),
                "a body `{ … }`",
                &format!("{} {{ … }}", setting.name.value),
            );
        }
        setting
            .body
            .as_ref()
            .map_or(&[][..], |body| body.settings.as_slice())
    }

    fn class_policy(&mut self, at: &At<'_>, setting: &Setting) -> ClassPolicy {
        let mut policy = ClassPolicy::DEFAULT;
        let what = format!(
            "{} {}",
            setting.name.value,
            setting
                .value
                .as_ref()
                .map(|value| at.file.slice(value.span()).to_owned())
                .unwrap_or_default()
        );
        let Some(body) = &setting.body else {
            self.kind(
                at,
                setting.name.span,
                "no body",
                "a body `{ … }`",
                &format!("{what} {{ on_exhausted skip }}"),
            );
            return policy;
        };
        let settings = self.section(at, &what, &body.settings, CLASS_POLICY, &[]);
        if let Some(retry) = settings.get("retry") {
            policy.retry = self.retry(at, retry);
        }
        if let Some(wait) = settings.get("wait_for_reset") {
            policy.wait_for_reset = self.reset_wait(at, wait);
        }
        match settings.get("on_exhausted") {
            Some(on_exhausted) => {
                if let Some((name, span)) = self.ident(at, on_exhausted, "`skip` or `stop`") {
                    match OnExhausted::from_name(&name) {
                        Some(action) => policy.on_exhausted = action,
                        None => self.unknown_name(
                            at,
                            span,
                            &name,
                            "exhaustion action",
                            &["skip", "stop"],
                        ),
                    }
                }
            }
            None => self.missing(
                at,
                setting.name.span,
                &what,
                "on_exhausted",
                "on_exhausted skip",
            ),
        }
        policy
    }

    /// Whether a section is switched off (`retry off`); reports any other value.
    fn is_off(&mut self, at: &At<'_>, setting: &Setting) -> bool {
        match &setting.value {
            None => false,
            Some(SettingValue::Value(Value::Ident(name))) if name.value == "off" => true,
            Some(SettingValue::Value(Value::Ident(name))) => {
                self.unknown_name(at, name.span, &name.value, "section switch", &["off"]);
                false
            }
            Some(other) => {
                self.kind(
                    at,
                    other.span(),
                    other.kind_name(),
                    "`off` or a body",
                    "retry off",
                );
                false
            }
        }
    }

    /// Reports every non-zero value of a disabled section.
    fn zeros(&mut self, at: &At<'_>, section: &Setting, values: &[(&str, Option<(u64, Span)>)]) {
        for (name, value) in values {
            if let Some((value, span)) = value
                && *value != 0
            {
                self.push(
                    Diagnostic::new(
                        Code::DisabledSectionNotZero,
                        format!(
                            "`{}` is off but stores `{name}` {value}",
                            section.name.value
                        ),
                    )
                    .primary(at.file, *span, "must be zero when the section is off")
                    .secondary(at.file, section.name.span, "this section is off")
                    .help(format!(
                        "drop `off` to enable `{}`, or drop the value (a disabled section stores zeros)",
                        section.name.value
                    )),
                );
            }
        }
    }

    fn retry(&mut self, at: &At<'_>, setting: &Setting) -> RetrySection {
        let off = self.is_off(at, setting);
        let body = self.body(at, setting, true);
        let settings = self.section(at, "retry", body, RETRY, &[]);
        let max = settings.get("max").and_then(|s| self.number(at, s));
        let initial = settings.get("initial").and_then(|s| self.seconds(at, s));
        if off {
            self.zeros(at, setting, &[("max", max), ("initial", initial)]);
            return RETRY_OFF;
        }
        if !settings.contains_key("max") {
            self.missing(at, setting.name.span, "retry", "max", "max 3");
        }
        if !settings.contains_key("initial") {
            self.missing(at, setting.name.span, "retry", "initial", "initial 5s");
        }
        let max = self.ranged(
            at,
            max,
            "`max` retries",
            &u32_range(&MAX_RETRIES_RANGE),
            false,
        );
        let initial = self.ranged(
            at,
            initial,
            "the `initial` interval",
            &u32_range(&INITIAL_INTERVAL_RANGE),
            true,
        );
        RetrySection {
            enabled: true,
            max_retries: max.unwrap_or(1),
            initial_interval_seconds: initial.unwrap_or(1),
        }
    }

    fn reset_wait(&mut self, at: &At<'_>, setting: &Setting) -> ResetWaitSection {
        let off = self.is_off(at, setting);
        let body = self.body(at, setting, true);
        let settings = self.section(at, "wait_for_reset", body, WAIT, &[]);
        let max = settings.get("max").and_then(|s| self.seconds(at, s));
        if off {
            self.zeros(at, setting, &[("max", max)]);
            return WAIT_OFF;
        }
        if !settings.contains_key("max") {
            self.missing(at, setting.name.span, "wait_for_reset", "max", "max 7d");
        }
        let max = self.ranged(
            at,
            max,
            "the maximum wait",
            &u32_range(&MAX_WAIT_RANGE),
            true,
        );
        ResetWaitSection {
            enabled: true,
            max_wait_seconds: max.unwrap_or(1),
        }
    }

    /// A value in `range` as a `u32`, or a report.
    fn ranged(
        &mut self,
        at: &At<'_>,
        value: Option<(u64, Span)>,
        what: &str,
        range: &RangeInclusive<u64>,
        duration: bool,
    ) -> Option<u32> {
        let (value, span) = value?;
        if range.contains(&value) {
            return u32::try_from(value).ok();
        }
        let show = |seconds: u64| {
            if duration {
                seconds_text(seconds)
            } else {
                seconds.to_string()
            }
        };
        let range_text = format!("{}–{}", show(*range.start()), show(*range.end()));
        self.out_of_range(at, span, what, &show(value), &range_text);
        None
    }

    fn ladder(&mut self, at: &At<'_>, setting: &Setting) -> RetryLadder {
        let mut ladder = RecoveryPolicy::reference().ladder;
        let body = self.body(at, setting, false);
        let settings = self.section(at, "ladder", body, LADDER, &[]);
        for (name, example) in [
            ("steps", "steps [5s, 10s, 20s, 40s, 60s]"),
            ("attempts", "attempts 5"),
            ("reset_within", "reset_within 1m"),
        ] {
            if !settings.contains_key(name) {
                self.missing(at, setting.name.span, "ladder", name, example);
            }
        }
        if let Some(steps) = settings.get("steps") {
            match &steps.value {
                Some(SettingValue::List { span, items }) => {
                    let mut seconds = Vec::new();
                    for item in items {
                        let value = match item {
                            SettingValue::Duration(duration) => {
                                duration.seconds.map(|s| (s, duration.span))
                            }
                            other => {
                                self.kind(at, other.span(), other.kind_name(), "a duration", "5s");
                                None
                            }
                        };
                        if let Some(step) = self.ranged(
                            at,
                            value,
                            "a ladder step",
                            &u32_range(&LADDER_STEP_RANGE),
                            true,
                        ) {
                            seconds.push(step);
                        }
                    }
                    if !LADDER_STEPS_RANGE.contains(&items.len()) {
                        self.out_of_range(
                            at,
                            *span,
                            "the number of ladder steps",
                            &items.len().to_string(),
                            &format!(
                                "{}–{}",
                                LADDER_STEPS_RANGE.start(),
                                LADDER_STEPS_RANGE.end()
                            ),
                        );
                    }
                    ladder.steps_seconds = seconds;
                }
                Some(other) => {
                    self.kind(
                        at,
                        other.span(),
                        other.kind_name(),
                        "a list of durations",
                        "[5s, 10s]",
                    );
                }
                None => self.kind(
                    at,
                    steps.name.span,
                    "nothing",
                    "a list of durations",
                    "steps [5s, 10s]",
                ),
            }
        }
        if let Some(attempts) = settings.get("attempts") {
            let value = self.number(at, attempts);
            if let Some(value) = self.ranged(
                at,
                value,
                "the ladder's `attempts`",
                &u32_range(&LADDER_ATTEMPTS_RANGE),
                false,
            ) {
                ladder.max_attempts = value;
            }
        }
        if let Some(within) = settings.get("reset_within") {
            let value = self.seconds(at, within);
            if let Some(value) = self.ranged(
                at,
                value,
                "`reset_within`",
                &u32_range(&RESET_WITHIN_RANGE),
                true,
            ) {
                ladder.reset_within_seconds = value;
            }
        }
        ladder
    }

    fn decisions(&mut self, at: &At<'_>, setting: &Setting, declared: &[&str]) -> Vec<DecisionRow> {
        let body = self.body(at, setting, false);
        let mut rows: Vec<(Span, DecisionRow)> = Vec::new();
        for row_setting in body {
            let name = &row_setting.name;
            let Some(outcome) = DecisionOutcome::from_name(&name.value) else {
                self.push(
                    Diagnostic::new(
                        Code::UnknownOutcome,
                        format!("unknown decision outcome `{}`", name.value),
                    )
                    .primary(at.file, name.span, "not an outcome")
                    .help(suggest::help(
                        &name.value,
                        "outcome",
                        DecisionOutcome::names().collect::<Vec<_>>(),
                    )),
                );
                continue;
            };
            let row_body = self.body(at, row_setting, false);
            let settings = self.section(at, &name.value, row_body, ROW, &[]);
            let mut row = DecisionRow {
                context: None,
                codes: Vec::new(),
                confidences: Vec::new(),
                reset_within_seconds: None,
                outcome,
            };
            if let Some(context) = settings.get("context")
                && let Some((context, span)) = self.ident(at, context, "`kanban` or `office`")
            {
                match DecisionContext::from_name(&context) {
                    Some(context) => row.context = Some(context),
                    None => self.unknown_name(
                        at,
                        span,
                        &context,
                        "decision context",
                        &DecisionContext::names().collect::<Vec<_>>(),
                    ),
                }
            }
            if let Some(codes) = settings.get("codes") {
                for (code, span) in self.names(at, codes) {
                    if declared.contains(&code.as_str()) {
                        row.codes.push(code);
                    } else {
                        self.unknown_code(at, &code, span, declared);
                    }
                }
            }
            if let Some(confidences) = settings.get("confidence") {
                for (name, span) in self.names(at, confidences) {
                    match Confidence::from_name(&name) {
                        Some(confidence) => row.confidences.push(confidence),
                        None => self.unknown_name(
                            at,
                            span,
                            &name,
                            "confidence",
                            &Confidence::names().collect::<Vec<_>>(),
                        ),
                    }
                }
            }
            if let Some(within) = settings.get("reset_within") {
                let value = self.seconds(at, within);
                row.reset_within_seconds = self.ranged(
                    at,
                    value,
                    "`reset_within`",
                    &u32_range(&RESET_WITHIN_RANGE),
                    true,
                );
            }
            if let Some((earlier, _)) = rows.iter().find(|(_, earlier)| covers(earlier, &row)) {
                self.push(
                    Diagnostic::new(
                        Code::UnreachableDecision,
                        format!("this `{}` row can never apply", name.value),
                    )
                    .primary(at.file, name.span, "never reached")
                    .secondary(at.file, *earlier, "this earlier row applies first")
                    .help("the first row that applies decides: move this row above the one that covers it, or delete it"),
                );
            }
            rows.push((name.span, row));
        }
        rows.into_iter().map(|(_, row)| row).collect()
    }

    /// The names of a list value (`[a, b]`); other items are reported.
    fn names(&mut self, at: &At<'_>, setting: &Setting) -> Vec<(String, Span)> {
        match &setting.value {
            Some(SettingValue::List { items, .. }) => items
                .iter()
                .filter_map(|item| match item {
                    SettingValue::Value(Value::Ident(name)) => {
                        Some((name.value.clone(), name.span))
                    }
                    other => {
                        self.kind(
                            at,
                            other.span(),
                            other.kind_name(),
                            "a name",
                            "rate_limited",
                        );
                        None
                    }
                })
                .collect(),
            Some(other) => {
                self.kind(
                    at,
                    other.span(),
                    other.kind_name(),
                    "a list of names",
                    "[rate_limited]",
                );
                Vec::new()
            }
            None => {
                self.kind(
                    at,
                    setting.name.span,
                    "nothing",
                    "a list of names",
                    "[rate_limited]",
                );
                Vec::new()
            }
        }
    }

    fn labels(
        &mut self,
        at: &At<'_>,
        setting: &Setting,
        declared: &[&str],
    ) -> (Vec<NoticeLabel>, Option<String>) {
        let body = self.body(at, setting, false);
        let mut labels: Vec<(Span, NoticeLabel)> = Vec::new();
        let mut otherwise: Option<(Span, String)> = None;
        for entry in body {
            let name = &entry.name;
            let text = match &entry.value {
                Some(SettingValue::Value(Value::Str(text))) => {
                    let value = &text.value;
                    if value.trim().is_empty()
                        || value.len() > MAX_LABEL_BYTES
                        || value.chars().any(char::is_control)
                    {
                        self.out_of_range(
                            at,
                            text.span,
                            "a label of",
                            &format!("{} bytes", value.len()),
                            &format!("1–{MAX_LABEL_BYTES} bytes on one line"),
                        );
                        continue;
                    }
                    value.clone()
                }
                Some(other) => {
                    self.kind(
                        at,
                        other.span(),
                        other.kind_name(),
                        "a string",
                        "\"Rate limited\"",
                    );
                    continue;
                }
                None => {
                    self.kind(
                        at,
                        name.span,
                        "nothing",
                        "a string",
                        "rate_limited \"Rate limited\"",
                    );
                    continue;
                }
            };
            let first = if name.value == "otherwise" {
                otherwise.as_ref().map(|(span, _)| *span)
            } else {
                labels
                    .iter()
                    .find(|(_, label)| label.code == name.value)
                    .map(|(span, _)| *span)
            };
            if let Some(first) = first {
                self.push(
                    Diagnostic::new(
                        Code::DuplicatePolicySetting,
                        format!("`{}` has two labels", name.value),
                    )
                    .primary(at.file, name.span, "second label")
                    .secondary(at.file, first, "first label")
                    .help("a code has one label; keep one"),
                );
                continue;
            }
            if name.value == "otherwise" {
                otherwise = Some((name.span, text));
            } else if declared.contains(&name.value.as_str()) {
                labels.push((
                    name.span,
                    NoticeLabel {
                        code: name.value.clone(),
                        label: text,
                    },
                ));
            } else {
                self.unknown_code(at, &name.value, name.span, declared);
            }
        }
        if otherwise.is_none() {
            self.missing(
                at,
                setting.name.span,
                "labels",
                "otherwise",
                "otherwise \"Provider temporarily unavailable\"",
            );
        }
        (
            labels.into_iter().map(|(_, label)| label).collect(),
            otherwise.map(|(_, text)| text),
        )
    }
}

/// Whether every failure `later` applies to, `earlier` applies to as well.
fn covers(earlier: &DecisionRow, later: &DecisionRow) -> bool {
    let context = earlier.context.is_none() || earlier.context == later.context;
    let codes = earlier.codes.is_empty()
        || (!later.codes.is_empty() && later.codes.iter().all(|code| earlier.codes.contains(code)));
    let confidences = earlier.confidences.is_empty()
        || (!later.confidences.is_empty()
            && later
                .confidences
                .iter()
                .all(|confidence| earlier.confidences.contains(confidence)));
    let reset = match (earlier.reset_within_seconds, later.reset_within_seconds) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(outer), Some(inner)) => inner <= outer,
    };
    context && codes && confidences && reset
}
