//! Patterns: binding a value to a `let`, `match` or closure pattern.

use super::*;

impl<'a> Interp<'a> {
    /// A slice pattern (`[flag, value]`, `[first, .., last]`, `[head, rest @ ..]`) against
    /// a list the check holds: whether its length fits, each item bound; against an input,
    /// unknown (the same on every rank), its names inputs.
    fn bind_slice(&mut self, ps: &syn::PatSlice, v: V<'a>) -> Option<bool> {
        let items = match v {
            V::List(items) => items,
            v @ (V::Uniform | V::Agreed) => {
                for p in &ps.elems {
                    self.bind_opaque(p, &v);
                }
                return None;
            }
            other => {
                let o = V::taint(&[&other]);
                self.bind_opaque(&Pat::Slice(ps.clone()), &o);
                return None;
            }
        };
        let is_rest = |p: &Pat| match p {
            Pat::Rest(_) => true,
            Pat::Ident(i) => i.subpat.as_ref().is_some_and(|(_, s)| matches!(**s, Pat::Rest(_))),
            _ => false,
        };
        let rest = ps.elems.iter().position(is_rest);
        let fixed = ps.elems.len() - usize::from(rest.is_some());
        if items.len() < fixed || (rest.is_none() && items.len() != fixed) {
            return Some(false);
        }
        let mut all = Some(true);
        for (i, p) in ps.elems.iter().enumerate() {
            let r = match rest {
                Some(k) if i == k => match p {
                    Pat::Ident(id) => {
                        self.define(id.ident.to_string(), V::list(items[k..items.len() - (fixed - k)].to_vec()));
                        Some(true)
                    }
                    _ => Some(true),
                },
                Some(k) if i > k => self.bind(p, items[items.len() - (ps.elems.len() - i)].clone()),
                _ => self.bind(p, items[i].clone()),
            };
            match r {
                Some(true) => {}
                r => all = if all == Some(false) || r == Some(false) { Some(false) } else { None },
            }
        }
        all
    }

