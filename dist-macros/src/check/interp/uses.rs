//! The package's `use` declarations, by module: what a name a module brings in with `use`
//! stands for there. `use crate::transpose::transpose;` in `slab.rs` makes a call of
//! `transpose(..)` in that module the function of `transpose.rs`, whatever function of
//! that name another module (`dft.rs`) defines; `use crate::comms as c;` makes
//! `c::setup(..)` `comms::setup`; `use crate::ops::*;` makes the names of `ops.rs` visible
//! after the module's own. Paths are kept as written and resolved against the module that
//! wrote them when a call is followed ([`imported`], [`globbed`]).

use std::cell::RefCell;
use std::collections::HashMap;
use syn::UseTree;

thread_local! {
    /// (module, name brought in) → the path it names, as written.
    static USES: RefCell<HashMap<(String, String), Vec<String>>> = Default::default();
    /// module → the paths of its glob imports (`use crate::ops::*;`), as written.
    static GLOBS: RefCell<HashMap<String, Vec<Vec<String>>>> = Default::default();
}

/// Forgets every module's imports (a new package is read).
pub fn reset_uses() {
    USES.with(|u| u.borrow_mut().clear());
    GLOBS.with(|g| g.borrow_mut().clear());
}

/// Notes the names `tree` brings into module `module` (`a::b`; empty at the root).
pub fn note_use(module: &str, tree: &UseTree) {
    fn walk(module: &str, prefix: &mut Vec<String>, t: &UseTree) {
        let name = |alias: String, path: Vec<String>| {
            USES.with(|u| {
                u.borrow_mut().entry((module.to_string(), alias)).or_insert(path);
            });
        };
        match t {
            UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                walk(module, prefix, &p.tree);
                prefix.pop();
            }
            // `use a::b::{self}` brings in `b`.
            UseTree::Name(n) if n.ident == "self" => {
                if let Some(last) = prefix.last() {
                    name(last.clone(), prefix.clone());
                }
            }
            UseTree::Name(n) => {
                let mut p = prefix.clone();
                p.push(n.ident.to_string());
                name(n.ident.to_string(), p);
            }
            UseTree::Rename(r) => {
                let mut p = prefix.clone();
                if r.ident != "self" {
                    p.push(r.ident.to_string());
                }
                name(r.rename.to_string(), p);
            }
            UseTree::Glob(_) => {
                GLOBS.with(|g| g.borrow_mut().entry(module.to_string()).or_default().push(prefix.clone()));
            }
            UseTree::Group(g) => {
                for t in &g.items {
                    walk(module, prefix, t);
                }
            }
        }
    }
    walk(module, &mut Vec::new(), tree);
}

/// The crate-absolute paths `path` (written in module `here`, a function's name last)
/// may stand for through a `use` of its first segment in `here`.
pub(super) fn imported(here: &[String], path: &[String]) -> Vec<Vec<String>> {
    let Some(first) = path.first() else { return Vec::new() };
    match USES.with(|u| u.borrow().get(&(here.join("::"), first.clone())).cloned()) {
        Some(target) => absolute(here, &target.into_iter().chain(path[1..].iter().cloned()).collect::<Vec<_>>()),
        None => Vec::new(),
    }
}

/// The crate-absolute paths `path` (written in module `here`) may stand for through
/// `here`'s glob imports.
pub(super) fn globbed(here: &[String], path: &[String]) -> Vec<Vec<String>> {
    let globs = GLOBS.with(|g| g.borrow().get(&here.join("::")).cloned()).unwrap_or_default();
    globs
        .into_iter()
        .flat_map(|g| absolute(here, &g.into_iter().chain(path.iter().cloned()).collect::<Vec<_>>()))
        .collect()
}

/// `path` as written in module `here`, from the crate's root: `crate::` from the root,
/// `self::` and `super::` from `here`; any other first segment is a module beside `here`
/// (a child), one at the root, or this package's library crate named from its binary.
pub(super) fn absolute(here: &[String], path: &[String]) -> Vec<Vec<String>> {
    match path.first().map(String::as_str) {
        Some("crate") => vec![path[1..].to_vec()],
        Some("self") => vec![here.iter().chain(&path[1..]).cloned().collect()],
        Some("super") => {
            let mut m = here.to_vec();
            let mut rest = path;
            while rest.first().map(String::as_str) == Some("super") {
                m.pop();
                rest = &rest[1..];
            }
            vec![m.into_iter().chain(rest.iter().cloned()).collect()]
        }
        Some(first) => {
            let mut out = vec![here.iter().chain(path).cloned().collect(), path.to_vec()];
            let lib = std::env::var("CARGO_PKG_NAME").unwrap_or_default().replace('-', "_");
            if first == lib {
                out.push(path[1..].to_vec());
            }
            out
        }
        None => Vec::new(),
    }
}
