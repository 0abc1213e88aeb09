//! The `asp` binary as a user meets it.
#![allow(clippy::unwrap_used)]

use std::process::Command;

fn asp(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_asp"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn help_lists_every_subcommand() {
    let (code, out, _) = asp(&["--help"]);
    assert_eq!(code, 0);
    for sub in ["run", "launch", "eval", "bench", "map", "memory", "config"] {
        assert!(
            out.lines().any(|l| l.trim_start().starts_with(sub)),
            "`{sub}` missing from:\n{out}"
        );
    }
}

#[test]
fn config_check_and_show() {
    let (code, out, err) = asp(&["config", "check"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("configuration OK") && out.contains("agent_node.yaml"),
        "{out}"
    );
    let (code, out, _) = asp(&["config", "show", "--set", "go_to_node.radius=1.1"]);
    assert_eq!(code, 0);
    assert!(out.contains("radius: 1.1"), "{out}");
}

#[test]
fn bad_configuration_exits_with_ex_config_and_names_the_key() {
    let (code, _, err) = asp(&["config", "check", "--set", "go_to_node.radius=-4"]);
    assert_eq!(code, 78);
    assert!(
        err.contains("go_to_node.radius") && err.contains("-4"),
        "{err}"
    );
}

#[test]
fn unbuilt_subcommands_say_so_and_fail() {
    let (code, out, err) = asp(&["memory", "show"]);
    assert_eq!(code, 69);
    assert!(out.is_empty());
    assert!(
        err.contains("not built yet") && err.contains("Nothing was run"),
        "{err}"
    );
}
