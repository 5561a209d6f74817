//! `retry_after`, `on_ok` and `retry_after_ok`: the server's word on a
//! paused clock, against the hint, the cap and the deadline.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use retry_runtime::retry;
use tokio::time::Instant;

#[derive(Debug, Clone, PartialEq)]
struct Busy {
    call: u32,
    retry_after: Option<Duration>,
}

fn hint(error: &Busy) -> Option<Duration> {
    error.retry_after
}

/// Fails every call with the given hint; records when each call started.
struct Server {
    hint: Option<Duration>,
    started: Instant,
    calls: std::cell::RefCell<Vec<Duration>>,
}

impl Server {
    fn new(hint: Option<Duration>) -> Self {
        Server {
            hint,
            started: Instant::now(),
            calls: std::cell::RefCell::default(),
        }
    }

    fn call(&self) -> Result<(), Busy> {
        let mut calls = self.calls.borrow_mut();
        calls.push(self.started.elapsed());
        Err(Busy {
            call: u32::try_from(calls.len()).unwrap(),
            retry_after: self.hint,
        })
    }

    fn gaps(&self) -> Vec<Duration> {
        self.calls
            .borrow()
            .windows(2)
            .map(|w| w[1] - w[0])
            .collect()
    }
}

#[retry(max = 3, base = "100ms", cap = "10s", jitter = "none", retry_after = hint)]
async fn hinted(server: &Server) -> Result<(), Busy> {
    server.call()
}

#[retry(max = 3, base = "100ms", cap = "10s", jitter = "none", deadline = "5s", retry_after = hint)]
async fn hinted_with_deadline(server: &Server) -> Result<(), Busy> {
    server.call()
}

