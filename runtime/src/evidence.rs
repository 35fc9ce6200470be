//! The classifier's input and output, as orchestrators exchange them. JSON field names are
//! stable: they are the names `.rules` files use for evidence fields.

use serde::{Deserialize, Serialize};

use crate::structured::{Body, Headers};
use crate::text::Unwrapping;
use crate::vocab::{Class, Confidence, Phase, Scope, Source};

/// Everything the classifier may look at for one failure. Every field is optional.
///
/// Build one with [`Evidence::new`] and the `with_*` setters, or read one from JSON; the fields
/// are public to read and to assign. It is `#[non_exhaustive]`: a field added later (more
/// structured evidence) breaks no caller.
///
/// ```
/// use faultline_runtime::{Evidence, Phase};
///
/// let evidence = Evidence::new()
///     .with_phase(Phase::Streaming)
///     .with_provider_id("claude-acp")
///     .with_stderr("API Error: 529 Overloaded");
/// assert_eq!(evidence.http_status, None);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Evidence {
    /// The lifecycle phase the failure happened in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// The agent adapter's id, such as `claude-acp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_id: Option<String>,
    /// The channel the evidence arrived on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// The agent process's exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The HTTP status of the failed provider call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// A structured reset time (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset_hint: Option<String>,
    /// The agent's standard error text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr: Option<String>,
    /// The agent's standard output text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout: Option<String>,
    /// The trusted npm package spec of a managed agent runtime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_runtime_package_spec: Option<String>,
    /// The provider's HTTP response headers, bounded and without credentials ([`Headers`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<Headers>,
    /// The provider's error body, a JSON value or text ([`Body`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Body>,
}

impl Evidence {
    /// Evidence with no field set.
    pub fn new() -> Evidence {
        Evidence::default()
    }

    /// Sets the lifecycle phase.
    #[must_use]
    pub fn with_phase(mut self, phase: Phase) -> Evidence {
        self.phase = Some(phase);
        self
    }

    /// Sets the agent adapter's id.
    #[must_use]
    pub fn with_provider_id(mut self, provider_id: impl Into<String>) -> Evidence {
        self.provider_id = Some(provider_id.into());
        self
    }

    /// Sets the channel the evidence arrived on.
    #[must_use]
    pub fn with_source(mut self, source: Source) -> Evidence {
        self.source = Some(source);
        self
    }

    /// Sets the agent process's exit code.
    #[must_use]
    pub fn with_exit_code(mut self, exit_code: i32) -> Evidence {
        self.exit_code = Some(exit_code);
        self
    }

    /// Sets the HTTP status of the failed provider call.
    #[must_use]
    pub fn with_http_status(mut self, http_status: u16) -> Evidence {
        self.http_status = Some(http_status);
        self
    }

    /// Sets the structured reset time (RFC 3339).
    #[must_use]
    pub fn with_reset_hint(mut self, reset_hint: impl Into<String>) -> Evidence {
        self.reset_hint = Some(reset_hint.into());
        self
    }

    /// Sets the agent's standard error text.
    #[must_use]
    pub fn with_stderr(mut self, stderr: impl Into<String>) -> Evidence {
        self.stderr = Some(stderr.into());
        self
    }

    /// Sets the agent's standard output text.
    #[must_use]
    pub fn with_stdout(mut self, stdout: impl Into<String>) -> Evidence {
        self.stdout = Some(stdout.into());
        self
    }

    /// Sets the trusted npm package spec of a managed agent runtime.
    #[must_use]
    pub fn with_managed_runtime_package_spec(mut self, spec: impl Into<String>) -> Evidence {
        self.managed_runtime_package_spec = Some(spec.into());
        self
    }

    /// Adds a response header as ingestion does ([`Headers::insert`]): one that names or
    /// carries a credential, or is out of bounds, is dropped.
    #[must_use]
    pub fn with_header(mut self, name: &str, value: &str) -> Evidence {
        self.headers
            .get_or_insert_with(Headers::new)
            .insert(name, value);
        self
    }

    /// Sets the response headers.
    #[must_use]
    pub fn with_headers(mut self, headers: Headers) -> Evidence {
        self.headers = Some(headers);
        self
    }

    /// Sets the provider's error body.
    #[must_use]
    pub fn with_body(mut self, body: Body) -> Evidence {
        self.body = Some(body);
        self
    }

