//! The runtime's modules import one another without a circle: each can be read knowing only the
//! modules below it. A module that needs something of one above it takes it down a level (as
//! `slim` went from `app` to `cache`, and `Object` from `frame` to `guard`), and the module above
//! re-exports it where callers know it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The modules of `crate::` that `code` names, in `use` lines and paths alike.
fn named_modules(code: &str) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a::x, b::{y, z}, c}`: the first name of each item at the group's top level.
            let mut depth = 0;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && (c.is_ascii_lowercase() || c == '_') => {
                        named.insert(identifier(&group[i..]));
                        item_start = false;
                    }
                    c if !c.is_whitespace() => item_start = false,
                    _ => {}
                }
            }
        } else {
            named.insert(identifier(rest));
        }
    }
    named
}

fn identifier(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// Each module of `src` (its own file, without its tests and comments) and the modules it names.
fn imports(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeSet<String> = std::fs::read_dir(src)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .map(|path| path.file_stem().unwrap().to_string_lossy().into_owned())
        .filter(|name| name != "lib" && !name.ends_with("_tests"))
        .collect();
    modules
        .iter()
        .map(|module| {
            let text = std::fs::read_to_string(src.join(format!("{module}.rs"))).unwrap();
            let text = text.split("#[cfg(test)]").next().unwrap_or_default();
            let code: String = text
                .lines()
                .map(|line| line.split("//").next().unwrap_or_default())
                .collect::<Vec<_>>()
                .join("\n");
            let named = named_modules(&code)
                .into_iter()
                .filter(|m| m != module && modules.contains(m))
                .collect();
            (module.clone(), named)
        })
        .collect()
}

/// A circle among `graph`'s modules, as the path around it, if there is one.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        module: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|m| m == module) {
            let mut around = path[at..].to_vec();
            around.push(module.to_owned());
            return Some(around);
        }
        if done.contains(module) {
            return None;
        }
        path.push(module.to_owned());
        for next in graph.get(module).into_iter().flatten() {
            if let Some(around) = visit(next, graph, done, path) {
                return Some(around);
            }
        }
        path.pop();
        done.insert(module.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|module| visit(module, graph, &mut done, &mut Vec::new()))
}

#[test]
fn the_runtime_modules_import_one_another_without_a_circle() {
    let graph = imports(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(graph.len() > 20, "the modules were not found: {graph:?}");
    assert!(
        graph["frame"].contains("guard") && graph["app"].contains("frame"),
        "the imports were not read: {graph:?}"
    );
    if let Some(around) = circle(&graph) {
        panic!("an import circle: {}", around.join(" -> "));
    }
}

/// The reading finds what a circle is made of: grouped imports and paths, not comments.
#[test]
fn imports_are_read_from_use_lines_groups_and_paths() {
    let named = named_modules(
        "use crate::{a::X, b::{Y, Z}, c};\nfn f() { crate::d::g(); }\nlet x = crate::e;",
    );
    assert_eq!(
        named,
        BTreeSet::from(["a", "b", "c", "d", "e"].map(String::from))
    );
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec![]),
    ]
    .into_iter()
    .map(|(m, to)| (m.to_owned(), to.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(circle(&graph).unwrap(), ["a", "b", "c", "a"]);
    let mut open = graph.clone();
    open.get_mut("c").unwrap().clear();
    assert_eq!(circle(&open), None);
}
