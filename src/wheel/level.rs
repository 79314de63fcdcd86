//! Where a tick lives in the hierarchy: which level, which slot.
//!
//! A *revolution* is `slots` ticks (a power of two, `2^b0`), aligned: the
//! ticks that agree on every bit from `b0` up. Level 0 is a ring of `2 *
//! slots` slots, one tick each, that holds the wheel's current revolution
//! (the one its position `pos` is in) and the next one. Every level above
//! has 64 slots, each 64 times as wide as a slot of the level below it (a
//! level-1 slot spans one revolution): a slot of level `L >= 1` spans `2^(b0
//! + 6 (L - 1))` ticks. There are as many levels as it takes to cover every
//! `u64` tick: `1 + ceil((64 - b0) / 6)`, so 11 at the default 64 slots.
//!
//! A tick `t` due after `pos` sits at level 0 if it lies in `pos`'s
//! revolution or the next one; otherwise at the level of the highest bit in
//! which `t` and `pos` differ (its bit range below). So a level's entries
//! all lie in the current revolution of that level (they agree with `pos`
//! on every bit above the level), in slots after the one `pos` is in, and
//! never in the revolution after `pos`'s. As `pos` moves, an entry's level
//! can only fall: it moves down when `pos` enters its slot, or the
//! revolution before the one it lies in, at most `levels - 1` times in its
//! life.
//!
//! ```text
//!   bit:  63 ........ b0+12  b0+11 .. b0+6  b0+5 .. b0   b0-1 .. 0
//!         [ level 3 ... ]   [ level 2    ] [ level 1  ] [ level 0  ]
//! ```

/// Bits of a tick per level above level 0 (64 slots).
const UPPER_BITS: u32 = 6;
/// Slots per level above level 0.
pub(crate) const UPPER_SLOTS: usize = 1 << UPPER_BITS;

/// The most levels a wheel can have: one for level 0 (at least one slot),
/// then enough upper levels for the rest of a `u64` tick's bits.
pub(crate) const MAX_LEVELS: usize = 1 + (u64::BITS as usize).div_ceil(UPPER_BITS as usize);

/// The shape of a wheel: how many levels, and how ticks map to slots.
///
/// Slots are numbered in one flat range: level 0's ring first, then 64 for
/// each level above.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Geometry {
    /// `log2` of the ticks in a revolution.
    bits0: u32,
    levels: usize,
}

impl Geometry {
    /// The shape for revolutions of `slots` ticks (a power of two).
    pub(crate) fn new(slots: usize) -> Self {
        assert!(slots.is_power_of_two(), "slot count must be a power of two");
        let bits0 = slots.trailing_zeros();
        let upper = (u64::BITS - bits0).div_ceil(UPPER_BITS) as usize;
        // The most levels are for one slot at level 0 (`bits0 == 0`), which
        // `MAX_LEVELS` counts: `TimerWheel::transit` has room for that many lists.
        let levels = 1 + upper;
        debug_assert!(levels <= MAX_LEVELS);
        Geometry { bits0, levels }
    }

    /// Ticks in a revolution: the wheel's `slots`.
    pub(crate) fn slots0(self) -> usize {
        1 << self.bits0
    }

    /// Slots of level 0's ring: two revolutions.
    pub(crate) fn ring0(self) -> usize {
        2 << self.bits0
    }

    /// How many levels there are.
    pub(crate) fn levels(self) -> usize {
        self.levels
    }

    /// Slots of all levels together.
    pub(crate) fn total_slots(self) -> usize {
        self.ring0() + (self.levels - 1) * UPPER_SLOTS
    }

    /// The lowest bit of a tick that level `level` looks at.
    fn shift(self, level: usize) -> u32 {
        match level {
            0 => 0,
            l => self.bits0 + UPPER_BITS * (l as u32 - 1),
        }
    }

    /// The revolution `t` lies in, counted from tick 0.
    pub(crate) fn revolution(self, t: u64) -> u64 {
        t >> self.bits0
    }

    /// The level a tick `t` belongs at when the wheel is at `pos`: 0 for a
    /// tick in `pos`'s revolution or the next one (or at or before `pos`:
    /// due), else [`level_by_bits`](Self::level_by_bits).
    pub(crate) fn level_of(self, t: u64, pos: u64) -> usize {
        if t <= pos || self.revolution(t) - self.revolution(pos) <= 1 {
            return 0;
        }
        self.level_by_bits(t, pos)
    }

    /// The level of the highest bit in which `t` and `pos` differ, for `t`
    /// in a later revolution than `pos`: where `t` sits unless it is in
    /// level 0's ring, and where the wheel finds the ticks of the revolution
    /// after `pos`'s before they move into the ring.
    pub(crate) fn level_by_bits(self, t: u64, pos: u64) -> usize {
        debug_assert!(self.revolution(t) > self.revolution(pos));
        let high = u64::BITS - 1 - (t ^ pos).leading_zeros();
        1 + ((high - self.bits0) / UPPER_BITS) as usize
    }

    /// The flat index of the slot at `level` that holds tick `t`.
    pub(crate) fn slot(self, level: usize, t: u64) -> usize {
        if level == 0 {
            (t & (self.ring0() as u64 - 1)) as usize
        } else {
            self.first_slot(level) + ((t >> self.shift(level)) as usize & (UPPER_SLOTS - 1))
        }
    }

    /// The flat index of level `level`'s first slot.
    pub(crate) fn first_slot(self, level: usize) -> usize {
        match level {
            0 => 0,
            l => self.ring0() + (l - 1) * UPPER_SLOTS,
        }
    }

