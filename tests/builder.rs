//! `Builder`: defaults, rounding, and every `BuildError`.

use std::time::Duration;

use tokio_wheel::error::BuildError;
use tokio_wheel::{Builder, Wheel};

const MAX_SLOTS: usize = 1 << 30;
const MAX_SHARDS: usize = 1024;
/// The longest tick: `u64::MAX` nanoseconds.
const MAX_TICK: Duration = Duration::from_nanos(u64::MAX);

fn err(b: Builder) -> BuildError {
    match b.build() {
        Ok(w) => panic!("expected an error, built {w:?}"),
        Err(e) => e,
    }
}

fn assert_mentions(e: &BuildError, parts: &[&str]) {
    let msg = e.to_string();
    for part in parts {
        assert!(msg.contains(part), "{msg:?} does not mention {part:?}");
    }
}

#[test]
fn defaults() {
    for wheel in [
        Wheel::new(),
        Wheel::default(),
        Wheel::builder().build().unwrap(),
        Builder::default().build().unwrap(),
    ] {
        assert_eq!(wheel.resolution(), Duration::from_millis(10));
        assert_eq!(wheel.slots(), 512);
        assert_eq!(wheel.pending(), 0);
        assert_eq!(wheel.stats(), tokio_wheel::Stats::default());
    }
}

#[test]
fn a_wheel_can_be_built_outside_a_runtime() {
    let wheel = Wheel::builder()
        .tick(Duration::from_millis(1))
        .slots(4)
        .shards(2)
        .build()
        .unwrap();
    assert_eq!(wheel.resolution(), Duration::from_millis(1));
    assert_eq!(wheel.slots(), 4);
    let clone = wheel.clone();
    assert_eq!(clone.slots(), 4);
}

#[test]
fn slots_round_up_to_a_power_of_two() {
    for (asked, got) in [
        (1, 1),
        (2, 2),
        (3, 4),
        (5, 8),
        (500, 512),
        (512, 512),
        (513, 1024),
        (4097, 8192),
    ] {
        let wheel = Wheel::builder().slots(asked).shards(1).build().unwrap();
        assert_eq!(wheel.slots(), got, "slots({asked})");
    }
}

/// 2^30 slots is the limit and is accepted. Building it would allocate
/// gigabytes, so the check is made through the errors the builder reports
/// after validating the slot count.
#[test]
fn two_to_the_thirty_slots_pass_the_slot_check() {
    let e = err(Wheel::builder().slots(MAX_SLOTS).shards(0));
    assert!(matches!(e, BuildError::Shards { shards: 0, .. }), "{e:?}");
    let e = err(Wheel::builder().slots(MAX_SLOTS + 1).shards(0));
    assert!(
        matches!(e, BuildError::Slots { slots, max } if slots == MAX_SLOTS + 1 && max == MAX_SLOTS),
        "{e:?}"
    );
    // Rounding up to 2^30 is accepted too.
    let e = err(Wheel::builder().slots((1 << 29) + 1).shards(0));
    assert!(matches!(e, BuildError::Shards { .. }), "{e:?}");
}

#[test]
fn tick_too_short() {
    for tick in [
        Duration::ZERO,
        Duration::from_nanos(1),
        Duration::from_micros(500),
        Duration::from_nanos(999_999),
    ] {
        let e = err(Wheel::builder().tick(tick));
        assert_eq!(
            e,
            BuildError::TickTooShort {
                tick,
                min: Duration::from_millis(1)
            }
        );
        assert_mentions(&e, &[&format!("{tick:?}"), "1ms"]);
    }
    let e = err(Wheel::builder().tick(Duration::from_micros(500)));
    assert_mentions(&e, &["500µs", "1ms"]);
    // The limit itself is fine.
    let wheel = Wheel::builder()
        .tick(Duration::from_millis(1))
        .build()
        .unwrap();
    assert_eq!(wheel.resolution(), Duration::from_millis(1));
}

