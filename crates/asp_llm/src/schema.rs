//! JSON schemas generated from Rust types (schemars), in the subset every compatible
//! server accepts: no `$schema`, no `title`, sub-schemas inlined, every object closed
//! (`additionalProperties: false`) with every property listed as required — the form
//! OpenAI's strict mode demands and the others accept.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

use crate::types::ToolSpec;

/// The schema of `T`, cleaned up as described in the module documentation.
pub fn schema_for<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut v = generator.into_root_schema_for::<T>().to_value();
    strictify(&mut v);
    v
}

/// A tool whose arguments are `T`. The type's own doc comment is for programmers and is
/// left out; field doc comments describe the arguments to the model.
pub fn tool_spec<T: JsonSchema>(name: &str, description: &str) -> ToolSpec {
    let mut parameters = schema_for::<T>();
    if let Some(o) = parameters.as_object_mut() {
        o.remove("description");
    }
    ToolSpec {
        name: name.to_owned(),
        description: description.trim().to_owned(),
        parameters,
    }
}

/// Closes every object schema and requires all its properties; drops `title`,
/// `$schema` and empty `$defs`.
pub fn strictify(v: &mut Value) {
    let Value::Object(o) = v else { return };
    o.remove("title");
    o.remove("$schema");
    // doc comments wrap lines; the model should see sentences
    if let Some(Value::String(d)) = o.get_mut("description") {
        *d = d.split_whitespace().collect::<Vec<_>>().join(" ");
    }
    let is_object = o.get("type").is_some_and(|t| {
        t == "object"
            || t.as_array()
                .is_some_and(|a| a.iter().any(|x| x == "object"))
    });
    if is_object {
        let props = o
            .entry("properties")
            .or_insert_with(|| Value::Object(Default::default()));
        let keys: Vec<Value> = props
            .as_object()
            .map(|p| p.keys().cloned().map(Value::String).collect())
            .unwrap_or_default();
        o.insert("required".into(), Value::Array(keys));
        o.insert("additionalProperties".into(), Value::Bool(false));
    }
    if o.get("$defs")
        .and_then(Value::as_object)
        .is_some_and(|d| d.is_empty())
    {
        o.remove("$defs");
    }
    // sub-schemas: maps of schemas, single schemas, lists of schemas
    for key in ["properties", "$defs", "definitions", "patternProperties"] {
        if let Some(Value::Object(m)) = o.get_mut(key) {
            m.values_mut().for_each(strictify);
        }
    }
    for key in ["items", "not", "additionalItems", "contains"] {
        if let Some(child) = o.get_mut(key) {
            strictify(child);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(items)) = o.get_mut(key) {
            items.iter_mut().for_each(strictify);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    /// Move to a place.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)] // only the schema is used
    struct Args {
        /// Where to.
        target: String,
        /// A property called `title` is a property,
        /// not a schema title.
        title: String,
        speed: Option<f64>,
        inner: Inner,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Inner {
        flag: bool,
    }

    #[test]
    fn schemas_are_closed_inlined_and_untitled() {
        let s = schema_for::<Args>();
        assert!(
            s.get("title").is_none() && s.get("$schema").is_none(),
            "{s}"
        );
        assert!(s.get("$defs").is_none(), "{s}");
        assert_eq!(s["additionalProperties"], false);
        let mut required: Vec<&str> = s["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        required.sort_unstable();
        assert_eq!(required, ["inner", "speed", "target", "title"]);
        assert_eq!(s["properties"]["title"]["type"], "string");
        assert_eq!(s["properties"]["target"]["description"], "Where to.");
        assert_eq!(s["properties"]["inner"]["additionalProperties"], false);
        assert_eq!(
            s["properties"]["inner"]["required"],
            serde_json::json!(["flag"])
        );
        let t = tool_spec::<Args>("go", "  Go somewhere.\n");
        assert_eq!(t.description, "Go somewhere.");
        assert_eq!(s["description"], "Move to a place.");
        assert!(
            t.parameters.get("description").is_none(),
            "the type doc is not sent"
        );
        assert_eq!(
            t.parameters["properties"]["title"]["description"],
            "A property called `title` is a property, not a schema title."
        );
    }
}
