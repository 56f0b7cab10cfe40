//! Places: reading and writing a variable, field or item, and forgetting what code
//! the check summarised wrote there.

use super::*;

impl<'a> Interp<'a> {
    /// `x = v`, `x += v`: only plain names are tracked.
    /// The value a place expression (`x`, `x.f`, `(x)`) holds now, without evaluating
    /// anything that could have effects.
    pub(in crate::check::interp) fn place_value(&self, place: &Expr) -> Option<V<'a>> {
        match place {
            Expr::Path(p) => self.lookup(&p.path.get_ident()?.to_string()).cloned(),
            Expr::Paren(p) => self.place_value(&p.expr),
            Expr::Unary(u) if matches!(u.op, UnOp::Deref(_)) => self.place_value(&u.expr),
            // `m.entry(k).or_default()` on a map the check holds.
            Expr::MethodCall(_) => self.entry_place_value(place),
            Expr::Field(f) => match self.place_value(&f.base)? {
                V::Struct(_, fields) => {
                    let name = match &f.member {
                        syn::Member::Named(i) => i.to_string(),
                        syn::Member::Unnamed(i) => i.index.to_string(),
                    };
                    fields.into_iter().find(|(k, _)| *k == name).map(|(_, v)| v)
                }
                _ => None,
            },
            _ => None,
        }
    }

    pub(in crate::check::interp) fn store(&mut self, place: &'a Expr, v: V<'a>) -> Result<(), Flow<'a>> {
        match place {
            Expr::Path(p) if p.path.segments.len() == 1 => {
                self.assign(&p.path.segments[0].ident.to_string(), v);
                Ok(())
            }
            Expr::Unary(u) if matches!(u.op, UnOp::Deref(_)) => self.store(&u.expr, v),
            Expr::Paren(p) => self.store(&p.expr, v),
            Expr::MethodCall(_) if self.store_entry(place, &v)? => Ok(()),
            // `(best, best_d) = (c, d)`: each place gets its part; `_` nothing.
            Expr::Tuple(t) => {
                let parts = match v {
                    V::Tuple(items) if items.len() == t.elems.len() => items,
                    other => vec![V::taint(&[&other]); t.elems.len()],
                };
                for (place, part) in t.elems.iter().zip(parts) {
                    if !matches!(place, Expr::Infer(_)) {
                        self.store(place, part)?;
                    }
                }
                Ok(())
            }
            // `s.f = v` (and `self.a.b = v`) on a struct the check follows.
            Expr::Field(f) if matches!(self.place_value(&f.base), Some(V::Struct(..))) => {
                let Some(V::Struct(ty, mut fields)) = self.place_value(&f.base) else { unreachable!() };
                let name = match &f.member {
                    syn::Member::Named(i) => i.to_string(),
                    syn::Member::Unnamed(i) => i.index.to_string(),
                };
                match fields.iter_mut().find(|(k, _)| *k == name) {
                    Some(slot) => slot.1 = v,
                    None => fields.push((name, v)),
                }
                self.store(&f.base, V::Struct(ty, fields))
            }
            other => {
                // `a[i] = ..`, `s.f = ..`: the place is data; evaluate its parts for effects.
                if v.has_comm() {
                    return Err(undecidable(other, "a communicator stored in a field or element"));
                }
                // `a[i] = v` with `i` a literal or a variable: the element changes, the rest stays.
                // (`self.slots[mb] = ..` too: a list in a field the check follows.)
                if let Expr::Index(ix) = other {
                    if matches!(&*ix.expr, Expr::Path(_) | Expr::Field(_)) && plain_index(&ix.index) {
                        let i = self.expr(&ix.index)?;
                        if let (Some(V::List(mut items)), V::Int(i)) = (self.place_value(&ix.expr), &i) {
                            let at = usize::try_from(*i).ok().filter(|&i| i < items.len());
                            if let Some(slot) = at.map(|i| &mut std::rc::Rc::make_mut(&mut items)[i]) {
                                *slot = v;
                                return self.store(&ix.expr, V::List(items));
                            }
                        }
                        // `partials[owner] = block` with `owner` data: any item may be the
                        // one replaced, so each is what it was or `v`: its shape kept only
                        // where both have it.
                        if let (Some(V::List(items)), false) = (self.place_value(&ix.expr), matches!(i, V::Int(_))) {
                            let salt = fp_of(&[&i, &v]);
                            let out: Vec<V<'a>> = items
                                .iter()
                                .map(|x| {
                                    if shape(forget(x.clone(), true)) == shape(forget(v.clone(), true)) {
                                        forget_with(x.clone(), true, salt)
                                    } else {
                                        V::taint(&[x, &v, &i])
                                    }
                                })
                                .collect();
                            return self.store(&ix.expr, V::list(out));
                        }
                    }
                }
                // Otherwise what the place held is no longer known (its shape is): that
                // field of a struct the check follows, else the variable.
                self.clobber_place(other, true);
                Ok(())
            }
        }
    }

    /// Forgets what the variable `name` holds, after something wrote into it through a
    /// `&mut` (a receive buffer, a helper the check cannot see). With `keep_shape`, a
    /// list or tuple keeps its length and only its elements become unknown (a receive
    /// fills a buffer, it does not resize it).
    /// Forgets what the place `e` holds (`self.layers` for `self.layers.iter_mut()` or
    /// `&mut self.layers[i]`): only that field of a struct the check follows, else
    /// the variable at its root.
    pub(in crate::check::interp) fn clobber_place(&mut self, e: &'a Expr, keep_shape: bool) {
        self.clobber_place_with(e, keep_shape, 0)
    }

    /// [`Self::clobber_place`], with what was written known by `salt` ([`forget_with`]).
    pub(in crate::check::interp) fn clobber_place_with(&mut self, e: &'a Expr, keep_shape: bool, salt: u64) {
        let mut p = e;
        // Written through `opt.as_mut()`: what the option holds, never whether it holds.
        let mut content = false;
        loop {
            p = match p {
                Expr::Reference(r) => &r.expr,
                Expr::Paren(x) => &x.expr,
                Expr::Group(x) => &x.expr,
                Expr::Unary(u) if matches!(u.op, UnOp::Deref(_)) => &u.expr,
                Expr::Index(i) => &i.expr,
                Expr::MethodCall(m) if lends_mut(m) => {
                    content |= matches!(m.method.to_string().as_str(), "as_mut" | "as_deref_mut");
                    &m.receiver
                }
                _ => break,
            };
        }
        if let Expr::Field(_) | Expr::Path(_) = p {
            if let Some(v) = self.place_value(p) {
                let v = match v {
                    v @ V::Opt(_) if content => super::forget_content(v, salt),
                    v if matches!(p, Expr::Field(_)) => forget_with(v, keep_shape, salt),
                    _ => return self.clobber_root(e, keep_shape, salt),
                };
                if self.store(p, v).is_ok() {
                    return;
                }
            }
        }
        self.clobber_root(e, keep_shape, salt)
    }

    /// Forgets the variable at the root of the place `e`.
    fn clobber_root(&mut self, e: &'a Expr, keep_shape: bool, salt: u64) {
        if let Some(name) = place_root(e) {
            self.clobber_with(&name, keep_shape, salt);
        }
    }

    /// Forgets what the place `path` holds (`x`, or `self.next`: only that field of a
    /// struct the check follows), computed as `salt` says.
    pub(in crate::check::interp) fn clobber_path(&mut self, path: &str, salt: u64) {
        // `x[]`: written through an index, so its length stays (`x[][]`: two levels of
        // indexing, `x[i][j] = v`, and the items' lengths stay too).
        let mut path = path;
        let mut depth = 0;
        while let Some(p) = path.strip_suffix("[]") {
            (path, depth) = (p, depth + 1);
        }
        let mut parts = path.split('.');
        let root = parts.next().unwrap_or_default();
        let fields: Vec<&str> = parts.collect();
        fn go<'a>(v: V<'a>, fields: &[&str], salt: u64, depth: usize) -> V<'a> {
            match (v, fields.split_first()) {
                (V::Struct(t, fs), Some((f, rest))) if fs.iter().any(|(k, _)| k == f) => V::Struct(
                    t.clone(),
                    fs.into_iter()
                        .map(|(k, v)| {
                            if k != *f {
                                (k, v)
                            } else if rest.is_empty() {
                                let v = forget_field(&t, &k, v, false, salt, depth, false);
                                (k, v)
                            } else {
                                let v = go(v, rest, salt, depth);
                                (k, v)
                            }
                        })
                        .collect(),
                ),
                (v @ V::List(_), None) => super::forget_depth(v, depth, salt),
                (v @ V::Opt(_), None) if depth > 0 => super::forget_content(v, salt),
                (v, _) => forget_with(v, false, salt),
            }
        }
        if let Some(v) = self.lookup(root).cloned() {
            self.assign(root, go(v, &fields, salt, depth));
        }
    }

    pub(in crate::check::interp) fn clobber_with(&mut self, name: &str, keep_shape: bool, salt: u64) {
        if let Some(v) = self.lookup(name).cloned() {
            self.assign(name, forget_with(v, keep_shape, salt));
        }
    }

    /// Forgets the variables that the arguments `args` lend mutably (`&mut x`,
    /// `Some(&mut x)`, `x.as_mut_slice()`): the callee may have written into them.
    pub(in crate::check::interp) fn clobber_loans(
        &mut self,
        args: &'a syn::punctuated::Punctuated<Expr, syn::Token![,]>,
        keep_shape: bool,
    ) {
        let mut places = Vec::new();
        for a in args {
            mut_loan_places(a, &mut places);
        }
        for p in places {
            self.clobber_place(p, keep_shape);
        }
    }

    pub(in crate::check::interp) fn store_path(&mut self, p: &syn::ExprPath, v: V<'a>) {
        if p.path.segments.len() == 1 {
            self.assign(&p.path.segments[0].ident.to_string(), v);
        }
    }

    /// `v.last_mut()`, `v.first_mut()`, `v.get_mut(i)` on a list the check holds, as
    /// the scrutinee of a `match` or `if let`: the item (`Some`) or `None`, and where it
    /// sits (the list's place and the index), so that what the arm does through the
    /// binding is written back into the list ([`Self::write_back`]).
    pub(in crate::check::interp) fn mut_accessor(&mut self, e: &'a Expr) -> Result<Option<Accessor<'a>>, Flow<'a>> {
        let Expr::MethodCall(mc) = e else { return Ok(None) };
        let m = mc.method.to_string();
        if !matches!(m.as_str(), "last_mut" | "first_mut" | "get_mut") {
            return Ok(None);
        }
        let Some(V::List(items)) = self.place_value(&mc.receiver) else { return Ok(None) };
        let idx = match (m.as_str(), mc.args.first()) {
            ("last_mut", None) => items.len().checked_sub(1),
            ("first_mut", None) => (!items.is_empty()).then_some(0),
            ("get_mut", Some(a)) => match self.expr(a)? {
                V::Int(i) if i >= 0 && i < items.len() as i128 => Some(i as usize),
                V::Int(_) => None,
                _ => return Ok(None),
            },
            _ => return Ok(None),
        };
        let v = V::Opt(idx.map(|i| Box::new(items[i].clone())));
        Ok(Some((&*mc.receiver, idx, v)))
    }

    /// After an arm bound `pat` to the item at `idx` of the list at `place` (see
    /// [`Self::mut_accessor`]): the binding's value goes back into the list.
    pub(in crate::check::interp) fn write_back(
        &mut self,
        pat: &Pat,
        place: &'a Expr,
        idx: usize,
    ) -> Result<(), Flow<'a>> {
        let mut names = Vec::new();
        pat_names(pat, &mut names);
        let [name] = &names[..] else { return Ok(()) };
        let Some(item) = self.lookup(name).cloned() else { return Ok(()) };
        match self.place_value(place) {
            Some(V::List(mut items)) if idx < items.len() => {
                std::rc::Rc::make_mut(&mut items)[idx] = item;
                self.store(place, V::List(items))
            }
            _ => {
                self.clobber_place(place, false);
                Ok(())
            }
        }
    }
}
