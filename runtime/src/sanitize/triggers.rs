//! The redaction's prefilter: one scan of a text that tells which redaction passes can change
//! it, so that text holding no trigger is returned as it is, after that one scan.
//!
//! Every pass of the tiers needs something in its input before it can match: a literal of its
//! shape (`eyJ`, `sk-`, `Bearer`, `://`, `--`, a secret key word, `@`, `/`, a drive colon, …)
//! or, for the shapes that have none, a run of at least 32 opaque characters. A [`Trigger`] is
//! one such necessary condition; [`scan`] finds which of them a text holds. The literals are
//! found by one Aho-Corasick automaton (the `aho-corasick` crate, already the `regex` crate's
//! literal engine), matched in any ASCII case: a superset of every pass's own case rule, so a
//! text it clears cannot match (an extra hit only runs a pass that then finds nothing). The
//! automaton's states are walked ([`crate::literal_walk`]): only which triggers occur matters,
//! not where, and ordinary text is full of `/`, `--` and `@`. The opaque runs, which no
//! literal announces, are found by probing every 32nd byte.
//!
//! A pass's replacement can create a trigger that the text before it lacked, so after every
//! pass that changed the text the redaction scans again around each replacement
//! ([`scan_after`]).

use std::ops::{BitOr, ControlFlow};
use std::sync::LazyLock;

use aho_corasick::MatchKind;
use aho_corasick::dfa::DFA;

use crate::literal_walk::LiteralWalk;

/// A necessary condition of one or more redaction passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Trigger {
    /// `eyJ`: a JWT or JWE.
    Jwt,
    /// `sk-`, `github_pat_`, `ghp_`, `kandev_pat_`: a key with a marker.
    MarkedKey,
    /// `AKIA`, `ASIA`: an AWS access key id.
    AwsKeyId,
    /// A marked key or an AWS key id inside a run of opaque characters.
    KeyInRun,
    /// `bearer`, any case.
    Bearer,
    /// `authorization`, any case: the header form.
    Authorization,
    /// A word of a secret-looking key or option name (`password`, `token`, `pwd`, …), any case.
    SecretWord,
    /// `--`: an option.
    DoubleDash,
    /// `://`: a URL, possibly with user-info.
    Scheme,
    /// `wrk_`, `ses_`, `run_`: a workspace, session or run id.
    WorkspaceId,
    /// `@`: an e-mail address.
    At,
    /// At least 32 characters of `[A-Za-z0-9+/=_-]` in a row.
    OpaqueRun,
    /// `/Users/`.
    UsersHome,
    /// `/home/`.
    HomeHome,
    /// `:\` or `:/`: after a drive letter.
    DriveColon,
    /// `/`: a Unix path.
    Slash,
}

/// A set of [`Trigger`]s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Triggers(u32);

impl Triggers {
    /// Every trigger.
    pub(super) const ALL: Triggers = Triggers(u32::MAX);

    pub(super) const fn of(trigger: Trigger) -> Triggers {
        Triggers(1 << trigger as u32)
    }

    pub(super) const fn union(self, other: Triggers) -> Triggers {
        Triggers(self.0 | other.0)
    }

    pub(super) const fn intersects(self, other: Triggers) -> bool {
        self.0 & other.0 != 0
    }

    const fn intersection(self, other: Triggers) -> Triggers {
        Triggers(self.0 & other.0)
    }

    const fn covers(self, other: Triggers) -> bool {
        self.0 & other.0 == other.0
    }

    pub(super) const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl From<Trigger> for Triggers {
    fn from(trigger: Trigger) -> Triggers {
        Triggers::of(trigger)
    }
}

impl<T: Into<Triggers>> BitOr<T> for Triggers {
    type Output = Triggers;

    fn bitor(self, other: T) -> Triggers {
        self.union(other.into())
    }
}

impl BitOr for Trigger {
    type Output = Triggers;

