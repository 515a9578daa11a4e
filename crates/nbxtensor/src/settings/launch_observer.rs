//! The launch observer: an application may watch every kernel launch without running it (a
//! dry run that lists the kernel keys a model forms, with no device). With none installed,
//! every launch runs.
//!
//! The observer is a setting of the thread that installs it: it watches that thread's
//! launches only, so a dry run on one thread never makes another thread's ops run dry.

use std::cell::RefCell;
use std::sync::Arc;

/// What watches launches. The program layer asks [`LaunchObserver::active`] before each
/// launch; while it is true, the launch is recorded instead of run.
pub trait LaunchObserver: Send + Sync {
    /// Whether launches run dry (recorded, not run).
    fn active(&self) -> bool;
    /// Records one launch: its key, and whether its settings were proven (tuned).
    fn record(&self, tuned: bool, key: &str);
}

thread_local! {
    static SETTING: RefCell<Option<Arc<dyn LaunchObserver>>> = const { RefCell::new(None) };
}

/// Installs an observer for this thread's launches; `None` removes it (every launch of this
/// thread runs again). Other threads keep their own setting.
pub fn set_launch_observer(observer: Option<Arc<dyn LaunchObserver>>) {
    // the previous observer is dropped after the setting is replaced (its drop may install
    // or read observers itself)
    let previous = SETTING.with(|s| s.replace(observer));
    drop(previous);
}

/// The observer in force on this thread, if any.
pub fn launch_observer() -> Option<Arc<dyn LaunchObserver>> {
    SETTING.try_with(|s| s.borrow().clone()).ok().flatten()
}

/// Whether this thread's launches run dry now: an observer is installed on it and active.
///
/// ```
/// use nbxtensor::settings::launch_observer::{dry_run, set_launch_observer, KeyRecorder};
/// use std::sync::Arc;
/// assert!(!dry_run());
/// let recorder = Arc::new(KeyRecorder::default());
/// set_launch_observer(Some(recorder.clone()));
/// assert!(dry_run());
/// assert!(!std::thread::spawn(dry_run).join().unwrap(), "another thread runs its launches");
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
