//! The wire, the state shared by both sides, the connection loop of the
//! server and the client of the load generator.

use std::future::Future;
use std::io;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

use crate::measure::Hist;
use crate::timers::Timers;
use crate::{Config, SLACK, TICK};
use support::Rng;

// ---------------------------------------------------------------------------
// The wire: fixed 16-byte frames, a kind byte and a little-endian payload.

pub const FRAME: usize = 16;
pub const DATA: u8 = 0;
pub const REQUEST: u8 = 1;
pub const REPLY: u8 = 2;
pub const HEARTBEAT: u8 = 3;

#[derive(Clone, Copy)]
pub struct Frame {
    pub kind: u8,
    pub payload: u64,
}

impl Frame {
    pub fn encode(self) -> [u8; FRAME] {
        let mut b = [0; FRAME];
        b[0] = self.kind;
        b[8..].copy_from_slice(&self.payload.to_le_bytes());
        b
    }
}

/// Reads whole frames; cancel safe (the read is its only await point).
pub struct Frames {
    pub buf: [u8; 4 * FRAME],
    pub start: usize,
    pub end: usize,
}

impl Frames {
    pub fn new() -> Frames {
        Frames {
            buf: [0; 4 * FRAME],
            start: 0,
            end: 0,
        }
    }

    /// The next frame, `None` at end of stream.
    pub async fn next<R: AsyncRead + Unpin>(&mut self, io: &mut R) -> io::Result<Option<Frame>> {
        loop {
            if self.end - self.start >= FRAME {
                let b = &self.buf[self.start..self.start + FRAME];
                let mut payload = [0; 8];
                payload.copy_from_slice(&b[8..]);
                let frame = Frame {
                    kind: b[0],
                    payload: u64::from_le_bytes(payload),
                };
                self.start += FRAME;
                return Ok(Some(frame));
            }
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            let n = io.read(&mut self.buf[self.end..]).await?;
            if n == 0 {
                return Ok(None);
            }
            self.end += n;
        }
    }
}

/// The phases of one variant's run, known once the connections are up.
#[derive(Clone, Copy)]
pub struct Phases {
    pub window_start: Instant,
    pub round_start: Instant,
    pub round_end: Instant,
    pub window_end: Instant,
}

#[derive(Clone, Copy, PartialEq)]
pub enum Phase {
    Quiet,
    Round,
}

impl Phases {
    pub fn of(&self, t: Instant) -> Option<Phase> {
        if t < self.window_start || t >= self.window_end {
            None
        } else if t >= self.round_start && t < self.round_end {
            Some(Phase::Round)
        } else {
            Some(Phase::Quiet)
        }
    }
}

/// Counters shared by the server tasks, the clients and the main thread.
pub struct Shared {
    pub cfg: Config,
    pub epoch: Instant,
    pub phases: OnceLock<Phases>,
    pub stop: AtomicBool,
    // Server side.
    pub started: AtomicUsize,
    pub first_start_us: AtomicU64,
    pub last_start_us: AtomicU64,
    pub frames: AtomicU64,
    pub heartbeats_sent: AtomicU64,
    pub request_timeouts: AtomicU64,
    pub drops: AtomicU64,
    pub drops_early: AtomicU64,
    pub drops_late: AtomicU64,
    pub drop_after_idle: Hist,
    pub accept_error: Mutex<Option<String>>,
    // Client side.
    pub connect_error: Mutex<Option<String>>,
    /// Request latency by the phase the request was sent in: quiet part,
    /// expiry round.
    pub latency: [Hist; 2],
    /// Request latency over the whole window.
    pub latency_all: Hist,
    pub heartbeat_gap: Hist,
    pub replies: AtomicU64,
    pub wrong_drops: AtomicU64,
    pub silent_dropped: AtomicU64,
    pub silent_dropped_early_by_client: AtomicU64,
}

/// Polls of server connection tasks, all variants alike.
pub static SERVER_POLLS: AtomicU64 = AtomicU64::new(0);

