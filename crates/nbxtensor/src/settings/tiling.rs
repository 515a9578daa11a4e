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
    /// Work (m·n·k over a product's batch) up to which a host matrix product runs on the
    /// calling thread alone.
    pub host_product_inline_work: usize,
    /// Work (m·n·k of one matrix) up to which a parallel host product by a transposed factor
    /// splits its columns among the threads, a sequential product each.
    pub host_product_column_split_work: usize,
}

/// The table's entries by name, in `tiling.yml`'s order.
pub const ENTRIES: [&str; 3] = ["host_chunk_elements", "host_product_inline_work", "host_product_column_split_work"];

impl TilingTable {
    /// Parses and checks a table written as `tiling.yml` writes it.
    ///
    /// ```
    /// use nbxtensor::settings::tiling::TilingTable;
    /// let split = "host_product_column_split_work: 1048576";
    /// let table = TilingTable::parse(&format!("host_chunk_elements: 4096\nhost_product_inline_work: 65536\n{split}"))?;
    /// assert_eq!(table.host_chunk_elements, 4096);
    /// assert!(TilingTable::parse(&format!("host_chunk_elements: 0\nhost_product_inline_work: 1\n{split}")).is_err());
    /// assert!(TilingTable::parse("host_chunk_elements: 4096\nhost_product_inline_work: 1").is_err());
    /// assert!(TilingTable::parse(&format!("host_chunk: 4096\nhost_product_inline_work: 1\n{split}")).is_err());
    /// # Ok::<(), nbxtensor::settings::SettingsError>(())
    /// ```
    pub fn parse(text: &str) -> Result<TilingTable, SettingsError> {
        let table: TilingTable =
            serde_saphyr::from_str(text).map_err(|e| SettingsError::Invalid(format!("tiling table: {e}")))?;
        table.check()?;
        Ok(table)
    }

    /// Refuses entries that cannot cut work (zero-sized pieces), naming the first.
    pub fn check(&self) -> Result<(), SettingsError> {
        match self.entries().into_iter().find(|&(_, value)| value == 0) {
            Some((name, _)) => Err(SettingsError::Invalid(format!("tiling table: {name} must be ≥ 1"))),
            None => Ok(()),
        }
    }

    /// Every entry with its name, in [`ENTRIES`]' order.
    pub fn entries(&self) -> [(&'static str, usize); 3] {
        [
            (ENTRIES[0], self.host_chunk_elements),
            (ENTRIES[1], self.host_product_inline_work),
            (ENTRIES[2], self.host_product_column_split_work),
        ]
    }

    /// A table from `(name, value)` pairs (every entry exactly once), checked; an unknown or
    /// missing entry is refused by name.
    ///
    /// ```
    /// use nbxtensor::settings::tiling::TilingTable;
    /// let table = TilingTable::from_entries(&[
    ///     ("host_chunk_elements", 8),
    ///     ("host_product_inline_work", 64),
    ///     ("host_product_column_split_work", 1 << 20),
    /// ])?;
    /// assert_eq!(table.host_product_inline_work, 64);
    /// assert!(TilingTable::from_entries(&[("host_chunk_elements", 8)]).is_err());
    /// # Ok::<(), nbxtensor::settings::SettingsError>(())
    /// ```
    pub fn from_entries(values: &[(&str, usize)]) -> Result<TilingTable, SettingsError> {
        let mut found = [None; ENTRIES.len()];
        for &(name, value) in values {
            let Some(at) = ENTRIES.iter().position(|&entry| entry == name) else {
                return Err(SettingsError::Invalid(format!(
                    "tiling table: unknown entry '{name}' (entries: {})",
                    ENTRIES.join(", ")
                )));
            };
            found[at] = Some(value);
        }
        let value = |at: usize| {
            found[at].ok_or_else(|| SettingsError::Invalid(format!("tiling table: missing entry '{}'", ENTRIES[at])))
        };
        let table = TilingTable {
            host_chunk_elements: value(0)?,
            host_product_inline_work: value(1)?,
            host_product_column_split_work: value(2)?,
        };
        table.check()?;
        Ok(table)
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
        set_tiling(Some(TilingTable { host_chunk_elements: 7, ..library.clone() })).unwrap();
        assert_eq!(tiling_table().host_chunk_elements, 7);
        assert!(set_tiling(Some(TilingTable { host_chunk_elements: 0, ..library.clone() })).is_err());
        let err = set_tiling(Some(TilingTable { host_product_inline_work: 0, ..library.clone() })).unwrap_err();
        assert!(err.to_string().contains("host_product_inline_work must be ≥ 1"), "{err}");
        assert_eq!(tiling_table().host_chunk_elements, 7, "a refused table changes nothing");
        set_tiling(None).unwrap();
        assert_eq!(tiling_table(), library);
    }
}
