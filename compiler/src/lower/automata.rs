//! Automata: each pattern's DFA alone (exact, or with bounded gaps widened when it does not
//! fit), the multi-pattern DFAs of a view, groups split until each fits its budget, and the
//! lazy DFAs the collision analysis searches. The builds are tracked queries, reused across
//! compilations.

use regex_automata::dfa::{StartKind, dense};
use regex_automata::hybrid;
use regex_automata::nfa::thompson;
use regex_automata::{MatchKind, util::syntax};
use regex_syntax::hir::{Hir, HirKind, Repetition};

use std::sync::Arc;

use crate::db::{Db, ExactKey, GroupKey, PatternKey};

use super::budget::{AutomatonError, Budget, Limits};

/// Bounded repetitions longer than this are widened when a pattern does not fit its budget.
pub const WIDEN_ABOVE: u32 = 8;

fn dfa_config(limits: Limits) -> dense::Config {
    dense::Config::new()
        .match_kind(MatchKind::All)
        .start_kind(StartKind::Unanchored)
        .dfa_size_limit(Some(limits.dfa))
        .determinize_size_limit(Some(limits.determinize))
        .minimize(false)
        .byte_classes(true)
}

/// Replaces bounded repetitions longer than [`WIDEN_ABOVE`] by unbounded ones.
pub fn widen(hir: &Hir) -> Hir {
    match hir.kind() {
        HirKind::Repetition(repetition) => {
            let max = repetition.max.filter(|max| *max <= WIDEN_ABOVE);
            Hir::repetition(Repetition {
                min: repetition.min,
                max,
                greedy: repetition.greedy,
                sub: Box::new(widen(&repetition.sub)),
            })
        }
        HirKind::Capture(capture) => Hir::capture(regex_syntax::hir::Capture {
            index: capture.index,
            name: capture.name.clone(),
            sub: Box::new(widen(&capture.sub)),
        }),
        HirKind::Concat(parts) => Hir::concat(parts.iter().map(widen).collect()),
        HirKind::Alternation(parts) => Hir::alternation(parts.iter().map(widen).collect()),
        _ => hir.clone(),
    }
}

/// Whether a syntax tree holds a bounded repetition longer than [`WIDEN_ABOVE`]: the construct
/// whose unanchored subset construction is exponential in its bound.
pub fn has_long_bounded_repetition(hir: &Hir) -> bool {
    match hir.kind() {
        HirKind::Repetition(repetition) => {
            repetition.max.is_some_and(|max| max > WIDEN_ABOVE)
                || has_long_bounded_repetition(&repetition.sub)
        }
        HirKind::Capture(capture) => has_long_bounded_repetition(&capture.sub),
        HirKind::Concat(parts) | HirKind::Alternation(parts) => {
            parts.iter().any(has_long_bounded_repetition)
        }
        _ => false,
    }
}

/// Whether a class is broad: it holds more than 256 code points (it reaches beyond ASCII, as a
/// negated class does) or more than 64 bytes.
fn is_broad_class(hir: &Hir) -> bool {
    match hir.kind() {
        HirKind::Class(regex_syntax::hir::Class::Unicode(class)) => {
            class
                .iter()
                .map(|r| (r.end() as u32).saturating_sub(r.start() as u32) + 1)
                .sum::<u32>()
                > 256
        }
        HirKind::Class(regex_syntax::hir::Class::Bytes(class)) => {
            class
                .iter()
                .map(|r| u32::from(r.end().saturating_sub(r.start())) + 1)
                .sum::<u32>()
                > 64
        }
        _ => false,
    }
}

/// Whether a syntax tree holds a bounded repetition of a broad class longer than
/// [`WIDEN_ABOVE`] (a bounded gap, `[^\n]{0,80}`).
pub(crate) fn has_long_bounded_gap(hir: &Hir) -> bool {
    match hir.kind() {
        HirKind::Repetition(repetition) => {
            (repetition.max.is_some_and(|max| max > WIDEN_ABOVE) && is_broad_class(&repetition.sub))
                || has_long_bounded_gap(&repetition.sub)
        }
        HirKind::Capture(capture) => has_long_bounded_gap(&capture.sub),
        HirKind::Concat(parts) | HirKind::Alternation(parts) => {
            parts.iter().any(has_long_bounded_gap)
        }
        _ => false,
    }
}

