//! The error of the planner: a request set that cannot be planned, naming the buffer at fault.

/// Why a set of buffer requests could not be planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The alignment is 0 or not a power of two.
    #[error("alignment {0} is not a power of two")]
    Alignment(u64),
    /// A buffer whose last use comes before its first.
    #[error("buffer {id}: last use {last_use} comes before first use {first_use}")]
    Lifetime {
        /// The buffer's id.
        id: usize,
        /// Its first use.
        first_use: usize,
        /// Its last use.
        last_use: usize,
    },
    /// Two requests with the same id.
    #[error("buffer {0} is requested twice")]
    DuplicateId(usize),
    /// A `reuse_of` naming no request.
    #[error("buffer {id} takes over buffer {input} in place, but no buffer {input} is requested")]
    UnknownInput {
        /// The buffer asking.
        id: usize,
        /// The id it names.
        input: usize,
    },
    /// A `reuse_of` naming the buffer itself.
    #[error("buffer {0} takes over itself in place")]
    SelfReuse(usize),
    /// A `reuse_of` naming a buffer whose last use is not the launch producing this one.
    #[error(
        "buffer {id} (first use {first_use}) takes over buffer {input} in place, \
         but buffer {input} is last used at launch {input_last_use}"
    )]
    NotAdjacent {
        /// The buffer asking.
        id: usize,
        /// Its first use (the launch producing it).
        first_use: usize,
        /// The id it names.
        input: usize,
        /// The last use of that input.
        input_last_use: usize,
    },
    /// A size or an arena that does not fit in 64 bits once aligned.
    #[error("buffer {id}: {bytes} bytes overflow 64 bits once aligned to {alignment} and stacked")]
    Overflow {
        /// The buffer being sized or placed.
        id: usize,
        /// Its size in bytes.
        bytes: u64,
        /// The alignment in force.
        alignment: u64,
    },
}
