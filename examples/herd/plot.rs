//! The two pictures: `docs/herd.svg` (`--svg`) and `docs/outage.svg`
//! (`--outage-svg`).

use std::time::Duration;

use retry_runtime::Jitter;

use crate::recovery::{Recovery, DOWN_FROM, DOWN_UNTIL, REQUESTS_PER_SECOND};
use crate::scenarios::waves;
use crate::simulation::Guard;
use crate::svg::{Chart, Stroke};

/// Calls reaching the service per second through the outage and recovery,
/// one line per guard.
pub fn draw_recovery(
    path: &str,
    runs: &[(Guard, Recovery)],
) -> Result<(), Box<dyn std::error::Error>> {
    let top = runs
        .iter()
        .flat_map(|(_, run)| run.calls_per_second.iter().copied())
        .max()
        .unwrap_or(1);
    let seconds = runs
        .first()
        .map_or(1, |(_, run)| run.calls_per_second.len());
    let mut chart = Chart::new(
        880.0,
        520.0,
        &format!(
            "{REQUESTS_PER_SECOND} requests a second through a 20 s outage: calls reaching the service"
        ),
        runs.len(),
    );
    let (y_max, y_step) = nice(f64::from(top));
    #[allow(clippy::cast_precision_loss)]
    let x_max = seconds as f64;
    chart.axes(
        (0.0, x_max, 10.0),
        (0.0, y_max, y_step),
        "time (s)",
        "calls per second",
    );
    chart.span(
        DOWN_FROM.as_secs_f64(),
        DOWN_UNTIL.as_secs_f64(),
        "service down: each call fails after 1 s",
    );
    // Outside the outage the three lines lie on top of each other: the widest
    // is drawn first and each narrower one over it, in its own dash pattern.
    for (row, (guard, run)) in runs.iter().enumerate() {
        let per_request = run.calls_per_request;
        let (stroke, label) = match guard {
            Guard::None => (
                Stroke { color: "#e69f00", width: 7.0, dash: "" },
                format!("no guard: {per_request:.2} calls per request during the outage"),
            ),
            Guard::Budget => (
                Stroke { color: "#0072b2", width: 3.5, dash: "12 6" },
                format!(
                    "RetryBudget::new(100, 0.1): {per_request:.2} calls per request during the outage"
                ),
            ),
            Guard::Recommended => (
                Stroke { color: "#009e73", width: 2.5, dash: "3 3" },
                format!(
                    "RetryBudget::ratio(0.1, 10 s): {per_request:.2} calls per request during the outage"
                ),
            ),
            Guard::Breaker => (
                Stroke { color: "#000000", width: 1.5, dash: "" },
                format!(
                    "CircuitBreaker::new(): {per_request:.3} calls per request during the outage; all succeed {:.1} s after recovery",
                    run.recovered_after.as_secs_f64()
                ),
            ),
        };
        let points: Vec<(f64, f64)> = (0u32..)
            .zip(&run.calls_per_second)
            .map(|(second, &calls)| (f64::from(second), f64::from(calls)))
            .collect();
        chart.line(&points, &stroke, row, &label);
    }
    std::fs::write(path, chart.finish())?;
    Ok(())
}

/// Retry arrivals per 10 ms over the first second, no jitter against full
/// jitter.
pub fn draw(path: &str) -> Result<(), Box<dyn std::error::Error>> {
    let bins = 100;
    let histogram = |arrivals: Vec<Duration>| {
        let mut counts = vec![0u32; bins];
        for t in arrivals {
            if let Some(count) = usize::try_from(t.as_millis() / 10)
                .ok()
                .and_then(|bin| counts.get_mut(bin))
            {
                *count += 1;
            }
        }
        counts
    };
    let none = histogram(waves(Jitter::None));
    let full = histogram(waves(Jitter::Full));
    let top = none.iter().chain(&full).copied().max().unwrap_or(1);

    let mut chart = Chart::new(
        880.0,
        460.0,
        "1000 clients fail at t = 0 and retry 3 times (base 100 ms): retries arriving per 10 ms",
        2,
    );
    let (y_max, y_step) = nice(f64::from(top));
    chart.axes(
        (0.0, 1000.0, 100.0),
        (0.0, y_max, y_step),
        "time since the failure (ms)",
        "retries per 10 ms",
    );
    let series = |counts: &[u32]| -> Vec<(f64, f64)> {
        (0u32..)
            .zip(counts)
            .map(|(bin, &count)| (f64::from(bin * 10), f64::from(count)))
            .collect()
    };
    chart.line(
        &series(&none),
        &Stroke {
            color: "#d55e00",
            width: 2.5,
            dash: "",
        },
        0,
        "no jitter: every client waits the same, three spikes of 1000",
    );
    chart.line(
        &series(&full),
        &Stroke {
            color: "#0072b2",
            width: 2.5,
            dash: "",
        },
        1,
        "full jitter: the same 3000 retries, spread out",
    );
    std::fs::write(path, chart.finish())?;
    Ok(())
}

/// The top of an axis with room above `top`, and a round tick step that
/// gives it four to six gridlines.
fn nice(top: f64) -> (f64, f64) {
    let magnitude = 10f64.powf(top.max(1.0).log10().floor());
    let step = [0.1, 0.2, 0.25, 0.5, 1.0, 2.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|step| top / step <= 6.0)
        .unwrap_or(magnitude);
    (((top * 1.15) / step).ceil() * step, step)
}
