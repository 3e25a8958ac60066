//! The core's folders are layers (see lib.rs): a module imports only modules of its own layer
//! or of the layers below it. This reads every source file and checks its `crate::` paths.

use std::fs;
use std::path::Path;

const LAYERS: [&str; 6] = ["base", "text", "signatures", "search", "clusters", "images"];

#[test]
fn no_layer_imports_a_higher_one() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut checked = 0;
    let mut violations = Vec::new();
    for (level, layer) in LAYERS.iter().enumerate() {
        for path in files(&src.join(layer)) {
            let text = fs::read_to_string(&path).unwrap();
            for higher in &LAYERS[level + 1..] {
                let import = format!("crate::{higher}::");
                let braced = format!("crate::{{{higher}::");
                if text.contains(&import) || text.contains(&braced) {
                    violations.push(format!("{} ({layer}) imports {higher}", path.display()));
                }
            }
            checked += 1;
        }
    }
    assert!(
        checked >= 29,
        "only {checked} modules found under {}",
        src.display()
    );
    assert!(violations.is_empty(), "{violations:#?}");
}

/// The source files under `dir`, its submodules' folders included.
fn files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files(&path));
        } else {
            found.push(path);
        }
    }
    found
}

#[test]
fn every_module_lives_in_a_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let loose: Vec<_> = fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".rs") && name != "lib.rs")
        .filter(|name| !LAYERS.contains(&name.trim_end_matches(".rs")))
        .collect();
    assert!(loose.is_empty(), "modules outside the layers: {loose:?}");
}
