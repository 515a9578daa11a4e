//! The tiling table in force: the library's `data/tiling.yml`, or a whole table an
//! application sets.

use super::SettingsError;
use serde::{Deserialize, Serialize};
use std::sync::{OnceLock, RwLock};

/// The text of `data/tiling.yml`, as compiled into the crate.
pub const TILING_YML: &str = include_str!("../../data/tiling.yml");

/// How the library cuts work into pieces (see `data/tiling.yml` for each entry's meaning).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TilingTable {
    /// Elements one CPU thread takes at a time in host loops.
    pub host_chunk_elements: usize,
}

impl TilingTable {
    /// Parses and checks a table written as `tiling.yml` writes it.
    ///
    /// ```
    /// use nbxtensor::settings::tiling::TilingTable;
    /// assert_eq!(TilingTable::parse("host_chunk_elements: 4096")?.host_chunk_elements, 4096);
    /// assert!(TilingTable::parse("host_chunk_elements: 0").is_err());
    /// assert!(TilingTable::parse("host_chunk: 4096").is_err());
    /// # Ok::<(), nbxtensor::settings::SettingsError>(())
    /// ```
    pub fn parse(text: &str) -> Result<TilingTable, SettingsError> {
        let table: TilingTable =
            serde_saphyr::from_str(text).map_err(|e| SettingsError::Invalid(format!("tiling table: {e}")))?;
        table.check()?;
        Ok(table)
    }

    /// Refuses entries that cannot cut work (zero-sized pieces).
    pub fn check(&self) -> Result<(), SettingsError> {
        if self.host_chunk_elements == 0 {
            return Err(SettingsError::Invalid("tiling table: host_chunk_elements must be ≥ 1".into()));
        }
        Ok(())
    }
}

fn library_table() -> &'static TilingTable {
    static TABLE: OnceLock<TilingTable> = OnceLock::new();
    TABLE.get_or_init(|| TilingTable::parse(TILING_YML).expect("data/tiling.yml is checked by the tests"))
}

fn setting() -> &'static RwLock<Option<TilingTable>> {
    static SETTING: RwLock<Option<TilingTable>> = RwLock::new(None);
    &SETTING
}

/// The table in force (a copy).
pub fn tiling_table() -> TilingTable {
    setting().read().unwrap_or_else(|e| e.into_inner()).clone().unwrap_or_else(|| library_table().clone())
}

/// Sets a whole table (checked first); `None` goes back to the library's file.
pub fn set_tiling(table: Option<TilingTable>) -> Result<(), SettingsError> {
    if let Some(table) = &table {
        table.check()?;
    }
    *setting().write().unwrap_or_else(|e| e.into_inner()) = table;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_table_parses_and_a_set_table_is_restored_by_none() {
        let _settings = crate::settings::test_lock();
        let library = tiling_table();
        assert_eq!(library, *library_table());
        set_tiling(Some(TilingTable { host_chunk_elements: 7 })).unwrap();
        assert_eq!(tiling_table().host_chunk_elements, 7);
        assert!(set_tiling(Some(TilingTable { host_chunk_elements: 0 })).is_err());
        assert_eq!(tiling_table().host_chunk_elements, 7, "a refused table changes nothing");
        set_tiling(None).unwrap();
        assert_eq!(tiling_table(), library);
    }
}
