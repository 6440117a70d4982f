//! The integration tests of `covenant-avro`, one test binary: each module was a test
//! file of its own; `cargo test -p covenant-avro --test it -- <module>::` runs one.

mod conformance;
mod identity;
mod parse_errors;
mod resolution_property;
