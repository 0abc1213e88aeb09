//! Strict YAML parsing shared by world, scenario and robot files: an error names the file,
//! the entry (with the `name` of every list element on the way, so `objects[3] (mug)`) and
//! what is wrong, with the line and column serde_yaml_ng reports.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde_path_to_error::Segment;
use serde_yaml_ng::Value;

use crate::error::SimError;

/// Reads and parses `path`.
pub fn load_file<T: DeserializeOwned>(path: &Path) -> Result<(T, String), SimError> {
    let text = std::fs::read_to_string(path).map_err(|e| SimError::Io {
        file: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let value = parse_str(&text, path)?;
    Ok((value, text))
}

/// Parses `text` (from `file`) strictly.
pub fn parse_str<T: DeserializeOwned>(text: &str, file: &Path) -> Result<T, SimError> {
    let de = serde_yaml_ng::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let entry = describe_path(e.path(), text);
        SimError::invalid(file, entry, e.into_inner().to_string())
    })
}

/// `objects[3] (mug).shapes[0].box` for a serde path, looking names up in the document.
fn describe_path(path: &serde_path_to_error::Path, text: &str) -> String {
    let doc: Option<Value> = serde_yaml_ng::from_str(text).ok();
    let mut node = doc.as_ref();
    let mut out = String::new();
    for seg in path.iter() {
        match seg {
            Segment::Seq { index } => {
                out.push_str(&format!("[{index}]"));
                node = node.and_then(|n| n.get(*index));
                if let Some(name) = node.and_then(|n| n.get("name")).and_then(Value::as_str) {
                    out.push_str(&format!(" ({name})"));
                }
            }
            Segment::Map { key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
                node = node.and_then(|n| n.get(key.as_str()));
            }
            Segment::Enum { variant } => {
                out.push_str(&format!("::{variant}"));
            }
            Segment::Unknown => out.push_str(".?"),
        }
    }
    if out.is_empty() {
        "(top level)".to_owned()
    } else {
        out
    }
}

/// Entry label of list element `index` with an optional name: `objects[3] (mug)`.
pub fn entry(list: &str, index: usize, name: &str) -> String {
    if name.is_empty() {
        format!("{list}[{index}]")
    } else {
        format!("{list}[{index}] ({name})")
    }
}
