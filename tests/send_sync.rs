//! Which public types are `Send`, `Sync` and `Unpin`: checked at compile
//! time, so that a change that loses one fails to build here rather than in
//! a user's code (an error that `?` cannot box as `Send + Sync`, a handle
//! that cannot be shared through an `Arc`).

use std::error::Error;
use std::future::{Future, IntoFuture};
use std::time::Duration;

use tokio_wheel::error::{BuildError, Elapsed, InsertError, Rejected, StaleKey, TryCurrentError};
use tokio_wheel::queue::{Expirations, Expired, Key};
use tokio_wheel::{
    Builder, ExpiryQueue, Interval, Sleep, Stats, Timeout, TimerHandle, TimerTask, Wheel,
};

fn send<T: Send>() {}
fn unpin<T: Unpin>() {}
fn send_sync<T: Send + Sync>() {}

/// A future that is `Send` and `Sync`, and not `Unpin`.
type NotUnpin = std::future::Ready<()>;
/// A `Send + Sync` value type for the generic types.
type Value = String;

#[test]
fn handles_and_configuration() {
    send_sync::<Wheel>();
    send_sync::<Builder>();
    send_sync::<Stats>();
    send_sync::<TimerHandle>();
    unpin::<Wheel>();
    unpin::<TimerHandle>();
}

#[test]
fn futures_and_streams() {
    send_sync::<Sleep>();
    unpin::<Sleep>();
    send_sync::<Interval>();
    unpin::<Interval>();
    send_sync::<Timeout<NotUnpin>>();
    send_sync::<Timeout<std::future::Pending<u8>>>();
    // `Unpin` when the future is, as the type's docs promise.
    unpin::<Timeout<std::future::Pending<u8>>>();
    unpin::<Timeout<std::pin::Pin<Box<dyn Future<Output = ()> + Send>>>>();
}

#[test]
fn timer_task() {
    send_sync::<TimerTask>();
    unpin::<TimerTask>();
    // The future that runs it is `Send`, to be spawned; like most boxed
    // futures it is not `Sync`, which nothing that polls it needs.
    send::<<TimerTask as IntoFuture>::IntoFuture>();
}

#[test]
fn errors() {
    send_sync::<Rejected>();
    send_sync::<BuildError>();
    send_sync::<Elapsed>();
    send_sync::<StaleKey>();
    send_sync::<TryCurrentError>();
    send_sync::<InsertError<Value>>();
    // `InsertError<T>` holds a `T` and nothing else that is not both.
    send::<InsertError<std::cell::Cell<u8>>>();
    fn boxable<E: Error + Send + Sync + 'static>() {}
    boxable::<Rejected>();
    boxable::<BuildError>();
    boxable::<Elapsed>();
    boxable::<StaleKey>();
    boxable::<TryCurrentError>();
    boxable::<InsertError<Value>>();
}

#[test]
fn queue() {
    send_sync::<ExpiryQueue<Value>>();
    send_sync::<Expirations<Value>>();
    send_sync::<Expired<Value>>();
    send_sync::<Key>();
    unpin::<ExpiryQueue<Value>>();
    unpin::<Expirations<Value>>();
    unpin::<Expired<Value>>();
}

#[test]
fn io() {
    use tokio::io::DuplexStream;
    use tokio_wheel::io::TimeoutStream;

    send_sync::<TimeoutStream<DuplexStream>>();
    unpin::<TimeoutStream<DuplexStream>>();
}

#[cfg(feature = "hyper")]
#[test]
fn hyper() {
    use tokio_wheel::hyper::HyperTimer;

    send_sync::<HyperTimer>();
}

#[cfg(feature = "tower")]
#[test]
fn tower() {
    use tokio_wheel::tower::{ResponseFuture, Timeout, TimeoutLayer};

    send_sync::<TimeoutLayer>();
    send_sync::<Timeout<Value>>();
    send_sync::<ResponseFuture<NotUnpin>>();
    unpin::<ResponseFuture<std::future::Pending<u8>>>();
}

/// The issue that started this file: `?` from a refused callback into the
/// boxed error that `tokio::spawn`ed code and `anyhow` use.
#[tokio::test(start_paused = true)]
async fn rejected_converts_into_a_send_sync_box() {
    async fn schedule_two(wheel: &Wheel) -> Result<(), Box<dyn Error + Send + Sync>> {
        wheel.schedule(Duration::from_secs(1), || ())?;
        wheel.schedule(Duration::from_secs(1), || ())?;
        Ok(())
    }

    let wheel = Wheel::builder().max_pending(1).build().unwrap();
    // Spawned: the error crosses a task boundary as `Send + Sync`.
    let err = tokio::spawn(async move { schedule_two(&wheel).await })
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the wheel already has its maximum of 1 pending timers (Builder::max_pending)"
    );
    let rejected = err.downcast::<Rejected>().expect("a `Rejected`");
    assert_eq!(rejected.max_pending(), Some(1));
    let task = rejected
        .into_task()
        .expect("the refused callback comes back");
    task.await;
}

/// `TimerTask` is shared by reference across threads for its deadline, and
/// still runs the work it was given, exactly once.
#[tokio::test(start_paused = true)]
async fn a_shared_timer_task_still_runs_its_work() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    let wheel = Wheel::new();
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    wheel
        .schedule(Duration::from_secs(5), move || {
            r.fetch_add(1, Ordering::Relaxed);
        })
        .unwrap();
    let task = wheel.shutdown().pop().expect("the pending callback");
    let shared = Arc::new(task);
    let s = shared.clone();
    let deadline = std::thread::spawn(move || s.deadline()).join().unwrap();
    assert_eq!(deadline, shared.deadline());
    let task = Arc::try_unwrap(shared).expect("the only reference");
    task.await;
    assert_eq!(runs.load(Ordering::Relaxed), 1);
}
