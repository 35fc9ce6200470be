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
use faultline_runtime::bundle::wire;
use faultline_runtime::{Bundle, BundleError, Evidence};
use proptest::prelude::*;
use sha2::{Digest, Sha256};

fn build(directory: &str) -> Vec<u8> {
    let root = common::root().join(directory).join("catalogue.rules");
    let (loaded, diagnostics) = load(&root, &FileSystem).unwrap();
    assert!(diagnostics.is_empty());
    let compilation = faultline_compiler::Compiler::new().compile(&loaded);
    assert!(!compilation.has_errors(), "{:#?}", compilation.diagnostics);
    compilation.bundle.expect("a clean catalogue builds")
}

use common::FileSystem;

static CATALOGUE: LazyLock<Vec<u8>> = LazyLock::new(|| build("catalogue"));

fn header_len(bytes: &[u8]) -> usize {
    u32::from_le_bytes(bytes[16..20].try_into().unwrap()) as usize
}

/// Recomputes the content hash, so that damage to the body reaches the deeper validation.
fn rehash(bytes: &mut [u8]) {
    let start = header_len(bytes).min(bytes.len());
    let hash: [u8; 32] = Sha256::digest(&bytes[start..]).into();
    bytes[24..56].copy_from_slice(&hash);
}

#[test]
fn building_twice_gives_identical_bytes_and_the_bundle_loads() {
    assert_eq!(build("catalogue"), *CATALOGUE);
    let bundle = Bundle::from_bytes(&CATALOGUE).unwrap();
    assert_eq!(bundle.header().catalogue_version, "provider-errors.v1");
    let evidence = Evidence {
        http_status: Some(529),
        ..Evidence::default()
    };
    assert_eq!(bundle.classify(&evidence).rule, "http.529");
}

#[test]
fn truncated_bundles_are_refused() {
    let bytes = &*CATALOGUE;
    assert!(matches!(
        Bundle::from_bytes(&[]),
        Err(BundleError::Truncated { .. })
    ));
    assert!(matches!(
        Bundle::from_bytes(&bytes[..20]),
        Err(BundleError::Truncated { .. })
    ));
    assert!(matches!(
        Bundle::from_bytes(&bytes[..header_len(bytes) - 1]),
        Err(BundleError::Truncated { .. })
    ));
    // Cut inside the body: the content hash no longer matches.
    assert_eq!(
        Bundle::from_bytes(&bytes[..bytes.len() - 1]).unwrap_err(),
        BundleError::HashMismatch
    );
    // Cut inside the body with the hash fixed up: the section table catches it.
    let mut cut = bytes[..bytes.len() - 100].to_vec();
    rehash(&mut cut);
    assert!(matches!(
        Bundle::from_bytes(&cut),
        Err(BundleError::Truncated { .. })
    ));
}

#[test]
fn flipped_bits_are_refused_with_the_error_for_where_they_are() {
    let bytes = &*CATALOGUE;
    let mut magic = bytes.clone();
    magic[0] ^= 0x01;
    assert_eq!(
        Bundle::from_bytes(&magic).unwrap_err(),
        BundleError::BadMagic
    );
    let mut body = bytes.clone();
    let middle = header_len(bytes) + (bytes.len() - header_len(bytes)) / 2;
    body[middle] ^= 0x10;
    assert_eq!(
        Bundle::from_bytes(&body).unwrap_err(),
        BundleError::HashMismatch
    );
    let mut hash = bytes.clone();
    hash[30] ^= 0x80;
    assert_eq!(
        Bundle::from_bytes(&hash).unwrap_err(),
        BundleError::HashMismatch
    );
}

#[test]
fn version_bumps_are_refused() {
    let mut too_new = CATALOGUE.clone();
    too_new[10..12].copy_from_slice(&(wire::READER_VERSION + 1).to_le_bytes());
    assert!(matches!(
        Bundle::from_bytes(&too_new),
        Err(BundleError::TooNew { .. })
    ));
    let mut too_old = CATALOGUE.clone();
    too_old[8..10].copy_from_slice(&(wire::OLDEST_READABLE_VERSION - 1).to_le_bytes());
    assert!(matches!(
        Bundle::from_bytes(&too_old),
        Err(BundleError::TooOld { .. })
    ));
    // The regex-automata version lives in the header strings: "0.4" becomes "9.4".
    let mut other_automata = CATALOGUE.clone();
    let at = other_automata.windows(3).position(|w| w == b"0.4").unwrap();
    other_automata[at] = b'9';
    assert!(matches!(
        Bundle::from_bytes(&other_automata),
        Err(BundleError::RegexAutomataVersion { .. })
    ));
}

fn classify_a_few(bundle: &Bundle) {
    for text in [
        "",
        "API Error: 529 overloaded",
        "connect ECONNREFUSED",
        "é\u{212A}",
    ] {
        let evidence = Evidence {
            stderr: Some(text.to_owned()),
            http_status: Some(503),
            ..Evidence::default()
        };
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