#[test]
fn tick_too_long() {
    for tick in [
        Duration::MAX,
        Duration::MAX / 2,
        MAX_TICK + Duration::from_nanos(1),
        Duration::from_secs(u64::MAX / 1_000_000_000 + 1),
    ] {
        let e = err(Wheel::builder().tick(tick).slots(1));
        assert_eq!(
            e,
            BuildError::TickTooLong {
                tick,
                max: MAX_TICK
            }
        );
        assert_mentions(&e, &[&format!("{tick:?}"), &format!("{MAX_TICK:?}")]);
    }
    // The longest tick builds, on a ring whose span still fits.
    let wheel = Wheel::builder().tick(MAX_TICK).slots(1).build().unwrap();
    assert_eq!(wheel.resolution(), MAX_TICK);
}

#[test]
fn slot_count_out_of_range() {
    for slots in [0, MAX_SLOTS + 1, usize::MAX] {
        let e = err(Wheel::builder().slots(slots));
        assert_eq!(
            e,
            BuildError::Slots {
                slots,
                max: MAX_SLOTS
            }
        );
        assert_mentions(&e, &[&slots.to_string(), &MAX_SLOTS.to_string()]);
    }
    assert_eq!(
        err(Wheel::builder().slots(0)).to_string(),
        "slots is 0, but must be between 1 and 1073741824 (2^30)"
    );
}

/// `tick * slots` overflows a `Duration` only when the tick is near its own
/// limit (`u64::MAX` ns, about 584 years) and the ring has 2^30 slots: a tick
/// above the limit is `TickTooLong` first.
#[test]
fn span_overflow() {
    // Asked slots are rounded before the check; the error reports the
    // rounded count.
    for (tick, asked) in [
        (MAX_TICK, MAX_SLOTS),
        (MAX_TICK, (1 << 29) + 1),
        (Duration::from_secs(17_200_000_000), MAX_SLOTS),
    ] {
        // One shard: were the check missing, the wheel built would be 12 GiB,
        // not 4 times that.
        let e = err(Wheel::builder().tick(tick).slots(asked).shards(1));
        assert_eq!(
            e,
            BuildError::SpanOverflow {
                tick,
                slots: MAX_SLOTS
            },
            "tick {tick:?}, slots({asked})"
        );
        assert_mentions(&e, &[&format!("{tick:?}"), &MAX_SLOTS.to_string()]);
    }
    // Just under the overflow: u64::MAX seconds / 2^30 slots, in whole seconds.
    let fits = Duration::from_secs(u64::MAX >> 30);
    let e = err(Wheel::builder().tick(fits).slots(MAX_SLOTS).shards(0));
    assert!(
        matches!(e, BuildError::Shards { .. }),
        "{fits:?} * 2^30 fits in a Duration, but got {e:?}"
    );
    // A tick above u64::MAX ns is TickTooLong whatever the slot count.
    let e = err(Wheel::builder().tick(Duration::MAX / 2).slots(MAX_SLOTS));
    assert!(matches!(e, BuildError::TickTooLong { .. }), "{e:?}");
}

#[test]
fn shard_count_out_of_range() {
    for shards in [0, MAX_SHARDS + 1, usize::MAX] {
        let e = err(Wheel::builder().shards(shards));
        assert_eq!(
            e,
            BuildError::Shards {
                shards,
                max: MAX_SHARDS
            }
        );
        assert_mentions(&e, &[&shards.to_string(), &MAX_SHARDS.to_string()]);
    }
    for shards in [1, 3, MAX_SHARDS] {
        let wheel = Wheel::builder().shards(shards).slots(8).build().unwrap();
        assert_eq!(wheel.slots(), 8);
    }
}

#[test]
fn build_error_is_a_std_error_and_the_builder_is_reusable() {
    let builder = Wheel::builder().tick(Duration::ZERO);
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(err(builder.clone()));
    assert!(boxed.to_string().contains("tick"));
    // `build` takes `&self`: the same builder builds again once fixed.
    let fixed = builder.tick(Duration::from_millis(5));
    let a = fixed.build().unwrap();
    let b = fixed.build().unwrap();
    assert_eq!(a.resolution(), b.resolution());
}
