//! The integration tests of `covenant-store`, one test binary: each module was a test
//! file of its own; `cargo test -p covenant-store --test it -- <module>::` runs one.

mod audit_denials;
mod audit_in_transaction;
mod deks_postgres;
mod exporters_postgres;
mod governance_postgres;
mod governance_sqlite;
mod governance_suite;
mod postgres_conformance;
mod profiles_postgres;
mod samples_postgres;
mod sqlite_conformance;
