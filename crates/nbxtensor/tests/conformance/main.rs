//! The backend conformance suite: what every backend must pass (`docs/BACKENDS.md`).
//!
//! For every op of the catalogue (`ops::spec::catalogue()`) and every dtype a backend's launch
//! table lists for it, the suite checks values against float64 references of its own
//! (`reference.rs`, tolerances stated per family), the edge shapes (empty, 0-d, one element,
//! non-contiguous and stride-0 inputs, broadcasting), special values where the spec fixes
//! them, and capture/replay: a traced program of the op, planned, captured and replayed on
//! fresh inputs, must be byte-equal to an eager run. A dtype an op does not take must be
//! refused by name. The pairs are read from the table, never listed here: an op or dtype added
//! to a table without a check fails the suite, naming it.
//!
//! Every check runs on each backend: `cpu::<case>` always, `cuda::<case>` where a CUDA device is
//! present, `vulkan::<case>` where a Vulkan adapter is (the wgpu backend; Mesa's lavapipe in CI);
//! elsewhere each prints why it is skipped and passes. One binary:
//!
//! ```text
//! cargo test --release -p nbxtensor --test conformance            # CPU (and CUDA if present)
//! bash scripts/gpu.sh && bash scripts/gpu_run.sh                    # on a GPU machine
//! ```

mod attention;
mod binary;
mod cases;
mod cast;
mod catalogue;
mod complex;
mod create;
mod decode;
mod gather;
mod harness;
mod linalg;
mod matmul;
mod quant;
mod reduce;
mod reference;
mod rows;
mod sample;
mod scan;
mod select;
mod sort;
mod unary;

/// One `#[test]` per case and backend: `cpu::<case>` and `cuda::<case>`.
macro_rules! conformance {
    ($($family:ident :: $case:ident),* $(,)?) => {
        /// The CPU backend (always present).
        mod cpu {
            $(
                #[test]
                fn $case() {
                    crate::$family::$case(&crate::harness::Target::cpu());
                }
            )*
        }

        /// The wgpu backend through Vulkan, where an adapter is present (lavapipe in CI).
        mod vulkan {
            $(
                #[test]
                fn $case() {
                    if let Some(target) = crate::harness::Target::vulkan(concat!("vulkan::", stringify!($case))) {
                        crate::$family::$case(&target);
                    }
                }
            )*
        }

        /// The CUDA backend, where a device is present.
        mod cuda {
            $(
                #[test]
                fn $case() {
                    if let Some(target) = crate::harness::Target::cuda(concat!("cuda::", stringify!($case))) {
                        crate::$family::$case(&target);
                    }
                }
            )*
        }
    };
}

conformance! {
    catalogue::every_entry_has_a_check,
    catalogue::every_catalogue_pair_is_served_or_refused,
    catalogue::undefined_dtypes_are_refused_by_name,
    unary::unary_values,
    unary::unary_special_values,
    unary::unary_non_contiguous,
    unary::unary_edge_shapes,
    unary::unary_capture_replay,
    binary::binary_values,
    binary::binary_special_values,
    binary::binary_broadcasting,
    binary::binary_non_contiguous,
    binary::binary_edge_shapes,
    binary::binary_capture_replay,
    select::where_values,
    select::masked_fill_values,
    select::select_capture_replay,
    cast::cast_every_pair,
    cast::cast_layouts_and_edges,
    cast::copy_every_layout,
    cast::assign_every_layout,
    cast::cast_capture_replay,
    gather::embedding_values,
    gather::index_select_values,
    gather::concat_values,
    gather::gather_capture_replay,
    reduce::reduce_values,
    reduce::reduce_axes_and_keepdim,
    reduce::reduce_special_values,
    reduce::reduce_non_contiguous,
    reduce::reduce_edge_shapes,
    reduce::reduce_capture_replay,
    rows::softmax_values,
    rows::norm_values,
    rows::rope_values,
    rows::rows_non_contiguous,
    rows::rows_edge_shapes,
    rows::rows_capture_replay,
    matmul::matmul_values,
    matmul::linear_values,
    matmul::matmul_non_contiguous,
    matmul::matmul_edge_shapes,
    matmul::matmul_capture_replay,
    matmul::packed_values,
    attention::sdpa_values,
    attention::sdpa_long_rows,
    attention::sdpa_edge_cases,
    attention::sdpa_capture_replay,
    decode::decode_attention_values,
    decode::kv_cache_write_values,
    decode::decode_edge_cases,
    decode::decode_capture_replay,
    sample::sample_values,
    sample::sample_edge_cases,
    sample::sample_capture_replay,
    quant::pack_int4_values,
    quant::matmul_int4_values,
    quant::pack_int8_values,
    quant::matmul_int8_values,
    quant::quant_capture_replay,
    create::iota_values,
    scan::scan_values,
    scan::scan_capture_replay,
    sort::sort_values,
    sort::sort_capture_replay,
    linalg::linalg_values,
    linalg::linalg_edge_shapes,
    linalg::linalg_capture_replay,
}

/// The suite's own references, checked against tabulated values.
#[test]
fn references_match_tabulated_values() {
    reference::self_check();
}
