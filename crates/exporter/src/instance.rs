//! This process's instance identity: a random value drawn at start, sent by the HTTP server
//! in the [`HEADER`] of every response. An exporter whose destination answers with it is
//! copying into its own source, whatever name or address the destination was given.

use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

/// The response header carrying [`id`].
pub const HEADER: &str = "covenant-instance";

/// This process's identity: 32 hex digits, random for every process.
pub fn id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        // Each `RandomState` is seeded from the operating system's randomness.
        let half = |salt: u64| {
            let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
            hasher.write_u64(salt);
            hasher.write_u128(now);
            hasher.write_u32(std::process::id());
            hasher.finish()
        };
        format!("{:016x}{:016x}", half(1), half(2))
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_identity_is_stable_within_a_process() {
        assert_eq!(super::id(), super::id());
        assert_eq!(super::id().len(), 32);
        assert!(super::id().chars().all(|c| c.is_ascii_hexdigit()));
    }
}