/// Whether a syntax tree holds an unbounded repetition of a broad class (`.*`, `[^\n]*`): a
/// gap, whose DFA multiplies the size of any union it joins.
pub fn has_gap(hir: &Hir) -> bool {
    match hir.kind() {
        HirKind::Repetition(repetition) => {
            (repetition.max.is_none() && is_broad_class(&repetition.sub))
                || has_gap(&repetition.sub)
        }
        HirKind::Capture(capture) => has_gap(&capture.sub),
        HirKind::Concat(parts) | HirKind::Alternation(parts) => parts.iter().any(has_gap),
        _ => false,
    }
}

/// The budget of a first, exact attempt: small for a pattern with a long bounded repetition,
/// so that the attempt that is likely to explode fails fast.
pub fn exact_attempt_budget(hir: &Hir, budget: usize) -> usize {
    if has_long_bounded_repetition(hir) {
        budget.min(256 << 10)
    } else {
        budget
    }
}

/// The Thompson NFA of syntax trees, its heap limited (the limit stops repetition blow-up).
fn build_nfa(hirs: &[Hir], nfa_bytes: usize) -> Result<thompson::NFA, AutomatonError> {
    thompson::Compiler::new()
        .syntax(syntax::Config::new())
        .configure(thompson::Config::new().nfa_size_limit(Some(nfa_bytes)))
        .build_many_from_hir(hirs)
        .map_err(|error| match error.size_limit() {
            Some(limit) => AutomatonError::Nfa { limit },
            None => AutomatonError::Other(error.to_string()),
        })
}

/// Builds one DFA from syntax trees under `limits`: the NFA first (its size limit stops
/// repetition blow-up), then determinization (its working memory and the DFA's size limited).
pub(crate) fn build_dfa(
    hirs: &[Hir],
    limits: Limits,
) -> Result<dense::DFA<Vec<u32>>, AutomatonError> {
    let nfa = build_nfa(hirs, limits.nfa)?;
    dense::Builder::new()
        .configure(dfa_config(limits))
        .build_from_nfa(&nfa)
        .map_err(|error| {
            if !error.is_size_limit_exceeded() {
                AutomatonError::Other(error.to_string())
            } else if error.to_string().starts_with("determinization") {
                // regex-automata names the limit it hit only in its message.
                AutomatonError::Determinize {
                    limit: limits.determinize,
                }
            } else {
                AutomatonError::Dfa { limit: limits.dfa }
            }
        })
}

/// Builds a lazy DFA from a syntax tree: only its NFA is compiled now, and states are
/// determinized as a search reaches them, in a cache of `cache_bytes` per search. The collision
/// analysis explores a product of automata breadth-first and reaches a small part of each, so
/// determinizing them whole would be most of a check's time for nothing.
pub(crate) fn build_lazy_dfa(
    hir: &Hir,
    cache_bytes: usize,
    nfa_bytes: usize,
) -> Result<hybrid::dfa::DFA, AutomatonError> {
    let nfa = build_nfa(std::slice::from_ref(hir), nfa_bytes)?;
    hybrid::dfa::Builder::new()
        .configure(
            hybrid::dfa::Config::new()
                .match_kind(MatchKind::All)
                .byte_classes(true)
                .cache_capacity(cache_bytes)
                // A full cache is the budget's end: clearing it would invalidate the states a
                // search holds.
                .minimum_cache_clear_count(Some(0)),
        )
        .build_from_nfa(nfa)
        .map_err(|error| {
            // The one build error with a budget: the NFA needs a cache larger than allowed.
            if error.to_string().contains("cache capacity") {
                AutomatonError::Dfa { limit: cache_bytes }
            } else {
                AutomatonError::Other(error.to_string())
            }
        })
}

