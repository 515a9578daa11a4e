//! One context per device (the device's primary context) and the one stream every launch
//! and copy of that device is ordered on. A thread that records a CUDA graph records it on a
//! stream of its own ([`CudaContext::capturing_on`]), so that the launches and copies other
//! threads queue meanwhile run (on the shared stream) instead of landing in its graph.

use super::driver::{check, driver, CudaDeviceInfo};
use cudarc::driver::sys;
use std::cell::Cell;
use std::sync::OnceLock;

/// A device's primary context and its stream.
pub struct CudaContext {
    info: CudaDeviceInfo,
    context: sys::CUcontext,
    stream: sys::CUstream,
}

// SAFETY: a CUDA context and stream may be used from any thread once made current there
// (`bind` does that before every use).
unsafe impl Send for CudaContext {}
unsafe impl Sync for CudaContext {}

thread_local! {
    /// The context this thread made current last (null: none yet).
    static CURRENT: Cell<usize> = const { Cell::new(0) };
    /// While this thread records a graph: (the context, the stream it records on); else nulls.
    static CAPTURE: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// The context of device `index`, made at first use; the error says why CUDA or that device
/// is not usable.
pub fn context(index: u32) -> Result<&'static CudaContext, String> {
    static CONTEXTS: OnceLock<Vec<OnceLock<Result<CudaContext, String>>>> = OnceLock::new();
    let driver = driver()?;
    let contexts = CONTEXTS.get_or_init(|| driver.devices.iter().map(|_| OnceLock::new()).collect());
    let slot = contexts
        .get(index as usize)
        .ok_or_else(|| format!("cuda:{index}: no such device (the driver sees {} device(s))", driver.devices.len()))?;
    let context = slot.get_or_init(|| CudaContext::open(&driver.devices[index as usize]));
    let context = context.as_ref().map_err(Clone::clone)?;
    context.bind()?;
    Ok(context)
}

impl CudaContext {
    fn open(info: &CudaDeviceInfo) -> Result<CudaContext, String> {
        let mut device: sys::CUdevice = 0;
        let mut context: sys::CUcontext = std::ptr::null_mut();
        let mut stream: sys::CUstream = std::ptr::null_mut();
        // SAFETY: the driver was probed; every pointer is valid.
        unsafe {
            check(sys::cuDeviceGet(&mut device, info.index as i32), "cuDeviceGet")?;
            check(sys::cuDevicePrimaryCtxRetain(&mut context, device), "cuDevicePrimaryCtxRetain")?;
            check(sys::cuCtxSetCurrent(context), "cuCtxSetCurrent")?;
            check(
                sys::cuStreamCreate(&mut stream, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32),
                "cuStreamCreate",
            )?;
        }
        CURRENT.with(|c| c.set(context as usize));
        Ok(CudaContext { info: info.clone(), context, stream })
    }

    /// Makes the context current on this thread (a no-op when it already is).
    pub fn bind(&self) -> Result<(), String> {
        if CURRENT.with(|c| c.get()) != self.context as usize {
            // SAFETY: the context is retained for the process.
            check(unsafe { sys::cuCtxSetCurrent(self.context) }, "cuCtxSetCurrent")?;
            CURRENT.with(|c| c.set(self.context as usize));
        }
        Ok(())
    }

    /// The device's facts.
    pub fn info(&self) -> &CudaDeviceInfo {
        &self.info
    }

    /// The stream this thread's launches and copies are ordered on: the context's shared
    /// stream, or while this thread records a graph ([`capturing_on`](Self::capturing_on)) the
    /// stream it records on.
    pub fn stream(&self) -> sys::CUstream {
        match CAPTURE.with(Cell::get) {
            (context, stream) if context == self.context as usize && stream != 0 => stream as sys::CUstream,
            _ => self.stream,
        }
    }

    /// The context's shared stream, whatever this thread is recording.
    pub fn shared_stream(&self) -> sys::CUstream {
        self.stream
    }

    /// Runs `record(stream)` with a new stream of this context as this thread's
    /// [`stream`](Self::stream) (every launch the thread queues meanwhile goes to it), then
    /// destroys the stream. What other threads queue meanwhile goes to the shared stream, so a
    /// graph recorded on it holds this thread's launches alone, and their copies and waits
    /// are not refused as work on a capturing stream. (Recording runs nothing: the stream
    /// needs no order with the shared one; the graph is launched on the shared stream.)
    pub fn capturing_on<T>(&self, record: impl FnOnce(sys::CUstream) -> Result<T, String>) -> Result<T, String> {
        self.bind()?;
        let mut stream: sys::CUstream = std::ptr::null_mut();
        // SAFETY: the context is current; the pointer is valid.
        check(
            unsafe { sys::cuStreamCreate(&mut stream, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32) },
            "cuStreamCreate",
        )?;
        let previous = CAPTURE.with(|c| c.replace((self.context as usize, stream as usize)));
        let recorded = record(stream);
        CAPTURE.with(|c| c.set(previous));
        // SAFETY: the stream is ours; destroying it with work queued is deferred by the
        // driver until that work completes (a recorded graph queued nothing).
        unsafe { sys::cuStreamDestroy_v2(stream) };
        recorded
    }

