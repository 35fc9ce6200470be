//! The precedence graph (one node per rule, then one per gap between a tier's rank groups),
//! its shortest explanations, strongly connected components and topological order, and the
//! bit sets its reachability labels are kept in.

use std::collections::BTreeMap;

use super::Edge;

/// The precedence graph: one node per rule, then per tier one node per gap between
/// consecutive rank groups (gap `j` follows group `j` and precedes group `j + 1`).
#[derive(Debug, Clone, Default)]
pub(super) struct Graph {
    pub(super) rules: usize,
    /// Per ranked rule: (its tier's first gap node, its rank group, the tier's gap count).
    pub(super) rank_group: Vec<Option<(usize, usize, usize)>>,
    /// Per gap node: (tier's first gap node, gap index, gaps in the tier).
    pub(super) gaps: Vec<(usize, usize, usize)>,
    /// Per gap node: the rules of the group after it.
    pub(super) gap_members: Vec<Vec<usize>>,
    /// Ranks per rule (for explanations).
    pub(super) ranks: Vec<Option<i64>>,
    /// Relation edges `(a, b) → why`, `a` precedes `b`.
    pub(super) relations: BTreeMap<(usize, usize), Edge>,
    /// Relation edges kept for precedence (not on a cycle), by source.
    pub(super) kept: Vec<Vec<usize>>,
    /// Per rule: its column among relation targets, if it is one.
    pub(super) target_column: Vec<Option<usize>>,
}

impl Graph {
    pub(super) fn node_count(&self) -> usize {
        self.rules + self.gaps.len()
    }

    /// Successors of a node; `all_relations` includes the relations ignored on cycles.
    pub(super) fn successors(&self, node: usize, all_relations: bool, out: &mut Vec<usize>) {
        out.clear();
        if node < self.rules {
            if let Some(&Some((base, group, gaps))) = self.rank_group.get(node)
                && group < gaps
            {
                out.push(base + group + self.rules);
            }
            if all_relations {
                out.extend(
                    self.relations
                        .range((node, 0)..=(node, usize::MAX))
                        .map(|(&(_, b), _)| b),
                );
            } else if let Some(kept) = self.kept.get(node) {
                out.extend(kept);
            }
        } else {
            let gap = node - self.rules;
            if let Some(&(base, index, count)) = self.gaps.get(gap)
                && index + 1 < count
            {
                out.push(base + index + 1 + self.rules);
            }
            if let Some(members) = self.gap_members.get(gap) {
                out.extend(members);
            }
        }
    }

    /// A shortest path of precedence from rule `from` to rule `to` (to itself: a cycle), as
    /// steps between rules: a relation, or a rank step from one rank group to the next.
    /// Breadth-first over rules, successors in index order: the explanation the closure over
    /// explicit edges gave. The rules of a group share their rank successors, so a group's are
    /// looked at once.
    pub(super) fn path(
        &self,
        from: usize,
        to: usize,
        all_relations: bool,
    ) -> Vec<(usize, usize, Edge)> {
        let mut previous: Vec<Option<usize>> = vec![None; self.rules];
        let mut expanded = vec![false; self.gaps.len()];
        let mut queue = std::collections::VecDeque::from([from]);
        let mut found = false;
        let mut successors: Vec<usize> = Vec::new();
        'search: while let Some(current) = queue.pop_front() {
            successors.clear();
            if all_relations {
                successors.extend(
                    self.relations
                        .range((current, 0)..=(current, usize::MAX))
                        .map(|(&(_, b), _)| b),
                );
            } else if let Some(kept) = self.kept.get(current) {
                successors.extend(kept);
            }
            if let Some(&Some((base, group, gaps))) = self.rank_group.get(current)
                && group < gaps
                && let Some(done) = expanded.get_mut(base + group)
                && !*done
            {
                *done = true;
                successors.extend(self.gap_members.get(base + group).into_iter().flatten());
            }
            successors.sort_unstable();
            successors.dedup();
            for &next in &successors {
                if next == to {
                    if let Some(slot) = previous.get_mut(to) {
                        *slot = Some(current);
                    }
                    found = true;
                    break 'search;
                }
                if next != from
                    && let Some(slot) = previous.get_mut(next)
                    && slot.is_none()
                {
                    *slot = Some(current);
                    queue.push_back(next);
                }
            }
        }
        if !found {
            return Vec::new();
        }
        let mut steps = Vec::new();
        let mut at = to;
        while let Some(Some(before)) = previous.get(at).copied() {
            let edge = self
                .relations
                .get(&(before, at))
                .cloned()
                .unwrap_or_else(|| {
                    let rank = |i: usize| self.ranks.get(i).copied().flatten().unwrap_or_default();
                    Edge::Rank(rank(before), rank(at))
                });
            steps.push((before, at, edge));
            at = before;
            if at == from || steps.len() > self.rules {
                break;
            }
        }
        steps.reverse();
        steps
    }
}

