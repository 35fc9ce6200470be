//! The redaction's unit tests: every listed shape, the named regressions, and the tiers' invariants.

use super::*;
use proptest::prelude::*;

#[test]
fn every_word_the_redaction_writes_is_in_the_raw_text_or_declared_introduced() {
    // The replacement texts of both tiers, and the words of each that come from the raw
    // text the replacement was made for (a secret's marker, a kept key or prefix).
    let replacements = [
        ("eyJ***", &["eyj"][..]),
        ("sk-***", &["sk"]),
        ("github_pat_***", &["github_pat_"]),
        ("ghp_***", &["ghp_"]),
        ("kandev_pat_***", &["kandev_pat_"]),
        ("AKIA***", &["akia"]),
        ("ASIA***", &["asia"]),
        ("Bearer ***", &["bearer"]),
        ("Authorization: ***", &["authorization"]),
        ("--api-key ***", &["api", "key"]),
        ("--db-password ***", &["db", "password"]),
        (": ***", &[]),
        ("***@", &[]),
        ("[redacted-id]", &[]),
        ("[email-redacted]", &[]),
        ("***", &[]),
        ("/Users/<redacted>/", &["users"]),
        ("/home/<redacted>/", &["home"]),
        ("[path-redacted]", &[]),
        ("/Users/<redacted>/[path-redacted]", &["users"]),
        ("[redacted]", &[]),
    ];
    for (replacement, from_raw) in replacements {
        for word in replacement
            .to_ascii_lowercase()
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        {
            if word.is_empty() {
                continue;
            }
            assert!(
                from_raw.contains(&word)
                    || from_raw.iter().any(|raw| raw.contains(word))
                    || INTRODUCED_WORDS.contains(&word),
                "`{word}` of `{replacement}` is neither from the raw text nor declared introduced"
            );
        }
    }
    assert!(diagnostic("ses_1 /workspace/a/b https://x.y/z").contains("[redacted-id]"));
}

#[test]
fn credential_tier_redacts_every_listed_shape() {
    let cases = [
        ("key sk-abcdefghijklmnop done", "key sk-*** done"),
        (
            "github_pat_11ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnop",
            "github_pat_***",
        ),
        ("ghp_abcdefghijklmnopqrstuvwxyz0123", "ghp_***"),
        ("kandev_pat_abc_123", "kandev_pat_***"),
        (
            "curl -H 'bearer abcdefghijklmnopqrstuvwxyz'",
            "curl -H 'Bearer ***'",
        ),
        (
            "Authorization: Basic dXNlcjpwYXNz\nnext",
            "Authorization: ***\nnext",
        ),
        ("agent --api-key=xyz123 run", "agent --api-key *** run"),
        (
            "AWS_SECRET_ACCESS_KEY=abc123 next",
            "AWS_SECRET_ACCESS_KEY: *** next",
        ),
        (
            "{\"api_key\": \"ab\\\"c\", \"x\": 1}",
            "{\"api_key\": ***, \"x\": 1}",
        ),
        ("password: 123456", "password: ***"),
        (
            "max_tokens: 4096 tokenizer: cl100k_base",
            "max_tokens: 4096 tokenizer: ***",
        ),
        ("token=abc}, rest", "token: ***}, rest"),
        (
            "password: \"unterminated value\nnext",
            "password: *** value\nnext",
        ),
        ("https://user:pw@example.com/x", "https://***@example.com/x"),
    ];
    for (input, expected) in cases {
        assert_eq!(credentials_unbounded(input), expected, "input: {input}");
    }
}

#[test]
fn diagnostic_tier_redacts_urls_ids_runs_and_paths() {
    let cases = [
        (
            "see https://status.claude.com/incidents/x?y=1 now",
            "see https://status.claude.com now",
        ),
        (
            "session ses_abc123 in wrk_9",
            "session [redacted-id] in [redacted-id]",
        ),
        (
            "blob ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 end",
            "blob *** end",
        ),
        (
            "open /Users/cfl/.npm/_npx/d8/x failed",
            "open /Users/<redacted>/[path-redacted] failed",
        ),
        (
            "cd /home/dev/project/src/main.rs",
            "cd /home/<redacted>/[path-redacted]",
        ),
        ("file /workspace/repo/a.txt", "file [path-redacted]"),
        (r"C:\Users\me\file.txt", "[path-redacted]"),
        ("keeps https://opencode.ai", "keeps https://opencode.ai"),
    ];
    for (input, expected) in cases {
        assert_eq!(diagnostic(input), expected, "input: {input}");
    }
}

