//! The variables in scope while a rank runs: one stack of (name, value) pairs with the
//! start of each block's, names interned. A lookup is one hash of the name (to intern
//! it) and a scan of the visible variables from the innermost, instead of a hash probe
//! per enclosing block; entering a block allocates nothing.

use super::{FxMap, V};
use std::cell::RefCell;
use std::rc::Rc;

/// A variable's name, interned for the check.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(super) struct Sym(u32);

/// Interned names: by text, and their texts by number.
type Names = (FxMap<Rc<str>, u32>, Vec<Rc<str>>);

thread_local! {
    static NAMES: RefCell<Names> = RefCell::new(Default::default());
    /// The interned names of identifiers, by the identifier's address in the syntax
    /// (reading an identifier's text crosses the compiler's bridge and allocates).
    static IDENTS: RefCell<FxMap<usize, Sym>> = RefCell::new(Default::default());
}

/// The interned name of `i`, a node of the checked syntax (alive for the whole check).
pub(super) fn ident_sym(i: &syn::Ident) -> Sym {
    let key = i as *const syn::Ident as usize;
    if let Some(s) = IDENTS.with(|m| m.borrow().get(&key).copied()) {
        return s;
    }
    let s = sym(&i.to_string());
    IDENTS.with(|m| m.borrow_mut().insert(key, s));
    s
}

/// The interned form of `name`.
pub(super) fn sym(name: &str) -> Sym {
    NAMES.with(|n| {
        let mut n = n.borrow_mut();
        if let Some(&i) = n.0.get(name) {
            return Sym(i);
        }
        let text: Rc<str> = Rc::from(name);
        let i = n.1.len() as u32;
        n.1.push(text.clone());
        n.0.insert(text, i);
        Sym(i)
    })
}

/// The text of an interned name.
pub(super) fn text(s: Sym) -> Rc<str> {
    NAMES.with(|n| n.borrow().1[s.0 as usize].clone())
}

/// Forgets the interned names (at the start of a check, when no scope holds any).
pub(super) fn reset() {
    IDENTS.with(|m| m.borrow_mut().clear());
    NAMES.with(|n| {
        let mut n = n.borrow_mut();
        n.0.clear();
        n.1.clear();
    });
}

/// Nested scopes: `vars` from the outermost, `starts[d]` the index of scope `d`'s first.
/// `id` names the function run (frame) they belong to: a closure made in it reads and
/// writes its variables wherever it is called.
#[derive(Clone)]
pub(super) struct Scopes<'a> {
    vars: Vec<(Sym, V<'a>)>,
    starts: Vec<usize>,
    id: u64,
}

thread_local! {
    static FRAMES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

impl<'a> Scopes<'a> {
    /// One empty scope, of a new frame.
    pub(super) fn new() -> Self {
        let id = FRAMES.with(|f| {
            f.set(f.get() + 1);
            f.get()
        });
        Scopes { vars: Vec::new(), starts: vec![0], id }
    }

    /// The frame these scopes belong to.
    pub(super) fn id(&self) -> u64 {
        self.id
    }

    /// The innermost variable named `s`.
    pub(super) fn get(&self, s: Sym) -> Option<&V<'a>> {
        self.vars.iter().rev().find(|(k, _)| *k == s).map(|(_, v)| v)
    }

    pub(super) fn get_mut(&mut self, s: Sym) -> Option<&mut V<'a>> {
        self.vars.iter_mut().rev().find(|(k, _)| *k == s).map(|(_, v)| v)
    }

    /// The variable named `s` of scope `depth` (0: the outermost).
    pub(super) fn get_in(&self, depth: usize, s: Sym) -> Option<&V<'a>> {
        let (a, b) = self.bounds(depth)?;
        self.vars[a..b].iter().find(|(k, _)| *k == s).map(|(_, v)| v)
    }

    fn bounds(&self, depth: usize) -> Option<(usize, usize)> {
        let a = *self.starts.get(depth)?;
        Some((a, self.starts.get(depth + 1).copied().unwrap_or(self.vars.len())))
    }

    /// Defines `s` in the innermost scope (replacing a variable of that scope so named).
    pub(super) fn define(&mut self, s: Sym, v: V<'a>) {
        let start = *self.starts.last().expect("a scope");
        match self.vars[start..].iter_mut().find(|(k, _)| *k == s) {
            Some(slot) => slot.1 = v,
            None => self.vars.push((s, v)),
        }
    }

    pub(super) fn push(&mut self) {
        self.starts.push(self.vars.len());
    }

    pub(super) fn pop(&mut self) {
        let start = self.starts.pop().expect("a scope");
        self.vars.truncate(start);
    }

    /// Every variable, innermost first (shadowed ones too).
    pub(super) fn iter(&self) -> impl Iterator<Item = (Sym, &V<'a>)> {
        self.vars.iter().rev().map(|(k, v)| (*k, v))
    }

    /// Every variable with the depth of its scope.
    pub(super) fn entries(&self) -> impl Iterator<Item = (usize, Sym, &V<'a>)> {
        (0..self.starts.len()).flat_map(move |d| {
            let (a, b) = self.bounds(d).unwrap_or((0, 0));
            self.vars[a..b].iter().map(move |(k, v)| (d, *k, v))
        })
    }
}
