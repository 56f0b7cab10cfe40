//! The layout rules of docs/design.md ("The map"), kept by reading the sources: no import
//! circle between files (in dist-runtime and in dist-macros), no import from `backend/`
//! into the typed layer, `init` or the launcher, no backend naming another, and `verify/`
//! and the files of the bottom floor naming no layer above them; no source file over 800
//! lines of code and no function over 100 unless it is one `match` (with at most 16
//! lines of code beside it) and says so. Each
//! failure names the file, the line and the path it uses (or the size it has).
//!
//! An import is any path a file names from `crate::` or `super::` (in `use` lines and in
//! code, comments left out), resolved to the deepest file of the module it reaches. A
//! file and the `mod.rs` files above it (its parent module, which declares it) are one
//! unit: a child uses its parent's items and the parent its child's, as Rust modules do.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One source file: its module path (`backend::shm::coll`), its text.
struct File {
    module: Vec<String>,
    path: String,
    text: String,
}

fn files(root: &Path) -> Vec<File> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).expect("a source folder") {
            let p = e.expect("an entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix(root).expect("under the root");
                let mut module: Vec<String> = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
                let last = module.pop().expect("a file name");
                match last.as_str() {
                    "lib.rs" | "main.rs" | "mod.rs" => {}
                    f => module.push(f.trim_end_matches(".rs").to_string()),
                }
                let text = std::fs::read_to_string(&p).expect("readable");
                out.push(File { module, path: rel.to_string_lossy().into_owned(), text });
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// The text without comments (`//` to the end of the line, outside string literals).
fn code(line: &str) -> &str {
    let b = line.as_bytes();
    let mut in_str = false;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' if in_str => i += 1,
            b'"' => in_str = !in_str,
            b'/' if !in_str && b.get(i + 1) == Some(&b'/') => return &line[..i],
            _ => {}
        }
        i += 1;
    }
    line
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The paths a line names from `crate` or `super`: each as its segments, `{a, b::c}`
/// groups expanded one level.
fn paths(line: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let starts = |w: &str| chars[i..].iter().take(w.len()).copied().eq(w.chars());
        let boundary = i == 0 || !is_ident(chars[i - 1]);
        let head = ["crate::", "super::"].into_iter().find(|w| boundary && starts(w));
        let Some(_) = head else {
            i += 1;
            continue;
        };
        let mut segs = Vec::new();
        let mut j = i;
        loop {
            let s = j;
            while j < chars.len() && is_ident(chars[j]) {
                j += 1;
            }
            if s == j {
                break;
            }
            segs.push(chars[s..j].iter().collect::<String>());
            if chars[j..].starts_with(&[':', ':']) {
                j += 2;
                if chars.get(j) == Some(&'{') {
                    let end = chars[j..].iter().position(|&c| c == '}').map_or(chars.len(), |p| j + p);
                    let inner: String = chars[j + 1..end].iter().collect();
                    for item in inner.split(',') {
                        let mut p = segs.clone();
                        p.extend(item.trim().split("::").map(|s| s.trim().to_string()).filter(|s| !s.is_empty()));
                        out.push(p);
                    }
                    segs.clear();
                    j = end;
                    break;
                }
            } else {
                break;
            }
        }
        if !segs.is_empty() {
            out.push(segs);
        }
        i = j.max(i + 1);
    }
    out
}

/// The file a path from `from` reaches: the deepest module of it that is a file.
fn resolve(from: &[String], path: &[String], modules: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
    let mut base: Vec<String> = Vec::new();
    let mut rest = path;
    if rest.first().map(String::as_str) == Some("crate") {
        rest = &rest[1..];
    } else {
        base = from.to_vec();
        while rest.first().map(String::as_str) == Some("super") {
            base.pop()?;
            rest = &rest[1..];
        }
    }
    let mut best = base.clone();
    for s in rest {
        base.push(s.clone());
        if modules.contains(&base) {
            best = base.clone();
        } else {
            break;
        }
    }
    modules.contains(&best).then_some(best)
}

