//! The command line: exit codes, output formats and the subcommands, as a user runs them.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "integration tests report failure by panicking"
)]

mod common;

use common::{classify_stdin, faultline, stdout};
use serde_json::Value;

const MALFORMED: &str = "fixtures/malformed/every-error-in-one-run.rules";

/// (code, underlined text) of every problem in the malformed fixture.
const MALFORMED_PROBLEMS: &[(&str, &str)] = &[
    ("FL0005", "\"fixture\""),
    ("FL0014", "transiant"),
    ("FL0020", "structurd"),
    ("FL0013", "rate_limited"),
    ("FL0019", "\"claude\""),
    ("FL0027", "("),
    ("FL0001", "nonsense"),
    ("FL0033", "text.no_examples.v1"),
];

#[test]
fn the_repository_catalogue_checks_clean() {
    let output = faultline(&["check", "catalogue/"]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert!(stdout(&output).contains("0 errors, 0 warnings"));
}

#[test]
fn a_malformed_file_reports_every_error_in_one_run_in_json() {
    let output = faultline(&["check", MALFORMED, "--format", "json"]);
    assert_eq!(output.status.code(), Some(1));
    let document: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let diagnostics = document["diagnostics"].as_array().unwrap();
    for (code, text) in MALFORMED_PROBLEMS {
        let diagnostic = diagnostics
            .iter()
            .find(|d| d["code"] == *code && d["labels"][0]["text"] == *text)
            .unwrap_or_else(|| panic!("no {code} at `{text}` in {diagnostics:#?}"));
        assert!(diagnostic["start"]["line"].as_u64().unwrap() > 0);
        assert!(!diagnostic["help"].as_str().unwrap().is_empty());
    }
    assert_eq!(document["summary"]["errors"], MALFORMED_PROBLEMS.len());
}

#[test]
fn a_malformed_file_reports_every_error_in_one_run_in_sarif() {
    let output = faultline(&["check", MALFORMED, "--format", "sarif"]);
    assert_eq!(output.status.code(), Some(1));
    let log: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(log["version"], "2.1.0");
    let run = &log["runs"][0];
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), MALFORMED_PROBLEMS.len());
    for (code, text) in MALFORMED_PROBLEMS {
        let result = results
            .iter()
            .find(|r| {
                r["ruleId"] == *code
                    && r["locations"][0]["physicalLocation"]["region"]["snippet"]["text"] == *text
            })
            .unwrap_or_else(|| panic!("no {code} at `{text}`"));
        let index = result["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[index]["id"], *code, "ruleIndex points at the rule");
        assert!(
            result["message"]["text"]
                .as_str()
                .unwrap()
                .contains("\nhelp: ")
        );
        assert_eq!(
            result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            MALFORMED
        );
    }
}

#[test]
fn a_malformed_file_reports_every_error_in_one_run_for_humans_and_github() {
    let output = faultline(&["check", MALFORMED, "--color", "never"]);
    assert_eq!(output.status.code(), Some(1));
    let human = stdout(&output);
    for (code, _) in MALFORMED_PROBLEMS {
        assert!(
            human.contains(&format!("error[{code}]")),
            "{code} missing from human output"
        );
    }
    assert_eq!(human.matches("help:").count(), MALFORMED_PROBLEMS.len());
    insta::assert_snapshot!("malformed-human", human);

    let github = stdout(&faultline(&["check", MALFORMED, "--format", "github"]));
    assert_eq!(github.lines().count(), MALFORMED_PROBLEMS.len());
    assert!(github.lines().all(|line| {
        line.starts_with("::error file=fixtures/malformed/every-error-in-one-run.rules,line=")
    }));
}

#[test]
fn warnings_fail_only_with_deny_warnings() {
    let fixture = "fixtures/diagnostics/FL0035-unreachable-file";
    assert_eq!(faultline(&["check", fixture]).status.code(), Some(0));
    assert_eq!(
        faultline(&["check", fixture, "--deny-warnings"])
            .status
            .code(),
        Some(1)
    );
}

