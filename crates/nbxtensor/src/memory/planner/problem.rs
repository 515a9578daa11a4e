//! The validated problem: aligned sizes, and the in-place chains the planner honours, each
//! placed as one unit.

use super::{BufferRequest, PlanError};
use std::collections::HashMap;

/// Buffers sharing one address: a chain `a → b → c` where each takes over the previous in place.
#[derive(Debug, Clone)]
pub(super) struct Unit {
    /// Request indices, in chain order.
    pub members: Vec<usize>,
    /// The first use of the chain's first buffer.
    pub first: usize,
    /// The last use of the chain's last buffer.
    pub last: usize,
    /// The largest aligned size of the chain.
    pub size: u64,
}

impl Unit {
    /// Whether this unit and `other` are alive at a common launch.
    pub fn overlaps(&self, other: &Unit) -> bool {
        self.first <= other.last && other.first <= self.last
    }
}

/// A request set checked and grouped for placement.
#[derive(Debug, Clone)]
pub(super) struct Problem {
    /// Every offset is a multiple of it, every size is rounded up to it.
    pub alignment: u64,
    /// Each request's size rounded up to the alignment.
    pub sizes: Vec<u64>,
    /// For each request, the index of the request whose memory it takes over, when honoured.
    pub taken_from: Vec<Option<usize>>,
    /// The units to place.
    pub units: Vec<Unit>,
}

impl Problem {
    /// Checks `requests` and `alignment` and groups the honoured in-place pairs into chains.
    ///
    /// A pair is honoured when the output's aligned size fits in the input's, the input is not
    /// already taken over by an earlier request, and the pair closes no cycle.
    pub fn new(requests: &[BufferRequest], alignment: u64) -> Result<Problem, PlanError> {
        if !alignment.is_power_of_two() {
            return Err(PlanError::Alignment(alignment));
        }
        let mut index_of = HashMap::with_capacity(requests.len());
        let mut sizes = Vec::with_capacity(requests.len());
        for (index, r) in requests.iter().enumerate() {
            if r.last_use < r.first_use {
                return Err(PlanError::Lifetime { id: r.id, first_use: r.first_use, last_use: r.last_use });
            }
            if index_of.insert(r.id, index).is_some() {
                return Err(PlanError::DuplicateId(r.id));
            }
            let size = r.bytes.checked_add(alignment - 1).map(|b| b & !(alignment - 1));
            sizes.push(size.ok_or(PlanError::Overflow { id: r.id, bytes: r.bytes, alignment })?);
        }
        let mut inputs = vec![None; requests.len()];
        for (index, r) in requests.iter().enumerate() {
            let Some(input) = r.reuse_of else { continue };
            let &source = index_of.get(&input).ok_or(PlanError::UnknownInput { id: r.id, input })?;
            if source == index {
                return Err(PlanError::SelfReuse(r.id));
            }
            let input_last_use = requests[source].last_use;
            if input_last_use != r.first_use {
                return Err(PlanError::NotAdjacent { id: r.id, first_use: r.first_use, input, input_last_use });
            }
            inputs[index] = Some(source);
        }
        let taken_from = honoured_pairs(&inputs, &sizes);
        let units = chains(requests, &sizes, &taken_from);
        Ok(Problem { alignment, sizes, taken_from, units })
    }
}

/// The pairs honoured, in request order: for each output, the input it takes over.
fn honoured_pairs(inputs: &[Option<usize>], sizes: &[u64]) -> Vec<Option<usize>> {
    let mut root: Vec<usize> = (0..inputs.len()).collect();
    fn find(root: &mut [usize], mut i: usize) -> usize {
        while root[i] != i {
            root[i] = root[root[i]];
            i = root[i];
        }
        i
    }
    let mut taken = vec![false; inputs.len()];
    let mut taken_from = vec![None; inputs.len()];
    for (output, input) in inputs.iter().enumerate() {
        let Some(input) = *input else { continue };
        let (a, b) = (find(&mut root, output), find(&mut root, input));
        if !taken[input] && sizes[output] <= sizes[input] && a != b {
            taken[input] = true;
            taken_from[output] = Some(input);
            root[a] = b;
        }
    }
    taken_from
}

/// The chains of honoured pairs, one unit each (a buffer alone is a chain of one).
fn chains(requests: &[BufferRequest], sizes: &[u64], taken_from: &[Option<usize>]) -> Vec<Unit> {
    let mut taker = vec![None; requests.len()];
    for (output, input) in taken_from.iter().enumerate() {
        if let Some(input) = *input {
            taker[input] = Some(output);
        }
    }
    let mut units = Vec::new();
    for start in (0..requests.len()).filter(|&i| taken_from[i].is_none()) {
        let mut members = vec![start];
        let mut at = start;
        while let Some(next) = taker[at] {
            members.push(next);
            at = next;
        }
        let size = members.iter().map(|&m| sizes[m]).max().unwrap_or(0);
        let last = members.iter().map(|&m| requests[m].last_use).max().unwrap_or(requests[start].last_use);
        units.push(Unit { members, first: requests[start].first_use, last, size });
    }
    units
}