/// Whether `a` is `b` or a module above it.
fn above(a: &[String], b: &[String]) -> bool {
    b.starts_with(a)
}

/// Every import between two files that are not one unit: (from, to) -> first (line, path).
fn imports(files: &[File]) -> BTreeMap<(Vec<String>, Vec<String>), (usize, String)> {
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| f.module.clone()).collect();
    let mut edges = BTreeMap::new();
    for f in files {
        for (n, line) in f.text.lines().enumerate() {
            for p in paths(code(line)) {
                let Some(to) = resolve(&f.module, &p, &modules) else { continue };
                if above(&to, &f.module) || above(&f.module, &to) {
                    continue;
                }
                edges.entry((f.module.clone(), to)).or_insert((n + 1, p.join("::")));
            }
        }
    }
    edges
}

fn name(files: &[File], m: &[String]) -> String {
    files.iter().find(|f| f.module == m).map_or_else(|| m.join("::"), |f| f.path.clone())
}

/// The circles of the import graph (strongly connected sets of two or more files), each
/// with the imports that tie it.
fn circles(files: &[File]) -> Vec<String> {
    let edges = imports(files);
    let mut next: BTreeMap<&Vec<String>, Vec<&Vec<String>>> = BTreeMap::new();
    for (a, b) in edges.keys() {
        next.entry(a).or_default().push(b);
    }
    let reach = |from: &Vec<String>| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from];
        while let Some(x) = stack.pop() {
            for y in next.get(x).into_iter().flatten() {
                if seen.insert(*y) {
                    stack.push(y);
                }
            }
        }
        seen
    };
    let mut out = Vec::new();
    let mut done = BTreeSet::new();
    for f in files {
        if done.contains(&f.module) {
            continue;
        }
        let mine = reach(&f.module);
        let circle: Vec<&Vec<String>> = mine.iter().copied().filter(|m| reach(m).contains(&f.module)).collect();
        if circle.len() < 2 {
            continue;
        }
        let members: BTreeSet<&Vec<String>> = circle.iter().copied().collect();
        let ties: Vec<String> = edges
            .iter()
            .filter(|((a, b), _)| members.contains(a) && members.contains(b))
            .map(|((a, b), (line, p))| format!("  {}:{line} uses {p} (in {})", name(files, a), name(files, b)))
            .collect();
        out.push(format!("a circle of {} files:\n{}", circle.len(), ties.join("\n")));
        done.extend(circle.into_iter().cloned());
    }
    out
}

/// (file, line, path) of each import from a file under `from` into a module under `to`.
fn named(files: &[File], from: &str, to: &[&str]) -> Vec<String> {
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| f.module.clone()).collect();
    let mut out = Vec::new();
    for f in files.iter().filter(|f| f.module.join("::").starts_with(from)) {
        for (n, line) in f.text.lines().enumerate() {
            for p in paths(code(line)) {
                let Some(target) = resolve(&f.module, &p, &modules) else { continue };
                let t = target.join("::");
                if to.iter().any(|x| t == *x || t.starts_with(&format!("{x}::"))) {
                    out.push(format!("  {}:{} uses {}", f.path, n + 1, p.join("::")));
                }
            }
        }
    }
    out
}

fn src(krate: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(krate).join("src")
}

#[test]
fn no_import_circles_between_files() {
    for krate in ["dist-runtime", "dist-macros", "dist-ops", "cargo-spmd", "xtask", "bench"] {
        let found = circles(&files(&src(krate)));
        assert!(found.is_empty(), "{krate}: imports that run in a circle:\n{}", found.join("\n"));
    }
}

