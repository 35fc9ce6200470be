//! The priority model: one effective order of all rules, from tiers, ranks and `before` /
//! `after` relations, and the reason any one rule outranks another.
//!
//! Inside a tier, rule `a` precedes rule `b` when `a` has a lower rank than `b`, or `a before b`
//! / `b after a` is declared, or that follows transitively. Two rules of one tier that neither
//! precedes are *unordered*: the collision analysis must prove they cannot fire on the same
//! evidence with different outcomes. A cycle of relations is an error.

use std::collections::BTreeMap;

use faultline_dsl::{Code, Diagnostic};

use crate::ir::Catalogue;

/// Why one rule precedes another inside a tier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edge {
    /// Lower rank.
    Rank(i64, i64),
    /// `a before b`, declared on `a`.
    Before,
    /// `b after a`, declared on `b`.
    After,
}

/// The effective order of a catalogue.
#[derive(Debug, Clone)]
pub struct Priority {
    /// Rule indices (into `Catalogue::rules`) from highest to lowest priority.
    pub order: Vec<usize>,
    /// Position of each rule in `order`.
    pub position: Vec<usize>,
    /// Direct in-tier edges `(a, b) → why a precedes b`.
    edges: BTreeMap<(usize, usize), Edge>,
    /// Transitive in-tier precedence: bit `b` of row `a` when `a` precedes `b`.
    reach: Vec<Bits>,
}

/// How two rules are ordered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Comparison {
    /// The first rule's tier comes first.
    Tier {
        /// The winner's tier index.
        winner_tier: usize,
        /// The loser's tier index.
        loser_tier: usize,
    },
    /// Same tier; the chain of edges from winner to loser.
    Chain(Vec<(usize, usize, Edge)>),
    /// Same tier and neither precedes the other.
    Unordered,
}

impl Priority {
    /// Whether rule `a` precedes rule `b` (higher priority).
    pub fn precedes(&self, a: usize, b: usize) -> bool {
        self.position.get(a) < self.position.get(b)
    }

    /// Whether `a` and `b` share a tier and neither precedes the other.
    pub fn unordered(&self, catalogue: &Catalogue, a: usize, b: usize) -> bool {
        let same_tier =
            catalogue.rules.get(a).map(|r| r.tier) == catalogue.rules.get(b).map(|r| r.tier);
        same_tier && !self.reaches(a, b) && !self.reaches(b, a)
    }

    fn reaches(&self, a: usize, b: usize) -> bool {
        self.reach.get(a).is_some_and(|row| row.get(b))
    }

    /// Explains how `a` and `b` are ordered, from `a`'s point of view.
    pub fn compare(&self, catalogue: &Catalogue, a: usize, b: usize) -> Comparison {
        let (Some(rule_a), Some(rule_b)) = (catalogue.rules.get(a), catalogue.rules.get(b)) else {
            return Comparison::Unordered;
        };
        if rule_a.tier != rule_b.tier {
            return if rule_a.tier < rule_b.tier {
                Comparison::Tier {
                    winner_tier: rule_a.tier,
                    loser_tier: rule_b.tier,
                }
            } else {
                Comparison::Tier {
                    winner_tier: rule_b.tier,
                    loser_tier: rule_a.tier,
                }
            };
        }
        let (from, to) = if self.reaches(a, b) {
            (a, b)
        } else if self.reaches(b, a) {
            (b, a)
        } else {
            return Comparison::Unordered;
        };
        // Breadth-first over direct edges gives the shortest explanation.
        let mut previous: BTreeMap<usize, usize> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([from]);
        while let Some(current) = queue.pop_front() {
            if current == to {
                break;
            }
            for (&(x, y), _) in self.edges.range((current, 0)..=(current, usize::MAX)) {
                debug_assert_eq!(x, current);
                if y != from && !previous.contains_key(&y) {
                    previous.insert(y, current);
                    queue.push_back(y);
                }
            }
        }
        let mut chain = Vec::new();
        let mut at = to;
        while let Some(&before) = previous.get(&at) {
            if let Some(edge) = self.edges.get(&(before, at)) {
                chain.push((before, at, edge.clone()));
            }
            at = before;
        }
        chain.reverse();
        Comparison::Chain(chain)
    }
}

