//! The two pictures, as SVG line charts.

use std::time::Duration;

use retry_runtime::Jitter;

use crate::recovery::{Recovery, DOWN_FROM, DOWN_UNTIL, SECONDS};
use crate::scenarios::waves;
use crate::simulation::Guard;

/// Calls reaching the service per second through the outage and recovery,
/// one line per guard, as an SVG line chart.
pub fn draw_recovery(
    path: &str,
    runs: &[(Guard, Recovery)],
) -> Result<(), Box<dyn std::error::Error>> {
    use plotters::prelude::*;
    let top = runs
        .iter()
        .flat_map(|(_, run)| run.calls_per_second.iter().copied())
        .max()
        .unwrap_or(1);
    let root = SVGBackend::new(path, (900, 460)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "50 requests/s, service down from 10 s to 30 s: calls reaching it per second",
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(0u32..SECONDS, 0u32..top + top / 10)?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc("calls per second")
        .disable_x_mesh()
        .draw()?;
    let outage = u32::try_from(DOWN_FROM.as_secs()).unwrap_or(0)
        ..u32::try_from(DOWN_UNTIL.as_secs()).unwrap_or(0);
    chart.draw_series(std::iter::once(Rectangle::new(
        [(outage.start, 0), (outage.end, top + top / 10)],
        RGBColor(230, 230, 230).filled(),
    )))?;
    for (guard, run) in runs {
        let (color, label) = match guard {
            Guard::None => (
                RED,
                format!(
                    "no guard: {:.2} calls per request in the outage",
                    run.calls_per_request
                ),
            ),
            Guard::Budget => (
                BLUE,
                format!("RetryBudget::new(100, 0.1): {:.2}", run.calls_per_request),
            ),
            Guard::Breaker => (
                RGBColor(0, 140, 0),
                format!(
                    "CircuitBreaker::new(): {:.3}, back {:.1} s after recovery",
                    run.calls_per_request,
                    run.recovered_after.as_secs_f64()
                ),
            ),
        };
        let points: Vec<(u32, u32)> = (0u32..).zip(run.calls_per_second.iter().copied()).collect();
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))?
            .label(label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.9))
        .draw()?;
    root.present()?;
    Ok(())
}

/// Retry arrivals per 10 ms over the first second, no jitter against full
/// jitter, as an SVG line chart.
pub fn draw(path: &str) -> Result<(), Box<dyn std::error::Error>> {
    use plotters::prelude::*;
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

    let root = SVGBackend::new(path, (900, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "1000 clients fail at t = 0: retry arrivals per 10 ms (3 retries, base 100 ms)",
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(0u32..1000u32, 0u32..top + top / 10)?;
    chart
        .configure_mesh()
        .x_desc("time since the failure (ms)")
        .y_desc("retries arriving per 10 ms")
        .disable_x_mesh()
        .draw()?;
    let series = |counts: &[u32]| {
        counts
            .iter()
            .enumerate()
            .map(|(bin, count)| (u32::try_from(bin).unwrap_or(0) * 10, *count))
            .collect::<Vec<_>>()
    };
    chart
        .draw_series(LineSeries::new(series(&none), RED.stroke_width(2)))?
        .label("no jitter: three spikes of 1000")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED.stroke_width(2)));
    chart
        .draw_series(LineSeries::new(series(&full), BLUE.stroke_width(2)))?
        .label("full jitter: the same retries, spread out")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE.stroke_width(2)));
    chart
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.9))
        .draw()?;
    root.present()?;
    Ok(())
}
