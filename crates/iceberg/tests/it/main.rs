//! The integration tests of `covenant-iceberg`, one test binary: each module was a test
//! file of its own; `cargo test -p covenant-iceberg --test it -- <module>::` runs one.

mod conformance;
mod parse_and_ddl;