#[test]
fn usage_and_io_errors_exit_2_and_still_check_the_other_paths() {
    let output = faultline(&["check", "does/not/exist.rules", "catalogue/"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("`does/not/exist.rules` is not a file or directory")
    );
    assert!(
        stdout(&output).contains("checked 1 catalogue"),
        "the good path is still checked"
    );
    assert_eq!(faultline(&["check"]).status.code(), Some(2));
    assert_eq!(
        faultline(&["check", "catalogue/", "--format", "xml"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(faultline(&["--version"]).status.code(), Some(0));
}

#[test]
fn fmt_check_passes_on_the_catalogue_and_prints_a_diff_for_unformatted_files() {
    assert_eq!(
        faultline(&["fmt", "--check", "catalogue/"]).status.code(),
        Some(0)
    );

    let directory = common::scratch("fmt-check");
    let file = directory.join("messy.rules");
    std::fs::write(&file, "rule a.b.v1 {   code c\n  tier main }\n").unwrap();
    let path = file.to_str().unwrap();
    let check = faultline(&["fmt", "--check", path]);
    assert_eq!(check.status.code(), Some(1));
    let diff = stdout(&check);
    assert!(
        diff.contains("+    code c\n") && diff.contains("-rule a.b.v1 {   code c\n"),
        "{diff}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "rule a.b.v1 {   code c\n  tier main }\n",
        "--check never writes"
    );

    assert_eq!(faultline(&["fmt", path]).status.code(), Some(0));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "rule a.b.v1 {\n    code c\n    tier main\n}\n"
    );
    assert_eq!(faultline(&["fmt", "--check", path]).status.code(), Some(0));
}

#[test]
fn fmt_refuses_files_with_syntax_errors() {
    let output = faultline(&[
        "fmt",
        "--check",
        "fixtures/diagnostics/FL0001-syntax-error.rules",
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains("error[FL0001]"));
}

#[test]
fn diagnostic_prints_documentation_by_code_or_name() {
    let by_code = stdout(&faultline(&["diagnostic", "FL0010"]));
    assert!(by_code.starts_with("FL0010 duplicate-rule-id (error)"));
    assert!(by_code.contains("Fix:"));
    assert_eq!(
        stdout(&faultline(&["diagnostic", "duplicate-rule-id"])),
        by_code
    );
    let listing = stdout(&faultline(&["diagnostic"]));
    assert_eq!(listing.lines().count(), faultline_dsl::Code::ALL.len());
    assert_eq!(faultline(&["diagnostic", "FL9999"]).status.code(), Some(2));
}

#[test]
fn watch_mode_checks_again_after_an_edit() {
    use std::io::BufRead as _;
    let directory = common::scratch("watch");
    std::fs::create_dir_all(&directory).unwrap();
    let catalogue =
        std::fs::read_to_string(common::root().join("fixtures/valid/all-constructs.rules"))
            .unwrap();
    std::fs::create_dir_all(directory.join("support")).unwrap();
    std::fs::copy(
        common::root().join("fixtures/valid/support/included-code.rules"),
        directory.join("support/included-code.rules"),
    )
    .unwrap();
    let file = directory.join("catalogue.rules");
    std::fs::write(&file, &catalogue).unwrap();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("faultline"))
        .args([
            "check",
            "--watch",
            "--color",
            "never",
            directory.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (sender, receiver) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    let wait_for = |needle: &str| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while std::time::Instant::now() < deadline {
            if let Ok(line) = receiver.recv_timeout(std::time::Duration::from_millis(200))
                && line.contains(needle)
            {
                return true;
            }
        }
        false
    };
    assert!(wait_for("0 errors"), "the first check did not finish");
    std::fs::write(
        &file,
        catalogue.replace(
            "code provider_overloaded\n    confidence high\n    tier structured",
            "code provider_overload\n    confidence high\n    tier structured",
        ),
    )
    .unwrap();
    let found = wait_for("error[FL0013]");
    let _ = child.kill();
    let _ = child.wait();
    assert!(found, "the edit was not checked again");
}

#[test]
fn the_readme_says_what_the_main_command_prints() {
    let readme = std::fs::read_to_string(common::root().join("README.md")).unwrap();
    let claimed = readme
        .lines()
        .find_map(|line| line.strip_prefix("`faultline check catalogue/` prints `"))
        .and_then(|rest| rest.split('`').next())
        .expect("the README says what the check prints");
    let output = faultline(&["check", "catalogue/"]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(stdout(&output).trim_end(), claimed);
}

#[test]
fn the_readme_fixture_tables_are_what_test_prints() {
    let readme = std::fs::read_to_string(common::root().join("README.md")).unwrap();
    let claimed = readme
        .split("<!-- faultline test --table: begin -->\n")
        .nth(1)
        .and_then(|rest| rest.split("<!-- faultline test --table: end -->").next())
        .expect("the README holds the fixture tables");
    let output = faultline(&["test", "--table"]);
    assert_eq!(output.status.code(), Some(0));
    let printed = stdout(&output);
    let tables = printed
        .trim_end()
        .rsplit_once('\n')
        .map(|(tables, _closing)| tables.trim())
        .unwrap();
    assert!(
        tables.starts_with("| expected code | passed | fixtures |"),
        "{printed}"
    );
    assert!(
        tables.contains("| surface (fixture file) | passed | fixtures |"),
        "{printed}"
    );
    assert_eq!(
        claimed.trim(),
        tables,
        "README.md's tables are stale: paste the output of `faultline test --table`"
    );
}

#[test]
fn the_readme_set_up_command_classifies_the_example_evidence_as_it_says() {
    let readme = std::fs::read_to_string(common::root().join("README.md")).unwrap();
    assert!(readme.contains("cargo run --release -- classify examples/evidence.jsonl"));
    let output = faultline(&["classify", "examples/evidence.jsonl"]);
    assert_eq!(output.status.code(), Some(0));
    let answers: Vec<Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert!(readme.contains(
        "[`examples/evidence.jsonl`](examples/evidence.jsonl), one JSON answer per line"
    ));
    assert!(readme.contains("classifies the five pieces of evidence"));
    assert_eq!(answers.len(), 5);
    let first = &answers[0];
    assert_eq!(
        (&first["id"], &first["code"], &first["class"]),
        (
            &Value::from("claude-overloaded"),
            &Value::from("provider_overloaded"),
            &Value::from("transient")
        )
    );
    let last = &answers[4];
    assert_eq!(
        (&last["id"], &last["code"], &last["confidence"]),
        (
            &Value::from("ordinary-output"),
            &Value::from("agent_runtime_error"),
            &Value::from("low")
        )
    );
}

#[test]
fn classify_reads_json_lines_with_the_built_in_catalogue() {
    let line = r#"{"phase":"prompt_send","provider_id":"claude-acp","stderr":"API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}"}"#;
    let output = classify_stdin(&[], &format!("{line}\n"));
    assert_eq!(output.status.code(), Some(0));
    let result: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(result["code"], "provider_overloaded");
    assert_eq!(result["class"], "transient");
    assert_eq!(result["rule"], "anthropic.overloaded.529.v1");
    assert_eq!(result["catalogue_version"], "provider-errors.v1");
}

#[test]
fn classify_reports_bad_lines_by_number_and_still_classifies_the_others() {
    let input = "{\"http_status\":429}\nnot json\n{\"phase\":\"streamin\"}\n{\"bogus\":1}\n{\"stderr\":\"connect ECONNREFUSED 10.0.0.1:443\"}\n";
    let output = classify_stdin(&[], input);
    assert_eq!(output.status.code(), Some(1), "some lines failed");
    // One answer per line, in order: a bad line's answer is an error object in its place.
    let answers: Vec<String> = stdout(&output)
        .lines()
        .map(|line| {
            let answer = serde_json::from_str::<Value>(line).unwrap();
            match answer["rule"].as_str() {
                Some(rule) => rule.to_owned(),
                None => format!(
                    "line {} error in {}",
                    answer["line"], answer["error"]["field"]
                ),
            }
        })
        .collect();
    assert_eq!(
        answers,
        [
            "http.429",
            "line 2 error in null",
            "line 3 error in \"phase\"",
            "line 4 error in \"bogus\"",
            "provider.network_unavailable.v1"
        ]
    );
    let errors = String::from_utf8(output.stderr).unwrap();
    assert!(errors.contains("<stdin>:2: invalid evidence"), "{errors}");
    assert!(
        errors.contains("<stdin>:3: invalid evidence: field `phase`: unknown variant `streamin`"),
        "{errors}"
    );
    assert!(
        errors.contains("<stdin>:4: invalid evidence: field `bogus`: unknown field `bogus`"),
        "{errors}"
    );
}

#[test]
fn classify_reads_reset_times_against_a_fixed_clock() {
    let usage = r#""phase":"streaming","provider_id":"codex-acp","stderr":"You've hit your usage limit. try again at Sep 27th, 2026 3:09 AM UTC.""#;
    let input = format!(
        "{{{usage}}}\n{{{usage},\"now\":\"2026-09-27T03:09:00Z\"}}\n{{{usage},\"reset_hint\":\"2026-09-01T12:00:00+02:00\"}}\n{{\"now\":\"soon\"}}\n"
    );
    let output = classify_stdin(&["--now", "2026-09-01T00:00:00Z"], &input);
    assert_eq!(
        output.status.code(),
        Some(1),
        "the bad `now` fails its line"
    );
    let results: Vec<Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(results.len(), 4, "one answer per line");
    assert_eq!(results[3]["line"], 4);
    assert_eq!(results[3]["error"]["field"], "now");
    // The text's time, validated against `--now`.
    assert_eq!(results[0]["reset_hint"], "2026-09-27T03:09:00Z");
    assert_eq!(results[0]["retry_after"], 26 * 86_400 + 3 * 3600 + 9 * 60);
    // A line's own clock wins; at the reset instant itself the hint is stale.
    assert!(results[1].get("reset_hint").is_none(), "{}", results[1]);
    // The structured hint beats the text.
    assert_eq!(results[2]["reset_hint"], "2026-09-01T10:00:00Z");
    assert_eq!(results[2]["retry_after"], 36_000);
    let errors = String::from_utf8(output.stderr).unwrap();
    assert!(
        errors.contains("<stdin>:4: invalid evidence: field `now`: invalid instant `soon`"),
        "{errors}"
    );
    let bad_flag = classify_stdin(&["--now", "tomorrow"], "{}\n");
    assert_eq!(bad_flag.status.code(), Some(2));
}

fn explain(args: &[&str], evidence: &str) -> (Option<i32>, String) {
    let output =
        faultline(&[&["explain", "--catalogue", "catalogue/"], args, &[evidence]].concat());
    (output.status.code(), stdout(&output))
}

#[test]
fn explain_shows_the_text_the_contenders_the_path_and_the_timing() {
    let evidence = r#"{"phase":"prompt_send","provider_id":"claude-acp","stderr":"API Error: 529 overloaded. You've hit your session limit · resets 3pm (Europe/Paris) key sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789"}"#;
    let (code, text) = explain(&["--now", "2026-10-01T08:00:00Z"], evidence);
    assert_eq!(code, Some(0), "{text}");
    // The text is shown sanitized.
    assert!(!text.contains("abcdefghijklmnop"), "{text}");
    let line = |needle: &str| {
        text.lines()
            .find(|line| line.contains(needle))
            .unwrap_or_else(|| panic!("no line with `{needle}` in:\n{text}"))
            .to_owned()
    };
    assert!(line("claude.stderr.session_limit.v1").contains("← winner"));
    assert!(line("anthropic.overloaded.529.v1").contains("fired"));
    assert!(
        line("outranked: `claude.stderr.session_limit.v1` wins over `anthropic.overloaded.529.v1`")
            .contains("tier `provider` comes before tier `runtime`")
    );
    assert!(line("`resets_clock`").contains("2026-10-01T13:00:00Z, accepted"));
    assert!(line("→ reset_hint").contains("retry_after 18000 s"));
    assert!(line("winner:").contains("quota_limited"));
    // `--all` also lists the rules that did not apply, with the reason.
    let (_, all) = explain(&["--all", "--now", "2026-10-01T08:00:00Z"], evidence);
    assert!(
        all.lines().any(|line| line.contains("http.429")
            && line.contains("guard on `http_status` does not hold")),
        "{all}"
    );
}

#[test]
fn explain_shows_a_vetoed_rule_and_a_rejected_hint() {
    let evidence = r#"{"phase":"streaming","provider_id":"codex-acp","stderr":"You've hit your usage limit. try again at Feb 30th, 2027 3:09 PM UTC","reset_hint":"2020-01-01T00:00:00Z"}"#;
    let (code, text) = explain(&["--now", "2026-10-01T08:00:00Z"], evidence);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains(
            "structured `reset_hint`: 2020-01-01T00:00:00Z, rejected: it is not after now"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "text extractor `try_again_at`: found, but names no instant: Feb 30, 2027 is not a date"
        ),
        "{text}"
    );
    assert!(text.contains("→ no reset time"), "{text}");
    // A dropped connection is no transport loss when the client cancelled.
    let cancelled = r#"{"phase":"streaming","stderr":"context canceled: connection closed"}"#;
    let (_, text) = explain(&[], cancelled);
    assert!(
        text.lines()
            .any(|line| line.contains("acp.transport_lost.v1")
                && line.contains("vetoed by `unless` 1")),
        "{text}"
    );
    assert!(text.contains("winner: phase.poststart.unknown"), "{text}");
    // A member of a veto set is named as the rule names it, not by a count of clauses.
    let titled = r#"{"phase":"streaming","stderr":"[Bug] Error: All providers for anthropic/claude-sonnet-4.5 are at capacity"}"#;
    let (_, text) = explain(&[], titled);
    assert!(
        text.lines().any(
            |line| line.contains("openrouter.availability_capacity_exhausted.v1")
                && line.contains("vetoed by `unless prose_quoting` (its member `issue_title_tag`)")
        ),
        "{text}"
    );
    let (code, _) = explain(&[], "{\"phase\":\"later\"}");
    assert_eq!(code, Some(2), "bad evidence is an error");
}

#[test]
fn the_built_in_catalogue_is_cached_and_a_corrupt_cache_is_rebuilt() {
    let cache = common::scratch("cache");
    let run = || {
        assert_cmd::Command::cargo_bin("faultline")
            .unwrap()
            .env("FAULTLINE_CACHE_DIR", &cache)
            .args(["classify"])
            .write_stdin("{\"http_status\":429}\n")
            .output()
            .unwrap()
    };
    let cached = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&cache)
            .map(|entries| entries.map(|entry| entry.unwrap().path()).collect())
            .unwrap_or_default()
    };
    assert!(stdout(&run()).contains("\"rule\":\"http.429\""));
    let files = cached();
    assert_eq!(files.len(), 1, "{files:?}");
    // A damaged cache file is untrusted input: refused on load, then rebuilt.
    std::fs::write(&files[0], b"not a bundle").unwrap();
    assert!(stdout(&run()).contains("\"rule\":\"http.429\""));
    let rebuilt = std::fs::read(&files[0]).unwrap();
    assert!(faultline_runtime::Bundle::from_bytes(&rebuilt).is_ok());
}

#[test]
fn explain_uses_the_cached_built_in_bundle_that_classify_uses() {
    let cache = common::scratch("explain-cache");
    let run = |command: &str| {
        let mut process = assert_cmd::Command::cargo_bin("faultline").unwrap();
        process.env("FAULTLINE_CACHE_DIR", &cache).arg(command);
        if command == "explain" {
            process.arg(r#"{"http_status":529,"stderr":"API Error: 529 overloaded_error"}"#);
        } else {
            process.write_stdin("{\"http_status\":529}\n");
        }
        process.output().unwrap()
    };
    let cached = || std::fs::read_dir(&cache).map_or(0, Iterator::count);
    let explained = run("explain");
    assert_eq!(explained.status.code(), Some(0));
    assert_eq!(
        cached(),
        1,
        "explain compiled the built-in catalogue once and cached it"
    );
    // The priority sentences still come from the catalogue's own order relations.
    assert!(
        stdout(&explained)
            .contains("its tier `structured` comes before tier `runtime` in `tiers [...]`"),
        "{}",
        stdout(&explained)
    );
    assert_eq!(run("classify").status.code(), Some(0));
    assert_eq!(cached(), 1, "classify found the bundle explain cached");
}

#[test]
fn check_refuses_a_directory_without_rules_and_walks_a_link_loop_once() {
    let directory = common::scratch("walk");
    let _ = std::fs::remove_dir_all(&directory);
    std::fs::create_dir_all(directory.join("empty")).unwrap();
    let output = faultline(&["check", directory.join("empty").to_str().unwrap()]);
    assert_eq!(
        output.status.code(),
        Some(2),
        "an empty directory is a mistake"
    );
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("holds no `.rules` file"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // A loop (`loop -> .`) and a link out of the tree: each real file is checked once, and
    // nothing outside the tree is read.
    let tree = directory.join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::copy(
        common::root().join("fixtures/valid/redaction-markers.rules"),
        tree.join("redaction-markers.rules"),
    )
    .unwrap();
    std::os::unix::fs::symlink(".", tree.join("loop")).unwrap();
    std::os::unix::fs::symlink(common::root().join("catalogue"), tree.join("outside")).unwrap();
    let output = faultline(&["check", tree.to_str().unwrap()]);
    assert!(
        stdout(&output).contains("checked 1 catalogue"),
        "{}",
        stdout(&output)
    );
    // The link out is an error a user must hear about (exit 2); what is inside is still checked.
    assert_eq!(output.status.code(), Some(2));
    let errors = String::from_utf8_lossy(&output.stderr);
    assert!(
        errors.contains("is a symbolic link to a place outside"),
        "{errors}"
    );
    assert_eq!(errors.lines().count(), 1, "{errors}");
}

#[test]
fn test_refuses_fixtures_that_are_missing_or_not_fixture_files() {
    for fixtures in ["fixtures/no-such-directory", "README.md", "fixtures/valid"] {
        let output = faultline(&["test", "--fixtures", fixtures]);
        assert_eq!(output.status.code(), Some(2), "--fixtures {fixtures}");
        assert!(
            String::from_utf8_lossy(&output.stderr).contains(&format!("cannot read `{fixtures}`")),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    // One fixture file is a fixture set of its own.
    let output = faultline(&["test", "--fixtures", "fixtures/classify/network.jsonl"]);
    assert_eq!(output.status.code(), Some(0));
}

#[test]
fn classify_loads_a_built_bundle() {
    let bundle = common::scratch("build").join("provider-errors.flb");
    let path = bundle.to_str().unwrap();
    assert_eq!(
        faultline(&["build", "catalogue/", "-o", path])
            .status
            .code(),
        Some(0)
    );
    let output = classify_stdin(&["--bundle", path], "{\"exit_code\":127}\n");
    assert_eq!(output.status.code(), Some(0));
    assert!(stdout(&output).contains("\"rule\":\"exit.127\""));
    assert_eq!(
        classify_stdin(&["--bundle", "no/such.flb"], "{}\n")
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn test_runs_examples_and_fixtures_and_ends_with_the_count() {
    let output = faultline(&["test"]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    let last = stdout(&output)
        .lines()
        .last()
        .unwrap_or_default()
        .to_owned();
    let (passed, failed) = last.split_once(" passed, ").unwrap();
    assert!(passed.parse::<usize>().unwrap() > 140, "{last}");
    assert_eq!(failed, "0 failed");

    let fixtures = common::scratch("fixtures");
    std::fs::create_dir_all(&fixtures).unwrap();
    std::fs::write(
        fixtures.join("wrong.jsonl"),
        "{\"name\":\"wrong\",\"source\":\"test\",\"evidence\":{\"http_status\":429},\"expect\":{\"code\":\"quota_limited\"}}\n",
    )
    .unwrap();
    let output = faultline(&[
        "test",
        "catalogue",
        "--fixtures",
        fixtures.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(
        text.contains("FAIL") && text.contains("code `rate_limited`, expected `quota_limited`"),
        "{text}"
    );
    assert!(text.trim_end().ends_with("1 failed"), "{text}");
}

#[test]
fn recover_replays_an_event_log_with_a_verdict_per_failure() {
    let output = faultline(&["recover", "examples/recovery/claude-overloaded.jsonl"]);
    assert_eq!(output.status.code(), Some(0));
    let text = stdout(&output);
    let line = |number: usize| {
        text.lines()
            .find(|line| line.contains(&format!("claude-overloaded.jsonl:{number} ")))
            .unwrap_or_else(|| panic!("no line {number} in:\n{text}"))
            .to_owned()
    };
    assert!(line(2).contains("diagnostic `provider_overloaded` recorded"));
    assert!(line(3).contains("recovery: automatic"), "{}", line(3));
    assert!(
        line(7).contains("unsafe: tool activity was observed")
            && line(7).contains("recovery: manual")
    );
    assert!(line(9).contains("suppressed"));
    assert!(
        line(10).contains("cursor.retriable_unavailable.v1")
            && line(10).contains("recovery: automatic")
    );

    let json = faultline(&[
        "recover",
        "--json",
        "examples/recovery/claude-overloaded.jsonl",
    ]);
    let verdicts: Vec<Value> = stdout(&json)
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|value| value["outcome"]["outcome"] == "failed")
        .collect();
    assert_eq!(verdicts.len(), 3);
    assert_eq!(
        verdicts[1]["outcome"]["safety"]["reason"],
        "effect_observed"
    );
}

#[test]
fn recover_reports_bad_lines_and_replays_the_rest() {
    let input = "{\"event\":\"prompt_began\",\"execution_id\":\"e\",\"generation\":1}\n{\"event\":\"explode\"}\n{\"event\":\"tool_call\",\"execution_id\":\"e\",\"generation\":\"one\"}\n{\"event\":\"prompt_failed\",\"execution_id\":\"e\",\"generation\":1,\"error\":{\"message\":\"x\"},\"occurred_at\":\"2026-10-01T08:00:00Z\"}\n";
    let output = assert_cmd::Command::cargo_bin("faultline")
        .unwrap()
        .current_dir(common::root())
        .args(["recover", "--provider", "claude-acp"])
        .write_stdin(input)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let errors = String::from_utf8(output.stderr.clone()).unwrap();
    assert!(errors.contains("<stdin>:2: invalid event"), "{errors}");
    assert!(
        errors.contains("<stdin>:3: invalid event: invalid type: string \"one\", expected u64"),
        "{errors}"
    );
    assert!(stdout(&output).contains("<stdin>:4 [default] terminal failure"));
}

#[test]
fn every_subcommand_help_ends_with_examples() {
    for command in [
        "check",
        "fmt",
        "classify",
        "explain",
        "recover",
        "test",
        "replay",
        "build",
        "inspect",
        "order",
        "diagnostic",
    ] {
        let help = stdout(&faultline(&[command, "--help"]));
        let tail = help.rsplit_once("Example").map(|(_, tail)| tail);
        assert!(
            tail.is_some_and(|tail| tail.contains(&format!("faultline {command}"))),
            "`faultline {command} --help` ends without an example:\n{help}"
        );
    }
    let classify = stdout(&faultline(&["classify", "--help"]));
    for field in [
        "phase",
        "provider_id",
        "http_status",
        "stderr",
        "docs/evidence.md",
    ] {
        assert!(classify.contains(field), "{field}");
    }
}