#[test]
fn backends_import_nothing_above_them_and_not_each_other() {
    let fs = files(&src("dist-runtime"));
    let up = named(
        &fs,
        "backend",
        &["comm", "init", "buffer", "entry", "launch", "testing", "nccl", "candle", "checkpoint"],
    );
    assert!(up.is_empty(), "files under backend/ import from the layers above them:\n{}", up.join("\n"));
    for b in ["shm", "mpi", "nccl", "sim"] {
        let others: Vec<String> =
            ["shm", "mpi", "nccl", "sim"].iter().filter(|x| **x != b).map(|x| format!("backend::{x}")).collect();
        let others: Vec<&str> = others.iter().map(String::as_str).collect();
        let side = named(&fs, &format!("backend::{b}"), &others);
        assert!(side.is_empty(), "backend/{b} imports another backend:\n{}", side.join("\n"));
    }
}

#[test]
fn verdicts_and_the_bottom_floor_name_no_layer_above() {
    let fs = files(&src("dist-runtime"));
    let above =
        ["backend", "comm", "init", "buffer", "entry", "launch", "testing", "store", "candle", "checkpoint", "nccl"];
    for low in ["verify", "op", "sys", "dtype", "error", "tag", "group", "reduce_op"] {
        let up = named(&fs, low, &above);
        assert!(up.is_empty(), "{low} imports from a layer above it:\n{}", up.join("\n"));
    }
}

#[test]
fn the_reader_finds_what_it_should() {
    // The rules above pass only if the reader sees imports at all: a circle made on
    // purpose is found, a parent and its child are one unit, comments are left out.
    let f = |module: &str, text: &str| File {
        module: module.split("::").filter(|s| !s.is_empty()).map(String::from).collect(),
        path: format!("{module}.rs"),
        text: text.to_string(),
    };
    let fs = vec![
        f("", "mod a; mod b;"),
        f("a", "use crate::b::{x, y::z};\n// crate::c::w"),
        f("b", "fn g() { super::a::f() }"),
        f("b::y", "use super::*;"),
        f("c", "use crate::a::q;"),
    ];
    let found = circles(&fs);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("a.rs:1 uses crate::b::x") && found[0].contains("b.rs:1 uses super::a::f"), "{found:?}");
    assert!(!found[0].contains("c.rs"), "{found:?}");
    assert_eq!(named(&fs, "a", &["b"]).len(), 2);
    assert!(named(&fs, "a", &["c"]).is_empty(), "a comment is not an import");
}

/// The most lines of code (not blank, not comments) a source file holds.
const FILE_LINES: usize = 800;
/// The most lines of code a function holds, unless it is one `match` and says so in the
/// comments just above it ("one `match`").
const FN_LINES: usize = 100;
/// The most lines of code beside the `match` of a function marked as one `match`.
const MATCH_PRELUDE: usize = 16;

fn is_code(line: &str) -> bool {
    let t = line.trim();
    !t.is_empty() && !t.starts_with("//")
}

/// The lines of code of a function's body (`f`: from its `fn` line to its closing brace,
/// at `indent`) outside its largest `match` at the body's first level (`match x {`,
/// `let y = match x {`, `Ok(match x {`, to the brace that closes it at that level).
fn beside_the_match(f: &[&str], indent: &str) -> usize {
    let Some(open) = f.iter().position(|l| code(l).trim_end().ends_with('{')) else { return 0 };
    let body = &f[open + 1..f.len() - 1];
    let level = format!("{indent}    ");
    let at_level = |l: &str| l.strip_prefix(level.as_str()).is_some_and(|t| !t.starts_with(' '));
    let mut largest = 0;
    let mut k = 0;
    while k < body.len() {
        let l = code(body[k]).trim_end();
        if at_level(l) && l.contains("match ") && l.ends_with('{') {
            let close = body[k + 1..].iter().position(|x| at_level(x) && x.trim_start().starts_with('}'));
            let stop = close.map_or(body.len() - 1, |c| k + 1 + c);
            largest = largest.max(body[k..=stop].iter().filter(|x| is_code(x)).count());
            k = stop + 1;
        } else {
            k += 1;
        }
    }
    body.iter().filter(|x| is_code(x)).count() - largest
}

