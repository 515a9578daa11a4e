//! Kernels on a device: a compute pipeline per kernel name, composed and compiled at its first
//! use and kept; the windows of buffers a launch binds; one dispatch, queued or recorded.
//!
//! Every tensor is bound as a read-write storage window of 32-bit words (WebGPU refuses one
//! buffer bound both read-only and writable in a dispatch, and a planned arena is one buffer
//! holding inputs and outputs). A window starts at the adapter's offset alignment at or before
//! the tensor's first byte; the shader gets the byte where element 0 lies within it. The
//! launch's small parameters (extents, strides, offsets) travel in a storage buffer of their
//! own, made with the bind group.

use super::gpu::Gpu;
use super::queue::Command;
use crate::kernel::{KernelError, Result};
use crate::tensor::Tensor;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use wgpu::util::DeviceExt;

/// Compiled pipelines, by kernel name.
#[derive(Default)]
pub(crate) struct Pipelines(Mutex<HashMap<String, Arc<wgpu::ComputePipeline>>>);

/// A window of a buffer bound for one launch, and the byte of its operand's element 0 in it.
pub(super) struct Bound {
    buffer: Arc<wgpu::Buffer>,
    offset: u64,
    size: u64,
    /// The byte, within the window, of the operand's first element.
    pub base: u32,
}

fn device_error(gpu: &Gpu, what: String) -> KernelError {
    KernelError::Device(format!("{}: {what}", gpu.label()))
}

impl Gpu {
    /// The pipeline of kernel `name`, its WGSL made by `compose` and compiled at the first use.
    pub(super) fn pipeline(&self, name: &str, compose: impl FnOnce() -> String) -> Result<Arc<wgpu::ComputePipeline>> {
        let mut pipelines = self.pipelines.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(pipeline) = pipelines.get(name) {
            return Ok(Arc::clone(pipeline));
        }
        let keeps = !self.flushes_subnormals()?;
        let pipeline = Arc::new(self.compile(name, &super::wgsl::for_device(compose(), keeps))?);
        pipelines.insert(name.to_string(), Arc::clone(&pipeline));
        Ok(pipeline)
    }

