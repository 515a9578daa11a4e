//! Adapters: the GPUs wgpu finds through each graphics API, and the device of one of them,
//! opened at its first use with the adapter's own limits. The facts a kernel depends on
//! (binding sizes, offset alignment, workgroup sizes, subgroup widths, the memory) are read
//! from the adapter, and checked against the device file where one names the adapter.

pub use super::spirv::FloatControls;
use crate::facts;
use crate::memory::DeviceKind;
use std::sync::{Arc, Mutex, OnceLock};

/// A graphics API wgpu reaches: each is a device kind of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Api {
    /// Vulkan (Linux, Windows, Android; Mesa's lavapipe on the CPU).
    Vulkan,
    /// Metal (Apple).
    Metal,
}

impl Api {
    /// The API of a device kind (`None` for a kind wgpu does not serve).
    pub fn of(kind: DeviceKind) -> Option<Api> {
        match kind {
            DeviceKind::Vulkan => Some(Api::Vulkan),
            DeviceKind::Metal => Some(Api::Metal),
            _ => None,
        }
    }

    /// The device kind of the API.
    pub fn kind(self) -> DeviceKind {
        match self {
            Api::Vulkan => DeviceKind::Vulkan,
            Api::Metal => DeviceKind::Metal,
        }
    }

    fn backends(self) -> wgpu::Backends {
        match self {
            Api::Vulkan => wgpu::Backends::VULKAN,
            Api::Metal => wgpu::Backends::METAL,
        }
    }

    /// Why the API may be absent, said when no adapter is found.
    fn missing(self) -> String {
        match self {
            Api::Vulkan => {
                // SAFETY: loading the Vulkan loader runs its initialisers, as wgpu would.
                let loader = ["libvulkan.so.1", "libvulkan.so", "vulkan-1.dll", "libvulkan.1.dylib"]
                    .into_iter()
                    .any(|name| unsafe { libloading::Library::new(name) }.is_ok());
                if loader {
                    "the Vulkan loader found no driver (no ICD: install one, e.g. Mesa's lavapipe, or point VK_DRIVER_FILES at it)".into()
                } else {
                    "no Vulkan loader (libvulkan.so.1) was found on this machine".into()
                }
            }
            Api::Metal => "Metal exists on Apple platforms only".into(),
        }
    }
}

/// The adapters of `api`, in the order wgpu enumerates them (a device's index is its place).
fn adapters(api: Api) -> &'static [wgpu::Adapter] {
    static FOUND: OnceLock<Mutex<Vec<(Api, &'static [wgpu::Adapter])>>> = OnceLock::new();
    let mut found = FOUND.get_or_init(|| Mutex::new(Vec::new())).lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, list)) = found.iter().find(|(a, _)| *a == api) {
        return list;
    }
    let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle();
    descriptor.backends = api.backends();
    let instance = wgpu::Instance::new(descriptor);
    let list: &'static [wgpu::Adapter] =
        Box::leak(pollster::block_on(instance.enumerate_adapters(api.backends())).into_boxed_slice());
    found.push((api, list));
    list
}

/// What one adapter reports: its name, driver and type, and the facts the kernels use.
#[derive(Clone, Debug)]
pub struct AdapterFacts {
    /// The adapter's name (`"NVIDIA H200"`, `"llvmpipe (LLVM 15.0.6, 256 bits)"`).
    pub name: String,
    /// Its driver and the driver's version.
    pub driver: String,
    /// Whether it is a software rasterizer running on the host (lavapipe).
    pub software: bool,
    /// The narrowest and widest subgroup the adapter may run.
    pub subgroup_sizes: (u32, u32),
    /// Whether the adapter offers 16-bit floats in shaders (`shader-f16`).
    pub shader_f16: bool,
    /// Whether the adapter offers 64-bit float arithmetic in shaders (`shader-f64`), which the
    /// accurate functions and the float sums use.
    pub shader_f64: bool,
    /// The most bytes one storage binding may cover.
    pub max_binding: u64,
    /// The largest buffer.
    pub max_buffer: u64,
    /// The alignment of a storage binding's offset.
    pub offset_alignment: u64,
    /// The most invocations in one workgroup.
    pub max_invocations: u32,
    /// The most workgroup (shared) memory, bytes.
    pub max_workgroup_memory: u32,
    /// The most workgroups along one dimension of a dispatch.
    pub max_groups: u32,
    /// The bytes of its own memory (the device-local heap), where the API says.
    pub memory: Option<u64>,
    /// The float controls the device honours (Vulkan's; none elsewhere).
    pub float_controls: FloatControls,
    /// Whether kernels can be handed to the driver as built here (wgpu's passthrough shaders):
    /// the way they declare the float controls.
    pub passthrough: bool,
}

