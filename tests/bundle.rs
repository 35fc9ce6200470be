//! Bundles: deterministic builds, validated loads, and the documented error for every kind of
//! damage; random and mutated bundles never make the loader (or a classification) panic.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "integration tests report failure by panicking"
)]

mod common;

use std::sync::LazyLock;

use faultline_dsl::load;
use faultline_runtime::build as wire;
use faultline_runtime::{Bundle, Evidence, LoadErrorKind, RecoveryPolicy, TextView};
use proptest::prelude::*;

fn build(directory: &str) -> Vec<u8> {
    build_root(&common::root().join(directory).join("catalogue.rules"))
}

fn build_root(root: &std::path::Path) -> Vec<u8> {
    let (loaded, diagnostics) = load(root, &FileSystem).unwrap();
    assert!(diagnostics.is_empty());
    let compilation = faultline_compiler::Compiler::new().compile(&loaded);
    assert!(!compilation.has_errors(), "{:#?}", compilation.diagnostics);
    compilation.bundle.expect("a clean catalogue builds")
}

use common::FileSystem;

static CATALOGUE: LazyLock<Vec<u8>> = LazyLock::new(|| build("catalogue"));

/// A small bundle (seven rules, several automata; tens of kilobytes rather than megabytes), for
/// the tests that load thousands of damaged copies: every load hashes the whole file.
static SMALL: LazyLock<Vec<u8>> =
    LazyLock::new(|| build_root(&common::root().join("fixtures/valid/all-constructs.rules")));
/// A small bundle with DFA sections: its rules cannot be gated by the prefilter, so their
/// patterns keep DFAs (format 8 gives none to patterns only gated rules read).
static WITH_AUTOMATA: LazyLock<Vec<u8>> =
    LazyLock::new(|| build_root(&common::root().join("fixtures/valid/scanned-by-dfa.rules")));

fn header_len(bytes: &[u8]) -> usize {
    u32::from_le_bytes(bytes[16..20].try_into().unwrap()) as usize
}

/// Recomputes the content hash, so that deliberate damage reaches the deeper validation.
fn rehash(bytes: &mut [u8]) {
    let hash = wire::content_hash(bytes).unwrap();
    bytes[wire::HASH_RANGE].copy_from_slice(&hash);
}

#[test]
fn building_twice_gives_identical_bytes_and_the_bundle_loads() {
    assert_eq!(build("catalogue"), *CATALOGUE);
    let bundle = Bundle::from_bytes(&CATALOGUE).unwrap();
    assert_eq!(bundle.header().catalogue_version(), "provider-errors.v1");
    let evidence = Evidence::new().with_http_status(529);
    assert_eq!(bundle.classify(&evidence).rule, "http.529");
}

#[test]
fn truncated_bundles_are_refused() {
    let bytes = &*CATALOGUE;
    assert_eq!(
        Bundle::from_bytes(&[]).unwrap_err().kind(),
        LoadErrorKind::Truncated
    );
    assert_eq!(
        Bundle::from_bytes(&bytes[..20]).unwrap_err().kind(),
        LoadErrorKind::Truncated
    );
    assert_eq!(
        Bundle::from_bytes(&bytes[..87]).unwrap_err().kind(),
        LoadErrorKind::Truncated
    );
    // Cut inside the header strings or the body: the content hash, over the whole file, no
    // longer matches (no byte but the versioned prefix is read before the hash is checked).
    assert_eq!(
        Bundle::from_bytes(&bytes[..header_len(bytes) - 1])
            .unwrap_err()
            .kind(),
        LoadErrorKind::HashMismatch
    );
    assert_eq!(
        Bundle::from_bytes(&bytes[..bytes.len() - 1])
            .unwrap_err()
            .kind(),
        LoadErrorKind::HashMismatch
    );
    // Cut inside the body with the hash fixed up: the section table catches it.
    let mut cut = bytes[..bytes.len() - 100].to_vec();
    rehash(&mut cut);
    assert_eq!(
        Bundle::from_bytes(&cut).unwrap_err().kind(),
        LoadErrorKind::Truncated
    );
}

