//! Approximate distinct counts that merge: a dense HyperLogLog with 2^10 registers (standard
//! error about 1.04 / sqrt(1024) = 3.25 %).
//!
//! Written here rather than taken from a crate because its registers are part of the profile
//! document, which is versioned and merged across processes and releases: the hash (SipHash
//! 1-3 with fixed keys) and the register layout must never change under us, and a dense
//! HyperLogLog is a few dozen lines.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use siphasher::sip::SipHasher13;

/// SipHash's keys: part of the document format, like the register layout.
const KEYS: (u64, u64) = (0x636f_7665_6e61_6e74, 0x7072_6f66_696c_6573);
const PRECISION: u32 = 10;
const REGISTERS: usize = 1 << PRECISION;
/// The documented relative standard error of [`DistinctSketch::estimate`].
pub const STANDARD_ERROR: f64 = 0.0325;

/// A mergeable distinct-count sketch.
#[derive(Clone, PartialEq, Eq)]
pub struct DistinctSketch {
    registers: Vec<u8>,
}

impl Default for DistinctSketch {
    fn default() -> Self {
        DistinctSketch {
            registers: vec![0; REGISTERS],
        }
    }
}

impl std::fmt::Debug for DistinctSketch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DistinctSketch(~{})", self.estimate())
    }
}

impl DistinctSketch {
    /// Adds a value given by its canonical bytes (equal values must give equal bytes).
    pub fn insert(&mut self, bytes: &[u8]) {
        let hash = SipHasher13::new_with_keys(KEYS.0, KEYS.1).hash(bytes);
        let index = (hash >> (64 - PRECISION)) as usize;
        let rest = hash << PRECISION;
        let rank = (rest.leading_zeros() + 1).min(64 - PRECISION + 1) as u8;
        if self.registers[index] < rank {
            self.registers[index] = rank;
        }
    }

    /// The union of two sketches: exactly the sketch of both inputs together.
    pub fn merge(&mut self, other: &DistinctSketch) {
        for (mine, theirs) in self.registers.iter_mut().zip(&other.registers) {
            *mine = (*mine).max(*theirs);
        }
    }

    /// The estimated number of distinct values inserted.
    pub fn estimate(&self) -> u64 {
        let m = REGISTERS as f64;
        let alpha = 0.7213 / (1.0 + 1.079 / m);
        let sum: f64 = self
            .registers
            .iter()
            .map(|&r| 2f64.powi(-i32::from(r)))
            .sum();
        let raw = alpha * m * m / sum;
        let zeros = self.registers.iter().filter(|&&r| r == 0).count();
        let estimate = if raw <= 2.5 * m && zeros > 0 {
            // Linear counting is the better estimate while many registers are empty.
            m * (m / zeros as f64).ln()
        } else {
            raw
        };
        estimate.round() as u64
    }
}

impl Serialize for DistinctSketch {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&STANDARD.encode(&self.registers))
    }
}

impl<'de> Deserialize<'de> for DistinctSketch {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        let registers = STANDARD
            .decode(text.as_bytes())
            .map_err(serde::de::Error::custom)?;
        if registers.len() != REGISTERS {
            return Err(serde::de::Error::custom(format!(
                "a distinct-count sketch has {REGISTERS} registers, not {}",
                registers.len()
            )));
        }
        Ok(DistinctSketch { registers })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sketch_of(range: std::ops::Range<u64>) -> DistinctSketch {
        let mut sketch = DistinctSketch::default();
        for n in range {
            sketch.insert(n.to_string().as_bytes());
        }
        sketch
    }

    fn within(estimate: u64, truth: u64, errors: f64) -> bool {
        (estimate as f64 - truth as f64).abs() <= errors * STANDARD_ERROR * truth as f64
    }

    #[test]
    fn values_hash_as_streamed_sip_hash_1_3_with_the_format_keys() {
        // Sketches written by earlier releases hashed through the streaming `Hasher`; the
        // one-shot hash must place every value in the same register with the same rank.
        use std::hash::Hasher;
        for len in 0..40usize {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 + len) as u8).collect();
            let mut streamed = SipHasher13::new_with_keys(KEYS.0, KEYS.1);
            streamed.write(&bytes);
            let one_shot = SipHasher13::new_with_keys(KEYS.0, KEYS.1).hash(&bytes);
            assert_eq!(one_shot, streamed.finish(), "{len} bytes");
        }
    }

    #[test]
    fn small_and_large_counts_are_close() {
        assert_eq!(sketch_of(0..0).estimate(), 0);
        assert_eq!(sketch_of(0..10).estimate(), 10);
        for truth in [1_000u64, 50_000, 200_000] {
            let estimate = sketch_of(0..truth).estimate();
            assert!(within(estimate, truth, 3.0), "{truth}: {estimate}");
        }
    }

    #[test]
    fn repeats_do_not_count() {
        let mut sketch = sketch_of(0..100);
        let before = sketch.estimate();
        for n in 0..100u64 {
            sketch.insert(n.to_string().as_bytes());
        }
        assert_eq!(sketch.estimate(), before);
    }

    #[test]
    fn a_merge_is_the_sketch_of_the_union() {
        let mut left = sketch_of(0..30_000);
        left.merge(&sketch_of(20_000..60_000));
        assert_eq!(left, sketch_of(0..60_000));
    }

    #[test]
    fn registers_round_trip_through_json() {
        let sketch = sketch_of(0..500);
        let text = serde_json::to_string(&sketch).expect("serialize");
        let back: DistinctSketch = serde_json::from_str(&text).expect("deserialize");
        assert_eq!(back, sketch);
        assert!(serde_json::from_str::<DistinctSketch>("\"AAAA\"").is_err());
    }
}
