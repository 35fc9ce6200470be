//! Any bytes: the bundle reader returns a typed error or a bundle that classifies without
//! panicking. Seed the corpus with a real bundle: `faultline build catalogue/ -o fuzz/corpus/bundle_reader/seed.flb`.
#![no_main]

use faultline_runtime::{Bundle, Evidence};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Ok(bundle) = Bundle::from_bytes(bytes) {
        for text in ["", "API Error: 529 overloaded", "connect ECONNREFUSED"] {
            let evidence = Evidence { stderr: Some(text.to_owned()), ..Evidence::default() };
            let _ = bundle.classify(&evidence);
        }
    }
});
