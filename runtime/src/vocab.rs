//! Closed vocabularies shared by evidence, classifications and the catalogue language.
//!
//! Every enum here has a stable snake_case spelling (its serde name and its `.rules` keyword)
//! and a one-line description used in diagnostics and documentation. Adding a variant is a
//! catalogue-format change; renaming one is a breaking change.

use serde::{Deserialize, Serialize};

/// Defines a closed vocabulary: the enum, its spellings, descriptions and the full list.
macro_rules! vocabulary {
    (
        $(#[$meta:meta])*
        $name:ident, $what:literal {
            $( $(#[$vmeta:meta])* $variant:ident = $spelling:literal : $doc:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            $( $(#[$vmeta])* #[doc = $doc] $variant, )+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[ $( $name::$variant, )+ ];
            /// What one value of this vocabulary is called in messages (e.g. "phase").
            pub const KIND: &'static str = $what;

            /// The stable spelling used in `.rules` files, JSON and bundles.
            pub const fn as_str(self) -> &'static str {
                match self { $( $name::$variant => $spelling, )+ }
            }

            /// A one-line description for diagnostics and documentation.
            pub const fn description(self) -> &'static str {
                match self { $( $name::$variant => $doc, )+ }
            }

            /// Looks a value up by its stable spelling.
            pub fn from_name(name: &str) -> Option<Self> {
                match name { $( $spelling => Some($name::$variant), )+ _ => None }
            }

            /// Every stable spelling, in declaration order.
            pub fn names() -> impl Iterator<Item = &'static str> {
                Self::ALL.iter().map(|value| value.as_str())
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

vocabulary! {
    /// The lifecycle phase of the agent invocation in which evidence was observed.
    Phase, "phase" {
        AuthCheck = "auth_check": "checking the agent's credentials, before the process starts",
        ProcessStart = "process_start": "starting the agent process",
        SessionInit = "session_init": "initialising the agent session",
        PromptSend = "prompt_send": "sending a prompt",
        Streaming = "streaming": "streaming the response",
        ToolExecution = "tool_execution": "executing a tool call",
        Shutdown = "shutdown": "shutting the agent down",
    }
}

impl Phase {
    /// Whether the phase comes before the agent process has started serving prompts.
    pub const fn is_pre_start(self) -> bool {
        matches!(
            self,
            Phase::AuthCheck | Phase::ProcessStart | Phase::SessionInit
        )
    }
}

vocabulary! {
    /// The recovery policy class of a semantic code.
    Class, "class" {
        Transient = "transient": "expected to clear by itself; retry or wait may help",
        Hard = "hard": "needs a change (credentials, plan, configuration) before it can succeed",
        Unclassified = "unclassified": "unknown, conflicting or non-provider evidence; always manual recovery",
    }
}

vocabulary! {
    /// How sure a rule is that its signature means its code.
    Confidence, "confidence" {
        High = "high": "a structured value or an exact provider signature",
        Medium = "medium": "a specific phrase that prose may also contain",
        Low = "low": "a fallback; never authorises recovery",
    }
}

vocabulary! {
    /// What a failure affects, and so what a recovery must change to get past it.
    Scope, "scope" {
        Request = "request": "this one request",
        Session = "session": "the agent session or its transport",
        Task = "task": "the task or repository being worked on",
        Model = "model": "the selected model",
        Provider = "provider": "the model provider or gateway as a whole",
        Account = "account": "the account: credentials, plan, quota or rate",
        Host = "host": "the machine the agent runs on: network, installation, caches",
    }
}

vocabulary! {
    /// An invariant flag of a semantic code.
    Flag, "flag" {
        AutoRetryable = "auto_retryable": "an automatic retry may be attempted once recovery evidence allows it",
        FallbackAllowed = "fallback_allowed": "falling back to another candidate is allowed",
        UserAction = "user_action": "the user has to act before the failure can clear",
    }
}

vocabulary! {
    /// The channel a piece of evidence arrived on.
    Source, "source" {
        AcpPromptError = "acp_prompt_error": "the error returned by an ACP `session/prompt` call",
        AcpUpdate = "acp_update": "an ACP `session/update` notification (message or thought chunk)",
        ManagedStderr = "managed_stderr": "a line of the agent process's standard error",
        ProcessExit = "process_exit": "the agent process exited",
        Http = "http": "structured HTTP metadata",
    }
}

vocabulary! {
    /// Which rendering of the evidence text a matcher reads.
    TextView, "text view" {
        Sanitized = "sanitized": "the diagnostic-tier redacted excerpt (at most 4096 bytes)",
        Raw = "raw": "the unredacted text, for rules that need exact paths or package specs",
        Body = "body": "the string values at a JSON Pointer of the error body (`on body \"/error/message\"`)",
    }
}

vocabulary! {
    /// A parser that extracts a reset or retry time from failure text.
    TimingExtractor, "timing extractor" {
        TryAgainAt = "try_again_at": "`try again at Dec 3, 2026 3:09 PM UTC`: an explicit zone is mandatory",
        ResetsClock = "resets_clock": "`resets 3pm (Europe/Paris)`, `Your limit will reset at 7am (Asia/Singapore)`: a clock time in an IANA zone",
        ResetsIn = "resets_in": "`resets in 2h 30m`: a delay",
        RetryAfter = "retry_after": "the `retry-after` header: delta-seconds or an HTTP-date",
        RetryAfterMs = "retry_after_ms": "the `retry-after-ms` (or `x-ms-retry-after-ms`) header: milliseconds",
        RatelimitReset = "ratelimit_reset": "the rate-limit reset headers: Go durations (`x-ratelimit-reset-tokens: 6m0s`) or RFC 3339 instants (`anthropic-ratelimit-tokens-reset`)",
        BodyReset = "body_reset": "the error body: Google `RetryInfo.retryDelay`, `resets_at` (RFC 3339 or epoch seconds), `resets_in_seconds`, `retry_after_seconds`, or a pointer the rule names",
        TryAgainIn = "try_again_in": "`Please try again in 2.746s`, `retry in 37.6s`, `retry after 20 seconds`, `try again in 1 hour 23 minutes`, `Please wait 17 seconds before trying again`: a delay, Go-style or in words",
    }
}

impl TimingExtractor {
    /// Whether the extractor reads structured evidence (headers or the body) rather than text:
    /// structured extractors are consulted before text ones, whatever the declared order.
    pub const fn is_structured(self) -> bool {
        matches!(
            self,
            TimingExtractor::RetryAfter
                | TimingExtractor::RetryAfterMs
                | TimingExtractor::RatelimitReset
                | TimingExtractor::BodyReset
        )
    }
}

vocabulary! {
    /// A field of the classifier's evidence input, as named in JSON and in `.rules` files.
    EvidenceField, "evidence field" {
        Phase = "phase": "the lifecycle phase",
        ProviderId = "provider_id": "the agent/provider adapter id, such as `claude-acp`",
        Source = "source": "the evidence channel",
        ExitCode = "exit_code": "the agent process's exit code",
        HttpStatus = "http_status": "the HTTP status of the failed provider call",
        ResetHint = "reset_hint": "a structured reset time (RFC 3339)",
        Stderr = "stderr": "the agent's standard error text",
        Stdout = "stdout": "the agent's standard output text",
        ManagedRuntimePackageSpec = "managed_runtime_package_spec": "the trusted npm package spec of a managed agent runtime",
        Headers = "headers": "the provider's HTTP response headers",
        Body = "body": "the provider's error body (JSON, or text)",
    }
}

vocabulary! {
    /// Where a failure happened, for the decision table of a recovery policy: which kind of
    /// work the orchestrator was doing.
    DecisionContext, "decision context" {
        Kanban = "kanban": "an interactive task a person is watching: short retries, else manual",
        Office = "office": "unattended background work: long retries, fallback or parking",
    }
}

vocabulary! {
    /// What a recovery policy's decision table says to do about a failure.
    DecisionOutcome, "decision outcome" {
        ShortRetry = "short_retry": "retry the same route on the short ladder, seconds apart",
        LongRetry = "long_retry": "retry the same route later, minutes or hours apart",
        Fallback = "fallback": "switch to the next candidate route",
        Park = "park": "park the work until the provider recovers or a person acts",
        Manual = "manual": "stop and ask the user (Resume or Start fresh)",
    }
}

vocabulary! {
    /// What a class policy does once its reset wait and retries are used up.
    OnExhausted, "exhaustion action" {
        Skip = "skip": "switch to the next candidate route",
        Stop = "stop": "stop and ask the user",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip_through_names_and_serde() {
        for phase in Phase::ALL {
            assert_eq!(Phase::from_name(phase.as_str()), Some(*phase));
            let json = serde_json::to_string(phase).unwrap();
            assert_eq!(json, format!("\"{}\"", phase.as_str()));
        }
        for field in EvidenceField::ALL {
            assert_eq!(EvidenceField::from_name(field.as_str()), Some(*field));
        }
        assert_eq!(Class::from_name("transient"), Some(Class::Transient));
        assert_eq!(Class::from_name("Transient"), None);
    }

    #[test]
    fn pre_start_phases_are_the_three_before_prompting() {
        let pre: Vec<_> = Phase::ALL
            .iter()
            .filter(|p| p.is_pre_start())
            .map(|p| p.as_str())
            .collect();
        assert_eq!(pre, ["auth_check", "process_start", "session_init"]);
    }
}
