//! Vulkan shader modules built here: naga compiles a kernel's WGSL to SPIR-V, which then asks
//! the driver, through SPIR-V's float controls, to keep float32 subnormals (`DenormPreserve`)
//! and the IEEE meaning of signed zeros, infinities and NaN (`SignedZeroInfNanPreserve`), where
//! the device offers them. Without them a driver may flush float32 subnormals to zero (NVIDIA's
//! does: `add` of two bfloat16 subnormals gave 0 on an H200) and assume no NaN. wgpu's own WGSL
//! path has no way to ask for either, so these modules go to the driver as they are (wgpu's
//! passthrough), after naga's validation here, with the pipeline's bind group layout written
//! out from the module's bindings.

use wgpu::naga;

/// The float controls a Vulkan device honours for float32.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FloatControls {
    /// `shaderDenormPreserveFloat32`.
    pub denorm_preserve: bool,
    /// `shaderSignedZeroInfNanPreserveFloat32`.
    pub signed_zero_inf_nan: bool,
}

/// A compiled kernel: its SPIR-V words, its bind group layout's entries, its workgroup size.
pub struct Compiled {
    /// The module's words.
    pub words: Vec<u32>,
    /// One entry per binding of group 0, in binding order.
    pub layout: Vec<wgpu::BindGroupLayoutEntry>,
    /// The entry point's workgroup size.
    pub workgroup: [u32; 3],
}

const OP_EXTENSION: u32 = 10;
const OP_ENTRY_POINT: u32 = 15;
const OP_EXECUTION_MODE: u32 = 16;
const OP_CAPABILITY: u32 = 17;
const CAPABILITY_DENORM_PRESERVE: u32 = 4464;
const CAPABILITY_SIGNED_ZERO_INF_NAN_PRESERVE: u32 = 4466;
const MODE_DENORM_PRESERVE: u32 = 4459;
const MODE_SIGNED_ZERO_INF_NAN_PRESERVE: u32 = 4461;

/// The instruction `opcode` with `operands`.
fn instruction(opcode: u32, operands: &[u32]) -> Vec<u32> {
    let mut words = vec![((operands.len() as u32 + 1) << 16) | opcode];
    words.extend_from_slice(operands);
    words
}