    /// Matches `v` against `pat`, binding names in the current scope.
    /// (Long as one `match` over the pattern's syntax.)
    /// `Some(true)`: matched; `Some(false)`: did not; `None`: cannot tell.
    pub(in crate::check::interp) fn bind(&mut self, pat: &Pat, v: V<'a>) -> Option<bool> {
        match pat {
            // `None`, a constant (`MAX =>`), or a unit variant of the package's enum
            // (`Warmup =>` after `use Phase::*`): a path, compared, not a new name (Rust
            // resolves an identifier pattern to a constant or variant in scope before
            // binding it).
            Pat::Ident(pi)
                if pi.subpat.is_none() && pi.by_ref.is_none() && pi.mutability.is_none() && {
                    let id = pi.ident.to_string();
                    id == "None" || self.consts.contains_key(&id) || self.enum_of(&id).is_some()
                } =>
            {
                let id = pi.ident.to_string();
                match (id.as_str(), &v) {
                    ("None", V::Opt(x)) => Some(x.is_none()),
                    ("None", _) => None,
                    (_, V::Struct(ty, _)) if ty.contains("::") && self.enum_of(&id).is_some() => {
                        Some(ty.rsplit("::").next() == Some(id.as_str()))
                    }
                    _ => match (self.consts.get(&id), &v) {
                        (Some(V::Int(a)), V::Int(b)) => Some(a == b),
                        (Some(V::Bool(a)), V::Bool(b)) => Some(a == b),
                        _ => None,
                    },
                }
            }
            Pat::Ident(pi) => {
                if let Some((_, sub)) = &pi.subpat {
                    let m = self.bind(sub, v.clone());
                    if m != Some(true) {
                        return m;
                    }
                }
                self.define(pi.ident.to_string(), v);
                Some(true)
            }
            Pat::Wild(_) | Pat::Rest(_) => Some(true),
            Pat::Type(pt) => self.bind(&pt.pat, v),
            Pat::Paren(p) => self.bind(&p.pat, v),
            Pat::Reference(r) => self.bind(&r.pat, v),
            Pat::Lit(l) => {
                let want = lit_value(&l.lit)?;
                match (&want, &v) {
                    (V::Int(a), V::Int(b)) => Some(a == b),
                    (V::Bool(a), V::Bool(b)) => Some(a == b),
                    _ => None,
                }
            }
            Pat::Range(r) => {
                let V::Int(x) = v else { return None };
                let lo = match &r.start {
                    Some(e) => const_int(e)?,
                    None => i128::MIN,
                };
                let hi = match &r.end {
                    Some(e) => const_int(e)?,
                    None => i128::MAX,
                };
                Some(match r.limits {
                    RangeLimits::HalfOpen(_) => lo <= x && x < hi,
                    RangeLimits::Closed(_) => lo <= x && x <= hi,
                })
            }
            Pat::Or(o) => {
                let mut unknown = false;
                for case in &o.cases {
                    match self.bind(case, v.clone()) {
                        Some(true) => return Some(true),
                        None => unknown = true,
                        Some(false) => {}
                    }
                }
                if unknown {
                    None
                } else {
                    Some(false)
                }
            }
            Pat::Tuple(t) => {
                let items = match v {
                    V::Tuple(items) if items.len() == t.elems.len() => items,
                    // `()`, as in `Ok(())` on what an op returned.
                    V::Unit if t.elems.is_empty() => return Some(true),
                    // `let (pr, pc) = cfg.grid.unwrap_or(..)`: parts of an input are inputs.
                    v @ (V::Uniform | V::Agreed) => {
                        for p in &t.elems {
                            self.bind_opaque(p, &v);
                        }
                        return Some(true);
                    }
                    other => {
                        let o = V::taint(&[&other]);
                        for p in &t.elems {
                            self.bind_opaque(p, &o);
                        }
                        return if matches!(other, V::Opaque { .. }) { Some(true) } else { None };
                    }
                };
                let mut all = Some(true);
                for (p, x) in t.elems.iter().zip(items) {
                    match self.bind(p, x) {
                        Some(true) => {}
                        r => all = if all == Some(false) || r == Some(false) { Some(false) } else { None },
                    }
                }
                all
            }
            Pat::TupleStruct(ts) => {
                let name = last_seg(&ts.path);
                match (name.as_str(), v) {
                    ("Some", V::Opt(Some(x))) if ts.elems.len() == 1 => self.bind(&ts.elems[0], *x),
                    ("Some", V::Opt(None)) => Some(false),
                    ("Ok", x) if ts.elems.len() == 1 && x != V::Err => self.bind(&ts.elems[0], x),
                    // What a communicator's op returns in the run the check proves (no
                    // rank dies): `Ok`, so an `Err(PeerFailed { .. })` arm, the recovery
                    // path, is not taken; the run-time checks watch it.
                    ("Err", V::Unit | V::Comm(_) | V::Req(_)) => Some(false),
                    (_, V::Struct(ty, _)) if self.other_variant(&ts.path, &ty) => Some(false),
                    // `if let Some(px) = args.px`: an input may or may not be there, the
                    // same on every rank; what it holds is an input too.
                    (_, v @ (V::Uniform | V::Agreed)) => {
                        for p in &ts.elems {
                            self.bind_opaque(p, &v);
                        }
                        None
                    }
                    (_, V::Struct(_, fields)) => {
                        let mut all = Some(true);
                        for (i, p) in ts.elems.iter().enumerate() {
                            let x =
                                fields.iter().find(|(k, _)| *k == i.to_string()).map_or(V::opaque(), |f| f.1.clone());
                            match self.bind(p, x) {
                                Some(true) => {}
                                r => all = if all == Some(false) || r == Some(false) { Some(false) } else { None },
                            }
                        }
                        all
                    }
                    (_, other) => {
                        let o = V::taint(&[&other]);
                        for p in &ts.elems {
                            self.bind_opaque(p, &o);
                        }
                        None
                    }
                }
            }
            Pat::Struct(ps) => {
                let fields = match v {
                    v @ (V::Uniform | V::Agreed) => {
                        for f in &ps.fields {
                            self.bind_opaque(&f.pat, &v);
                        }
                        return Some(true);
                    }
                    V::Struct(ty, _) if self.other_variant(&ps.path, &ty) => return Some(false),
                    V::Struct(_, fields) => fields,
                    other => {
                        let o = V::taint(&[&other]);
                        for f in &ps.fields {
                            self.bind_opaque(&f.pat, &o);
                        }
                        return None;
                    }
                };
                let mut all = Some(true);
                for f in &ps.fields {
                    let name = match &f.member {
                        syn::Member::Named(i) => i.to_string(),
                        syn::Member::Unnamed(i) => i.index.to_string(),
                    };
                    let x = fields.iter().find(|(k, _)| *k == name).map_or(V::opaque(), |f| f.1.clone());
                    match self.bind(&f.pat, x) {
                        Some(true) => {}
                        r => all = if all == Some(false) || r == Some(false) { Some(false) } else { None },
                    }
                }
                all
            }
            Pat::Slice(ps) => self.bind_slice(ps, v),
            Pat::Path(p) => match (last_seg(&p.path).as_str(), &v) {
                ("None", V::Opt(x)) => Some(x.is_none()),
                (_, V::Struct(ty, _)) if ty.contains("::") => Some(!self.other_variant(&p.path, ty)),
                (_, V::Name(name)) => path_names(&p.path, name),
                _ => None,
            },
            _ => {
                let o = V::taint(&[&v]);
                self.bind_opaque(pat, &o);
                None
            }
        }
    }

