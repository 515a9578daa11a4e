//! The autotune's proven settings: a kernel's tile or split choice for a device and a shape
//! class, measured once among its candidates at first use and kept in the proven-settings
//! store ([`autotune_store`]), so that no later call, and no later process, measures it again.
//!
//! The store holds one JSON file per device, `<store>/autotune/<device>.json` (the device's
//! name with every character outside `[A-Za-z0-9._-]` spelled `_`, and a hash of the whole name
//! appended where that changed it or it is long):
//!
//! ```json
//! { "format": 1, "device": "NVIDIA H100 80GB HBM3",
//!   "entries": { "matmul_fp16 · m≤16 n=4096": {
//!     "measured": [ { "candidate": "64x64", "seconds": 2.1e-5 },
//!                   { "candidate": "128x64", "seconds": 1.7e-5 } ],
//!     "choice": "128x64" } } }
//! ```
//!
//! An entry answers only a caller with the same candidates (in any order); for another list it
//! is stale, measured again and overwritten. Each process reads a device's file once (a memory
//! cache then answers); a write takes the file's lock (`<device>.lock` beside it), reads the
//! file again, adds its entry and replaces the file whole (written beside, then renamed), so
//! that processes tuning different keys lose nothing and no reader sees half a file.
//!
//! As the GPU kernel cache does (`<store>/kernels/`), an unreadable or damaged file is a miss:
//! it is named on stderr, its settings are measured again and the file is rewritten; a store
//! that cannot be written is an error naming the file.
//!
//! A dry run ([`super::launch_observer`]) measures nothing: the backend asks [`proven`] and
//! records [`TuneKey::spelled`] with whether it was tuned.

use super::{autotune_store, SettingsError};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

/// The version of the file's layout this build reads and writes.
const FORMAT: u32 = 1;

/// Between the parts of a spelled key.
const SEPARATOR: &str = " · ";

/// The longest device name kept whole in a file name.
const NAME_LIMIT: usize = 96;

/// What a choice is proven for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TuneKey {
    /// The device, as its backend names it (its model, and whatever else changes the answer).
    pub device: String,
    /// The kernel whose settings are chosen.
    pub kernel: String,
    /// The class of shapes one choice serves.
    pub shape: String,
}

impl TuneKey {
    /// A key of its three parts.
    pub fn new(device: impl Into<String>, kernel: impl Into<String>, shape: impl Into<String>) -> Self {
        TuneKey { device: device.into(), kernel: kernel.into(), shape: shape.into() }
    }

    /// "device · kernel · shape" spelled as one string (what the launch observer records, and
    /// the store's key).
    ///
    /// ```
    /// use nbxtensor::settings::autotune::TuneKey;
    /// assert_eq!(TuneKey::new("H100", "matmul_fp16", "m≤16").spelled(), "H100 · matmul_fp16 · m≤16");
    /// ```
    pub fn spelled(&self) -> String {
        format!("{}{SEPARATOR}{}{SEPARATOR}{}", self.device, self.kernel, self.shape)
    }

    /// The entry's name in its device's file: "kernel · shape".
    fn entry(&self) -> String {
        format!("{}{SEPARATOR}{}", self.kernel, self.shape)
    }
}

/// A device's file.
#[derive(Serialize, Deserialize)]
struct StoreFile {
    format: u32,
    device: String,
    entries: BTreeMap<String, Entry>,
}

/// One proven choice: every candidate measured, and the fastest.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Entry {
    measured: Vec<Measured>,
    choice: String,
}

/// One candidate's time.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Measured {
    candidate: String,
    seconds: f64,
}

impl Entry {
    /// The choice, where this entry measured exactly `candidates` (in any order) and its choice
    /// is one of them; `None` for a stale or damaged entry.
    fn choice_among(&self, candidates: &[&str]) -> Option<&str> {
        let mut stored: Vec<&str> = self.measured.iter().map(|m| m.candidate.as_str()).collect();
        let mut asked = candidates.to_vec();
        stored.sort_unstable();
        asked.sort_unstable();
        (stored == asked && asked.contains(&self.choice.as_str())).then_some(self.choice.as_str())
    }
}

/// What this process knows of the store.
#[derive(Default)]
struct Memory {
    /// Each device file's entries, read once (keyed by the file's path, so by store too).
    files: HashMap<PathBuf, BTreeMap<String, Entry>>,
    /// One gate per entry, held while it is measured.
    gates: HashMap<(PathBuf, String), Arc<Mutex<()>>>,
}

