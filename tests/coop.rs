//! Tokio's cooperative budget (`tokio::task::coop`): the wheel's `Sleep`,
//! `Timeout` and `Interval` take part in it where `tokio::time`'s do, and
//! each case is run against `tokio::time` in the same test, so that both
//! behaviours are asserted side by side.
//!
//! Every loop below runs in a task spawned before a second task that only
//! sets a flag. On a current-thread runtime the second task runs only once
//! the first yields, so the number of iterations the loop completes before
//! it sees the flag is the number it ran in its first poll: Tokio's budget
//! (128 units a poll) if each iteration takes a unit, or the whole loop if
//! none does.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::task::coop;
use tokio::time::Instant;
use tokio_wheel::{MissedTickBehavior, Wheel};

/// The most iterations a loop runs: far more than Tokio's budget.
const LIMIT: usize = 1000;

/// Runs `step` up to [`LIMIT`] times in a spawned task, with a task spawned
/// after it that sets a flag, wrapping the whole loop in
/// `coop::unconstrained` if asked. Returns how many iterations completed
/// before the loop saw the flag, or `None` if it never did.
async fn iterations_before_yield<S, F>(unconstrained: bool, mut step: S) -> Option<usize>
where
    S: FnMut() -> F + Send + 'static,
    F: Future<Output = ()> + Send,
{
    let flag = Arc::new(AtomicBool::new(false));
    let seen = flag.clone();
    let run = async move {
        for done in 0..LIMIT {
            if seen.load(Ordering::SeqCst) {
                return Some(done);
            }
            step().await;
        }
        None
    };
    let looping = if unconstrained {
        tokio::spawn(coop::unconstrained(run))
    } else {
        tokio::spawn(run)
    };
    let setter = tokio::spawn(async move { flag.store(true, Ordering::SeqCst) });
    let iterations = looping.await.expect("the loop does not panic");
    setter.await.expect("the setter does not panic");
    iterations
}

/// Iterations before the first yield for a loop of `tokio::time` futures and
/// for the same loop of the wheel's: `(tokio, wheel)`.
async fn side_by_side<T, TF, W, WF>(unconstrained: bool, tokio: T, wheel: W) -> (usize, usize)
where
    T: FnMut() -> TF + Send + 'static,
    TF: Future<Output = ()> + Send,
    W: FnMut() -> WF + Send + 'static,
    WF: Future<Output = ()> + Send,
{
    let t = iterations_before_yield(unconstrained, tokio).await;
    let w = iterations_before_yield(unconstrained, wheel).await;
    (t.unwrap_or(LIMIT), w.unwrap_or(LIMIT))
}

/// Asserts that a loop yields within [`LIMIT`] iterations, after exactly as
/// many iterations as the same loop on `tokio::time`.
fn assert_yields_like_tokio((tokio, wheel): (usize, usize)) {
    assert!(
        tokio > 0 && tokio < LIMIT,
        "tokio::time yields after {tokio} iterations"
    );
    assert_eq!(
        wheel, tokio,
        "the wheel's loop yields after {wheel} iterations, tokio::time's after {tokio}"
    );
}

/// On a live clock `tokio::time` rounds a deadline up to its next
/// millisecond and fires it at its driver's next turn, so its `sleep(ZERO)`
/// is pending at its first poll: it registers, and the task yields at once.
/// The wheel's yields once too, pending with its task woken (see `Sleep`'s
/// docs), so both loops yield at their first sleep, long before the budget
/// runs out.
#[tokio::test]
async fn zero_sleeps_yield_like_tokio() {
    for _ in 0..100 {
        // A wheel sleep whose first poll came a millisecond or more after it
        // was made (a thread preempted in between) is due by then, and may
        // complete: such a run proves nothing (tokio's answer then depends on
        // when its driver last ran), so it is run again.
        let late = Arc::new(AtomicUsize::new(0));
        let seen_late = late.clone();
        let (tokio, wheel) = side_by_side(
            false,
            || tokio::time::sleep(Duration::ZERO),
            move || {
                let made = Instant::now();
                let mut sleep = tokio_wheel::sleep(Duration::ZERO);
                let late = late.clone();
                let mut first = true;
                poll_fn(move |cx| {
                    let poll = Pin::new(&mut sleep).poll(cx);
                    if std::mem::take(&mut first) && poll.is_ready() {
                        assert!(made.elapsed() >= Duration::from_millis(1), "due at once");
                        late.fetch_add(1, Ordering::SeqCst);
                    }
                    poll
                })
            },
        )
        .await;
        if seen_late.load(Ordering::SeqCst) == 0 {
            assert_eq!(tokio, 1, "tokio::time yields after {tokio} iterations");
            assert_eq!(wheel, tokio, "the wheel's loop yields after {wheel}");
            return;
        }
    }
    panic!("every run was preempted");
}

