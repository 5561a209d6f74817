//! `docs/metastable.svg` (`--metastable-svg`): goodput and attempts per
//! second through the trigger, at N = 1000, 0.8 C and a 10 s trigger, for
//! the fleets that tell the story.

use crate::metastable::{Fleet, Point, Run, CAPACITY, RUN_S, TRIGGER_AT};
use crate::svg::{Chart, Stroke};

const DRAWN: [Fleet; 5] = [
    Fleet::None,
    Fleet::Naive,
    Fleet::Breaker,
    Fleet::Adaptive,
    Fleet::Recommended,
];
const CLIENTS: u32 = 1000;
const LOAD: f64 = 0.8;
const TRIGGER_S: u64 = 10;

/// The runs the picture needs.
pub fn points() -> Vec<Point> {
    DRAWN
        .iter()
        .map(|&fleet| Point {
            fleet,
            clients: CLIENTS,
            load: LOAD,
            trigger_s: TRIGGER_S,
        })
        .collect()
}

fn stroke(fleet: Fleet) -> Stroke {
    let (color, width, dash) = match fleet {
        Fleet::None => ("#e69f00", 5.0, ""),
        Fleet::Naive => ("#d55e00", 2.0, ""),
        Fleet::Breaker => ("#000000", 1.5, "6 3"),
        Fleet::Adaptive => ("#0072b2", 2.0, ""),
        _ => ("#009e73", 3.0, ""),
    };
    Stroke { color, width, dash }
}

pub fn draw(path: &str, runs: &[Run]) -> Result<(), Box<dyn std::error::Error>> {
    let drawn: Vec<&Run> = DRAWN
        .iter()
        .filter_map(|&fleet| {
            runs.iter().find(|run| {
                let p = run.point;
                p.fleet == fleet
                    && p.clients == CLIENTS
                    && (p.load - LOAD).abs() < 1e-9
                    && p.trigger_s == TRIGGER_S
            })
        })
        .collect();
    #[allow(clippy::cast_precision_loss)]
    let seconds = RUN_S as f64;
    let trigger = (TRIGGER_AT as f64, (TRIGGER_AT + TRIGGER_S) as f64);
    let series = |counts: &[u64]| -> Vec<(f64, f64)> {
        (0u32..)
            .zip(counts)
            .map(|(second, &count)| (f64::from(second), count as f64))
            .collect()
    };

    let mut goodput = Chart::new(
        960.0,
        520.0,
        &format!(
            "{CLIENTS} clients at {LOAD} of capacity; half the workers stop for {TRIGGER_S} s: requests answered in time"
        ),
        drawn.len(),
    );
    goodput.axes(
        (0.0, seconds, 10.0),
        (0.0, CAPACITY * 1.1, 200.0),
        "time (s)",
        "goodput (requests per second)",
    );
    goodput.span(trigger.0, trigger.1, "trigger");
    for (row, run) in drawn.iter().enumerate() {
        let recovery = run.recovery_s.map_or_else(
            || "never recovers".to_owned(),
            |s| format!("recovers in {s} s"),
        );
        let label = format!("{}: {recovery}", run.point.fleet.name());
        goodput.line(
            &series(&run.series.goodput),
            &stroke(run.point.fleet),
            row,
            &label,
        );
    }

    let top = drawn
        .iter()
        .flat_map(|run| run.series.attempts.iter().copied())
        .max()
        .unwrap_or(1);
    let mut attempts = Chart::new(
        960.0,
        520.0,
        "attempts sent per second (first attempts and retries)",
        drawn.len(),
    );
    #[allow(clippy::cast_precision_loss)]
    let y_max = ((top as f64 * 1.1) / 500.0).ceil() * 500.0;
    attempts.axes(
        (0.0, seconds, 10.0),
        (0.0, y_max, 500.0),
        "time (s)",
        "attempts per second",
    );
    attempts.span(trigger.0, trigger.1, "trigger");
    for (row, run) in drawn.iter().enumerate() {
        let label = format!(
            "{}: {:.2}x the first attempts at the peak, {:.1} s of the server's work wasted",
            run.point.fleet.name(),
            run.amplification_peak,
            run.wasted_s
        );
        attempts.line(
            &series(&run.series.attempts),
            &stroke(run.point.fleet),
            row,
            &label,
        );
    }

    let both = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"960\" height=\"1040\" viewBox=\"0 0 960 1040\">\n{}{}</svg>\n",
        goodput.finish(),
        attempts.finish().replacen("<svg ", "<svg y=\"520\" ", 1)
    );
    std::fs::write(path, both)?;
    Ok(())
}
