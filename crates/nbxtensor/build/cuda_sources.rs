//! The CUDA sources of the crate as their parts: `cuda_kernels.rs` composes each source's text
//! from them and writes a `KernelSource` static for each (`src/backend/cuda/source.rs` includes
//! them).

/// One CUDA source: its name, and the files of `kernels/` it is made of.
pub struct SourceParts {
    /// The name of its Rust static (`UNARY`).
    pub ident: &'static str,
    /// Its name: compile errors and cache keys say it (`unary_integers.cu`).
    pub name: &'static str,
    /// A `#define` put first: it selects this source's part of a file two sources share.
    pub define: Option<&'static str>,
    /// Headers of `kernels/` put before the file, in order.
    pub headers: &'static [&'static str],
    /// The file of `kernels/`.
    pub file: &'static str,
    /// What it holds (its static's doc comment).
    pub doc: &'static str,
}

const fn parts(
    ident: &'static str,
    name: &'static str,
    define: Option<&'static str>,
    headers: &'static [&'static str],
    file: &'static str,
    doc: &'static str,
) -> SourceParts {
    SourceParts { ident, name, define, headers, file, doc }
}

const ELEMENTWISE: &[&str] = &["indexer.cuh", "integers.cuh"];
const INDEXED: &[&str] = &["indexer.cuh"];
const ROWS: &[&str] = &["rows.cuh"];
const PHILOX: &[&str] = &["philox.cuh"];
const TENSOR_CORES: &[&str] = &["tensor_cores.cuh"];

/// Every CUDA source of the crate.
pub const SOURCES: &[SourceParts] = &[
    parts("UNARY", "unary.cu", Some("NBX_UNARY_FLOATS"), ELEMENTWISE, "unary.cu", "The unary kernels on the floats."),
    parts(
        "UNARY_INTEGERS",
        "unary_integers.cu",
        Some("NBX_UNARY_INTEGERS"),
        ELEMENTWISE,
        "unary.cu",
        "The unary kernels on the integers and bool.",
    ),
    parts(
        "BINARY",
        "binary.cu",
        Some("NBX_BINARY_FLOATS"),
        ELEMENTWISE,
        "binary.cu",
        "The binary kernels on the floats.",
    ),
    parts(
        "BINARY_INTEGERS",
        "binary_integers.cu",
        Some("NBX_BINARY_INTEGERS"),
        ELEMENTWISE,
        "binary.cu",
        "The binary kernels on the integers and bool.",
    ),
    parts("COMPARE", "compare.cu", Some("NBX_COMPARE_FLOATS"), ELEMENTWISE, "compare.cu", "The comparisons of floats."),
    parts(
        "COMPARE_INTEGERS",
        "compare_integers.cu",
        Some("NBX_COMPARE_INTEGERS"),
        ELEMENTWISE,
        "compare.cu",
        "The comparisons of integers and bools.",
    ),
    parts("SELECT", "select.cu", None, INDEXED, "select.cu", "`where` and `masked_fill`, by element width."),
    parts(
        "CAST_FROM_FLOATS",
        "cast_from_floats.cu",
        Some("NBX_CAST_FROM_FLOATS"),
        INDEXED,
        "cast.cu",
        "The casts from float32, float16 and bfloat16.",
    ),
    parts(
        "CAST_FROM_SIGNED",
        "cast_from_signed.cu",
        Some("NBX_CAST_FROM_SIGNED"),
        INDEXED,
        "cast.cu",
        "The casts from the signed integers.",
    ),
    parts(
        "CAST_FROM_UNSIGNED",
        "cast_from_unsigned.cu",
        Some("NBX_CAST_FROM_UNSIGNED"),
        INDEXED,
        "cast.cu",
        "The casts from the unsigned integers.",
    ),
    parts(
        "CAST_FROM_BOOL",
        "cast_from_bool.cu",
        Some("NBX_CAST_FROM_BOOL"),
        INDEXED,
        "cast.cu",
        "The casts from bool.",
    ),
    parts("COPY", "copy.cu", None, INDEXED, "copy.cu", "Strided copies, by element width."),
    parts("GATHER", "gather.cu", None, INDEXED, "gather.cu", "Gathers of rows and elements by index."),
    parts("GEMV", "gemv.cu", None, TENSOR_CORES, "gemv.cu", "The one-row products of bfloat16 and float16 weights."),
    parts("PHILOX", "philox.cu", None, PHILOX, "philox.cu", "Philox words of a generator's stream."),
    parts(
        "REDUCE",
        "reduce.cu",
        None,
        &[],
        "reduce.cu",
        "The reductions: rows, columns, and split rows with their finish.",
    ),
    parts("SOFTMAX", "softmax.cu", None, ROWS, "softmax.cu", "Softmax and log-softmax over rows and columns."),
    parts("NORM", "norm.cu", None, ROWS, "norm.cu", "layer_norm, rms_norm, add_rms_norm and add_layer_norm over rows."),
    parts("ROPE", "rope.cu", None, &[], "rope.cu", "Rotary position embeddings."),
    parts(
        "ATTENTION",
        "attention.cu",
        None,
        &[],
        "attention.cu",
        "Attention on the CUDA cores: prefill, and decode with its combine.",
    ),
    parts(
        "DECODE",
        "decode.cu",
        None,
        TENSOR_CORES,
        "decode.cu",
        "Decode attention over a KV cache (split and combine) and the cache write.",
    ),
    parts("SAMPLE", "sample.cu", None, PHILOX, "sample.cu", "Sampling a token from each row of logits."),
    parts(
        "QUANT",
        "quant.cu",
        None,
        TENSOR_CORES,
        "quant.cu",
        "The products of int4-g128 weights (matmul_int4): GEMV and GEMM.",
    ),
    parts("CREATE", "create.cu", None, &[], "create.cu", "iota: ranges of every number dtype."),
    parts("SCAN", "scan.cu", None, &[], "scan.cu", "Cumulative sums and products."),
    parts("SORT", "sort.cu", None, &[], "sort.cu", "Sorts, argsorts and searchsorted."),
];

/// The file every source is compiled after (storage types, conversions, strided layouts).
pub const PRELUDE_FILE: &str = "prelude.cuh";

/// The text of a source from its parts; `read` gives the text of a file of `kernels/`.
pub fn compose(source: &SourceParts, read: impl Fn(&str) -> String) -> String {
    let mut text = String::new();
    if let Some(define) = source.define {
        text.push_str(&format!("#define {define}\n"));
    }
    for header in source.headers {
        text.push_str(&read(header));
    }
    if !text.is_empty() {
        text.push_str(&format!("#line 1 \"{}\"\n", source.file));
    }
    text.push_str(&read(source.file));
    text
}