#[tokio::test(start_paused = true)]
async fn zero_sleeps_yield_like_tokio_paused() {
    assert_yields_like_tokio(
        side_by_side(
            false,
            || tokio::time::sleep(Duration::ZERO),
            || tokio_wheel::sleep(Duration::ZERO),
        )
        .await,
    );
}

#[tokio::test(start_paused = true)]
async fn past_deadlines_yield_like_tokio() {
    tokio::time::advance(Duration::from_secs(1)).await;
    let past = Instant::now() - Duration::from_millis(500);
    assert_yields_like_tokio(
        side_by_side(
            false,
            move || tokio::time::sleep_until(past),
            move || tokio_wheel::sleep_until(past),
        )
        .await,
    );
}

#[tokio::test]
async fn past_deadlines_yield_like_tokio_on_a_wheel_of_its_own() {
    let wheel = Wheel::new();
    tokio::time::sleep(Duration::from_millis(2)).await;
    let past = Instant::now() - Duration::from_millis(1);
    assert_yields_like_tokio(
        side_by_side(
            false,
            move || tokio::time::sleep_until(past),
            move || wheel.sleep_until(past),
        )
        .await,
    );
}

/// A sleep of a shut-down wheel runs on `tokio::time`'s, which takes its own
/// unit: the wheel's must not take a second.
#[tokio::test(start_paused = true)]
async fn sleeps_of_a_shut_down_wheel_take_one_unit_not_two() {
    let wheel = Wheel::new();
    assert!(wheel.shutdown().is_empty());
    let past = Instant::now();
    assert_yields_like_tokio(
        side_by_side(
            false,
            move || tokio::time::sleep_until(past),
            move || wheel.sleep_until(past),
        )
        .await,
    );
}

/// A timeout whose deadline has passed and whose future stays pending
/// completes with `Elapsed` through its timer, which takes a unit.
#[tokio::test(start_paused = true)]
async fn elapsed_timeouts_yield_like_tokio() {
    assert_yields_like_tokio(
        side_by_side(
            false,
            || async {
                let res = tokio::time::timeout(Duration::ZERO, std::future::pending::<()>()).await;
                assert!(res.is_err());
            },
            || async {
                let res = tokio_wheel::timeout(Duration::ZERO, std::future::pending::<()>()).await;
                assert!(res.is_err());
            },
        )
        .await,
    );
}

/// A timeout around a ready future never polls its timer: neither
/// `tokio::time`'s nor the wheel's takes a unit, and the loop never yields.
#[tokio::test(start_paused = true)]
async fn timeouts_around_ready_futures_take_no_budget_like_tokio() {
    let (tokio, wheel) = side_by_side(
        false,
        || async {
            let res = tokio::time::timeout(Duration::from_secs(1), async { 7 }).await;
            assert_eq!(res.ok(), Some(7));
        },
        || async {
            let res = tokio_wheel::timeout(Duration::from_secs(1), async { 7 }).await;
            assert_eq!(res.ok(), Some(7));
        },
    )
    .await;
    assert_eq!(tokio, LIMIT, "tokio::time's loop yielded after {tokio}");
    assert_eq!(wheel, LIMIT, "the wheel's loop yielded after {wheel}");
}

/// An interval that fell behind delivers its missed ticks at once
/// (`Burst`), one unit each.
#[tokio::test(start_paused = true)]
async fn interval_catch_up_yields_like_tokio() {
    let period = Duration::from_millis(10);
    let mut tokio_interval = tokio::time::interval(period);
    tokio_interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut wheel_interval = tokio_wheel::interval(period);
    wheel_interval.set_missed_tick_behavior(MissedTickBehavior::Burst);
    // Far behind: more missed ticks than the loop runs.
    tokio::time::advance(period * 2 * LIMIT as u32).await;
    let tokio_interval = Arc::new(Mutex::new(tokio_interval));
    let wheel_interval = Arc::new(Mutex::new(wheel_interval));
    assert_yields_like_tokio(
        side_by_side(
            false,
            move || {
                let interval = tokio_interval.clone();
                async move {
                    poll_fn(|cx| interval.lock().unwrap().poll_tick(cx)).await;
                }
            },
            move || {
                let interval = wheel_interval.clone();
                async move {
                    poll_fn(|cx| interval.lock().unwrap().poll_tick(cx)).await;
                }
            },
        )
        .await,
    );
}

