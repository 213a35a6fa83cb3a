//! The HTTP listener: axum's router served over HTTP/1.1 with connection hygiene, so that
//! slow or idle clients cannot starve the server. A connection must send a whole request
//! head within the header timeout (an idle keep-alive connection waits at most that long
//! for its next request); a connection that moves no byte either way for the idle timeout
//! is closed (a stalled reader; the progress stream's keep-alive comments keep it moving);
//! a request must have its answer's head within the request timeout (a body trickled byte
//! by byte included); and at most `max_connections` are open at once. When that many are
//! open, a new one takes the place of the oldest connection with no request in flight (one
//! that has not finished its first head, an idle keep-alive one, or a stream whose head was
//! sent: what a slow-headers flood is made of, and what costs least to lose); if every open
//! connection has a request in flight, the new one is closed at once. A handler that panics
//! answers 500 and its connection's slot is given back.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use futures::FutureExt;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::extract::connect_info::ConnectInfo;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// The listener's limits (see `[server]` in the configuration).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
    pub request_timeout: Duration,
    pub max_connections: usize,
}

impl Limits {
    pub fn of(s: &crate::config::ServerSettings) -> Limits {
        Limits {
            // Zero would close every connection at once: at least a second each.
            header_timeout: Duration::from_millis(s.header_timeout_ms.max(1_000)),
            idle_timeout: Duration::from_millis(s.idle_timeout_ms.max(1_000)),
            request_timeout: Duration::from_millis(s.request_timeout_ms.max(1_000)),
            max_connections: s.max_connections.max(1),
        }
    }
}

/// One open connection as the admission queue sees it.
struct Slot {
    /// Requests of the connection whose answer's head has not been sent yet.
    in_flight: Arc<AtomicUsize>,
    stop: CancellationToken,
}

/// Open connections, oldest first.
#[derive(Default)]
struct Admission {
    slots: Mutex<VecDeque<Slot>>,
}

impl Admission {
    /// Makes room for one more connection: `false` when every open one has a request in
    /// flight. Connections already told to stop count as gone.
    fn admit(&self, max: usize) -> bool {
        let mut slots = self.slots.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        slots.retain(|s| !s.stop.is_cancelled());
        if slots.len() < max {
            return true;
        }
        match slots.iter().position(|s| s.in_flight.load(Ordering::SeqCst) == 0) {
            Some(at) => {
                if let Some(s) = slots.remove(at) {
                    s.stop.cancel();
                }
                true
            }
            None => false,
        }
    }
}

/// Serves `app` on `listener` until `shutdown` resolves; then stops accepting (connections
/// already open go on until the process ends).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let admission = Admission::default();
    let closing = CancellationToken::new();
    tokio::spawn({
        let closing = closing.clone();
        async move {
            shutdown.await;
            closing.cancel();
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(limits.header_timeout);
    let builder = Arc::new(builder);
    loop {
        let (socket, peer) = tokio::select! {
            () = closing.cancelled() => return Ok(()),
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                // Out of file descriptors and the like: wait a moment rather than spin.
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        if !admission.admit(limits.max_connections) {
            drop(socket);
            continue;
        }
        let _ = socket.set_nodelay(true);
        let in_flight = Arc::new(AtomicUsize::new(0));
        // Not a child of `closing`: a stopping server stops accepting, and requests in
        // flight finish while the process winds down.
        let stop = CancellationToken::new();
        admission
            .slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push_back(Slot { in_flight: in_flight.clone(), stop: stop.clone() });
        let (app, builder) = (app.clone(), builder.clone());
        tokio::spawn(async move {
            // However the task ends (closed, evicted, idle, or a panic), the slot is given back.
            let _gone = Gone(stop.clone());
            let service = hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
                req.extensions_mut().insert(ConnectInfo(peer));
                let (app, busy) = (app.clone(), InFlight::new(in_flight.clone()));
                async move {
                    let answer = std::panic::AssertUnwindSafe(tower::ServiceExt::oneshot(app, req)).catch_unwind();
                    let resp = match tokio::time::timeout(limits.request_timeout, answer).await {
                        Ok(Ok(Ok(resp))) => resp,
                        Ok(Err(_)) => plain(hyper::StatusCode::INTERNAL_SERVER_ERROR, "internal error"),
                        Err(_) => plain(
                            hyper::StatusCode::REQUEST_TIMEOUT,
                            "the request took too long to arrive or to answer",
                        ),
                    };
                    drop(busy);
                    Ok::<_, std::convert::Infallible>(resp)
                }
            });
            let io = Watched::new(socket, limits.idle_timeout);
            let idle = io.idle.clone();
            let connection = builder.serve_connection(TokioIo::new(io), service);
            tokio::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => {}
                () = stop.cancelled() => {}
                () = idle.cancelled() => {}
            }
        });
    }
}

/// Marks its connection gone when dropped (the admission queue then forgets it).
struct Gone(CancellationToken);

impl Drop for Gone {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// One request in flight on a connection, until its answer's head is ready (or it is
/// dropped: a cancelled or panicked request counts no more).
struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    fn new(count: Arc<AtomicUsize>) -> InFlight {
        count.fetch_add(1, Ordering::SeqCst);
        InFlight(count)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A JSON error answer made by the listener itself (a panic, a request past its time).
fn plain(status: hyper::StatusCode, why: &str) -> axum::response::Response {
    use axum::response::IntoResponse;
    (status, axum::Json(serde_json::json!({ "error": why }))).into_response()
}

/// A socket whose connection is cancelled (`idle`) once no byte has moved either way for
/// the idle timeout.
struct Watched {
    socket: TcpStream,
    moved: Arc<AtomicBool>,
    idle: CancellationToken,
}

impl Watched {
    fn new(socket: TcpStream, timeout: Duration) -> Watched {
        let (moved, idle) = (Arc::new(AtomicBool::new(true)), CancellationToken::new());
        let (watch_moved, watch_idle) = (moved.clone(), idle.clone());
        tokio::spawn(async move {
            // Checked four times per timeout: a connection is closed between 3/4 and 5/4 of
            // it after its last byte.
            let mut tick = tokio::time::interval((timeout / 4).max(Duration::from_millis(10)));
            tick.tick().await;
            let mut quiet = 0;
            loop {
                tokio::select! {
                    () = watch_idle.cancelled() => return,
                    _ = tick.tick() => {}
                }
                if watch_moved.swap(false, Ordering::SeqCst) {
                    quiet = 0;
                } else {
                    quiet += 1;
                    if quiet >= 4 {
                        watch_idle.cancel();
                        return;
                    }
                }
            }
        });
        Watched { socket, moved, idle }
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        // Ends the watchdog with the connection.
        self.idle.cancel();
    }
}

impl AsyncRead for Watched {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.socket).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.moved.store(true, Ordering::Relaxed);
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.socket).poll_write(cx, data);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.moved.store(true, Ordering::Relaxed);
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.socket).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.socket).poll_shutdown(cx)
    }
}
