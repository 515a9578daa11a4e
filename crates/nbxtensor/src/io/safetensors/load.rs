//! Reading tensors by memory map: a tensor whose first byte is aligned to its dtype's width
//! is a read-only view into the map (no copy); any other is copied out of the map.

use super::header::{self, Header, TensorEntry, LENGTH_BYTES};
use crate::io::{IoError, Result};
use crate::memory::Device;
use crate::shape;
use crate::tensor::{Storage, Tensor, TensorError};
use memmap2::Mmap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

/// A tensor read from a file, with its name and whether it is a view into the file's map.
#[derive(Debug, Clone)]
pub struct LoadedTensor {
    /// The header key.
    pub name: String,
    /// The tensor: contiguous, on the host.
    pub tensor: Tensor,
    /// Whether the tensor's storage is the file's memory map itself (true when the data is
    /// aligned to the dtype's width; read-only), rather than a copy.
    pub zero_copy: bool,
}

/// Every tensor of the safetensors file at `path`, in file order (by data offset, then name),
/// after the whole header has been checked. The file is mapped once: aligned tensors are
/// read-only views into the map (kept alive by the tensors), the others are copies. The file
/// must not be truncated while mapped tensors live (as with any memory map).
///
/// ```
/// use nbxtensor::io::safetensors::{load, save};
/// use nbxtensor::tensor::Tensor;
/// let path = std::env::temp_dir().join(format!("nbx_load_doc_{}.safetensors", std::process::id()));
/// let (a, b) = (Tensor::from_vec(vec![1u8], &[1])?, Tensor::from_vec(vec![7i32, 8], &[2])?);
/// save(&path, &[("a", &a), ("b", &b)], None)?;
/// let loaded = load(&path)?;
/// assert_eq!(loaded.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["b", "a"]); // file order
/// assert!(loaded[0].zero_copy && loaded[0].tensor.is_read_only());
/// assert_eq!(loaded[0].tensor.to_vec::<i32>()?, [7, 8]);
/// # std::fs::remove_file(&path).unwrap();
/// # Ok::<(), nbxtensor::Error>(())
/// ```
pub fn load(path: impl AsRef<Path>) -> Result<Vec<LoadedTensor>> {
    let path = path.as_ref();
    let (map, file) = map_file(path)?;
    let header = header::parse_header(&map).map_err(|e| in_file(path, e))?;
    let size = header.data_start() + header.data_len();
    header
        .tensors
        .iter()
        .map(|entry| {
            check_size(&file, path, size)?;
            tensor_of(&map, &header, entry)
        })
        .collect()
}

/// Refuses to read the map of `file` when the file is no longer `size` bytes: a read past
/// the end of a mapped file is a SIGBUS, not an error. (The size is checked before each read,
/// so a tensor's copy never reads past the end; a view into the map still requires that the
/// file is not truncated while it lives, as every memory map does.)
fn check_size(file: &File, path: &Path, size: u64) -> Result<()> {
    let now = file.metadata().map_err(|e| IoError::os(format!("cannot stat '{}'", path.display()), &e))?.len();
    if now != size {
        return Err(IoError::Malformed(format!(
            "'{}' changed since it was opened: it is {now} bytes now, its header describes {size}",
            path.display()
        )));
    }
    Ok(())
}

/// A safetensors file whose header has been read and checked, without its data: names,
/// dtypes, shapes, byte ranges and metadata; tensors are read one at a time by [`SafetensorsIndex::load`].
pub struct SafetensorsIndex {
    path: PathBuf,
    header: Header,
    json: Vec<u8>,
    map: OnceLock<(Arc<Mmap>, File)>,
}

/// Reads and checks the header of the safetensors file at `path` (its first 8 bytes and the
/// JSON, by plain reads: the data section is neither read nor mapped).
///
/// ```
/// use nbxtensor::io::safetensors::{open, save};
/// use nbxtensor::tensor::Tensor;
/// use nbxtensor::DType;
/// let path = std::env::temp_dir().join(format!("nbx_open_doc_{}.safetensors", std::process::id()));
/// save(&path, &[("w", &Tensor::from_vec(vec![0.5f32; 6], &[2, 3])?)], None)?;
/// let index = open(&path)?;
/// let w = index.header().get("w").unwrap();
/// assert_eq!((w.dtype, w.shape.clone(), w.end - w.begin), (DType::Float32, vec![2, 3], 24));
/// assert_eq!(index.load("w")?.tensor.to_vec::<f32>()?, [0.5; 6]);
/// # std::fs::remove_file(&path).unwrap();
/// # Ok::<(), nbxtensor::Error>(())
/// ```
pub fn open(path: impl AsRef<Path>) -> Result<SafetensorsIndex> {
    let path = path.as_ref();
    let mut file = File::open(path).map_err(|e| IoError::os(format!("cannot open '{}'", path.display()), &e))?;
    let file_len = file.metadata().map_err(|e| IoError::os(format!("cannot stat '{}'", path.display()), &e))?.len();
    let read_error = |e: std::io::Error| IoError::os(format!("cannot read '{}'", path.display()), &e);
    let mut prefix = [0u8; LENGTH_BYTES];
    let prefix_len = usize::try_from(file_len).map_or(LENGTH_BYTES, |n| n.min(LENGTH_BYTES));
    file.read_exact(&mut prefix[..prefix_len]).map_err(read_error)?;
    let json_len = header::json_length(prefix.get(..prefix_len), file_len).map_err(|e| in_file(path, e))?;
    let mut json = vec![0u8; json_len];
    file.read_exact(&mut json).map_err(read_error)?;
    let data_len = file_len - LENGTH_BYTES as u64 - json_len as u64;
    let header = header::parse_json(&json, data_len).map_err(|e| in_file(path, e))?;
    Ok(SafetensorsIndex { path: path.to_path_buf(), header, json, map: OnceLock::new() })
}

