//! The integration tests of `covenant-http`, one test binary: each module was a test
//! file of its own; `cargo test -p covenant-http --test it -- <module>::` runs one.

mod api;
mod audit_hook;
mod auth;
mod avro_flow;
mod common;
mod console;
mod dek_registry;
mod properties;
mod protobuf_descriptor;
mod tls;
