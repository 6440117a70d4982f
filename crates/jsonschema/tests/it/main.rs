//! The integration tests of `covenant-jsonschema`, one test binary: each module was a test
//! file of its own; `cargo test -p covenant-jsonschema --test it -- <module>::` runs one.

mod conformance;