/// Computes the effective order; a cycle of relations is a diagnostic, and the rules on it are
/// then ordered by rank and id so that later stages still run.
pub fn order(catalogue: &Catalogue) -> (Priority, Vec<Diagnostic>) {
    let count = catalogue.rules.len();
    let index: BTreeMap<&str, usize> = catalogue
        .rules
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id.as_str(), i))
        .collect();
    let mut edges: BTreeMap<(usize, usize), Edge> = BTreeMap::new();
    let mut diagnostics = Vec::new();
    for (a, rule) in catalogue.rules.iter().enumerate() {
        for other in &rule.before {
            if let Some(&b) = index.get(other.as_str()) {
                edges.insert((a, b), Edge::Before);
            }
        }
        for other in &rule.after {
            if let Some(&b) = index.get(other.as_str()) {
                edges.entry((b, a)).or_insert(Edge::After);
            }
        }
    }
    // Rank edges: only between ranked rules of one tier, and only between neighbours in rank
    // order (the rest follows transitively).
    let mut by_tier: BTreeMap<usize, Vec<(i64, usize)>> = BTreeMap::new();
    for (i, rule) in catalogue.rules.iter().enumerate() {
        if let Some(rank) = rule.rank {
            by_tier.entry(rule.tier).or_default().push((rank, i));
        }
    }
    for ranked in by_tier.values_mut() {
        ranked.sort_unstable();
        let mut groups: Vec<Vec<(i64, usize)>> = Vec::new();
        for entry in ranked.iter() {
            match groups.last_mut() {
                Some(group) if group.first().map(|g| g.0) == Some(entry.0) => group.push(*entry),
                _ => groups.push(vec![*entry]),
            }
        }
        for pair in groups.windows(2) {
            let [higher, lower] = pair else { continue };
            for &(rank_a, a) in higher {
                for &(rank_b, b) in lower {
                    edges.entry((a, b)).or_insert(Edge::Rank(rank_a, rank_b));
                }
            }
        }
    }
    let mut reach = vec![Bits::new(count); count];
    for &(a, b) in edges.keys() {
        if let Some(row) = reach.get_mut(a) {
            row.set(b);
        }
    }
    // Transitive closure (Warshall over bit rows): catalogues have hundreds to thousands of
    // rules, so rows are OR-ed 64 rules at a time.
    for k in 0..count {
        let row_k = reach.get(k).cloned().unwrap_or_else(|| Bits::new(count));
        for row in reach.iter_mut() {
            if row.get(k) {
                row.or(&row_k);
            }
        }
    }
    let mut reported = vec![false; count];
    for start in 0..count {
        let on_cycle = reach.get(start).is_some_and(|row| row.get(start));
        if on_cycle && !reported.get(start).copied().unwrap_or(true) {
            let cycle = find_cycle(&edges, start);
            for &(a, _, _) in &cycle {
                if let Some(slot) = reported.get_mut(a) {
                    *slot = true;
                }
            }
            diagnostics.push(cycle_diagnostic(catalogue, &cycle));
        }
    }
    // Break cycles for the order itself: a rule never precedes itself, and on a cycle the
    // relations are ignored in favour of rank and id.
    for (a, row) in reach.iter_mut().enumerate() {
        if row.get(a) {
            *row = Bits::new(count);
        }
    }
    let mut predecessors = vec![0usize; count];
    for row in &reach {
        for (i, slot) in predecessors.iter_mut().enumerate() {
            if row.get(i) {
                *slot += 1;
            }
        }
    }
    let precedence_count = |i: usize| predecessors.get(i).copied().unwrap_or(0);
    let mut order: Vec<usize> = (0..count).collect();
    order.sort_by_cached_key(|&i| {
        let rule = catalogue.rules.get(i);
        (
            rule.map_or(usize::MAX, |r| r.tier),
            precedence_count(i),
            rule.and_then(|r| r.rank).unwrap_or(i64::MAX),
            rule.map(|r| r.id.clone()).unwrap_or_default(),
        )
    });
    // Sorting by the number of predecessors is a valid topological order for a transitively
    // closed, acyclic relation: a predecessor has strictly fewer predecessors.
    let mut position = vec![0; count];
    for (at, &rule) in order.iter().enumerate() {
        if let Some(slot) = position.get_mut(rule) {
            *slot = at;
        }
    }
    (
        Priority {
            order,
            position,
            edges,
            reach,
        },
        diagnostics,
    )
}

fn find_cycle(edges: &BTreeMap<(usize, usize), Edge>, start: usize) -> Vec<(usize, usize, Edge)> {
    // Breadth-first from `start` back to `start` gives a shortest cycle.
    let mut previous: BTreeMap<usize, usize> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    'search: while let Some(current) = queue.pop_front() {
        for (&(_, next), _) in edges.range((current, 0)..=(current, usize::MAX)) {
            if next == start {
                previous.insert(start, current);
                break 'search;
            }
            if let std::collections::btree_map::Entry::Vacant(slot) = previous.entry(next) {
                slot.insert(current);
                queue.push_back(next);
            }
        }
    }
    let mut cycle = Vec::new();
    let mut at = start;
    while let Some(&before) = previous.get(&at) {
        if let Some(edge) = edges.get(&(before, at)) {
            cycle.push((before, at, edge.clone()));
        }
        at = before;
        if at == start {
            break;
        }
    }
    cycle.reverse();
    cycle
}