/// Under `coop::unconstrained` no unit is taken: a loop of due sleeps never
/// yields, for `tokio::time` as for the wheel; the same loops, constrained,
/// do.
#[tokio::test(start_paused = true)]
async fn unconstrained_due_sleeps_never_yield_like_tokio() {
    let past = Instant::now();
    let (tokio, wheel) = side_by_side(
        true,
        move || tokio::time::sleep_until(past),
        move || tokio_wheel::sleep_until(past),
    )
    .await;
    assert_eq!(tokio, LIMIT, "tokio::time's loop yielded after {tokio}");
    assert_eq!(wheel, LIMIT, "the wheel's loop yielded after {wheel}");
    let (tokio, wheel) = side_by_side(
        true,
        || tokio::time::sleep(Duration::ZERO),
        || tokio_wheel::sleep(Duration::ZERO),
    )
    .await;
    assert_eq!(tokio, LIMIT, "tokio::time's loop yielded after {tokio}");
    assert_eq!(wheel, LIMIT, "the wheel's loop yielded after {wheel}");

    assert_yields_like_tokio(
        side_by_side(
            false,
            move || tokio::time::sleep_until(past),
            move || tokio_wheel::sleep_until(past),
        )
        .await,
    );
}

/// A future that never completes and uses up the task's budget on every
/// poll (it takes units until Tokio says to yield), counting the units.
struct Burner {
    units: Arc<AtomicUsize>,
}

impl Future for Burner {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            match coop::poll_proceed(cx) {
                Poll::Ready(unit) => {
                    unit.made_progress();
                    self.units.fetch_add(1, Ordering::Relaxed);
                }
                // Tokio has arranged for the task to be polled again.
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// A timeout of `after` around a [`Burner`], with paused time moved on by
/// another task in steps of `step`. Returns how long the timeout took by the
/// runtime's clock, and how many units the burner had taken, or `None` if
/// the timeout did not complete within 100 steps.
async fn time_out_a_burner<T>(
    timeout: impl FnOnce(Burner) -> T,
    step: Duration,
) -> Option<(Duration, usize)>
where
    T: Future<Output = bool>,
{
    let units = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let stop = done.clone();
    let clock = tokio::spawn(async move {
        for _ in 0..100 {
            if stop.load(Ordering::SeqCst) {
                return true;
            }
            tokio::time::advance(step).await;
        }
        false
    });
    let start = Instant::now();
    let timed_out = timeout(Burner {
        units: units.clone(),
    });
    // Not completed within the clock's 100 steps: the clock task ends, and
    // the burner (which never completes) would keep this task busy forever.
    let outcome = tokio::select! {
        biased;
        elapsed = timed_out => Some(elapsed),
        _ = poll_until(&clock) => None,
    };
    done.store(true, Ordering::SeqCst);
    let clock_stopped_in_time = clock.await.expect("the clock does not panic");
    match outcome {
        Some(elapsed) => {
            assert!(elapsed, "the burner never completes");
            assert!(clock_stopped_in_time);
            Some((start.elapsed(), units.load(Ordering::Relaxed)))
        }
        None => None,
    }
}

/// Completes once `task` has finished, without taking its output.
async fn poll_until<T>(task: &tokio::task::JoinHandle<T>) {
    while !task.is_finished() {
        tokio::task::yield_now().await;
    }
}

/// tokio::time's `Timeout` polls its timer outside the budget when its
/// future used the budget up, so that it still fires: so does the wheel's.
#[tokio::test(start_paused = true)]
async fn timeout_around_a_budget_burning_future_fires_at_its_deadline() {
    let after = Duration::from_secs(1);
    let step = Duration::from_millis(100);
    let tokio = time_out_a_burner(
        |burner| async move { tokio::time::timeout(after, burner).await.is_err() },
        step,
    )
    .await;
    let wheel = time_out_a_burner(
        |burner| async move { tokio_wheel::timeout(after, burner).await.is_err() },
        step,
    )
    .await;
    let (tokio_took, tokio_units) = tokio.expect("tokio::time's timeout fires");
    let (wheel_took, wheel_units) = wheel.expect("the wheel's timeout fires");
    for (took, units) in [(tokio_took, tokio_units), (wheel_took, wheel_units)] {
        // Never early, and at most a step of the clock late: tokio::time's
        // at the step that reaches the deadline, the wheel's at the next (its
        // entry fires in the wheel's driver task, which runs after the
        // timeout's task has been polled at that step). The burner did use
        // up the budget on every poll on the way.
        assert!(took >= after, "fired after {took:?}");
        assert!(took <= after + step, "fired after {took:?}");
        assert!(units >= 128 * 10, "the burner took {units} units");
    }
}
