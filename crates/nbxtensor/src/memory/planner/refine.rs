//! The refinement of a greedy plan that misses the bound: buffers that reach the top of the
//! arena are moved ahead in the placement order while that lowers the arena.

use super::greedy::{place, Placement};
use super::problem::Problem;
use super::{BufferRequest, PlanError};

/// At most this many moves are tried per plan, so refining stays a small multiple of one pass.
const MAX_TRIES: usize = 24;

/// Moves, one at a time, a unit ending at the top of the arena to the front of `sequence`,
/// keeping each move that lowers the arena, until the arena reaches `lower_bound`, no such
/// move helps, or [`MAX_TRIES`] placements were tried. Returns the placement kept and the
/// number of moves kept.
pub(super) fn refine(
    requests: &[BufferRequest],
    problem: &Problem,
    lower_bound: u64,
    mut sequence: Vec<usize>,
    mut placement: Placement,
) -> Result<(Placement, usize), PlanError> {
    let mut moves = 0;
    let mut tries = 0;
    'rounds: while placement.arena > lower_bound && tries < MAX_TRIES {
        let at_top: Vec<usize> = sequence
            .iter()
            .enumerate()
            .filter(|&(at, &unit)| at > 0 && placement.offsets[unit] + problem.units[unit].size == placement.arena)
            .map(|(at, _)| at)
            .collect();
        for at in at_top {
            if tries == MAX_TRIES {
                break;
            }
            tries += 1;
            let mut moved = sequence.clone();
            let unit = moved.remove(at);
            moved.insert(0, unit);
            let other = place(requests, problem, &moved)?;
            if other.arena < placement.arena {
                (sequence, placement) = (moved, other);
                moves += 1;
                continue 'rounds;
            }
        }
        break;
    }
    Ok((placement, moves))
}