#[test]
fn flipped_bits_are_refused_with_the_error_for_where_they_are() {
    let bytes = &*CATALOGUE;
    let mut magic = bytes.clone();
    magic[0] ^= 0x01;
    assert_eq!(
        Bundle::from_bytes(&magic).unwrap_err().kind(),
        LoadErrorKind::BadMagic
    );
    let mut body = bytes.clone();
    let middle = header_len(bytes) + (bytes.len() - header_len(bytes)) / 2;
    body[middle] ^= 0x10;
    assert_eq!(
        Bundle::from_bytes(&body).unwrap_err().kind(),
        LoadErrorKind::HashMismatch
    );
    let mut hash = bytes.clone();
    hash[30] ^= 0x80;
    assert_eq!(
        Bundle::from_bytes(&hash).unwrap_err().kind(),
        LoadErrorKind::HashMismatch
    );
}

#[test]
fn version_bumps_are_refused() {
    let mut too_new = CATALOGUE.clone();
    too_new[10..12].copy_from_slice(&(wire::READER_VERSION + 1).to_le_bytes());
    assert_eq!(
        Bundle::from_bytes(&too_new).unwrap_err().kind(),
        LoadErrorKind::TooNew
    );
    let mut too_old = CATALOGUE.clone();
    too_old[8..10].copy_from_slice(&(wire::OLDEST_READABLE_VERSION - 1).to_le_bytes());
    assert_eq!(
        Bundle::from_bytes(&too_old).unwrap_err().kind(),
        LoadErrorKind::TooOld
    );
    // The regex-automata version lives in the header strings: "0.4" becomes "9.4". Unsealed,
    // that is damage; resealed, it is a bundle of another regex-automata.
    let mut other_automata = CATALOGUE.clone();
    let at = other_automata.windows(3).position(|w| w == b"0.4").unwrap();
    other_automata[at] = b'9';
    assert_eq!(
        Bundle::from_bytes(&other_automata).unwrap_err().kind(),
        LoadErrorKind::HashMismatch
    );
    rehash(&mut other_automata);
    assert_eq!(
        Bundle::from_bytes(&other_automata).unwrap_err().kind(),
        LoadErrorKind::RegexAutomataVersion
    );
}

fn classify_a_few(bundle: &Bundle) {
    for text in [
        "",
        "API Error: 529 overloaded",
        "connect ECONNREFUSED",
        "é\u{212A}",
    ] {
        let evidence = Evidence::new()
            .with_stderr(text.to_owned())
            .with_http_status(503);
        let _ = bundle.classify(&evidence);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        prop_assert!(Bundle::from_bytes(&bytes).is_err());
    }

    #[test]
    fn any_single_byte_change_is_refused(at in any::<prop::sample::Index>(), mask in 1u8..=255) {
        let mut bytes = SMALL.clone();
        let at = at.index(bytes.len());
        bytes[at] ^= mask;
        let error = Bundle::from_bytes(&bytes).unwrap_err();
        prop_assert_eq!((error.kind(), error.to_string()), expected_refusal(&bytes, at));
    }

    #[test]
    fn mutated_bundles_never_panic(edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8), rehashed in any::<bool>()) {
        let mut bytes = CATALOGUE.clone();
        for (at, value) in edits {
            let index = at.index(bytes.len());
            bytes[index] = value;
        }
        if rehashed && bytes.len() > 56 {
            rehash(&mut bytes);
        }
        if let Ok(bundle) = Bundle::from_bytes(&bytes) {
            classify_a_few(&bundle);
        }
    }

    #[test]
    fn mutated_models_never_panic(at in any::<prop::sample::Index>(), value in any::<u8>(), truncate in any::<bool>()) {
        // Damage the catalogue model section (section 0) and fix the hash, so that postcard
        // decoding and the model's validation see it.
        let mut bytes = CATALOGUE.clone();
        let body = header_len(&bytes);
        let offset = u64::from_le_bytes(bytes[body..body + 8].try_into().unwrap()) as usize;
        let len = u64::from_le_bytes(bytes[body + 8..body + 16].try_into().unwrap()) as usize;
        let index = body + offset + at.index(len);
        bytes[index] = value;
        if truncate {
            bytes[body + 8..body + 16].copy_from_slice(&((len / 2) as u64).to_le_bytes());
        }
        rehash(&mut bytes);
        if let Ok(bundle) = Bundle::from_bytes(&bytes) {
            classify_a_few(&bundle);
        }
    }
}

