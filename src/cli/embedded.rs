//! The catalogue built into the binary: `catalogue/` as it was when the binary was built.

use std::path::Path;

use faultline_dsl::MemorySources;

/// Every file of `catalogue/` (a test keeps this list complete).
pub const FILES: &[(&str, &str)] = &[
    (
        "catalogue.rules",
        include_str!("../../catalogue/catalogue.rules"),
    ),
    ("codes.rules", include_str!("../../catalogue/codes.rules")),
    (
        "structured.rules",
        include_str!("../../catalogue/structured.rules"),
    ),
    (
        "structured_bodies.rules",
        include_str!("../../catalogue/structured_bodies.rules"),
    ),
    (
        "managed_policy.rules",
        include_str!("../../catalogue/managed_policy.rules"),
    ),
    (
        "providers.rules",
        include_str!("../../catalogue/providers.rules"),
    ),
    (
        "neutral.rules",
        include_str!("../../catalogue/neutral.rules"),
    ),
    (
        "runtime.rules",
        include_str!("../../catalogue/runtime.rules"),
    ),
    (
        "extended.rules",
        include_str!("../../catalogue/extended.rules"),
    ),
    (
        "fallback.rules",
        include_str!("../../catalogue/fallback.rules"),
    ),
];

/// The embedded catalogue's sources and root path.
pub fn sources() -> (MemorySources, &'static Path) {
    let mut sources = MemorySources::new();
    for (name, text) in FILES {
        sources.insert(format!("embedded/{name}"), *text);
    }
    (sources, Path::new("embedded/catalogue.rules"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_catalogue_file_is_embedded() {
        let directory = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("catalogue");
        let mut on_disk: Vec<String> = std::fs::read_dir(directory)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".rules"))
            .collect();
        on_disk.sort();
        let mut embedded: Vec<String> = super::FILES
            .iter()
            .map(|(name, _)| (*name).to_owned())
            .collect();
        embedded.sort();
        assert_eq!(
            embedded, on_disk,
            "add the new catalogue file to src/cli/embedded.rs"
        );
    }
}
