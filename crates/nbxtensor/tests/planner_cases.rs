//! Hand-made plans whose optimal arena and lower bound are worked out by hand, the refused
//! request sets, and what the report and the picture show.

use nbxtensor::memory::{BufferRequest, Plan, PlanError};

#[test]
fn a_chain_reuses_the_memory_of_its_grandparent() {
    // a → b → c, each read only by the next launch: a and c are never alive together.
    let requests =
        [BufferRequest::new(0, 100, 0, 1), BufferRequest::new(1, 100, 1, 2), BufferRequest::new(2, 100, 2, 3)];
    let plan = Plan::new(&requests, 64).unwrap();
    // Two 128-byte (aligned) buffers are alive at launches 1 and 2: 256 is the optimum.
    assert_eq!((plan.arena_bytes, plan.lower_bound), (256, 256));
    assert_eq!(plan.offsets[0], plan.offsets[2]);
    assert_ne!(plan.offsets[0], plan.offsets[1]);
}

#[test]
fn an_in_place_chain_uses_one_buffer() {
    // x → relu (in place) → add bias (in place) → scale (in place): one 1 KiB buffer.
    let requests = [
        BufferRequest::new(10, 1024, 0, 1),
        BufferRequest::new(11, 1024, 1, 2).in_place_of(10),
        BufferRequest::new(12, 1024, 2, 3).in_place_of(11),
        BufferRequest::new(13, 1024, 3, 5).in_place_of(12),
    ];
    let plan = Plan::new(&requests, 64).unwrap();
    assert_eq!(plan.offsets, vec![0, 0, 0, 0]);
    assert_eq!((plan.arena_bytes, plan.lower_bound), (1024, 1024));
    assert_eq!(plan.in_place, vec![false, true, true, true]);
}

#[test]
fn a_larger_output_does_not_take_over_its_input() {
    let requests = [BufferRequest::new(0, 100, 0, 1), BufferRequest::new(1, 200, 1, 2).in_place_of(0)];
    let plan = Plan::new(&requests, 1).unwrap();
    assert_eq!(plan.in_place, vec![false, false]);
    // Both are alive at launch 1: 300 bytes.
    assert_eq!((plan.arena_bytes, plan.lower_bound), (300, 300));
}

#[test]
fn an_input_is_taken_over_once() {
    let requests = [
        BufferRequest::new(0, 64, 0, 1),
        BufferRequest::new(1, 64, 1, 2).in_place_of(0),
        BufferRequest::new(2, 64, 1, 2).in_place_of(0),
    ];
    let plan = Plan::new(&requests, 64).unwrap();
    assert_eq!(plan.in_place, vec![false, true, false]);
    assert_eq!(plan.offsets[1], plan.offsets[0]);
    assert_ne!(plan.offsets[2], plan.offsets[0]);
    assert_eq!((plan.arena_bytes, plan.lower_bound), (128, 128));
}

#[test]
fn the_bound_by_hand() {
    // Live bytes per launch: 0: 10, 1: 30, 2: 30, 3: 20 + 30 = 50, 4: 30 + 5 = 35.
    let requests = [
        BufferRequest::new(0, 10, 0, 2),
        BufferRequest::new(1, 20, 1, 3),
        BufferRequest::new(2, 30, 3, 4),
        BufferRequest::new(3, 5, 4, 4),
    ];
    let plan = Plan::new(&requests, 1).unwrap();
    assert_eq!(plan.lower_bound, 50);
    // 30 at 0, 20 at 30 (beside it at launch 3), 10 under 20, 5 over 30: 50 is reachable.
    assert_eq!(plan.arena_bytes, 50);
    assert_eq!(plan.ratio(), 1.0);
}

#[test]
fn the_bound_counts_an_in_place_pair_once() {
    // At launch 2, scores (4096) and probs (in place) are one buffer: 4096 + x (1024).
    let requests = [
        BufferRequest::new(0, 1024, 0, 3),
        BufferRequest::new(1, 4096, 1, 2),
        BufferRequest::new(2, 4096, 2, 3).in_place_of(1),
    ];
    assert_eq!(Plan::new(&requests, 256).unwrap().lower_bound, 5120);
}

#[test]
fn alignment_rounds_every_size() {
    let requests = [BufferRequest::new(0, 1, 0, 0), BufferRequest::new(1, 1, 0, 0), BufferRequest::new(2, 1, 0, 0)];
    let plan = Plan::new(&requests, 256).unwrap();
    let mut offsets = plan.offsets.clone();
    offsets.sort_unstable();
    assert_eq!(offsets, vec![0, 256, 512]);
    assert_eq!((plan.arena_bytes, plan.lower_bound), (768, 768));
}