    /// Whether `a` and `b` lie in the same slot of `level` and every level
    /// above it: if so, moving from one to the other crosses no slot
    /// boundary of `level` or above. At level 1: in the same revolution.
    pub(crate) fn same_from(self, level: usize, a: u64, b: u64) -> bool {
        (a ^ b) >> self.shift(level) == 0
    }

    /// Whether `t` lies in the first revolution of its slot at `level`: the
    /// part of the slot's range that lands on level 0 when the wheel enters
    /// the revolution before the slot (or, jumping there, the slot itself).
    /// Always so at levels 0 and 1, whose slots span one revolution at most.
    pub(crate) fn in_first_revolution(self, level: usize, t: u64) -> bool {
        if level <= 1 {
            return true;
        }
        let revolutions = self.shift(level) - self.bits0;
        (t >> self.bits0) & ((1u64 << revolutions) - 1) == 0
    }

    /// The first tick of the revolution that `t` lies in.
    pub(crate) fn revolution_start(self, t: u64) -> u64 {
        t & !(self.slots0() as u64 - 1)
    }

    /// The first tick of the revolution before the one `t` lies in, where
    /// the wheel takes `t`'s revolution out of the upper levels to move it
    /// into level 0's ring. `t` must not lie in revolution 0.
    pub(crate) fn revolution_before(self, t: u64) -> u64 {
        self.revolution_start(t) - self.slots0() as u64
    }

    /// The first tick after the revolution that `t` lies in (saturated at
    /// `u64::MAX`).
    pub(crate) fn revolution_end(self, t: u64) -> u64 {
        (t | (self.slots0() as u64 - 1)).saturating_add(1)
    }

    /// The number of slots of `level`.
    pub(crate) fn slots_of(self, level: usize) -> usize {
        if level == 0 {
            self.ring0()
        } else {
            UPPER_SLOTS
        }
    }

    /// The span of one slot of `level`, in ticks (saturated at `u64::MAX`).
    #[cfg(test)]
    pub(crate) fn slot_span(self, level: usize) -> u64 {
        1u64.checked_shl(self.shift(level)).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_cover_every_tick() {
        assert_eq!(Geometry::new(512).levels(), 11);
        assert_eq!(Geometry::new(1).levels(), 12);
        assert_eq!(Geometry::new(64).levels(), 11);
        assert_eq!(Geometry::new(1 << 16).levels(), 9);
        for log in 0..=16 {
            let g = Geometry::new(1 << log);
            let top = g.levels() - 1;
            assert!(g.shift(top) < 64, "slots 2^{log}: top level shift");
            assert!(
                g.shift(top) + UPPER_BITS >= 64,
                "slots 2^{log}: top level reaches bit 63"
            );
            assert_eq!(g.level_of(u64::MAX, 0), top);
        }
    }

    #[test]
    fn level_is_the_highest_differing_bit_past_the_next_revolution() {
        let g = Geometry::new(8); // level 0: 16 slots, level 1: bits 3..9, level 2: 9..15
        assert_eq!(g.level_of(5, 5), 0, "due");
        assert_eq!(g.level_of(7, 0), 0);
        assert_eq!(g.level_of(8, 0), 0, "the next revolution is level 0's too");
        assert_eq!(g.level_of(15, 0), 0);
        assert_eq!(g.level_of(16, 0), 1);
        assert_eq!(g.level_of(8, 7), 0, "one tick away, across a revolution");
        assert_eq!(g.level_of(16, 7), 1);
        assert_eq!(g.level_of(23, 8), 0);
        assert_eq!(g.level_of(511, 0), 1);
        assert_eq!(g.level_of(512, 0), 2);
        assert_eq!(
            g.level_of(512, 504),
            0,
            "the next revolution, across a level-2 boundary"
        );
        assert_eq!(g.level_by_bits(512, 504), 2, "where it waits until then");
        assert_eq!(g.level_of(520, 504), 2);
        assert_eq!(g.level_of(1 << 15, 0), 3);
        assert_eq!(g.slot(0, 13), 13);
        assert_eq!(g.slot(0, 21), 5, "level 0 is a ring of two revolutions");
        assert_eq!(g.slot(1, 13), 16 + 1);
        assert_eq!(g.slot(2, (3 << 9) + 17), 16 + 64 + 3);
        assert_eq!(g.total_slots(), 16 + 64 * (g.levels() - 1));
        assert_eq!(g.slot_span(1), 8);
        assert_eq!(g.slot_span(2), 512);
        assert_eq!(g.revolution(23), 2);
        assert_eq!(g.revolution_start(23), 16);
        assert_eq!(g.revolution_before(23), 8);
        assert_eq!(g.revolution_before(16), 8);
    }

    #[test]
    fn first_revolution_of_a_slot() {
        let g = Geometry::new(8); // a level-2 slot spans 512 ticks, 64 revolutions
        for t in [0, 7, 8, 63, 511] {
            assert!(g.in_first_revolution(0, t) && g.in_first_revolution(1, t));
        }
        assert!(g.in_first_revolution(2, 512));
        assert!(g.in_first_revolution(2, 512 + 7));
        assert!(!g.in_first_revolution(2, 512 + 8));
        assert!(!g.in_first_revolution(2, 1023));
        assert!(g.in_first_revolution(3, 1 << 15));
        assert!(!g.in_first_revolution(3, (1 << 15) + 512));
        assert!(!g.in_first_revolution(3, (1 << 15) + 8));
        assert_eq!(g.revolution_end(512), 520);
        assert_eq!(g.revolution_end(519), 520);
        assert_eq!(g.revolution_end(u64::MAX), u64::MAX);
        assert_eq!(Geometry::new(1).revolution_end(5), 6);
        // The top level's slots reach bit 63.
        let top = g.levels() - 1;
        assert!(g.in_first_revolution(top, 0));
        assert!(!g.in_first_revolution(top, 8));
    }
}
