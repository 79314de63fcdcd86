//! `Builder`: defaults, rounding, and every `BuildError`.

use std::time::Duration;

use tokio_wheel::error::BuildError;
use tokio_wheel::{Builder, Wheel};

const MAX_SLOTS: usize = 1 << 16;
const MAX_SHARDS: usize = 1024;
/// The most slots summed over the shards.
const MAX_TOTAL_SLOTS: usize = 1 << 22;
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
        assert_eq!(wheel.slots(), 64);
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

/// 2^16 slots is the limit and builds; one more is refused, naming both.
#[test]
fn two_to_the_sixteen_slots_build_and_one_more_does_not() {
    for asked in [MAX_SLOTS, (MAX_SLOTS >> 1) + 1] {
        let wheel = Wheel::builder().slots(asked).shards(1).build().unwrap();
        assert_eq!(wheel.slots(), MAX_SLOTS, "slots({asked})");
    }
    // With the default shard count (at most 64) too.
    let wheel = Wheel::builder().slots(MAX_SLOTS).build().unwrap();
    assert_eq!(wheel.slots(), MAX_SLOTS);

    let e = err(Wheel::builder().slots(MAX_SLOTS + 1).shards(1));
    assert_eq!(
        e,
        BuildError::Slots {
            slots: MAX_SLOTS + 1,
            max: MAX_SLOTS
        }
    );
    assert_eq!(
        e.to_string(),
        "slots is 65537, but must be between 1 and 65536 (2^16)"
    );
    // Checked before the shard count.
    let e = err(Wheel::builder().slots(MAX_SLOTS + 1).shards(0));
    assert!(matches!(e, BuildError::Slots { .. }), "{e:?}");
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
        "slots is 0, but must be between 1 and 65536 (2^16)"
    );
}

/// The longest tick with the most slots builds: `tick * slots` (about 38
/// million years) fits in a `Duration`, and a timer on it registers, stays
/// pending and cancels.
#[test]
fn the_longest_tick_with_the_most_slots_builds() {
    let rt = paused_runtime();
    rt.block_on(async {
        let wheel = Wheel::builder()
            .tick(MAX_TICK)
            .slots(MAX_SLOTS)
            .shards(1)
            .build()
            .unwrap();
        assert_eq!(wheel.resolution(), MAX_TICK);
        assert_eq!(wheel.slots(), MAX_SLOTS);
        let mut s = wheel.sleep(Duration::from_secs(1));
        assert!(futures::poll!(&mut s).is_pending());
        assert_eq!(wheel.pending(), 1);
        drop(s);
        assert_eq!(wheel.pending(), 0);
    });
    // A tick above u64::MAX ns is TickTooLong whatever the slot count.
    let e = err(Wheel::builder().tick(Duration::MAX / 2).slots(MAX_SLOTS));
    assert!(matches!(e, BuildError::TickTooLong { .. }), "{e:?}");
}

/// Every shard allocates its slots up front, so their product is bounded:
/// the limit builds, one power of two more of either is refused, naming the
/// rounded counts, their product and the limit.
#[test]
fn slots_times_shards_out_of_range() {
    // Exactly the limit, either way round (16 MiB of list heads).
    for (slots, shards) in [(MAX_SLOTS, 64), (MAX_TOTAL_SLOTS / MAX_SHARDS, MAX_SHARDS)] {
        let wheel = Wheel::builder()
            .slots(slots)
            .shards(shards)
            .build()
            .unwrap();
        assert_eq!(wheel.slots(), slots);
    }
    for (asked_slots, asked_shards, slots, shards) in [
        (MAX_SLOTS, 65, MAX_SLOTS, 128),
        (MAX_SLOTS, MAX_SHARDS, MAX_SLOTS, MAX_SHARDS),
        (4097, MAX_SHARDS, 8192, MAX_SHARDS),
        (MAX_SLOTS / 2 + 1, 128, MAX_SLOTS, 128),
    ] {
        let e = err(Wheel::builder().slots(asked_slots).shards(asked_shards));
        assert_eq!(
            e,
            BuildError::TotalSlots {
                slots,
                shards,
                max: MAX_TOTAL_SLOTS
            },
            "slots({asked_slots}), shards({asked_shards})"
        );
        assert_mentions(
            &e,
            &[
                &(slots * shards).to_string(),
                &slots.to_string(),
                &shards.to_string(),
                &MAX_TOTAL_SLOTS.to_string(),
            ],
        );
    }
    assert_eq!(
        err(Wheel::builder().slots(MAX_SLOTS).shards(128)).to_string(),
        "slots times shards is 8388608 (65536 slots in each of 128 shards, after rounding up \
         to powers of two), but must be at most 4194304 (2^22): every shard allocates its \
         slots up front; use fewer slots or fewer shards"
    );
}

/// `max_pending(0)` is an error, not a wheel that refuses everything nor
/// Netty's "no bound"; 1 is the smallest bound.
#[test]
fn zero_max_pending() {
    let e = err(Wheel::builder().max_pending(0));
    assert_eq!(e, BuildError::ZeroMaxPending);
    assert_eq!(
        e.to_string(),
        "max_pending is 0, but must be at least 1; leave it unset for no bound"
    );
    let rt = paused_runtime();
    rt.block_on(async {
        let wheel = Wheel::builder().max_pending(1).build().unwrap();
        let first = wheel.try_sleep(Duration::from_secs(1)).unwrap();
        let refused = wheel.try_sleep(Duration::from_secs(1)).unwrap_err();
        assert_eq!(refused.max_pending(), Some(1));
        drop(first);
        // Unset: no bound.
        let wheel = Wheel::builder().build().unwrap();
        let held: Vec<_> = (0..1000)
            .map(|_| wheel.try_sleep(Duration::from_secs(1)).unwrap())
            .collect();
        assert_eq!(held.len(), 1000);
    });
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

/// A current-thread runtime on paused time.
fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap()
}
