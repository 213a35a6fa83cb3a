//! The K orders a list is shown in, the same before and after the edit. By default they
//! are GEO-Bench's bit for bit: the instance seed is `base_seed · 100003 + (CRC-32 of the
//! instance key mod 100003)`, the first order is the identity and the others are Python's
//! one `random.Random(seed)` shuffling a fresh `range(L)` K − 1 times (MT19937 with
//! CPython's seeding, `rand_mt`). `chacha` orders are Mirage's own, for users who do not
//! need that compatibility.

use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;
use rand_mt::Mt;
use serde::{Deserialize, Serialize};

/// How the orders are drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Orders {
    /// GEO-Bench's, bit-identical (Python's MT19937).
    #[default]
    Python,
    /// ChaCha8 seeded with the instance seed.
    Chacha,
}

/// CPython's `random.Random(seed)` for an integer seed, as far as `shuffle` needs it.
pub struct PyRandom(Mt);

impl PyRandom {
    /// Seeds like CPython: `init_by_array` over the little-endian 32-bit words of |seed|.
    pub fn new(seed: i128) -> PyRandom {
        let mut n = seed.unsigned_abs();
        let mut key = Vec::new();
        while n > 0 {
            key.push(u32::try_from(n & 0xffff_ffff).expect("32 bits"));
            n >>= 32;
        }
        if key.is_empty() {
            key.push(0);
        }
        PyRandom(Mt::new_with_key(key))
    }

    /// `getrandbits(k)` for k ≤ 32.
    pub fn getrandbits(&mut self, k: u32) -> u32 {
        debug_assert!((1..=32).contains(&k));
        self.0.next_u32() >> (32 - k)
    }

    /// `_randbelow(n)`: draws `n.bit_length()` bits until the draw is below `n`.
    pub fn randbelow(&mut self, n: u32) -> u32 {
        let k = 32 - n.leading_zeros();
        loop {
            let r = self.getrandbits(k);
            if r < n {
                return r;
            }
        }
    }

    /// `shuffle(x)`.
    pub fn shuffle<T>(&mut self, x: &mut [T]) {
        for i in (1..x.len()).rev() {
            let bound = u32::try_from(i + 1).expect("list length fits u32");
            let j = self.randbelow(bound) as usize;
            x.swap(i, j);
        }
    }
}

/// The instance seed of GEO-Bench: `base_seed · 100003 + crc32(key) mod 100003`.
pub fn instance_seed(base_seed: i64, instance_key: &str) -> i128 {
    i128::from(base_seed) * 100_003 + i128::from(crc32fast::hash(instance_key.as_bytes()) % 100_003)
}

/// `k` orders of `len` items for the seed: the identity first, then `k − 1` shuffles of the
/// identity drawn one after another from one generator. Order `p` shows item `p[j]` as number `j + 1`.
pub fn orderings(len: usize, k: usize, seed: i128, kind: Orders) -> Vec<Vec<usize>> {
    let mut out = Vec::with_capacity(k);
    if k == 0 {
        return out;
    }
    out.push((0..len).collect());
    match kind {
        Orders::Python => {
            let mut rng = PyRandom::new(seed);
            for _ in 1..k {
                let mut next: Vec<usize> = (0..len).collect();
                rng.shuffle(&mut next);
                out.push(next);
            }
        }
        Orders::Chacha => {
            let mut rng = ChaCha8Rng::seed_from_u64(u64::from_le_bytes(seed.to_le_bytes()[..8].try_into().expect("8")));
            for _ in 1..k {
                let mut next: Vec<usize> = (0..len).collect();
                next.shuffle(&mut rng);
                out.push(next);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_and_mt19937_match_python() {
        assert_eq!(crc32fast::hash(b"123456789"), 0xCBF4_3926);
        let draws = |seed: i128| {
            let mut r = PyRandom::new(seed);
            [r.getrandbits(32), r.getrandbits(32), r.getrandbits(32)]
        };
        assert_eq!(draws(0), [3_626_764_237, 1_654_615_998, 3_255_389_356]);
        assert_eq!(draws(18176), [1_067_563_631, 1_549_501_039, 140_601_322]);
        assert_eq!(draws((1 << 32) + 5), [675_479_763, 2_085_189_291, 1_213_270_837]);
        assert_eq!(draws(-18176), draws(18176), "Python seeds by |seed|");
    }

    #[test]
    fn orders_match_geobench_vectors() {
        assert_eq!(crc32fast::hash(b"ragroll|laptop|1"), 3_914_435_605);
        let seed = instance_seed(0, "ragroll|laptop|1");
        assert_eq!(seed, 18176);
        let expected: [[usize; 8]; 10] = [
            [0, 1, 2, 3, 4, 5, 6, 7],
            [6, 5, 4, 1, 7, 0, 2, 3],
            [1, 2, 4, 5, 6, 0, 7, 3],
            [6, 5, 7, 3, 2, 4, 0, 1],
            [4, 0, 2, 3, 7, 6, 1, 5],
            [0, 7, 4, 1, 2, 5, 3, 6],
            [4, 7, 3, 6, 0, 1, 5, 2],
            [7, 3, 6, 0, 5, 4, 2, 1],
            [3, 5, 7, 0, 1, 6, 2, 4],
            [5, 4, 6, 2, 1, 7, 0, 3],
        ];
        assert_eq!(orderings(8, 10, seed, Orders::Python), expected.map(Vec::from).to_vec());

        assert_eq!(crc32fast::hash(b"stsdata|books|3"), 3_110_552_651);
        assert_eq!(instance_seed(0, "stsdata|books|3"), 59339);
        let sts = orderings(10, 3, 59339, Orders::Python);
        assert_eq!(sts[1], [9, 3, 2, 5, 0, 4, 6, 1, 7, 8]);
        assert_eq!(sts[2], [7, 3, 6, 5, 1, 9, 4, 8, 2, 0]);
        assert_eq!(instance_seed(0, "cseo|web|10"), 85139);
        assert_eq!(orderings(10, 2, 85139, Orders::Python)[1], [9, 8, 3, 5, 4, 1, 2, 6, 0, 7]);
        assert_eq!(instance_seed(0, "ragroll|portable speaker|7"), 77541);
        assert_eq!(orderings(7, 2, 77541, Orders::Python)[1], [6, 1, 0, 5, 4, 3, 2]);
        assert_eq!(
            orderings(10, 3, 0, Orders::Python),
            [
                vec![0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
                vec![7, 8, 1, 5, 3, 4, 2, 0, 9, 6],
                vec![9, 4, 8, 6, 0, 1, 7, 2, 3, 5]
            ]
        );
        assert_eq!(instance_seed(2, "ragroll|laptop|1"), 2 * 100_003 + 18176);
    }

    #[test]
    fn chacha_orders_are_permutations_starting_from_the_identity() {
        let orders = orderings(8, 10, 18176, Orders::Chacha);
        assert_eq!(orders[0], (0..8).collect::<Vec<_>>());
        for o in &orders {
            let mut s = o.clone();
            s.sort_unstable();
            assert_eq!(s, (0..8).collect::<Vec<_>>());
        }
        assert_eq!(orders, orderings(8, 10, 18176, Orders::Chacha), "deterministic");
        assert_ne!(orders, orderings(8, 10, 18176, Orders::Python));
    }
}
