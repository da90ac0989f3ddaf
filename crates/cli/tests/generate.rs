//! `fbunload --generate`: shell completions and the man page, checked with
//! the real bash and groff.

use std::collections::BTreeSet;
use std::process::{Command, Output};

fn fbunload(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fbunload"))
        .args(args)
        .output()
        .unwrap()
}

fn generated(what: &str) -> String {
    let out = fbunload(&["--generate", what]);
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Every long option `--help` lists.
fn long_options() -> BTreeSet<String> {
    let help = String::from_utf8(fbunload(&["--help"]).stdout).unwrap();
    help.lines()
        .filter_map(|l| l.trim_start().split(", ").last())
        .filter(|l| l.starts_with("--"))
        .map(|l| l.split([' ', '=']).next().unwrap().to_string())
        // Wrapped help text can start a line with `--name).`: not an option.
        .filter(|o| o.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
        .collect()
}

#[test]
fn bash_completes_options_and_their_values() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("fbunload.bash");
    std::fs::write(&script, generated("bash")).unwrap();
    // What bash offers after `fbunload <words>`, as the completion function
    // computes it.
    let complete = |words: &str| -> Vec<String> {
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "source '{}'; COMP_WORDS=(fbunload {words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
                 COMP_LINE=\"${{COMP_WORDS[*]}}\"; COMP_POINT=${{#COMP_LINE}}; \
                 _fbunload fbunload \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
                 printf '%s\\n' \"${{COMPREPLY[@]}}\"",
                script.display()
            ))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    };
    assert_eq!(complete("--for"), ["--format"]);
    assert_eq!(complete("-d x.fdb --format p"), ["parquet"]);
    assert_eq!(complete("--compress z"), ["zstd"]);
    let offered: BTreeSet<String> = complete("--").into_iter().collect();
    let missing: Vec<_> = long_options().difference(&offered).cloned().collect();
    assert!(missing.is_empty(), "not completed: {missing:?}");
}

#[test]
fn the_man_page_is_valid_roff_and_names_every_option() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("fbunload.1");
    std::fs::write(&page, generated("man")).unwrap();
    // -ww: every warning; -z: parse only.
    let check = Command::new("groff")
        .args(["-man", "-ww", "-z"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(
        check.status.success() && check.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let text = Command::new("groff")
        // Plain text: no overstriking for bold or underline.
        .args(["-man", "-Tutf8", "-P-cbou"])
        .arg(&page)
        .output()
        .unwrap();
    // Justified lines have runs of spaces.
    let text = String::from_utf8_lossy(&text.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(text.contains("fbunload - Unload Firebird tables"), "{text}");
    // The commands are described here, since no page of their own exists;
    // the exit statuses and examples have sections of their own.
    for part in [
        "COMMANDS fbunload check DIR",
        "fbunload sample PATH",
        "EXIT STATUS 0",
        "130 stopped by Ctrl",
        "141 the reader of standard output",
        "EXAMPLES fbunload",
        "ENVIRONMENT",
    ] {
        let shown = part.replace('-', "\u{2010}");
        assert!(
            text.contains(part) || text.contains(&shown),
            "{part} not in: {text}"
        );
    }
    for bogus in [
        "fbunload-check(1)",
        "fbunload-sample(1)",
        "fbunload-help(1)",
        "EXTRA",
    ] {
        let shown = bogus.replace('-', "\u{2010}");
        assert!(
            !text.contains(bogus) && !text.contains(&shown),
            "{bogus} in: {text}"
        );
    }
    let options = long_options();
    assert!(options.len() > 20, "{options:?}");
    for option in options {
        // groff may render - as a Unicode hyphen.
        let shown = option.replace('-', "\u{2010}");
        assert!(
            text.contains(&option) || text.contains(&shown),
            "{option} not in the man page"
        );
    }
}

#[test]
fn every_shell_gets_a_script_and_the_database_is_still_required_otherwise() {
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let script = generated(shell);
        assert!(
            script.contains("fbunload") && script.contains("tables"),
            "{shell}"
        );
    }
    let out = fbunload(&["-o", "x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--database <DSN>"));
}

#[test]
fn fbunload_alone_names_its_first_commands() {
    let out = fbunload(&[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    for command in [
        "fbunload -d DATABASE -o DIR",
        "fbunload sample",
        "fbunload check",
        "--help",
    ] {
        assert!(err.contains(command), "{err}");
    }
}

#[test]
fn help_shows_one_default_for_charset() {
    let help = String::from_utf8(fbunload(&["--help"]).stdout).unwrap();
    let charset = help.split("--charset").nth(1).unwrap();
    let charset = charset.split("\n  -").next().unwrap();
    assert_eq!(charset.matches("default").count(), 1, "{charset}");
}
