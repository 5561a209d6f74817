//! `cargo run --release --example herd [-- --json] [--svg PATH]
//! [--outage-svg PATH] [--tail-svg PATH] [--runs N] [--only SCENARIO]`
//!
//! Thousands of tokio tasks under a paused clock, calling `#[retry]`
//! functions against an in-process simulated service, so every figure comes
//! from the real attribute and runtime. Four scenarios under each of the
//! four jitters, and one of guards against an outage:
//!
//! - `burst`: 1000 clients fail at t = 0 and retry once with a 2 s ceiling;
//!   the busiest 100 ms window of retry arrivals.
//! - `waves`: 1000 clients fail at t = 0 and make 3 retries each (base
//!   100 ms, cap 2 s), every attempt failing; the busiest 10 ms window.
//! - `contention`: the optimistic-concurrency model of the AWS Architecture
//!   Blog post "Exponential Backoff And Jitter": N clients each write one row
//!   once, reading its version then writing conditionally, every message
//!   delayed by |Normal(10 ms, 2 ms)|; total writes and the time until the
//!   last client succeeds, averaged over `--runs` runs (100).
//! - `outage`: 1000 clients with `max = 4` against a service down for 20 s,
//!   with and without a shared `RetryBudget::new(100, 0.1)`, with a
//!   shared `CircuitBreaker::new()`, and with the budget a fleet should use,
//!   `RetryBudget::ratio(0.1, 10 s)`; calls and amplification (calls per
//!   request). JSON lines say which with `guard`: `none`, `budget`,
//!   `breaker`, `recommended`.
//! - `recovery`: the outage as a service sees it. Requests arrive steadily,
//!   50 a second for 60 s; the service is down from 10 s to 30 s, and a call
//!   to it then fails after 1 s (a timeout), while a healthy call takes
//!   20 ms. Clients make up to 4 attempts (base 100 ms, cap 2 s, full
//!   jitter) under each guard: none, the budget, the breaker with its
//!   defaults, the ratio budget. Calls per request and the callers' mean
//!   wait during the outage, and the time from the service's recovery until
//!   every request succeeds again; `--outage-svg PATH` draws calls per
//!   second for the four guards. One run per guard (the runs are deterministic).
//! - `tail`: the tail at scale. 10,000 requests each fan out to 100 leaves
//!   (a uniform 5 to 15 ms, 1% of leaf requests 1,000 ms), without hedging
//!   and with `hedge = "p95"`, `max = 3`; latency percentiles, the share of
//!   requests that waited for a slow leaf, and the extra leaf load;
//!   `--tail-svg PATH` draws both latency distributions.
//!
//! - `metastable`: overload that outlives its trigger. A server of 50
//!   workers (capacity 1000 requests a second) loses half of them for 5,
//!   10 or 20 s; N client processes (10, 100, 1000) send first attempts at
//!   0.7, 0.8 or 0.9 of its capacity through their own `RetryLayer` over a
//!   1 s timeout, under each fleet policy (`none`, `naive`, `jitter`,
//!   `budget`, `breaker`, `adaptive`, `recommended`; and, when named,
//!   `recommended` in part: `ratio`, without `ServerLayer`, `server_layer`,
//!   no retries with it, and `long_deadline`, a 3 s deadline); seconds until
//!   goodput recovers, amplification, wasted work (docs/overload.md).
//!   `--policy`, `--clients`, `--load` and `--trigger` (comma-separated
//!   lists) pick part of the grid; `--jobs N` runs N points at a time
//!   (default: every core, at most 4; each takes up to half a gigabyte);
//!   `--adaptive K,SECONDS` sets the adaptive throttle's K and window;
//!   `--series` adds each run's counts per second (first attempts,
//!   attempts, goodput) as one more JSON line; `--metastable-svg PATH`
//!   draws goodput and attempts over time at N = 1000.
//!
//! `--only SCENARIO` runs one scenario (`burst`, `waves`, `contention`,
//! `outage`, `recovery`, `tail`, `metastable`); all but `metastable`, whose
//! grid takes minutes, run without it.
//!
//! The files: `simulation.rs` (the simulated service, the clients, a paused
//! runtime), `scenarios.rs` (burst, waves, contention, outage),
//! `recovery.rs` (the outage as a service sees it), `plot.rs` (the two
//! pictures, drawn by `svg.rs`), `tail.rs` and `tail_plot.rs` (the tail at
//! scale and its picture), `metastable.rs` and `metastable_plot.rs` (the
//! overload model and its picture); this file reads the arguments and
//! prints the figures.

mod metastable;
mod metastable_plot;
mod plot;
mod recovery;
mod scenarios;
mod simulation;
mod svg;
mod tail;
mod tail_plot;

use std::fmt::Write as _;
use std::time::Duration;

