//! A parser for ROS 2 interface files (`.msg`, `.srv`, `.action`), enough to compare
//! definitions field for field: field names, canonical types, defaults and constants.
//!
//! Types are canonicalised to `package/Name` (a bare `Name` resolves to the file's own
//! package, `Header` to `std_msgs/Header`) with array suffixes `[]`, `[N]`, `[<=N]`,
//! the same spelling as [`crate::msg::FieldType`]'s `Display`.

use std::fmt;

const PRIMITIVES: [&str; 15] = [
    "bool", "byte", "char", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32",
    "uint32", "int64", "uint64", "string", "wstring",
];

/// One field of a parsed definition.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecField {
    pub name: String,
    /// Canonical type, e.g. `geometry_msgs/Pose[]`.
    pub ty: String,
    /// The default value as written, if any.
    pub default: Option<String>,
}

/// One constant of a parsed definition.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecConstant {
    pub name: String,
    pub ty: String,
    pub value: String,
}

/// A parsed message (or one part of a service or action).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MsgSpec {
    pub fields: Vec<SpecField>,
    pub constants: Vec<SpecConstant>,
}

/// A parse error with the line it happened on.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

/// Parses a file with `parts` sections separated by `---` lines (1 for `.msg`, 2 for
/// `.srv`, 3 for `.action`). `package` resolves bare type names.
pub fn parse(text: &str, package: &str, parts: usize) -> Result<Vec<MsgSpec>, ParseError> {
    let mut out = vec![MsgSpec::default()];
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let err = |message: String| ParseError {
            line: line_no,
            message,
        };
        if raw.trim() == "---" {
            out.push(MsgSpec::default());
            continue;
        }
        let Some((ty_raw, rest)) = split_type(raw) else {
            continue;
        };
        let ty = canonical_type(ty_raw, package).map_err(err)?;
        let spec = out.last_mut().ok_or_else(|| err("no section".into()))?;
        let base_is_string = ty.starts_with("string") || ty.starts_with("wstring");
        if let Some(eq) = rest
            .find('=')
            .filter(|&eq| is_constant_name(rest[..eq].trim()))
        {
            let name = rest[..eq].trim().to_string();
            let value_raw = &rest[eq + 1..];
            // string constants run to the end of the line (no comments)
            let value = if base_is_string {
                value_raw.trim().to_string()
            } else {
                strip_comment(value_raw).trim().to_string()
            };
            spec.constants.push(SpecConstant { name, ty, value });
        } else {
            let rest = strip_comment(rest);
            let mut words = rest.split_whitespace();
            let name = words
                .next()
                .ok_or_else(|| err(format!("field of type {ty_raw} has no name")))?
                .to_string();
            let default: Vec<&str> = words.collect();
            let default = (!default.is_empty()).then(|| default.join(" "));
            spec.fields.push(SpecField { name, ty, default });
        }
    }
    if out.len() != parts {
        return Err(ParseError {
            line: 0,
            message: format!("expected {parts} section(s), found {}", out.len()),
        });
    }
    Ok(out)
}

fn strip_comment(s: &str) -> &str {
    s.find('#').map_or(s, |i| &s[..i])
}

/// Splits off the type word of a line; `None` for blank and comment lines.
fn split_type(raw: &str) -> Option<(&str, &str)> {
    let line = raw.trim_start();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let end = line.find(char::is_whitespace).unwrap_or(line.len());
    let (ty, rest) = line.split_at(end);
    Some((ty, rest))
}

fn is_constant_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// `Pose[]` in package `geometry_msgs` → `geometry_msgs/Pose[]`.
pub fn canonical_type(ty: &str, package: &str) -> Result<String, String> {
    let (base, suffix) = match ty.find('[') {
        Some(i) => (&ty[..i], &ty[i..]),
        None => (ty, ""),
    };
    if !suffix.is_empty() {
        let inner = suffix
            .strip_prefix('[')
            .and_then(|s| s.strip_suffix(']'))
            .ok_or_else(|| format!("bad array suffix in {ty:?}"))?;
        let bound = inner.strip_prefix("<=").unwrap_or(inner);
        if !bound.is_empty() && bound.parse::<usize>().is_err() {
            return Err(format!("bad array bound in {ty:?}"));
        }
    }
    let plain = base.split("<=").next().unwrap_or(base);
    let base = if PRIMITIVES.contains(&plain) {
        base.to_string()
    } else if base == "Header" {
        "std_msgs/Header".to_string()
    } else if base.contains('/') {
        // `pkg/msg/Name` is also accepted
        let parts: Vec<&str> = base.split('/').collect();
        match parts.as_slice() {
            [pkg, name] | [pkg, "msg", name] => format!("{pkg}/{name}"),
            _ => return Err(format!("bad type name {base:?}")),
        }
    } else if base.starts_with(|c: char| c.is_ascii_uppercase()) {
        format!("{package}/{base}")
    } else {
        return Err(format!("unknown type {base:?}"));
    };
    Ok(format!("{base}{suffix}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_fields_defaults_constants_and_sections() {
        let text = "# comment\nint8 A = 1  # one\nfloat64 w 1\nPose[] poses\nHeader header\n\
                    string S=has # hash\nfloat64[<=3] dims\nuint8[16] id\n---\nbool ok\n";
        let parts = parse(text, "geometry_msgs", 2).unwrap();
        let m = &parts[0];
        assert_eq!(
            m.constants,
            vec![
                SpecConstant {
                    name: "A".into(),
                    ty: "int8".into(),
                    value: "1".into()
                },
                SpecConstant {
                    name: "S".into(),
                    ty: "string".into(),
                    value: "has # hash".into()
                },
            ]
        );
        let tys: Vec<_> = m
            .fields
            .iter()
            .map(|f| (f.name.as_str(), f.ty.as_str()))
            .collect();
        assert_eq!(
            tys,
            vec![
                ("w", "float64"),
                ("poses", "geometry_msgs/Pose[]"),
                ("header", "std_msgs/Header"),
                ("dims", "float64[<=3]"),
                ("id", "uint8[16]"),
            ]
        );
        assert_eq!(m.fields[0].default.as_deref(), Some("1"));
        assert_eq!(parts[1].fields[0].name, "ok");
        assert!(parse(text, "x", 3).is_err());
        assert!(parse("lowercase thing\n", "x", 1).is_err());
        assert!(parse("int8[x] a\n", "x", 1).is_err());
    }
}
