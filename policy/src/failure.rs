//! [`Failure`]: what the policy knows of a classified failure.

use std::time::SystemTime;

use faultline_runtime::{Class, Classification, Confidence, parse_instant};
use serde::{Deserialize, Serialize};

/// A classified failure as the policy reads it: the classification's code, class,
/// confidence, `fallback_allowed` flag, validated reset time and catalogue version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// The semantic code.
    pub code: String,
    /// Its policy class.
    pub class: Class,
    /// How sure the classifier is.
    pub confidence: Confidence,
    /// Whether the code allows recovery away from the failed attempt (reference §F.2 stops
    /// every failure without it).
    pub fallback_allowed: bool,
    /// The validated reset time, if any.
    #[serde(with = "crate::state::instant_option")]
    pub reset_hint: Option<SystemTime>,
    /// The catalogue version that classified it.
    pub catalogue_version: String,
}

impl Failure {
    /// The failure a classification describes. Its reset hint was validated by the
    /// classifier; one that does not parse (it always does) is dropped, never guessed.
    pub fn from_classification(classification: &Classification) -> Failure {
        Failure {
            code: classification.code.clone(),
            class: classification.class,
            confidence: classification.confidence,
            fallback_allowed: classification.fallback_allowed,
            reset_hint: classification
                .reset_hint
                .as_deref()
                .and_then(|hint| parse_instant(hint).ok()),
            catalogue_version: classification.catalogue_version.clone(),
        }
    }
}