/// A literal string's words (nul-terminated, padded with zeros).
fn literal(text: &str) -> Vec<u32> {
    let mut bytes = text.as_bytes().to_vec();
    bytes.push(0);
    bytes.resize(bytes.len().div_ceil(4) * 4, 0);
    bytes.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// The positions, in `words`, of each instruction after the 5-word header, with its opcode.
fn instructions(words: &[u32]) -> Vec<(usize, u32)> {
    let mut at = 5;
    let mut out = Vec::new();
    while at < words.len() {
        let count = (words[at] >> 16) as usize;
        out.push((at, words[at] & 0xffff));
        at += count.max(1);
    }
    out
}

/// `words` with the float controls `controls` asks for declared: the capabilities after the
/// module's own, the extension after them, one execution mode per control after the entry point.
pub fn with_float_controls(words: &[u32], controls: FloatControls) -> Result<Vec<u32>, String> {
    let list = instructions(words);
    let last_capability = list.iter().filter(|(_, op)| *op == OP_CAPABILITY).map(|(at, _)| *at).max();
    let entry = list.iter().find(|(_, op)| *op == OP_ENTRY_POINT).map(|(at, _)| *at);
    let (Some(last_capability), Some(entry)) = (last_capability, entry) else {
        return Err("the SPIR-V module has no capability or no entry point".into());
    };
    let entry_id = words[entry + 2];
    let entry_end = entry + (words[entry] >> 16) as usize;
    let capability_end = last_capability + (words[last_capability] >> 16) as usize;
    let mut capabilities = Vec::new();
    let mut modes = Vec::new();
    if controls.denorm_preserve {
        capabilities.extend(instruction(OP_CAPABILITY, &[CAPABILITY_DENORM_PRESERVE]));
        modes.extend(instruction(OP_EXECUTION_MODE, &[entry_id, MODE_DENORM_PRESERVE, 32]));
    }
    if controls.signed_zero_inf_nan {
        capabilities.extend(instruction(OP_CAPABILITY, &[CAPABILITY_SIGNED_ZERO_INF_NAN_PRESERVE]));
        modes.extend(instruction(OP_EXECUTION_MODE, &[entry_id, MODE_SIGNED_ZERO_INF_NAN_PRESERVE, 32]));
    }
    if capabilities.is_empty() {
        return Ok(words.to_vec());
    }
    capabilities.extend(instruction(OP_EXTENSION, &literal("SPV_KHR_float_controls")));
    let mut out = Vec::with_capacity(words.len() + capabilities.len() + modes.len());
    out.extend_from_slice(&words[..capability_end]);
    out.extend(capabilities);
    out.extend_from_slice(&words[capability_end..entry_end]);
    out.extend(modes);
    out.extend_from_slice(&words[entry_end..]);
    Ok(out)
}

/// Compiles `source` (one compute entry point, `main`, bindings in group 0) to SPIR-V with the
/// float controls, without the runtime checks wgpu's path would add (the kernels index inside
/// their windows: `pipeline.rs`).
pub fn compile(source: &str, controls: FloatControls) -> Result<Compiled, String> {
    let module = naga::front::wgsl::parse_str(source).map_err(|e| e.emit_to_string(source))?;
    let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
        .validate(&module)
        .map_err(|e| e.emit_to_string(source))?;
    let entry = module.entry_points.first().ok_or("a kernel without an entry point")?;
    let unchecked = naga::proc::BoundsCheckPolicy::Unchecked;
    let options = naga::back::spv::Options {
        lang_version: (1, 3),
        flags: naga::back::spv::WriterFlags::empty(),
        bounds_check_policies: naga::proc::BoundsCheckPolicies {
            index: unchecked,
            buffer: unchecked,
            image_load: unchecked,
            binding_array: unchecked,
        },
        zero_initialize_workgroup_memory: naga::back::spv::ZeroInitializeWorkgroupMemoryMode::None,
        force_loop_bounding: false,
        ..Default::default()
    };
    let pipeline =
        naga::back::spv::PipelineOptions { shader_stage: naga::ShaderStage::Compute, entry_point: entry.name.clone() };
    let words = naga::back::spv::write_vec(&module, &info, &options, Some(&pipeline)).map_err(|e| e.to_string())?;
    let mut layout: Vec<wgpu::BindGroupLayoutEntry> = Vec::new();
    for (_, var) in module.global_variables.iter() {
        let (Some(binding), naga::AddressSpace::Storage { access }) = (&var.binding, var.space) else {
            continue;
        };
        layout.push(wgpu::BindGroupLayoutEntry {
            binding: binding.binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only: !access.contains(naga::StorageAccess::STORE) },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        });
    }
    layout.sort_by_key(|e| e.binding);
    Ok(Compiled { words: with_float_controls(&words, controls)?, layout, workgroup: entry.workgroup_size })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KERNEL: &str = "@group(0) @binding(0) var<storage, read_write> y: array<f32>;\n\
        @group(0) @binding(1) var<storage, read> p: array<u32>;\n\
        @compute @workgroup_size(64)\nfn main(@builtin(global_invocation_id) g: vec3<u32>) { y[g.x] = y[g.x] + f32(p[0]); }\n";

    #[test]
    fn the_float_controls_are_declared_once_each_in_their_sections() {
        let plain = compile(KERNEL, FloatControls::default()).unwrap();
        let both = FloatControls { denorm_preserve: true, signed_zero_inf_nan: true };
        let controlled = compile(KERNEL, both).unwrap();
        assert_eq!(plain.workgroup, [64, 1, 1]);
        assert_eq!(plain.layout.len(), 2);
        assert!(matches!(
            plain.layout[1].ty,
            wgpu::BindingType::Buffer { ty: wgpu::BufferBindingType::Storage { read_only: true }, .. }
        ));
        let ops = |w: &[u32]| {
            instructions(w).into_iter().map(|(at, op)| (op, w[at + 1..].first().copied())).collect::<Vec<_>>()
        };
        let (a, b) = (ops(&plain.words), ops(&controlled.words));
        assert_eq!(b.len(), a.len() + 5, "two capabilities, the extension, two execution modes");
        let position = |op: u32, operand: u32| b.iter().position(|&(o, x)| o == op && x == Some(operand)).unwrap();
        let last_capability = b.iter().rposition(|&(o, _)| o == OP_CAPABILITY).unwrap();
        assert!(position(OP_CAPABILITY, CAPABILITY_DENORM_PRESERVE) <= last_capability);
        let extension = b.iter().position(|&(o, _)| o == OP_EXTENSION).unwrap();
        assert!(extension > last_capability);
        let entry = b.iter().position(|&(o, _)| o == OP_ENTRY_POINT).unwrap();
        let modes: Vec<usize> =
            b.iter().enumerate().filter(|(_, (o, _))| *o == OP_EXECUTION_MODE).map(|(i, _)| i).collect();
        assert!(modes.iter().all(|&m| m > entry) && modes.len() >= 3, "the workgroup size's mode and the two controls");
        // the header's bound is untouched (no new ids), and the words parse to the end
        assert_eq!(controlled.words[3], plain.words[3]);
        assert_eq!(
            instructions(&controlled.words).last().map(|&(at, _)| at + (controlled.words[at] >> 16) as usize),
            Some(controlled.words.len())
        );
    }

    #[test]
    fn a_kernel_that_does_not_compile_is_refused_with_naga_s_message() {
        let err = compile("fn main( {", FloatControls::default()).err().unwrap();
        assert!(err.contains("expected"), "{err}");
    }
}
