//! `Builder::max_pending`, and the one check that refuses a timer.
//!
//! Registered timers and places reserved for timers not yet registered count
//! against the bound. The `try_` constructors reserve a place first and are
//! refused at the bound ([`WheelCore::admit`]); every other timer is charged
//! when it links ([`WheelCore::charge`]) and may go past the bound, which
//! then refuses `try_` calls until enough places are released.

use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;

use super::WheelCore;
use crate::error::RejectReason;
use crate::sync::Padded;

/// The bound and the places taken.
#[derive(Debug)]
pub(super) struct Bound {
    max: usize,
    /// Written by every registration and cancel: on lines of its own, apart
    /// from the clock and the hand-off in `WheelCore`, which every `Sleep`
    /// reads on every reset and poll (see the layout of `Shard`).
    used: Padded<AtomicUsize>,
}

impl Bound {
    pub(super) fn new(max: usize) -> Self {
        Bound {
            max,
            used: Padded(AtomicUsize::new(0)),
        }
    }
}

impl WheelCore {
    /// The refusal check of every `try_` call (`Wheel::try_sleep`,
    /// `Wheel::schedule`, `ExpiryQueue::try_insert`): refused after shutdown
    /// or at the bound; otherwise one place is taken, for the timer to use or
    /// [`release`](Self::release).
    pub(crate) fn admit(&self) -> Result<(), RejectReason> {
        if self.is_shut_down() {
            return Err(RejectReason::ShutDown);
        }
        match &self.bound {
            Some(b) if b.used.fetch_add(1, Relaxed) >= b.max => {
                b.used.fetch_sub(1, Relaxed);
                Err(RejectReason::AtCapacity { max_pending: b.max })
            }
            _ => Ok(()),
        }
    }

    /// Takes one place for a timer that is never refused (it may go past the
    /// bound, making `admit` fail until enough are released).
    pub(crate) fn charge(&self) {
        if let Some(b) = &self.bound {
            b.used.fetch_add(1, Relaxed);
        }
    }

    /// Gives back `n` places: timers fired or cancelled.
    pub(crate) fn release(&self, n: usize) {
        if let (Some(b), true) = (&self.bound, n > 0) {
            b.used.fetch_sub(n, Relaxed);
        }
    }
}
