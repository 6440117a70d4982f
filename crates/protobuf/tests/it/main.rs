//! The integration tests of `covenant-protobuf`, one test binary: each module was a test
//! file of its own; `cargo test -p covenant-protobuf --test it -- <module>::` runs one.

mod confluent_print;
mod conformance;