#[test]
fn a_section_offset_near_the_end_of_the_address_space_is_refused_not_overflowed() {
    let mut bytes = CATALOGUE.clone();
    let body = header_len(&bytes);
    bytes[body..body + 8].copy_from_slice(&(u64::MAX - 10).to_le_bytes());
    bytes[body + 8..body + 16].copy_from_slice(&0u64.to_le_bytes());
    rehash(&mut bytes);
    assert!(Bundle::from_bytes(&bytes).is_err());
}

/// What the reader must answer for `bytes`, a copy of the catalogue's bundle with the byte at
/// `at` changed: the versioned prefix is judged as such, every other byte by the content hash.
/// The kind of the refusal and its message, word for word.
fn expected_refusal(bytes: &[u8], at: usize) -> (LoadErrorKind, String) {
    let u16_at = |offset: usize| u16::from_le_bytes([bytes[offset], bytes[offset + 1]]);
    match at {
        0..8 => (
            LoadErrorKind::BadMagic,
            "not a faultline bundle (bad magic bytes)".to_owned(),
        ),
        8..10 if u16_at(8) < wire::OLDEST_READABLE_VERSION => (
            LoadErrorKind::TooOld,
            format!(
                "the bundle's format version {} is older than the oldest readable, {}; rebuild it",
                u16_at(8),
                wire::OLDEST_READABLE_VERSION
            ),
        ),
        10..12 if u16_at(10) > wire::READER_VERSION => (
            LoadErrorKind::TooNew,
            format!(
                "the bundle (format {}) needs reader version {}; this reader is version {}",
                u16_at(8),
                u16_at(10),
                wire::READER_VERSION
            ),
        ),
        _ => (
            LoadErrorKind::HashMismatch,
            "the bundle's content hash does not match its contents (corrupted file)".to_owned(),
        ),
    }
}

/// Every single-bit flip, and inverting the byte.
const EVERY_BIT: [u8; 9] = [0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xFF];

/// Changes the byte at `at` of `original` by each mask and checks that each copy is refused
/// with the error for where the byte is.
fn assert_every_change_is_refused(original: &[u8], at: usize, masks: &[u8]) {
    for mask in masks {
        let mut bytes = original.to_vec();
        bytes[at] ^= mask;
        let expected = expected_refusal(&bytes, at);
        match Bundle::from_bytes(&bytes) {
            Ok(bundle) => panic!(
                "byte {at} ^ {mask:#04x} was accepted (catalogue version `{}`)",
                bundle.header().catalogue_version()
            ),
            Err(error) => assert_eq!(
                (error.kind(), error.to_string()),
                expected,
                "byte {at} ^ {mask:#04x}"
            ),
        }
    }
}

#[test]
fn every_byte_of_the_header_is_covered_by_the_integrity_check() {
    // Regression (issue 10, item 14): format 2 hashed only the body, so a changed format
    // version, manifest hash, catalogue name, compiler version or catalogue version loaded, and
    // the corrupted catalogue version was stamped on every classification.
    let header = header_len(&SMALL);
    assert!(header > 88, "the header holds its strings");
    for at in 0..header {
        assert_every_change_is_refused(&SMALL, at, &EVERY_BIT);
    }
    // The shipped catalogue's header (other strings, other length), one change per byte: each
    // load hashes its megabytes.
    for at in 0..header_len(&CATALOGUE) {
        assert_every_change_is_refused(&CATALOGUE, at, &[0xFF]);
    }
}

