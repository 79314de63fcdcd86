//! Where a tick lives in the hierarchy: which level, which slot.
//!
//! A *revolution* is `slots` ticks (a power of two, `2^b0`), aligned: the
//! ticks that agree on every bit from `b0` up. Level 0 is a ring of `2 *
//! slots` slots, one tick each, that holds the wheel's current revolution
//! (the one its position `pos` is in) and the next one. Level 1 has 512
//! slots of one revolution each; every level above it has 64 slots, each 64
//! times as wide as a slot of the level below it (512 times at level 2): a
//! slot of level `L >= 2` spans `2^(b0 + 9 + 6 (L - 2))` ticks. There are as
//! many levels as it takes to cover every `u64` tick: `2 + ceil((64 - b0 -
//! 9) / 6)`, so 11 at the default 64 slots.
//!
//! Why level 1 is wider than the others: a timer waits at level 1 when its
//! tick lies within the same 512 revolutions as `pos` (327 s at the default
//! 10 ms tick and 64 slots), and at level 2 when it lies past their end, to
//! move down to level 1 when the wheel gets there. With 64 slots at level 1
//! (40.96 s), an idle timeout of 30 s crossed that boundary about three
//! times in four, and every crossing cost its entry one more visit; a
//! server whose connections all came up together (a restart) had every idle
//! timeout filed again at the same boundary. With 512, one in eleven
//! crosses. The price is at the long end: a 5-minute timeout now crosses
//! almost always, where it sat in a 40.96 s slot of level 2 and moved
//! once, so it moves once more a wait; and a level-2 slot, which the wheel
//! empties on entering, holds 327 s of deadlines rather than 41
//! (`docs/benchmarks.md`, "A wider level 1").
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
//!   bit:  63 ........ b0+15  b0+14 .. b0+9  b0+8 .. b0   b0-1 .. 0
//!         [ level 3 ... ]   [ level 2    ] [ level 1  ] [ level 0  ]
//! ```

/// Bits of a tick at level 1 (512 slots, each one revolution).
const LEVEL1_BITS: u32 = 9;
/// Slots of level 1.
const LEVEL1_SLOTS: usize = 1 << LEVEL1_BITS;
/// Bits of a tick per level above level 1 (64 slots).
const UPPER_BITS: u32 = 6;
/// Slots per level above level 1.
const UPPER_SLOTS: usize = 1 << UPPER_BITS;

/// The most levels a wheel can have: one for level 0 (at least one slot),
/// level 1, then enough levels for the rest of a `u64` tick's bits.
pub(crate) const MAX_LEVELS: usize =
    2 + (u64::BITS as usize - LEVEL1_BITS as usize).div_ceil(UPPER_BITS as usize);

