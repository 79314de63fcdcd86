//! The atomics of the driver hand-off protocol: std's, or loom's when the
//! crate is built for model checking with `RUSTFLAGS="--cfg tokio_wheel_loom"`
//! (see `src/driver/loom.rs`).

#[cfg(tokio_wheel_loom)]
pub(crate) use loom::sync::atomic::AtomicU64;
#[cfg(not(tokio_wheel_loom))]
pub(crate) use std::sync::atomic::AtomicU64;
