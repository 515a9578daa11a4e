//! The arenas the llama generator's plans price before anything runs are what the host
//! allocator gives their executables, byte for byte, for every prefill bucket and the decode
//! program. One test in its own binary: the host allocator's accounting is process-wide.

use nbxtensor_models::llama::{Generator, Llama};
use std::path::Path;

#[test]
fn each_capture_allocates_the_arena_its_plan_priced() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/llama/llama3-tiny");
    let mut g = Generator::new(Llama::open(&dir).unwrap(), 80, None).unwrap();
    for prompt_length in [3, 8, 9, 20, 33] {
        let prompt: Vec<i64> = (0..prompt_length).map(|i| (i * 37 + 11) % 256).collect();
        g.generate(&prompt, 4, false, |_| {}).unwrap();
    }
    let names: Vec<&str> = g.captures().iter().map(|c| c.program.as_str()).collect();
    assert_eq!(names, ["prefill 8", "decode", "prefill 16", "prefill 32", "prefill 64"]);
    for c in g.captures() {
        println!("{}: planned {} bytes, allocated {} bytes", c.program, c.planned_bytes, c.allocated_bytes);
        assert!(c.planned_bytes > 0, "{c:?}");
        assert_eq!(c.allocated_bytes, c.planned_bytes, "{}", c.program);
    }
    assert_eq!(g.memory().unwrap().arena_bytes, g.captures().iter().map(|c| c.planned_bytes).sum::<u64>());
}
