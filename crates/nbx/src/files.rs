//! The files of `nbx embed` and `nbx generate`: the input read and checked, and the output
//! path checked, before any work; the output written to a temporary file beside it and renamed over it at the
//! end, so an interrupted run leaves the previous output (or none) and never a truncated one.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The bytes of a UTF-8 byte order mark.
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// The line and column (both from 1) of byte `offset` of `bytes`.
fn line_and_column(bytes: &[u8], offset: usize) -> (usize, usize) {
    let before = &bytes[..offset.min(bytes.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let column = before.len() - before.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1) + 1;
    (line, column)
}

/// Reads the input: a JSON list of strings, UTF-8 without a byte order mark. Every refusal
/// names its cause and where it is.
pub fn read_texts(path: &Path) -> Result<Vec<String>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read the input {}: {e}", path.display()))?;
    parse_texts(&bytes).map_err(|why| format!("the input {} {why}", path.display()))
}

/// The texts of an input's bytes (see [`read_texts`]); the error completes "the input … ".
fn parse_texts(bytes: &[u8]) -> Result<Vec<String>, String> {
    if bytes.starts_with(UTF8_BOM) {
        return Err(
            "starts with a UTF-8 byte order mark (bytes EF BB BF): JSON is read without one; save the file without it"
                .into(),
        );
    }
    if bytes.starts_with(b"\xFF\xFE") || bytes.starts_with(b"\xFE\xFF") {
        return Err("starts with a UTF-16 byte order mark: it must be UTF-8 JSON".into());
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        let (line, column) = line_and_column(bytes, at);
        format!(
            "is not UTF-8: byte 0x{:02X} at offset {at} (line {line}, column {column}) starts no character",
            bytes[at]
        )
    })?;
    serde_json::from_str::<Vec<String>>(text)
        .map_err(|e| format!("is not a JSON list of strings: {e} (line {}, column {})", e.line(), e.column()))
}

/// Where the output will be written: checked before the work (not the input, a directory
/// that exists and takes a new file), written at the end through a temporary file.
pub struct Output {
    path: PathBuf,
    temporary: PathBuf,
    file: Option<File>,
}

impl Output {
    /// Checks `path` as the output of a run reading `input`, and makes the temporary file it
    /// will be written through (which proves the directory takes files).
    pub fn prepare(path: &Path, input: &Path) -> Result<Output, String> {
        let shown = path.display();
        if path.as_os_str().is_empty() {
            return Err("--output is empty".into());
        }
        if path.is_dir() {
            return Err(format!("the output {shown} is a directory; give a file path"));
        }
        let same = match (std::fs::canonicalize(path), std::fs::canonicalize(input)) {
            (Ok(a), Ok(b)) => a == b,
            _ => path == input,
        };
        if same {
            return Err(format!(
                "the output {shown} is the input file: give another path (the input is not overwritten)"
            ));
        }
        let name = path.file_name().ok_or_else(|| format!("the output {shown} names no file"))?;
        let directory = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !directory.is_dir() {
            let why = if directory.exists() { "is not a directory" } else { "does not exist" };
            return Err(format!("the output's directory {} {why}", directory.display()));
        }
        let temporary = directory.join(format!(".{}.nbx-{}.tmp", name.to_string_lossy(), std::process::id()));
        let file = File::create(&temporary).map_err(|e| {
            format!("cannot write the output {shown}: cannot create a file in {}: {e}", directory.display())
        })?;
        Ok(Output { path: path.to_path_buf(), temporary, file: Some(file) })
    }

    /// Writes `contents` to the temporary file, syncs it, and renames it over the output.
    pub fn commit(mut self, contents: &[u8]) -> Result<(), String> {
        let shown = self.path.display().to_string();
        let mut file = self.file.take().ok_or("the output was already written")?;
        file.write_all(contents)
            .and_then(|()| file.sync_all())
            .map_err(|e| format!("cannot write the output {shown}: {e}"))?;
        drop(file);
        std::fs::rename(&self.temporary, &self.path).map_err(|e| format!("cannot write the output {shown}: {e}"))
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        // not committed (an error, or a rename that failed): the temporary file goes
        let _ = std::fs::remove_file(&self.temporary);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_refusals_name_their_cause_and_place() {
        assert_eq!(parse_texts(b"[\"a\", \"\"]").unwrap(), vec!["a".to_string(), String::new()]);
        assert!(parse_texts(b"\xEF\xBB\xBF[\"a\"]").unwrap_err().contains("UTF-8 byte order mark"));
        assert!(parse_texts(b"\xFF\xFE[\x00").unwrap_err().contains("UTF-16"));
        let bad = parse_texts(b"[\"ok\",\n \"\xC3(\"]").unwrap_err();
        assert!(bad.contains("not UTF-8: byte 0xC3 at offset 9 (line 2, column 3)"), "{bad}");
        let json = parse_texts(b"[\"a\",\n  2]").unwrap_err();
        assert!(json.contains("not a JSON list of strings") && json.contains("line 2, column"), "{json}");
    }

    #[test]
    fn the_output_is_checked_first_and_replaced_whole() {
        let dir = std::env::temp_dir().join(format!("nbx_files_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (input, output) = (dir.join("in.json"), dir.join("out.json"));
        std::fs::write(&input, "[]").unwrap();
        std::fs::write(&output, "previous").unwrap();
        assert!(Output::prepare(&input, &input).map(drop).unwrap_err().contains("is the input file"));
        let relative = dir.join(".").join("in.json");
        assert!(Output::prepare(&relative, &input).map(drop).unwrap_err().contains("is the input file"));
        assert!(Output::prepare(&dir, &input).map(drop).unwrap_err().contains("is a directory"));
        assert!(Output::prepare(&dir.join("no/such/out.json"), &input)
            .map(drop)
            .unwrap_err()
            .contains("does not exist"));
        assert!(Output::prepare(&input.join("out.json"), &input)
            .map(drop)
            .unwrap_err()
            .contains("in.json is not a directory"));
        let pending = Output::prepare(&output, &input).unwrap();
        assert_eq!(std::fs::read_to_string(&output).unwrap(), "previous", "nothing is written before the end");
        drop(pending);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2, "an abandoned output leaves no temporary file");
        Output::prepare(&output, &input).unwrap().commit(b"[[1.0]]").unwrap();
        assert_eq!(std::fs::read_to_string(&output).unwrap(), "[[1.0]]");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
