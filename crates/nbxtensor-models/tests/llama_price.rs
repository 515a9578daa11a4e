//! A generation priced from the config and the safetensors headers alone holds, once run,
//! exactly what the price says, to the host allocator's byte: in the checkpoint's dtype (the
//! weights mapped from the files, nothing of theirs allocated), cast to bfloat16 (every weight
//! copied), sharded with biases, greedy and sampled, prompts in several buckets. The price of
//! a CUDA generation is made without a GPU. One test in its own binary: the host allocator's
//! accounting is process-wide.

use nbxtensor::backend;
use nbxtensor::memory::Device;
use nbxtensor::DType;
use nbxtensor_models::llama::{Allocation, Generator, Llama, Placement, Sampling};
use std::path::{Path, PathBuf};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/llama").join(name)
}

#[test]
fn a_generation_holds_what_its_price_said_before_loading() {
    a_host_generation_holds_its_price();
    a_cuda_generation_is_priced_without_a_gpu();
}

fn a_host_generation_holds_its_price() {
    let host = backend::of(Device::CPU);
    let sampled = Sampling { temperature: 0.7, top_k: 20, top_p: 0.9, seed: 3 };
    let cases = [
        ("llama3-tiny", None, 5usize, 12usize, None),
        ("llama3-tiny", Some(DType::Bfloat16), 20, 8, None),
        ("llama2-tiny", Some(DType::Float16), 9, 30, Some(sampled)),
        ("qwen2-tiny", None, 40, 6, Some(sampled)),
        // one new token: the prefill gives it, no decode step is taken nor captured
        ("llama3-tiny", None, 7, 1, None),
    ];
    for (name, dtype, prompt_length, new_tokens, sampling) in cases {
        let placement = Placement { device: Device::CPU, dtype, int4: false };
        let prompt: Vec<i64> = (0..prompt_length as i64).map(|i| (i * 37 + 11) % 200).collect();
        let capacity = prompt_length + new_tokens;
        let before = host.in_use();
        let (priced, allocated) = Llama::open_priced(&data(name), placement).unwrap();
        let price = priced.price(allocated, capacity, prompt.len(), sampling.as_ref()).unwrap();
        drop(priced);
        assert_eq!(host.in_use(), before, "{name}: pricing allocates nothing");
        price.check_fits().unwrap();

        let llama = Llama::open_as(&data(name), placement).unwrap();
        assert_eq!(llama.weights.bytes().unwrap(), price.weight_bytes, "{name}");
        let mut g = Generator::new(llama, capacity, sampling).unwrap();
        g.generate(&prompt, new_tokens, false, |_| {}).unwrap();
        let held = host.in_use() - before;
        println!(
            "{name} {dtype:?}: priced {} (weights {} of {}, state {}, arenas {} + {}), held {held}",
            price.held_bytes(),
            price.weights.allocated,
            price.weight_bytes,
            price.state_allocated_bytes,
            price.prefill.arena_bytes(),
            price.decode.arena_bytes()
        );
        assert_eq!(held, price.held_bytes(), "{name} {dtype:?}: what the run holds");
        assert_eq!(g.memory().unwrap().cache_bytes, price.cache_bytes, "{name}");
        match dtype {
            None => {
                assert_eq!(price.weights, Allocation { allocated: 0, mapped: price.weight_bytes }, "{name}: mapped")
            }
            Some(_) => {
                assert!(
                    price.weights.allocated >= price.weight_bytes && price.weights.mapped == 0,
                    "{name}: a cast copies"
                )
            }
        }
        let planned: Vec<u64> = g.captures().iter().map(|c| c.planned_bytes).collect();
        let mut priced = vec![price.prefill.arena_bytes()];
        if new_tokens > 1 {
            priced.push(price.decode.arena_bytes());
        }
        assert_eq!(price.decodes(), new_tokens > 1, "{name}");
        assert_eq!(planned, priced, "{name}");
        drop(g);
        assert_eq!(host.in_use(), before, "{name}: all of it returned");
    }
}

fn a_cuda_generation_is_priced_without_a_gpu() {
    let placement = Placement { device: Device::parse("cuda").unwrap(), dtype: Some(DType::Bfloat16), int4: false };
    let (priced, allocated) = Llama::open_priced(&data("llama2-tiny"), placement).unwrap();
    let price = priced.price(allocated, 64, 20, None).unwrap();
    assert_eq!(price.prefill_bucket, 32);
    assert_eq!(price.device, placement.device);
    // every weight copied to the device, each in its own pooled block
    assert!(price.weights.allocated >= price.weight_bytes && price.weights.mapped == 0);
    let c = &priced.config;
    let cache = 2 * c.num_hidden_layers * c.num_key_value_heads * 64 * c.head_dim * 2;
    assert_eq!(price.cache_bytes, cache as u64);
    assert!(price.prefill.arena_bytes() > 0 && price.decode.arena_bytes() > 0);
    let err = priced.price(allocated, 64, 65, None).err().unwrap().to_string();
    assert!(err.contains("65 tokens"), "{err}");
    let err = priced.price(allocated, 1 << 30, 8, None).err().unwrap().to_string();
    assert!(err.contains("max_position_embeddings"), "{err}");
    // a limit under what the generation holds refuses it before anything is loaded
    nbxtensor::settings::memory_limit::set_limit(Some(price.held_bytes() - 1)).unwrap();
    let refused = price.check_fits().err().map(|e| e.to_string());
    nbxtensor::settings::memory_limit::set_limit(Some(price.held_bytes())).unwrap();
    let fits = price.check_fits();
    nbxtensor::settings::memory_limit::set_limit(None).unwrap();
    let refused = refused.expect("over the limit");
    assert!(refused.contains("memory limit") && refused.contains("generation of 64 positions"), "{refused}");
    fits.unwrap();
}