// Issue 10, item 17: a Windows path after a URL on the same line, and Windows paths with
// doubled backslashes (a path inside JSON inside the text).
#[test]
fn windows_path_after_a_url_is_redacted() {
    let text = r"failed, see https://example.com then C:\Users\alice\AppData\Local\x.log";
    assert_eq!(
        diagnostic(text),
        "failed, see https://example.com then [path-redacted]"
    );
    // A URL-ish drive scheme is kept, and a path after it on the line is still found.
    assert_eq!(
        diagnostic(r"c://host/x then D:\Users\alice\y"),
        r"c://host/x then [path-redacted]"
    );
}

#[test]
fn doubled_backslash_windows_paths_are_redacted() {
    for text in [
        r#"{"path":"C:\\Users\\alice\\AppData\\x.json"}"#,
        r#"{\"path\":\"C:\\\\Users\\\\alice\\\\AppData\"}"#,
        r"open C:\\Users\\alice\\AppData failed",
        r"C:\\Users\\alice",
    ] {
        let redacted = diagnostic(text);
        assert!(!redacted.contains("alice"), "{text} → {redacted}");
        assert!(redacted.contains("[path-redacted]"), "{text} → {redacted}");
    }
}

// Item 18: assignments inside escaped JSON (JSON inside a JSON string, as SDK reprs print
// request bodies) lose their values, including values with blanks and escaped quotes.
#[test]
fn assignments_inside_escaped_json_are_redacted() {
    let cases = [
        (
            r#"body={\"password\": \"hunter2hunter2\", \"api_key\":\"abc123xyz\"}"#,
            r#"body={\"password\": ***, \"api_key\": ***}"#,
        ),
        (
            r#"{\"password\": \"correct horse \\\"battery\\\" staple\", \"x\": 1}"#,
            r#"{\"password\": ***, \"x\": 1}"#,
        ),
        (
            r#"{\\\"token\\\": \\\"tok en\\\"}"#,
            r#"{\\\"token\\\": ***}"#,
        ),
        (r"{\'secret\': \'s3 cr3t\'}", r"{\'secret\': ***}"),
        (r#"password=\"two words\" next"#, "password: *** next"),
    ];
    for (input, expected) in cases {
        assert_eq!(credentials_unbounded(input), expected, "input: {input}");
    }
}

// Item 19: the secret glued to a URL keeps its marker, so its value is removed before the
// URL is cut to scheme and host.
#[test]
fn url_redaction_keeps_the_marker_of_a_glued_secret() {
    for (text, secret) in [
        (
            "https://api.example.com/v1;--api-key Zq9xW2vB7nK4",
            "Zq9xW2vB7nK4",
        ),
        (
            r#"https://api.example.com/v1,"password": "Zq9 xW2vB7nK4""#,
            "xW2vB7nK4",
        ),
        (
            "https://api.example.com/v1;Bearer Zq9xW2vB7nK4mP3rT6yU8",
            "Zq9xW2vB7nK4mP3rT6yU8",
        ),
        (
            "https://api.example.com/v1?token=Zq9xW2vB7nK4",
            "Zq9xW2vB7nK4",
        ),
    ] {
        let redacted = diagnostic(text);
        assert!(!redacted.contains(secret), "{text} → {redacted}");
        assert!(
            redacted.starts_with("https://api.example.com"),
            "{redacted}"
        );
    }
}

// Item 20: a JSON `Authorization` key with a short `Basic` credential, and `sk-` inside a
// JWT's signature.
#[test]
fn json_authorization_key_with_a_short_credential_is_redacted() {
    let cases = [
        // Like the `Authorization:` header form, the value runs to the end of the line.
        (
            "{\"Authorization\": \"Basic dXNlcjpwYXNz\", \"x\": 1}\nnext",
            "{\"Authorization\": ***\nnext",
        ),
        (
            r#"{'authorization': 'Basic dXNlcjpw'}"#,
            r#"{'authorization': ***"#,
        ),
        (
            "authorization=Basic dXNlcjpw\nnext",
            "authorization: ***\nnext",
        ),
        (
            r#"{\"Authorization\": \"Bearer abc\"}"#,
            r#"{\"Authorization\": ***"#,
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(credentials_unbounded(input), expected, "input: {input}");
    }
}

#[test]
fn sk_inside_a_jwt_leaves_nothing_of_it() {
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.Qx7_aBcDeFgsk-abcdefghijklmnop";
    for redacted in [credentials(jwt), diagnostic(jwt)] {
        assert_eq!(redacted, "eyJ***");
    }
}

// Item 21: shapes the reference does not cover, in the tier of their neighbours.
#[test]
fn aws_access_key_ids_are_credentials() {
    assert_eq!(
        credentials("key AKIAIOSFODNN7EXAMPLE and ASIAY34FZKBOKMUTVV7A."),
        "key AKIA*** and ASIA***."
    );
}

#[test]
fn jwts_of_any_length_are_credentials() {
    for (jwt, expected) in [
        ("eyJhbGciOiJub25lIn0.e30.", "eyJ***"),
        ("eyJ0.e.x", "eyJ***"),
        (
            "\"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U\"",
            "\"eyJ***\"",
        ),
    ] {
        assert_eq!(credentials(jwt), expected);
    }
    // A JWE's five segments (the second empty with direct encryption).
    assert_eq!(
        credentials(
            "jwe eyJhbGciOiJkaXIiLCJlbmMiOiJBMTI4R0NNIn0..48V1_ALb6US04U3b.5eym8TW_c8SuK0ltJ3rpYIzOeDQz7TALvtu6UG9oMo4vpzs9tX_EFShS8iB7j6ji.XFBoMYUZodetZdvTiFvSkQ end"
        ),
        "jwe eyJ*** end"
    );
    // Not a JWT: `eyJ` inside a word, and two segments only.
    assert_eq!(credentials("keyJSON.parse.x"), "keyJSON.parse.x");
    assert_eq!(credentials("eyJa.b"), "eyJa.b");
}

#[test]
fn passwd_and_pwd_assignments_are_credentials() {
    assert_eq!(
        credentials("mysql passwd=Zq9xW2 pwd: hunter2 DB_PWD=\"a b\""),
        "mysql passwd: *** pwd: *** DB_PWD: ***"
    );
}

#[test]
fn url_user_names_that_look_like_keys_go_with_the_user_info() {
    assert_eq!(
        credentials("https://token:x-oauth-basic@github.com/o/r and redis://upwd:Zq9x@db:6379"),
        "https://***@github.com/o/r and redis://***@db:6379"
    );
    // `pwd` counts as a whole part of a key only.
    assert_eq!(credentials("upwds8: value"), "upwds8: value");
    assert_eq!(credentials("OLDPWD=/x DB_PWD=y"), "OLDPWD: *** DB_PWD: ***");
}

#[test]
fn password_and_token_options_are_credentials() {
    let cases = [
        (
            "login --password Zq9xW2vB --verbose",
            "login --password *** --verbose",
        ),
        ("cli --token=Zq9xW2vB run", "cli --token *** run"),
        ("cli --github-token\tZq9xW2vB", "cli --github-token ***"),
        (r#"cli --password "two words" x"#, "cli --password *** x"),
        (
            "cli --max-tokens 4096 --token-file /x",
            "cli --max-tokens 4096 --token-file /x",
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(credentials(input), expected, "input: {input}");
    }
}

#[test]
fn email_addresses_are_diagnostic() {
    assert_eq!(
        diagnostic("mail alice.smith+ci@corp-example.co.uk failed"),
        "mail [email-redacted] failed"
    );
    // The credential tier keeps them (user-authored text may address someone).
    assert_eq!(
        credentials("mail alice@example.com"),
        "mail alice@example.com"
    );
    // npm's `name@version` is not an address, even with a letters-only pre-release tag.
    assert_eq!(
        diagnostic("No matching version found for pkg@1.0.0-alpha.beta."),
        "No matching version found for pkg@1.0.0-alpha.beta."
    );
}

#[test]
fn keys_inside_longer_runs_take_the_whole_run() {
    assert_eq!(
        diagnostic("blob Qx7aBcDeFgHiJkLmNoPsk-abcdefghijklmnop end"),
        "blob *** end"
    );
    assert_eq!(
        diagnostic("id AKIAIOSFODNN7EXAMPLEZ0123456789abcdef end"),
        "id *** end"
    );
    // A key that is the whole run keeps its marker; keys after `=` or `/` are whole runs.
    assert_eq!(
        diagnostic(
            "k sk-abcdefghijklmnopqrstuvwxyz0123456789 api_key=sk-abcdefghijklmnopqrstuvwxyz01"
        ),
        "k sk-*** api_key: ***"
    );
}

#[test]
fn marks_move_with_the_redaction() {
    let text = "a sk-abcdefghijklmnop b https://x.y/z c";
    let c = text.find(" c").unwrap_or(0);
    let inside = text.find("defg").unwrap_or(0);
    let mut marks = [0, inside, c];
    let redacted = diagnostic_marked(text, &mut marks);
    assert_eq!(redacted, "a sk-*** b https://x.y c");
    assert_eq!(marks[0], 0);
    // An offset inside a secret lands after its replacement.
    assert_eq!(redacted.get(marks[1]..), Some(" b https://x.y c"));
    assert_eq!(redacted.get(marks[2]..), Some(" c"));
}

#[test]
fn holds_credential_names_what_the_credential_tier_removes() {
    assert!(holds_credential(
        "/home/a/ghp_abcdefghijklmnopqrstuvwxyz0123/x"
    ));
    assert!(!holds_credential("/home/alice/.npm/_npx/0123abcd"));
    assert!(!holds_credential("password: ***"));
}

#[test]
fn excerpts_are_cut_on_a_character_boundary_after_sanitizing() {
    let text = format!("{}é", "a ".repeat(2047));
    let excerpt = diagnostic(&text);
    assert!(excerpt.len() <= MAX_EXCERPT_BYTES);
    assert!(excerpt.is_char_boundary(excerpt.len()));
    // The secret is redacted before the cut, so no prefix of it survives.
    let secret = format!("{}sk-abcdefghijklmnopqrstuvwxyz", "x ".repeat(2040));
    assert!(!diagnostic(&secret).contains("sk-abc"));
}

#[test]
fn provider_messages_collapse_and_trim() {
    assert_eq!(
        provider_message("  Selected model is at capacity.  \n"),
        "Selected model is at capacity"
    );
    assert_eq!(
        provider_message("see https://x.y/z for ses_1"),
        "see for [redacted-id]"
    );
}

/// A secret of a covered shape, and the value that must not survive.
fn secret() -> impl Strategy<Value = (String, String)> {
    let value = "[A-Za-z0-9]{30,40}";
    (0usize..12, value).prop_map(|(shape, value)| {
        let text = match shape {
            0 => format!("sk-{value}"),
            1 => format!("ghp_{value}"),
            2 => format!("github_pat_{value}{value}"),
            3 => format!("Bearer {value}"),
            4 => format!("api_key={value}"),
            5 => format!("eyJ{value}.{value}.{value}"),
            6 => format!("--token {value}"),
            7 => format!("\"passwd\": \"{value}\""),
            8 => format!("{{\\\"password\\\": \\\"{value}\\\"}}"),
            9 => format!("https://api.example.com/v1;--api-key {value}"),
            10 => format!("\"Authorization\": \"Basic {value}\""),
            _ => format!("Authorization: token {value}"),
        };
        (text, value)
    })
}

/// Pieces of the shapes the tiers look for, to be glued together in any order.
fn soup_part() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "sk-",
            "***",
            "*",
            ":",
            "{",
            ")",
            "secret",
            "ghp_",
            "github_pat_",
            "AKIA",
            "eyJ",
            ".",
            "Bearer ",
            "Authorization:",
            "authorization",
            "password",
            "pwd",
            "_PWD",
            "token",
            "api_key",
            "--token",
            "--password",
            "=",
            ": ",
            "\"",
            "'",
            "\\",
            "\\\"",
            "https://",
            "ftp://",
            "@",
            "/home/",
            "/Users/",
            "C:\\",
            "C://",
            "/",
            " ",
            "\n",
            "\t",
            ",",
            ";",
            "}",
            "ses_",
            "[",
            "*",
            "example.com",
            "1.2.3",
        ])
        .prop_map(str::to_owned),
        "[A-Za-z0-9]{1,40}",
    ]
}

