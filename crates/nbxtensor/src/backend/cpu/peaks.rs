//! The host's peak rates, measured once per process (the host has no device file with rates).

use crate::backend::{Backend, Peaks};
use crate::kernel::{Attrs, Kernel, Result, TensorMeta};
use crate::ops;
use crate::ops::spec::{attention::Sdpa, FLOATS};
use crate::tensor::Tensor;
use crate::DType;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

/// The host CPU's rates: a 512³ float32 matrix product for the matrix rate, attention over a
/// cache-resident `[1, 4, 128, 64]` problem (its declared flops over its time) for the vector
/// rate, and an add over 4 Mi float32 elements (48 MiB of traffic) for the bandwidth; best of
/// three each. float16 and bfloat16 run through float32 on the CPU and take its rates.
pub fn measure() -> Result<Peaks> {
    static MEASURED: OnceLock<Peaks> = OnceLock::new();
    if let Some(peaks) = MEASURED.get() {
        return Ok(peaks.clone());
    }
    let best = |run: &dyn Fn() -> Result<()>| -> Result<f64> {
        let mut fastest = f64::INFINITY;
        for _ in 0..3 {
            let start = std::time::Instant::now();
            run()?;
            fastest = fastest.min(start.elapsed().as_secs_f64());
        }
        Ok(fastest)
    };
    let ones = |n: usize, shape: &[i64]| Tensor::from_vec(vec![1.0f32; n], shape);
    let (a, b) = (ones(512 * 512, &[512, 512])?, ones(512 * 512, &[512, 512])?);
    let matmul = best(&|| ops::call("matmul", &Attrs::new(), &[&a, &b]).map(drop))?;
    let n = 4 << 20;
    let (x, y) = (ones(n, &[n as i64])?, ones(n, &[n as i64])?);
    let add = best(&|| ops::call("add", &Attrs::new(), &[&x, &y]).map(drop))?;
    let q = ones(4 * 128 * 64, &[1, 4, 128, 64])?;
    let spec = Sdpa { dtype: DType::Float32, causal: false, scale: None };
    let kernel: Arc<dyn Kernel> = super::cpu().launches().kernel(Arc::new(spec))?;
    let meta = TensorMeta::new(DType::Float32, q.shape());
    let attention_flops = kernel.declare(&[meta.clone(), meta.clone(), meta])?.flops as f64;
    let attention = best(&|| ops::call_kernel(&kernel, &[&q, &q, &q]).map(drop))?;
    let rates = |flops_per_second: f64| -> BTreeMap<String, f64> {
        FLOATS.iter().map(|d| (d.name().to_string(), flops_per_second)).collect()
    };
    let peaks = Peaks {
        source: "the host CPU, measured".to_string(),
        vector: rates(attention_flops / attention),
        matrix: rates(2.0 * 512f64.powi(3) / matmul),
        bandwidth: (3 * 4 * n) as f64 / add,
    };
    Ok(MEASURED.get_or_init(|| peaks).clone())
}
