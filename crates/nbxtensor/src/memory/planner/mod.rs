//! The static memory planner: an offset for every buffer of a program in one arena.
//!
//! A traced program gives one [`BufferRequest`] per buffer: its size, the launches between its
//! first and last use, and the input whose memory a kernel may take over in place. A [`Plan`]
//! puts every buffer at an offset of one arena so that buffers alive at a common launch never
//! overlap (a buffer and the input it takes over share theirs), and says how far the arena is
//! from the [lower bound](Plan::lower_bound), the most bytes alive at one launch.
//!
//! Placement is greedy with best fit (each buffer goes to the smallest gap that holds it among
//! the buffers alive with it), largest first; when that misses the bound, other [`Order`]s
//! are tried and the smallest arena is kept. [`Plan::report`] prints a plan and [`Plan::svg`]
//! draws it.
//!
//! ```
//! use nbxtensor::memory::{BufferRequest, Plan};
//! // x → scores → probs (softmax in place) → out
//! let requests = [
//!     BufferRequest::new(0, 1024, 0, 1),
//!     BufferRequest::new(1, 4096, 1, 2),
//!     BufferRequest::new(2, 4096, 2, 3).in_place_of(1),
//!     BufferRequest::new(3, 1024, 3, 4),
//! ];
//! let plan = Plan::new(&requests, 256)?;
//! assert_eq!(plan.offsets[1], plan.offsets[2]);
//! assert_eq!((plan.arena_bytes, plan.lower_bound), (5120, 5120));
//! # Ok::<(), nbxtensor::memory::PlanError>(())
//! ```

mod bound;
mod error;
mod greedy;
mod plan;
mod problem;
mod refine;
mod report;
mod request;
mod svg;

pub use error::PlanError;
pub use greedy::Order;
pub use plan::Plan;
pub use request::BufferRequest;
