//! Hostile networks: connections that never finish their headers, idle ones and stalled
//! bodies are closed, and a flood of them leaves `/healthz` answering.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::TestApp;

fn addr(app: &TestApp) -> String {
    app.base.trim_start_matches("http://").trim_end_matches('/').to_string()
}

/// Whether the server closed `socket` within `within` (end of stream, a reset, or a last
/// answer such as 408 followed by the close).
async fn closed(socket: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 512];
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, socket.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(_)) => {}
        }
    }
}

async fn healthy(app: &TestApp) -> bool {
    let client = reqwest::Client::builder().timeout(Duration::from_secs(3)).build().expect("client");
    matches!(client.get(app.url("/healthz")).send().await, Ok(r) if r.status() == 200)
}

#[tokio::test]
async fn slow_and_idle_connections_are_closed_and_cannot_starve_the_server() {
    let mut config = server::config::Config::default();
    config.server.header_timeout_ms = 600;
    config.server.idle_timeout_ms = 1_500;
    config.server.max_connections = 48;
    let app = TestApp::start_with(config).await;
    let at = addr(&app);

    // Four times the connection cap, each with half a request head, never finished.
    let mut flood = Vec::new();
    for _ in 0..192 {
        let mut s = TcpStream::connect(&at).await.expect("connect");
        s.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ").await.expect("write");
        flood.push(s);
    }
    for _ in 0..5 {
        assert!(healthy(&app).await, "/healthz answers through a slow-headers flood");
    }
    // Every slow connection is closed: replaced by newer ones, or at the header timeout.
    for s in &mut flood {
        assert!(closed(s, Duration::from_secs(3)).await, "a connection that never finished its head is closed");
    }

    // A connection that sends nothing at all is closed at the header timeout too.
    let mut silent = TcpStream::connect(&at).await.expect("connect");
    assert!(closed(&mut silent, Duration::from_secs(3)).await, "an idle connection is closed");

    // A body that stalls after its first bytes: closed once nothing moved for the idle timeout.
    let mut stalled = TcpStream::connect(&at).await.expect("connect");
    stalled
        .write_all(
            format!(
                "POST /api/episodes HTTP/1.1\r\nHost: {at}\r\nContent-Type: application/json\r\n\
                 Content-Length: 100\r\n\r\n{{\"task"
            )
            .as_bytes(),
        )
        .await
        .expect("write");
    assert!(closed(&mut stalled, Duration::from_secs(4)).await, "a stalled body is closed");

    // A keep-alive connection serves request after request while it is used.
    let mut kept = TcpStream::connect(&at).await.expect("connect");
    for _ in 0..3 {
        kept.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {at}\r\n\r\n").as_bytes()).await.expect("write");
        let mut buf = [0u8; 512];
        let n = kept.read(&mut buf).await.expect("read");
        assert!(
            String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&buf[..n])
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(healthy(&app).await);
}

/// Raw routes answer errors as `{"error": …}`, 413s included, echo at most a bounded part of
/// their input, and a Host with user information is refused.
#[tokio::test]
async fn errors_are_json_bounded_and_hosts_carry_no_user_information() {
    let mut config = server::config::Config::default();
    config.server.max_body_bytes = 64 * 1024;
    let app = TestApp::start_with(config).await;
    let at = addr(&app);
    let raw = |request: String| {
        let at = at.clone();
        async move {
            let mut s = TcpStream::connect(&at).await.expect("connect");
            s.write_all(request.as_bytes()).await.expect("write");
            let mut answer = Vec::new();
            let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut answer)).await;
            String::from_utf8_lossy(&answer).into_owned()
        }
    };

    // A streamed body past the limit, on a raw route: 413 as JSON.
    let chunk = format!("{:x}\r\n{}\r\n", 16 * 1024, "a".repeat(16 * 1024));
    let answer = raw(format!(
        "POST /api/episodes HTTP/1.1\r\nHost: {at}\r\nContent-Type: application/json\r\nConnection: close\r\n\
         Transfer-Encoding: chunked\r\n\r\n{}0\r\n\r\n",
        chunk.repeat(8)
    ))
    .await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains(r#"{"error":"#) && answer.contains("max_body_bytes"), "{answer}");
    // A declared length past it: the same.
    let resp = app
        .client
        .post(app.url("/api/episodes"))
        .header("content-type", "application/json")
        .body("x".repeat(100 * 1024))
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 413);
    assert!(resp.text().await.expect("body").contains(r#""error""#));
    // A body that is not JSON: the extractor's words, as JSON.
    let resp = app
        .client
        .post(app.url("/api/episodes"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .expect("request");
    assert!(resp.status().is_client_error());
    let body: serde_json::Value = resp.json().await.expect("a JSON error");
    assert!(body["error"].is_string(), "{body}");

    // An id of 60,000 characters: the 404 names it, cut short.
    let id = "e".repeat(60_000);
    let resp = app.client.get(app.url(&format!("/api/episodes/{id}"))).send().await.expect("request");
    assert_eq!(resp.status(), 404);
    let body = resp.text().await.expect("body");
    assert!(body.len() < 3_000 && body.contains("more characters"), "{} bytes", body.len());

    // User information in Host is refused before anything else.
    let answer = raw(format!("GET /runs HTTP/1.1\r\nHost: evil.example@{at}\r\nConnection: close\r\n\r\n")).await;
    assert!(answer.starts_with("HTTP/1.1 400") && answer.contains("user information"), "{answer}");
}
