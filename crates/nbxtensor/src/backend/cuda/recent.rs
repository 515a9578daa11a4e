//! What the op queued last on a stream may write, for the kernels that read a constant input
//! before they await their inputs.
//!
//! Under a programmatic launch (`launch.rs`) a kernel may start while the kernel before it on
//! its stream still runs; every kernel waits in `nbx_await_inputs` before it reads what that
//! kernel writes. Only the one kernel just before can still be running then (it awaited the
//! one before it in turn), so a kernel may read an input before that wait exactly when the
//! previous op could not have written it. The launch wrapper (`mod.rs`) notes the device bytes
//! each op reaches — its inputs (an op may write one in place), outputs and workspace — and a
//! kernel asks [`untouched_by_previous_op`] before it reads early. A graph replay may write
//! anything, and so does an op with more tensors than are noted.

use crate::shape::bytes::reach;
use crate::tensor::Tensor;
use std::sync::Mutex;

/// The most byte ranges noted for one op; an op reaching more counts as reaching everything.
const SPANS: usize = 12;

/// The device bytes one op may write: half-open address ranges, or all memory.
#[derive(Clone, Copy)]
enum Reached {
    Spans { spans: [(u64, u64); SPANS], count: usize },
    Everything,
}

impl Reached {
    fn holds(&self, span: (u64, u64)) -> bool {
        match self {
            Reached::Everything => true,
            Reached::Spans { spans, count } => spans[..*count].iter().any(|&(a, b)| a < span.1 && span.0 < b),
        }
    }
}

/// Per stream (its handle) the bytes its last op reached; a handful of streams at most.
static RECENT: Mutex<Vec<(u64, Reached)>> = Mutex::new(Vec::new());

fn set(stream: u64, reached: Reached) {
    let mut recent = RECENT.lock().unwrap_or_else(|e| e.into_inner());
    match recent.iter_mut().find(|(s, _)| *s == stream) {
        Some(slot) => slot.1 = reached,
        None => recent.push((stream, reached)),
    }
}

/// The device bytes a tensor's elements reach, from its first to past its last; its whole
/// storage where its layout does not say (a dtype of no whole byte per element).
fn span_of(t: &Tensor) -> Option<(u64, u64)> {
    let base = t.storage().as_ptr() as u64;
    let whole = (base, base + t.storage().len() as u64);
    let Ok(itemsize) = t.dtype().itemsize() else { return Some(whole) };
    match reach(t.shape(), t.strides(), t.offset()) {
        Ok(Some(r)) => {
            let low = base as i128 + r.low * itemsize as i128;
            let high = base as i128 + (r.high + 1) * itemsize as i128;
            Some((u64::try_from(low).unwrap_or(0), u64::try_from(high).unwrap_or(u64::MAX)))
        }
        Ok(None) => None,
        Err(_) => Some(whole),
    }
}

/// Notes the bytes an op reaches — its tensors and its workspace `(address, bytes)` — as what
/// the last op on `stream` may write.
pub fn note_op(stream: u64, tensors: &[&[Tensor]], workspace: (u64, usize)) {
    let mut spans = [(0, 0); SPANS];
    let mut count = 0;
    let (at, bytes) = workspace;
    let all = tensors.iter().flat_map(|t| t.iter()).filter_map(span_of);
    for span in all.chain((bytes > 0).then_some((at, at + bytes as u64))) {
        if count == SPANS {
            return set(stream, Reached::Everything);
        }
        spans[count] = span;
        count += 1;
    }
    set(stream, Reached::Spans { spans, count });
}

/// Notes that the last work queued on `stream` (a graph replay) may have written anything.
pub fn note_everything(stream: u64) {
    set(stream, Reached::Everything);
}

/// Forgets what was noted on `stream` (a capture's own stream, begun or ended).
pub fn forget(stream: u64) {
    RECENT.lock().unwrap_or_else(|e| e.into_inner()).retain(|(s, _)| *s != stream);
}

/// Whether the op queued last on `stream` could not have written any byte of `t`: then a
/// kernel queued next may read `t` before it awaits its inputs. True on a stream nothing
/// was noted on yet.
pub fn untouched_by_previous_op(stream: u64, t: &Tensor) -> bool {
    let Some(span) = span_of(t) else { return true };
    let recent = RECENT.lock().unwrap_or_else(|e| e.into_inner());
    recent.iter().find(|(s, _)| *s == stream).is_none_or(|(_, reached)| !reached.holds(span))
}

#[cfg(test)]
mod tests {
    use super::Reached;

    #[test]
    fn ranges_that_share_a_byte_are_reached() {
        let mut spans = [(0, 0); super::SPANS];
        spans[0] = (100, 200);
        spans[1] = (300, 308);
        let reached = Reached::Spans { spans, count: 2 };
        assert!(reached.holds((150, 160)) && reached.holds((199, 400)) && reached.holds((0, 101)));
        assert!(!reached.holds((200, 300)) && !reached.holds((308, 1000)) && !reached.holds((0, 100)));
        assert!(Reached::Everything.holds((1, 2)));
    }
}
