//! The integration tests of `covenant-policy`, one test binary: each module was a test
//! file of its own; `cargo test -p covenant-policy --test it -- <module>::` runs one.

mod seed_examples;
