//! `faultline order A B` and `faultline check` agree: for two rules of one tier that nothing
//! orders, `order` runs the same collision analysis on the pair and says what `check` says (a
//! tie is FL0102 in both), never that the pair is proved safe when `check` reports it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "integration tests report failure by panicking"
)]

mod common;

use std::collections::BTreeSet;

use common::{faultline, stdout};
use serde_json::Value;

const PAIRS: &str = "fixtures/order/pairs.rules";

fn rule_ids() -> Vec<String> {
    let text = std::fs::read_to_string(common::root().join(PAIRS)).unwrap();
    text.lines()
        .filter_map(|line| line.strip_prefix("rule "))
        .filter_map(|rest| rest.split_whitespace().next())
        .filter(|id| id.starts_with("order."))
        .map(str::to_owned)
        .collect()
}

/// The pairs `faultline check` reports as ties.
fn ties() -> BTreeSet<(String, String)> {
    let output = faultline(&["check", PAIRS, "--format", "json"]);
    let document: Value = serde_json::from_str(&stdout(&output)).unwrap();
    document["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "FL0102")
        .map(|d| {
            let ids: Vec<String> = d["message"]
                .as_str()
                .unwrap()
                .split('`')
                .skip(1)
                .step_by(2)
                .take(2)
                .map(str::to_owned)
                .collect();
            let mut pair = [ids[0].clone(), ids[1].clone()];
            pair.sort();
            (pair[0].clone(), pair[1].clone())
        })
        .collect()
}

#[test]
fn order_says_what_check_says_for_every_pair() {
    let ties = ties();
    assert!(
        ties.contains(&("order.overloaded.v1".to_owned(), "order.rate.v1".to_owned())),
        "{ties:?}"
    );
    let ids = rule_ids();
    for (i, a) in ids.iter().enumerate() {
        for b in ids.iter().skip(i + 1) {
            let output = faultline(&["order", PAIRS, a, b]);
            let text = stdout(&output);
            let mut pair = [a.clone(), b.clone()];
            pair.sort();
            let tie = ties.contains(&(pair[0].clone(), pair[1].clone()));
            assert_eq!(text.contains("error[FL0102]"), tie, "{a} {b}: {text}");
            assert_eq!(
                output.status.code(),
                Some(if tie { 1 } else { 0 }),
                "{a} {b}: {text}"
            );
            if tie {
                assert!(!text.contains("proves"), "{a} {b}: {text}");
            }
        }
    }
}

#[test]
fn each_verdict_in_words() {
    let cases = [
        ("tie", "order.overloaded.v1", "order.rate.v1"),
        ("same-outcome", "order.overloaded.v1", "order.busy.v1"),
        ("guards", "order.p1.v1", "order.p2.v1"),
        ("disjoint", "order.alpha.v1", "order.beta.v1"),
        ("ranked", "order.first.v1", "order.second.v1"),
        ("ranked-and-unranked", "order.first.v1", "order.busy.v1"),
    ];
    for (name, a, b) in cases {
        let output = faultline(&["order", PAIRS, a, b]);
        insta::assert_snapshot!(format!("order-{name}"), stdout(&output));
    }
}
