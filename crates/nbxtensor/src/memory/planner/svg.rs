//! The plan as a picture: launches across, addresses up, one rectangle per buffer.

use super::report::human_bytes;
use super::{BufferRequest, Plan};
use std::collections::HashSet;
use std::fmt::Write;

const WIDTH: f64 = 1000.0;
const HEIGHT: f64 = 560.0;
const LEFT: f64 = 100.0;
const TOP: f64 = 64.0;
const PLOT_WIDTH: f64 = 690.0;
const PLOT_HEIGHT: f64 = 430.0;
const TICKS: u64 = 5;

/// `text` with the five XML special characters escaped.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&apos;")
}

/// The scales from launches and bytes to picture coordinates.
struct Scale {
    first: usize,
    launches: f64,
    top_bytes: f64,
}

impl Scale {
    fn x(&self, launch: usize) -> f64 {
        LEFT + (launch - self.first) as f64 / self.launches * PLOT_WIDTH
    }

    fn y(&self, bytes: u64) -> f64 {
        TOP + PLOT_HEIGHT - bytes as f64 / self.top_bytes * PLOT_HEIGHT
    }
}

impl Plan {
    /// The plan as a standalone SVG picture: launches across, arena offsets up, one rectangle
    /// per buffer (coloured per buffer, labelled with its id where it has room, a dashed
    /// outline when it took over its input in place), the arena and the lower bound as
    /// horizontal lines, axis labels and a legend. `requests` are those the plan was made from.
    ///
    /// ```
    /// use nbxtensor::memory::{BufferRequest, Plan};
    /// let requests = [BufferRequest::new(0, 4096, 0, 2), BufferRequest::new(1, 1024, 1, 3)];
    /// let svg = Plan::new(&requests, 64)?.svg(&requests, "two buffers <demo>");
    /// assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    /// assert!(svg.contains("two buffers &lt;demo&gt;"));
    /// assert_eq!(svg.matches("<rect class=\"buffer\"").count(), 2);
    /// # Ok::<(), nbxtensor::memory::PlanError>(())
    /// ```
    pub fn svg(&self, requests: &[BufferRequest], title: &str) -> String {
        let first = requests.iter().map(|r| r.first_use).min().unwrap_or(0);
        let end = requests.iter().map(|r| r.last_use).max().map_or(first, |last| last.saturating_add(1));
        let scale = Scale {
            first,
            launches: (end - first).max(1) as f64,
            top_bytes: (self.arena_bytes.max(self.lower_bound) as f64 * 1.08).max(1.0),
        };
        let mut out = String::new();
        let _ = writeln!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
             viewBox=\"0 0 {WIDTH} {HEIGHT}\" font-family=\"sans-serif\" font-size=\"12\">"
        );
        let _ = writeln!(out, "<rect width=\"{WIDTH}\" height=\"{HEIGHT}\" fill=\"white\"/>");
        let _ =
            writeln!(out, "<text x=\"{LEFT}\" y=\"24\" font-size=\"17\" font-weight=\"bold\">{}</text>", escape(title));
        let _ = writeln!(
            out,
            "<text x=\"{LEFT}\" y=\"44\" fill=\"#444\">arena {}, lower bound {}, ratio {:.3} \
             ({} buffers, {}, alignment {})</text>",
            human_bytes(self.arena_bytes),
            human_bytes(self.lower_bound),
            self.ratio(),
            requests.len(),
            self.order.as_str(),
            self.alignment
        );
        self.buffers(&mut out, requests, &scale);
        axes(&mut out, &scale, end);
        self.lines_and_legend(&mut out, &scale);
        out.push_str("</svg>\n");
        out
    }

    /// One rectangle per buffer with room for it, with a tooltip and its id as a label.
    fn buffers(&self, out: &mut String, requests: &[BufferRequest], scale: &Scale) {
        let taken: HashSet<usize> = requests
            .iter()
            .zip(&self.in_place)
            .filter(|(_, &in_place)| in_place)
            .filter_map(|(r, _)| requests.iter().position(|input| Some(input.id) == r.reuse_of))
            .collect();
        for (index, ((r, &offset), &in_place)) in requests.iter().zip(&self.offsets).zip(&self.in_place).enumerate() {
            let aligned = r.bytes.div_ceil(self.alignment).saturating_mul(self.alignment);
            if aligned == 0 {
                continue;
            }
            // A pair sharing memory in place shares its launch: each gets half of it.
            let half = (scale.x(r.first_use.saturating_add(1)) - scale.x(r.first_use)) / 2.0;
            let x0 = scale.x(r.first_use) + if in_place { half } else { 0.0 };
            let x1 = scale.x(r.last_use.saturating_add(1)) - if taken.contains(&index) { half } else { 0.0 };
            let (y0, y1) = (scale.y(offset.saturating_add(aligned)), scale.y(offset));
            let hue = (index as f64 * 137.508) % 360.0;
            let dash =
                if in_place { " stroke-dasharray=\"4 2\" stroke-width=\"1.5\"" } else { " stroke-width=\"0.6\"" };
            let _ = writeln!(
                out,
                "<rect class=\"buffer\" x=\"{x0:.2}\" y=\"{y0:.2}\" width=\"{:.2}\" height=\"{:.2}\" \
                 fill=\"hsl({hue:.0},65%,68%)\" stroke=\"#222\"{dash}><title>buffer {}: {} bytes at offset {}, \
                 launches {}..={}{}</title></rect>",
                x1 - x0,
                y1 - y0,
                r.id,
                r.bytes,
                offset,
                r.first_use,
                r.last_use,
                match r.reuse_of {
                    Some(input) if in_place => format!(", in place of buffer {input}"),
                    _ => String::new(),
                }
            );
            let label = r.id.to_string();
            if x1 - x0 >= 7.5 * label.len() as f64 + 8.0 && y1 - y0 >= 13.0 {
                let _ = writeln!(
                    out,
                    "<text x=\"{:.2}\" y=\"{:.2}\" text-anchor=\"middle\" font-size=\"11\">{label}</text>",
                    (x0 + x1) / 2.0,
                    (y0 + y1) / 2.0 + 4.0
                );
            }
        }
    }

    /// The arena and lower-bound lines, and the legend beside the plot.
    fn lines_and_legend(&self, out: &mut String, scale: &Scale) {
        let right = LEFT + PLOT_WIDTH;
        let lines = [
            (self.arena_bytes, "#c62828", "", "arena"),
            (self.lower_bound, "#1565c0", " stroke-dasharray=\"7 4\"", "lower bound"),
        ];
        let legend_x = right + 24.0;
        for (row, (bytes, colour, dash, name)) in lines.into_iter().enumerate() {
            let y = scale.y(bytes);
            let _ = writeln!(
                out,
                "<line x1=\"{LEFT}\" y1=\"{y:.2}\" x2=\"{right}\" y2=\"{y:.2}\" stroke=\"{colour}\" stroke-width=\"2\"{dash}/>"
            );
            let ly = TOP + 10.0 + row as f64 * 40.0;
            let _ = writeln!(
                out,
                "<line x1=\"{legend_x}\" y1=\"{ly}\" x2=\"{}\" y2=\"{ly}\" stroke=\"{colour}\" stroke-width=\"2\"{dash}/>\n\
                 <text x=\"{}\" y=\"{}\">{name}</text>\n<text x=\"{}\" y=\"{}\" fill=\"#444\">{}</text>",
                legend_x + 28.0,
                legend_x + 36.0,
                ly + 4.0,
                legend_x + 36.0,
                ly + 20.0,
                human_bytes(bytes)
            );
        }
        let ly = TOP + 90.0;
        let _ = writeln!(
            out,
            "<rect x=\"{legend_x}\" y=\"{}\" width=\"28\" height=\"14\" fill=\"hsl(200,65%,68%)\" stroke=\"#222\" \
             stroke-width=\"0.6\"/>\n<text x=\"{}\" y=\"{}\">a buffer (its id)</text>\n\
             <rect x=\"{legend_x}\" y=\"{}\" width=\"28\" height=\"14\" fill=\"hsl(30,65%,68%)\" stroke=\"#222\" \
             stroke-width=\"1.5\" stroke-dasharray=\"4 2\"/>\n<text x=\"{}\" y=\"{}\">in place of its input</text>",
            ly - 10.0,
            legend_x + 36.0,
            ly + 1.0,
            ly + 20.0,
            legend_x + 36.0,
            ly + 31.0
        );
    }
}

