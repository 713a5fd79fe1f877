//! CSV output: rows of serialized structs, one column per scalar field.

/// The scalar fields of a serialized struct, in order (nested objects and arrays left out).
fn scalar_fields<T: serde::Serialize>(v: &T) -> Vec<(String, serde_json::Value)> {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::Object(m)) => m
            .into_iter()
            .filter(|(_, v)| !(v.is_object() || v.is_array()))
            .collect(),
        _ => Vec::new(),
    }
}

/// One CSV cell: strings quoted, null empty.
pub fn cell(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => format!("\"{}\"", s.replace('"', "\"\"")),
        serde_json::Value::Null => String::new(),
        v => v.to_string(),
    }
}

/// Rows of (leading cells, struct) as CSV with a header from the first struct's fields.
pub fn table<T: serde::Serialize>(lead: &[&str], rows: &[(Vec<String>, &T)]) -> String {
    let mut out = String::new();
    let Some((_, first)) = rows.first() else {
        return out;
    };
    let names: Vec<String> = scalar_fields(*first).into_iter().map(|(k, _)| k).collect();
    out.push_str(&lead.join(","));
    for n in &names {
        out.push(',');
        out.push_str(n);
    }
    out.push('\n');
    for (cells, row) in rows {
        out.push_str(&cells.join(","));
        for (_, v) in scalar_fields(*row) {
            out.push(',');
            out.push_str(&cell(&v));
        }
        out.push('\n');
    }
    out
}

/// `a/b.csv` with `-SUFFIX` before the extension: `a/b-SUFFIX.csv`.
pub fn sibling(p: &std::path::Path, suffix: &str) -> std::path::PathBuf {
    let stem = p
        .file_stem()
        .map_or("out".into(), |s| s.to_string_lossy().into_owned());
    let ext = p
        .extension()
        .map_or(String::new(), |e| format!(".{}", e.to_string_lossy()));
    p.with_file_name(format!("{stem}-{suffix}{ext}"))
}