/// The syntax tree the analysis reads a pattern by: the pattern's own, unless it holds a long
/// bounded repetition that is a bounded gap ([`has_long_bounded_gap`]), or another whose exact
/// DFA does not fit `first_attempt` (the analysis's exact attempt, smaller than the lowering's);
/// then bounded repetitions are widened (an over-approximation, flagged `true`).
/// Widening keeps the product search from counting every position of a gap.
pub(crate) fn analysed_hir(
    db: &dyn Db,
    pattern: &str,
    first_attempt: usize,
    determinize: usize,
    nfa: usize,
) -> Result<(Hir, bool), AutomatonError> {
    let hir = parsed_hir(db, pattern)?;
    if !has_long_bounded_repetition(&hir) {
        return Ok((hir, false));
    }
    // A bounded gap's exact unanchored DFA tracks every position in the gap where its prefix
    // may have matched, each with the states of decoding a broad class's UTF-8: `a[^\n]{0,9}b`
    // takes 1.1 MB, `quota[^\n]{0,12}exceeded` 105 KB, and none of the repository catalogue's
    // 491 patterns with one fit the analysis's attempt, whose failures were a sixth of a
    // check's time. So a gap is widened without one.
    if has_long_bounded_gap(&hir) {
        return Ok((widen(&hir), true));
    }
    let limit = exact_attempt_budget(&hir, first_attempt);
    let key = ExactKey::new(
        db,
        pattern.to_owned(),
        false,
        limit,
        limit.saturating_mul(2).min(determinize),
        nfa,
    );
    match exact_dfa(db, key) {
        Ok(_) => Ok((hir, false)),
        Err(_) => Ok((widen(&hir), true)),
    }
}

/// A pattern's syntax tree, parsed once per session.
fn parsed_hir(db: &dyn Db, pattern: &str) -> Result<Hir, AutomatonError> {
    crate::db::pattern_hir(db, crate::db::PatternText::new(db, pattern.to_owned()))
        .as_ref()
        .map(|hir| Hir::clone(hir))
        .map_err(|error| AutomatonError::Other(error.to_string()))
}

/// A pattern's DFA alone, exact or widened, under limits. Tracked: a widened pattern's DFA alone
/// is its group's, and the analysis's exact attempts are kept for the next check of a session.
#[salsa::tracked(returns(ref), no_eq)]
pub(crate) fn exact_dfa<'db>(
    db: &'db dyn Db,
    key: ExactKey<'db>,
) -> Result<Arc<dense::DFA<Vec<u32>>>, AutomatonError> {
    let parsed = parsed_hir(db, key.text(db))?;
    let hir = if *key.widened(db) {
        widen(&parsed)
    } else {
        parsed
    };
    let limits = Limits {
        dfa: *key.dfa(db),
        determinize: *key.determinize(db),
        nfa: *key.nfa(db),
    };
    build_dfa(std::slice::from_ref(&hir), limits).map(Arc::new)
}

/// A pattern's DFA alone, as [`alone`] builds it.
#[derive(Debug)]
pub(crate) struct Alone {
    /// The DFA.
    pub dfa: Arc<dense::DFA<Vec<u32>>>,
    /// The syntax tree it was built from (widened when approximate).
    pub hir: Hir,
    /// Whether bounded gaps were widened.
    pub approximate: bool,
}

/// Builds a pattern's DFA alone, exact if it fits `key`'s budget, else with bounded gaps widened
/// (under the wide budget). The exact attempt is first made with the key's `first` budget when
/// that is smaller: its success yields the very DFA the larger budget would (the limits only
/// stop a build early). (The analysis tries smaller, `analysis::EXACT_ATTEMPT_BYTES`: its
/// attempts fail often, and a failed one costs in proportion to its limit.)
pub(crate) fn alone(db: &dyn Db, key: PatternKey<'_>) -> Result<Alone, AutomatonError> {
    let text = key.text(db);
    let hir = parsed_hir(db, text)?;
    let (determinize, nfa) = (*key.determinize(db), *key.nfa(db));
    // One attempt under a DFA size limit; determinization may use `scratch` times that.
    let attempt = |widened: bool, limit: usize, scratch: usize| {
        let key = ExactKey::new(
            db,
            text.clone(),
            widened,
            limit,
            limit.saturating_mul(scratch).min(determinize),
            nfa,
        );
        exact_dfa(db, key).clone()
    };
    let exact = |budget: usize| {
        let limit = exact_attempt_budget(&hir, budget);
        (limit, attempt(false, limit, 2))
    };
    let budget = *key.budget(db);
    let (first_attempt, mut exact_result) = exact((*key.first(db)).min(budget));
    if exact_result.is_err() && first_attempt < exact_attempt_budget(&hir, budget) {
        exact_result = exact(budget).1;
    }
    match exact_result {
        Ok(dfa) => Ok(Alone {
            dfa,
            hir,
            approximate: false,
        }),
        Err(_) => {
            // The widened attempt is first made under the `first` budget too, like the exact
            // one: where it fits, it is the DFA the wide budget would build.
            let wide = *key.wide_budget(db);
            let shared = (*key.first(db)).min(wide);
            let mut built = attempt(true, shared, 4);
            if built.is_err() && shared < wide {
                built = attempt(true, wide, 4);
            }
            let dfa = built?;
            Ok(Alone {
                dfa,
                hir: widen(&hir),
                approximate: true,
            })
        }
    }
}

