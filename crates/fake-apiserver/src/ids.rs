//! Server-generated identifiers and timestamps: `metadata.uid`, `generateName` suffixes,
//! RFC 3339 times with second precision (as `metav1.Time` serialises).

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

/// Unique ids from a per-server random seed and a counter (no extra dependency on an RNG).
#[derive(Debug)]
pub(crate) struct IdSource {
    seed: RandomState,
    counter: u64,
}

impl IdSource {
    pub(crate) fn new() -> Self {
        Self {
            seed: RandomState::new(),
            counter: 0,
        }
    }

    fn next_u64(&mut self) -> u64 {
        self.counter += 1;
        self.seed.hash_one(self.counter)
    }

    /// A version-4 style UUID string.
    pub(crate) fn uid(&mut self) -> String {
        let hi = self.next_u64();
        let lo = self.next_u64();
        let bytes: u128 = (u128::from(hi) << 64) | u128::from(lo);
        // Set version (4) and variant (10xx) bits like a random UUID.
        let bytes = (bytes & !(0xf_u128 << 76)) | (0x4_u128 << 76);
        let bytes = (bytes & !(0x3_u128 << 62)) | (0x2_u128 << 62);
        let hex = format!("{bytes:032x}");
        format!(
            "{}-{}-{}-{}-{}",
            &hex[0..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..32]
        )
    }

    /// Five characters from the alphabet `names.SimpleNameGenerator` uses (no vowels, no
    /// look-alike digits).
    pub(crate) fn name_suffix(&mut self) -> String {
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        let mut n = self.next_u64();
        let alphabet_len = ALPHABET.len() as u64;
        (0..5)
            .map(|_| {
                // The index is < 27, so the cast cannot truncate.
                let c = ALPHABET[(n % alphabet_len) as usize];
                n /= alphabet_len;
                char::from(c)
            })
            .collect()
    }
}

/// Now, as `metav1.Time` serialises it (`2006-01-02T15:04:05Z`).
pub(crate) fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uids_are_distinct_and_shaped_like_uuid_v4() {
        let mut ids = IdSource::new();
        let a = ids.uid();
        let b = ids.uid();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
    }

    #[test]
    fn suffixes_use_the_generator_alphabet() {
        let mut ids = IdSource::new();
        let s = ids.name_suffix();
        assert_eq!(s.len(), 5);
        assert!(s.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
    }
}