    fn bitor(self, other: Trigger) -> Triggers {
        Triggers::of(self).union(Triggers::of(other))
    }
}

/// What the credential tier's passes need.
pub(super) const CREDENTIAL: Triggers = Triggers::of(Trigger::Jwt)
    .union(Triggers::of(Trigger::MarkedKey))
    .union(Triggers::of(Trigger::AwsKeyId))
    .union(Triggers::of(Trigger::Bearer))
    .union(Triggers::of(Trigger::Authorization))
    .union(Triggers::of(Trigger::SecretWord))
    .union(Triggers::of(Trigger::DoubleDash))
    .union(Triggers::of(Trigger::Scheme));

/// The literals and the triggers each one is (the words of `SECRET_WORDS` and `pwd`, and the
/// option words, are all `SecretWord`; `authorization` is both a header and such a word).
const LITERALS: &[(&str, Triggers)] = &[
    ("eyJ", Triggers::of(Trigger::Jwt)),
    ("sk-", Triggers::of(Trigger::MarkedKey)),
    ("github_pat_", Triggers::of(Trigger::MarkedKey)),
    ("ghp_", Triggers::of(Trigger::MarkedKey)),
    ("kandev_pat_", Triggers::of(Trigger::MarkedKey)),
    ("AKIA", Triggers::of(Trigger::AwsKeyId)),
    ("ASIA", Triggers::of(Trigger::AwsKeyId)),
    ("bearer", Triggers::of(Trigger::Bearer)),
    (
        "authorization",
        Triggers::of(Trigger::Authorization).union(Triggers::of(Trigger::SecretWord)),
    ),
    ("password", Triggers::of(Trigger::SecretWord)),
    ("passwd", Triggers::of(Trigger::SecretWord)),
    ("secret", Triggers::of(Trigger::SecretWord)),
    ("token", Triggers::of(Trigger::SecretWord)),
    ("api_key", Triggers::of(Trigger::SecretWord)),
    ("api-key", Triggers::of(Trigger::SecretWord)),
    ("apikey", Triggers::of(Trigger::SecretWord)),
    ("pwd", Triggers::of(Trigger::SecretWord)),
    ("--", Triggers::of(Trigger::DoubleDash)),
    ("://", Triggers::of(Trigger::Scheme)),
    ("wrk_", Triggers::of(Trigger::WorkspaceId)),
    ("ses_", Triggers::of(Trigger::WorkspaceId)),
    ("run_", Triggers::of(Trigger::WorkspaceId)),
    ("@", Triggers::of(Trigger::At)),
    ("/Users/", Triggers::of(Trigger::UsersHome)),
    ("/home/", Triggers::of(Trigger::HomeHome)),
    (":\\", Triggers::of(Trigger::DriveColon)),
    (":/", Triggers::of(Trigger::DriveColon)),
    ("/", Triggers::of(Trigger::Slash)),
];

/// Every trigger a literal of [`LITERALS`] stands for.
const LITERAL_TRIGGERS: Triggers = {
    let mut all = Triggers(0);
    let mut rest = LITERALS;
    while let [(_, triggers), tail @ ..] = rest {
        all = all.union(*triggers);
        rest = tail;
    }
    all
};

/// The shortest opaque run the diagnostic tier removes (`OPAQUE_RUN`, and `TOKEN_RUN`, whose
/// characters are a subset).
const OPAQUE_RUN_BYTES: usize = 32;

/// All literals in one automaton. A DFA: the automaton is small, and the walk
/// ([`crate::literal_walk`]) is then one table step per byte. Its match states list every
/// literal ending there, so a literal inside another (`/` in `://`) is never hidden by it.
#[expect(
    clippy::expect_used,
    reason = "the literals are constants of this module; every test builds the automaton"
)]
static LITERAL_AUTOMATON: LazyLock<LiteralWalk<DFA>> = LazyLock::new(|| {
    let automaton = DFA::builder()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::Standard)
        .prefilter(false)
        .build(LITERALS.iter().map(|(literal, _)| literal))
        .expect("constant redaction trigger literals");
    LiteralWalk::new(automaton).expect("an automaton built for unanchored searches")
});

