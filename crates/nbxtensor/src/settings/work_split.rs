//! How host work over `n` elements is split: inline below a threshold measured once per kind
//! of work, else one contiguous piece per pool thread.

use super::threads;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// The smallest size the measurement tries.
pub const SMALLEST_MEASURED: usize = 1 << 10;

/// What was measured for one kind of work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Threshold {
    /// The smallest size at which splitting beat running inline, or `None` where it never did.
    pub split_from: Option<usize>,
    /// The largest size measured.
    pub measured_up_to: usize,
}

/// How one call runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// In the calling thread, in one piece.
    Inline,
    /// One contiguous piece per pool thread.
    Pieces(Vec<Range<usize>>),
    /// The kind has no threshold for this size yet: measure it first (then plan again).
    Measure,
}

fn thresholds() -> &'static Mutex<HashMap<String, Threshold>> {
    static THRESHOLDS: OnceLock<Mutex<HashMap<String, Threshold>>> = OnceLock::new();
    THRESHOLDS.get_or_init(Default::default)
}

/// The threshold measured for `kind`, if any.
pub fn threshold(kind: &str) -> Option<Threshold> {
    thresholds().lock().unwrap_or_else(|e| e.into_inner()).get(kind).copied()
}

/// Keeps a measured threshold for `kind`.
pub fn record_threshold(kind: &str, threshold: Threshold) {
    thresholds().lock().unwrap_or_else(|e| e.into_inner()).insert(kind.to_string(), threshold);
}

/// Forgets every measured threshold (they are measured again at the next call).
pub fn forget_thresholds() {
    thresholds().lock().unwrap_or_else(|e| e.into_inner()).clear();
}

/// How a call of `n` elements of `kind` runs now: inline with one thread, inside a pool
/// thread (nested calls), or under the threshold; split above it; measured when the kind's
/// threshold is unknown or was measured only on sizes much smaller than `n`.
///
/// ```
/// use nbxtensor::settings::work_split::{plan, record_threshold, Plan, Threshold};
/// record_threshold("doc-example", Threshold { split_from: Some(5000), measured_up_to: 1 << 20 });
/// assert_eq!(plan("doc-example", 100), Plan::Inline);
/// assert!(matches!(plan("doc-example", 100_000), Plan::Pieces(_) | Plan::Inline)); // Inline on one core
/// assert_eq!(plan("never-measured", 100_000), if nbxtensor::settings::threads::threads() > 1 { Plan::Measure } else { Plan::Inline });
/// ```
pub fn plan(kind: &str, n: usize) -> Plan {
    let threads = threads::threads();
    if threads == 1 || n < 2 || rayon::current_thread_index().is_some() {
        return Plan::Inline;
    }
    match threshold(kind) {
        Some(Threshold { split_from: Some(from), .. }) if n >= from => Plan::Pieces(threads::split(n, threads)),
        Some(Threshold { split_from: Some(_), .. }) => Plan::Inline,
        Some(Threshold { split_from: None, measured_up_to }) if n <= measured_up_to.saturating_mul(2) => Plan::Inline,
        _ if n < SMALLEST_MEASURED => Plan::Inline,
        _ => Plan::Measure,
    }
}

/// Measures where splitting starts to pay for a kind of work, on sizes from
/// [`SMALLEST_MEASURED`] doubling up to `n`: `time(size, split)` runs the work once on
/// `0..size`, inline or split, and says how long it took. Each size is timed three times
/// each way (best kept); the threshold is the first size at which the split run is faster
/// by at least 10% at that size and the next.
pub fn measure(n: usize, mut time: impl FnMut(usize, bool) -> Result<Duration, String>) -> Result<Threshold, String> {
    let mut sizes = Vec::new();
    let mut size = SMALLEST_MEASURED.min(n);
    while size < n {
        sizes.push(size);
        size *= 2;
    }
    sizes.push(n);
    let mut best = |size: usize, split: bool| -> Result<Duration, String> {
        let mut fastest = Duration::MAX;
        for _ in 0..3 {
            fastest = fastest.min(time(size, split)?);
        }
        Ok(fastest)
    };
    let mut wins = Vec::with_capacity(sizes.len());
    for &size in &sizes {
        let (inline, split) = (best(size, false)?, best(size, true)?);
        wins.push(split.as_secs_f64() < 0.9 * inline.as_secs_f64());
    }
    let split_from = (0..sizes.len()).find(|&i| wins[i] && wins.get(i + 1).copied().unwrap_or(true)).map(|i| sizes[i]);
    Ok(Threshold { split_from, measured_up_to: n })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threshold_is_the_first_size_where_splitting_keeps_winning() {
        // inline costs size ns; splitting costs 20 µs + size/2 ns: it wins from 40 000 on
        let t = measure(1 << 20, |size, split| {
            Ok(Duration::from_nanos(if split { 20_000 + size as u64 / 2 } else { size as u64 }))
        })
        .unwrap();
        assert_eq!(t, Threshold { split_from: Some(1 << 16), measured_up_to: 1 << 20 });
        let never =
            measure(5000, |size, split| Ok(Duration::from_nanos(size as u64 + if split { 1_000_000 } else { 0 })))
                .unwrap();
        assert_eq!(never, Threshold { split_from: None, measured_up_to: 5000 });
        assert_eq!(measure(10, |_, _| Err("probe raised".into())).unwrap_err(), "probe raised");
    }

    #[test]
    fn plans_follow_the_recorded_threshold() {
        let _settings = crate::settings::test_lock();
        threads::set_threads(Some(4)).unwrap();
        record_threshold("unit-test", Threshold { split_from: Some(1000), measured_up_to: 4000 });
        assert_eq!(plan("unit-test", 999), Plan::Inline);
        assert_eq!(plan("unit-test", 1000), Plan::Pieces(vec![0..250, 250..500, 500..750, 750..1000]));
        record_threshold("unit-test", Threshold { split_from: None, measured_up_to: 4000 });
        assert_eq!(plan("unit-test", 8000), Plan::Inline);
        assert_eq!(plan("unit-test", 8001), Plan::Measure);
        assert_eq!(plan("unmeasured", SMALLEST_MEASURED - 1), Plan::Inline);
        threads::set_threads(Some(1)).unwrap();
        assert_eq!(plan("unmeasured", 1 << 20), Plan::Inline);
        threads::set_threads(None).unwrap();
    }
}