/// Every joined literal of `text` (ASCII word characters joined by single ASCII punctuation
/// characters, starting and ending with a word character, with at least one punctuation
/// character), with repeats.
fn joined_literals(text: &str) -> Vec<&str> {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    for start in 0..bytes.len() {
        if !bytes.get(start).copied().is_some_and(word) {
            continue;
        }
        let mut punctuated = false;
        for end in start + 1..bytes.len() {
            let (Some(&b), Some(&before)) = (bytes.get(end), bytes.get(end - 1)) else {
                break;
            };
            if word(b) {
                if punctuated {
                    found.push(&text[start..=end]);
                }
            } else if b.is_ascii_punctuation() && word(before) {
                punctuated = true;
            } else {
                break;
            }
        }
    }
    found
}

/// The redaction's side of the prefilter's joined literals: every one in the diagnostic tier
/// that [`joined_literal_is_raw`] accepts is in the raw text.
fn assert_joined_literals_are_raw(raw: &str) -> Result<(), TestCaseError> {
    let redacted = diagnostic_unbounded(raw);
    let raw_lower = raw.to_ascii_lowercase();
    for literal in joined_literals(&redacted) {
        if joined_literal_is_raw(literal) {
            prop_assert!(
                raw_lower.contains(&literal.to_ascii_lowercase()),
                "`{}` is in the redacted {:?} but not in the raw {:?}",
                literal,
                redacted,
                raw
            );
        }
    }
    Ok(())
}

