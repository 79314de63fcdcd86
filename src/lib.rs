//! A hashed timing wheel for Tokio: `sleep` and `timeout` futures for servers
//! with hundreds of thousands of timeouts, nearly all cancelled before they
//! fire.
//!
//! `tokio::time` is exact to the millisecond and keeps every timer in one
//! runtime-wide structure behind one lock. Most server timeouts need neither:
//! a request timeout of 5 s is as good at 5.01 s, and it is almost always
//! cancelled. A [`Wheel`] trades resolution (its tick, 10 ms by default) for
//! registration and cancellation that cost a few uncontended operations.
//!
//! # Examples
//!
//! Drop-in free functions, on a default wheel per runtime:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! use std::time::Duration;
//! use tokio_wheel::{sleep, timeout};
//!
//! sleep(Duration::from_millis(50)).await;
//! let res = timeout(Duration::from_secs(1), async { "done" }).await;
//! assert_eq!(res, Ok("done"));
//! # }
//! ```
//!
//! A wheel of your own, configured and shared by cloning:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use tokio_wheel::Wheel;
//!
//! let wheel = Wheel::builder().tick(Duration::from_millis(100)).build()?;
//! let w = wheel.clone();
//! let task = tokio::spawn(async move {
//!     w.timeout(Duration::from_secs(30), std::future::pending::<()>()).await
//! });
//! assert!(task.await?.is_err());
//! # Ok(())
//! # }
//! ```
//!
//! # Semantics
//!
//! - **Never early.** A timer fires at the first tick at or after its
//!   deadline, and a [`Sleep`] completes no earlier than its
//!   [`deadline`](Sleep::deadline).
//! - **At most one tick late** when the runtime is not overloaded: a timer
//!   fires in the first tick at or after its deadline. The wake-up then
//!   arrives with the latency of the Tokio timer the driver sleeps on (1 ms
//!   resolution) and of the scheduler; with paused time, exactly at the tick.
//!   If the driver falls behind, it fires every missed tick in order: nothing
//!   is skipped, and timers of different ticks fire in deadline order.
//! - One clock read per timer that registers: when it is made from a
//!   duration, or at its first poll when made from an instant. A deadline
//!   already passed at that read never registers, and its first poll returns
//!   what `tokio::time`'s would: on a live clock, within a millisecond of the
//!   deadline, `Pending` once with the task woken (Tokio rounds up to the
//!   millisecond and fires at its driver's next turn), so a `select!` branch
//!   that is ready at once wins the first round against `sleep(ZERO)` or an
//!   interval's first tick, as with Tokio; otherwise, and always with paused
//!   time, `Ready` (see "The first poll" in [`Sleep`]). A deadline that
//!   passes between creation and the first poll completes at its tick.
//!   `Duration::MAX` and other huge durations saturate (to about 30 years)
//!   and stay pending; they never overflow or panic.
//! - Registration is lazy (first pending poll); dropping cancels at once.
//! - The driver task runs only while timers are pending, and wakes only for
//!   ticks that have something due; at the first tick of the revolution
//!   (`tick * slots`) before a timer's that is two revolutions or more away,
//!   to move it down to the lowest level ahead of time; at most once per
//!   cancel (or move) of the earliest timer of an upper level's slot, whose
//!   old bound it keeps rather than search the slot; or at the old tick of
//!   a timer whose deadline was pushed back, where it files the timer again.
//!
//! # In a server
//!
//! - [`io::TimeoutStream`] puts read, write and idle timeouts on a
//!   connection's byte stream.
//! - With the `hyper` feature, `hyper::HyperTimer` is a
//!   `hyper::rt::Timer` for hyper's own timeouts (`header_read_timeout`).
//! - With the `tower` feature, `tower::TimeoutLayer` is a
//!   drop-in for `tower::timeout::TimeoutLayer`, down to its `Elapsed` error.
//!
//! # Contributing
//!
//! `ARCHITECTURE.md` in the repository maps the modules, the invariants and
//! where the concurrency protocol is written down and checked.

#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
#![warn(rust_2018_idioms, missing_debug_implementations, unreachable_pub)]

mod builder;
mod callback;
mod clock;
mod default;
mod driver;
pub mod error;
mod handle;
#[cfg(feature = "hyper")]
#[cfg_attr(docsrs, doc(cfg(feature = "hyper")))]
pub mod hyper;
mod interval;
pub mod io;
pub mod queue;
mod sleep;
mod stats;
mod sync;
mod timeout;
mod timer_task;
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub mod tower;
mod wheel;

pub use builder::Builder;
pub use callback::TimerHandle;
pub use default::{interval, interval_at, sleep, sleep_until, timeout, timeout_at};
pub use handle::Wheel;
pub use interval::Interval;
#[doc(inline)]
pub use queue::ExpiryQueue;
pub use sleep::Sleep;
pub use stats::Stats;
/// Re-exported from `std` and `tokio::time`, as `tokio::time` does, so that
/// `use tokio::time::{Duration, Instant, MissedTickBehavior, sleep, timeout}`
/// becomes `use tokio_wheel::{...}` with nothing else changed. `Instant` is
/// Tokio's, the clock that paused time moves.
#[doc(no_inline)]
pub use std::time::Duration;
pub use timeout::Timeout;
pub use timer_task::TimerTask;
/// Tokio's paused-time controls (feature `test-util`, which turns on Tokio's
/// own), re-exported so a test's `use tokio::time::{advance, pause, ...}`
/// line ports unchanged. The wheel runs on Tokio's clock: pausing and
/// advancing it drives wheel timers as it drives Tokio's.
#[cfg(feature = "test-util")]
#[doc(no_inline)]
pub use tokio::time::{advance, pause, resume};
#[doc(no_inline)]
pub use tokio::time::{Instant, MissedTickBehavior};

/// The README's examples, compiled and run as doc tests. Each is a complete
/// program, with no hidden lines, so the README reads the same on GitHub and
/// crates.io as it compiles here; some use the `hyper` and `tower` features,
/// so they run under `cargo test --all-features`, the README's test command.
#[cfg(all(doctest, feature = "hyper", feature = "tower"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
