//! "Did you mean …?" for misspelt names.

/// The candidate closest to `name`, if one is close enough to be a plausible typo.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .map(|candidate| {
            (
                strsim::jaro_winkler(name, candidate),
                strsim::damerau_levenshtein(name, candidate),
                candidate,
            )
        })
        .filter(|(similarity, distance, _)| *similarity >= 0.8 || *distance <= limit)
        .max_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.2.cmp(a.2)))
        .map(|(_, _, candidate)| candidate)
}

/// A help line: "did you mean `x`? expected one of `a`, `b`, `c`".
pub fn help<'a>(
    name: &str,
    what: &str,
    candidates: impl IntoIterator<Item = &'a str> + Clone,
) -> String {
    let list: Vec<String> = candidates
        .clone()
        .into_iter()
        .map(|c| format!("`{c}`"))
        .collect();
    let listing = if list.is_empty() {
        format!("no {what} is declared")
    } else if list.len() <= 12 {
        format!("expected one of {}", list.join(", "))
    } else {
        format!("{} {what}s are declared", list.len())
    };
    match closest(name, candidates) {
        Some(best) => format!("did you mean `{best}`? ({listing})"),
        None => listing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_names_are_suggested_and_far_ones_are_not() {
        let phases = ["prompt_send", "streaming", "shutdown"];
        assert_eq!(closest("strem", phases), Some("streaming"));
        assert_eq!(closest("streamin", phases), Some("streaming"));
        assert_eq!(closest("banana", phases), None);
        assert!(help("shutdwn", "phase", phases).starts_with("did you mean `shutdown`?"));
    }
}
