//! The integration tests of `covenant-governance`, one test binary: each module was a test
//! file of its own; `cargo test -p covenant-governance --test it -- <module>::` runs one.

mod declarations;
mod drills;
