//! The plan as text: the arena, the bound, their ratio, and one row per buffer.

use super::{BufferRequest, Plan};
use std::fmt::Write;

/// `bytes` in the largest binary unit that keeps it at least 1 (`"1.5 KiB"`, `"2 KiB"`, `"12 B"`).
pub(super) fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    let value = format!("{value:.1}");
    format!("{} {}", value.strip_suffix(".0").unwrap_or(&value), UNITS[unit])
}

impl Plan {
    /// The plan as a table: arena, lower bound and ratio, then per buffer its id, bytes,
    /// offset, first and last use and the buffer it took over in place (`-` for none).
    /// `requests` are those the plan was made from.
    ///
    /// ```
    /// use nbxtensor::memory::{BufferRequest, Plan};
    /// let requests = [BufferRequest::new(4, 2048, 0, 1), BufferRequest::new(5, 2048, 1, 2).in_place_of(4)];
    /// let report = Plan::new(&requests, 64)?.report(&requests);
    /// assert!(report.contains("arena        2048 bytes (2 KiB)"));
    /// assert!(report.contains("ratio        1.000"));
    /// assert!(report.lines().last().unwrap().ends_with("4"));
    /// # Ok::<(), nbxtensor::memory::PlanError>(())
    /// ```
    pub fn report(&self, requests: &[BufferRequest]) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "plan of {} buffers ({}, {} refining moves, alignment {})",
            requests.len(),
            self.order.as_str(),
            self.moves,
            self.alignment
        );
        let _ = writeln!(out, "arena        {} bytes ({})", self.arena_bytes, human_bytes(self.arena_bytes));
        let _ = writeln!(out, "lower bound  {} bytes ({})", self.lower_bound, human_bytes(self.lower_bound));
        let _ = writeln!(out, "ratio        {:.3}", self.ratio());
        let _ = write!(out, "{:>8} {:>14} {:>14} {:>7} {:>7}  in place of", "id", "bytes", "offset", "first", "last");
        for ((r, offset), in_place) in requests.iter().zip(&self.offsets).zip(&self.in_place) {
            let input = match r.reuse_of {
                Some(input) if *in_place => input.to_string(),
                _ => "-".to_string(),
            };
            let _ = write!(
                out,
                "\n{:>8} {:>14} {:>14} {:>7} {:>7}  {input}",
                r.id, r.bytes, offset, r.first_use, r.last_use
            );
        }
        out
    }
}
