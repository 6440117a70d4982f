//! What a newcomer reads first in `README.md` stays true to the code: the test command is the
//! first command, the prerequisites name the toolchain the workspace declares and what the test
//! command needs, the first build's duration is stated, and the walkthrough uses the release
//! binary the build instructions produce.

use std::path::PathBuf;

fn read(relative: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The section under `## title`, up to the next `## `.
fn section<'a>(readme: &'a str, title: &str) -> &'a str {
    let start = readme
        .find(&format!("\n## {title}\n"))
        .unwrap_or_else(|| panic!("README has no '## {title}' section"));
    let rest = &readme[start + title.len() + 5..];
    &rest[..rest.find("\n## ").unwrap_or(rest.len())]
}

#[test]
fn prerequisites_name_the_toolchain_and_what_the_tests_install() {
    let readme = read("README.md");
    let manifest = read("Cargo.toml");
    let rust_version = manifest
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .map(|v| v.trim_matches('"'))
        .expect("workspace rust-version");
    let prerequisites = section(&readme, "Prerequisites");
    for needed in [
        format!("Rust {rust_version} or newer"),
        "Python 3 with `venv`".to_string(),
        "Node.js and npm".to_string(),
        "PostgreSQL".to_string(),
        "needs root".to_string(),
        "cold `cargo build --release -p covenant-cli`".to_string(),
        "minutes".to_string(),
    ] {
        assert!(
            prerequisites.contains(&needed),
            "Prerequisites lack '{needed}'"
        );
    }
    let test_script = read("scripts/test.sh") + &read("scripts/client-tests.sh");
    for package in ["nodejs", "npm", "curl", "jq"] {
        assert!(
            test_script.contains(package),
            "the scripts no longer install {package}"
        );
        assert!(
            prerequisites.contains(&format!("`{package}`")),
            "{package} not listed"
        );
    }
}

#[test]
fn the_test_command_comes_first_and_the_walkthrough_uses_the_release_binary() {
    let readme = read("README.md");
    let first_path = readme.find("./").expect("a ./ path");
    assert!(readme[first_path..].starts_with("./scripts/test.sh"));
    assert!(
        !readme.contains("target/debug"),
        "a walkthrough still uses the debug binary"
    );
    assert!(readme.contains("export PATH=\"$PWD/target/release:$PATH\""));
}
