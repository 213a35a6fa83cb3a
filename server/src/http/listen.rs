//! The HTTP listener: axum's router served over HTTP/1.1 with connection hygiene, so that
//! slow or idle clients cannot starve the server. A connection must send a whole request
//! head within the header timeout (an idle keep-alive connection waits at most that long
//! for its next request); a connection that moves no byte either way for the idle timeout
//! is closed (a slow body, a stalled reader; the progress stream's keep-alive comments
//! keep it moving); and at most `max_connections` are open at once. When that many are
//! open, a new one takes the place of the oldest connection that has not finished its
//! first request head (the cheapest to lose, and what a slow-headers flood is made of); if
//! every open connection is serving, the new one is closed at once.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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
    pub max_connections: usize,
}

impl Limits {
    pub fn of(s: &crate::config::ServerSettings) -> Limits {
        Limits {
            header_timeout: Duration::from_millis(s.header_timeout_ms),
            idle_timeout: Duration::from_millis(s.idle_timeout_ms),
            max_connections: s.max_connections.max(1),
        }
    }
}

/// One open connection as the admission queue sees it.
struct Slot {
    /// Set once the connection's first request head was read.
    served: Arc<AtomicBool>,
    stop: CancellationToken,
}

/// Open connections, oldest first, and how many there are.
#[derive(Default)]
struct Admission {
    open: AtomicUsize,
    slots: Mutex<VecDeque<Slot>>,
}

impl Admission {
    /// Makes room for one more connection: `false` when every open one is serving.
    fn admit(&self, max: usize) -> bool {
        let mut slots = self.slots.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        slots.retain(|s| !s.stop.is_cancelled());
        if self.open.load(Ordering::SeqCst) < max {
            return true;
        }
        match slots.iter().position(|s| !s.served.load(Ordering::SeqCst)) {
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
    let admission = Arc::new(Admission::default());
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
        let served = Arc::new(AtomicBool::new(false));
        // Not a child of `closing`: a stopping server stops accepting, and requests in
        // flight finish while the process winds down.
        let stop = CancellationToken::new();
        admission.open.fetch_add(1, Ordering::SeqCst);
        admission
            .slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push_back(Slot { served: served.clone(), stop: stop.clone() });
        let (app, builder, admission) = (app.clone(), builder.clone(), admission.clone());
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
                served.store(true, Ordering::SeqCst);
                req.extensions_mut().insert(ConnectInfo(peer));
                let app = app.clone();
                async move {
                    let Ok(resp) = tower::ServiceExt::oneshot(app, req).await;
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
            stop.cancel();
            admission.open.fetch_sub(1, Ordering::SeqCst);
        });
    }
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