/// A round step of at least `raw` bytes: 1, 2 or 5 times a power of ten of a binary unit.
fn tick_step(raw: f64) -> u64 {
    let mut unit = 1.0;
    while raw >= unit * 1024.0 {
        unit *= 1024.0;
    }
    let mut decade = 1.0;
    loop {
        for nice in [1.0, 2.0, 5.0] {
            if nice * decade * unit >= raw {
                return ((nice * decade * unit) as u64).max(1);
            }
        }
        decade *= 10.0;
    }
}

/// The plot frame, ticks on both axes and the axis titles.
fn axes(out: &mut String, scale: &Scale, end: usize) {
    let bottom = TOP + PLOT_HEIGHT;
    let _ = writeln!(
        out,
        "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{PLOT_WIDTH}\" height=\"{PLOT_HEIGHT}\" fill=\"none\" stroke=\"#888\"/>"
    );
    let launches = (end - scale.first) as u64;
    let step = launches.div_ceil(10).max(1) as usize;
    for launch in (scale.first..=end).step_by(step) {
        let x = scale.x(launch);
        let _ = writeln!(
            out,
            "<line x1=\"{x:.2}\" y1=\"{bottom}\" x2=\"{x:.2}\" y2=\"{}\" stroke=\"#888\"/>\n\
             <text x=\"{x:.2}\" y=\"{}\" text-anchor=\"middle\">{launch}</text>",
            bottom + 5.0,
            bottom + 19.0
        );
    }
    let step = tick_step(scale.top_bytes / TICKS as f64);
    for tick in (0..).map(|i| i * step).take_while(|&bytes| (bytes as f64) <= scale.top_bytes) {
        let y = scale.y(tick);
        let _ = writeln!(
            out,
            "<line x1=\"{}\" y1=\"{y:.2}\" x2=\"{LEFT}\" y2=\"{y:.2}\" stroke=\"#888\"/>\n\
             <text x=\"{}\" y=\"{:.2}\" text-anchor=\"end\">{}</text>",
            LEFT - 5.0,
            LEFT - 8.0,
            y + 4.0,
            human_bytes(tick)
        );
    }
    let _ = writeln!(
        out,
        "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">launch</text>\n\
         <text transform=\"translate(20 {:.1}) rotate(-90)\" text-anchor=\"middle\">offset in the arena</text>",
        LEFT + PLOT_WIDTH / 2.0,
        bottom + 42.0,
        TOP + PLOT_HEIGHT / 2.0
    );
}