#[test]
fn empty_buffers_take_no_memory() {
    let requests = [BufferRequest::new(0, 0, 0, 3), BufferRequest::new(1, 0, 1, 2)];
    let plan = Plan::new(&requests, 64).unwrap();
    assert_eq!((plan.arena_bytes, plan.lower_bound, plan.ratio()), (0, 0, 1.0));
    let empty = Plan::new(&[], 64).unwrap();
    assert_eq!((empty.arena_bytes, empty.offsets.len()), (0, 0));
}

#[test]
fn bad_requests_are_refused_by_name() {
    let refuse = |requests: &[BufferRequest], alignment: u64| Plan::new(requests, alignment).unwrap_err();
    let ok = BufferRequest::new(1, 8, 0, 2);
    for alignment in [0, 3, 48] {
        assert_eq!(refuse(&[ok], alignment), PlanError::Alignment(alignment));
    }
    let err = refuse(&[BufferRequest::new(5, 8, 4, 3)], 8);
    assert_eq!(err, PlanError::Lifetime { id: 5, first_use: 4, last_use: 3 });
    assert_eq!(err.to_string(), "buffer 5: last use 3 comes before first use 4");
    assert_eq!(refuse(&[ok, ok], 8), PlanError::DuplicateId(1));
    let err = refuse(&[ok, BufferRequest::new(2, 8, 2, 3).in_place_of(9)], 8);
    assert!(err.to_string().contains("buffer 2") && err.to_string().contains("no buffer 9"));
    let err = refuse(&[ok, BufferRequest::new(2, 8, 1, 3).in_place_of(1)], 8);
    assert_eq!(err, PlanError::NotAdjacent { id: 2, first_use: 1, input: 1, input_last_use: 2 });
    assert_eq!(refuse(&[BufferRequest::new(4, 8, 1, 1).in_place_of(4)], 8), PlanError::SelfReuse(4));
    let err = refuse(&[BufferRequest::new(6, u64::MAX - 2, 0, 0)], 8);
    assert!(matches!(err, PlanError::Overflow { id: 6, .. }));
    let err = refuse(&[BufferRequest::new(6, u64::MAX / 2, 0, 0), BufferRequest::new(7, u64::MAX / 2 + 8, 0, 0)], 8);
    assert!(matches!(err, PlanError::Overflow { .. }));
    let crate_error: nbxtensor::Error = PlanError::DuplicateId(3).into();
    assert_eq!(crate_error.to_string(), "buffer 3 is requested twice");
}

#[test]
fn the_report_lists_every_buffer() {
    let requests = [
        BufferRequest::new(0, 1024, 0, 3),
        BufferRequest::new(1, 4096, 1, 2),
        BufferRequest::new(2, 4000, 2, 3).in_place_of(1),
    ];
    let plan = Plan::new(&requests, 256).unwrap();
    let report = plan.report(&requests);
    let lines: Vec<&str> = report.lines().collect();
    assert_eq!(lines[1], "arena        5120 bytes (5 KiB)");
    assert_eq!(lines[2], "lower bound  5120 bytes (5 KiB)");
    assert_eq!(lines[3], "ratio        1.000");
    assert_eq!(lines.len(), 5 + requests.len());
    let row: Vec<&str> = lines[7].split_whitespace().collect();
    assert_eq!(row, ["2", "4000", &plan.offsets[1].to_string(), "2", "3", "1"]);
    assert_eq!(lines[5].split_whitespace().last(), Some("-"));
}

#[test]
fn the_picture_draws_each_buffer_and_both_lines() {
    let requests =
        [BufferRequest::new(0, 1024, 0, 3), BufferRequest::new(1, 0, 1, 2), BufferRequest::new(2, 512, 1, 1)];
    let plan = Plan::new(&requests, 64).unwrap();
    let svg = plan.svg(&requests, "a & b");
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\"") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains(">a &amp; b</text>"));
    // The empty buffer has no rectangle.
    assert_eq!(svg.matches("<rect class=\"buffer\"").count(), 2);
    assert!(svg.contains(">arena</text>") && svg.contains(">lower bound</text>"));
    assert!(svg.contains("buffer 2: 512 bytes at offset"));
    // Every element opened is closed.
    assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
    assert_eq!(svg.matches("<title>").count(), svg.matches("</title>").count());
}
