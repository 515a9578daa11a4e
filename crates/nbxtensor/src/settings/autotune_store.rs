//! Where proven kernel settings are kept: a directory an application names (a path, or a
//! function that returns one when asked), or the default in the user's cache.

use super::SettingsError;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

/// A function that names the store's directory when asked.
pub type StoreProvider = Arc<dyn Fn() -> Result<PathBuf, String> + Send + Sync>;

/// The store an application set.
#[derive(Clone, Default)]
pub enum StoreSetting {
    /// `$XDG_CACHE_HOME/nbxtensor/certified`, or `~/.cache/nbxtensor/certified`.
    #[default]
    Default,
    /// A fixed directory.
    Path(PathBuf),
    /// A function asked each time the directory is needed.
    Provider(StoreProvider),
}

fn setting() -> &'static RwLock<StoreSetting> {
    static SETTING: RwLock<StoreSetting> = RwLock::new(StoreSetting::Default);
    &SETTING
}

/// Sets the store; [`StoreSetting::Default`] goes back to the user's cache.
pub fn set_store(store: StoreSetting) {
    *setting().write().unwrap_or_else(|e| e.into_inner()) = store;
}

/// The default store: under `$XDG_CACHE_HOME` when it is set (and absolute), else under
/// `$HOME/.cache`; with neither, an error naming both.
pub fn default_directory() -> Result<PathBuf, SettingsError> {
    let cache = match std::env::var_os("XDG_CACHE_HOME").map(PathBuf::from) {
        Some(dir) if dir.is_absolute() => dir,
        _ => std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")).ok_or_else(|| {
            SettingsError::Invalid(
                "autotune store: neither XDG_CACHE_HOME nor HOME is set; set a store with set_store".into(),
            )
        })?,
    };
    Ok(cache.join("nbxtensor").join("certified"))
}

/// The store's directory in force (not created).
///
/// ```
/// use nbxtensor::settings::autotune_store::{directory, set_store, StoreSetting};
/// set_store(StoreSetting::Path("/tmp/proven".into()));
/// assert_eq!(directory()?, std::path::PathBuf::from("/tmp/proven"));
/// set_store(StoreSetting::Default);
/// assert!(directory()?.ends_with("nbxtensor/certified"));
/// # Ok::<(), nbxtensor::settings::SettingsError>(())
/// ```
pub fn directory() -> Result<PathBuf, SettingsError> {
    let store = setting().read().unwrap_or_else(|e| e.into_inner()).clone();
    match store {
        StoreSetting::Default => default_directory(),
        StoreSetting::Path(path) => Ok(path),
        StoreSetting::Provider(provider) => {
            provider().map_err(|e| SettingsError::Invalid(format!("autotune store: the store function failed: {e}")))
        }
    }
}

/// The store's directory, created if needed and proven writable (a probe file is written
/// and removed); the error names the directory and the reason.
pub fn writable_directory() -> Result<PathBuf, SettingsError> {
    let dir = directory()?;
    let unwritable = |e: std::io::Error| SettingsError::Unwritable(format!("autotune store {}: {e}", dir.display()));
    std::fs::create_dir_all(&dir).map_err(unwritable)?;
    let probe = dir.join(format!(".nbxtensor-probe-{}", std::process::id()));
    std::fs::write(&probe, b"probe").map_err(unwritable)?;
    std::fs::remove_file(&probe).map_err(unwritable)?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_provider_is_asked_each_time_and_its_failure_is_named() {
        let _settings = crate::settings::test_lock();
        let counter = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = Arc::clone(&counter);
        set_store(StoreSetting::Provider(Arc::new(move || {
            let n = seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if n < 2 {
                Ok(PathBuf::from(format!("/tmp/store-{n}")))
            } else {
                Err("no store today".into())
            }
        })));
        assert_eq!(directory().unwrap(), PathBuf::from("/tmp/store-0"));
        assert_eq!(directory().unwrap(), PathBuf::from("/tmp/store-1"));
        assert!(directory().unwrap_err().to_string().contains("no store today"));
        set_store(StoreSetting::Path(PathBuf::from("/proc/nbxtensor-cannot-be-here")));
        let err = writable_directory().unwrap_err().to_string();
        assert!(err.contains("/proc/nbxtensor-cannot-be-here"), "{err}");
        set_store(StoreSetting::Default);
    }
}