static MEMORY: LazyLock<Mutex<Memory>> = LazyLock::new(Mutex::default);

/// Held while this process writes a device file.
static WRITING: Mutex<()> = Mutex::new(());

static MEASUREMENTS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The entries this thread is measuring now (a measurement that asks for its own key again
    /// is an error, not a deadlock).
    static MEASURING: RefCell<Vec<(PathBuf, String)>> = const { RefCell::new(Vec::new()) };
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// How many candidate measurements this process has made (tests and benchmarks read it).
pub fn measurements() -> u64 {
    MEASUREMENTS.load(Ordering::Relaxed)
}

/// The proven choice for `key` among `candidates`, if the store (memory cache, then the file)
/// has one that is still a candidate: an entry that measured these candidates, in any order.
pub fn proven(key: &TuneKey, candidates: &[&str]) -> Result<Option<String>, SettingsError> {
    check(key, candidates)?;
    let path = store_file(&key.device)?;
    Ok(remembered(&path, &key.device, &key.entry(), candidates))
}

/// The proven choice, or: each candidate measured by `measure` (its seconds; an Err is
/// propagated naming the key and the candidate), the fastest kept (the first on ties), written
/// to the store and returned. Threads asking for one key together measure it once.
///
/// ```
/// use nbxtensor::settings::autotune::{choose, measurements, TuneKey};
/// use nbxtensor::settings::autotune_store::{set_store, StoreSetting};
/// let store = std::env::temp_dir().join(format!("nbx-autotune-doc-{}", std::process::id()));
/// set_store(StoreSetting::Path(store.clone()));
/// let key = TuneKey::new("doc device", "gemv", "n=4096");
/// let before = measurements();
/// let times = |tile: &str| Ok(if tile == "128" { 1e-5 } else { 2e-5 });
/// assert_eq!(choose(&key, &["64", "128"], times)?, "128");
/// assert_eq!(measurements() - before, 2);
/// assert_eq!(choose(&key, &["64", "128"], |_| unreachable!())?, "128", "proven, not measured");
/// set_store(StoreSetting::Default);
/// std::fs::remove_dir_all(store).unwrap();
/// # Ok::<(), nbxtensor::settings::SettingsError>(())
/// ```
pub fn choose(
    key: &TuneKey,
    candidates: &[&str],
    mut measure: impl FnMut(&str) -> Result<f64, String>,
) -> Result<String, SettingsError> {
    check(key, candidates)?;
    let path = store_file(&key.device)?;
    let entry_name = key.entry();
    if let Some(choice) = remembered(&path, &key.device, &entry_name, candidates) {
        return Ok(choice);
    }
    let _measuring = Measuring::enter(&path, &entry_name, key)?;
    let gate = Arc::clone(lock(&MEMORY).gates.entry((path.clone(), entry_name.clone())).or_default());
    let _gate = lock(&gate);
    // another thread may have measured it while this one waited at the gate
    if let Some(choice) = remembered(&path, &key.device, &entry_name, candidates) {
        return Ok(choice);
    }
    let mut measured = Vec::with_capacity(candidates.len());
    for &candidate in candidates {
        MEASUREMENTS.fetch_add(1, Ordering::Relaxed);
        let seconds = measure(candidate).map_err(|e| {
            SettingsError::Measurement(format!(
                "autotune {}: measuring the candidate {candidate} failed: {e}",
                key.spelled()
            ))
        })?;
        if !seconds.is_finite() || seconds < 0.0 {
            return Err(SettingsError::Measurement(format!(
                "autotune {}: the candidate {candidate} measured {seconds} seconds (a time is finite and not negative)",
                key.spelled()
            )));
        }
        measured.push(Measured { candidate: candidate.to_string(), seconds });
    }
    let mut fastest = &measured[0];
    for m in &measured[1..] {
        if m.seconds < fastest.seconds {
            fastest = m;
        }
    }
    let entry = Entry { choice: fastest.candidate.clone(), measured };
    let choice = entry.choice.clone();
    write_entry(&path, &key.device, entry_name, entry)?;
    Ok(choice)
}

/// A key with its three parts named, and candidates that are named, distinct and not none.
fn check(key: &TuneKey, candidates: &[&str]) -> Result<(), SettingsError> {
    let invalid = |why: &str| Err(SettingsError::Invalid(format!("autotune {}: {why}", key.spelled())));
    if key.device.is_empty() || key.kernel.is_empty() || key.shape.is_empty() {
        return invalid("a key names its device, kernel and shape");
    }
    if candidates.is_empty() {
        return invalid("there are no candidates to choose among");
    }
    for (i, candidate) in candidates.iter().enumerate() {
        if candidate.is_empty() {
            return invalid("a candidate is an empty name");
        }
        if candidates[..i].contains(candidate) {
            return invalid(&format!("the candidate {candidate} is listed twice"));
        }
    }
    Ok(())
}

/// The file of `device` in the store in force.
fn store_file(device: &str) -> Result<PathBuf, SettingsError> {
    Ok(autotune_store::directory()?.join("autotune").join(file_name(device)))
}

/// `<device>.json`, the device's name kept to `[A-Za-z0-9._-]`; where that changes it, or it
/// is long, its hash follows, so that two devices never share a file.
fn file_name(device: &str) -> String {
    let kept = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    let clean: String = device.chars().map(|c| if kept(c) { c } else { '_' }).collect();
    if clean == device && clean.len() <= NAME_LIMIT {
        return format!("{clean}.json");
    }
    // FNV-1a: the same name in every process and build
    let hash = device.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    format!("{}-{hash:016x}.json", &clean[..clean.len().min(NAME_LIMIT)])
}

/// The choice this process knows for the entry, reading its device's file at the first ask.
fn remembered(path: &Path, device: &str, entry: &str, candidates: &[&str]) -> Option<String> {
    let mut memory = lock(&MEMORY);
    let entries = memory.files.entry(path.to_path_buf()).or_insert_with(|| read_entries(path, device, true));
    entries.get(entry).and_then(|e| e.choice_among(candidates)).map(str::to_string)
}

/// The entries of a device's file: none where it is missing, and none (named on stderr when
/// `warn`) where it is unreadable, damaged, of another format or another device's.
fn read_entries(path: &Path, device: &str, warn: bool) -> BTreeMap<String, Entry> {
    let problem = match std::fs::read(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return BTreeMap::new(),
        Err(e) => e.to_string(),
        Ok(bytes) => match serde_json::from_slice::<StoreFile>(&bytes) {
            Ok(file) if file.format == FORMAT && file.device == device => return file.entries,
            Ok(file) if file.format != FORMAT => format!("format {} where this build reads {FORMAT}", file.format),
            Ok(file) => format!("it holds the device {:?}", file.device),
            Err(e) => e.to_string(),
        },
    };
    if warn {
        eprintln!(
            "nbxtensor: the autotune store file {} is unreadable or damaged ({problem}); \
             its settings are measured again and the file rewritten",
            path.display()
        );
    }
    BTreeMap::new()
}

/// Adds `entry` to the device's file (read again under its lock, so that what other processes
/// wrote since is kept), replaces the file whole, and brings this process's memory up to date.
fn write_entry(path: &Path, device: &str, name: String, entry: Entry) -> Result<(), SettingsError> {
    let unwritable = |e: std::io::Error| {
        SettingsError::Unwritable(format!(
            "autotune store: cannot write {}: {e}; make its directory writable, or name another store \
             (settings::autotune_store::set_store, nbxtensor.ops.autotune_settings.set_store in Python)",
            path.display()
        ))
    };
    let _writing = lock(&WRITING);
    if let Some(folder) = path.parent() {
        std::fs::create_dir_all(folder).map_err(unwritable)?;
    }
    let lock_file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path.with_extension("lock"))
        .map_err(unwritable)?;
    match lock_file.lock() {
        // a file system without locks still gets whole files (the rename)
        Err(e) if e.kind() == std::io::ErrorKind::Unsupported => {}
        other => other.map_err(unwritable)?,
    }
    let mut entries = read_entries(path, device, false);
    entries.insert(name.clone(), entry.clone());
    let file = StoreFile { format: FORMAT, device: device.to_string(), entries };
    let text = serde_json::to_string_pretty(&file)
        .map_err(|e| SettingsError::Invalid(format!("autotune store {}: {e}", path.display())))?;
    let partial = path.with_extension(format!("json.{}.partial", std::process::id()));
    std::fs::write(&partial, text + "\n").map_err(unwritable)?;
    std::fs::rename(&partial, path).map_err(|e| {
        let _ = std::fs::remove_file(&partial);
        unwritable(e)
    })?;
    // this process's own entries stay as it knows them; the file adds what others wrote
    let mut memory = lock(&MEMORY);
    let known = memory.files.entry(path.to_path_buf()).or_default();
    for (other, theirs) in file.entries {
        known.entry(other).or_insert(theirs);
    }
    known.insert(name, entry);
    Ok(())
}

