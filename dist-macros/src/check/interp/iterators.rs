//! The package's own iterators (`impl Iterator for Schedule`): a value of such a type is
//! the list of what its `next` returns, run on a copy until it returns `None`, so a
//! `for` loop over it, and `filter_map`, `collect` or `count` on it, are followed as over
//! any list. An iterator whose `next` the check cannot follow (or one longer than
//! [`ITEMS`]) stays what it was: data.

use super::*;
use syn::Expr;

/// Most items taken from one of the package's iterators.
const ITEMS: usize = 4096;

/// The variable the iterator's state lives in while its `next` runs.
const STATE: &str = "__dist_iterator";

thread_local! {
    static PLACE: &'static Expr = Box::leak(Box::new(syn::parse_quote!(__dist_iterator)));
}

/// The `Iterator` methods a call on one of the package's iterators may be (its type's
/// own methods of those names come first).
pub(super) fn iterator_method(m: &str) -> bool {
    matches!(
        m,
        "into_iter"
            | "by_ref"
            | "map"
            | "filter"
            | "filter_map"
            | "enumerate"
            | "zip"
            | "chain"
            | "collect"
            | "count"
            | "sum"
            | "product"
            | "fold"
            | "for_each"
            | "try_for_each"
            | "try_fold"
            | "take"
            | "skip"
            | "step_by"
            | "take_while"
            | "skip_while"
            | "any"
            | "all"
            | "find"
            | "find_map"
            | "position"
            | "last"
            | "nth"
            | "min"
            | "max"
            | "min_by_key"
            | "max_by_key"
            | "flat_map"
            | "flatten"
            | "cloned"
            | "copied"
            | "inspect"
            | "peekable"
            | "len"
            | "unzip"
            | "partition"
    )
}

impl<'a> Interp<'a> {
    /// The items of `v`, if it is a value of one of the package's types with a `next`
    /// (its `Iterator` impl) that the check follows to its `None`.
    pub(super) fn package_iterator_items(&mut self, e: &'a Expr, v: &V<'a>) -> Result<Option<V<'a>>, Flow<'a>> {
        let V::Struct(ty, _) = v else { return Ok(None) };
        let key = format!("{}::next", ty.rsplit("::").next().unwrap_or(ty));
        if !self.file_fns.contains_key(&key) {
            return Ok(None);
        }
        let place: &'static Expr = PLACE.with(|p| *p);
        self.scopes.push();
        self.define(STATE.into(), v.clone());
        let mut items = Vec::new();
        let found = loop {
            if items.len() > ITEMS {
                break Ok(None);
            }
            let state = self.lookup(STATE).cloned().unwrap_or_else(V::opaque);
            match self.apply_method(e, &key, vec![place], vec![state]) {
                Some(Ok(V::Opt(Some(x)))) => items.push(*x),
                Some(Ok(V::Opt(None))) => break Ok(Some(V::list(items))),
                Some(Err(f)) => break Err(f),
                _ => break Ok(None),
            }
        };
        self.scopes.pop();
        found
    }
}
