//! Properties of the static memory planner on random request sets, checked by brute force:
//! no two buffers alive at a common launch overlap unless they share memory in place, every
//! offset is aligned, every buffer lies in the arena, the bound is the brute-force peak of
//! live bytes, and the arena is never below it nor above the best single greedy order.

use nbxtensor::memory::{BufferRequest, Order, Plan};
use proptest::prelude::*;

/// `bytes` rounded up to `alignment`.
fn aligned(bytes: u64, alignment: u64) -> u64 {
    bytes.div_ceil(alignment) * alignment
}

/// Random requests: ids that are not indices, sizes including 0, lifetimes of up to 8
/// launches, and some outputs declared in place of an earlier buffer (starting where it ends).
fn requests() -> impl Strategy<Value = Vec<BufferRequest>> {
    let one =
        (prop_oneof![Just(0u64), 1..5000u64], 0..30usize, 0..8usize, proptest::option::weighted(0.3, 0..1000usize));
    proptest::collection::vec(one, 0..40).prop_map(|raw| {
        let mut out: Vec<BufferRequest> = Vec::with_capacity(raw.len());
        for (index, (bytes, first, length, input)) in raw.into_iter().enumerate() {
            let id = index * 3 + 7;
            let request = match input.filter(|_| index > 0).map(|k| k % index) {
                Some(input) => {
                    let start = out[input].last_use;
                    BufferRequest::new(id, bytes, start, start + length).in_place_of(out[input].id)
                }
                None => BufferRequest::new(id, bytes, first, first + length),
            };
            out.push(request);
        }
        out
    })
}

/// The index of the request a request names in place, if any.
fn input_index(requests: &[BufferRequest], r: &BufferRequest) -> Option<usize> {
    r.reuse_of.and_then(|id| requests.iter().position(|q| q.id == id))
}

/// For each request, the smallest index of the requests it shares memory with in place.
fn groups(requests: &[BufferRequest], plan: &Plan) -> Vec<usize> {
    let mut group: Vec<usize> = (0..requests.len()).collect();
    // Inputs come before their outputs here, so one pass in order settles every chain.
    for (i, r) in requests.iter().enumerate() {
        if plan.in_place[i] {
            group[i] = group[input_index(requests, r).expect("an honoured pair names a request")];
        }
    }
    group
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn plans_are_valid(requests in requests(), shift in 0u32..=8) {
        let alignment = 1u64 << shift;
        let plan = Plan::new(&requests, alignment).unwrap();
        prop_assert_eq!(plan.offsets.len(), requests.len());
        let sizes: Vec<u64> = requests.iter().map(|r| aligned(r.bytes, alignment)).collect();
        let group = groups(&requests, &plan);
        for (i, a) in requests.iter().enumerate() {
            prop_assert_eq!(plan.offsets[i] % alignment, 0);
            prop_assert!(plan.offsets[i] + sizes[i] <= plan.arena_bytes);
            for (j, b) in requests.iter().enumerate().skip(i + 1) {
                let alive_together = a.first_use <= b.last_use && b.first_use <= a.last_use;
                let disjoint = plan.offsets[i] + sizes[i] <= plan.offsets[j] || plan.offsets[j] + sizes[j] <= plan.offsets[i];
                if alive_together && group[i] != group[j] && sizes[i] > 0 && sizes[j] > 0 {
                    prop_assert!(disjoint, "buffers {} and {} overlap\n{}", a.id, b.id, plan.report(&requests));
                }
            }
        }
        prop_assert!(plan.arena_bytes >= plan.lower_bound);
    }

    #[test]
    fn in_place_pairs_follow_the_rule(requests in requests(), shift in 0u32..=8) {
        let alignment = 1u64 << shift;
        let plan = Plan::new(&requests, alignment).unwrap();
        // Honoured exactly when the output fits in its input and no earlier request took it.
        let mut taken = vec![false; requests.len()];
        for (i, r) in requests.iter().enumerate() {
            let expected = match input_index(&requests, r) {
                Some(input) => !taken[input] && aligned(r.bytes, alignment) <= aligned(requests[input].bytes, alignment),
                None => false,
            };
            prop_assert_eq!(plan.in_place[i], expected, "buffer {}", r.id);
            if let (true, Some(input)) = (expected, input_index(&requests, r)) {
                taken[input] = true;
                prop_assert_eq!(plan.offsets[i], plan.offsets[input]);
            }
        }
    }

    #[test]
    fn the_bound_is_the_peak_of_live_bytes(requests in requests(), shift in 0u32..=8) {
        let alignment = 1u64 << shift;
        let plan = Plan::new(&requests, alignment).unwrap();
        let group = groups(&requests, &plan);
        let end = requests.iter().map(|r| r.last_use).max().unwrap_or(0);
        // At each launch, each group of buffers sharing memory counts its largest live member.
        let mut peak = 0;
        for launch in 0..=end {
            let mut largest = vec![0u64; requests.len()];
            for (i, r) in requests.iter().enumerate().filter(|(_, r)| r.first_use <= launch && launch <= r.last_use) {
                largest[group[i]] = largest[group[i]].max(aligned(r.bytes, alignment));
            }
            peak = peak.max(largest.iter().sum::<u64>());
        }
        prop_assert_eq!(plan.lower_bound, peak);
    }

    #[test]
    fn the_plan_is_no_worse_than_any_single_order(requests in requests(), shift in 0u32..=8) {
        let alignment = 1u64 << shift;
        let plan = Plan::new(&requests, alignment).unwrap();
        for order in Order::ALL {
            let single = Plan::with_order(&requests, alignment, order).unwrap();
            prop_assert!(plan.arena_bytes <= single.arena_bytes, "{} gives {} < {}", order.as_str(), single.arena_bytes, plan.arena_bytes);
            prop_assert_eq!(single.lower_bound, plan.lower_bound);
        }
    }
}
