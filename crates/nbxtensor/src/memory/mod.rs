//! The memory layer: devices, the [`Allocator`] contract and the host's allocator (a GPU's
//! lives in its backend's folder), the [`Arena`] a planned program runs in, the static
//! [planner](Plan) that lays a program's buffers out in it, and the process memory limit
//! every allocator holds to.
//!
//! Every allocation is counted against the limit in force
//! ([`crate::settings::memory_limit`]): a request that would pass it fails with an error
//! naming the bytes asked for, the bytes in use and the limit, and the process goes on.

mod allocator;
mod arena;
mod device;
mod error;
mod fits;
mod host;
mod planner;
mod pool;

pub use allocator::Allocator;
pub use arena::{Arena, Region};
pub use device::{Device, DeviceKind};
pub use error::MemoryError;
pub use fits::check_fits;
pub use host::{host_allocator, HostAllocator, HostBlock, HostCharge, HOST_ALIGNMENT};
pub use planner::{BufferRequest, Order, Plan, PlanError};
pub use pool::size_class;
