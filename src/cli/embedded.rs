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
    ("vetoes.rules", include_str!("../../catalogue/vetoes.rules")),
    ("policy.rules", include_str!("../../catalogue/policy.rules")),
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
        "providers/anthropic.rules",
        include_str!("../../catalogue/providers/anthropic.rules"),
    ),
    (
        "providers/openai.rules",
        include_str!("../../catalogue/providers/openai.rules"),
    ),
    (
        "providers/openrouter.rules",
        include_str!("../../catalogue/providers/openrouter.rules"),
    ),
    (
        "providers/google.rules",
        include_str!("../../catalogue/providers/google.rules"),
    ),
    (
        "providers/bedrock.rules",
        include_str!("../../catalogue/providers/bedrock.rules"),
    ),
    (
        "providers/azure.rules",
        include_str!("../../catalogue/providers/azure.rules"),
    ),
    (
        "providers/mistral.rules",
        include_str!("../../catalogue/providers/mistral.rules"),
    ),
    (
        "providers/xai.rules",
        include_str!("../../catalogue/providers/xai.rules"),
    ),
    (
        "providers/platforms.rules",
        include_str!("../../catalogue/providers/platforms.rules"),
    ),
    ("sdks.rules", include_str!("../../catalogue/sdks.rules")),
    (
        "agents/claude.rules",
        include_str!("../../catalogue/agents/claude.rules"),
    ),
    (
        "agents/codex.rules",
        include_str!("../../catalogue/agents/codex.rules"),
    ),
    (
        "agents/opencode.rules",
        include_str!("../../catalogue/agents/opencode.rules"),
    ),
    (
        "agents/copilot.rules",
        include_str!("../../catalogue/agents/copilot.rules"),
    ),
    (
        "agents/amp.rules",
        include_str!("../../catalogue/agents/amp.rules"),
    ),
    (
        "agents/apps.rules",
        include_str!("../../catalogue/agents/apps.rules"),
    ),
    (
        "agents/cursor.rules",
        include_str!("../../catalogue/agents/cursor.rules"),
    ),
    (
        "agents/gemini.rules",
        include_str!("../../catalogue/agents/gemini.rules"),
    ),
    (
        "agents/cli.rules",
        include_str!("../../catalogue/agents/cli.rules"),
    ),
    (
        "gateways.rules",
        include_str!("../../catalogue/gateways.rules"),
    ),
    (
        "sentences.rules",
        include_str!("../../catalogue/sentences.rules"),
    ),
    ("status.rules", include_str!("../../catalogue/status.rules")),
    (
        "network.rules",
        include_str!("../../catalogue/network.rules"),
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
        // Every `.rules` file under `catalogue/`, subdirectories included, as a `/`-separated
        // path relative to it.
        fn walk(directory: &std::path::Path, prefix: &str, found: &mut Vec<String>) {
            for entry in std::fs::read_dir(directory).unwrap() {
                let entry = entry.unwrap();
                let name = entry.file_name().to_string_lossy().into_owned();
                if entry.file_type().unwrap().is_dir() {
                    walk(&entry.path(), &format!("{prefix}{name}/"), found);
                } else if name.ends_with(".rules") {
                    found.push(format!("{prefix}{name}"));
                }
            }
        }
        let directory = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("catalogue");
        let mut on_disk = Vec::new();
        walk(&directory, "", &mut on_disk);
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