#[test]
fn joined_literals_that_a_marker_could_spell_are_refused() {
    for refused in ["d-id", "h-redacted", "x/users", "ted-i", "l-r"] {
        assert!(!joined_literal_is_raw(refused), "{refused}");
    }
    for kept in ["i/o", "api.openai.com", "x-api-key", "e.g", "429:too"] {
        assert!(joined_literal_is_raw(kept), "{kept}");
    }
    // A marker's joined literal is written, not raw, and is refused.
    let redacted = diagnostic_unbounded("ses_abc123 /home/alice/project/file.rs");
    let written: Vec<&str> = joined_literals(&redacted);
    assert!(written.contains(&"redacted-id"), "{redacted}");
    assert!(
        written
            .iter()
            .all(|literal| !joined_literal_is_raw(literal))
    );
}

proptest! {
    #[test]
    fn both_tiers_are_idempotent(text in "[ -~\n]{0,200}") {
        let once = diagnostic(&text);
        prop_assert_eq!(diagnostic(&once), once.clone());
        let credential_once = credentials(&text);
        prop_assert_eq!(credentials(&credential_once), credential_once);
    }

    // The credential tier is idempotent on text made of the pieces of the shapes it looks
    // for (the diagnostic tier is checked on printable text above: gluing URLs, homes and
    // paths together in any order can make its path rules disagree with themselves).
    #[test]
    fn the_credential_tier_is_idempotent_on_secret_shaped_soup(parts in prop::collection::vec(soup_part(), 0..14)) {
        let text = parts.concat();
        let once = credentials_unbounded(&text);
        prop_assert_eq!(credentials_unbounded(&once), once.clone(), "text: {:?}", text);
    }

    #[test]
    fn no_generated_secret_survives(prefix in "[a-z ]{0,20}", (secret, value) in secret(), suffix in "[a-z ]{0,20}") {
        let text = format!("{prefix} {secret} {suffix}");
        for redacted in [credentials(&text), diagnostic(&text)] {
            prop_assert!(!redacted.contains(&value), "{} survived in {}", value, redacted);
        }
    }

    #[test]
    fn joined_literals_of_redacted_text_are_in_the_raw_text(text in "[ -~\n]{0,200}") {
        assert_joined_literals_are_raw(&text)?;
    }

    #[test]
    fn joined_literals_of_redacted_soup_are_in_the_raw_text(parts in prop::collection::vec(soup_part(), 0..14)) {
        assert_joined_literals_are_raw(&parts.concat())?;
    }

    #[test]
    fn marks_land_on_character_boundaries(text in "[ -~\né]{0,120}", at in any::<prop::sample::Index>()) {
        let mut mark = at.index(text.len() + 1);
        while !text.is_char_boundary(mark) {
            mark -= 1;
        }
        let mut marks = [mark, text.len()];
        let redacted = diagnostic_marked(&text, &mut marks);
        prop_assert!(redacted.is_char_boundary(marks[0]));
        prop_assert_eq!(marks[1], redacted.len());
        prop_assert!(marks[0] <= marks[1]);
    }
}

