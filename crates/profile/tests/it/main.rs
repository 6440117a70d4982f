//! The integration tests of `covenant-profile`, one test binary: each module was a test
//! file of its own; `cargo test -p covenant-profile --test it -- <module>::` runs one.

mod parse_paths_agree;