impl Shared {
    pub fn new(cfg: Config) -> Shared {
        Shared {
            cfg,
            epoch: Instant::now(),
            phases: OnceLock::new(),
            stop: AtomicBool::new(false),
            started: AtomicUsize::new(0),
            first_start_us: AtomicU64::new(u64::MAX),
            last_start_us: AtomicU64::new(0),
            frames: AtomicU64::new(0),
            heartbeats_sent: AtomicU64::new(0),
            request_timeouts: AtomicU64::new(0),
            drops: AtomicU64::new(0),
            drops_early: AtomicU64::new(0),
            drops_late: AtomicU64::new(0),
            drop_after_idle: Hist::new(),
            accept_error: Mutex::new(None),
            connect_error: Mutex::new(None),
            latency: [Hist::new(), Hist::new()],
            latency_all: Hist::new(),
            heartbeat_gap: Hist::new(),
            replies: AtomicU64::new(0),
            wrong_drops: AtomicU64::new(0),
            silent_dropped: AtomicU64::new(0),
            silent_dropped_early_by_client: AtomicU64::new(0),
        }
    }

    pub fn micros(&self, t: Instant) -> u64 {
        u64::try_from((t - self.epoch).as_micros()).unwrap_or(u64::MAX)
    }

    pub fn at_micros(&self, us: u64) -> Instant {
        self.epoch + Duration::from_micros(us)
    }

    pub fn stopped(&self) -> bool {
        self.stop.load(Relaxed)
    }
}

// ---------------------------------------------------------------------------
// The server.

/// The request handler: an echo, after giving the scheduler a turn.
pub async fn handle(request: Frame) -> Frame {
    tokio::task::yield_now().await;
    Frame {
        kind: REPLY,
        payload: request.payload,
    }
}

/// Words a connection's future carries and never reads, for the `pad`
/// axis: live across every `.await` of the loop (its `Drop` reads them), so
/// they are part of the future's state and move where the compiler lays out
/// the rest of it (the read's future, the idle timer, the fields a frame
/// touches first) against the task's cache lines. That layout is the
/// compiler's, not the timers', and it differs between the variants, whose
/// timers differ in size; the axis shows how much a ratio moves with it.
pub struct Pad<const N: usize>([u64; N]);

impl<const N: usize> Pad<N> {
    fn new() -> Self {
        Pad(std::hint::black_box([0; N]))
    }
}

impl<const N: usize> Drop for Pad<N> {
    fn drop(&mut self) {
        std::hint::black_box(&self.0);
    }
}

