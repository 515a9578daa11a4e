//! Pricing a program before it runs: flops, bytes, peak memory and a predicted time, from the
//! declarations alone and a device's peak rates (the roofline: each launch takes the longer of
//! its flops at the dtype's peak and its bytes at the memory bandwidth).

use super::{Program, ProgramError, Result};
use crate::backend::Backend;
use crate::facts;
use crate::kernel::Attrs;
use crate::ops;
use crate::tensor::Tensor;
use std::collections::BTreeMap;

/// A device's peak rates: FLOP/s per dtype (vector units and matrix unit) and bytes/s.
#[derive(Clone, Debug, PartialEq)]
pub struct Peaks {
    /// Where the rates come from (a device file, or a measurement).
    pub source: String,
    /// FLOP/s of elementwise work, by dtype name.
    pub vector: BTreeMap<String, f64>,
    /// FLOP/s of matrix products, by dtype name.
    pub matrix: BTreeMap<String, f64>,
    /// Memory bandwidth, bytes/s.
    pub bandwidth: f64,
}

impl Peaks {
    /// The rates of a device file; a file without a bandwidth is refused by name.
    pub fn of_device(vendor: &str, name: &str) -> Result<Peaks> {
        let file = facts::device_file(vendor, name).map_err(|e| ProgramError::Invalid(e.to_string()))?;
        let bandwidth = file.memory.bandwidth_bytes_per_s.ok_or_else(|| {
            ProgramError::Invalid(format!(
                "device {vendor}/{name} has no memory bandwidth in its file: it cannot be priced"
            ))
        })?;
        Ok(Peaks {
            source: format!("device file {vendor}/{name}"),
            vector: file.peak.vector.clone(),
            matrix: file.peak.matrix.clone(),
            bandwidth,
        })
    }
}

impl Peaks {
    /// The host CPU's rates, measured once per process (the host has no device file with
    /// rates): a 512³ float32 matrix product for the matrix rate, attention over a
    /// cache-resident [1, 4, 128, 64] problem (its declared flops over its time) for the vector
    /// rate, and an add over 4 Mi float32 elements (48 MiB of traffic) for the bandwidth; best of
    /// three each. float16 and bfloat16 run through float32 on the CPU and
    /// take its rates.
    pub fn measure_host() -> Result<Peaks> {
        static MEASURED: std::sync::OnceLock<Peaks> = std::sync::OnceLock::new();
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
        let matmul = best(&|| ops::call("matmul", &Attrs::new(), &[&a, &b]).map(drop).map_err(ProgramError::from))?;
        let n = 4 << 20;
        let (x, y) = (ones(n, &[n as i64])?, ones(n, &[n as i64])?);
        let add = best(&|| ops::call("add", &Attrs::new(), &[&x, &y]).map(drop).map_err(ProgramError::from))?;
        // the vector rate: attention on a cache-resident problem, its declared flops over its time
        let q = ones(4 * 128 * 64, &[1, 4, 128, 64])?;
        let kernel: std::sync::Arc<dyn crate::kernel::Kernel> =
            crate::backend::cpu::cpu().table().kernel("sdpa", crate::DType::Float32, &Attrs::new())?.into();
        let meta = crate::kernel::TensorMeta::new(crate::DType::Float32, q.shape());
        let attention_flops = kernel.declare(&[meta.clone(), meta.clone(), meta])?.flops as f64;
        let attention = best(&|| ops::call_kernel(&kernel, &[&q, &q, &q]).map(drop).map_err(ProgramError::from))?;
        let rates = |flops_per_second: f64| -> BTreeMap<String, f64> {
            crate::backend::cpu::buffers::FLOATS.iter().map(|d| (d.name().to_string(), flops_per_second)).collect()
        };
        let peaks = Peaks {
            source: "the host CPU, measured".to_string(),
            vector: rates(attention_flops / attention),
            matrix: rates(2.0 * 512f64.powi(3) / matmul),
            bandwidth: (3 * 4 * n) as f64 / add,
        };
        Ok(MEASURED.get_or_init(|| peaks).clone())
    }
}

/// What a program costs, known before it runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Price {
    /// Launches.
    pub launches: usize,
    /// Flops of every launch.
    pub flops: u64,
    /// Bytes read and written by every launch.
    pub bytes: u64,
    /// The arena's bytes (the plan's peak memory, workspace included).
    pub arena_bytes: u64,
    /// The bytes the host allocator will take for that arena (its size class): what the run
    /// allocates, to the byte.
    pub allocated_bytes: u64,
    /// The plan's lower bound.
    pub lower_bound: u64,
    /// The predicted time in seconds (the roofline of every launch, added).
    pub seconds: f64,
}

impl Program {
    /// Prices the program on a device's `peaks`: a launch of a dtype the peaks do not list is
    /// refused by name (a missing fact, never a default).
    pub fn price(&self, peaks: &Peaks) -> Result<Price> {
        let plan = self.plan()?;
        let mut seconds = 0.0;
        for step in &self.steps {
            let dtype = step.cost.outputs.first().map(|m| m.dtype.name()).unwrap_or("float32");
            let rates = if step.kernel.uses_matrix_unit() { &peaks.matrix } else { &peaks.vector };
            let flops_time = if step.cost.flops == 0 {
                0.0
            } else {
                let rate = rates.get(dtype).ok_or_else(|| {
                    ProgramError::Invalid(format!(
                        "{}: {} has no peak rate for {dtype} ({})",
                        step.kernel.key(),
                        peaks.source,
                        if step.kernel.uses_matrix_unit() { "matrix" } else { "vector" }
                    ))
                })?;
                step.cost.flops as f64 / rate
            };
            let bytes_time = (step.cost.bytes_read + step.cost.bytes_written) as f64 / peaks.bandwidth;
            seconds += flops_time.max(bytes_time);
        }
        Ok(Price {
            launches: self.steps.len(),
            flops: self.flops(),
            bytes: self.bytes_moved(),
            arena_bytes: plan.arena_bytes(),
            allocated_bytes: plan.allocated_bytes(),
            lower_bound: plan.plan.lower_bound,
            seconds,
        })
    }
}
