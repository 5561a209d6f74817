//! A line chart written as SVG by hand: axes, horizontal gridlines, a legend
//! above the plot (so it never covers data), shaded spans and labelled lines.
//! Small on purpose, so that running the examples needs no plotting crate.

use std::fmt::Write as _;

/// Text size of tick labels, axis titles and the legend, in px at the
/// picture's own size (GitHub shows it at about that size).
const TEXT: u32 = 14;
const TITLE: u32 = 17;
const GRID: &str = "#e3e3e3";
const INK: &str = "#333333";

/// How one line is drawn: its colour, width and dash pattern.
pub struct Stroke {
    pub color: &'static str,
    pub width: f64,
    /// An SVG `stroke-dasharray`, or `""` for a solid line.
    pub dash: &'static str,
}

/// One chart: the picture's size, the plot area and the ranges of the axes.
pub struct Chart {
    out: String,
    left: f64,
    top: f64,
    right: f64,
    bottom: f64,
    x_range: (f64, f64),
    y_range: (f64, f64),
}

impl Chart {
    /// A `width` x `height` picture titled `title`, with room above the plot
    /// for `legend_rows` legend entries.
    pub fn new(width: f64, height: f64, title: &str, legend_rows: usize) -> Chart {
        let mut out = String::new();
        let _ = write!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif" font-size="{TEXT}" fill="{INK}">
<rect width="100%" height="100%" fill="white"/>
<text x="{}" y="28" font-size="{TITLE}" text-anchor="middle" font-weight="bold">{}</text>
"#,
            width / 2.0,
            escape(title)
        );
        #[allow(clippy::cast_precision_loss)]
        let top = 48.0 + 22.0 * legend_rows as f64 + 12.0;
        Chart {
            out,
            left: 72.0,
            top,
            right: width - 24.0,
            bottom: height - 58.0,
            x_range: (0.0, 1.0),
            y_range: (0.0, 1.0),
        }
    }

    fn x(&self, value: f64) -> f64 {
        let (min, max) = self.x_range;
        self.left + (value - min) / (max - min) * (self.right - self.left)
    }

    fn y(&self, value: f64) -> f64 {
        let (min, max) = self.y_range;
        self.bottom - (value - min) / (max - min) * (self.bottom - self.top)
    }

    /// The axes: ranges, ticks every `x_step` and `y_step` (a gridline at
    /// each y tick, none for x), and their titles.
    pub fn axes(&mut self, x: (f64, f64, f64), y: (f64, f64, f64), x_title: &str, y_title: &str) {
        self.x_range = (x.0, x.1);
        self.y_range = (y.0, y.1);
        let (left, right, top, bottom) = (self.left, self.right, self.top, self.bottom);
        let mut tick = y.0;
        while tick <= y.1 {
            let at = self.y(tick);
            let _ = writeln!(
                self.out,
                r#"<line x1="{left}" x2="{right}" y1="{at:.1}" y2="{at:.1}" stroke="{GRID}" stroke-width="1"/><text x="{}" y="{:.1}" text-anchor="end">{tick}</text>"#,
                left - 8.0,
                at + 5.0
            );
            tick += y.2;
        }
        let mut tick = x.0;
        while tick <= x.1 {
            let at = self.x(tick);
            let _ = writeln!(
                self.out,
                r#"<line x1="{at:.1}" x2="{at:.1}" y1="{bottom}" y2="{}" stroke="{INK}"/><text x="{at:.1}" y="{}" text-anchor="middle">{tick}</text>"#,
                bottom + 5.0,
                bottom + 21.0
            );
            tick += x.2;
        }
        let _ = writeln!(
            self.out,
            r#"<line x1="{left}" x2="{right}" y1="{bottom}" y2="{bottom}" stroke="{INK}"/><line x1="{left}" x2="{left}" y1="{top}" y2="{bottom}" stroke="{INK}"/>
<text x="{}" y="{}" text-anchor="middle">{}</text>
<text transform="translate(20 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
            (left + right) / 2.0,
            bottom + 46.0,
            escape(x_title),
            (top + bottom) / 2.0,
            escape(y_title)
        );
    }

    /// A shaded span of x values, labelled inside the plot at its top.
    pub fn span(&mut self, from: f64, to: f64, label: &str) {
        let (x1, x2) = (self.x(from), self.x(to));
        let _ = writeln!(
            self.out,
            r##"<rect x="{x1:.1}" y="{}" width="{:.1}" height="{}" fill="#ececec"/><text x="{:.1}" y="{}" text-anchor="middle" font-style="italic">{}</text>"##,
            self.top,
            x2 - x1,
            self.bottom - self.top,
            (x1 + x2) / 2.0,
            self.top + 20.0,
            escape(label)
        );
    }

    /// A line through `points`, and its legend entry in row `row` above the
    /// plot.
    pub fn line(&mut self, points: &[(f64, f64)], stroke: &Stroke, row: usize, label: &str) {
        let path: Vec<String> = points
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", self.x(x), self.y(y)))
            .collect();
        let style = format!(
            r#"fill="none" stroke="{}" stroke-width="{}" stroke-dasharray="{}" stroke-linejoin="round""#,
            stroke.color,
            stroke.width,
            if stroke.dash.is_empty() {
                "none"
            } else {
                stroke.dash
            }
        );
        #[allow(clippy::cast_precision_loss)]
        let legend_y = 56.0 + 22.0 * row as f64;
        let _ = writeln!(
            self.out,
            r#"<polyline {style} points="{}"/>
<line x1="{}" x2="{}" y1="{legend_y}" y2="{legend_y}" {style}/><text x="{}" y="{}">{}</text>"#,
            path.join(" "),
            self.left,
            self.left + 36.0,
            self.left + 46.0,
            legend_y + 5.0,
            escape(label)
        );
    }

    /// The finished picture.
    pub fn finish(mut self) -> String {
        self.out.push_str("</svg>\n");
        self.out
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