/// Writes `serve` and `serve_biased`, one connection's loop with and
/// without `biased;` in its `select!` (a token `select!` needs written
/// out): one body, and two functions rather than a flag, so that each
/// connection future holds one `select!`'s state and stays the size it
/// is (a task's allocation grows in steps of 128 bytes).
///
/// `PAD`: 8-byte words of [`Pad`] the future carries, the `pad` axis.
macro_rules! serve_fn {
    ($(#[$doc:meta])* $name:ident, $($biased:tt)*) => {
        $(#[$doc])*
        pub async fn $name<T: Timers, S: AsyncRead + AsyncWrite + Unpin, const PAD: usize>(
            mut io: S,
            sh: Arc<Shared>,
        ) {
            let _pad = Pad::<PAD>::new();
            let started = Instant::now();
            let n = sh.started.fetch_add(1, Relaxed);
            sh.first_start_us.fetch_min(sh.micros(started), Relaxed);
            sh.last_start_us.fetch_max(sh.micros(started), Relaxed);
            let cfg = &sh.cfg;
            let jitter = Rng::new(cfg.seed ^ (n as u64).wrapping_mul(0x2545_F491)).unit();
            // Without server heartbeats the connection holds no heartbeat schedule
            // at all, in every variant.
            let mut heartbeat = cfg.server_heartbeat.then(|| {
                T::heartbeat(
                    started + cfg.heartbeat.mul_f64(jitter),
                    cfg.heartbeat,
                    cfg.frames_per_beat(),
                )
            });
            let mut last_frame = started;
            let mut idle = pin!(T::idle(cfg.idle));
            let mut frames = Frames::new();
            let beat = Frame {
                kind: HEARTBEAT,
                payload: 0,
            };
            loop {
                tokio::select! {
                    $($biased)*
                    read = frames.next(&mut io) => {
                        let Ok(Some(frame)) = read else { return };
                        last_frame = Instant::now();
                        T::reset_idle(idle.as_mut(), last_frame + cfg.idle);
                        sh.frames.fetch_add(1, Relaxed);
                        if frame.kind == REQUEST {
                            match T::timeout(cfg.request_timeout, handle(frame)).await {
                                Some(reply) => {
                                    if io.write_all(&reply.encode()).await.is_err() {
                                        return;
                                    }
                                }
                                None => {
                                    sh.request_timeouts.fetch_add(1, Relaxed);
                                }
                            }
                        }
                        if heartbeat.as_mut().is_some_and(T::beat_on_frame) {
                            if io.write_all(&beat.encode()).await.is_err() {
                                return;
                            }
                            sh.heartbeats_sent.fetch_add(1, Relaxed);
                        }
                    }
                    () = &mut idle => {
                        let waited = last_frame.elapsed();
                        if !sh.stopped() {
                            sh.drops.fetch_add(1, Relaxed);
                            if waited < cfg.idle {
                                sh.drops_early.fetch_add(1, Relaxed);
                            } else {
                                sh.drop_after_idle.record(waited - cfg.idle);
                                if waited > cfg.idle + TICK + SLACK {
                                    sh.drops_late.fetch_add(1, Relaxed);
                                }
                            }
                        }
                        return;
                    }
                    () = next_beat::<T>(&mut heartbeat), if cfg.server_heartbeat => {
                        if io.write_all(&beat.encode()).await.is_err() {
                            return;
                        }
                        sh.heartbeats_sent.fetch_add(1, Relaxed);
                    }
                }
            }
        }
    };
}

serve_fn!(
    /// One connection, served with the timers of `T`: the read and the
    /// idle timeout raced in tokio's default `select!`, which polls a
    /// random branch first.
    serve,
);
serve_fn!(
    /// [`serve`], with the read polled first (`select!`'s `biased;`).
    serve_biased,
    biased;
);

/// Completes when a heartbeat is due; never without a schedule.
async fn next_beat<T: Timers>(hb: &mut Option<T::Heartbeat>) {
    match hb {
        Some(hb) => T::tick(hb).await,
        None => std::future::pending().await,
    }
}

/// `f`, counting its polls in [`SERVER_POLLS`].
///
/// A future of its own rather than an `async fn`: an `async fn` that pins
/// its argument keeps it twice in its state (the argument and the pinned
/// local), which doubled every connection task's future and so counted the
/// timers' inline bytes (a `Sleep`'s) twice in the heap per connection.
pub fn counted<F: Future>(f: F) -> Counted<F> {
    Counted { f }
}

pin_project_lite::pin_project! {
    /// The future of [`counted`].
    pub struct Counted<F> {
        #[pin]
        f: F,
    }
}

impl<F: Future> Future for Counted<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        SERVER_POLLS.fetch_add(1, Relaxed);
        self.project().f.poll(cx)
    }
}

// ---------------------------------------------------------------------------
// The load generator.

/// Whether client `id` is one of the active clients when a share `active`
/// of them is: a hash of the id against the share, so that the active
/// clients are spread over the connections and the same in every variant.
pub fn is_active(id: usize, active: f64) -> bool {
    let h = (id as u64 ^ 0xA5A5_5A5A).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    ((h >> 11) as f64 / (1u64 << 53) as f64) < active
}

