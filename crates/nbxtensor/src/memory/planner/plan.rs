//! The plan: an offset per buffer in one arena, and how close the arena is to the bound.

use super::bound::lower_bound;
use super::greedy::{place, Order, Placement};
use super::problem::Problem;
use super::refine::refine;
use super::{BufferRequest, PlanError};

/// Where every buffer of a program lives in one arena.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Each request's offset in the arena, in request order; a multiple of the alignment.
    pub offsets: Vec<u64>,
    /// The arena's size in bytes: the end of the highest buffer.
    pub arena_bytes: u64,
    /// The most aligned bytes alive at one launch (pairs sharing memory in place counted once):
    /// no placement needs less.
    pub lower_bound: u64,
    /// The alignment the plan was made with.
    pub alignment: u64,
    /// For each request, whether it took over its `reuse_of` input in place (same offset).
    pub in_place: Vec<bool>,
    /// The placement order that gave this arena.
    pub order: Order,
    /// How many buffers the refinement moved ahead of that order (0: the order's own plan).
    pub moves: usize,
}

impl Plan {
    /// Plans `requests` in one arena, every offset a multiple of `alignment` (a power of two)
    /// and every size rounded up to it.
    ///
    /// Two buffers alive at a common launch never overlap, except a buffer and the input it
    /// takes over in place (`reuse_of`), which then share an offset. That pair is honoured when
    /// the output's aligned size fits in the input's and no earlier request took that input
    /// over. Greedy by size with best fit runs first; when its arena is above the lower bound,
    /// the other [`Order`]s run too and the smallest arena is kept, then buffers reaching the
    /// top of that arena are moved ahead in its order while that lowers it.
    ///
    /// A chain `a → b → c` (each read once, by the next launch): `a` and `c` share memory.
    /// ```
    /// use nbxtensor::memory::{BufferRequest, Plan};
    /// let requests = [
    ///     BufferRequest::new(0, 100, 0, 1),
    ///     BufferRequest::new(1, 100, 1, 2),
    ///     BufferRequest::new(2, 100, 2, 3),
    /// ];
    /// let plan = Plan::new(&requests, 64)?;
    /// assert_eq!((plan.arena_bytes, plan.lower_bound), (256, 256));
    /// assert_eq!(plan.offsets[0], plan.offsets[2]);
    /// assert_eq!(plan.ratio(), 1.0);
    /// assert!(Plan::new(&requests, 48).is_err());
    /// # Ok::<(), nbxtensor::memory::PlanError>(())
    /// ```
    pub fn new(requests: &[BufferRequest], alignment: u64) -> Result<Plan, PlanError> {
        let problem = Problem::new(requests, alignment)?;
        let lower_bound = lower_bound(requests, &problem);
        let sequence = Order::BySize.sort(&problem.units);
        let placement = place(requests, &problem, &sequence)?;
        let (mut order, mut sequence, mut placement) = (Order::BySize, sequence, placement);
        for &candidate in &Order::ALL[1..] {
            if placement.arena <= lower_bound {
                break;
            }
            let other_sequence = candidate.sort(&problem.units);
            let other = place(requests, &problem, &other_sequence)?;
            if other.arena < placement.arena {
                (order, sequence, placement) = (candidate, other_sequence, other);
            }
        }
        let (placement, moves) = refine(requests, &problem, lower_bound, sequence, placement)?;
        Ok(Plan::assemble(requests, &problem, lower_bound, order, placement, moves))
    }

    /// The plan greedy placement gives in one `order` alone (same rules as [`Plan::new`]).
    ///
    /// ```
    /// use nbxtensor::memory::{BufferRequest, Order, Plan};
    /// let requests = [BufferRequest::new(0, 64, 0, 0), BufferRequest::new(1, 64, 0, 0)];
    /// let plan = Plan::with_order(&requests, 64, Order::ByFirstUse)?;
    /// assert_eq!((plan.order, plan.arena_bytes, plan.offsets[1]), (Order::ByFirstUse, 128, 64));
    /// # Ok::<(), nbxtensor::memory::PlanError>(())
    /// ```
    pub fn with_order(requests: &[BufferRequest], alignment: u64, order: Order) -> Result<Plan, PlanError> {
        let problem = Problem::new(requests, alignment)?;
        let placement = place(requests, &problem, &order.sort(&problem.units))?;
        Ok(Plan::assemble(requests, &problem, lower_bound(requests, &problem), order, placement, 0))
    }

    /// The plan of a placement: each request gets its unit's offset.
    fn assemble(
        requests: &[BufferRequest],
        problem: &Problem,
        lower_bound: u64,
        order: Order,
        placement: Placement,
        moves: usize,
    ) -> Plan {
        let mut offsets = vec![0u64; requests.len()];
        for (unit, &offset) in problem.units.iter().zip(&placement.offsets) {
            for &member in &unit.members {
                offsets[member] = offset;
            }
        }
        Plan {
            offsets,
            arena_bytes: placement.arena,
            lower_bound,
            alignment: problem.alignment,
            in_place: problem.taken_from.iter().map(Option::is_some).collect(),
            order,
            moves,
        }
    }

    /// The arena over the lower bound: 1.0 is optimal (an empty plan is 1.0).
    ///
    /// ```
    /// use nbxtensor::memory::{BufferRequest, Plan};
    /// let plan = Plan::new(&[BufferRequest::new(0, 10, 0, 0)], 1)?;
    /// assert_eq!(plan.ratio(), 1.0);
    /// # Ok::<(), nbxtensor::memory::PlanError>(())
    /// ```
    pub fn ratio(&self) -> f64 {
        if self.lower_bound == 0 {
            1.0
        } else {
            self.arena_bytes as f64 / self.lower_bound as f64
        }
    }
}
