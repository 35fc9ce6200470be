//! Any bytes: the bundle reader returns a typed error or a bundle that classifies without
//! panicking. Seed the corpus with a real bundle: `faultline build catalogue/ -o fuzz/corpus/bundle_reader/seed.flb`.
//!
//! Each input is loaded as it is and, when it is long enough, with its content hash recomputed:
//! the hash covers every other byte, so without resealing almost every mutation would stop at
//! the hash check and the deeper validation would never be reached.
#![no_main]

use faultline_runtime::build::{HASH_RANGE, content_hash};
use faultline_runtime::{Bundle, Evidence};
use libfuzzer_sys::fuzz_target;

fn load_and_classify(bytes: &[u8]) {
    if let Ok(bundle) = Bundle::from_bytes(bytes) {
        for text in ["", "API Error: 529 overloaded", "connect ECONNREFUSED"] {
            let evidence = Evidence::new().with_stderr(text.to_owned());
            let _ = bundle.classify(&evidence);
        }
    }
}

fuzz_target!(|bytes: &[u8]| {
    load_and_classify(bytes);
    if let Some(hash) = content_hash(bytes) {
        let mut resealed = bytes.to_vec();
        if let Some(field) = resealed.get_mut(HASH_RANGE) {
            field.copy_from_slice(&hash);
            load_and_classify(&resealed);
        }
    }
});