/// One client: a frame every `frame_every` (jittered), silent from
/// `silent_after` past its start if given, reading replies and heartbeats
/// throughout. With `Config::active` set, the frames are plain data and an
/// active client (see [`is_active`]) also sends a request every
/// `request_every` (jittered alike); without it, a share `request_share` of
/// the frames are requests. `created` is when its connection was made, before the server
/// side started: the server counts idle time from its own start, which is no
/// earlier, so the client's own early-drop check counts from `created`.
pub async fn client<S: AsyncRead + AsyncWrite + Unpin>(
    mut io: S,
    created: Instant,
    id: usize,
    silent_after: Option<Duration>,
    sh: Arc<Shared>,
) {
    let cfg = &sh.cfg;
    let mut rng = Rng::new(cfg.seed.wrapping_mul(0x9E37_79B9) ^ id as u64);
    let start = Instant::now();
    let silent_at = silent_after.map(|d| start + d);
    let mut silent = false;
    let mut last_sent = created;
    let mut last_beat: Option<Instant> = None;
    let mut frames = Frames::new();
    let mut pace = pin!(tokio::time::sleep(cfg.frame_every.mul_f64(rng.unit())));
    let active = cfg.active.is_some_and(|share| is_active(id, share));
    // Never polled, so never registered, for a client that is not active.
    let mut ask = pin!(tokio::time::sleep(cfg.request_every.mul_f64(rng.unit())));
    loop {
        tokio::select! {
            read = frames.next(&mut io) => {
                let now = Instant::now();
                let frame = match read {
                    Ok(Some(frame)) => frame,
                    Ok(None) | Err(_) => {
                        if sh.stopped() {
                            return;
                        }
                        if silent {
                            sh.silent_dropped.fetch_add(1, Relaxed);
                            if now - last_sent < cfg.idle {
                                sh.silent_dropped_early_by_client.fetch_add(1, Relaxed);
                            }
                        } else {
                            sh.wrong_drops.fetch_add(1, Relaxed);
                        }
                        return;
                    }
                };
                let Some(phases) = sh.phases.get() else { continue };
                match frame.kind {
                    REPLY => {
                        sh.replies.fetch_add(1, Relaxed);
                        let sent = sh.at_micros(frame.payload);
                        let phase = match phases.of(sent) {
                            Some(Phase::Quiet) => &sh.latency[0],
                            Some(Phase::Round) => &sh.latency[1],
                            None => continue,
                        };
                        phase.record(now - sent);
                        sh.latency_all.record(now - sent);
                    }
                    HEARTBEAT => {
                        if let Some(prev) = last_beat {
                            if prev >= phases.window_start && now < phases.window_end {
                                sh.heartbeat_gap.record(now - prev);
                            }
                        }
                        last_beat = Some(now);
                    }
                    _ => {}
                }
            }
            () = pace.as_mut(), if !silent => {
                let now = Instant::now();
                if silent_at.is_some_and(|at| now >= at) {
                    silent = true;
                    continue;
                }
                let kind = if cfg.active.is_none() && rng.unit() < cfg.request_share {
                    REQUEST
                } else {
                    DATA
                };
                let frame = Frame { kind, payload: sh.micros(now) };
                if io.write_all(&frame.encode()).await.is_err() {
                    if !sh.stopped() {
                        sh.wrong_drops.fetch_add(1, Relaxed);
                    }
                    return;
                }
                last_sent = now;
                pace.as_mut().reset(now + cfg.frame_every.mul_f64(0.5 + rng.unit()));
            }
            () = ask.as_mut(), if active && !silent => {
                let now = Instant::now();
                if silent_at.is_some_and(|at| now >= at) {
                    silent = true;
                    continue;
                }
                let frame = Frame { kind: REQUEST, payload: sh.micros(now) };
                if io.write_all(&frame.encode()).await.is_err() {
                    if !sh.stopped() {
                        sh.wrong_drops.fetch_add(1, Relaxed);
                    }
                    return;
                }
                last_sent = now;
                ask.as_mut().reset(now + cfg.request_every.mul_f64(0.5 + rng.unit()));
            }
        }
    }
}