/// A pattern prepared for the lowering: for one that gets a DFA, the syntax tree the DFA is
/// built from (widened when approximate) and the size of its DFA alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    pub(super) pattern: String,
    /// `None` for a pattern the runtime searches by its regex only: no DFA is built for it.
    hir: Option<Hir>,
    pub(super) approximate: bool,
    pub(super) alone_bytes: Option<usize>,
}

impl Prepared {
    /// A pattern that gets no DFA (only gated rules read it).
    pub(super) fn regex_only(pattern: &str) -> Self {
        Prepared {
            pattern: pattern.to_owned(),
            hir: None,
            approximate: false,
            alone_bytes: None,
        }
    }
}

/// Prepares a pattern: its DFA alone, exact if it fits, else with bounded gaps widened. Tracked:
/// a pattern is prepared once per session.
#[salsa::tracked(returns(ref))]
pub fn prepared<'db>(db: &'db dyn Db, key: PatternKey<'db>) -> Result<Prepared, AutomatonError> {
    let built = alone(db, key)?;
    Ok(Prepared {
        pattern: key.text(db).clone(),
        alone_bytes: Some(built.dfa.memory_usage()),
        hir: Some(built.hir),
        approximate: built.approximate,
    })
}

/// Patterns per DFA, at most: big enough that a real catalogue's view is one DFA, small enough
/// that determinizing one group stays fast and an edit rebuilds one group, not all.
pub const GROUP_SIZE: usize = 16;

/// Groups the patterns of a view that get a DFA: exact and widened patterns apart; each kind in
/// buckets by a stable hash of the id of the rule that uses the pattern, so that editing a
/// rule's pattern changes its own bucket only.
pub(super) fn groups(prepared: &[Prepared], owners: &[String]) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    for approximate in [false, true] {
        let members: Vec<usize> = (0..prepared.len())
            .filter(|&i| {
                prepared
                    .get(i)
                    .is_some_and(|p| p.hir.is_some() && p.approximate == approximate)
            })
            .collect();
        // Gap-style patterns (`.*`, `[^\n]*`, widened bounded gaps) multiply each other's size in
        // a union (four of the reference catalogue's take 12 MB together, 60-225 KB apart),
        // and a failed determinization costs seconds: each gets a DFA of its own.
        let (gapped, members): (Vec<usize>, Vec<usize>) = members.into_iter().partition(|&index| {
            approximate
                || prepared
                    .get(index)
                    .and_then(|p| p.hir.as_ref())
                    .is_some_and(has_gap)
        });
        out.extend(gapped.into_iter().map(|index| vec![index]));
        let buckets = members
            .len()
            .div_ceil(GROUP_SIZE)
            .max(1)
            .next_power_of_two();
        let mut grouped: Vec<Vec<usize>> = vec![Vec::new(); buckets];
        for index in members {
            let hash = owners.get(index).map_or(0, |owner| stable_hash(owner));
            if let Some(bucket) = grouped.get_mut((hash % buckets as u64) as usize) {
                bucket.push(index);
            }
        }
        out.extend(grouped.into_iter().filter(|group| !group.is_empty()));
    }
    out
}

/// FNV-1a: stable across runs and platforms, unlike the standard library's hasher.
fn stable_hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// One built DFA: its serialized bytes and its size in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDfa {
    /// Little-endian serialization.
    pub bytes: Vec<u8>,
    /// Heap size of the DFA.
    pub memory: usize,
}

