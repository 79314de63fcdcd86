//! Occupancy bitmap of the wheel's slots: one bit per slot, set while the
//! slot's list is non-empty, so the driver visits only occupied slots.

/// A fixed-size set of slot indices.
#[derive(Debug)]
pub(crate) struct Bitmap {
    words: Box<[u64]>,
}

impl Bitmap {
    /// The bytes it allocates, for the tests of the wheel's footprint.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        std::mem::size_of_val(&*self.words)
    }

    /// A bitmap for `len` slots, all clear.
    pub(crate) fn new(len: usize) -> Self {
        Self {
            words: vec![0; len.div_ceil(64)].into_boxed_slice(),
        }
    }

    pub(crate) fn set(&mut self, i: usize) {
        self.words[i / 64] |= 1 << (i % 64);
    }

    pub(crate) fn clear(&mut self, i: usize) {
        self.words[i / 64] &= !(1 << (i % 64));
    }

    #[cfg(test)]
    pub(crate) fn get(&self, i: usize) -> bool {
        self.words[i / 64] & (1 << (i % 64)) != 0
    }

    /// The first set index in `from..to`.
    pub(crate) fn next_one(&self, from: usize, to: usize) -> Option<usize> {
        let mut i = from;
        while i < to {
            let word = self.words[i / 64] >> (i % 64);
            if word != 0 {
                let found = i + word.trailing_zeros() as usize;
                return (found < to).then_some(found);
            }
            i = (i / 64 + 1) * 64;
        }
        None
    }

    /// The set indices, in increasing order.
    #[cfg(test)]
    pub(crate) fn ones(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                if rest == 0 {
                    return None;
                }
                let bit = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                Some(w * 64 + bit)
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Bitmap;

    #[test]
    fn set_clear_and_iterate_across_words() {
        let mut b = Bitmap::new(200);
        for i in [0, 1, 63, 64, 127, 128, 199] {
            b.set(i);
        }
        b.clear(1);
        assert!(b.get(0) && !b.get(1) && b.get(199));
        assert_eq!(b.ones().collect::<Vec<_>>(), vec![0, 63, 64, 127, 128, 199]);
    }

    #[test]
    fn next_one_looks_only_inside_the_range() {
        let mut b = Bitmap::new(300);
        for i in [3, 64, 70, 200] {
            b.set(i);
        }
        assert_eq!(b.next_one(0, 300), Some(3));
        assert_eq!(b.next_one(4, 300), Some(64));
        assert_eq!(b.next_one(65, 70), None, "the end is exclusive");
        assert_eq!(b.next_one(65, 71), Some(70));
        assert_eq!(b.next_one(71, 200), None);
        assert_eq!(b.next_one(71, 300), Some(200));
        assert_eq!(b.next_one(201, 300), None);
        assert_eq!(b.next_one(5, 5), None);
    }

    #[test]
    fn small_bitmap_has_one_word() {
        let mut b = Bitmap::new(1);
        assert_eq!(b.ones().count(), 0);
        b.set(0);
        assert_eq!(b.ones().collect::<Vec<_>>(), vec![0]);
    }
}
