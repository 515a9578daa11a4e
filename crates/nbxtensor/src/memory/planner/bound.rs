//! Live bytes over time, and the lower bound no placement can beat.

use super::problem::Problem;
use super::BufferRequest;

/// The live bytes at every launch where some interval starts (where a peak can be), as
/// `(launch, bytes)` in launch order; intervals are `(first, last, bytes)`, inclusive.
pub(super) fn load_profile(intervals: impl IntoIterator<Item = (usize, usize, u64)>) -> Vec<(usize, u64)> {
    let mut events: Vec<(usize, bool, u64)> = Vec::new();
    for (first, last, bytes) in intervals {
        events.push((first, false, bytes));
        events.push((last, true, bytes));
    }
    // At one launch, every start comes before every end: both are alive there.
    events.sort_unstable();
    let mut profile: Vec<(usize, u64)> = Vec::new();
    let mut live = 0u64;
    for (launch, ends, bytes) in events {
        if ends {
            live = live.saturating_sub(bytes);
        } else {
            live = live.saturating_add(bytes);
            match profile.last_mut() {
                Some(last) if last.0 == launch => last.1 = live,
                _ => profile.push((launch, live)),
            }
        }
    }
    profile
}

/// The most aligned bytes alive at one launch; a buffer taking over another in place is
/// counted from the launch after the one they share, as its bytes fit in those of its input.
pub(super) fn lower_bound(requests: &[BufferRequest], problem: &Problem) -> u64 {
    let intervals = requests.iter().enumerate().filter_map(|(i, r)| match problem.taken_from[i] {
        None => Some((r.first_use, r.last_use, problem.sizes[i])),
        Some(_) if r.last_use > r.first_use => Some((r.first_use + 1, r.last_use, problem.sizes[i])),
        Some(_) => None,
    });
    load_profile(intervals).iter().map(|&(_, bytes)| bytes).max().unwrap_or(0)
}