/// `fn` items of `text` (at any indentation) longer than [`FN_LINES`] lines of code and
/// not marked as one `match`: "file:line name (N lines)".
fn long_functions(f: &File) -> Vec<String> {
    let lines: Vec<&str> = f.text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        let indent = &l[..l.len() - t.len()];
        let mut rest = t;
        // (Any visibility: `pub`, `pub(crate)`, `pub(in crate::backend::shm)`.)
        if let Some(r) = rest.strip_prefix("pub(") {
            rest = r.split_once(") ").map_or(rest, |(_, after)| after);
        }
        for p in ["pub ", "const ", "async ", "unsafe "] {
            rest = rest.strip_prefix(p).unwrap_or(rest);
        }
        rest = rest.strip_prefix("extern \"C\" ").unwrap_or(rest);
        let Some(sig) = rest.strip_prefix("fn ") else { continue };
        if l.trim_end().ends_with(';') {
            continue;
        }
        let close = format!("{indent}}}");
        let Some(end) = lines[i + 1..].iter().position(|x| *x == close) else { continue };
        let n = lines[i..=i + 1 + end].iter().filter(|x| is_code(x)).count();
        // (The mark is in the comments and attributes just above the `fn`.)
        let above = lines[..i].iter().rev().take_while(|x| {
            let x = x.trim_start();
            x.starts_with("//") || x.starts_with("#[")
        });
        let marked = above.into_iter().any(|x| x.contains("one `match`"));
        // (A function marked as one `match` is one: beside its largest `match` at the
        // body's first level, at most a few lines of code in the body.)
        let rest = if n > FN_LINES && marked { beside_the_match(&lines[i..=i + 1 + end], indent) } else { 0 };
        if rest > MATCH_PRELUDE {
            let name: String = sig.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            out.push(format!(
                "{}:{} fn {name} ({n} lines of code) is marked one `match` but has {rest} lines of code beside it \
                 (more than {MATCH_PRELUDE})",
                f.path,
                i + 1
            ));
        }
        if n > FN_LINES && !marked {
            let name: String = sig.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            out.push(format!("{}:{} fn {name} ({n} lines of code, more than {FN_LINES})", f.path, i + 1));
        }
    }
    out
}

#[test]
fn one_match_is_measured_beside_its_largest_match() {
    let f = "fn f(x: u8) -> u8 {\n    let a = 1;\n    let b = match x {\n        0 => 1,\n        _ => 2,\n    };\n    \
             match x {\n        0 => {\n            let c = match a { _ => 3 };\n            c\n        }\n        _ => b,\n    \
             }\n}";
    let lines: Vec<&str> = f.lines().collect();
    // `let a` and the small `let b = match` (4 lines) beside the largest one.
    assert_eq!(beside_the_match(&lines, ""), 5, "{f}");
    let only = "fn g(x: u8) -> u8 {\n    match x {\n        _ => 0,\n    }\n}";
    assert_eq!(beside_the_match(&only.lines().collect::<Vec<_>>(), ""), 0);
}

#[test]
fn files_and_functions_stay_within_their_bounds() {
    let mut over = Vec::new();
    for krate in ["dist-runtime", "dist-macros", "dist-ops", "cargo-spmd", "xtask"] {
        for f in files(&src(krate)) {
            let n = f.text.lines().filter(|l| is_code(l)).count();
            if n > FILE_LINES {
                over.push(format!("{krate}/src/{} ({n} lines of code, more than {FILE_LINES})", f.path));
            }
            over.extend(long_functions(&f).into_iter().map(|s| format!("{krate}/src/{s}")));
        }
    }
    assert!(over.is_empty(), "files or functions over their bounds (split them by job):\n{}", over.join("\n"));
}
