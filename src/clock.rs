//! Conversion between `tokio::time::Instant` and the wheel's tick numbers.
//!
//! Tick `t` is the instant `origin + t * tick`. A deadline is due at the first
//! tick at or after it ([`TickClock::ceil`]); the driver has reached the last
//! tick at or before the current time ([`TickClock::floor`]). Together they
//! give the wheel's promise: a timer fires no earlier than its deadline and
//! less than one tick after it.

use std::time::Duration;
use tokio::time::Instant;

/// The largest tick a timer can be due at. `u64::MAX` is kept free so that it
/// can mean "never" in the driver.
pub(crate) const MAX_TICK: u64 = u64::MAX - 1;

/// How far in the future a saturated deadline lies (about 30 years, as in
/// Tokio): far enough never to fire, near enough to add to any `Instant`.
pub(crate) const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);

/// [`FAR_FUTURE`] in nanoseconds: well within an `i64`.
const FAR_FUTURE_NANOS: u64 = FAR_FUTURE.as_secs() * 1_000_000_000;
const _: () = assert!(FAR_FUTURE.subsec_nanos() == 0 && FAR_FUTURE_NANOS < i64::MAX as u64 / 2);

#[derive(Debug, Clone, Copy)]
pub(crate) struct TickClock {
    origin: Instant,
    tick_nanos: u64,
}

impl TickClock {
    /// `tick` must be at least one nanosecond and at most `u64::MAX` nanoseconds
    /// (the builder checks).
    pub(crate) fn new(origin: Instant, tick: Duration) -> Self {
        let tick_nanos = u64::try_from(tick.as_nanos()).expect("tick checked by the builder");
        assert!(tick_nanos > 0, "tick checked by the builder");
        Self { origin, tick_nanos }
    }

    /// The length of a tick, in nanoseconds.
    pub(crate) fn tick_nanos(&self) -> u64 {
        self.tick_nanos
    }

    /// The first tick at or after `t` (a timer due at `t` fires then),
    /// saturated at [`MAX_TICK`].
    pub(crate) fn ceil(&self, t: Instant) -> u64 {
        let since = t.saturating_duration_since(self.origin);
        match nanos(since) {
            Some(n) => n.div_ceil(self.tick_nanos).min(MAX_TICK),
            // Past 584 years: 128-bit arithmetic, off the common path.
            None => saturate(since.as_nanos().div_ceil(u128::from(self.tick_nanos))),
        }
    }

    /// The last tick at or before `t` (how far the wheel may advance at `t`),
    /// saturated at `MAX_TICK - 1`: the driver never reaches [`MAX_TICK`], so
    /// a deadline whose tick saturates never fires, rather than firing early
    /// when the clock's tick saturates too. (With a 1 ns tick that is after
    /// 584 years; with 1 ms, 584 million.)
    pub(crate) fn floor(&self, t: Instant) -> u64 {
        let since = t.saturating_duration_since(self.origin);
        let tick = match nanos(since) {
            Some(n) => n / self.tick_nanos,
            None => saturate(since.as_nanos() / u128::from(self.tick_nanos)),
        };
        tick.min(MAX_TICK - 1)
    }

    /// `t` as signed nanoseconds from the origin, saturated at about
    /// ±292 years (to `i64::MIN` and `i64::MAX`): how a `Sleep` keeps its
    /// deadline in 8 bytes, and reads the clock.
    ///
    /// Saturation keeps the order (`a <= b` implies `offset_of(a) <=
    /// offset_of(b)`) and an offset strictly between the two limits is exact,
    /// so comparing an exact deadline with a saturated clock reading gives
    /// the true answer. Only deadlines are required to be exact
    /// ([`exact_offset_of`](Self::exact_offset_of)); a reading of the clock
    /// may saturate.
    pub(crate) fn offset_of(&self, t: Instant) -> i64 {
        // One subtraction that also tells the order (an `Instant` compare
        // and then a subtraction cost a `Sleep` about 10 instructions more).
        match t.checked_duration_since(self.origin) {
            Some(since) => signed_nanos(since).unwrap_or(i64::MAX),
            None => signed_nanos(self.origin - t).map_or(i64::MIN, |n| -n),
        }
    }

    /// `offset_of(t)` if it is exact: strictly between `i64::MIN` and
    /// `i64::MAX`. A deadline the wheel cannot hold exactly is `None`.
    pub(crate) fn exact_offset_of(&self, t: Instant) -> Option<i64> {
        Some(self.offset_of(t)).filter(|&o| is_exact(o))
    }

    /// `offset_of(now + d)` for `now` given as an offset, without building
    /// the `Instant` (`d` saturated like [`deadline_after`]); `None` if `now`
    /// or the result is not exact.
    pub(crate) fn offset_after(&self, now: i64, d: Duration) -> Option<i64> {
        // A `Duration` past `u64` nanoseconds is past `FAR_FUTURE` too.
        let d = nanos(d).map_or(FAR_FUTURE_NANOS, |n| n.min(FAR_FUTURE_NANOS)) as i64;
        // `d >= 0`: the sum can only overflow upwards, and only `now` can
        // be `i64::MIN`.
        if !is_exact(now) {
            return None;
        }
        now.checked_add(d).filter(|&o| o != i64::MAX)
    }

