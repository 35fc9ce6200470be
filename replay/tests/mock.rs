//! The committed mock-provider scenarios (`fixtures/mock-provider/`).

#![allow(
    clippy::panic,
    clippy::disallowed_methods,
    reason = "tests report failure by panicking and read the committed files"
)]

use faultline_replay::mock::load_scenario;

#[test]
fn every_committed_scenario_loads() -> std::io::Result<()> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/mock-provider");
    let mut count = 0;
    for api in std::fs::read_dir(root)? {
        for file in std::fs::read_dir(api?.path())? {
            let path = file?.path();
            let text = std::fs::read_to_string(&path)?;
            let loaded = load_scenario(&path.display().to_string(), &text);
            let Ok(scenario) = loaded else {
                panic!("{loaded:?}");
            };
            assert_eq!(
                path.file_stem().and_then(|stem| stem.to_str()),
                Some(scenario.name.as_str())
            );
            count += 1;
        }
    }
    assert!(count >= 30, "{count} scenarios");
    Ok(())
}