    /// Binds every name in `pat` to an opaque value.
    pub(in crate::check::interp) fn bind_opaque(&mut self, pat: &Pat, o: &V<'a>) {
        // Part by part where the value has the pattern's shape: `(Some(px), None)` on a
        // tuple of two inputs binds `px` to the first input, not to the tuple.
        match (pat, o) {
            (Pat::Tuple(t), V::Tuple(items)) if t.elems.len() == items.len() => {
                for (p, x) in t.elems.iter().zip(items) {
                    self.bind_opaque(p, x);
                }
                return;
            }
            (Pat::TupleStruct(ts), V::Uniform | V::Agreed) if ts.elems.len() == 1 => {
                return self.bind_opaque(&ts.elems[0], o);
            }
            (Pat::TupleStruct(ts), V::Opt(Some(x))) if ts.elems.len() == 1 => {
                return self.bind_opaque(&ts.elems[0], x);
            }
            (Pat::Paren(p), _) => return self.bind_opaque(&p.pat, o),
            _ => {}
        }
        let mut names = Vec::new();
        pat_names(pat, &mut names);
        for n in names {
            self.define(n, o.clone());
        }
    }
}

/// Whether the path pattern `p` (`ReduceOp::Max`, `Ordering::Less`) matches a value the
/// check holds by its name (`Max` for a reduce op, a path it cannot see into).
pub(in crate::check::interp) fn path_names(p: &syn::Path, name: &str) -> Option<bool> {
    let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
    names_equal(&segs.join("::"), name)
}

/// Whether two variants held by name are the same: `Some` where both are variants of
/// one enum (the same type named before the variant; a reduce op is held by its
/// variant's name alone), `None` where that cannot be told.
pub(crate) fn names_equal(a: &str, b: &str) -> Option<bool> {
    const REDUCE_OPS: [&str; 8] = ["Sum", "Prod", "Max", "Min", "Avg", "BAnd", "BOr", "BXor"];
    let split = |n: &str| -> (Option<String>, String) {
        let (ty, last) = match n.rsplit_once("::") {
            Some((t, l)) => (Some(t.rsplit("::").next().unwrap_or(t).to_string()), l.to_string()),
            None => (None, n.to_string()),
        };
        let ty = ty.or_else(|| REDUCE_OPS.contains(&last.as_str()).then(|| "ReduceOp".to_string()));
        (ty, last)
    };
    match (split(a), split(b)) {
        ((Some(x), l), (Some(y), m)) if x == y => Some(l == m),
        _ => None,
    }
}