    /// The instant `offset` nanoseconds from the origin.
    pub(crate) fn instant_at(&self, offset: i64) -> Instant {
        let magnitude = Duration::from_nanos(offset.unsigned_abs());
        let t = if offset >= 0 {
            self.origin.checked_add(magnitude)
        } else {
            self.origin.checked_sub(magnitude)
        };
        // Only offsets made by `offset_of` from a real instant reach here.
        t.unwrap_or(self.origin)
    }

    /// The first tick at or after the instant `offset` from the origin.
    pub(crate) fn ceil_offset(&self, offset: i64) -> u64 {
        match u64::try_from(offset) {
            Ok(n) => n.div_ceil(self.tick_nanos).min(MAX_TICK),
            Err(_) => 0,
        }
    }

    /// Whether `later` is on a later tick than `earlier` (both offsets, as
    /// [`ceil_offset`](Self::ceil_offset) takes them) because it is a whole
    /// tick or more after it, from an origin at or before `earlier`: without
    /// a division. `false` says nothing: compare the ticks then.
    pub(crate) fn a_tick_later(&self, earlier: i64, later: i64) -> bool {
        // `later > earlier`, so the difference fits in a u64. A whole tick
        // apart, their quotients by the tick differ, rounded up or not; the
        // origin condition keeps both clear of `ceil_offset`'s 0 for offsets
        // before it, and no offset's ceiling reaches `MAX_TICK` (it is at
        // most `i64::MAX`).
        earlier >= 0 && later > earlier && later.wrapping_sub(earlier) as u64 >= self.tick_nanos
    }

    /// The instant of tick `t`, or `None` if it cannot be represented.
    pub(crate) fn instant_of(&self, t: u64) -> Option<Instant> {
        let nanos = u128::from(t) * u128::from(self.tick_nanos);
        let secs = u64::try_from(nanos / 1_000_000_000).ok()?;
        let sub = (nanos % 1_000_000_000) as u32;
        self.origin.checked_add(Duration::new(secs, sub))
    }
}

/// Whether `offset` is exact, not a saturated limit of [`TickClock::offset_of`].
fn is_exact(offset: i64) -> bool {
    offset != i64::MIN && offset != i64::MAX
}

fn saturate(tick: u128) -> u64 {
    u64::try_from(tick).map_or(MAX_TICK, |t| t.min(MAX_TICK))
}

fn nanos(d: Duration) -> Option<u64> {
    d.as_secs()
        .checked_mul(1_000_000_000)?
        .checked_add(u64::from(d.subsec_nanos()))
}

/// `d` in nanoseconds if that fits an `i64`.
fn signed_nanos(d: Duration) -> Option<i64> {
    nanos(d).and_then(|n| i64::try_from(n).ok())
}

