//! One opened wgpu device and what the backend keeps of it: the buffers behind its blocks
//! (`memory.rs`), the commands waiting to be submitted (`queue.rs`), its compiled pipelines
//! (`pipeline.rs`).

use super::adapter::{self, AdapterFacts, Api};
use super::pipeline::Pipelines;
use super::queue::Pending;
use crate::memory::Device;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// An opened device and its state.
pub struct Gpu {
    /// The device served (`vulkan:0`).
    pub device_id: Device,
    /// wgpu's device.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    /// The adapter's facts.
    pub facts: AdapterFacts,
    failure: Arc<Mutex<Option<String>>>,
    /// The buffer behind each live block, by block number.
    pub(super) blocks: Mutex<HashMap<u64, Arc<wgpu::Buffer>>>,
    /// The next block number (0 is no block).
    pub(super) next_block: AtomicU64,
    /// Bytes of live blocks.
    pub(super) in_use: AtomicU64,
    /// Freed pooled buffers, by size class, waiting for a request of their class.
    pub(super) parked: Mutex<HashMap<u64, Vec<Arc<wgpu::Buffer>>>>,
    /// Bytes of the parked buffers.
    pub(super) parked_bytes: AtomicU64,
    /// Commands encoded and not yet submitted.
    pub(super) pending: Mutex<Pending>,
    /// Compiled pipelines, by kernel name.
    pub(super) pipelines: Pipelines,
    /// A word bound in place of an operand of no element.
    pub(super) placeholder: OnceLock<Arc<wgpu::Buffer>>,
    /// Whether its kernels flush float32 subnormals, once measured (`flushes_subnormals`).
    pub(super) subnormals: OnceLock<bool>,
}

impl Gpu {
    /// The device's name for messages (`vulkan:0`).
    pub fn label(&self) -> String {
        self.device_id.to_string()
    }

    /// The first error the device reported outside a scope (a validation error, its loss), as
    /// an error naming the device; `Ok` while it reported none.
    pub fn healthy(&self) -> Result<(), String> {
        match self.failure.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            Some(why) => Err(format!("{}: {why}", self.label())),
            None => Ok(()),
        }
    }

    /// A fresh block number.
    pub(super) fn block_number(&self) -> u64 {
        self.next_block.fetch_add(1, Ordering::SeqCst)
    }
}

/// The device `index` of `api`, opened at its first use (refused, naming why, where it is absent).
pub fn gpu(api: Api, index: u32) -> Result<&'static Gpu, String> {
    static OPENED: OnceLock<Mutex<HashMap<(Api, u32), Result<&'static Gpu, String>>>> = OnceLock::new();
    let mut opened = OPENED.get_or_init(|| Mutex::new(HashMap::new())).lock().unwrap_or_else(|e| e.into_inner());
    opened
        .entry((api, index))
        .or_insert_with(|| {
            let adapter::Opened { device, queue, facts, failure } = adapter::open(api, index)?;
            Ok(&*Box::leak(Box::new(Gpu {
                device_id: Device { kind: api.kind(), index },
                device,
                queue,
                facts,
                failure,
                blocks: Mutex::new(HashMap::new()),
                next_block: AtomicU64::new(1),
                in_use: AtomicU64::new(0),
                parked: Mutex::new(HashMap::new()),
                parked_bytes: AtomicU64::new(0),
                pending: Mutex::new(Pending::default()),
                pipelines: Pipelines::default(),
                placeholder: OnceLock::new(),
                subnormals: OnceLock::new(),
            })))
        })
        .clone()
}
