//! Submission and capture. Eager commands are encoded into one command encoder per device and
//! submitted in batches (32 commands, or sooner once they hold enough work), and whenever the
//! host waits or writes: the queue runs them in order.
//! A capture records the commands of the capturing thread (its pipelines and bind groups built,
//! nothing run); a replay encodes that list into one command buffer and submits it, looking
//! nothing up.

use super::gpu::Gpu;
use crate::backend::device::Graph;
use crate::kernel::{KernelError, Result};
use crate::memory::Device;
use std::cell::RefCell;
use std::sync::Arc;

/// Commands encoded before a submission: the queue is kept fed without a submission per launch.
const BATCH: usize = 32;

/// Work encoded before a submission, in workgroups (a copy or clear counts a workgroup for each
/// 4 KiB): a large kernel starts at once, while the host encodes the next, instead of waiting
/// for the batch to fill.
const BATCH_WORK: u64 = 4096;

/// One command of the device's queue.
pub(super) enum Command {
    /// A compute dispatch: its pipeline, its bindings, its workgroups.
    Dispatch { pipeline: Arc<wgpu::ComputePipeline>, bind_group: wgpu::BindGroup, groups: [u32; 3] },
    /// A copy between buffers (whole words).
    Copy { src: Arc<wgpu::Buffer>, src_offset: u64, dst: Arc<wgpu::Buffer>, dst_offset: u64, size: u64 },
    /// Zeros over a range of a buffer (whole words).
    Clear { buffer: Arc<wgpu::Buffer>, offset: u64, size: u64 },
}

/// Commands encoded and not yet submitted.
#[derive(Default)]
pub(super) struct Pending {
    encoder: Option<wgpu::CommandEncoder>,
    count: usize,
    work: u64,
}

thread_local! {
    /// The capture under way on this thread: its device and the commands recorded so far.
    static RECORDING: RefCell<Option<(Device, Vec<Command>)>> = const { RefCell::new(None) };
}

/// Encodes `commands` in order: neighbouring dispatches share a compute pass (wgpu puts a
/// barrier between dispatches that write and read the same buffer).
fn encode(encoder: &mut wgpu::CommandEncoder, commands: &[Command]) {
    let mut at = 0;
    while at < commands.len() {
        match &commands[at] {
            Command::Dispatch { .. } => {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
                while let Some(Command::Dispatch { pipeline, bind_group, groups }) = commands.get(at) {
                    pass.set_pipeline(pipeline);
                    pass.set_bind_group(0, bind_group, &[]);
                    pass.dispatch_workgroups(groups[0], groups[1], groups[2]);
                    at += 1;
                }
            }
            Command::Copy { src, src_offset, dst, dst_offset, size } => {
                encoder.copy_buffer_to_buffer(src, *src_offset, dst, *dst_offset, *size);
                at += 1;
            }
            Command::Clear { buffer, offset, size } => {
                encoder.clear_buffer(buffer, *offset, Some(*size));
                at += 1;
            }
        }
    }
}

impl Gpu {
    /// Queues `command`, or records it where this thread is capturing on this device.
    pub(super) fn issue(&self, command: Command) -> std::result::Result<(), String> {
        let recorded = RECORDING.with(|r| match r.borrow_mut().as_mut() {
            Some((device, list)) if *device == self.device_id => {
                list.push(command);
                None
            }
            _ => Some(command),
        });
        let Some(command) = recorded else {
            return Ok(());
        };
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let encoder = pending
            .encoder
            .get_or_insert_with(|| self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor::default()));
        encode(encoder, std::slice::from_ref(&command));
        pending.count += 1;
        pending.work += match &command {
            Command::Dispatch { groups, .. } => groups.iter().map(|&g| u64::from(g)).product(),
            Command::Copy { size, .. } | Command::Clear { size, .. } => size / 4096,
        };
        if pending.count >= BATCH || pending.work >= BATCH_WORK {
            self.submit(&mut pending);
        }
        drop(pending);
        self.healthy()
    }

    fn submit(&self, pending: &mut Pending) {
        if let Some(encoder) = pending.encoder.take() {
            self.queue.submit([encoder.finish()]);
        }
        pending.count = 0;
        pending.work = 0;
    }

    /// Submits the commands encoded so far.
    pub(super) fn flush(&self) -> std::result::Result<(), String> {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        self.submit(&mut pending);
        drop(pending);
        self.healthy()
    }

    /// Waits until every submitted command has run.
    pub(super) fn wait(&self) -> std::result::Result<(), String> {
        self.device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| format!("{}: {e}", self.label()))?;
        self.healthy()
    }

    /// Submits what is queued and waits for it.
    pub fn synchronize(&self) -> std::result::Result<(), String> {
        self.flush()?;
        self.wait()
    }

    /// Whether this thread is capturing on this device.
    pub(super) fn recording(&self) -> bool {
        RECORDING.with(|r| r.borrow().as_ref().is_some_and(|(device, _)| *device == self.device_id))
    }

    /// Refuses `what` while this thread captures on this device: a capture runs nothing.
    pub(super) fn refuse_while_recording(&self, what: &str) -> std::result::Result<(), crate::memory::MemoryError> {
        if self.recording() {
            return Err(crate::memory::MemoryError::UnknownDevice(format!(
                "{}: {what} during a capture (a capture records launches and runs none)",
                self.label()
            )));
        }
        Ok(())
    }

    /// Records what `queue` launches on this thread as one replayable graph.
    pub fn capture(&'static self, queue: &mut dyn FnMut() -> Result<()>) -> Result<WgpuGraph> {
        RECORDING.with(|r| {
            let mut r = r.borrow_mut();
            if let Some((device, _)) = r.as_ref() {
                return Err(KernelError::Device(format!(
                    "{}: this thread is already capturing on {device}",
                    self.label()
                )));
            }
            *r = Some((self.device_id, Vec::new()));
            Ok(())
        })?;
        let result = queue();
        let recorded = RECORDING.with(|r| r.borrow_mut().take()).map(|(_, list)| list).unwrap_or_default();
        result?;
        self.healthy().map_err(KernelError::Device)?;
        Ok(WgpuGraph { gpu: self, commands: recorded })
    }
}

/// A captured command list: replayed as one command buffer.
pub struct WgpuGraph {
    gpu: &'static Gpu,
    commands: Vec<Command>,
}

impl Graph for WgpuGraph {
    fn launch(&self) -> Result<()> {
        let gpu = self.gpu;
        let mut pending = gpu.pending.lock().unwrap_or_else(|e| e.into_inner());
        gpu.submit(&mut pending);
        let mut encoder = gpu.device.create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
        encode(&mut encoder, &self.commands);
        gpu.queue.submit([encoder.finish()]);
        drop(pending);
        gpu.healthy().map_err(KernelError::Device)
    }

    fn synchronize(&self) -> Result<()> {
        self.gpu.synchronize().map_err(KernelError::Device)
    }

    fn nodes(&self) -> usize {
        self.commands.len()
    }
}