/// The shape of a wheel: how many levels, and how ticks map to slots.
///
/// Slots are numbered in one flat range: level 0's ring first, then level
/// 1's 512, then 64 for each level above.
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
        // Level 1, then the levels above it for the bits left (level 0 has
        // at most 16: `Builder::slots`' limit).
        let above = u64::BITS
            .saturating_sub(bits0 + LEVEL1_BITS)
            .div_ceil(UPPER_BITS) as usize;
        // The most levels are for one slot at level 0 (`bits0 == 0`), which
        // `MAX_LEVELS` counts: `TimerWheel::transit` has room for that many lists.
        let levels = 2 + above;
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
        self.first_slot(self.levels)
    }

    /// The lowest bit of a tick that level `level` looks at.
    fn shift(self, level: usize) -> u32 {
        match level {
            0 => 0,
            1 => self.bits0,
            l => self.bits0 + LEVEL1_BITS + UPPER_BITS * (l as u32 - 2),
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
        let high = u64::BITS - 1 - (t ^ pos).leading_zeros() - self.bits0;
        match high.checked_sub(LEVEL1_BITS) {
            None => 1,
            Some(above) => 2 + (above / UPPER_BITS) as usize,
        }
    }

    /// The flat index of the slot at `level` that holds tick `t`.
    pub(crate) fn slot(self, level: usize, t: u64) -> usize {
        if level == 0 {
            (t & (self.ring0() as u64 - 1)) as usize
        } else {
            self.first_slot(level)
                + ((t >> self.shift(level)) as usize & (self.slots_of(level) - 1))
        }
    }

    /// The flat index of level `level`'s first slot.
    pub(crate) fn first_slot(self, level: usize) -> usize {
        match level {
            0 => 0,
            1 => self.ring0(),
            l => self.ring0() + LEVEL1_SLOTS + (l - 2) * UPPER_SLOTS,
        }
    }

    /// The first tick of level-1 slot `slot` (a flat index) while the wheel
    /// is at `pos`: the revolution of that slot among the 512 that `pos`
    /// lies in, where every entry of level 1 lies.
    pub(crate) fn level1_slot_start(self, slot: usize, pos: u64) -> u64 {
        let span = self.bits0 + LEVEL1_BITS;
        let index = (slot - self.first_slot(1)) as u64;
        (pos >> span << span) | (index << self.bits0)
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
        match level {
            0 => self.ring0(),
            1 => LEVEL1_SLOTS,
            _ => UPPER_SLOTS,
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
        assert_eq!(Geometry::new(512).levels(), 10);
        assert_eq!(Geometry::new(1).levels(), 12);
        assert_eq!(Geometry::new(64).levels(), 11);
        assert_eq!(Geometry::new(1 << 16).levels(), 9);
        for log in 0..=16 {
            let g = Geometry::new(1 << log);
            let top = g.levels() - 1;
            assert!(g.levels() <= MAX_LEVELS, "slots 2^{log}: too many levels");
            assert!(g.shift(top) < 64, "slots 2^{log}: top level shift");
            assert!(
                g.shift(top) + UPPER_BITS >= 64,
                "slots 2^{log}: top level reaches bit 63"
            );
            assert_eq!(g.level_of(u64::MAX, 0), top);
            assert_eq!(
                g.total_slots(),
                g.ring0() + LEVEL1_SLOTS + UPPER_SLOTS * (g.levels() - 2)
            );
        }
    }

    #[test]
    fn level_is_the_highest_differing_bit_past_the_next_revolution() {
        // Level 0: 16 slots; level 1: bits 3..12 (512 slots); level 2:
        // bits 12..18; level 3: bits 18..24.
        let g = Geometry::new(8);
        assert_eq!(g.level_of(5, 5), 0, "due");
        assert_eq!(g.level_of(7, 0), 0);
        assert_eq!(g.level_of(8, 0), 0, "the next revolution is level 0's too");
        assert_eq!(g.level_of(15, 0), 0);
        assert_eq!(g.level_of(16, 0), 1);
        assert_eq!(g.level_of(8, 7), 0, "one tick away, across a revolution");
        assert_eq!(g.level_of(16, 7), 1);
        assert_eq!(g.level_of(23, 8), 0);
        assert_eq!(g.level_of(511, 0), 1, "64 revolutions ahead: still level 1");
        assert_eq!(g.level_of(512, 0), 1);
        assert_eq!(g.level_of(4095, 0), 1);
        assert_eq!(g.level_of(4096, 0), 2);
        assert_eq!(
            g.level_of(4096, 4088),
            0,
            "the next revolution, across a level-2 boundary"
        );
        assert_eq!(g.level_by_bits(4096, 4088), 2, "where it waits until then");
        assert_eq!(g.level_of(4104, 4088), 2);
        assert_eq!(g.level_of(1 << 18, 0), 3);
        assert_eq!(g.slot(0, 13), 13);
        assert_eq!(g.slot(0, 21), 5, "level 0 is a ring of two revolutions");
        assert_eq!(g.slot(1, 13), 16 + 1);
        assert_eq!(g.slot(1, (300 << 3) + 5), 16 + 300);
        assert_eq!(g.slot(2, (3 << 12) + 17), 16 + 512 + 3);
        assert_eq!(g.slot(3, (5 << 18) + 17), 16 + 512 + 64 + 5);
        assert_eq!(g.total_slots(), 16 + 512 + 64 * (g.levels() - 2));
        assert_eq!(g.slot_span(1), 8);
        assert_eq!(g.slot_span(2), 4096);
        assert_eq!(g.slot_span(3), 4096 * 64);
        assert_eq!(g.revolution(23), 2);
        assert_eq!(g.revolution_start(23), 16);
        assert_eq!(g.revolution_before(23), 8);
        assert_eq!(g.revolution_before(16), 8);
    }

    #[test]
    fn a_level1_slot_starts_at_its_revolution_among_pos_s_512() {
        let g = Geometry::new(8); // level 1 spans 4096 ticks
        for (pos, t) in [
            (0, 16),
            (0, 4095),
            (5000, 6003),
            (5000, 8191),
            (1 << 40, (1 << 40) + 4000),
        ] {
            assert_eq!(g.level_of(t, pos), 1, "{t} from {pos}");
            assert_eq!(
                g.level1_slot_start(g.slot(1, t), pos),
                g.revolution_start(t)
            );
        }
    }

    #[test]
    fn first_revolution_of_a_slot() {
        let g = Geometry::new(8); // a level-2 slot spans 4096 ticks, 512 revolutions
        for t in [0, 7, 8, 63, 511, 4095] {
            assert!(g.in_first_revolution(0, t) && g.in_first_revolution(1, t));
        }
        assert!(g.in_first_revolution(2, 4096));
        assert!(g.in_first_revolution(2, 4096 + 7));
        assert!(!g.in_first_revolution(2, 4096 + 8));
        assert!(!g.in_first_revolution(2, 8191));
        assert!(g.in_first_revolution(3, 1 << 18));
        assert!(!g.in_first_revolution(3, (1 << 18) + 4096));
        assert!(!g.in_first_revolution(3, (1 << 18) + 8));
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