/// `now + d`, saturated to [`FAR_FUTURE`] from now instead of overflowing.
pub(crate) fn deadline_after(now: Instant, d: Duration) -> Instant {
    now.checked_add(d.min(FAR_FUTURE)).unwrap_or(now)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock(tick_ms: u64) -> (Instant, TickClock) {
        let origin = Instant::now();
        (
            origin,
            TickClock::new(origin, Duration::from_millis(tick_ms)),
        )
    }

    #[test]
    fn ceil_and_floor_at_and_between_boundaries() {
        let (o, c) = clock(10);
        let ms = Duration::from_millis;
        assert_eq!(c.ceil(o), 0);
        assert_eq!(c.floor(o), 0);
        assert_eq!(c.ceil(o + ms(10)), 1);
        assert_eq!(c.floor(o + ms(10)), 1);
        assert_eq!(c.ceil(o + ms(10) + Duration::from_nanos(1)), 2);
        assert_eq!(c.floor(o + ms(19)), 1);
        assert_eq!(c.ceil(o + ms(1)), 1);
    }

    #[test]
    fn never_early_never_a_full_tick_late() {
        let (o, c) = clock(7);
        for nanos in (0..200_000_000u64).step_by(999_983) {
            let deadline = o + Duration::from_nanos(nanos);
            let fire_at = c.instant_of(c.ceil(deadline)).unwrap();
            assert!(fire_at >= deadline, "early at {nanos}");
            assert!(
                fire_at - deadline < Duration::from_millis(7),
                "late at {nanos}"
            );
        }
    }

    #[test]
    fn a_tick_later_only_when_the_ticks_say_so() {
        let (_, c) = clock(10);
        let tick = 10_000_000i64;
        let points = [
            i64::MIN + 1,
            -3 * tick,
            -tick,
            -1,
            0,
            1,
            tick - 1,
            tick,
            tick + 1,
            2 * tick - 1,
            2 * tick,
            5 * tick + 3,
            i64::MAX / 2,
            i64::MAX - 1,
        ];
        let mut shortcuts = 0;
        for &earlier in &points {
            for &later in &points {
                let (a, b) = (c.ceil_offset(earlier), c.ceil_offset(later));
                if c.a_tick_later(earlier, later) {
                    shortcuts += 1;
                    assert!(b > a, "{earlier} -> {later}: ticks {a} -> {b}");
                }
            }
        }
        // Taken where it can be: a tick apart at or after the origin.
        assert!(c.a_tick_later(0, tick));
        assert!(c.a_tick_later(1, tick + 1));
        assert!(!c.a_tick_later(1, tick), "less than a tick apart");
        assert!(!c.a_tick_later(-tick, tick), "from before the origin");
        assert!(shortcuts > 30, "{shortcuts}");
    }

    #[test]
    fn before_origin_is_tick_zero() {
        let (o, c) = clock(10);
        let earlier = o.checked_sub(Duration::from_secs(1));
        if let Some(t) = earlier {
            assert_eq!(c.ceil(t), 0);
            assert_eq!(c.floor(t), 0);
        }
    }

    #[test]
    fn offsets_round_trip_both_sides_of_the_origin() {
        let (o, c) = clock(10);
        for nanos in [0, 1, 999_999_999, 10_000_000, 86_400 * 1_000_000_000] {
            let later = o + Duration::from_nanos(nanos);
            assert_eq!(c.offset_of(later), nanos as i64);
            assert_eq!(c.instant_at(c.offset_of(later)), later);
            assert_eq!(c.ceil_offset(c.offset_of(later)), c.ceil(later));
            if let Some(earlier) = o.checked_sub(Duration::from_nanos(nanos)) {
                assert_eq!(c.offset_of(earlier), -(nanos as i64));
                assert_eq!(c.instant_at(c.offset_of(earlier)), earlier);
                assert_eq!(c.ceil_offset(c.offset_of(earlier)), 0);
            }
        }
        let far = deadline_after(o, Duration::MAX);
        assert_eq!(c.instant_at(c.offset_of(far)), far, "30 years fits");
        for d in [Duration::ZERO, Duration::from_millis(25), Duration::MAX] {
            let later = o + Duration::from_secs(3);
            assert_eq!(
                c.offset_after(c.offset_of(later), d),
                Some(c.offset_of(deadline_after(later, d)))
            );
        }
    }

    /// A saturated clock reading never makes an exact deadline look due early
    /// or a later one look due: the order is kept at every clock value.
    #[test]
    fn saturation_keeps_the_order() {
        let origin = Instant::now();
        let c = TickClock::new(origin, Duration::from_millis(10));
        let year = Duration::from_secs(365 * 86_400);
        let Some(late_now) = origin.checked_add(year * 300) else {
            return;
        };
        let now = c.offset_of(late_now);
        assert_eq!(now, i64::MAX, "saturated");
        assert_eq!(c.offset_after(now, Duration::from_millis(50)), None);
        assert_eq!(
            c.exact_offset_of(late_now + Duration::from_millis(50)),
            None
        );
        let exact = c.exact_offset_of(origin + year * 200).unwrap();
        assert!(exact <= now, "a passed deadline is due");
        assert_eq!(
            c.offset_after(exact, Duration::MAX),
            Some(exact + 30 * 365 * 86_400 * 1_000_000_000)
        );
        assert_eq!(
            c.offset_after(c.offset_of(origin + year * 280), Duration::MAX),
            None
        );
    }

    #[test]
    fn huge_instants_saturate() {
        let origin = Instant::now();
        let c = TickClock::new(origin, Duration::from_nanos(1));
        let far = deadline_after(origin, Duration::MAX);
        assert_eq!(far - origin, FAR_FUTURE);
        let t = c.ceil(far);
        assert!(t < MAX_TICK);
        assert_eq!(c.instant_of(t), Some(far));
        let secs = TickClock::new(origin, Duration::from_secs(1));
        assert_eq!(
            secs.instant_of(MAX_TICK),
            None,
            "2^64 s is past any Instant"
        );
        if let Some(beyond) = origin.checked_add(Duration::from_secs(700 * 365 * 86_400)) {
            assert_eq!(c.ceil(beyond), MAX_TICK, "past u64 nanoseconds saturates");
            assert_eq!(c.floor(beyond), MAX_TICK - 1, "the driver never reaches it");
            // A coarser tick counts on past 584 years of nanoseconds.
            let ms = TickClock::new(origin, Duration::from_millis(1));
            let n = 700 * 365 * 86_400 * 1000;
            assert_eq!((ms.floor(beyond), ms.ceil(beyond)), (n, n));
            assert!(c.exact_offset_of(beyond).is_none());
            assert_eq!(c.offset_of(beyond), i64::MAX);
        }
    }
}
