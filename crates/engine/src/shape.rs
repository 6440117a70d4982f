//! The keyed hash behind structural hashes ("shapes"): every format hashes the parts of a
//! schema its comparison reads, so that two parts with equal hashes can be taken as equal
//! without a walk.
//!
//! It is a 128-bit SipHash whose key is drawn once per process: a schema author who cannot
//! see the key cannot construct two different parts that collide, and the hashes are never
//! stored or sent anywhere, so they need not be stable across processes.

use siphasher::sip128::SipHasher13;
use std::hash::BuildHasher;
use std::sync::OnceLock;

pub use siphasher::sip128::Hasher128;

fn keys() -> (u64, u64) {
    static KEYS: OnceLock<(u64, u64)> = OnceLock::new();
    // `RandomState` is seeded from the operating system's randomness, which is all a
    // secret key needs here; it avoids a dependency on a random number generator.
    *KEYS.get_or_init(|| {
        let state = std::collections::hash_map::RandomState::new();
        (state.hash_one(1u8), state.hash_one(2u8))
    })
}

/// A hasher with this process's key; finish it with [`Hasher128::finish128`].
pub fn hasher() -> SipHasher13 {
    let (k0, k1) = keys();
    SipHasher13::new_with_keys(k0, k1)
}

/// The shape of a byte string, e.g. a canonical text or an encoded declaration.
pub fn of_bytes(bytes: &[u8]) -> u128 {
    use std::hash::Hasher;
    let mut h = hasher();
    h.write(bytes);
    h.finish128().as_u128()
}

/// How many leading entries two hash chains share. Chains agree up to some entry and differ
/// from there on, so the first difference is found by bisection.
pub fn common_prefix(a: &[u128], b: &[u128]) -> usize {
    let (mut lo, mut hi) = (0, a.len().min(b.len()));
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if a[mid] == b[mid] {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_bytes_give_equal_shapes_and_different_bytes_differ() {
        assert_eq!(
            of_bytes(b"{\"type\":\"string\"}"),
            of_bytes(b"{\"type\":\"string\"}")
        );
        assert_ne!(
            of_bytes(b"{\"type\":\"string\"}"),
            of_bytes(b"{\"type\":\"integer\"}")
        );
        // Prefixes are not confused with the whole: the length is part of the hash.
        assert_ne!(of_bytes(b"ab"), of_bytes(b"abc"));
    }

    #[test]
    fn chains_share_the_entries_before_their_first_difference() {
        assert_eq!(common_prefix(&[1, 2, 3, 4], &[1, 2, 9, 9, 9]), 2);
        assert_eq!(common_prefix(&[1, 2], &[1, 2, 3]), 2);
        assert_eq!(common_prefix(&[], &[1]), 0);
    }
}