    /// Waits for everything queued on this thread's [`stream`](Self::stream).
    pub fn synchronize(&self) -> Result<(), String> {
        self.bind()?;
        // SAFETY: the stream belongs to this context.
        check(unsafe { sys::cuStreamSynchronize(self.stream()) }, "cuStreamSynchronize")
    }

    /// The stream's handle as an integer (what DLPack's `stream` argument carries).
    pub fn stream_handle(&self) -> u64 {
        self.stream() as u64
    }

    /// Makes work queued later on `consumer` (a stream handle of this device, `1` or `2` for
    /// the legacy and per-thread default streams) wait for everything queued on this
    /// context's stream so far: DLPack's stream rule, from the producer's side.
    pub fn order_before(&self, consumer: u64) -> Result<(), String> {
        self.bind()?;
        let mut event: sys::CUevent = std::ptr::null_mut();
        // SAFETY: the context is current; the event is made, recorded, waited on and destroyed
        // here (destroying a recorded event is deferred by the driver until it completes).
        unsafe {
            check(sys::cuEventCreate(&mut event, sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32), "cuEventCreate")?;
            let recorded = check(sys::cuEventRecord(event, self.stream), "cuEventRecord")
                .and_then(|_| check(sys::cuStreamWaitEvent(consumer as sys::CUstream, event, 0), "cuStreamWaitEvent"));
            sys::cuEventDestroy_v2(event);
            recorded
        }
    }

    /// The seconds `work` takes on this thread's stream, per call, over `runs` calls queued
    /// back to back between two timing events (the autotune's measurement; `work` only
    /// queues). Waits for the second event.
    pub fn time_queued<E: From<String>>(&self, runs: u32, mut work: impl FnMut() -> Result<(), E>) -> Result<f64, E> {
        self.with_events(|[start, end]| {
            self.record(start)?;
            for _ in 0..runs {
                work()?;
            }
            Ok(self.elapsed(start, end)? / f64::from(runs.max(1)))
        })
    }

    /// The seconds `work` takes on this thread's stream, per call, over `runs` calls, each
    /// timed alone after `prepare` has queued its own work outside the time (the autotune's
    /// measurement of a kernel that reads its operands from memory: `prepare` evicts the L2).
    /// Waits for each call.
    pub fn time_each<E: From<String>>(
        &self,
        runs: u32,
        mut prepare: impl FnMut() -> Result<(), E>,
        mut work: impl FnMut() -> Result<(), E>,
    ) -> Result<f64, E> {
        self.with_events(|[start, end]| {
            let mut seconds = 0.0;
            for _ in 0..runs {
                prepare()?;
                self.record(start)?;
                work()?;
                seconds += self.elapsed(start, end)?;
            }
            Ok(seconds / f64::from(runs.max(1)))
        })
    }

    /// Runs `f` with two timing events of this context, destroyed after.
    fn with_events<T, E: From<String>>(&self, f: impl FnOnce([sys::CUevent; 2]) -> Result<T, E>) -> Result<T, E> {
        self.bind()?;
        let mut events: [sys::CUevent; 2] = [std::ptr::null_mut(); 2];
        let made = events.iter_mut().try_for_each(|event| {
            // SAFETY: the context is current; the pointer is valid.
            check(unsafe { sys::cuEventCreate(event, 0) }, "cuEventCreate")
        });
        let result = match made {
            Ok(()) => f(events),
            Err(e) => Err(E::from(e)),
        };
        for event in events.into_iter().filter(|e| !e.is_null()) {
            // SAFETY: the events are ours; destroying a recorded one is deferred by the driver.
            unsafe { sys::cuEventDestroy_v2(event) };
        }
        result
    }

    /// Records `event` on the stream.
    fn record(&self, event: sys::CUevent) -> Result<(), String> {
        // SAFETY: the event and the stream belong to this context.
        check(unsafe { sys::cuEventRecord(event, self.stream()) }, "cuEventRecord")
    }

    /// Records `end` on the stream, waits for it and returns the seconds since `start`.
    fn elapsed(&self, start: sys::CUevent, end: sys::CUevent) -> Result<f64, String> {
        self.record(end)?;
        let mut millis = 0f32;
        // SAFETY: both events belong to this context and are recorded; the pointer is valid.
        unsafe {
            check(sys::cuEventSynchronize(end), "cuEventSynchronize")?;
            check(sys::cuEventElapsedTime_v2(&mut millis, start, end), "cuEventElapsedTime_v2")?;
        }
        Ok(f64::from(millis) / 1e3)
    }

    /// Whether this thread's stream is being captured into a CUDA graph now (work queued is
    /// recorded, not run: nothing may be read back).
    pub fn is_capturing(&self) -> Result<bool, String> {
        let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        // SAFETY: the stream belongs to this context; the pointer is valid.
        check(unsafe { sys::cuStreamIsCapturing(self.stream(), &mut status) }, "cuStreamIsCapturing")?;
        Ok(status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
    }

    /// Free and total device memory (`cuMemGetInfo`).
    pub fn memory_info(&self) -> Result<(u64, u64), String> {
        self.bind()?;
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: the context is current; pointers are valid.
        check(unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) }, "cuMemGetInfo_v2")?;
        Ok((free as u64, total as u64))
    }
}