use metastable::grid as metastable_grid;
use plot::{draw, draw_recovery};
use recovery::{recovery, REQUESTS_PER_SECOND};
use scenarios::{burst, contention, outage, waves};
use simulation::{busiest, Guard, STRATEGIES};
use tail::tail;
use tail_plot::draw_tail;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let json = args.iter().any(|a| a == "--json");
    let svg = args
        .iter()
        .position(|a| a == "--svg")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let runs_scenario = |name: &str| only.as_deref().is_none_or(|only| only == name);
    let outage_svg = args
        .iter()
        .position(|a| a == "--outage-svg")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let tail_svg = args
        .iter()
        .position(|a| a == "--tail-svg")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let runs = args
        .iter()
        .position(|a| a == "--runs")
        .and_then(|i| args.get(i + 1))
        .map(|n| n.parse::<u32>())
        .transpose()?
        .unwrap_or(100)
        .max(1);

    let mut table = String::new();
    let mut line = |json_line: String, text: String| {
        if json {
            println!("{json_line}");
        } else {
            table.push_str(&text);
            table.push('\n');
        }
    };

    for (scenario, window) in [
        ("burst", Duration::from_millis(100)),
        ("waves", Duration::from_millis(10)),
    ] {
        if !runs_scenario(scenario) {
            continue;
        }
        for jitter in STRATEGIES {
            let arrivals = if scenario == "burst" {
                burst(jitter)
            } else {
                waves(jitter)
            };
            let retries = arrivals.len();
            let peak = busiest(arrivals, window);
            let window_ms = window.as_millis();
            line(
                format!(r#"{{"scenario":"{scenario}","strategy":"{jitter}","clients":1000,"busiest":{peak},"window_ms":{window_ms}}}"#),
                format!("{scenario:<10} {jitter:<13} {retries:>5} retries, busiest {window_ms:>3} ms window: {peak:>4}"),
            );
        }
    }
    for jitter in STRATEGIES {
        if !runs_scenario("contention") {
            break;
        }
        for clients in (10..=190).step_by(10) {
            let (calls, time_ms) = contention(jitter, clients, runs);
            line(
                format!(r#"{{"scenario":"contention","strategy":"{jitter}","clients":{clients},"calls":{calls:.1},"time_ms":{time_ms:.1}}}"#),
                format!("contention {jitter:<13} {clients:>4} clients: {calls:>8.1} writes, last success at {time_ms:>8.1} ms"),
            );
        }
    }
    for jitter in STRATEGIES {
        if !runs_scenario("outage") {
            break;
        }
        for guard in Guard::ALL {
            let calls = outage(jitter, guard);
            #[allow(clippy::cast_precision_loss)]
            let amplification = calls as f64 / 1000.0;
            let with_budget = guard == Guard::Budget;
            let name = guard.name();
            line(
                format!(r#"{{"scenario":"outage","strategy":"{jitter}","clients":1000,"guard":"{name}","budget":{with_budget},"calls":{calls},"amplification":{amplification:.3}}}"#),
                format!("outage     {jitter:<13} guard {name:<11} {calls:>5} calls, amplification {amplification:.3}"),
            );
        }
    }
    let mut recoveries = Vec::new();
    if runs_scenario("recovery") {
        for guard in Guard::ALL {
            let run = recovery(guard);
            let name = guard.name();
            let per_request = run.calls_per_request;
            let wait_ms = run.mean_wait.as_secs_f64() * 1000.0;
            let at_once = run.at_once * 100.0;
            let recovered_ms = run.recovered_after.as_secs_f64() * 1000.0;
            line(
                format!(r#"{{"scenario":"recovery","strategy":"full","requests_per_second":{REQUESTS_PER_SECOND},"guard":"{name}","calls_per_request":{per_request:.3},"mean_wait_ms":{wait_ms:.1},"answered_at_once_percent":{at_once:.1},"recovered_after_ms":{recovered_ms:.0}}}"#),
                format!("recovery   full          guard {name:<11} {per_request:>6.3} calls per request in the outage, callers wait {wait_ms:>5.0} ms ({at_once:>4.1}% at once), all requests succeed {recovered_ms:>6.0} ms after recovery"),
            );
            recoveries.push((guard, run));
        }
    }
    let metastable_svg = value("--metastable-svg");
    let mut metastable_runs = Vec::new();
    // Only when named: its grid takes minutes.
    let metastable = only.as_deref() == Some("metastable");
    if metastable || metastable_svg.is_some() {
        let grid = metastable_grid::from_args(&args)?;
        let mut points = if metastable {
            grid.points()
        } else {
            Vec::new()
        };
        if metastable_svg.is_some() {
            for point in metastable_plot::points() {
                if !points.iter().any(|p| metastable_grid::same(p, &point)) {
                    points.push(point);
                }
            }
        }
        metastable_runs = metastable_grid::run_all(points, grid.jobs);
        let series = args.iter().any(|a| a == "--series");
        for run in &metastable_runs {
            if metastable && grid.shows(&run.point) {
                line(run.json(), run.text());
                if series {
                    line(run.series_json(), run.series_json());
                }
            }
        }
    }
    let mut tails = Vec::new();
    if runs_scenario("tail") {
        for hedged in [false, true] {
            let run = tail(hedged, 19);
            line(run.json(), run.text());
            tails.push(run);
        }
    }
    if !json {
        let mut header = String::new();
        writeln!(
            header,
            "herd: 1000 simulated clients per scenario, paused clock, real #[retry] functions"
        )?;
        writeln!(header, "(contention: mean of {runs} runs per row)\n")?;
        print!("{header}{table}");
    }
    if let Some(path) = outage_svg {
        draw_recovery(&path, &recoveries)?;
        if !json {
            println!("\nwrote {path}");
        }
    }
    if let Some(path) = metastable_svg {
        metastable_plot::draw(&path, &metastable_runs)?;
        if !json {
            println!("\nwrote {path}");
        }
    }
    if let Some(path) = tail_svg {
        draw_tail(&path, &tails)?;
        if !json {
            println!("\nwrote {path}");
        }
    }
    if let Some(path) = svg {
        draw(&path)?;
        if !json {
            println!("\nwrote {path}");
        }
    }
    Ok(())
}