// A secret key's assignment inside another value (here a URL after `token:`) would be swallowed
// with the first value and leave its own quoted value, blanks and all: the first value runs to
// the end of the one it holds. Found by the planted-secret test on a Claude Code refresh line.
#[test]
fn an_assignment_inside_a_value_takes_its_quoted_value_along() {
    let cases = [
        (
            r#"Failed to refresh OAuth token: https://api.example.com/v1/"password": "d4FN#ojZT l!bBJTZvswj"  another"#,
            "Failed to refresh OAuth token: ***  another",
        ),
        (
            r#"--token https://h/x?a=1,"secret": 'two words' tail"#,
            "--token *** tail",
        ),
        (r#"api_key: "k1"password="a b" tail"#, "api_key: *** tail"),
        // The nested key glued to an empty quoted value, and the outer closing quote glued to
        // the nested value (Claude Code's refresh line with a JSON body).
        (
            r#"Failed to refresh OAuth token: ""passwd": "O?OnWN73Q jchYo!oxpc!""  another"#,
            "Failed to refresh OAuth token: ***  another",
        ),
        (
            r#"{"token": ""password": "a b"", "n": 1} "x y" z"#,
            r#"{"token": ***, "n": 1} "x y" z"#,
        ),
        // A count inside a value ends no earlier than the value it is in.
        ("token: ab;max_tokens=5 tail", "token: *** tail"),
        // A secret option inside another option's value (the planted-secret test on a command
        // line whose `--llm-api-key` value is a JSON body holding `--token "…"`).
        (
            r#"deepwiki-rs --llm-api-key {"error":{"message":"--token \"pnSWKThcEp notF1i2Bu_p!\""}}  'xxx' --model k"#,
            "deepwiki-rs --llm-api-key ***}}  'xxx' --model k",
        ),
        ("--api-key x--password 'a b' tail", "--api-key *** tail"),
    ];
    for (input, expected) in cases {
        assert_eq!(credentials_unbounded(input), expected, "input: {input}");
        assert_eq!(
            credentials_unbounded(expected),
            expected,
            "idempotent: {expected}"
        );
    }
}

#[test]
fn a_quoted_value_followed_by_a_delimiter_redacts_to_itself() {
    // What follows a quoted value's closing quote at a delimiter stays; the second pass reads
    // the `***` left before it as the tier's own mark, not as a bare value running on.
    for (text, redacted) in [
        ("--token=\"\\\\\": ", "--token ***: "),
        ("token: \"abc\": x", "token: ***: x"),
        (
            "{\\\"token\\\":\\\"abc\\\",\\\"x\\\":1}",
            "{\\\"token\\\": ***,\\\"x\\\":1}",
        ),
        ("--token 'abc'\" rest", "--token ***\" rest"),
        // Glued to more than a delimiter, the tail is part of the value.
        ("--token \"abc\":8080 rest", "--token *** rest"),
        ("token: 'abc'\\x rest", "token: *** rest"),
    ] {
        let once = credentials_unbounded(text);
        assert_eq!(once, redacted, "{text}");
        assert_eq!(credentials_unbounded(&once), once, "{text}");
    }
    // A mark glued to more of a value is not the mark: the value is still taken whole.
    assert_eq!(
        credentials_unbounded("--token ***abc rest"),
        "--token *** rest"
    );
}

#[test]
fn a_raw_mark_glued_to_a_secret_is_no_mark() {
    // Text masked elsewhere (a CI log masks a registered secret as `***`) may hold the mark
    // glued to the rest of a value; the rest is a secret too.
    for text in [
        "password: ***\"hunter2\"",
        "token: ***'hunter2'",
        "--token ***,hunter2",
        "--api-key ***:hunter2",
        "password=***:hunter2",
        "password: ***)hunter2",
        "password: \"a\"\"hunter2\"",
        "--password \"user\":hunter2",
    ] {
        let once = credentials_unbounded(text);
        assert!(!once.contains("hunter2"), "{text} -> {once}");
        assert!(holds_credential(text), "{text}");
        assert_eq!(credentials_unbounded(&once), once, "{text}");
    }
}
