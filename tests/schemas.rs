//! The JSON copies in `schemas/` match the schemas defined in code.

use std::path::PathBuf;

#[test]
fn schema_files_match_the_code() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schemas");
    let tables = epimine::tables::all_schemas();
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut expected: Vec<String> = tables.iter().map(|(n, _)| format!("{n}.json")).collect();
    expected.sort();
    assert_eq!(on_disk, expected, "one JSON file per table in schemas/");
    for (name, schema) in tables {
        let text = std::fs::read_to_string(dir.join(format!("{name}.json"))).unwrap();
        let parsed: arrow_schema::Schema = serde_json::from_str(&text).unwrap();
        assert_eq!(&parsed, schema.as_ref(), "schemas/{name}.json differs from the code; regenerate with `epimine schemas --out schemas`");
        assert_eq!(
            text,
            epimine::tables::schema_json(&schema),
            "schemas/{name}.json formatting"
        );
    }
}