    /// The value of a response header, by name in any case.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.as_ref().and_then(|headers| headers.get(name))
    }

    /// Whether the text may hold a pretty-printed JSON value ([`Unwrapping::CompactJson`]):
    /// cheap, and never `false` when that reading exists.
    pub(crate) fn may_hold_pretty_json(&self) -> bool {
        let holds = |field: &Option<String>| {
            field
                .as_deref()
                .is_some_and(crate::text::may_hold_pretty_json)
        };
        self.text_len() <= crate::MAX_MATCHED_BYTES && (holds(&self.stderr) || holds(&self.stdout))
    }

    /// Whether a reading that rewrites text ([`Unwrapping::JsonLogMessage`],
    /// [`Unwrapping::CompactJson`]) may exist for this evidence.
    pub(crate) fn may_be_rewritten(&self) -> bool {
        self.may_hold_json_log() || self.may_hold_pretty_json()
    }

    /// Whether a line of the text may be a structured log record ([`Unwrapping::JsonLogMessage`]):
    /// cheap, and never `false` when that reading exists.
    pub(crate) fn may_hold_json_log(&self) -> bool {
        let holds =
            |field: &Option<String>| field.as_deref().is_some_and(crate::text::may_hold_json_log);
        self.text_len() <= crate::MAX_MATCHED_BYTES && (holds(&self.stderr) || holds(&self.stdout))
    }

    /// This evidence with its text read again under `unwrapping`: each line of `stderr` and
    /// `stdout`, as a terminal shows it, without the wrapping a logger, a quoting user or an HTTP
    /// client put around it (an agent's terminal marks, a timestamp and level, a component's tag, a program's name, a blockquote marker,
    /// enclosing quotes, a trailing request id; see [`Unwrapping`]). `None` when no line carries such wrapping, when the text is longer than
    /// the text rules read ([`crate::MAX_MATCHED_BYTES`]), or, for
    /// [`Unwrapping::LogWrappingAndErrorLabel`], when no line holds an `Error:` label, and for
    /// [`Unwrapping::LogWrappingAndFullStop`], when the text cannot end with a full stop (the
    /// reading would be the first one again), for [`Unwrapping::JsonLogMessage`], when no
    /// line is a structured log record, and for [`Unwrapping::CompactJson`], when the text
    /// holds no pretty-printed JSON value. Classification reads it when the
    /// text as given falls to a low-confidence rule ([`crate::Bundle::classify`]).
    pub fn unwrapped(&self, unwrapping: Unwrapping) -> Option<Evidence> {
        if self.text_len() > crate::MAX_MATCHED_BYTES {
            return None;
        }
        let holds =
            |field: &Option<String>, look: fn(&str) -> bool| field.as_deref().is_some_and(look);
        if unwrapping == Unwrapping::LogWrappingAndErrorLabel
            && !holds(&self.stderr, crate::text::may_hold_error_label)
            && !holds(&self.stdout, crate::text::may_hold_error_label)
        {
            // No line can open with a label: the reading would be the first one again.
            return None;
        }
        if unwrapping == Unwrapping::JsonLogMessage && !self.may_hold_json_log() {
            return None;
        }
        if unwrapping == Unwrapping::CompactJson && !self.may_hold_pretty_json() {
            return None;
        }
        if unwrapping == Unwrapping::LogWrappingAndFullStop
            && !holds(&self.stderr, crate::text::may_hold_closing_full_stop)
            && !holds(&self.stdout, crate::text::may_hold_closing_full_stop)
        {
            // The text cannot end with a full stop: the reading would be the first one again.
            return None;
        }
        let read = |field: &Option<String>| {
            field
                .as_deref()
                .and_then(|text| crate::text::unwrapped(&crate::text::shown(text), unwrapping))
        };
        let (stderr, stdout) = (read(&self.stderr), read(&self.stdout));
        if stderr.is_none() && stdout.is_none() {
            return None;
        }
        // Every field but the text, as it is (the text is not copied twice).
        Some(Evidence {
            phase: self.phase,
            provider_id: self.provider_id.clone(),
            source: self.source,
            exit_code: self.exit_code,
            http_status: self.http_status,
            reset_hint: self.reset_hint.clone(),
            stderr: stderr.or_else(|| self.stderr.clone()),
            stdout: stdout.or_else(|| self.stdout.clone()),
            managed_runtime_package_spec: self.managed_runtime_package_spec.clone(),
            headers: self.headers.clone(),
            body: self.body.clone(),
        })
    }

    /// [`Evidence::raw_text`], borrowed when only one stream has text.
    pub(crate) fn raw_text_view(&self) -> std::borrow::Cow<'_, str> {
        let stderr = self.stderr.as_deref().unwrap_or("");
        let stdout = self.stdout.as_deref().unwrap_or("");
        match (stderr.is_empty(), stdout.is_empty()) {
            (_, true) => std::borrow::Cow::Borrowed(stderr),
            (true, false) => std::borrow::Cow::Borrowed(stdout),
            (false, false) => std::borrow::Cow::Owned(format!("{stderr}\n{stdout}")),
        }
    }

    /// The length of [`Evidence::raw_text`], without building it.
    pub(crate) fn text_len(&self) -> usize {
        let stderr = self.stderr.as_deref().unwrap_or("");
        let stdout = self.stdout.as_deref().unwrap_or("");
        let join = usize::from(!stderr.is_empty() && !stdout.is_empty());
        stderr.len() + join + stdout.len()
    }

    /// The last `keep` bytes of [`Evidence::raw_text`] (fewer when that would cut a character),
    /// copying no more than that: borrowed when they lie in one stream.
    pub(crate) fn text_tail(&self, keep: usize) -> std::borrow::Cow<'_, str> {
        let tail = |text: &'_ str, keep: usize| -> usize {
            crate::text::ceil_boundary(text, text.len().saturating_sub(keep))
        };
        let stderr = self.stderr.as_deref().unwrap_or("");
        let stdout = self.stdout.as_deref().unwrap_or("");
        match (stderr.is_empty(), stdout.is_empty()) {
            (_, true) => std::borrow::Cow::Borrowed(stderr.get(tail(stderr, keep)..).unwrap_or("")),
            (true, false) => {
                std::borrow::Cow::Borrowed(stdout.get(tail(stdout, keep)..).unwrap_or(""))
            }
            (false, false) if stdout.len() >= keep => {
                std::borrow::Cow::Borrowed(stdout.get(tail(stdout, keep)..).unwrap_or(""))
            }
            (false, false) => {
                let from_stderr = keep - stdout.len() - 1;
                let head = stderr.get(tail(stderr, from_stderr)..).unwrap_or("");
                std::borrow::Cow::Owned(format!("{head}\n{stdout}"))
            }
        }
    }

    /// The raw text rules read: standard error and standard output, joined by a line break when
    /// both are non-empty. Rules match at most its tail ([`crate::text::TextViews`]).
    pub fn raw_text(&self) -> String {
        let stderr = self.stderr.as_deref().unwrap_or("");
        let stdout = self.stdout.as_deref().unwrap_or("");
        match (stderr.is_empty(), stdout.is_empty()) {
            (_, true) => stderr.to_owned(),
            (true, false) => stdout.to_owned(),
            (false, false) => format!("{stderr}\n{stdout}"),
        }
    }
}

/// What the classifier decided. Only a [`crate::Bundle`] makes one (or JSON reads one back);
/// it is `#[non_exhaustive]`, so a field added later breaks no caller.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Classification {
    /// The semantic code.
    pub code: String,
    /// Its policy class.
    pub class: Class,
    /// How sure the winning rule is.
    pub confidence: Confidence,
    /// What the failure affects.
    pub scope: Scope,
    /// The id of the winning rule.
    pub rule: String,
    /// The catalogue version that decided.
    pub catalogue_version: String,
    /// Whether the code's policy allows an automatic retry.
    pub auto_retryable: bool,
    /// Whether the code's policy allows falling back to another provider.
    pub fallback_allowed: bool,
    /// Whether a person must act (log in, pay, configure) before a retry can succeed.
    pub user_action: bool,
    /// When the limit resets (RFC 3339, UTC): the evidence's structured reset time, or one read
    /// from the text by the winning rule's timing extractors; validated to lie after the
    /// classification's clock and at most eight years ahead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset_hint: Option<String>,
    /// Whole seconds from the classification's clock until `reset_hint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
    /// The sanitized, bounded excerpt of the evidence text.
    pub excerpt: String,
    /// A remediation token or captured value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediation: Option<String>,
}
