//! The runtime's modules import one another without a circle, and so do its groups: each can be
//! read knowing only what is below it. A module that needs something of one above it takes it down
//! a level (as `slim` went from `app` to `cache`, `Object` from `frame` to `guard`, `object_key`
//! from `backoff` to `queue`), and the module above re-exports it where callers know it. The
//! groups stack as `lib.rs` lists them: the clock and shutdown, watch, lead, serve, execute, cli,
//! process.

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
                    c if item_start && (c.is_ascii_alphabetic() || c == '_') => {
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

/// The groups of `src` (a folder with a `mod.rs`) that hold modules and nothing of their own:
/// a path through one (`crate::watch::cache`) names the module inside it.
const GROUPS: [&str; 4] = ["watch", "lead", "serve", "process"];

/// The groups that are modules themselves (their `mod.rs` holds code), and the modules in them.
const HOSTS: [(&str, &[&str]); 2] = [
    ("execute", &["frame", "events", "backoff"]),
    ("cli", &["plan", "manifest", "tz"]),
];

/// What the crate's root re-exports (`pub use watch::contact::ApiContact;`), by name: the module
/// each comes from, so `crate::ApiContact` counts as naming `contact`.
fn root_names(lib: &str) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for line in lib.lines() {
        let Some(path) = line
            .strip_prefix("pub use ")
            .and_then(|l| l.strip_suffix(';'))
        else {
            continue;
        };
        let (module_path, items) = match path.split_once("::{") {
            Some((module, items)) => (module, items.trim_end_matches('}')),
            None => path.rsplit_once("::").unwrap_or((path, "")),
        };
        let module = module_path.rsplit("::").next().unwrap_or(module_path);
        for item in items.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            names.insert(item.to_owned(), module.to_owned());
        }
    }
    names
}

/// `code` with each path through a group shortened to the module it names:
/// `crate::watch::cache::X` reads `crate::cache::X`, `crate::execute::frame` `crate::frame`.
fn through_groups(code: &str) -> String {
    let mut code = code.to_owned();
    for group in GROUPS {
        code = code.replace(&format!("crate::{group}::"), "crate::");
    }
    for (host, modules) in HOSTS {
        for module in modules {
            code = code.replace(
                &format!("crate::{host}::{module}"),
                &format!("crate::{module}"),
            );
        }
    }
    code
}

/// Every module file of `src` and its folders, by module name (a host's `mod.rs` by its
/// folder's; a group's `mod.rs`, which only declares, is left out).
fn module_files(src: &Path) -> BTreeMap<String, std::path::PathBuf> {
    let mut files = BTreeMap::new();
    let mut folders = vec![src.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            let name = match stem.as_str() {
                "mod" => folder.file_name().unwrap().to_string_lossy().into_owned(),
                _ => stem,
            };
            if name == "lib" || name.ends_with("_tests") || GROUPS.contains(&name.as_str()) {
                continue;
            }
            files.insert(name, path);
        }
    }
    files
}

/// Each module of `src` (its own file, without its tests and comments) and the modules it names.
fn imports(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let files = module_files(src);
    let root = root_names(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    files
        .iter()
        .map(|(module, path)| {
            let text = std::fs::read_to_string(path).unwrap();
            let text = text.split("#[cfg(test)]").next().unwrap_or_default();
            let code: String = text
                .lines()
                .map(|line| line.split("//").next().unwrap_or_default())
                .collect::<Vec<_>>()
                .join("\n");
            let named = named_modules(&through_groups(&code))
                .into_iter()
                .map(|name| root.get(&name).cloned().unwrap_or(name))
                .filter(|m| m != module && files.contains_key(m))
                .collect();
            (module.clone(), named)
        })
        .collect()
}

/// The group of each module of `src`: the folder it is in, or itself at the crate's root.
fn groups(src: &Path) -> BTreeMap<String, String> {
    module_files(src)
        .into_iter()
        .map(|(module, path)| {
            let folder = path.parent().unwrap();
            let group = match folder == src || path.file_stem().is_some_and(|s| s == "mod") {
                true if folder == src => module.clone(),
                _ => folder.file_name().unwrap().to_string_lossy().into_owned(),
            };
            (module, group)
        })
        .collect()
}

/// The groups' imports: group A names group B when a module of A names one of B.
fn group_imports(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let group = groups(src);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, named) in imports(src) {
        let from = &group[&module];
        let to = graph.entry(from.clone()).or_default();
        to.extend(
            named
                .iter()
                .map(|m| &group[m])
                .filter(|g| *g != from)
                .cloned(),
        );
    }
    graph
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

/// The groups, lowest first: each imports only groups before it.
const STACK: [&str; 8] = [
    "clock", "shutdown", "watch", "lead", "serve", "execute", "cli", "process",
];

#[test]
fn the_runtime_groups_stack_without_a_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = group_imports(&src);
    let mut found: Vec<&str> = graph.keys().map(String::as_str).collect();
    let mut stack = STACK.to_vec();
    found.sort_unstable();
    stack.sort_unstable();
    assert_eq!(found, stack, "a group is not in STACK: {graph:?}");
    assert!(
        graph["watch"].contains("clock") && graph["process"].contains("cli"),
        "the imports were not read: {graph:?}"
    );
    for (at, group) in STACK.iter().enumerate() {
        let above: Vec<_> = graph[*group]
            .iter()
            .filter(|named| !STACK[..at].contains(&named.as_str()))
            .collect();
        assert!(
            above.is_empty(),
            "{group} imports {above:?}, which stand above it in {STACK:?}"
        );
    }
    assert_eq!(circle(&graph), None);
}

/// The crate root's re-exports name the module they come from.
#[test]
fn root_re_exports_are_read_as_their_modules() {
    let names = root_names(
        "pub mod x;\npub use clock::{Clock, ManualClock};\npub use watch::contact::ApiContact;\n",
    );
    assert_eq!(names["Clock"], "clock");
    assert_eq!(names["ManualClock"], "clock");
    assert_eq!(names["ApiContact"], "contact");
}

/// The reading finds what a circle is made of: grouped imports and paths, not comments.
#[test]
fn imports_are_read_from_use_lines_groups_and_paths() {
    let named = named_modules(
        "use crate::{a::X, b::{Y, Z}, c};\nfn f() { crate::d::g(); }\nlet x = crate::e;",
    );
    assert_eq!(
        named_modules(&through_groups(
            "use crate::watch::cache::Cache;\nuse crate::execute::frame;\ncrate::cli::About"
        )),
        BTreeSet::from(["cache", "frame", "cli"].map(String::from))
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