#[test]
fn a_sample_of_body_bytes_is_covered_by_the_integrity_check() {
    let bytes = &*WITH_AUTOMATA;
    let header = header_len(bytes);
    let sections = u32::from_le_bytes(bytes[20..24].try_into().unwrap()) as usize;
    let table_end = header + 16 * sections;
    assert!(sections >= 3, "a model and several automata");
    // The whole section table, the first and last byte of every section, and 512 bytes spread
    // evenly over the body: deterministic, so a failure names a byte that can be looked at.
    let mut sample: Vec<usize> = (header..table_end).collect();
    for section in 0..sections {
        let entry = header + 16 * section;
        let offset = u64::from_le_bytes(bytes[entry..entry + 8].try_into().unwrap()) as usize;
        let len = u64::from_le_bytes(bytes[entry + 8..entry + 16].try_into().unwrap()) as usize;
        // An empty section (format 9's literal table, when the catalogue has no literals) has
        // no byte of its own.
        if len > 0 {
            sample.extend([header + offset, header + offset + len - 1]);
        }
    }
    let body = bytes.len() - header;
    sample.extend((0..512).map(|k| header + k * body / 512));
    sample.push(bytes.len() - 1);
    sample.sort_unstable();
    sample.dedup();
    for at in sample {
        assert_every_change_is_refused(bytes, at, &EVERY_BIT);
    }
}

#[test]
fn bytes_added_or_removed_anywhere_are_refused() {
    let bytes = &*CATALOGUE;
    let mut longer = bytes.clone();
    longer.push(0);
    assert_eq!(
        Bundle::from_bytes(&longer).unwrap_err().kind(),
        LoadErrorKind::HashMismatch
    );
    for at in [12, 30, 60, 90, header_len(bytes), bytes.len() / 2] {
        let mut shorter = bytes.clone();
        shorter.remove(at);
        assert!(Bundle::from_bytes(&shorter).is_err(), "byte {at} removed");
        let mut inserted = bytes.clone();
        inserted.insert(at, 0);
        assert!(
            Bundle::from_bytes(&inserted).is_err(),
            "byte inserted at {at}"
        );
    }
}

#[test]
fn a_changed_catalogue_version_is_refused_not_stamped_on_classifications() {
    let mut bytes = CATALOGUE.clone();
    let version = b"provider-errors.v1";
    let at = bytes
        .windows(version.len())
        .position(|window| window == version)
        .unwrap();
    bytes[at + version.len() - 1] = b'7';
    assert_eq!(
        Bundle::from_bytes(&bytes).unwrap_err().kind(),
        LoadErrorKind::HashMismatch
    );
}

#[test]
fn a_format_2_bundle_is_refused_as_too_old_and_a_format_3_reader_is_required() {
    let bundle = Bundle::from_bytes(&CATALOGUE).unwrap();
    assert_eq!(bundle.header().format_version(), wire::FORMAT_VERSION);
    assert_eq!(bundle.header().min_reader_version(), wire::READER_VERSION);
    let mut old = CATALOGUE.clone();
    old[8..10].copy_from_slice(&2u16.to_le_bytes());
    old[10..12].copy_from_slice(&1u16.to_le_bytes());
    let error = Bundle::from_bytes(&old).unwrap_err();
    assert_eq!(error.kind(), LoadErrorKind::TooOld);
    assert_eq!(error.format_version(), Some(2));
    assert_eq!(
        error.to_string(),
        "the bundle's format version 2 is older than the oldest readable, 3; rebuild it"
    );
}

/// The numbers `docs/bundle.md` states right after `phrase` (the page states each as
/// `phrase N`).
fn stated_after(page: &str, phrase: &str) -> Vec<u16> {
    page.match_indices(phrase)
        .map(|(index, _)| {
            let digits: String = page[index + phrase.len()..]
                .trim_start_matches(['*', '`', ' ', '\n'])
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits
                .parse()
                .unwrap_or_else(|_| panic!("docs/bundle.md: no number after `{phrase}`"))
        })
        .collect()
}