fn facts_of(api: Api, adapter: &wgpu::Adapter) -> AdapterFacts {
    let info = adapter.get_info();
    let limits = adapter.limits();
    AdapterFacts {
        name: info.name.clone(),
        driver: format!("{} {}", info.driver, info.driver_info),
        software: info.device_type == wgpu::DeviceType::Cpu,
        subgroup_sizes: (info.subgroup_min_size, info.subgroup_max_size),
        shader_f16: adapter.features().contains(wgpu::Features::SHADER_F16),
        shader_f64: adapter.features().contains(wgpu::Features::SHADER_F64),
        max_binding: limits.max_storage_buffer_binding_size,
        max_buffer: limits.max_buffer_size,
        offset_alignment: u64::from(limits.min_storage_buffer_offset_alignment),
        max_invocations: limits.max_compute_invocations_per_workgroup,
        max_workgroup_memory: limits.max_compute_workgroup_storage_size,
        max_groups: limits.max_compute_workgroups_per_dimension,
        memory: local_memory(api, adapter),
        float_controls: float_controls(api, adapter),
        passthrough: api == Api::Vulkan && adapter.features().contains(wgpu::Features::PASSTHROUGH_SHADERS),
    }
}

/// The float controls of a Vulkan adapter (`VkPhysicalDeviceFloatControlsProperties`).
fn float_controls(api: Api, adapter: &wgpu::Adapter) -> FloatControls {
    if api != Api::Vulkan {
        return FloatControls::default();
    }
    // SAFETY: the raw handles are only read here, while the adapter lives.
    let Some(hal) = (unsafe { adapter.as_hal::<wgpu::hal::api::Vulkan>() }) else {
        return FloatControls::default();
    };
    let instance = hal.shared_instance().raw_instance();
    let mut controls = ash::vk::PhysicalDeviceFloatControlsProperties::default();
    let mut properties = ash::vk::PhysicalDeviceProperties2::default().push_next(&mut controls);
    // SAFETY: a query of a physical device of this instance (Vulkan 1.1, which wgpu requires).
    unsafe { instance.get_physical_device_properties2(hal.raw_physical_device(), &mut properties) };
    FloatControls {
        denorm_preserve: controls.shader_denorm_preserve_float32 == ash::vk::TRUE,
        signed_zero_inf_nan: controls.shader_signed_zero_inf_nan_preserve_float32 == ash::vk::TRUE,
    }
}

/// The device-local heap of a Vulkan adapter (the largest heap flagged device-local).
fn local_memory(api: Api, adapter: &wgpu::Adapter) -> Option<u64> {
    if api != Api::Vulkan {
        return None;
    }
    // SAFETY: the raw handles are only read here, while the adapter lives.
    let hal = unsafe { adapter.as_hal::<wgpu::hal::api::Vulkan>() }?;
    let instance = hal.shared_instance().raw_instance();
    // SAFETY: a query of a physical device of this instance.
    let props = unsafe { instance.get_physical_device_memory_properties(hal.raw_physical_device()) };
    const DEVICE_LOCAL: u32 = 1; // VK_MEMORY_HEAP_DEVICE_LOCAL_BIT
    props.memory_heaps[..props.memory_heap_count as usize]
        .iter()
        .filter(|heap| heap.flags.as_raw() & DEVICE_LOCAL != 0)
        .map(|heap| heap.size)
        .max()
}

