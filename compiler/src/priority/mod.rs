//! The priority model: one effective order of all rules, from tiers, ranks and `before` /
//! `after` relations, and the reason any one rule outranks another.
//!
//! Inside a tier, rule `a` precedes rule `b` when `a` has a lower rank than `b`, or `a before b`
//! / `b after a` is declared, or that follows transitively. Two rules of one tier that neither
//! precedes are *unordered*: the collision analysis must prove they cannot fire on the same
//! evidence with different outcomes. A cycle of relations is an error.
//!
//! The `graph` module holds the precedence graph and the graph algorithms the order is computed with.

mod graph;

use graph::{Bits, Graph, strongly_connected, topological_reverse};

use std::collections::{BTreeMap, HashMap};

use faultline_dsl::{Code, Diagnostic};

use crate::ir::{Catalogue, RuleIndex};

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
///
/// Precedence is kept in linear space: ranks order every ranked rule of a tier against every
/// other with a different rank, so they are a chain of rank groups, not edges between all
/// pairs; `before`/`after` relations are few. A rule's label says which rank groups of its tier
/// it precedes (all groups after the first one it reaches) and which relation targets it
/// reaches; together they answer "does `a` precede `b`" in constant time.
#[derive(Debug, Clone)]
pub struct Priority {
    /// Rules from highest to lowest priority.
    order: Vec<RuleIndex>,
    /// Per rule: its position in `order`.
    position: Vec<Position>,
    /// Per rule: its tier (rules of different tiers are ordered by their tiers alone).
    tiers: Vec<usize>,
    /// The precedence graph.
    graph: Graph,
    /// Per rule: the first rank-group gap of its tier it reaches (it precedes every ranked rule
    /// of a later group).
    chain: Vec<Option<usize>>,
    /// Per rule: the first gap node of its tier, when its tier has gaps.
    chain_base: Vec<Option<usize>>,
    /// Per rule: the relation targets it precedes, as bits over `graph.target_column`.
    targets: Vec<Bits>,
    /// Per rule: whether it lies on a cycle of relations (its relations were ignored).
    on_cycle: Vec<bool>,
}

/// A rule's place in the effective order: 0 is the highest priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Position(usize);

impl Position {
    /// The position as a `usize`.
    pub fn as_usize(self) -> usize {
        self.0
    }
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
    Chain(Vec<(RuleIndex, RuleIndex, Edge)>),
    /// Same tier and neither precedes the other.
    Unordered,
}

impl Priority {
    /// The rules from highest to lowest priority.
    pub fn order(&self) -> &[RuleIndex] {
        &self.order
    }

    /// The rule's place in the effective order.
    pub fn position(&self, rule: RuleIndex) -> Option<Position> {
        self.position.get(rule.as_usize()).copied()
    }

    /// Whether rule `a` precedes rule `b` (higher priority).
    pub fn precedes(&self, a: RuleIndex, b: RuleIndex) -> bool {
        self.position(a) < self.position(b)
    }

    /// The rule's tier (an index into [`Catalogue::tiers`]).
    fn tier(&self, rule: RuleIndex) -> Option<usize> {
        self.tiers.get(rule.as_usize()).copied()
    }

    /// Whether `a` and `b` share a tier and neither precedes the other.
    pub fn unordered(&self, a: RuleIndex, b: RuleIndex) -> bool {
        self.tier(a) == self.tier(b) && !self.reaches(a, b) && !self.reaches(b, a)
    }

    /// Whether the rule lies on a cycle of `before`/`after` relations (FL0101): its relations
    /// are ignored, so its place in the order is not what its author meant.
    pub fn on_cycle(&self, rule: RuleIndex) -> bool {
        self.on_cycle.get(rule.as_usize()).copied().unwrap_or(false)
    }

    /// Whether `a` precedes `b` through ranks and relations (inside one tier).
    pub fn reaches(&self, a: RuleIndex, b: RuleIndex) -> bool {
        self.reaches_node(a.as_usize(), b.as_usize())
    }