/// Builds one group's DFA. Tracked: a group whose members did not change is not rebuilt.
#[salsa::tracked(returns(ref))]
pub fn group_dfa<'db>(
    db: &'db dyn Db,
    key: GroupKey<'db>,
) -> Result<Arc<GroupDfa>, AutomatonError> {
    // A widened pattern alone (every one has a DFA of its own) was built while it was
    // prepared, under the same limits when the budgets keep their ratio: reuse it.
    if let [(pattern, true)] = key.patterns(db).as_slice() {
        let alone = ExactKey::new(
            db,
            pattern.clone(),
            true,
            *key.budget(db),
            *key.determinize(db),
            *key.nfa(db),
        );
        let dfa = exact_dfa(db, alone).clone()?;
        let (bytes, padding) = dfa.to_bytes_little_endian();
        return Ok(Arc::new(GroupDfa {
            bytes: bytes.get(padding..).unwrap_or_default().to_vec(),
            memory: dfa.memory_usage(),
        }));
    }
    let mut hirs = Vec::new();
    for (pattern, approximate) in key.patterns(db) {
        let hir = parsed_hir(db, pattern)?;
        hirs.push(if *approximate { widen(&hir) } else { hir });
    }
    let limits = Limits {
        dfa: *key.budget(db),
        determinize: *key.determinize(db),
        nfa: *key.nfa(db),
    };
    let dfa = build_dfa(&hirs, limits)?;
    let (bytes, padding) = dfa.to_bytes_little_endian();
    Ok(Arc::new(GroupDfa {
        bytes: bytes.get(padding..).unwrap_or_default().to_vec(),
        memory: dfa.memory_usage(),
    }))
}

/// The patterns of `group` (indices into `prepared`), as its DFA's key reads them.
pub(super) fn group_members(prepared: &[Prepared], group: &[usize]) -> Vec<(String, bool)> {
    group
        .iter()
        .filter_map(|&i| prepared.get(i).map(|p| (p.pattern.clone(), p.approximate)))
        .collect()
}

/// The key of a group's DFA under `budget`.
pub(super) fn group_key<'db>(
    db: &'db dyn Db,
    members: Vec<(String, bool)>,
    budget: &Budget,
) -> GroupKey<'db> {
    GroupKey::new(
        db,
        members,
        budget.view_dfa_bytes,
        budget.determinize_bytes,
        budget.nfa_bytes,
    )
}

/// Splits `group` (indices into `prepared`) into DFAs that fit the budget; a pattern that does
/// not fit even alone is the error, with its index.
pub(super) fn partition(
    db: &dyn Db,
    prepared: &[Prepared],
    group: &[usize],
    budget: &Budget,
    out: &mut Vec<(Vec<usize>, Arc<GroupDfa>)>,
) -> Result<(), (usize, AutomatonError)> {
    if group.is_empty() {
        return Ok(());
    }
    let key = group_key(db, group_members(prepared, group), budget);
    match group_dfa(db, key) {
        Ok(dfa) => {
            out.push((group.to_vec(), Arc::clone(dfa)));
            Ok(())
        }
        Err(error) => match group {
            [single] => Err((*single, error.clone())),
            _ => {
                let (left, right) = group.split_at(group.len() / 2);
                partition(db, prepared, left, budget, out)?;
                partition(db, prepared, right, budget, out)
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hir(pattern: &str) -> Hir {
        // Byte classes too (`(?-u)`), as lowered patterns may hold them.
        let mut parser = regex_syntax::ParserBuilder::new().utf8(false).build();
        match parser.parse(pattern) {
            Ok(hir) => hir,
            Err(error) => panic!("{pattern}: {error}"),
        }
    }

    #[test]
    fn a_bounded_gap_is_a_broad_class_repeated_beyond_the_widening_bound() {
        for gap in [
            r"a[^\n]{0,80}b",
            r"(?s)a.{0,9}b",
            r"(?-u)a[^\n]{1,40}b",
            r#"a(?:x|[^"]{0,60})b"#,
        ] {
            assert!(has_long_bounded_gap(&hir(gap)), "{gap}");
        }
        for other in [
            r"a[^\n]{0,8}b",
            r"model [0-9A-Za-z_.-]{1,40}",
            r"a[^\n]*b",
            r"[a-z]{2,20}",
        ] {
            assert!(!has_long_bounded_gap(&hir(other)), "{other}");
        }
    }

    #[test]
    fn a_gap_is_a_broad_class_repeated_without_bound() {
        for gap in [r"a[^\n]*b", r"(?s)a.+b", r"(?-u)a[^\n]*"] {
            assert!(has_gap(&hir(gap)), "{gap}");
        }
        for other in [r"a[^\n]{0,80}b", r"[a-z]+", r"(?-u)[a-z]*"] {
            assert!(!has_gap(&hir(other)), "{other}");
        }
    }
}
