//! Greedy placement with best fit, in one of several orders.

use super::bound::load_profile;
use super::problem::{Problem, Unit};
use super::{BufferRequest, PlanError};
use std::cmp::Reverse;

/// The order in which the greedy planner places buffers; the plan keeps the order that gave
/// the smallest arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Order {
    /// Largest first, ties by first use: the baseline ("greedy by size").
    BySize,
    /// Buffers alive at the most crowded launches first, largest first within them
    /// ("greedy by breadth").
    ByBreadth,
    /// Largest size × lifetime first.
    ByArea,
    /// Longest-lived first, then largest.
    ByLifetime,
    /// In launch order, largest first within a launch.
    ByFirstUse,
}

impl Order {
    /// Every order, the baseline first.
    pub const ALL: [Order; 5] = [Order::BySize, Order::ByBreadth, Order::ByArea, Order::ByLifetime, Order::ByFirstUse];

    /// The order's name, as reports print it.
    ///
    /// ```
    /// use nbxtensor::memory::Order;
    /// assert_eq!(Order::BySize.as_str(), "greedy by size");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Order::BySize => "greedy by size",
            Order::ByBreadth => "greedy by breadth",
            Order::ByArea => "greedy by size x lifetime",
            Order::ByLifetime => "greedy by lifetime",
            Order::ByFirstUse => "greedy by first use",
        }
    }

    /// The unit indices of `units` in this order (ties by index, so the result is deterministic).
    pub(super) fn sort(self, units: &[Unit]) -> Vec<usize> {
        let mut order: Vec<usize> = (0..units.len()).collect();
        let lifetime = |u: &Unit| (u.last - u.first) as u128 + 1;
        match self {
            Order::BySize => order.sort_by_key(|&i| (Reverse(units[i].size), units[i].first, i)),
            Order::ByArea => order.sort_by_key(|&i| (Reverse(units[i].size as u128 * lifetime(&units[i])), i)),
            Order::ByLifetime => order.sort_by_key(|&i| (Reverse(lifetime(&units[i])), Reverse(units[i].size), i)),
            Order::ByFirstUse => order.sort_by_key(|&i| (units[i].first, Reverse(units[i].size), i)),
            Order::ByBreadth => {
                let profile = load_profile(units.iter().map(|u| (u.first, u.last, u.size)));
                let peak: Vec<(u64, usize)> = units.iter().map(|u| crowdest_launch(&profile, u)).collect();
                order.sort_by_key(|&i| (Reverse(peak[i].0), peak[i].1, Reverse(units[i].size), i));
            }
        }
        order
    }
}

/// The most live bytes during `unit`'s lifetime, and the first launch where they are reached.
fn crowdest_launch(profile: &[(usize, u64)], unit: &Unit) -> (u64, usize) {
    // The load at `unit.first` is that of the last profile point at or before it.
    let from = profile.partition_point(|&(launch, _)| launch <= unit.first).saturating_sub(1);
    let to = profile.partition_point(|&(launch, _)| launch <= unit.last);
    let mut best = (0, unit.first);
    for &(launch, bytes) in &profile[from..to] {
        if bytes > best.0 {
            best = (bytes, launch.max(unit.first));
        }
    }
    best
}

/// A placement: each unit's offset, and the arena holding them all.
#[derive(Debug, Clone)]
pub(super) struct Placement {
    pub offsets: Vec<u64>,
    pub arena: u64,
}

/// Places the units of `problem` in the `sequence` given (unit indices), each at the smallest gap that fits it among the
/// placed units alive at a common launch (the lowest end above them when no gap fits).
pub(super) fn place(requests: &[BufferRequest], problem: &Problem, sequence: &[usize]) -> Result<Placement, PlanError> {
    let units = &problem.units;
    let mut offsets = vec![0u64; units.len()];
    let mut placed: Vec<usize> = Vec::with_capacity(units.len());
    let mut arena = 0u64;
    let mut blocking: Vec<(u64, u64)> = Vec::new();
    for &unit in sequence {
        let size = units[unit].size;
        blocking.clear();
        blocking.extend(
            placed
                .iter()
                .filter(|&&p| units[p].overlaps(&units[unit]))
                .map(|&p| (offsets[p], offsets[p] + units[p].size)),
        );
        blocking.sort_unstable();
        let mut best: Option<(u64, u64)> = None;
        let mut top = 0u64;
        for &(start, end) in &blocking {
            if start >= top {
                let gap = start - top;
                if gap >= size && best.is_none_or(|(_, smallest)| gap < smallest) {
                    best = Some((top, gap));
                }
            }
            top = top.max(end);
        }
        let offset = best.map_or(top, |(offset, _)| offset);
        let end = offset.checked_add(size).ok_or_else(|| {
            let id = requests[units[unit].members[0]].id;
            PlanError::Overflow { id, bytes: size, alignment: problem.alignment }
        })?;
        offsets[unit] = offset;
        arena = arena.max(end);
        placed.push(unit);
    }
    Ok(Placement { offsets, arena })
}
