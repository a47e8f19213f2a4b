//! `oxshmem-info --json`: one JSON document with everything the other two forms print, checked
//! against them (parsed with serde_json).

mod common;

use std::process::Command;

use common::{info, tool};
use serde_json::Value;

const SET: &[(&str, &str)] = &[("NVSHMEM_DEBUG", "1"), ("OXSHMEM_SPIN", "7"), ("SMA_SYMMETRIC_SIZE", "64M")];

fn doc() -> Value {
    let text = info(&["--json"], SET);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}):\n{text}"))
}

fn str_at<'a>(doc: &'a Value, path: &[&str]) -> &'a str {
    let mut v = doc;
    for k in path {
        v = v.get(k).unwrap_or_else(|| panic!("no {path:?} in the JSON document"));
    }
    v.as_str().unwrap_or_else(|| panic!("{path:?} is not a string: {v}"))
}

/// Every `section:key:value` line of `--parsable` is in the document, with the same text, and
/// the document has nothing else.
#[test]
fn json_has_every_parsable_fact() {
    let doc = doc();
    let parsable = info(&["--parsable"], SET);
    let mut facts = 0;
    let mut vars = std::collections::HashSet::new();
    for l in parsable.lines() {
        let (section, rest) = l.split_once(':').unwrap();
        if section == "config" {
            // config:NAME:what:value
            let mut parts = rest.splitn(3, ':');
            let (name, what, value) = (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
            vars.insert(name.to_string());
            let got = &doc["config"][name][what];
            if what == "aliases" {
                let list: Vec<&str> =
                    got.as_array().expect("aliases: an array").iter().map(|a| a.as_str().unwrap()).collect();
                assert_eq!(list.join(","), value, "{name}: aliases");
            } else {
                assert_eq!(got.as_str(), Some(value), "config {name} {what}");
            }
        } else {
            let (key, value) = rest.split_once(':').unwrap();
            assert_eq!(str_at(&doc, &[section, key]), value, "{section}:{key}");
            facts += 1;
        }
    }
    let obj = doc.as_object().expect("an object");
    let plain: usize = obj.iter().filter(|(s, _)| *s != "config").map(|(_, v)| v.as_object().unwrap().len()).sum();
    assert_eq!(plain, facts, "the document has facts --parsable has not");
    assert_eq!(obj["config"].as_object().unwrap().len(), vars.len());
    for section in ["package", "build", "path", "transport", "launcher", "compiler", "nvshmem", "config"] {
        assert!(obj.contains_key(section), "section {section} missing");
    }
}

/// Every variable the human form lists (`  NAME = value [source]`) is in the document with the
/// same value and source; and a few facts of the other sections.
#[test]
fn json_matches_the_human_form() {
    let doc = doc();
    let text = info(&[], SET);
    let config = text.split_once("Configuration (").expect("the configuration section").1;
    let mut named = 0;
    for l in config.lines().filter(|l| l.starts_with("  ") && !l.starts_with("   ")) {
        let (name, rest) = l.trim_start().split_once(" = ").unwrap_or_else(|| panic!("not NAME = value: {l}"));
        let (value, source) = rest.rsplit_once(" [").unwrap();
        let var = &doc["config"][name];
        assert!(var.is_object(), "{name}, in the text, is not in the JSON document");
        let want = if var["value"] == "" { "\"\"" } else { var["value"].as_str().unwrap() };
        assert_eq!(value, want, "{name}: value");
        assert_eq!(Some(source.trim_end_matches(']')), var["source"].as_str(), "{name}: source");
        named += 1;
    }
    // oxshmem-info lists the device layer's variables too (it registers them at start): so
    // does this process before counting.
    oxshmem_device::config::register().expect("registering the device layer's variables");
    assert_eq!(named, oxshmem::config::shown_vars().count());
    assert_eq!(doc["config"].as_object().unwrap().len(), named);

    // The settings made above, as read.
    assert_eq!(str_at(&doc, &["config", "OXSHMEM_SPIN", "source"]), "environment (OXSHMEM_SPIN)");
    assert_eq!(str_at(&doc, &["config", "OXSHMEM_SPIN", "value"]), "7");
    assert_eq!(str_at(&doc, &["config", "SHMEM_SYMMETRIC_SIZE", "value"]), "64M");
    assert_eq!(str_at(&doc, &["config", "SHMEM_SYMMETRIC_SIZE", "source"]), "environment (SMA_SYMMETRIC_SIZE)");
    assert!(
        doc["config"]["SHMEM_SYMMETRIC_SIZE"]["aliases"].as_array().unwrap().contains(&"SMA_SYMMETRIC_SIZE".into())
    );

    // Package, build, transports: the values the human form shows.
    let version = str_at(&doc, &["package", "version"]);
    assert_eq!(version, env!("CARGO_PKG_VERSION"));
    assert!(text.contains(&format!("version: {version}")), "{text}");
    assert_eq!(str_at(&doc, &["package", "openshmem"]), "1.5");
    for key in ["profile", "feature pmix"] {
        assert!(text.contains(&format!("{key}: {}", str_at(&doc, &["build", key]))), "build {key}");
    }
    for key in ["shm", "ofi", "rdma devices"] {
        assert!(text.contains(&format!("{key}: {}", str_at(&doc, &["transport", key]))), "transport {key}");
    }
    for l in ["oshrun", "mpiexec.hydra", "srun"] {
        assert!(text.contains(&format!("{l}: {}", str_at(&doc, &["launcher", l]))), "launcher {l}");
    }
}

#[test]
fn json_arguments() {
    let help = info(&["--help"], &[]);
    assert!(help.contains("--json"), "{help}");
    let out = Command::new(tool("oxshmem-info")).args(["--json", "--parsable"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("exclude each other"));
    // Repeating a form is fine.
    let v: Value = serde_json::from_str(&info(&["--json", "--json"], &[])).unwrap();
    assert!(v["config"].is_object());
}