#[tokio::test(start_paused = true)]
async fn the_wait_is_at_least_the_hint_plus_up_to_a_tenth() {
    for _ in 0..50 {
        let server = Server::new(Some(Duration::from_secs(2)));
        assert_eq!(hinted(&server).await.unwrap_err().call, 3);
        for gap in server.gaps() {
            assert!(
                gap >= Duration::from_secs(2) && gap <= Duration::from_millis(2201),
                "{gap:?}"
            );
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_hint_shorter_than_the_backoff_keeps_the_backoff() {
    #[retry(max = 2, base = "3s", jitter = "none", retry_after = hint)]
    async fn slow_backoff(server: &Server) -> Result<(), Busy> {
        server.call()
    }
    let server = Server::new(Some(Duration::from_millis(500)));
    slow_backoff(&server).await.unwrap_err();
    let gap = server.gaps()[0];
    assert!(
        gap >= Duration::from_secs(3) && gap <= Duration::from_millis(3051),
        "{gap:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn no_hint_falls_back_to_the_backoff() {
    let server = Server::new(None);
    hinted(&server).await.unwrap_err();
    assert_eq!(
        server.gaps(),
        [Duration::from_millis(100), Duration::from_millis(200)]
    );
}

#[tokio::test(start_paused = true)]
async fn a_hint_longer_than_the_cap_returns_the_error_at_once() {
    let server = Server::new(Some(Duration::from_secs(11)));
    let start = Instant::now();
    let error = hinted(&server).await.unwrap_err();
    assert_eq!(
        error,
        Busy {
            call: 1,
            retry_after: Some(Duration::from_secs(11))
        }
    );
    assert_eq!(start.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn a_hint_that_would_pass_the_deadline_returns_the_error_at_once() {
    // 4s is under the cap; the first wait (4s to 4.4s) fits the 5s deadline,
    // the second would end at 8s or later.
    let server = Server::new(Some(Duration::from_secs(4)));
    let start = Instant::now();
    assert_eq!(hinted_with_deadline(&server).await.unwrap_err().call, 2);
    let elapsed = start.elapsed();
    assert!(
        elapsed >= Duration::from_secs(4) && elapsed <= Duration::from_millis(4401),
        "{elapsed:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_thousand_clients_told_the_same_hint_spread_out() {
    retry_runtime::seed_thread_rng(0x5eed);
    #[retry(max = 2, base = "100ms", cap = "1m", retry_after = hint)]
    async fn client(arrivals: Rc<Cell<Vec<Duration>>>, start: Instant) -> Result<(), Busy> {
        let mut seen = arrivals.take();
        seen.push(start.elapsed());
        arrivals.set(seen);
        Err(Busy {
            call: 0,
            retry_after: Some(Duration::from_secs(30)),
        })
    }
    let arrivals = Rc::new(Cell::new(Vec::new()));
    let start = Instant::now();
    let clients: Vec<_> = (0..1000)
        .map(|_| client(Rc::clone(&arrivals), start))
        .collect();
    for result in futures_join_all(clients).await {
        assert!(result.is_err());
    }
    let retries: Vec<Duration> = arrivals
        .take()
        .into_iter()
        .filter(|t| !t.is_zero())
        .collect();
    assert_eq!(retries.len(), 1000);
    assert!(retries
        .iter()
        .all(|t| *t >= Duration::from_secs(30) && *t <= Duration::from_millis(33_001)));
    // Spread over 3s: about 33 per 100ms window, never the whole herd at once.
    let mut windows = [0u32; 31];
    for t in &retries {
        let index = usize::try_from((t.as_millis() - 30_000) / 100)
            .unwrap()
            .min(30);
        windows[index] += 1;
    }
    let busiest = *windows.iter().max().unwrap();
    assert!(
        busiest < 80,
        "busiest 100ms window had {busiest} of 1000 retries: {windows:?}"
    );
}

/// Runs every future concurrently on this thread and collects the outputs.
async fn futures_join_all<F>(futures: Vec<F>) -> Vec<F::Output>
where
    F: std::future::Future + 'static,
    F::Output: 'static,
{
    let local = tokio::task::LocalSet::new();
    let handles: Vec<_> = futures
        .into_iter()
        .map(|future| local.spawn_local(future))
        .collect();
    local
        .run_until(async move {
            let mut outputs = Vec::new();
            for handle in handles {
                outputs.push(handle.await.unwrap());
            }
            outputs
        })
        .await
}

/// A response as an HTTP client returns it: `Ok` even for a 503.
#[derive(Debug, Clone, PartialEq)]
struct Response {
    status: u16,
    retry_after: Option<Duration>,
    call: u32,
}

fn unavailable(response: &Response) -> bool {
    response.status == 503 || response.status == 429
}

#[retry(max = 4, base = "100ms", jitter = "none", on_ok = unavailable, retry_after_ok = |r| r.retry_after)]
async fn get(statuses: &[u16], calls: &Cell<u32>) -> Result<Response, Busy> {
    let call = calls.get() + 1;
    calls.set(call);
    let status = statuses[usize::try_from(call - 1).unwrap().min(statuses.len() - 1)];
    let retry_after = (status == 429).then_some(Duration::from_secs(1));
    Ok(Response {
        status,
        retry_after,
        call,
    })
}

#[tokio::test(start_paused = true)]
async fn ok_values_on_ok_accepts_are_retried() {
    let calls = Cell::new(0);
    let start = Instant::now();
    let response = get(&[503, 503, 200], &calls).await.unwrap();
    assert_eq!(response.status, 200);
    assert_eq!(response.call, 3);
    assert_eq!(start.elapsed(), Duration::from_millis(300));
}

#[tokio::test(start_paused = true)]
async fn the_last_retried_ok_value_is_returned_as_it_came() {
    let calls = Cell::new(0);
    let response = get(&[503], &calls).await.unwrap();
    assert_eq!(
        response,
        Response {
            status: 503,
            retry_after: None,
            call: 4
        }
    );
}

#[tokio::test(start_paused = true)]
async fn the_hint_is_read_from_ok_values() {
    let calls = Cell::new(0);
    let start = Instant::now();
    assert_eq!(get(&[429, 200], &calls).await.unwrap().call, 2);
    let elapsed = start.elapsed();
    assert!(
        elapsed >= Duration::from_secs(1) && elapsed <= Duration::from_millis(1101),
        "{elapsed:?}"
    );
}