/// Marks an entry as being measured by this thread, until dropped.
struct Measuring(PathBuf, String);

impl Measuring {
    fn enter(path: &Path, entry: &str, key: &TuneKey) -> Result<Self, SettingsError> {
        let mark = (path.to_path_buf(), entry.to_string());
        MEASURING.with(|m| {
            let mut m = m.borrow_mut();
            if m.contains(&mark) {
                return Err(SettingsError::Measurement(format!(
                    "autotune {}: measuring a candidate asked for the same key again",
                    key.spelled()
                )));
            }
            m.push(mark.clone());
            Ok(Measuring(mark.0, mark.1))
        })
    }
}

impl Drop for Measuring {
    fn drop(&mut self) {
        let _ = MEASURING.try_with(|m| m.borrow_mut().retain(|(p, e)| !(p == &self.0 && e == &self.1)));
    }
}

/// Forgets what this process read of the store, as a new process would start.
#[cfg(test)]
pub(crate) fn forget_memory() {
    *lock(&MEMORY) = Memory::default();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::autotune_store::{set_store, StoreSetting};
    use std::sync::atomic::AtomicUsize;

    /// A fresh store for one test, set as the store in force; removed and reset when dropped.
    struct Store(PathBuf);

    impl Store {
        fn new(name: &str) -> Self {
            let dir = std::env::temp_dir().join(format!("nbx-autotune-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            set_store(StoreSetting::Path(dir.clone()));
            forget_memory();
            Store(dir)
        }

        fn file(&self, device: &str) -> PathBuf {
            self.0.join("autotune").join(file_name(device))
        }
    }

    impl Drop for Store {
        fn drop(&mut self) {
            set_store(StoreSetting::Default);
            forget_memory();
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn times(table: &'static [(&'static str, f64)]) -> impl FnMut(&str) -> Result<f64, String> {
        move |c| table.iter().find(|(name, _)| *name == c).map(|(_, s)| *s).ok_or(format!("no time for {c}"))
    }

    fn never(candidate: &str) -> Result<f64, String> {
        panic!("{candidate} measured again")
    }

    const TIMES: &[(&str, f64)] = &[("a", 3e-5), ("b", 1e-5), ("c", 2e-5), ("d", 1e-5)];

    #[test]
    fn each_candidate_is_measured_once_and_the_fastest_kept_then_proven() {
        let _settings = crate::settings::test_lock();
        let store = Store::new("fastest");
        let key = TuneKey::new("Test GPU", "matmul", "m=16");
        assert_eq!(proven(&key, &["a", "b", "c", "d"]).unwrap(), None);
        let mut seen = Vec::new();
        let before = measurements();
        let mut measure = times(TIMES);
        let choice = choose(&key, &["a", "b", "c", "d"], |c| {
            seen.push(c.to_string());
            measure(c)
        })
        .unwrap();
        assert_eq!(choice, "b", "the fastest, the first of a tie");
        assert_eq!(seen, ["a", "b", "c", "d"]);
        assert_eq!(measurements() - before, 4);
        let before = measurements();
        assert_eq!(choose(&key, &["a", "b", "c", "d"], never).unwrap(), "b");
        assert_eq!(choose(&key, &["d", "c", "b", "a"], never).unwrap(), "b", "the same candidates in any order");
        assert_eq!(proven(&key, &["a", "b", "c", "d"]).unwrap().as_deref(), Some("b"));
        assert_eq!(measurements(), before);
        // the file names the device and holds every time
        let text = std::fs::read_to_string(store.file("Test GPU")).unwrap();
        let file: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(file["device"], "Test GPU");
        let entry = &file["entries"]["matmul · m=16"];
        assert_eq!(entry["choice"], "b");
        assert_eq!(entry["measured"].as_array().unwrap().len(), 4);
        assert_eq!(entry["measured"][2]["seconds"], 2e-5);
        assert_eq!(key.spelled(), "Test GPU · matmul · m=16");
    }

    #[test]
    fn a_new_process_finds_the_choice_in_the_file() {
        let _settings = crate::settings::test_lock();
        let _store = Store::new("file");
        let key = TuneKey::new("gpu0", "softmax", "rows≤64");
        assert_eq!(choose(&key, &["a", "c"], times(TIMES)).unwrap(), "c");
        forget_memory();
        let before = measurements();
        assert_eq!(proven(&key, &["c", "a"]).unwrap().as_deref(), Some("c"));
        assert_eq!(choose(&key, &["a", "c"], never).unwrap(), "c");
        assert_eq!(measurements(), before);
    }

    #[test]
    fn another_candidate_list_is_measured_again_and_overwrites() {
        let _settings = crate::settings::test_lock();
        let store = Store::new("stale");
        let key = TuneKey::new("gpu0", "gemv", "n=4096");
        assert_eq!(choose(&key, &["a", "c"], times(TIMES)).unwrap(), "c");
        assert_eq!(proven(&key, &["a", "c", "d"]).unwrap(), None, "stale for another list");
        assert_eq!(proven(&key, &["a"]).unwrap(), None, "stale even where the choice is gone");
        let before = measurements();
        assert_eq!(choose(&key, &["a", "c", "d"], times(TIMES)).unwrap(), "d");
        assert_eq!(measurements() - before, 3);
        forget_memory();
        assert_eq!(choose(&key, &["a", "c", "d"], never).unwrap(), "d");
        let text = std::fs::read_to_string(store.file("gpu0")).unwrap();
        assert_eq!(text.matches("gemv · n=4096").count(), 1, "overwritten, not added: {text}");
    }

    #[test]
    fn a_damaged_file_is_a_miss_measured_again_and_rewritten() {
        let _settings = crate::settings::test_lock();
        let store = Store::new("damaged");
        let key = TuneKey::new("gpu0", "gemv", "n=64");
        let path = store.file("gpu0");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        for damage in ["{ not json", "{\"format\": 99, \"device\": \"gpu0\", \"entries\": {}}", ""] {
            std::fs::write(&path, damage).unwrap();
            forget_memory();
            assert_eq!(proven(&key, &["a", "b"]).unwrap(), None, "{damage:?} is a miss");
            let before = measurements();
            assert_eq!(choose(&key, &["a", "b"], times(TIMES)).unwrap(), "b");
            assert_eq!(measurements() - before, 2);
            forget_memory();
            assert_eq!(proven(&key, &["a", "b"]).unwrap().as_deref(), Some("b"), "rewritten whole");
        }
        // a choice the entry never measured is no answer
        let text = std::fs::read_to_string(&path).unwrap().replace("\"choice\": \"b\"", "\"choice\": \"z\"");
        std::fs::write(&path, text).unwrap();
        forget_memory();
        assert_eq!(proven(&key, &["a", "b"]).unwrap(), None);
        // another device's file in this device's place is no answer either
        let other = TuneKey::new("gpu1", "gemv", "n=64");
        choose(&other, &["a", "b"], times(TIMES)).unwrap();
        std::fs::copy(store.file("gpu1"), &path).unwrap();
        forget_memory();
        assert_eq!(proven(&key, &["a", "b"]).unwrap(), None);
    }

    #[test]
    fn an_unwritable_store_is_an_error_naming_the_file() {
        let _settings = crate::settings::test_lock();
        let store = Store::new("unwritable");
        // a plain file where the store's directory should be: no one can write under it
        std::fs::write(&store.0, b"in the way").unwrap();
        let key = TuneKey::new("gpu0", "gemv", "n=1");
        let err = choose(&key, &["a", "b"], times(TIMES)).unwrap_err();
        assert!(matches!(err, SettingsError::Unwritable(_)), "{err:?}");
        let text = err.to_string();
        assert!(text.contains(&store.file("gpu0").display().to_string()) && text.contains("set_store"), "{text}");
        std::fs::remove_file(&store.0).unwrap();
    }

    #[test]
    fn bad_measurements_and_bad_calls_are_errors_naming_them() {
        let _settings = crate::settings::test_lock();
        let store = Store::new("errors");
        let key = TuneKey::new("gpu0", "gemv", "n=8");
        let err = choose(&key, &["a", "b"], |c| if c == "b" { Err("launch failed".into()) } else { Ok(1.0) });
        let text = err.unwrap_err().to_string();
        assert!(text.contains("gpu0 · gemv · n=8") && text.contains("b") && text.contains("launch failed"), "{text}");
        for bad in [f64::NAN, f64::INFINITY, -1.0] {
            let text = choose(&key, &["a", "b"], |c| Ok(if c == "a" { bad } else { 1.0 })).unwrap_err().to_string();
            assert!(text.contains("candidate a") && text.contains("gpu0 · gemv · n=8"), "{text}");
        }
        assert!(!store.file("gpu0").exists(), "nothing kept of a failed measurement");
        assert_eq!(proven(&key, &["a", "b"]).unwrap(), None);
        for candidates in [&[][..], &["a", "a"], &["a", ""]] {
            assert!(matches!(choose(&key, candidates, never), Err(SettingsError::Invalid(_))), "{candidates:?}");
        }
        assert!(proven(&TuneKey::new("", "gemv", "n=8"), &["a"]).is_err());
        // a measurement that asks for its own key again is an error, not a deadlock
        let text =
            choose(&key, &["a", "b"], |_| choose(&key, &["a", "b"], never).map(|_| 1.0).map_err(|e| e.to_string()))
                .unwrap_err()
                .to_string();
        assert!(text.contains("same key again"), "{text}");
        assert_eq!(choose(&key, &["a", "b"], times(TIMES)).unwrap(), "b", "the key is free again");
    }

    #[test]
    fn two_processes_tuning_different_keys_both_keep_theirs() {
        let _settings = crate::settings::test_lock();
        let _store = Store::new("merge");
        let first = TuneKey::new("gpu0", "gemv", "n=1");
        let second = TuneKey::new("gpu0", "gemm", "m=1");
        // "process" one reads the (empty) file, then "process" two writes its key
        assert_eq!(proven(&first, &["a", "b"]).unwrap(), None);
        let one = std::mem::take(&mut *lock(&MEMORY));
        choose(&second, &["a", "c"], times(TIMES)).unwrap();
        // process one, with its own memory, writes its key after
        *lock(&MEMORY) = one;
        choose(&first, &["a", "b"], times(TIMES)).unwrap();
        assert_eq!(proven(&second, &["a", "c"]).unwrap().as_deref(), Some("c"), "what the file added is known");
        forget_memory();
        let before = measurements();
        assert_eq!(choose(&first, &["a", "b"], never).unwrap(), "b");
        assert_eq!(choose(&second, &["a", "c"], never).unwrap(), "c");
        assert_eq!(measurements(), before);
    }

    #[test]
    fn threads_asking_one_key_together_measure_it_once() {
        let _settings = crate::settings::test_lock();
        let _store = Store::new("threads");
        let key = TuneKey::new("gpu0", "gemv", "n=2");
        let calls = AtomicUsize::new(0);
        let before = measurements();
        let choices: Vec<String> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        choose(&key, &["a", "b"], |c| {
                            calls.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(20));
                            times(TIMES)(c)
                        })
                        .unwrap()
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        assert!(choices.iter().all(|c| c == "b"), "{choices:?}");
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        assert_eq!(measurements() - before, 2);
    }

    #[test]
    fn each_store_and_device_has_its_own_file() {
        let _settings = crate::settings::test_lock();
        let first = Store::new("store-one");
        let key = TuneKey::new("NVIDIA H100 80GB HBM3", "gemv", "n=2");
        choose(&key, &["a", "b"], times(TIMES)).unwrap();
        let name = file_name(&key.device);
        assert!(name.starts_with("NVIDIA_H100_80GB_HBM3-") && name.ends_with(".json"), "{name}");
        assert_ne!(name, file_name("NVIDIA_H100_80GB_HBM3"), "a changed name carries its hash");
        assert_eq!(file_name("cpu"), "cpu.json");
        assert!(file_name(&"x".repeat(300)).len() < 120);
        assert!(first.file(&key.device).exists());
        // a store set later is another store: its choice is measured there
        let second = std::env::temp_dir().join(format!("nbx-autotune-store-two-{}", std::process::id()));
        set_store(StoreSetting::Path(second.clone()));
        assert_eq!(proven(&key, &["a", "b"]).unwrap(), None);
        let before = measurements();
        choose(&key, &["a", "b"], times(TIMES)).unwrap();
        assert_eq!(measurements() - before, 2);
        assert!(second.join("autotune").join(&name).exists());
        set_store(StoreSetting::Path(first.0.clone()));
        assert_eq!(proven(&key, &["a", "b"]).unwrap().as_deref(), Some("b"));
        std::fs::remove_dir_all(second).unwrap();
    }
}
