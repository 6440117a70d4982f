//! The Confluent-compatible HTTP API.