    /// Whether the device's kernels flush float32 subnormals to zero: measured once, by a
    /// kernel compiled as every other is (its float controls) adding the smallest subnormal to
    /// itself. A driver may flush without the float controls that forbid it (NVIDIA's does) or
    /// keep them without promising to (Mesa's lavapipe): the adapter's report does not say.
    pub fn flushes_subnormals(&self) -> Result<bool> {
        if let Some(&flushes) = self.subnormals.get() {
            return Ok(flushes);
        }
        const PROBE: &str = "@group(0) @binding(0) var<storage, read_write> x: array<u32>;\n@compute @workgroup_size(1)\nfn main() {\n    x[2] = bitcast<u32>(bitcast<f32>(x[0]) + bitcast<f32>(x[1]));\n}\n";
        let pipeline = self.compile("subnormal_probe", PROBE)?;
        let words = self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("nbxtensor subnormal probe"),
            contents: &[1u32, 1, 7].iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>(),
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        });
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("nbxtensor subnormal probe, read back"),
            size: 12,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[wgpu::BindGroupEntry { binding: 0, resource: words.as_entire_binding() }],
        });
        let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &group, &[]);
            pass.dispatch_workgroups(1, 1, 1);
        }
        encoder.copy_buffer_to_buffer(&words, 0, &staging, 0, 12);
        self.queue.submit([encoder.finish()]);
        staging.slice(..).map_async(wgpu::MapMode::Read, |_| {});
        self.wait().map_err(KernelError::Device)?;
        let sum = {
            let view = staging
                .slice(..)
                .get_mapped_range()
                .map_err(|e| device_error(self, format!("reading the subnormal probe back: {e}")))?;
            u32::from_le_bytes([view[8], view[9], view[10], view[11]])
        };
        staging.unmap();
        let flushes = match sum {
            2 => false,
            0 => true,
            other => return Err(device_error(self, format!("the subnormal probe gave {other:#x}, neither 2 nor 0"))),
        };
        Ok(*self.subnormals.get_or_init(|| flushes))
    }

    /// `source` compiled: through SPIR-V built here where the device takes it, else naga's.
    fn compile(&self, name: &str, source: &str) -> Result<wgpu::ComputePipeline> {
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let pipeline = if self.facts.passthrough {
            self.passthrough(name, source)?
        } else {
            let descriptor =
                wgpu::ShaderModuleDescriptor { label: Some(name), source: wgpu::ShaderSource::Wgsl(source.into()) };
            // SAFETY: the kernels index only inside the windows they are given (their launches
            // size every window to the operand's reach, and the conformance suite runs each on
            // every layout it serves) and every loop ends; the checks naga would otherwise put
            // on each access and loop cost the inner loops of every kernel.
            let module =
                unsafe { self.device.create_shader_module_trusted(descriptor, wgpu::ShaderRuntimeChecks::unchecked()) };
            self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(name),
                layout: None,
                module: &module,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            })
        };
        if let Some(error) = pollster::block_on(scope.pop()) {
            return Err(device_error(self, format!("kernel {name} did not compile: {error}")));
        }
        Ok(pipeline)
    }

    /// The pipeline of `source` through SPIR-V built here, with the float controls the device
    /// honours (`spirv.rs`), handed to the driver as it is.
    fn passthrough(&self, name: &str, source: &str) -> Result<wgpu::ComputePipeline> {
        let compiled = super::spirv::compile(source, self.facts.float_controls)
            .map_err(|e| device_error(self, format!("kernel {name} did not compile: {e}")))?;
        let entry = wgpu::PassthroughShaderEntryPoint {
            name: "main".into(),
            workgroup_size: (compiled.workgroup[0], compiled.workgroup[1], compiled.workgroup[2]),
        };
        let descriptor = wgpu::ShaderModuleDescriptorPassthrough {
            label: Some(name),
            entry_points: std::borrow::Cow::Owned(vec![entry]),
            spirv: Some(std::borrow::Cow::Owned(compiled.words)),
            ..Default::default()
        };
        // SAFETY: the module is naga's SPIR-V of WGSL naga validated, plus the float controls the
        // device reported it honours; its bindings are the layout below.
        let module = unsafe { self.device.create_shader_module_passthrough(descriptor) };
        let group = self.device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some(name),
            entries: &compiled.layout,
        });
        let layout = self.device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(name),
            bind_group_layouts: &[Some(&group)],
            immediate_size: 0,
        });
        Ok(self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(name),
            layout: Some(&layout),
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        }))
    }

    /// The window binding `len` bytes from virtual `address`, its operand's element 0 at byte
    /// `first` (an address within the range).
    pub(super) fn window(&self, op: &str, address: u64, len: u64, first: u64) -> Result<Bound> {
        let (buffer, at) = self.locate(address).map_err(|e| KernelError::Invalid(format!("{op}: {e}")))?;
        let align = self.facts.offset_alignment.max(4);
        let offset = at / align * align;
        let end = (at + len.max(1)).div_ceil(4) * 4;
        if end > buffer.size() {
            return Err(KernelError::Invalid(format!(
                "{op}: {len} bytes from {address:#x} pass the end of their block ({} bytes)",
                buffer.size()
            )));
        }
        let size = end - offset;
        if size > self.facts.max_binding {
            return Err(KernelError::Invalid(format!(
                "{op}: an operand of {len} bytes is more than {} binds in one window ({} bytes, its max_storage_buffer_binding_size)",
                self.label(),
                self.facts.max_binding
            )));
        }
        let base = u32::try_from(first - address + (at - offset)).map_err(|_| {
            KernelError::Invalid(format!("{op}: an operand's first element lies past 4 GiB of its window"))
        })?;
        Ok(Bound { buffer, offset, size, base })
    }

    /// The window of every byte `tensor` reaches through its layout (a word of no block for a
    /// tensor of no element, which the kernel never reads).
    pub(super) fn bind(&self, op: &str, tensor: &Tensor) -> Result<Bound> {
        if tensor.numel() == 0 {
            let buffer = Arc::clone(self.placeholder.get_or_init(|| {
                Arc::new(self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("nbxtensor empty operand"),
                    size: 4,
                    usage: wgpu::BufferUsages::STORAGE,
                    mapped_at_creation: false,
                }))
            }));
            return Ok(Bound { buffer, offset: 0, size: 4, base: 0 });
        }
        let itemsize = tensor.dtype().itemsize().map_err(|e| KernelError::Invalid(format!("{op}: {e}")))? as i128;
        let first = tensor.data_ptr() as u64;
        let (mut low, mut high) = (0i128, 0i128);
        for (&size, &stride) in tensor.shape().iter().zip(tensor.strides()) {
            let reach = i128::from(size.max(1) - 1) * i128::from(stride) * itemsize;
            if reach < 0 {
                low += reach
            } else {
                high += reach
            }
        }
        let start = u64::try_from(i128::from(first) + low)
            .map_err(|_| KernelError::Invalid(format!("{op}: a layout reaching before its block")))?;
        let len = u64::try_from(high - low + itemsize)
            .map_err(|_| KernelError::Invalid(format!("{op}: a layout too wide to bind")))?;
        self.window(op, start, len, first)
    }

    /// Queues (or records) one dispatch of `pipeline` over `groups` workgroups, with `operands`
    /// bound in order and `params` bound after them.
    pub(super) fn dispatch(
        &self,
        pipeline: &Arc<wgpu::ComputePipeline>,
        operands: &[&Bound],
        params: &[u32],
        groups: [u32; 3],
    ) -> Result<()> {
        let words: Vec<u8> =
            if params.is_empty() { vec![0; 4] } else { params.iter().flat_map(|w| w.to_le_bytes()).collect() };
        let params = self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: None,
            contents: &words,
            usage: wgpu::BufferUsages::STORAGE,
        });
        let mut entries: Vec<wgpu::BindGroupEntry<'_>> = operands
            .iter()
            .enumerate()
            .map(|(slot, bound)| wgpu::BindGroupEntry {
                binding: slot as u32,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: &bound.buffer,
                    offset: bound.offset,
                    size: std::num::NonZeroU64::new(bound.size),
                }),
            })
            .collect();
        entries.push(wgpu::BindGroupEntry { binding: operands.len() as u32, resource: params.as_entire_binding() });
        let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        });
        self.issue(Command::Dispatch { pipeline: Arc::clone(pipeline), bind_group, groups })
            .map_err(|e| device_error(self, e))
    }

    /// The workgroups of a dispatch of `groups` groups in all: along x up to the adapter's
    /// limit, then rows of them along y (the kernels number a group `x + y · groups_x`).
    pub(super) fn grid(&self, op: &str, groups: u64) -> Result<[u32; 3]> {
        let max = u64::from(self.facts.max_groups);
        let x = groups.clamp(1, max);
        let y = groups.div_ceil(x).max(1);
        if y > max {
            return Err(KernelError::Invalid(format!("{op}: {groups} workgroups are more than one dispatch holds")));
        }
        Ok([x as u32, y as u32, 1])
    }
}