/// Strongly connected components of the precedence graph (every edge), in reverse topological
/// order (Tarjan's algorithm, with an explicit stack).
pub(super) fn strongly_connected(graph: &Graph) -> Vec<Vec<usize>> {
    let nodes = graph.node_count();
    // Per node: its discovery index, once visited.
    let mut index: Vec<Option<usize>> = vec![None; nodes];
    let mut low = vec![0usize; nodes];
    let mut on_stack = vec![false; nodes];
    let mut stack: Vec<usize> = Vec::new();
    let mut components = Vec::new();
    let mut next_index = 0;
    let mut successors = Vec::new();
    for root in 0..nodes {
        if index.get(root).copied() != Some(None) {
            continue;
        }
        // Frames: (node, its successors, next successor to visit).
        let mut frames: Vec<(usize, Vec<usize>, usize)> = Vec::new();
        graph.successors(root, true, &mut successors);
        frames.push((root, successors.clone(), 0));
        if let (Some(i), Some(l)) = (index.get_mut(root), low.get_mut(root)) {
            *i = Some(next_index);
            *l = next_index;
        }
        next_index += 1;
        stack.push(root);
        if let Some(slot) = on_stack.get_mut(root) {
            *slot = true;
        }
        while let Some((node, node_successors, cursor)) = frames.last_mut() {
            let node = *node;
            if let Some(&next) = node_successors.get(*cursor) {
                *cursor += 1;
                if index.get(next).copied() == Some(None) {
                    if let (Some(i), Some(l)) = (index.get_mut(next), low.get_mut(next)) {
                        *i = Some(next_index);
                        *l = next_index;
                    }
                    next_index += 1;
                    stack.push(next);
                    if let Some(slot) = on_stack.get_mut(next) {
                        *slot = true;
                    }
                    graph.successors(next, true, &mut successors);
                    frames.push((next, successors.clone(), 0));
                } else if on_stack.get(next).copied().unwrap_or(false)
                    && let (Some(Some(next_index_value)), Some(l)) =
                        (index.get(next).copied(), low.get_mut(node))
                {
                    *l = (*l).min(next_index_value);
                }
                continue;
            }
            frames.pop();
            let node_low = low.get(node).copied().unwrap_or(0);
            if let Some((parent, _, _)) = frames.last()
                && let Some(l) = low.get_mut(*parent)
            {
                *l = (*l).min(node_low);
            }
            if index.get(node).copied() == Some(Some(node_low)) {
                let mut component = Vec::new();
                while let Some(member) = stack.pop() {
                    if let Some(slot) = on_stack.get_mut(member) {
                        *slot = false;
                    }
                    component.push(member);
                    if member == node {
                        break;
                    }
                }
                components.push(component);
            }
        }
    }
    components
}

/// The nodes of the precedence graph without the relations ignored on cycles, successors
/// before predecessors.
pub(super) fn topological_reverse(graph: &Graph) -> Vec<usize> {
    let nodes = graph.node_count();
    let mut done = vec![false; nodes];
    let mut out = Vec::with_capacity(nodes);
    let mut successors = Vec::new();
    for root in 0..nodes {
        if done.get(root).copied().unwrap_or(true) {
            continue;
        }
        // Depth-first, post-order, with an explicit stack; `done` marks nodes once entered.
        if let Some(slot) = done.get_mut(root) {
            *slot = true;
        }
        graph.successors(root, false, &mut successors);
        let mut frames: Vec<(usize, Vec<usize>, usize)> = vec![(root, successors.clone(), 0)];
        while let Some((node, node_successors, cursor)) = frames.last_mut() {
            if let Some(&next) = node_successors.get(*cursor) {
                *cursor += 1;
                if !done.get(next).copied().unwrap_or(true) {
                    if let Some(slot) = done.get_mut(next) {
                        *slot = true;
                    }
                    graph.successors(next, false, &mut successors);
                    frames.push((next, successors.clone(), 0));
                }
                continue;
            }
            out.push(*node);
            frames.pop();
        }
    }
    out
}

/// A fixed-size set of rule indices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Bits(Vec<u64>);

impl Bits {
    pub(super) fn new(len: usize) -> Self {
        Bits(vec![0; len.div_ceil(64)])
    }

    pub(super) fn get(&self, index: usize) -> bool {
        self.0
            .get(index / 64)
            .is_some_and(|word| word >> (index % 64) & 1 == 1)
    }

    pub(super) fn set(&mut self, index: usize) {
        if let Some(word) = self.0.get_mut(index / 64) {
            *word |= 1 << (index % 64);
        }
    }

    pub(super) fn or(&mut self, other: &Bits) {
        for (word, other) in self.0.iter_mut().zip(&other.0) {
            *word |= other;
        }
    }
}