/// The facts of every adapter of `api` (empty when the API has none here).
pub fn adapter_facts(api: Api) -> Vec<AdapterFacts> {
    adapters(api).iter().map(|a| facts_of(api, a)).collect()
}

/// Why `api` has no usable adapter here (`None` when it has one).
pub fn unavailable_reason(api: Api) -> Option<String> {
    adapters(api).is_empty().then(|| api.missing())
}

/// An opened device: wgpu's device and queue, and the adapter's facts.
pub struct Opened {
    /// The device.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    /// The adapter's facts.
    pub facts: AdapterFacts,
    /// The first error wgpu reported outside an error scope, or the device's loss.
    pub failure: Arc<Mutex<Option<String>>>,
}

/// Opens device `index` of `api` with the adapter's limits; its facts checked against the
/// device file that names it, if one does.
pub fn open(api: Api, index: u32) -> Result<Opened, String> {
    let label = format!("{}:{index}", api.kind().as_str());
    let list = adapters(api);
    let adapter = match list.get(index as usize) {
        Some(adapter) => adapter,
        None if list.is_empty() => return Err(format!("{label}: {}", api.missing())),
        None => {
            return Err(format!("{label}: no such device ({} {} adapter(s) here)", list.len(), api.kind().as_str()))
        }
    };
    let facts = facts_of(api, adapter);
    check_against_file(&label, &facts)?;
    let descriptor = wgpu::DeviceDescriptor {
        label: Some("nbxtensor"),
        required_features: adapter.features() & (wgpu::Features::SHADER_F64 | wgpu::Features::PASSTHROUGH_SHADERS),
        required_limits: adapter.limits(),
        ..Default::default()
    };
    let (device, queue) = pollster::block_on(adapter.request_device(&descriptor))
        .map_err(|e| format!("{label}: the adapter {} refused a device: {e}", facts.name))?;
    let failure = Arc::new(Mutex::new(None::<String>));
    let on_error = Arc::clone(&failure);
    device.on_uncaptured_error(Arc::new(move |error: wgpu::Error| {
        on_error.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(|| error.to_string());
    }));
    let on_loss = Arc::clone(&failure);
    device.set_device_lost_callback(move |reason, message| {
        on_loss
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(|| format!("device lost ({reason:?}): {message}"));
    });
    Ok(Opened { device, queue, facts, failure })
}

/// Refuses an adapter whose facts contradict the device file that names it: its subgroup width
/// against the file's warp size, its workgroup size against the file's block size, its memory
/// against the file's configurations. An adapter no file names is not checked.
fn check_against_file(label: &str, facts: &AdapterFacts) -> Result<(), String> {
    let Ok((vendor, name)) = facts::recognise(&facts.name) else {
        return Ok(());
    };
    let file = facts::device_file(vendor, name).map_err(|e| format!("{label}: {e}"))?;
    let contradiction = |what: String| {
        Err(format!("{label}: the adapter {} contradicts device file {vendor}/{name}: {what}", facts.name))
    };
    let warp = file.compute.warp_size;
    if facts.subgroup_sizes.0 > warp || facts.subgroup_sizes.1 < warp {
        return contradiction(format!(
            "subgroups of {} to {} invocations, the file's warp size {warp}",
            facts.subgroup_sizes.0, facts.subgroup_sizes.1
        ));
    }
    if facts.max_invocations > file.compute.max_threads_per_block {
        return contradiction(format!(
            "{} invocations a workgroup, over the file's {} threads a block",
            facts.max_invocations, file.compute.max_threads_per_block
        ));
    }
    if let Some(bytes) = facts.memory.filter(|_| !file.memory.device_memory_gb.is_empty()) {
        let largest = file.memory.device_memory_gb.iter().fold(0.0f64, |a, &b| a.max(b)) * 1e9;
        if bytes as f64 > largest * 1.1 {
            return contradiction(format!("{bytes} bytes of memory, over the file's largest {largest} bytes"));
        }
    }
    Ok(())
}
