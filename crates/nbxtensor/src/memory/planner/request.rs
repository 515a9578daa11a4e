//! What the planner is asked: one [`BufferRequest`] per buffer of a program.

/// One buffer of a program: its size and the launches that use it.
///
/// Lifetimes are inclusive launch indices: the buffer is written at `first_use` (or is an
/// input of that launch) and read for the last time at `last_use`. Weights are not requests:
/// the arena holds what a run produces.
///
/// ```
/// use nbxtensor::memory::BufferRequest;
/// let scores = BufferRequest::new(7, 4096, 3, 4);
/// let probs = BufferRequest::new(8, 4096, 4, 5).in_place_of(7);
/// assert_eq!((probs.first_use, probs.reuse_of), (scores.last_use, Some(7)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BufferRequest {
    /// The buffer's id, unique among the requests of one plan.
    pub id: usize,
    /// Its size in bytes (0 is allowed; it then takes no memory).
    pub bytes: u64,
    /// The first launch using it (the one producing it).
    pub first_use: usize,
    /// The last launch using it, inclusive.
    pub last_use: usize,
    /// The id of an input whose memory this buffer may take over in place: the kernel producing
    /// this buffer at `first_use` declared it safe, and that input's last use is `first_use`.
    pub reuse_of: Option<usize>,
}

impl BufferRequest {
    /// A buffer of `bytes` alive from launch `first_use` to `last_use` inclusive, taking over
    /// no input.
    pub fn new(id: usize, bytes: u64, first_use: usize, last_use: usize) -> BufferRequest {
        BufferRequest { id, bytes, first_use, last_use, reuse_of: None }
    }

    /// The same request, declared safe to take over the memory of buffer `input` in place.
    pub fn in_place_of(self, input: usize) -> BufferRequest {
        BufferRequest { reuse_of: Some(input), ..self }
    }
}
