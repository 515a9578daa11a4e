//! CUDA graphs: the launches a function queues on a device's stream, captured once
//! (stream capture), instantiated, and replayed with one call.

use super::launch::device_context;
use super::memory::{check, CudaContext};
use super::recent;
use crate::kernel::{KernelError, Result};
use crate::memory::Device;
use cudarc::driver::sys;

/// An instantiated graph of one device's launches.
pub struct CudaGraph {
    graph: sys::CUgraph,
    exec: sys::CUgraphExec,
    context: &'static CudaContext,
    nodes: usize,
}

// SAFETY: graph handles may be launched from any thread with their context current.
unsafe impl Send for CudaGraph {}
unsafe impl Sync for CudaGraph {}

impl CudaGraph {
    /// Captures what `queue` puts on `device`'s stream (nothing runs while capturing) and
    /// instantiates it. `queue` must only queue work (no copy to or from the host, no
    /// allocation); a failure inside it ends the capture and is returned.
    pub fn capture(device: Device, queue: impl FnOnce() -> Result<()>) -> Result<CudaGraph> {
        let context = device_context(device)?;
        // on a stream of this thread's own: launches other threads queue meanwhile (on the
        // shared stream) run, and are neither recorded here nor refused for a capturing stream
        let mut queued: Result<()> = Ok(());
        let graph = context
            .capturing_on(|stream| {
                // SAFETY: the stream belongs to the current context.
                check(
                    unsafe {
                        sys::cuStreamBeginCapture_v2(stream, sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED)
                    },
                    "cuStreamBeginCapture_v2",
                )?;
                recent::forget(stream as u64);
                queued = queue();
                recent::forget(stream as u64);
                let mut graph: sys::CUgraph = std::ptr::null_mut();
                // SAFETY: the stream is capturing (begun above); ending it always, even after a failure.
                check(unsafe { sys::cuStreamEndCapture(stream, &mut graph) }, "cuStreamEndCapture")?;
                Ok(graph)
            })
            .map_err(KernelError::Device);
        if let Err(e) = queued {
            if let Ok(graph) = graph {
                if !graph.is_null() {
                    // SAFETY: the graph is ours and not instantiated.
                    unsafe { sys::cuGraphDestroy(graph) };
                }
            }
            return Err(e);
        }
        let graph = graph?;
        let mut exec: sys::CUgraphExec = std::ptr::null_mut();
        // SAFETY: the graph was just captured.
        let instantiated =
            check(unsafe { sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0) }, "cuGraphInstantiate");
        if let Err(e) = instantiated {
            // SAFETY: the graph is ours and not instantiated.
            unsafe { sys::cuGraphDestroy(graph) };
            return Err(KernelError::Device(e));
        }
        let mut nodes = 0usize;
        // SAFETY: the graph is valid; a null array asks only for the count.
        unsafe { sys::cuGraphGetNodes(graph, std::ptr::null_mut(), &mut nodes) };
        Ok(CudaGraph { graph, exec, context, nodes })
    }

    /// Queues one replay of the graph on its device's stream.
    pub fn launch(&self) -> Result<()> {
        self.context.bind().map_err(KernelError::Device)?;
        let stream = self.context.stream();
        // what the replay writes is not noted op by op
        recent::note_everything(stream as u64);
        // SAFETY: the executable graph belongs to this context.
        check(unsafe { sys::cuGraphLaunch(self.exec, stream) }, "cuGraphLaunch").map_err(KernelError::Device)
    }

    /// Waits until every queued replay has run.
    pub fn synchronize(&self) -> Result<()> {
        self.context.synchronize().map_err(KernelError::Device)
    }

    /// The nodes the capture recorded (one per kernel launch or copy).
    pub fn nodes(&self) -> usize {
        self.nodes
    }
}

impl Drop for CudaGraph {
    fn drop(&mut self) {
        let _ = self.context.bind();
        // SAFETY: both handles are ours; nothing replays them any more.
        unsafe {
            sys::cuGraphExecDestroy(self.exec);
            sys::cuGraphDestroy(self.graph);
        }
    }
}