/// The triggers of the literals `text` holds, stopping once it holds all of `wanted`.
fn literal_triggers(text: &[u8], wanted: Triggers) -> Triggers {
    let mut found = Triggers::default();
    let _ = LITERAL_AUTOMATON.walk(text, |pattern| {
        if let Some((_, triggers)) = LITERALS.get(pattern) {
            found = found | *triggers;
        }
        if found.covers(wanted) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    found
}

/// The triggers of `wanted` that `text` holds.
pub(super) fn scan(text: &str, wanted: Triggers) -> Triggers {
    let mut found = Triggers::default();
    let literals_wanted = wanted
        .union(Triggers::of(Trigger::MarkedKey))
        .union(Triggers::of(Trigger::AwsKeyId))
        .intersection(LITERAL_TRIGGERS);
    if !literals_wanted.is_empty() {
        found = literal_triggers(text.as_bytes(), literals_wanted);
    }
    let runs_wanted = wanted.intersects(Trigger::OpaqueRun | Trigger::KeyInRun);
    if runs_wanted && has_opaque_run(text.as_bytes()) {
        found = found | Trigger::OpaqueRun;
        if found.intersects(Trigger::MarkedKey | Trigger::AwsKeyId) {
            found = found | Trigger::KeyInRun;
        }
    }
    found.intersection(wanted)
}

/// The triggers of `wanted` that `text` may hold after a pass: `before`, what the text held
/// before it, and those found near each replacement (`replaced`, the spans the replacements
/// took in `text`). A trigger the pass created overlaps a replacement (they are never empty),
/// so it lies within a literal's length (for a run, 31 bytes) of one. A superset of the
/// text's triggers: a trigger the pass removed only runs a pass that then finds nothing.
pub(super) fn scan_after(
    text: &str,
    replaced: impl Iterator<Item = std::ops::Range<usize>>,
    before: Triggers,
    wanted: Triggers,
) -> Triggers {
    let mut found = before;
    for span in replaced {
        let start = floor_boundary(text, span.start.saturating_sub(OPAQUE_RUN_BYTES - 1));
        let end = ceil_boundary(text, span.end + OPAQUE_RUN_BYTES - 1);
        if let Some(near) = text.get(start..end) {
            found = found | scan(near, wanted);
        }
    }
    if found.intersects(Trigger::OpaqueRun.into())
        && found.intersects(Trigger::MarkedKey | Trigger::AwsKeyId)
    {
        found = found | Trigger::KeyInRun;
    }
    found.intersection(wanted)
}

fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// A byte of an opaque run: `[A-Za-z0-9+/=_-]`.
const fn is_opaque(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'+' | b'/' | b'=' | b'_' | b'-')
}

/// Whether `bytes` hold [`OPAQUE_RUN_BYTES`] opaque bytes in a row. A run that long covers
/// every such stride's last byte, so only those are probed; a probe that hits one measures the
/// run around it.
fn has_opaque_run(bytes: &[u8]) -> bool {
    // No run of the length starts before `from`.
    let mut from = 0;
    while let Some(&probed) = bytes.get(from + OPAQUE_RUN_BYTES - 1) {
        let probe = from + OPAQUE_RUN_BYTES - 1;
        if !is_opaque(probed) {
            from = probe + 1;
            continue;
        }
        let before = bytes.get(from..probe).unwrap_or_default();
        let start = probe - before.iter().rev().take_while(|b| is_opaque(**b)).count();
        let Some(rest) = bytes.get(probe + 1..start + OPAQUE_RUN_BYTES) else {
            // The text ends before this run, or any later one, is long enough.
            return false;
        };
        match rest.iter().position(|b| !is_opaque(*b)) {
            None => return true,
            Some(gap) => from = probe + 1 + gap + 1,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The plain definition: the longest run of opaque bytes.
    fn longest_run(bytes: &[u8]) -> usize {
        bytes
            .split(|b| !is_opaque(*b))
            .map(<[u8]>::len)
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn opaque_runs_are_found_at_any_offset_and_not_one_byte_short() {
        let run = "A".repeat(OPAQUE_RUN_BYTES);
        let short = "A".repeat(OPAQUE_RUN_BYTES - 1);
        for lead in 0..70 {
            let text = format!("{} {run} x", " ".repeat(lead));
            assert!(has_opaque_run(text.as_bytes()), "lead {lead}");
            let text = format!("{} {short} x {short}", "a ".repeat(lead));
            assert!(!has_opaque_run(text.as_bytes()), "lead {lead}");
        }
        assert!(has_opaque_run(run.as_bytes()));
        assert!(!has_opaque_run(short.as_bytes()));
        assert!(!has_opaque_run(b""));
    }

    #[test]
    fn literals_inside_other_literals_are_reported() {
        let found = scan("file:///Users/x", Triggers::ALL);
        for trigger in [
            Trigger::Scheme,
            Trigger::DriveColon,
            Trigger::UsersHome,
            Trigger::Slash,
        ] {
            assert!(found.intersects(trigger.into()), "{trigger:?}");
        }
        assert!(scan("x AKIASIA", Triggers::ALL).intersects(Trigger::AwsKeyId.into()));
        assert!(scan("DB_PWD=1", CREDENTIAL).intersects(Trigger::SecretWord.into()));
        assert!(scan("plain words only.", Triggers::ALL).is_empty());
    }

    #[test]
    fn a_key_in_a_run_needs_both() {
        let run = "Q".repeat(40);
        assert!(!scan(&run, Triggers::ALL).intersects(Trigger::KeyInRun.into()));
        assert!(!scan("sk-abc", Triggers::ALL).intersects(Trigger::KeyInRun.into()));
        let text = format!("{run}sk-abc");
        assert!(scan(&text, Triggers::ALL).intersects(Trigger::KeyInRun.into()));
        // Asked for alone, it still looks for the keys it depends on.
        assert!(scan(&text, Trigger::KeyInRun.into()).intersects(Trigger::KeyInRun.into()));
    }

    proptest! {
        #[test]
        fn the_probe_agrees_with_the_longest_run(text in "[ab/=\\- é]{0,200}") {
            prop_assert_eq!(
                has_opaque_run(text.as_bytes()),
                longest_run(text.as_bytes()) >= OPAQUE_RUN_BYTES
            );
        }

        #[test]
        fn the_probe_agrees_on_long_runs_with_gaps(lengths in prop::collection::vec(0usize..40, 0..12)) {
            let text: String = lengths.iter().map(|n| "k".repeat(*n) + " ").collect();
            prop_assert_eq!(
                has_opaque_run(text.as_bytes()),
                longest_run(text.as_bytes()) >= OPAQUE_RUN_BYTES
            );
        }
    }
}