impl SafetensorsIndex {
    /// The checked header: tensors in file order, byte ranges, metadata.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The file's path, as given to [`open`].
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The tensor names, in file order.
    pub fn names(&self) -> Vec<&str> {
        self.header.tensors.iter().map(|t| t.name.as_str()).collect()
    }

    /// Whether [`SafetensorsIndex::load`] gives the tensor `name` as a view into the file's map
    /// (its first byte aligned to its dtype's width) rather than a copy.
    pub fn is_zero_copy(&self, name: &str) -> Result<bool> {
        is_aligned(&self.header, self.entry(name)?)
    }

    /// The header entry of the tensor `name`; an unknown name is an error that names it and
    /// the file.
    pub fn entry(&self, name: &str) -> Result<&TensorEntry> {
        self.header
            .get(name)
            .ok_or_else(|| IoError::UnknownTensor(format!("'{}' holds no tensor named '{name}'", self.path.display())))
    }

    /// The tensor `name`, read by memory map (mapped on the first call, then shared). The file
    /// must still have the header and size it had when opened: its size is checked before
    /// each read, and a file changed since is refused by name (never a SIGBUS).
    pub fn load(&self, name: &str) -> Result<LoadedTensor> {
        let entry = self.entry(name)?;
        let (map, file) = match self.map.get() {
            Some((map, file)) => (map, file),
            None => {
                let (map, file) = map_file(&self.path)?;
                let start = LENGTH_BYTES;
                let unchanged = map.len() as u64 == self.header.data_start() + self.header.data_len()
                    && map.get(start..start + self.json.len()) == Some(&self.json[..]);
                if !unchanged {
                    return Err(IoError::Malformed(format!(
                        "'{}' changed since it was opened: its header or size differ",
                        self.path.display()
                    )));
                }
                let (map, file) = self.map.get_or_init(|| (map, file));
                (map, file)
            }
        };
        check_size(file, &self.path, self.header.data_start() + self.header.data_len())?;
        tensor_of(map, &self.header, entry)
    }
}

/// The whole file at `path`, mapped read-only, and the open file (to check its size later).
fn map_file(path: &Path) -> Result<(Arc<Mmap>, File)> {
    let file = File::open(path).map_err(|e| IoError::os(format!("cannot open '{}'", path.display()), &e))?;
    // SAFETY: the map is read-only; like every reader of memory-mapped weights, we require
    // that the file is not truncated while the map lives (documented on `load`).
    let map = unsafe { Mmap::map(&file) }.map_err(|e| IoError::os(format!("cannot map '{}'", path.display()), &e))?;
    Ok((Arc::new(map), file))
}

/// Prefixes a header error with the file's path.
fn in_file(path: &Path, error: IoError) -> IoError {
    match error {
        IoError::Malformed(message) => IoError::Malformed(format!("'{}': {message}", path.display())),
        other => other,
    }
}

/// Whether the tensor of `entry` starts at a file offset that is a multiple of its dtype's
/// width: a map starts on a page boundary, so its bytes are then aligned in memory too.
fn is_aligned(header: &Header, entry: &TensorEntry) -> Result<bool> {
    let itemsize = entry.dtype.itemsize().map_err(TensorError::from)? as u64;
    Ok((header.data_start() + entry.begin) % itemsize == 0)
}

/// The tensor of `entry`: a view into `map` when aligned to its dtype's width, else a copy.
fn tensor_of(map: &Arc<Mmap>, header: &Header, entry: &TensorEntry) -> Result<LoadedTensor> {
    // the header was checked against this map's length: these ranges lie inside it
    let start = (header.data_start() + entry.begin) as usize;
    let len = (entry.end - entry.begin) as usize;
    let bytes = &map[start..start + len];
    let zero_copy = is_aligned(header, entry)?;
    let storage = if zero_copy {
        let ptr = NonNull::new(bytes.as_ptr().cast_mut())
            .ok_or_else(|| IoError::Malformed("the memory map has a null address".to_string()))?;
        // SAFETY: `len` bytes at `ptr` lie inside the map, which the keeper (an Arc of it)
        // keeps mapped; the map is read-only, and so is the storage.
        unsafe { Storage::foreign(ptr, len, Device::CPU, true, Box::new(Arc::clone(map))) }
    } else {
        Storage::copy_of(bytes).map_err(TensorError::from)?
    };
    let strides = shape::contiguous_strides(&entry.shape).map_err(TensorError::from)?;
    let tensor = Tensor::from_storage(Arc::new(storage), entry.dtype, &entry.shape, &strides, 0)?;
    Ok(LoadedTensor { name: entry.name.clone(), tensor, zero_copy })
}