fn describe_edge(catalogue: &Catalogue, a: usize, b: usize, edge: &Edge) -> String {
    let name = |i: usize| {
        catalogue
            .rules
            .get(i)
            .map(|r| r.id.clone())
            .unwrap_or_default()
    };
    match edge {
        Edge::Rank(x, y) => format!("`{}` (rank {x}) precedes `{}` (rank {y})", name(a), name(b)),
        Edge::Before => format!("`{}` is declared `before {}`", name(a), name(b)),
        Edge::After => format!("`{}` is declared `after {}`", name(b), name(a)),
    }
}

fn cycle_diagnostic(catalogue: &Catalogue, cycle: &[(usize, usize, Edge)]) -> Diagnostic {
    let names: Vec<String> = cycle
        .iter()
        .map(|(a, _, _)| {
            catalogue
                .rules
                .get(*a)
                .map(|r| format!("`{}`", r.id))
                .unwrap_or_default()
        })
        .chain(
            cycle
                .first()
                .and_then(|(a, _, _)| catalogue.rules.get(*a))
                .map(|r| format!("`{}`", r.id)),
        )
        .collect();
    let mut diagnostic = Diagnostic::new(
        Code::PriorityCycle,
        format!("priority cycle: {}", names.join(" → ")),
    );
    for (position, (a, b, edge)) in cycle.iter().enumerate() {
        let anchor = match edge {
            Edge::After => *b,
            _ => *a,
        };
        if let Some(rule) = catalogue.rules.get(anchor) {
            let message = describe_edge(catalogue, *a, *b, edge);
            diagnostic = if position == 0 {
                diagnostic.primary(&rule.origin.file, rule.origin.span, message)
            } else {
                diagnostic.secondary(&rule.origin.file, rule.origin.span, message)
            };
        }
    }
    diagnostic.help("remove one `before`/`after` of the cycle, or change a rank, so that the order is a line, not a loop")
}

/// A sentence explaining how two rules are ordered, for `faultline order`.
pub fn explain(catalogue: &Catalogue, priority: &Priority, a: usize, b: usize) -> String {
    let name = |i: usize| {
        catalogue
            .rules
            .get(i)
            .map(|r| r.id.clone())
            .unwrap_or_default()
    };
    let tier = |t: usize| catalogue.tiers.get(t).cloned().unwrap_or_default();
    match priority.compare(catalogue, a, b) {
        Comparison::Tier {
            winner_tier,
            loser_tier,
        } => {
            let (winner, loser) = if catalogue.rules.get(a).map(|r| r.tier) == Some(winner_tier) {
                (a, b)
            } else {
                (b, a)
            };
            format!(
                "`{}` wins over `{}`: its tier `{}` comes before tier `{}` in `tiers [...]`",
                name(winner),
                name(loser),
                tier(winner_tier),
                tier(loser_tier)
            )
        }
        Comparison::Chain(chain)
            if chain
                .iter()
                .all(|(_, _, edge)| matches!(edge, Edge::Rank(..))) =>
        {
            let (Some(first), Some(last)) = (chain.first(), chain.last()) else {
                return format!("`{}` and `{}` are the same rule", name(a), name(b));
            };
            let rank = |i: usize| {
                catalogue
                    .rules
                    .get(i)
                    .and_then(|r| r.rank)
                    .unwrap_or_default()
            };
            format!(
                "`{}` wins over `{}`: same tier `{}`, and rank {} is lower than rank {}",
                name(first.0),
                name(last.1),
                catalogue
                    .rules
                    .get(first.0)
                    .map(|r| tier(r.tier))
                    .unwrap_or_default(),
                rank(first.0),
                rank(last.1)
            )
        }
        Comparison::Chain(chain) => {
            let (Some(first), Some(last)) = (chain.first(), chain.last()) else {
                return format!("`{}` and `{}` are the same rule", name(a), name(b));
            };
            let steps: Vec<String> = chain
                .iter()
                .map(|(x, y, edge)| describe_edge(catalogue, *x, *y, edge))
                .collect();
            format!(
                "`{}` wins over `{}`: {}",
                name(first.0),
                name(last.1),
                steps.join(", and ")
            )
        }
        Comparison::Unordered => format!(
            "`{}` and `{}` are unordered: same tier, and neither ranks nor relations order them; the collision check proves they cannot both fire with different outcomes",
            name(a),
            name(b)
        ),
    }
}

/// A fixed-size set of rule indices.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Bits(Vec<u64>);

impl Bits {
    fn new(len: usize) -> Self {
        Bits(vec![0; len.div_ceil(64)])
    }

    fn get(&self, index: usize) -> bool {
        self.0
            .get(index / 64)
            .is_some_and(|word| word >> (index % 64) & 1 == 1)
    }

    fn set(&mut self, index: usize) {
        if let Some(word) = self.0.get_mut(index / 64) {
            *word |= 1 << (index % 64);
        }
    }

    fn or(&mut self, other: &Bits) {
        for (word, other) in self.0.iter_mut().zip(&other.0) {
            *word |= other;
        }
    }
}