#[test]
fn docs_state_the_versions_and_hash_range_of_the_code() {
    // Regression (issue 10, item 23): the page said "this release writes 1" while the code wrote
    // format 2. Every version the page states is checked against the constants.
    let page = std::fs::read_to_string(common::root().join("docs/bundle.md")).unwrap();
    let cases = [
        ("writes format", wire::FORMAT_VERSION),
        ("only with reader version", wire::READER_VERSION),
        ("oldest readable format", wire::OLDEST_READABLE_VERSION),
    ];
    for (phrase, constant) in cases {
        let stated = stated_after(&page, phrase);
        assert!(
            !stated.is_empty(),
            "docs/bundle.md never states `{phrase} N`"
        );
        assert!(
            stated.iter().all(|n| *n == constant),
            "docs/bundle.md states `{phrase}` {stated:?}; the code says {constant}"
        );
    }
    let hash_row = format!(
        "| {} | {} | content hash",
        wire::HASH_RANGE.start,
        wire::HASH_RANGE.len()
    );
    assert!(
        page.contains(&hash_row),
        "docs/bundle.md's layout has no row `{hash_row}`"
    );
    // `faultline inspect` prints the versions the page states.
    let directory = std::env::temp_dir().join(format!("faultline-bundle-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let path = directory.join("catalogue.flb");
    std::fs::write(&path, &*CATALOGUE).unwrap();
    let inspected = common::faultline(&["inspect", path.to_str().unwrap()]);
    std::fs::remove_dir_all(&directory).unwrap();
    let expected = format!(
        "format            {} (needs reader {})",
        wire::FORMAT_VERSION,
        wire::READER_VERSION
    );
    assert!(
        common::stdout(&inspected).contains(&expected),
        "inspect does not print `{expected}`:\n{}",
        common::stdout(&inspected)
    );
}

#[test]
fn golden_bundles_load_or_are_refused_as_their_format_requires() {
    let golden =
        |name: &str| std::fs::read(common::root().join("fixtures/bundles").join(name)).unwrap();
    // A stored bundle of the current format loads and classifies as its catalogue says.
    let current = Bundle::from_bytes(&golden("format-9-redaction-markers.flb")).unwrap();
    assert_eq!(current.header().format_version(), wire::FORMAT_VERSION);
    let evidence = Evidence::new().with_stderr("session ses_abc123 expired".to_owned());
    assert_eq!(
        current.classify(&evidence).rule,
        "markers.session_expired.v1"
    );
    // An older format is refused as too old, naming its version: never misread.
    match Bundle::from_bytes(&golden("format-2-redaction-markers.flb")) {
        Err(error) if error.kind() == LoadErrorKind::TooOld => {
            assert_eq!(error.format_version(), Some(2))
        }
        other => panic!("a format-2 bundle must be refused as too old: {other:?}"),
    }
    // Formats 3 (before rules could guard headers or the body), 4 (before text matchers
    // could read the body, issue 12), 5 (before bundles carried a recovery policy, issue 14; 3 to
    // 5 are given the reference's default policy), 6 (before prefilter conjuncts, issue 16), 7
    // (before patterns of gated rules went without a DFA) and 8 (before the prefilter's literal
    // table: its automaton is built at load) are still read and classify as they did.
    for (name, version) in [
        ("format-3-redaction-markers.flb", 3),
        ("format-4-redaction-markers.flb", 4),
        ("format-5-redaction-markers.flb", 5),
        ("format-6-redaction-markers.flb", 6),
        ("format-7-redaction-markers.flb", 7),
        ("format-8-redaction-markers.flb", 8),
    ] {
        let previous = Bundle::from_bytes(&golden(name)).unwrap();
        assert_eq!(previous.header().format_version(), version);
        assert_eq!(
            previous.classify(&evidence).rule,
            "markers.session_expired.v1"
        );
        let rule = previous
            .rules()
            .find(|rule| rule.id() == "markers.session_expired.v1")
            .unwrap();
        assert!(rule.matchers().all(|matcher| matcher.pointer().is_none()));
        // The catalogue has no `policy` block, so every format gets the reference's defaults.
        assert_eq!(*previous.policy(), RecoveryPolicy::reference());
    }
}

/// A bundle of nothing but `policy` (no rules, no automata), written as the compiler would.
fn policy_bundle(policy: Option<RecoveryPolicy>) -> Vec<u8> {
    write_model(&bare_model(policy))
}

fn write_model(model: &wire::CatalogueModel) -> Vec<u8> {
    wire::write(&wire::BundleContents {
        catalogue_name: "policy",
        catalogue_version: "policy.v1",
        compiler_version: "test",
        manifest_hash: [0; 32],
        model,
        automata: &[],
    })
    .unwrap()
}

#[test]
fn a_prefilter_conjunct_that_names_a_missing_literal_or_an_ungated_rule_is_refused() {
    let mut missing_rule = bare_model(None);
    missing_rule.requirements.push(wire::RequirementEntry {
        rule: 7,
        literals: vec![0],
    });
    let mut ungated = bare_model(None);
    ungated.literals.push(wire::LiteralEntry {
        literal: "quota".to_owned(),
        folds_beyond_ascii: false,
        rules: vec![0],
    });
    ungated.requirements.push(wire::RequirementEntry {
        rule: 0,
        literals: vec![0],
    });
    let mut empty = ungated.clone();
    empty.rules[0].gated = true;
    empty.requirements[0].literals.clear();
    let mut unlisted = ungated.clone();
    unlisted.rules[0].gated = true;
    unlisted.literals[0].rules.clear();
    for (what, model) in [
        ("a missing rule", missing_rule),
        ("an ungated rule", ungated),
        ("an empty conjunct", empty),
        ("a literal that does not list the rule", unlisted),
    ] {
        let error = Bundle::from_bytes(&write_model(&model)).unwrap_err();
        assert_eq!(error.kind(), LoadErrorKind::Malformed, "{what}");
        assert!(
            error.to_string().contains("prefilter conjunct"),
            "{what}: {error}"
        );
    }
    // A gated rule left without any conjunct could never be admitted: refused too.
    let mut stranded = bare_model(None);
    stranded.rules[0].gated = true;
    stranded.rules[0].matchers.push(wire::MatcherEntry {
        view: TextView::Raw,
        pointer: None,
        kind: wire::MatcherKindEntry::Whole {
            literal: "quota".to_owned(),
            ignore_case: true,
        },
    });
    let error = Bundle::from_bytes(&write_model(&stranded)).unwrap_err();
    assert_eq!(error.kind(), LoadErrorKind::Malformed);
}

fn bare_model(policy: Option<RecoveryPolicy>) -> wire::CatalogueModel {
    use faultline_runtime::{Class, Confidence, Scope};
    // One catch-all rule: classification always returns a result.
    wire::CatalogueModel {
        redaction_version: faultline_runtime::REDACTION_VERSION.to_owned(),
        tiers: vec!["fallback".to_owned()],
        codes: vec![wire::CodeEntry {
            name: "unknown".to_owned(),
            class: Class::Unclassified,
            auto_retryable: false,
            fallback_allowed: false,
            user_action: false,
            scope: Scope::Session,
            remediation: None,
        }],
        rules: vec![wire::RuleEntry {
            id: "fallback.any".to_owned(),
            doc: String::new(),
            code: 0,
            confidence: Confidence::Low,
            scope: Scope::Session,
            tier: 0,
            guards: wire::GuardsEntry {
                phase: None,
                provider_id: None,
                source: None,
                http_status: None,
                exit_code: None,
                present: Vec::new(),
                headers: Vec::new(),
                body: Vec::new(),
            },
            matchers: Vec::new(),
            vetoes: Vec::new(),
            timing: Vec::new(),
            body_reset_at: Vec::new(),
            excerpt: None,
            remediation: None,
            gated: false,
            verified_examples: 0,
        }],
        views: Vec::new(),
        literals: Vec::new(),
        policy,
        requirements: Vec::new(),
    }
}

#[test]
fn the_catalogue_policy_travels_in_the_bundle_and_an_invalid_one_is_refused_on_load() {
    // The catalogue's policy block is what the bundle carries.
    let bundle = Bundle::from_bytes(&CATALOGUE).unwrap();
    let policy = bundle.policy();
    assert_eq!(policy.transient.retry.max_retries, 3);
    assert_eq!(policy.hard.wait_for_reset.max_wait_seconds, 7 * 86_400);
    assert_eq!(policy.ladder.steps_seconds, [5, 10, 20, 40, 60]);
    // A bundle without a policy gets the reference's defaults.
    let bare = Bundle::from_bytes(&policy_bundle(None)).unwrap();
    assert_eq!(*bare.policy(), RecoveryPolicy::reference());
    // A policy that breaks a rule of reference §F.1 never loads: it would authorise nothing.
    let mut invalid = RecoveryPolicy::reference();
    invalid.transient.retry.max_retries = 3;
    let error = Bundle::from_bytes(&policy_bundle(Some(invalid))).unwrap_err();
    assert_eq!(error.kind(), LoadErrorKind::Malformed);
    assert!(
        error.to_string().contains("transient.retry") && error.to_string().contains("zeros"),
        "{error}"
    );
    let mut too_many = RecoveryPolicy::reference();
    too_many.ladder.max_attempts = 0;
    let error = Bundle::from_bytes(&policy_bundle(Some(too_many))).unwrap_err();
    assert!(error.to_string().contains("ladder.max_attempts"), "{error}");
}

#[test]
fn the_views_show_the_rules_in_priority_order_with_their_matchers_and_automata() {
    // Regression (issue 11): `inspect` and `explain` read the wire model, which every reader
    // then depended on; they read these views now.
    let bundle = Bundle::from_bytes(&CATALOGUE).unwrap();
    let header = bundle.header();
    assert_eq!(header.catalogue_version(), "provider-errors.v1");
    assert_eq!(
        header.redaction_version(),
        faultline_runtime::REDACTION_VERSION
    );
    assert_eq!(header.content_hash_hex().len(), 64);
    assert_eq!(&header.content_hash()[..], &CATALOGUE[wire::HASH_RANGE]);
    let rules: Vec<_> = bundle.rules().collect();
    assert!(rules.len() > 10);
    for (index, rule) in rules.iter().enumerate() {
        assert_eq!(rule.position().as_usize(), index);
        assert_eq!(bundle.rule_position(rule.id()), Some(rule.position()));
        assert_eq!(bundle.rule(rule.position()).unwrap().id(), rule.id());
        assert!(!rule.code().is_empty() && !rule.tier().is_empty());
        for matcher in rule.matchers().chain(rule.vetoes()) {
            assert_eq!(
                matcher.pattern().is_some(),
                matcher.kind() == faultline_runtime::MatcherKind::Pattern
            );
        }
    }
    let winner = bundle.classify(&Evidence::new().with_http_status(529)).rule;
    let position = bundle.rule_position(&winner).unwrap();
    let (_, trace) = bundle.classify_traced(
        &Evidence::new().with_http_status(529),
        std::time::SystemTime::UNIX_EPOCH,
    );
    assert_eq!(trace.winner(), Some(position));
    assert!(trace.fired(position));
    assert_eq!(trace.steps().len(), rules.len());
    let automata: Vec<_> = bundle.automata().collect();
    assert!(!automata.is_empty());
    assert!(
        automata
            .iter()
            .all(|automaton| automaton.memory_bytes() > 0)
    );
    assert!(bundle.prefilter_literals().len() > 0);
}

#[test]
fn a_malformed_pattern_is_refused_at_load_wherever_it_sorts() {
    // The loader checks pattern syntax on two threads, each a share of the patterns in sorted
    // order: a malformed pattern must be refused whichever share it falls in.
    let valid = [
        "(?i)alpha",
        "(?i)delta",
        "(?i)kappa",
        "(?i)omega",
        "(?i)sigma",
    ];
    for malformed in [
        "(?i)aaa (unclosed",
        "(?i)lll (unclosed",
        "(?i)zzz (unclosed",
    ] {
        let mut model = bare_model(None);
        let patterns = valid
            .iter()
            .chain([&malformed])
            .map(|pattern| wire::PatternEntry {
                pattern: (*pattern).to_owned(),
                dfa: None,
                approximate: false,
                alone_bytes: 0,
            })
            .collect();
        model.views.push(wire::ViewEntry {
            view: TextView::Raw,
            patterns,
            dfas: Vec::new(),
        });
        let error = Bundle::from_bytes(&write_model(&model)).unwrap_err();
        assert_eq!(error.kind(), LoadErrorKind::Malformed, "{malformed}");
        assert!(
            error.to_string().contains(malformed),
            "{malformed}: {error}"
        );
    }
}
