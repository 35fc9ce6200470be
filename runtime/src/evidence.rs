//! The classifier's input and output, as orchestrators exchange them. JSON field names are
//! stable: they are the names `.rules` files use for evidence fields.

use serde::{Deserialize, Serialize};

use crate::vocab::{Class, Confidence, Phase, Scope, Source};

/// Everything the classifier may look at for one failure. Every field is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
}

impl Evidence {
    /// The raw text rules read: standard error and standard output, joined by a line break when
    /// both are non-empty.
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

/// What the classifier decided.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    /// The code's flags.
    pub auto_retryable: bool,
    /// The code's flags.
    pub fallback_allowed: bool,
    /// The code's flags.
    pub user_action: bool,
    /// The sanitized, bounded excerpt of the evidence text.
    pub excerpt: String,
    /// A remediation token or captured value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediation: Option<String>,
}
