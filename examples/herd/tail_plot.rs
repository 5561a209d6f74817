//! `docs/tail.svg` (`--tail-svg PATH`): the latency distribution of the
//! tail scenario's requests with and without hedging, as a CDF on a log
//! axis, where a tail shows as the distance between the lines at the top.

use std::fmt::Write as _;

use crate::tail::{Tail, FANOUT, REQUESTS};

const WIDTH: f64 = 880.0;
const HEIGHT: f64 = 520.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = WIDTH - 30.0;
const TOP: f64 = 110.0;
const BOTTOM: f64 = HEIGHT - 60.0;
/// The x axis, in ms: 2 ms to 2 s.
const X_MIN: f64 = 2.0;
const X_MAX: f64 = 2000.0;
const INK: &str = "#333333";
const GRID: &str = "#e3e3e3";

fn x(ms: f64) -> f64 {
    let (min, max) = (X_MIN.log10(), X_MAX.log10());
    LEFT + (ms.clamp(X_MIN, X_MAX).log10() - min) / (max - min) * (RIGHT - LEFT)
}

fn y(share: f64) -> f64 {
    BOTTOM - share * (BOTTOM - TOP)
}

/// Writes the picture of `runs` (the unhedged run first) to `path`.
pub fn draw_tail(path: &str, runs: &[Tail]) -> Result<(), Box<dyn std::error::Error>> {
    let mut out = String::new();
    writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="Helvetica, Arial, sans-serif" font-size="14" fill="{INK}">
<rect width="100%" height="100%" fill="white"/>
<text x="{}" y="28" font-size="17" font-weight="bold" text-anchor="middle">{} requests, each waiting for {FANOUT} leaves (1% of leaf requests take 1 s)</text>"#,
        WIDTH / 2.0,
        thousands(REQUESTS)
    )?;
    for percent in (0..=100).step_by(10) {
        let at = y(f64::from(percent) / 100.0);
        writeln!(
            out,
            r#"<line x1="{LEFT}" x2="{RIGHT}" y1="{at:.1}" y2="{at:.1}" stroke="{GRID}"/><text x="{}" y="{:.1}" text-anchor="end">{percent}%</text>"#,
            LEFT - 8.0,
            at + 5.0
        )?;
    }
    for ms in [2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000] {
        let at = x(f64::from(ms));
        writeln!(
            out,
            r#"<line x1="{at:.1}" x2="{at:.1}" y1="{TOP}" y2="{BOTTOM}" stroke="{GRID}"/><text x="{at:.1}" y="{}" text-anchor="middle">{ms}</text>"#,
            BOTTOM + 21.0
        )?;
    }
    writeln!(
        out,
        r#"<line x1="{LEFT}" x2="{RIGHT}" y1="{BOTTOM}" y2="{BOTTOM}" stroke="{INK}"/><line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{BOTTOM}" stroke="{INK}"/>
<text x="{}" y="{}" text-anchor="middle">request latency, ms (log scale)</text>
<text transform="translate(20 {:.1}) rotate(-90)" text-anchor="middle">requests answered</text>"#,
        (LEFT + RIGHT) / 2.0,
        BOTTOM + 46.0,
        (TOP + BOTTOM) / 2.0
    )?;
    let styles = [("#c0392b", "none"), ("#1f6fb2", "7 4")];
    for (row, (run, (color, dash))) in runs.iter().zip(styles).enumerate() {
        let points = steps(&run.latencies);
        let label = match run.hedge {
            "none" => "no hedging".to_owned(),
            hedge => format!(
                "hedge = \"{hedge}\", max = 3 ({:.1}% more leaf requests)",
                run.extra_load * 100.0
            ),
        };
        #[allow(clippy::cast_precision_loss)]
        let legend = 52.0 + 24.0 * row as f64;
        writeln!(
            out,
            r#"<polyline fill="none" stroke="{color}" stroke-width="2.5" stroke-dasharray="{dash}" points="{points}"/>
<line x1="{LEFT}" x2="{}" y1="{legend}" y2="{legend}" stroke="{color}" stroke-width="2.5" stroke-dasharray="{dash}"/><text x="{}" y="{}">{label}: p50 {} ms, p99 {} ms, p99.9 {} ms</text>"#,
            LEFT + 36.0,
            LEFT + 46.0,
            legend + 5.0,
            run.percentile(50.0),
            run.percentile(99.0),
            run.percentile(99.9),
        )?;
    }
    out.push_str("</svg>\n");
    std::fs::write(path, out)?;
    Ok(())
}

/// `10000` as `10,000`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// The CDF of sorted latencies as the points of a step line.
fn steps(sorted: &[f64]) -> String {
    let mut points = vec![format!("{:.1},{:.1}", x(X_MIN), y(0.0))];
    #[allow(clippy::cast_precision_loss)]
    let n = sorted.len() as f64;
    let mut below = 0.0;
    let mut index = 0;
    while index < sorted.len() {
        let value = sorted[index];
        let mut end = index;
        while end < sorted.len() && sorted[end] == value {
            end += 1;
        }
        #[allow(clippy::cast_precision_loss)]
        let share = end as f64 / n;
        points.push(format!("{:.1},{:.1}", x(value), y(below)));
        points.push(format!("{:.1},{:.1}", x(value), y(share)));
        below = share;
        index = end;
    }
    points.push(format!("{:.1},{:.1}", x(X_MAX), y(below)));
    points.join(" ")
}
