//! The command line as a user meets it: what it refuses, what it hides, and the commands
//! that read a run again (`show`), check a scenario (`run --check`) or list them
//! (`scenarios`).

use crate::common;

use std::process::Command;

fn stratum_bench(args: &[&str]) -> std::process::Output {
    Command::new(common::exe()).args(args).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn report_export_compare_and_show_refuse_a_directory_that_is_not_a_run() {
    let empty = common::out_dir("not-a-run");
    std::fs::create_dir_all(&empty).unwrap();
    let dir = empty.to_str().unwrap();
    let csv = empty.join("csv");
    for args in [
        vec!["report", dir],
        vec!["export", dir, "--csv", csv.to_str().unwrap()],
        vec!["compare", dir, dir, "--out", csv.to_str().unwrap()],
        vec!["show", dir],
    ] {
        let out = stratum_bench(&args);
        let said = text(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded: {said}");
        assert!(
            said.contains("not a run directory") && said.contains("manifest.json"),
            "{args:?}: {said}"
        );
    }
    assert!(
        !csv.exists(),
        "nothing written for a directory that is not a run"
    );
    assert!(!empty.join("report.html").exists(), "no report of nothing");
}

#[test]
fn internal_commands_are_hidden_from_the_help_but_still_run() {
    let help = text(&stratum_bench(&["--help"]).stdout);
    for shown in [
        "run",
        "show",
        "scenarios",
        "report",
        "compare",
        "sweep",
        "deploy",
        "image",
    ] {
        assert!(
            help.lines().any(|l| l.trim_start().starts_with(shown)),
            "{shown}: {help}"
        );
    }
    for hidden in ["role", "collect"] {
        assert!(
            !help.lines().any(|l| l.trim_start().starts_with(hidden)),
            "{hidden} is listed: {help}"
        );
        let own = stratum_bench(&[hidden, "--help"]);
        assert!(own.status.success(), "{hidden} --help");
    }
}

#[test]
fn run_check_prints_what_would_start_and_starts_nothing() {
    let out = common::out_dir("check");
    let checked = common::run_scenario("sv1-vs-sv2", &out, &["--check", "--set", "link.rtt_ms=40"])
        .output()
        .unwrap();
    common::succeed(checked.clone());
    let said = text(&checked.stdout);
    assert!(said.contains("is valid"), "{said}");
    for side in ["sv1", "sv2-a", "sv2-c", "sv2-d"] {
        assert!(
            said.lines()
                .any(|l| l.trim_start().starts_with(&format!("{side}: "))
                    && l.contains("link round trip 40 ms")),
            "{side}: {said}"
        );
    }
    assert!(!out.exists(), "a check writes no run directory");
    // A bad field is named, as a run would name it.
    let bad = common::run_scenario("sv1-vs-sv2", &out, &["--check", "--set", "link.rtt_ms=-5"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(
        text(&bad.stderr).contains("link.rtt_ms"),
        "{}",
        text(&bad.stderr)
    );
}

#[test]
fn scenarios_lists_every_shipped_scenario_with_what_it_is_for() {
    let dir = common::scenario("sv1-baseline");
    let dir = dir.parent().unwrap();
    let listed = stratum_bench(&["scenarios", "--dir", dir.to_str().unwrap()]);
    common::succeed(listed.clone());
    let said = text(&listed.stdout);
    let mut files = 0;
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let name = entry.file_name().into_string().unwrap();
        if name.ends_with(".toml") {
            files += 1;
            let at = said
                .lines()
                .position(|l| l.contains(&name))
                .unwrap_or_else(|| panic!("{name} not listed: {said}"));
            // Its purpose on the next line, indented.
            let purpose = said.lines().nth(at + 1).unwrap_or_default();
            assert!(
                purpose.starts_with("    ") && purpose.trim().len() > 3,
                "{name}: {purpose:?}"
            );
        }
    }
    assert!(files >= 10, "{files}");
}

#[test]
fn two_runs_at_once_each_take_a_free_metrics_port_and_show_prints_the_result_again() {
    let outs = [common::out_dir("port-a"), common::out_dir("port-b")];
    let short = ["--duration", "6s", "--set", "warmup=3s"];
    // Neither names --metrics-bind: the default takes a free port.
    let runs: Vec<_> = outs
        .iter()
        .map(|out| {
            Command::new(common::exe())
                .arg("run")
                .arg(common::scenario("sv1-baseline"))
                .args(short)
                .arg("--out")
                .arg(out)
                // The default log, as a user without RUST_LOG gets it.
                .env_remove("RUST_LOG")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut printed = Vec::new();
    for run in runs {
        let out = run.wait_with_output().unwrap();
        let said = text(&out.stderr);
        common::succeed(out.clone());
        let port = said
            .split("metrics on http://127.0.0.1:")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .and_then(|p| p.parse::<u16>().ok())
            .unwrap_or_else(|| panic!("no metrics address printed: {said}"));
        assert_ne!(port, 0);
        // The roles' start-up lines only with --verbose.
        assert!(!said.contains("role ready"), "{said}");
        printed.push(text(&out.stdout));
    }
    // `show` prints what the run printed of its result, from the run directory.
    let shown = stratum_bench(&["show", outs[0].to_str().unwrap()]);
    common::succeed(shown.clone());
    let shown = text(&shown.stdout);
    assert!(
        shown.contains("sv1") && shown.contains("shares submitted"),
        "{shown}"
    );
    assert!(printed[0].contains(&shown), "{}\n---\n{shown}", printed[0]);
}
