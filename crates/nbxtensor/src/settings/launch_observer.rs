//! The launch observer: an application may watch every kernel launch without running it (a
//! dry run that lists the kernel keys a model forms, with no device). With none installed,
//! every launch runs.

use std::sync::{Arc, RwLock};

/// What watches launches. The program layer asks [`LaunchObserver::active`] before each
/// launch; while it is true, the launch is recorded instead of run.
pub trait LaunchObserver: Send + Sync {
    /// Whether launches run dry (recorded, not run).
    fn active(&self) -> bool;
    /// Records one launch: its key, and whether its settings were proven (tuned).
    fn record(&self, tuned: bool, key: &str);
}

fn setting() -> &'static RwLock<Option<Arc<dyn LaunchObserver>>> {
    static SETTING: RwLock<Option<Arc<dyn LaunchObserver>>> = RwLock::new(None);
    &SETTING
}

/// Installs an observer; `None` removes it (every launch runs again).
pub fn set_launch_observer(observer: Option<Arc<dyn LaunchObserver>>) {
    *setting().write().unwrap_or_else(|e| e.into_inner()) = observer;
}

/// The observer in force, if any.
pub fn launch_observer() -> Option<Arc<dyn LaunchObserver>> {
    setting().read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Whether launches run dry now: an observer is installed and active.
///
/// ```
/// use nbxtensor::settings::launch_observer::{dry_run, set_launch_observer, KeyRecorder};
/// use std::sync::Arc;
/// assert!(!dry_run());
/// let recorder = Arc::new(KeyRecorder::default());
/// set_launch_observer(Some(recorder.clone()));
/// assert!(dry_run());
/// set_launch_observer(None);
/// assert!(!dry_run());
/// ```
pub fn dry_run() -> bool {
    launch_observer().is_some_and(|observer| observer.active())
}

/// An always-active observer that keeps every recorded launch, in order.
#[derive(Default)]
pub struct KeyRecorder {
    launches: std::sync::Mutex<Vec<(bool, String)>>,
}

impl KeyRecorder {
    /// The launches recorded so far: `(tuned, key)`.
    pub fn launches(&self) -> Vec<(bool, String)> {
        self.launches.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl LaunchObserver for KeyRecorder {
    fn active(&self) -> bool {
        true
    }

    fn record(&self, tuned: bool, key: &str) {
        self.launches.lock().unwrap_or_else(|e| e.into_inner()).push((tuned, key.to_string()));
    }
}