    /// [`Priority::reaches`] between the graph's rule nodes.
    fn reaches_node(&self, a: usize, b: usize) -> bool {
        if a == b {
            return false;
        }
        let by_rank = match (
            self.graph.rank_group.get(b).copied().flatten(),
            self.chain.get(a).copied().flatten(),
            self.graph.rank_group.get(a).copied().flatten(),
        ) {
            (Some((base_b, group_b, _)), Some(gap), _) => {
                // `a`'s chain lies in its own tier: compare gaps of the same tier only.
                let tier_of_a = self.tier_base(a);
                tier_of_a == Some(base_b) && gap < group_b
            }
            _ => false,
        };
        by_rank
            || self
                .graph
                .target_column
                .get(b)
                .copied()
                .flatten()
                .is_some_and(|column| self.targets.get(a).is_some_and(|row| row.get(column)))
    }

    /// The first gap node of the tier whose chain `rule` reaches, if any.
    fn tier_base(&self, rule: usize) -> Option<usize> {
        self.chain_base.get(rule).copied().flatten()
    }

    /// Explains how `a` and `b` are ordered, from `a`'s point of view.
    pub fn compare(&self, a: RuleIndex, b: RuleIndex) -> Comparison {
        let (Some(tier_a), Some(tier_b)) = (self.tier(a), self.tier(b)) else {
            return Comparison::Unordered;
        };
        if tier_a != tier_b {
            return if tier_a < tier_b {
                Comparison::Tier {
                    winner_tier: tier_a,
                    loser_tier: tier_b,
                }
            } else {
                Comparison::Tier {
                    winner_tier: tier_b,
                    loser_tier: tier_a,
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
        // Breadth-first over the precedence graph gives the shortest explanation.
        Comparison::Chain(
            self.graph
                .path(from.as_usize(), to.as_usize(), false)
                .into_iter()
                .map(|(x, y, edge)| (RuleIndex::new(x), RuleIndex::new(y), edge))
                .collect(),
        )
    }
}

/// Computes the effective order; a cycle of relations is a diagnostic, and the relations on it
/// are then ignored in favour of rank and id so that later stages still run.
pub fn order(catalogue: &Catalogue) -> (Priority, Vec<Diagnostic>) {
    let count = catalogue.rules.len();
    let index: HashMap<&str, usize> = catalogue
        .rules
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id.as_str(), i))
        .collect();
    let mut relations: BTreeMap<(usize, usize), Edge> = BTreeMap::new();
    for (a, rule) in catalogue.rules.iter().enumerate() {
        for other in &rule.before {
            if let Some(&b) = index.get(other.as_str()) {
                relations.insert((a, b), Edge::Before);
            }
        }
        for other in &rule.after {
            if let Some(&b) = index.get(other.as_str()) {
                relations.entry((b, a)).or_insert(Edge::After);
            }
        }
    }
    // Rank groups per tier: the ranked rules of a tier, by distinct rank.
    let mut by_tier: BTreeMap<usize, Vec<(i64, usize)>> = BTreeMap::new();
    for (i, rule) in catalogue.rules.iter().enumerate() {
        if let Some(rank) = rule.rank {
            by_tier.entry(rule.tier).or_default().push((rank, i));
        }
    }
    let mut graph = Graph {
        rules: count,
        rank_group: vec![None; count],
        ranks: catalogue.rules.iter().map(|r| r.rank).collect(),
        ..Graph::default()
    };
    let mut chain_base = vec![None; count];
    for ranked in by_tier.values_mut() {
        ranked.sort_unstable();
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut last_rank = None;
        for &(rank, rule) in ranked.iter() {
            if last_rank != Some(rank) {
                groups.push(Vec::new());
                last_rank = Some(rank);
            }
            if let Some(group) = groups.last_mut() {
                group.push(rule);
            }
        }
        let base = graph.gaps.len();
        let gaps = groups.len().saturating_sub(1);
        for (group_index, members) in groups.iter().enumerate() {
            for &rule in members {
                if let Some(slot) = graph.rank_group.get_mut(rule) {
                    *slot = Some((base, group_index, gaps));
                }
            }
            if group_index > 0 {
                graph.gaps.push((base, group_index - 1, gaps));
                graph.gap_members.push(members.clone());
            }
        }
    }
    // Every rule of a tier with gaps can reach them only through its tier's chain.
    for (i, rule) in catalogue.rules.iter().enumerate() {
        let base = by_tier
            .get(&rule.tier)
            .and_then(|ranked| ranked.first())
            .and_then(|&(_, first)| graph.rank_group.get(first).copied().flatten())
            .filter(|&(_, _, gaps)| gaps > 0)
            .map(|(base, _, _)| base);
        if let Some(slot) = chain_base.get_mut(i) {
            *slot = base;
        }
    }
    graph.relations = relations;
    // Cycles: strongly connected components over every edge.
    let components = strongly_connected(&graph);
    let mut on_cycle = vec![false; count];
    for component in &components {
        let cyclic = match component.as_slice() {
            [single] => graph.relations.contains_key(&(*single, *single)),
            _ => true,
        };
        if cyclic {
            for &node in component {
                if let Some(slot) = on_cycle.get_mut(node) {
                    *slot = true;
                }
            }
        }
    }
    let component_of = {
        let mut of: Vec<Option<usize>> = vec![None; graph.node_count()];
        for (c, component) in components.iter().enumerate() {
            for &node in component {
                if let Some(slot) = of.get_mut(node) {
                    *slot = Some(c);
                }
            }
        }
        of
    };
    let mut diagnostics = Vec::new();
    let mut reported = vec![false; count];
    for start in 0..count {
        if on_cycle.get(start).copied().unwrap_or(false)
            && !reported.get(start).copied().unwrap_or(true)
        {
            let cycle = graph.path(start, start, true);
            for &(a, _, _) in &cycle {
                if let Some(slot) = reported.get_mut(a) {
                    *slot = true;
                }
            }
            if let Some(slot) = reported.get_mut(start) {
                *slot = true;
            }
            diagnostics.push(cycle_diagnostic(catalogue, &cycle));
        }
    }
    // Relations inside a cycle's component are ignored; what remains is acyclic (a cycle needs a
    // relation: ranks only ever lead to later groups).
    graph.kept = vec![Vec::new(); count];
    for &(a, b) in graph.relations.keys() {
        let same =
            component_of.get(a) == component_of.get(b) && on_cycle.get(a).copied().unwrap_or(false);
        if !same && let Some(kept) = graph.kept.get_mut(a) {
            kept.push(b);
        }
    }
    let mut columns = 0;
    graph.target_column = vec![None; count];
    for kept in &graph.kept {
        for &b in kept {
            if let Some(slot) = graph.target_column.get_mut(b)
                && slot.is_none()
            {
                *slot = Some(columns);
                columns += 1;
            }
        }
    }
    // Labels, successors first: components come out of Tarjan's algorithm in reverse
    // topological order, and with cycles' relations ignored every component is one node.
    let nodes = graph.node_count();
    let mut chain: Vec<Option<usize>> = vec![None; nodes];
    let mut targets: Vec<Bits> = vec![Bits::new(columns); nodes];
    let mut successors = Vec::new();
    for node in topological_reverse(&graph) {
        let mut best: Option<usize> = if node >= count {
            graph.gaps.get(node - count).map(|&(_, index, _)| index)
        } else {
            None
        };
        let mut reached = Bits::new(columns);
        graph.successors(node, false, &mut successors);
        for &next in &successors {
            if let Some(Some(found)) = chain.get(next) {
                best = Some(best.map_or(*found, |b| b.min(*found)));
            }
            if let Some(row) = targets.get(next) {
                reached.or(row);
            }
            if let Some(Some(column)) = graph.target_column.get(next) {
                reached.set(*column);
            }
        }
        if let Some(slot) = chain.get_mut(node) {
            *slot = best;
        }
        if let Some(slot) = targets.get_mut(node) {
            *slot = reached;
        }
    }
    chain.truncate(count);
    targets.truncate(count);
    let mut priority = Priority {
        order: Vec::new(),
        position: Vec::new(),
        tiers: catalogue.rules.iter().map(|rule| rule.tier).collect(),
        graph,
        chain,
        chain_base,
        targets,
        on_cycle,
    };
    // Predecessor counts: per tier, how many rules reach each gap (prefix sums), plus the
    // rules reaching a relation target.
    let mut reaching_gap: Vec<usize> = vec![0; priority.graph.gaps.len()];
    for (rule, found) in priority.chain.iter().enumerate() {
        if let (Some(gap), Some(base)) = (found, priority.chain_base.get(rule).copied().flatten())
            && let Some(slot) = reaching_gap.get_mut(base + gap)
        {
            *slot += 1;
        }
    }
    let mut predecessors = vec![0usize; count];
    for (rule, slot) in predecessors.iter_mut().enumerate() {
        let by_rank = match priority.graph.rank_group.get(rule).copied().flatten() {
            // Rules reaching any gap before its group.
            Some((base, group, _)) => (0..group)
                .filter_map(|gap| reaching_gap.get(base + gap))
                .sum::<usize>(),
            None => 0,
        };
        *slot = by_rank;
    }
    for (b, column) in priority.graph.target_column.clone().iter().enumerate() {
        if column.is_none() {
            continue;
        }
        let group_b = priority.graph.rank_group.get(b).copied().flatten();
        let extra = (0..count)
            .filter(|&x| {
                let by_rank = match (group_b, priority.chain.get(x).copied().flatten()) {
                    (Some((base, group, _)), Some(gap)) => {
                        priority.chain_base.get(x).copied().flatten() == Some(base) && gap < group
                    }
                    _ => false,
                };
                !by_rank && priority.reaches_node(x, b)
            })
            .count();
        if let Some(slot) = predecessors.get_mut(b) {
            *slot += extra;
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
    let mut position = vec![Position(0); count];
    for (at, &rule) in order.iter().enumerate() {
        if let Some(slot) = position.get_mut(rule) {
            *slot = Position(at);
        }
    }
    priority.order = order.into_iter().map(RuleIndex::new).collect();
    priority.position = position;
    (priority, diagnostics)
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
pub fn explain(catalogue: &Catalogue, priority: &Priority, a: RuleIndex, b: RuleIndex) -> String {
    let name = |i: RuleIndex| catalogue.rule(i).map(|r| r.id.clone()).unwrap_or_default();
    let tier = |t: usize| catalogue.tiers.get(t).cloned().unwrap_or_default();
    match priority.compare(a, b) {
        Comparison::Tier {
            winner_tier,
            loser_tier,
        } => {
            let (winner, loser) = if catalogue.rule(a).map(|r| r.tier) == Some(winner_tier) {
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
            let rank = |i: RuleIndex| catalogue.rule(i).and_then(|r| r.rank).unwrap_or_default();
            format!(
                "`{}` wins over `{}`: same tier `{}`, and rank {} is lower than rank {}",
                name(first.0),
                name(last.1),
                catalogue
                    .rule(first.0)
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
                .map(|(x, y, edge)| describe_edge(catalogue, x.as_usize(), y.as_usize(), edge))
                .collect();
            format!(
                "`{}` wins over `{}`: {}",
                name(first.0),
                name(last.1),
                steps.join(", and ")
            )
        }
        Comparison::Unordered => format!(
            "`{}` and `{}` are unordered: same tier, and neither ranks nor relations order them (`faultline check` requires that they cannot both fire with different outcomes)",
            name(a),
            name(b)
        ),
    }
}

#[cfg(test)]
#[allow(
    clippy::needless_range_loop,
    reason = "the reference closure is the textbook triple loop over indices"
)]
mod tests {
    use super::*;
    use crate::ir::{Origin, RuleDef};
    use faultline_dsl::{SourceFile, Span};
    use proptest::prelude::*;

    /// A rule of a test catalogue: tier, rank, `before` targets (indices).
    type Shape = (usize, Option<i64>, Vec<usize>);

    fn catalogue(shapes: &[Shape]) -> Catalogue {
        let file = SourceFile::new("test.rules", "");
        let rules = shapes
            .iter()
            .enumerate()
            .map(|(i, (tier, rank, before))| RuleDef {
                id: format!("rule.r{i}"),
                doc: String::new(),
                code: "c".to_owned(),
                confidence: faultline_runtime::Confidence::High,
                scope: faultline_runtime::Scope::Session,
                tier: *tier,
                rank: *rank,
                before: before
                    .iter()
                    .filter(|&&b| b < shapes.len() && shapes[b].0 == *tier)
                    .map(|b| format!("rule.r{b}"))
                    .collect(),
                after: Vec::new(),
                guards: crate::ir::Guards::default(),
                matchers: Vec::new(),
                vetoes: Vec::new(),
                timing: Vec::new(),
                body_reset_at: Vec::new(),
                remediation: None,
                excerpt: None,
                examples: Vec::new(),
                counterexamples: Vec::new(),
                origin: Origin {
                    file: std::sync::Arc::clone(&file),
                    span: Span::new(0, 0),
                },
            })
            .collect();
        Catalogue {
            name: "test".to_owned(),
            version: "test.v1".to_owned(),
            tiers: vec!["a".to_owned(), "b".to_owned()],
            providers: Vec::new(),
            codes: Vec::new(),
            rules,
            policy: None,
        }
    }

    /// The closure the linear-space labels replace: every edge between ranked rules of
    /// neighbouring rank groups and every relation, closed with Warshall's algorithm.
    fn naive_closure(catalogue: &Catalogue) -> Vec<Vec<bool>> {
        let n = catalogue.rules.len();
        let mut reach = vec![vec![false; n]; n];
        let index = |id: &str| catalogue.rules.iter().position(|r| r.id == id);
        for (a, rule) in catalogue.rules.iter().enumerate() {
            for other in &rule.before {
                if let Some(b) = index(other) {
                    reach[a][b] = true;
                }
            }
            for (b, other) in catalogue.rules.iter().enumerate() {
                if let (Some(x), Some(y)) = (rule.rank, other.rank)
                    && rule.tier == other.tier
                    && x < y
                {
                    reach[a][b] = true;
                }
            }
        }
        for k in 0..n {
            for a in 0..n {
                if reach[a][k] {
                    for b in 0..n {
                        if reach[k][b] {
                            reach[a][b] = true;
                        }
                    }
                }
            }
        }
        reach
    }

    fn shapes() -> impl Strategy<Value = Vec<Shape>> {
        prop::collection::vec(
            (
                0..2usize,
                prop::option::of(0..4i64),
                prop::collection::vec(0..12usize, 0..2),
            ),
            1..12,
        )
    }

    proptest! {
        /// Precedence agrees with the full closure, the order is the one the closure's
        /// predecessor counts give, and a cycle is reported exactly when the closure has one.
        #[test]
        fn labels_agree_with_the_full_closure(shapes in shapes()) {
            let catalogue = catalogue(&shapes);
            let (priority, cycles) = order(&catalogue);
            let reach = naive_closure(&catalogue);
            let n = catalogue.rules.len();
            let cyclic = (0..n).any(|a| reach[a][a]);
            prop_assert_eq!(cyclic, !cycles.is_empty());
            if !cyclic {
                for a in 0..n {
                    for b in 0..n {
                        prop_assert_eq!(priority.reaches(RuleIndex::new(a), RuleIndex::new(b)), reach[a][b], "{} {}", a, b);
                    }
                }
                let predecessors = |i: usize| (0..n).filter(|&x| reach[x][i]).count();
                let mut expected: Vec<usize> = (0..n).collect();
                expected.sort_by_key(|&i| {
                    let rule = &catalogue.rules[i];
                    (rule.tier, predecessors(i), rule.rank.unwrap_or(i64::MAX), rule.id.clone())
                });
                prop_assert_eq!(priority.order(), expected.into_iter().map(RuleIndex::new).collect::<Vec<_>>());
            }
            // Whatever the relations, the order respects every precedence it keeps.
            for a in 0..n {
                for b in 0..n {
                    let (ia, ib) = (RuleIndex::new(a), RuleIndex::new(b));
                    if priority.reaches(ia, ib) {
                        prop_assert!(priority.precedes(ia, ib), "{} before {}", a, b);
                    }
                }
            }
        }
    }

    #[test]
    fn a_chain_explanation_names_each_step() {
        let catalogue = catalogue(&[
            (0, Some(1), vec![]),
            (0, Some(2), vec![]),
            (0, Some(3), vec![3]),
            (0, None, vec![]),
        ]);
        let (priority, cycles) = order(&catalogue);
        assert!(cycles.is_empty());
        assert_eq!(
            explain(&catalogue, &priority, RuleIndex::new(0), RuleIndex::new(3)),
            "`rule.r0` wins over `rule.r3`: `rule.r0` (rank 1) precedes `rule.r1` (rank 2), and `rule.r1` (rank 2) precedes `rule.r2` (rank 3), and `rule.r2` is declared `before rule.r3`"
        );
        assert_eq!(
            explain(&catalogue, &priority, RuleIndex::new(1), RuleIndex::new(0)),
            "`rule.r0` wins over `rule.r1`: same tier `a`, and rank 1 is lower than rank 2"
        );
    }
}
