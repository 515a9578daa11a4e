//! A second process finds the autotune's choices in the proven-settings store and measures
//! nothing: the test tunes a key, then runs itself again, as a child process, on the same store.

use nbxtensor::settings::autotune::{choose, measurements, TuneKey};
use nbxtensor::settings::autotune_store::{set_store, StoreSetting};
use std::path::PathBuf;

/// Set in the child's environment: the store the parent wrote.
const CHILD_STORE: &str = "NBX_AUTOTUNE_TEST_STORE";

const TEST: &str = "a_second_process_finds_its_settings_and_measures_nothing";

#[test]
fn a_second_process_finds_its_settings_and_measures_nothing() {
    let key = TuneKey::new("test device", "gemv", "n=4096");
    let candidates = ["64", "128", "256"];
    if let Some(store) = std::env::var_os(CHILD_STORE) {
        set_store(StoreSetting::Path(PathBuf::from(store)));
        let choice = choose(&key, &candidates, |c| panic!("the second process measured {c}")).unwrap();
        assert_eq!(choice, "128");
        assert_eq!(measurements(), 0);
        return;
    }
    let store = std::env::temp_dir().join(format!("nbx-autotune-process-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&store);
    set_store(StoreSetting::Path(store.clone()));
    let choice = choose(&key, &candidates, |c| Ok(if c == "128" { 1e-5 } else { 2e-5 })).unwrap();
    assert_eq!(choice, "128");
    assert_eq!(measurements(), 3);
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", TEST, "--nocapture", "--test-threads=1"])
        .env(CHILD_STORE, &store)
        .output()
        .unwrap();
    std::fs::remove_dir_all(&store).unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&child.stdout), String::from_utf8_lossy(&child.stderr));
    assert!(child.status.success() && said.contains("1 passed"), "the second process:\n{said}");
}
