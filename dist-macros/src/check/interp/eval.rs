//! The recursive core: expressions, statements, patterns, control flow, calls of
//! closures and same-file helpers. Kept in one file: its parts call each other.

use super::super::trace::Ev;
use super::*;
use quote::ToTokens;
use syn::{BinOp, Block, Expr, FnArg, Item, ItemFn, Pat, RangeLimits, Stmt, UnOp};

impl<'a> Interp<'a> {
    /// Matches `v` against `pat`, binding names in the current scope.
    /// `Some(true)`: matched; `Some(false)`: did not; `None`: cannot tell.
    pub(super) fn bind(&mut self, pat: &Pat, v: V<'a>) -> Option<bool> {
        match pat {
            // `Warmup =>` after `use Phase::*`: the unit variant, not a new name.
            Pat::Ident(pi)
                if pi.subpat.is_none()
                    && pi.by_ref.is_none()
                    && pi.mutability.is_none()
                    && matches!(&v, V::Struct(ty, f) if ty.contains("::") && f.is_empty())
                    && self.enum_of(&pi.ident.to_string()).is_some() =>
            {
                let V::Struct(ty, _) = &v else { return None };
                Some(ty.rsplit("::").next() == Some(&*pi.ident.to_string()))
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
            Pat::Path(p) => match (last_seg(&p.path).as_str(), &v) {
                ("None", V::Opt(x)) => Some(x.is_none()),
                (_, V::Struct(ty, _)) if ty.contains("::") => Some(!self.other_variant(&p.path, ty)),
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
    pub(super) fn bind_opaque(&mut self, pat: &Pat, o: &V<'a>) {
        let mut names = Vec::new();
        pat_names(pat, &mut names);
        for n in names {
            self.define(n, o.clone());
        }
    }

    // ------------------------------------------------------------ statements

    pub(super) fn block(&mut self, b: &'a Block) -> R<'a> {
        self.scoped(|me| me.stmts(&b.stmts))
    }

    pub(super) fn stmts(&mut self, stmts: &'a [Stmt]) -> R<'a> {
        // Nested fns and consts are visible in the whole block.
        for s in stmts {
            match s {
                Stmt::Item(Item::Fn(f)) => {
                    self.fns.insert(f.sig.ident.to_string(), f);
                }
                Stmt::Item(Item::Const(c)) => {
                    let v = self.expr(&c.expr).unwrap_or(V::opaque());
                    self.define(c.ident.to_string(), v);
                }
                _ => {}
            }
        }
        let mut last = V::Unit;
        for (i, s) in stmts.iter().enumerate() {
            last = match s {
                Stmt::Local(l) => {
                    let Some(init) = &l.init else {
                        self.bind_opaque(&l.pat, &V::opaque());
                        continue;
                    };
                    let v = self.expr(&init.expr)?;
                    self.aliased(&init.expr);
                    if matches!(v, V::Opaque { .. }) {
                        let mut names = Vec::new();
                        pat_names(&l.pat, &mut names);
                        for n in names {
                            let text =
                                format!("`{n}` is `{}` ({})", init.expr.to_token_stream(), self.place(&init.expr));
                            self.note_why(&n, text, &init.expr);
                        }
                    }
                    self.note_numbering(&l.pat, &init.expr);
                    self.note_elem(&l.pat, Some(&init.expr));
                    match self.bind(&l.pat, v) {
                        Some(true) => {}
                        Some(false) => match &init.diverge {
                            Some((_, e)) => {
                                // The else block diverges (return, break, panic).
                                self.expr(e)?;
                                return Err(Flow::Fail);
                            }
                            None => return Err(Flow::Fail),
                        },
                        None => {
                            if let Some((_, e)) = &init.diverge {
                                // The else branch may run: it must not communicate.
                                self.speculate(&[Branch::Expr(e)], e)?;
                            }
                        }
                    }
                    V::Unit
                }
                Stmt::Item(_) => V::Unit,
                Stmt::Expr(e, semi) => {
                    let v = self.expr(e)?;
                    if semi.is_some() && i + 1 < stmts.len() {
                        V::Unit
                    } else if semi.is_some() {
                        // `return`-free last statement with a semicolon: the block is ().
                        if v == V::Err {
                            V::Err
                        } else {
                            V::Unit
                        }
                    } else {
                        v
                    }
                }
                Stmt::Macro(m) => self.mac(&m.mac)?,
            };
        }
        Ok(last)
    }

    /// Evaluates branches that may or may not run (their condition is opaque). They must
    /// not communicate; variables they change become opaque afterwards.
    pub(super) fn speculate(&mut self, branches: &[Branch<'a>], at: &impl ToTokens) -> Result<(), Flow<'a>> {
        let before_scopes = self.scopes.clone();
        let (ne, nc) = (self.events.len(), self.comms.len());
        let mut changed: Vec<scopes::Sym> = Vec::new();
        let mut reshaped: Vec<scopes::Sym> = Vec::new();
        // What each changed variable was set to, in any branch, and the condition: the
        // data it holds after is computed from those ([`V::Opaque`]'s `fp`).
        let cond_fp = std::mem::take(&mut self.cond_fp);
        let agreed_cond = std::mem::take(&mut self.spec_agreed);
        let mut salts: Vec<(scopes::Sym, u64)> = Vec::new();
        // Under a condition the same on every rank, every rank takes the same branch:
        // a variable that each branch leaves the same on every rank (and that was so
        // before) is the same on every rank after (`if counts[c] > 0 { x = sums[c] /
        // counts[c] }`).
        let mut all_agreed: Vec<(scopes::Sym, bool)> = Vec::new();
        // Under a condition on exact data ([`V::derived`]), what each branch leaves is
        // exact where its values and the variable's before are.
        let mut all_exact: Vec<(scopes::Sym, bool)> = Vec::new();
        let mut values = Vec::new();
        for b in branches {
            self.scopes = before_scopes.clone();
            self.speculative += 1;
            let r = match b {
                Branch::Expr(e) => self.expr(e),
                Branch::Block(b) => self.block(b),
            };
            self.speculative -= 1;
            let communicated = self.events.len() != ne || self.comms.len() != nc;
            if communicated {
                let what = match &self.events[ne..].first() {
                    Some(ev) => format!("`{}` under a condition that depends on data", ev.call()),
                    None => "a communicator created under a condition that depends on data".into(),
                };
                self.scopes = before_scopes;
                return Err(undecidable(at, what));
            }
            match r {
                Ok(v) => values.push(v),
                Err(Flow::Fail) => {}
                Err(Flow::Stop(s)) => {
                    self.scopes = before_scopes;
                    return Err(Flow::Stop(s));
                }
                Err(_) => {
                    self.scopes = before_scopes;
                    return Err(undecidable(
                        at,
                        "`return`, `break` or `continue` under a condition that depends on data",
                    ));
                }
            }
            for (depth, k, v) in self.scopes.entries() {
                if before_scopes.get_in(depth, k) != Some(v) {
                    // Whether only its data changed (a struct whose buffers a branch
                    // wrote keeps its communicators and shape).
                    let same_shape = before_scopes
                        .get_in(depth, k)
                        .is_some_and(|b| shape(forget(b.clone(), false)) == shape(forget(v.clone(), false)));
                    if !same_shape {
                        reshaped.push(k);
                    }
                    changed.push(k);
                    salts.push((k, fp_of(&[v, &V::Int(cond_fp as i128)])));
                    let before = before_scopes.get_in(depth, k);
                    let same = agreed_cond && same_everywhere(v) && before.is_none_or(same_everywhere);
                    let exact = (agreed_cond || super::value::is_exact(cond_fp))
                        && exact_class(v)
                        && before.is_none_or(exact_class);
                    all_agreed.push((k, same));
                    all_exact.push((k, exact));
                }
            }
        }
        self.scopes = before_scopes;
        self.spec_values = values;
        let cond = self.place(at);
        for k in changed {
            if let Some(slot) = self.scopes.get_mut(k) {
                let salt = salts.iter().filter(|x| x.0 == k).fold(0u64, |a, x| a.rotate_left(5) ^ x.1) | 1;
                let agreed = all_agreed.iter().filter(|x| x.0 == k).all(|x| x.1);
                let exact = all_exact.iter().filter(|x| x.0 == k).all(|x| x.1)
                    && !slot.has_comm()
                    && !matches!(slot, V::Struct(..));
                *slot = if agreed {
                    if reshaped.contains(&k) {
                        V::Agreed
                    } else {
                        agree(slot.clone())
                    }
                } else if exact {
                    let salt = V::Int(salt as i128);
                    match &*slot {
                        // A list keeps its length where no branch changed it.
                        V::List(items) if !reshaped.contains(&k) => {
                            V::list(items.iter().map(|x| V::derived(&[x, &salt])).collect())
                        }
                        v => V::derived(&[v, &salt]),
                    }
                } else if reshaped.contains(&k) {
                    let comm = slot.has_comm();
                    V::Opaque { comm, fp: if comm { 0 } else { fp_of(&[slot, &V::Int(salt as i128)]) } }
                } else {
                    forget_with(slot.clone(), false, salt)
                };
                let name = scopes::text(k).to_string();
                if !name.starts_with('\u{0}') {
                    let text = format!("`{name}` is set in a branch or loop whose condition depends on data ({cond})");
                    self.note_why(&name, text, at);
                }
            }
        }
        Ok(())
    }

    // ------------------------------------------------------------ expressions

    pub(super) fn expr(&mut self, e: &'a Expr) -> R<'a> {
        self.tick(e)?;
        match e {
            Expr::Lit(l) => Ok(lit_value(&l.lit).unwrap_or(V::opaque())),
            Expr::Path(p) => Ok(self.path(&p.path)),
            Expr::Paren(p) => self.expr(&p.expr),
            Expr::Group(g) => self.expr(&g.expr),
            Expr::Reference(r) => self.expr(&r.expr),
            Expr::Cast(c) => match self.expr(&c.expr)? {
                // `b as usize`: a bool cast to an integer is 0 or 1.
                V::Bool(b) if !matches!(&*c.ty, syn::Type::Path(p) if p.path.is_ident("bool")) => Ok(V::Int(b as i128)),
                v => Ok(v),
            },
            Expr::Block(b) => self.labeled_block(b.label.as_ref(), &b.block),
            Expr::Unsafe(u) => self.block(&u.block),
            Expr::Unary(u) => {
                let v = self.expr(&u.expr)?;
                Ok(match (&u.op, v) {
                    (UnOp::Neg(_), V::Int(x)) => V::Int(-x),
                    (UnOp::Not(_), V::Bool(b)) => V::Bool(!b),
                    (UnOp::Not(_), V::Int(x)) => V::Int(!x),
                    (UnOp::Deref(_), v) => v,
                    (_, v @ (V::Agreed | V::Uniform)) => v,
                    (_, v) => V::derived(&[&v]),
                })
            }
            Expr::Binary(b) => self.binary(b),
            Expr::Tuple(t) => {
                let mut out = Vec::new();
                for x in &t.elems {
                    out.push(self.expr(x)?);
                    self.aliased(x);
                }
                Ok(if out.is_empty() { V::Unit } else { V::Tuple(out) })
            }
            Expr::Array(a) => {
                let mut out = Vec::new();
                for x in &a.elems {
                    out.push(self.expr(x)?);
                    self.aliased(x);
                }
                Ok(V::list(out))
            }
            Expr::Repeat(r) => self.repeat(&r.expr, &r.len),
            Expr::Range(r) => {
                let lo = match &r.start {
                    Some(s) => self.expr(s)?,
                    None => V::Int(0),
                };
                let hi = match &r.end {
                    Some(s) => self.expr(s)?,
                    None => return Ok(V::opaque()),
                };
                Ok(match (lo, hi) {
                    (V::Int(a), V::Int(b)) => match r.limits {
                        RangeLimits::HalfOpen(_) => V::Range(a, b),
                        RangeLimits::Closed(_) => V::Range(a, b + 1),
                    },
                    // `0..steps` with `steps` from the program's inputs: this run's count.
                    // (The input's value, as everywhere else in this run: `1..pc` with
                    // `pc` 1 is empty, as the program's is.)
                    (V::Int(a), V::Uniform) => {
                        let b = super::uniform_number();
                        match r.limits {
                            RangeLimits::HalfOpen(_) => V::Range(a, b.max(a)),
                            RangeLimits::Closed(_) => V::Range(a, (b + 1).max(a)),
                        }
                    }
                    _ => V::opaque(),
                })
            }
            Expr::Field(f) => {
                let base = self.expr(&f.base)?;
                Ok(match (&f.member, base) {
                    (syn::Member::Unnamed(i), V::Tuple(items)) => {
                        items.get(i.index as usize).cloned().unwrap_or(V::opaque())
                    }
                    (syn::Member::Named(m), V::Status(Some(src))) if m == "source" => V::Int(src),
                    // `range.start`, `range.end` of a `Range` the check holds.
                    (syn::Member::Named(m), V::Range(a, _)) if m == "start" => V::Int(a),
                    (syn::Member::Named(m), V::Range(_, b)) if m == "end" => V::Int(b),
                    // A field of a parsed command line (`args.tp`) is an input too.
                    (_, V::Uniform) => V::Uniform,
                    (_, V::Agreed) => V::Agreed,
                    (member, V::Struct(_, fields)) => {
                        let name = match member {
                            syn::Member::Named(i) => i.to_string(),
                            syn::Member::Unnamed(i) => i.index.to_string(),
                        };
                        match fields.into_iter().find(|(k, _)| *k == name) {
                            Some((_, v)) => v,
                            None => V::opaque(),
                        }
                    }
                    // (Each field its own data: `sys.n` and `sys.a` of one struct differ.)
                    (member, b) => {
                        let name = match member {
                            syn::Member::Named(i) => i.to_string(),
                            syn::Member::Unnamed(i) => i.index.to_string(),
                        };
                        V::derived(&[&b, &V::Name(name)])
                    }
                })
            }
            Expr::Index(ix) => {
                let base = self.expr(&ix.expr)?;
                // An open-ended slice of a list the check holds (`x[a..]`, `x[..]`) ends
                // at its length; any other range is evaluated as it is written.
                let i = match (&base, &*ix.index) {
                    (V::List(items), Expr::Range(rg)) if rg.end.is_none() => match &rg.start {
                        Some(e) => match self.expr(e)? {
                            V::Int(a) => V::Range(a, items.len() as i128),
                            _ => V::opaque(),
                        },
                        None => V::Range(0, items.len() as i128),
                    },
                    _ => self.expr(&ix.index)?,
                };
                // A slice by a range the check holds: `x[a..b]`, `full[owned]`.
                if let (V::List(items), V::Range(a, b)) = (&base, &i) {
                    return Ok(if 0 <= *a && a <= b && *b as usize <= items.len() {
                        V::list(items[*a as usize..*b as usize].to_vec())
                    } else {
                        V::opaque()
                    });
                }
                Ok(match (base, i) {
                    // `args[1]`, `argv[i + 1]` in an argument loop: an input. (The check
                    // cannot tell a loop counter from a rank: `hosts[rank]` of a file read
                    // on every rank is taken for an input too; see docs/static-checks.md.)
                    (V::Uniform, _) => V::Uniform,
                    (V::Agreed, ref i) if input_like(&ix.index, i) || matches!(i, V::Agreed) => V::Agreed,
                    // An item the same on every rank, picked by an index that may differ
                    // (`gathered[rank]`): known to this rank only.
                    (V::List(items), V::Int(i))
                        if i >= 0
                            && (i as usize) < items.len()
                            && matches!(items[i as usize], V::Agreed)
                            && !input_like(&ix.index, &V::Int(i)) =>
                    {
                        V::derived(&[&V::Int(i)])
                    }
                    (V::List(items), V::Int(i)) if i >= 0 && (i as usize) < items.len() => items[i as usize].clone(),
                    (V::List(items), V::Int(i)) => {
                        return Err(Flow::Stop(Stop::Invalid {
                            site: self.site(e),
                            msg: format!("index {i} is out of bounds for a list of {}", items.len()),
                        }))
                    }
                    (b, i) => V::derived(&[&b, &i]),
                })
            }
            Expr::If(i) => self.if_expr(i),
            Expr::Match(m) => self.match_expr(m),
            Expr::Let(l) => {
                let v = self.expr(&l.expr)?;
                let same = matches!(v, V::Uniform | V::Agreed);
                Ok(match self.bind(&l.pat, v) {
                    Some(b) => V::Bool(b),
                    // Whether an input matches: the same on every rank.
                    None if same => V::Agreed,
                    None => V::opaque(),
                })
            }
            Expr::ForLoop(f) => self.for_loop(f),
            Expr::While(w) => self.while_loop(w),
            Expr::Loop(l) => self.loop_expr(l),
            Expr::Break(b) => {
                let v = match &b.expr {
                    Some(x) => self.expr(x)?,
                    None => V::Unit,
                };
                Err(Flow::Break(b.label.as_ref().map(|l| l.ident.to_string()), v))
            }
            Expr::Continue(c) => Err(Flow::Continue(c.label.as_ref().map(|l| l.ident.to_string()))),
            Expr::Return(r) => {
                let v = match &r.expr {
                    Some(x) => self.expr(x)?,
                    None => V::Unit,
                };
                if v == V::Err {
                    Err(Flow::Fail)
                } else {
                    Err(Flow::Return(v))
                }
            }
            Expr::Try(t) => {
                let v = self.expr(&t.expr)?;
                // Results are transparent (`subgroup(..)?` is still an Option).
                match v {
                    V::Err => Err(Flow::Fail),
                    other => Ok(other),
                }
            }
            Expr::Assign(a) => {
                let v = self.expr(&a.right)?;
                if let Some(name) = pat_name_of_place(&a.left) {
                    let origin = self.numbering_of(&a.right).map_or(V::Unit, |c| V::Int(c as i128));
                    self.assign(&origin_key(&name), origin);
                }
                self.store(&a.left, v)?;
                Ok(V::Unit)
            }
            Expr::Closure(c) => Ok(V::Closure(Closure(c))),
            Expr::MethodCall(mc) => self.method(e, mc),
            Expr::Call(c) => self.call(e, c),
            Expr::Macro(m) => self.mac(&m.mac),
            Expr::Struct(s) => {
                let mut fields: Vec<(String, V<'a>)> = Vec::new();
                for f in &s.fields {
                    let name = match &f.member {
                        syn::Member::Named(i) => i.to_string(),
                        syn::Member::Unnamed(i) => i.index.to_string(),
                    };
                    fields.push((name, self.expr(&f.expr)?));
                }
                if let Some(rest) = &s.rest {
                    match self.expr(rest)? {
                        V::Struct(_, more) => {
                            for (k, v) in more {
                                if !fields.iter().any(|(f, _)| *f == k) {
                                    fields.push((k, v));
                                }
                            }
                        }
                        other => fields.push(("..".into(), V::taint(&[&other]))),
                    }
                }
                let mut ty = last_seg(&s.path);
                if ty == "Self" {
                    ty = self.self_ty.last().cloned().unwrap_or(ty);
                }
                if let Some(en) = self.enum_of(&ty) {
                    ty = format!("{en}::{ty}");
                }
                Ok(V::Struct(ty, fields))
            }
            Expr::Async(_) | Expr::Await(_) | Expr::TryBlock(_) | Expr::Yield(_) => {
                if mentions_comm(self, &e.to_token_stream()) {
                    Err(undecidable(e, "async code or a try block that uses a communicator"))
                } else {
                    Ok(V::opaque())
                }
            }
            _ => Ok(V::opaque()),
        }
    }

    pub(super) fn path(&self, p: &'a syn::Path) -> V<'a> {
        if p.segments.len() == 1 {
            if let Some(v) = self.lookup_ident(&p.segments[0].ident) {
                return v.clone();
            }
            let name = p.segments[0].ident.to_string();
            if name == "None" {
                return V::Opt(None);
            }
            if self.fns.contains_key(&name) {
                return V::Name(name);
            }
        }
        // A unit variant of the package's enum: `Phase::Warmup`, or `Warmup` after a `use`.
        let last = last_seg(p);
        if let Some(en) = self.enum_of(&last) {
            let n = p.segments.len();
            if n == 1 || p.segments[n - 2].ident == en {
                return V::Struct(format!("{en}::{last}"), Vec::new());
            }
        }
        let s = path_str(p);
        // `usize::BITS`, `u32::MAX`, `i64::MIN`: the integer types' constants (`usize`
        // and `isize` as 64 bits).
        if let (2, Some((ty, c))) = (p.segments.len(), s.split_once("::")) {
            let bits: Option<u32> = match ty {
                "u8" | "i8" => Some(8),
                "u16" | "i16" => Some(16),
                "u32" | "i32" => Some(32),
                "u64" | "i64" | "usize" | "isize" => Some(64),
                "u128" | "i128" => Some(128),
                _ => None,
            };
            if let Some(b) = bits {
                let signed = ty.starts_with('i');
                let v = match c {
                    "BITS" => Some(b as i128),
                    "MAX" if b == 128 => signed.then_some(i128::MAX),
                    "MAX" if signed => Some((1i128 << (b - 1)) - 1),
                    "MAX" => Some((1i128 << b) - 1),
                    "MIN" if signed && b == 128 => Some(i128::MIN),
                    "MIN" if signed => Some(-(1i128 << (b - 1))),
                    "MIN" => Some(0),
                    _ => None,
                };
                if let Some(v) = v {
                    return V::Int(v);
                }
            }
        }
        match s.as_str() {
            _ if s.ends_with("ReduceOp::Sum")
                || s.ends_with("ReduceOp::Prod")
                || s.ends_with("ReduceOp::Max")
                || s.ends_with("ReduceOp::Min")
                || s.ends_with("ReduceOp::Avg")
                || s.ends_with("ReduceOp::BAnd")
                || s.ends_with("ReduceOp::BOr")
                || s.ends_with("ReduceOp::BXor") =>
            {
                V::Name(last_seg(p))
            }
            _ => V::Name(s),
        }
    }

    /// A `&mut place` kept beyond a call's arguments (`let r = &mut self.buf;`, `for v in
    /// [&mut self.a, &mut self.b] { *v = .. }`): what is written through it is not
    /// followed, so the place is forgotten (length included).
    fn aliased(&mut self, e: &'a Expr) {
        if let Expr::Reference(r) = e {
            if r.mutability.is_some() {
                self.clobber_place(&r.expr, false);
            }
        }
    }

    /// The enum of the package that has a variant named `variant`.
    pub(super) fn enum_of(&self, variant: &str) -> Option<String> {
        let f = self.file_fns.get(&format!("{variant}::__enum"))?;
        match &f.sig.output {
            syn::ReturnType::Type(_, t) => match &**t {
                syn::Type::Path(tp) => Some(last_seg(&tp.path)),
                _ => None,
            },
            syn::ReturnType::Default => None,
        }
    }

    /// Whether a pattern naming `pat` (`Action::RecvAct(..)`, `Config { .. }`) cannot
    /// match a value of type `ty`: another variant of the same enum.
    fn other_variant(&self, pat: &syn::Path, ty: &str) -> bool {
        let p = last_seg(pat);
        let v = ty.rsplit("::").next().unwrap_or(ty);
        p != "Self" && p != v && (ty.contains("::") || self.enum_of(&p).is_some())
    }

    /// `x = v`, `x += v`: only plain names are tracked.
    /// The value a place expression (`x`, `x.f`, `(x)`) holds now, without evaluating
    /// anything that could have effects.
    pub(super) fn place_value(&self, place: &Expr) -> Option<V<'a>> {
        match place {
            Expr::Path(p) => self.lookup(&p.path.get_ident()?.to_string()).cloned(),
            Expr::Paren(p) => self.place_value(&p.expr),
            Expr::Unary(u) if matches!(u.op, UnOp::Deref(_)) => self.place_value(&u.expr),
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

    pub(super) fn store(&mut self, place: &'a Expr, v: V<'a>) -> Result<(), Flow<'a>> {
        match place {
            Expr::Path(p) if p.path.segments.len() == 1 => {
                self.assign(&p.path.segments[0].ident.to_string(), v);
                Ok(())
            }
            Expr::Unary(u) if matches!(u.op, UnOp::Deref(_)) => self.store(&u.expr, v),
            Expr::Paren(p) => self.store(&p.expr, v),
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
                        if let (Some(V::List(mut items)), V::Int(i)) = (self.place_value(&ix.expr), i) {
                            let at = usize::try_from(i).ok().filter(|&i| i < items.len());
                            if let Some(slot) = at.map(|i| &mut std::rc::Rc::make_mut(&mut items)[i]) {
                                *slot = v;
                                return self.store(&ix.expr, V::List(items));
                            }
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
    pub(super) fn clobber_place(&mut self, e: &'a Expr, keep_shape: bool) {
        self.clobber_place_with(e, keep_shape, 0)
    }

    /// [`Self::clobber_place`], with what was written known by `salt` ([`forget_with`]).
    pub(super) fn clobber_place_with(&mut self, e: &'a Expr, keep_shape: bool, salt: u64) {
        let mut p = e;
        loop {
            p = match p {
                Expr::Reference(r) => &r.expr,
                Expr::Paren(x) => &x.expr,
                Expr::Group(x) => &x.expr,
                Expr::Unary(u) if matches!(u.op, UnOp::Deref(_)) => &u.expr,
                Expr::Index(i) => &i.expr,
                Expr::MethodCall(m) if lends_mut(&m.method) => &m.receiver,
                _ => break,
            };
        }
        if let Expr::Field(_) = p {
            if let Some(v) = self.place_value(p) {
                if self.store(p, forget_with(v, keep_shape, salt)).is_ok() {
                    return;
                }
            }
        }
        if let Some(name) = place_root(e) {
            self.clobber_with(&name, keep_shape, salt);
        }
    }

    /// Forgets what the place `path` holds (`x`, or `self.next`: only that field of a
    /// struct the check follows), computed as `salt` says.
    pub(super) fn clobber_path(&mut self, path: &str, salt: u64) {
        // `x[]`: written through an index, so its length stays.
        let (path, indexed) = match path.strip_suffix("[]") {
            Some(p) => (p, true),
            None => (path, false),
        };
        let mut parts = path.split('.');
        let root = parts.next().unwrap_or_default();
        let fields: Vec<&str> = parts.collect();
        fn go<'a>(v: V<'a>, fields: &[&str], salt: u64, indexed: bool) -> V<'a> {
            match (v, fields.split_first()) {
                (V::Struct(t, fs), Some((f, rest))) if fs.iter().any(|(k, _)| k == f) => V::Struct(
                    t.clone(),
                    fs.into_iter()
                        .map(|(k, v)| {
                            if k != *f {
                                (k, v)
                            } else if rest.is_empty() {
                                let v = forget_field(&t, &k, v, false, salt, indexed);
                                (k, v)
                            } else {
                                let v = go(v, rest, salt, indexed);
                                (k, v)
                            }
                        })
                        .collect(),
                ),
                (v @ V::List(_), None) => forget_with(v, indexed, salt),
                (v, _) => forget_with(v, false, salt),
            }
        }
        if let Some(v) = self.lookup(root).cloned() {
            self.assign(root, go(v, &fields, salt, indexed));
        }
    }

    fn clobber_with(&mut self, name: &str, keep_shape: bool, salt: u64) {
        if let Some(v) = self.lookup(name).cloned() {
            self.assign(name, forget_with(v, keep_shape, salt));
        }
    }

    /// Forgets the variables that the arguments `args` lend mutably (`&mut x`,
    /// `Some(&mut x)`, `x.as_mut_slice()`): the callee may have written into them.
    pub(super) fn clobber_loans(
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

    pub(super) fn store_path(&mut self, p: &syn::ExprPath, v: V<'a>) {
        if p.path.segments.len() == 1 {
            self.assign(&p.path.segments[0].ident.to_string(), v);
        }
    }

    pub(super) fn binary(&mut self, b: &'a syn::ExprBinary) -> R<'a> {
        use BinOp::*;
        // Short-circuit with opaque operands: false && ? = false; true || ? = true.
        if matches!(b.op, And(_) | Or(_)) {
            let l = self.expr(&b.left)?;
            match (&b.op, &l) {
                (And(_), V::Bool(false)) => return Ok(V::Bool(false)),
                (Or(_), V::Bool(true)) => return Ok(V::Bool(true)),
                _ => {}
            }
            let r = self.expr(&b.right)?;
            let same = |v: &V| matches!(v, V::Agreed | V::Uniform);
            return Ok(match (&b.op, l, r) {
                (_, V::Bool(_), V::Bool(y)) => V::Bool(y),
                (And(_), _, V::Bool(false)) => V::Bool(false),
                (Or(_), _, V::Bool(true)) => V::Bool(true),
                // The same on every rank, with what this rank knows: still the same.
                (_, V::Bool(_), y) if same(&y) => V::Agreed,
                (_, x, V::Bool(_)) if same(&x) => V::Agreed,
                (_, x, y) if same(&x) && same(&y) => V::Agreed,
                (_, x, y) => V::derived(&[&x, &y]),
            });
        }
        let compound = match b.op {
            AddAssign(_) => Some(Add(Default::default())),
            SubAssign(_) => Some(Sub(Default::default())),
            MulAssign(_) => Some(Mul(Default::default())),
            DivAssign(_) => Some(Div(Default::default())),
            RemAssign(_) => Some(Rem(Default::default())),
            BitXorAssign(_) => Some(BitXor(Default::default())),
            BitAndAssign(_) => Some(BitAnd(Default::default())),
            BitOrAssign(_) => Some(BitOr(Default::default())),
            ShlAssign(_) => Some(Shl(Default::default())),
            ShrAssign(_) => Some(Shr(Default::default())),
            _ => None,
        };
        let l = self.expr(&b.left)?;
        let r = self.expr(&b.right)?;
        let op = compound.unwrap_or(b.op);
        // Data the same on every rank with a literal or a constant (`active[0] == 0`,
        // `loss / 2`): still the same on every rank.
        let fixed = |x: &Expr, v: &V| matches!(v, V::Int(_) | V::Bool(_)) && input_like(x, v);
        if (matches!(l, V::Agreed) && fixed(&b.right, &r)) || (matches!(r, V::Agreed) && fixed(&b.left, &l)) {
            if compound.is_some() {
                self.store(&b.left, V::Agreed)?;
                return Ok(V::Unit);
            }
            return Ok(V::Agreed);
        }
        let v = match arith(&op, &l, &r) {
            Ok(v) => v,
            // The program panics here with these values (an input too small for the
            // grid it divides, a size it does not support): that run fails, like an
            // `assert!`; a verdict is never made of it.
            Err(msg) if msg.starts_with("division") => return Err(Flow::Fail),
            // Past i128 (a hash, a random number generator): what the program computes
            // in its fixed-width integers is data to the check.
            Err(_) => V::derived(&[&l, &r]),
        };
        if compound.is_some() {
            self.store(&b.left, v)?;
            return Ok(V::Unit);
        }
        Ok(v)
    }

    /// A match guard's value: one the same on every rank but unknown to the check is
    /// decided by this run's pattern ([`super::AGREED_MODES`]), the same way on every rank.
    pub(super) fn decided(&mut self, cond: &'a Expr) -> R<'a> {
        Ok(match self.expr(cond)? {
            V::Agreed | V::Uniform => V::Bool(self.agreed_next(cond as *const Expr as usize, true).1),
            v => v,
        })
    }

    /// The ordinal of this decision at `site` in the rank's run, and the pattern's
    /// answer for it (noted as decided when `note`).
    fn agreed_next(&mut self, site: usize, note: bool) -> (u32, bool) {
        let seen = self.agreed_seen.entry(site).or_insert(0);
        let j = *seen;
        *seen += 1;
        (j, if note { super::agreed_decision(j) } else { false })
    }

    /// Code under a condition that is the same on every rank but unknown (a residual
    /// reduced over every rank against a tolerance, a flag or mode from the command
    /// line). Where none of `branches` communicates, or leaves early, it is speculated
    /// like a condition on data (`Ok(None)`: what the branches set is forgotten, so an
    /// argument parser's fields stay unknown; so is any such condition in code that
    /// cannot communicate). Where one does, every rank takes the same
    /// branch, and this run's pattern decides which: `Ok(Some(j))`, the decision's
    /// ordinal at `site` ([`Self::agreed_next`]); the caller runs that branch for real.
    pub(super) fn agreed_branch(
        &mut self,
        site: usize,
        branches: &[Branch<'a>],
        at: &impl ToTokens,
    ) -> Result<Option<u32>, Flow<'a>> {
        if !self.agreed_communicates.contains(&site) {
            let (ne, nc, id) = (self.events.len(), self.comms.len(), self.next_id);
            self.spec_agreed = true;
            match self.speculate(branches, at) {
                Ok(()) => return Ok(None),
                // (In code that cannot communicate and reads the program's inputs itself,
                // an argument parser's loop, the region is summarised instead: what it
                // computes stays an input as a whole, not one decided path of it.)
                Err(Flow::Stop(Stop::Undecidable { .. }))
                    if self.speculative == 0 && (self.quotas.is_empty() || !touched_input()) =>
                {
                    self.rewind_to_decide(site, (ne, nc, id));
                }
                Err(f) => return Err(f),
            }
        }
        Ok(Some(self.agreed_next(site, false).0))
    }

    /// After speculating the branches at `site` showed they communicate or leave early:
    /// what the speculation recorded (events, communicators, ids since `mark`) is
    /// dropped, and the condition is decided from now on, never speculated again.
    fn rewind_to_decide(&mut self, site: usize, mark: (usize, usize, usize)) {
        self.events.truncate(mark.0);
        self.comms.truncate(mark.1);
        self.next_id = mark.2;
        self.agreed_communicates.insert(site);
    }

    /// Code under a condition on data that may differ from rank to rank (a local loss,
    /// a received count, `rank == owner` with the owner data): speculated where none of
    /// `branches` communicates or leaves early (`Ok(None)`). Where one does, the ranks
    /// decide it ([`super::local_decision`]): rank by rank, by the data's hash (`fp`), so
    /// that ranks whose data was computed from different values take different branches
    /// where the run's pattern makes them; `Ok(Some(arm))` is this rank's branch. When
    /// no two ranks' data tell apart, the pass ends as this construct not followed
    /// ([`super::local_verdict`]), as before. `trip`: the test's place in a `while` loop
    /// (which entry into the loop, which test in it), decided so that the loop runs a
    /// bounded number of times ([`super::loop_decision`]).
    pub(super) fn local_branch(
        &mut self,
        fp: u64,
        cond: &'a Expr,
        site: usize,
        branches: &[Branch<'a>],
        at: &impl ToTokens,
        trip: Option<(u32, u32)>,
    ) -> Result<Option<usize>, Flow<'a>> {
        if !self.agreed_communicates.contains(&site) {
            let (ne, nc, id) = (self.events.len(), self.comms.len(), self.next_id);
            self.cond_fp = fp;
            match self.speculate(branches, at) {
                Ok(()) => return Ok(None),
                Err(Flow::Stop(Stop::Undecidable { at: a, what, located }))
                    if fp != 0 && self.speculative == 0 && (self.quotas.is_empty() || !touched_input()) =>
                {
                    if !super::local_enabled() {
                        super::local_stop(site, fp);
                        return Err(Flow::Stop(Stop::Undecidable { at: a, what, located }));
                    }
                    self.rewind_to_decide(site, (ne, nc, id));
                    self.local_seen.insert(site, (0, what));
                }
                Err(f) => return Err(f),
            }
        }
        // (A condition decided before on data the same on every rank, now on data that
        // may differ: `shift <= tol` with `shift` reduced at first, then computed from
        // what the ranks computed.)
        if !self.local_seen.contains_key(&site) && fp != 0 && self.speculative == 0 {
            let what = "a condition on data whose code communicates or leaves early".to_string();
            if !super::local_enabled() {
                super::local_stop(site, fp);
                return Err(undecidable(at, what));
            }
            self.local_seen.insert(site, (0, what));
        }
        let Some((j, what)) = self.local_seen.get_mut(&site).map(|e| {
            e.0 += 1;
            (e.0 - 1, e.1.clone())
        }) else {
            return Err(undecidable(at, "a condition on data under a condition the same on every rank"));
        };
        let (at, what) = match self.locate_stop::<()>(Err(undecidable(at, what))) {
            Err(Flow::Stop(Stop::Undecidable { at, what, .. })) => (at, what),
            _ => unreachable!("locate_stop keeps the error"),
        };
        let text = format!("`{}` at {}", super::trace::expr_text(cond), self.chain_text(trace::line_of(cond)));
        let arms = branches.len().max(2);
        let (j, first) = match trip {
            Some((entry, k)) => ((entry << 16) | k.min(0xffff), Some(super::loop_decision(entry, k))),
            None => (j, None),
        };
        let pick = super::local_decision(site, j, fp, self.rank, arms, at, what, text, first);
        Ok(Some(pick))
    }

    pub(super) fn labeled_block(&mut self, label: Option<&syn::Label>, b: &'a Block) -> R<'a> {
        match self.block(b) {
            Err(Flow::Break(Some(l), v)) if label.is_some_and(|x| x.name.ident == l) => Ok(v),
            r => r,
        }
    }

    pub(super) fn if_expr(&mut self, i: &'a syn::ExprIf) -> R<'a> {
        self.scoped(|me| {
            let c = me.expr(&i.cond)?;
            match c {
                V::Bool(true) => me.block(&i.then_branch),
                V::Bool(false) => match &i.else_branch {
                    Some((_, e)) => me.expr(e),
                    None => Ok(V::Unit),
                },
                c => {
                    let mut branches = vec![Branch::Block(&i.then_branch)];
                    if let Some((_, e)) = &i.else_branch {
                        branches.push(Branch::Expr(e));
                    }
                    if matches!(c, V::Agreed | V::Uniform) {
                        if let Some(j) = me.agreed_branch(&*i.cond as *const Expr as usize, &branches, i)? {
                            return match (super::agreed_decision(j), &i.else_branch) {
                                (true, _) => me.block(&i.then_branch),
                                (false, Some((_, e))) => me.expr(e),
                                (false, None) => Ok(V::Unit),
                            };
                        }
                        // Every rank took the same branch: its value is the same on
                        // every rank where each branch's is.
                        let vals = std::mem::take(&mut me.spec_values);
                        if i.else_branch.is_some() && vals.len() == 2 && vals.iter().all(same_everywhere) {
                            return Ok(if vals[0] == vals[1] { vals[0].clone() } else { agree(vals[0].clone()) });
                        }
                        if i.else_branch.is_some() && vals.len() == 2 {
                            return Ok(V::derived(&[&c, &vals[0], &vals[1]]));
                        }
                        return Ok(V::opaque());
                    }
                    if let V::Opaque { comm: false, fp } = c {
                        let site = &*i.cond as *const Expr as usize;
                        return match me.local_branch(fp, &i.cond, site, &branches, i, None)? {
                            Some(0) => me.block(&i.then_branch),
                            Some(_) => match &i.else_branch {
                                Some((_, e)) => me.expr(e),
                                None => Ok(V::Unit),
                            },
                            // Both branches computed from exact data under an exact
                            // condition: the value is exact too.
                            None => {
                                let vals = std::mem::take(&mut me.spec_values);
                                let mut all: Vec<&V<'a>> = vec![&c];
                                all.extend(vals.iter());
                                Ok(
                                    if super::value::is_exact(fp)
                                        && vals.len() == branches.len()
                                        && i.else_branch.is_some()
                                    {
                                        V::derived(&all)
                                    } else {
                                        V::taint(&[&c])
                                    },
                                )
                            }
                        };
                    }
                    me.speculate(&branches, i)?;
                    Ok(V::taint(&[&c]))
                }
            }
        })
    }

    /// `v.last_mut()`, `v.first_mut()`, `v.get_mut(i)` on a list the check holds, as
    /// the scrutinee of a `match` or `if let`: the item (`Some`) or `None`, and where it
    /// sits (the list's place and the index), so that what the arm does through the
    /// binding is written back into the list ([`Self::write_back`]).
    fn mut_accessor(&mut self, e: &'a Expr) -> Result<Option<Accessor<'a>>, Flow<'a>> {
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
                V::Int(i) if i >= 0 && (i as usize) < items.len() => Some(i as usize),
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
    fn write_back(&mut self, pat: &Pat, place: &'a Expr, idx: usize) -> Result<(), Flow<'a>> {
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

    pub(super) fn match_expr(&mut self, m: &'a syn::ExprMatch) -> R<'a> {
        let accessor = self.mut_accessor(&m.expr)?;
        let v = match &accessor {
            Some((_, _, v)) => v.clone(),
            None => self.expr(&m.expr)?,
        };
        let mut unknown: Vec<Branch<'a>> = Vec::new();
        let mut unknown_arms: Vec<&'a syn::Arm> = Vec::new();
        for arm in &m.arms {
            let r = self.scoped(|me| -> Result<Option<R<'a>>, Flow<'a>> {
                let hit = me.bind(&arm.pat, v.clone());
                let hit = match (hit, &arm.guard) {
                    (Some(true), Some((_, g))) => match me.decided(g)? {
                        V::Bool(b) => Some(b),
                        _ => None,
                    },
                    (h, _) => h,
                };
                match hit {
                    Some(true) if unknown.is_empty() => {
                        let r = me.expr(&arm.body);
                        if let (Ok(_), Some((place, Some(idx), _))) = (&r, &accessor) {
                            me.write_back(&arm.pat, place, *idx)?;
                        }
                        Ok(Some(r))
                    }
                    Some(false) => Ok(None),
                    _ => {
                        unknown.push(Branch::Expr(&arm.body));
                        unknown_arms.push(arm);
                        Ok(None)
                    }
                }
            })?;
            if let Some(r) = r {
                return r;
            }
        }
        if unknown.is_empty() {
            return Ok(V::Unit);
        }
        // An arm the check cannot pick may write through the accessor's binding.
        if let Some((place, _, _)) = &accessor {
            self.clobber_place(place, true);
        }
        // A value the same on every rank (a mode from the command line): every rank takes
        // the same arm, picked by this run's pattern.
        if matches!(v, V::Agreed | V::Uniform) && unknown_arms.len() > 1 {
            let site = m as *const syn::ExprMatch as usize;
            let Some(j) = self.scoped(|me| {
                for arm in &unknown_arms {
                    me.bind_opaque(&arm.pat, &v);
                }
                me.agreed_branch(site, &unknown, m)
            })?
            else {
                return Ok(V::opaque());
            };
            let pick = (super::agreed_mode() as usize + j as usize + usize::from(super::agreed_decision(j)))
                % unknown_arms.len();
            let arm = unknown_arms[pick];
            return self.scoped(|me| {
                me.bind_opaque(&arm.pat, &v);
                me.expr(&arm.body)
            });
        }
        // Data that may differ from rank to rank: each rank takes an arm by its data.
        if let (V::Opaque { comm: false, fp }, true) = (&v, unknown_arms.len() > 1) {
            let (fp, site) = (*fp, m as *const syn::ExprMatch as usize);
            let o = V::taint(&[&v]);
            let pick = self.scoped(|me| {
                for arm in &unknown_arms {
                    me.bind_opaque(&arm.pat, &o);
                }
                me.local_branch(fp, &m.expr, site, &unknown, m, None)
            })?;
            if let Some(pick) = pick {
                let arm = unknown_arms[pick % unknown_arms.len()];
                return self.scoped(|me| {
                    me.bind_opaque(&arm.pat, &o);
                    me.expr(&arm.body)
                });
            }
            return Ok(o);
        }
        // Arms whose patterns the check cannot decide: they must not communicate.
        self.scoped(|me| {
            let o = V::taint(&[&v]);
            for arm in &m.arms {
                me.bind_opaque(&arm.pat, &o);
            }
            me.speculate(&unknown, m)
        })?;
        Ok(V::taint(&[&v]))
    }

    /// Iterates a loop body over `items`, handling break/continue with labels.
    /// Runs `body` once per item bound to `pat`; with `keep`, pushes what each pass left
    /// in the binding named `keep.0` (see [`Self::for_loop`]).
    pub(super) fn iterate(
        &mut self,
        label: Option<&syn::Label>,
        pat: Option<&'a Pat>,
        items: impl Iterator<Item = V<'a>>,
        body: &'a Block,
        mut keep: Option<(&str, &mut Vec<Option<V<'a>>>)>,
    ) -> R<'a> {
        let mine =
            |l: &Option<String>| l.is_none() || label.is_some_and(|x| l.as_deref() == Some(&*x.name.ident.to_string()));
        for x in items {
            let r = self.scoped(|me| {
                if let Some(p) = pat {
                    me.bind(p, x);
                }
                let r = me.block(body);
                if let Some((name, out)) = keep.as_mut() {
                    out.push(me.lookup(name).cloned());
                }
                r
            });
            match r {
                Ok(_) => {}
                Err(Flow::Break(l, v)) if mine(&l) => return Ok(v),
                Err(Flow::Continue(l)) if mine(&l) => {}
                Err(f) => return Err(f),
            }
        }
        Ok(V::Unit)
    }

    pub(super) fn for_loop(&mut self, f: &'a syn::ExprForLoop) -> R<'a> {
        // `for w in self.w.iter_mut()`, `for (w, g) in w.iter_mut().zip(&g)`, `for (i, x)
        // in xs[a..b].iter_mut().enumerate()`: what the body leaves in the binding is
        // the list's item afterwards (`*w -= lr * g`), so the list keeps what it holds
        // instead of becoming data.
        let lent = self.lent_items(f)?;
        let it = self.expr(&f.expr)?;
        let Some((place, offset, before, path)) = lent else {
            return self.summarised_loop(&f.body, |me| me.for_loop_items(f, it));
        };
        let name = match pat_at(&f.pat, &path) {
            Some(Pat::Ident(p)) if p.subpat.is_none() => p.ident.to_string(),
            _ => return self.summarised_loop(&f.body, |me| me.for_loop_items(f, it)),
        };
        let Some(items) = iter_items(&it) else {
            return self.summarised_loop(&f.body, |me| me.for_loop_items(f, it));
        };
        let mut after: Vec<Option<V<'a>>> = Vec::new();
        let r = self.summarised_loop(&f.body, |me| {
            me.iterate(f.label.as_ref(), Some(&f.pat), items.iter().cloned(), &f.body, Some((&name, &mut after)))
        });
        // Written back only where every pass left its item (a summarised loop did not).
        if r.is_ok() && after.len() <= items.len() && after.iter().all(Option::is_some) {
            let mut list = (*before).clone();
            if offset + after.len() <= list.len() {
                for (i, v) in after.into_iter().enumerate() {
                    list[offset + i] = v.expect("checked");
                }
                if self.store(place, V::list(list)).is_err() {
                    self.clobber_place(place, true);
                }
            }
        }
        r
    }

    /// For a `for` loop over items lent mutably from a list the check holds
    /// (`x.iter_mut()`, `&mut x`, `x[a..b].iter_mut()`, through `zip` and `enumerate`):
    /// the list's place, the first item's index in it, the list before the loop, and
    /// where the item sits in the loop's pattern (tuple positions).
    #[allow(clippy::type_complexity)]
    fn lent_items(
        &mut self,
        f: &'a syn::ExprForLoop,
    ) -> Result<Option<(&'a Expr, usize, std::rc::Rc<Vec<V<'a>>>, Vec<usize>)>, Flow<'a>> {
        fn source(e: &Expr) -> Option<(&Expr, Vec<usize>)> {
            match e {
                Expr::Paren(p) => source(&p.expr),
                Expr::Reference(r) if r.mutability.is_some() => Some((&r.expr, vec![])),
                Expr::MethodCall(m) if m.method == "iter_mut" && m.args.is_empty() => Some((&m.receiver, vec![])),
                Expr::MethodCall(m) if m.method == "enumerate" => {
                    source(&m.receiver).map(|(p, path)| (p, [vec![1], path].concat()))
                }
                Expr::MethodCall(m) if m.method == "zip" && m.args.len() == 1 => match source(&m.receiver) {
                    Some((p, path)) => Some((p, [vec![0], path].concat())),
                    None => source(&m.args[0]).map(|(p, path)| (p, [vec![1], path].concat())),
                },
                _ => None,
            }
        }
        let Some((src, path)) = source(&f.expr) else { return Ok(None) };
        let (place, offset) = match src {
            Expr::Index(ix) => match &*ix.index {
                Expr::Range(r) if plain_index(&ix.expr) || matches!(&*ix.expr, Expr::Field(_)) => {
                    let start = match &r.start {
                        Some(s) if plain_index(s) => match self.expr(s)? {
                            V::Int(i) if i >= 0 => i as usize,
                            _ => return Ok(None),
                        },
                        Some(_) => return Ok(None),
                        None => 0,
                    };
                    (&*ix.expr, start)
                }
                _ => return Ok(None),
            },
            p => (p, 0),
        };
        match self.place_value(place) {
            Some(V::List(items)) => Ok(Some((place, offset, items, path))),
            _ => Ok(None),
        }
    }

    fn for_loop_items(&mut self, f: &'a syn::ExprForLoop, it: V<'a>) -> R<'a> {
        match iter_items(&it) {
            Some(items) => self.iterate(f.label.as_ref(), Some(&f.pat), items.iter().cloned(), &f.body, None),
            None if self.unknown_count(&f.expr)?.is_some() => self.counted_loop(f),
            None => {
                let o = V::taint(&[&it]);
                self.scoped(|me| {
                    me.bind_opaque(&f.pat, &o);
                    me.speculate(&[Branch::Block(&f.body)], f)
                })?;
                Ok(V::Unit)
            }
        }
    }

    /// For `a..n` (or `a..=n`, or either `.rev()`) with `a` known and `n` unknown but
    /// followed, the same on every rank ([`V::Agreed`]) or data computed exactly
    /// ([`V::derived`]: `sys.n` of a struct a helper built from the inputs): `(a, n,
    /// reversed)`.
    fn unknown_count(&mut self, e: &'a Expr) -> Result<Option<(i128, V<'a>, bool)>, Flow<'a>> {
        let strip = |mut e: &'a Expr| {
            while let Expr::Paren(p) = e {
                e = &p.expr;
            }
            e
        };
        let (e, rev) = match strip(e) {
            Expr::MethodCall(m) if m.method == "rev" && m.args.is_empty() => (strip(&m.receiver), true),
            e => (e, false),
        };
        // (Open or closed: the count is unknown either way.)
        let Expr::Range(r) = e else { return Ok(None) };
        let Some(end) = &r.end else { return Ok(None) };
        let start = match &r.start {
            Some(s) => self.expr(s)?,
            None => V::Int(0),
        };
        let V::Int(a) = start else { return Ok(None) };
        Ok(match self.expr(end)? {
            V::Agreed => Some((a, V::Agreed, rev)),
            v @ V::Opaque { comm: false, fp } if super::value::is_exact(fp) => Some((a, v, rev)),
            _ => None,
        })
    }

    /// A `for` loop over a range whose end is unknown but followed ([`Self::unknown_count`]):
    /// how many passes it makes is decided as a `while` loop's condition on such data is,
    /// pass by pass (by this run's pattern; ranks whose end is the same data make as many),
    /// and the items count from the start (down to it, reversed).
    fn counted_loop(&mut self, f: &'a syn::ExprForLoop) -> R<'a> {
        let Some((a, end, rev)) = self.unknown_count(&f.expr)? else { return Ok(V::Unit) };
        let site = &*f.expr as *const Expr as usize;
        let entry = {
            let e = self.loop_entries.entry(site).or_insert(0);
            *e += 1;
            *e - 1
        };
        let branch = [Branch::Block(&f.body)];
        let mut passes = 0i128;
        loop {
            if passes as u64 >= LOOP_BOUND {
                return Err(undecidable(&f.expr, format!("a `for` loop of more than {LOOP_BOUND} iterations")));
            }
            let k = passes as u32;
            let go = match end {
                V::Agreed => self.agreed_branch(site, &branch, f)?.is_some() && super::loop_decision(entry, k),
                V::Opaque { fp, .. } => self.local_branch(fp, &f.expr, site, &branch, f, Some((entry, k)))? == Some(0),
                _ => false,
            };
            if !go {
                break;
            }
            passes += 1;
        }
        let items = (0..passes).map(move |i| V::Int(if rev { a + passes - 1 - i } else { a + i }));
        self.iterate(f.label.as_ref(), Some(&f.pat), items, &f.body, None)
    }

    pub(super) fn while_loop(&mut self, w: &'a syn::ExprWhile) -> R<'a> {
        self.summarised_loop(w, |me| me.while_loop_run(w))
    }

    fn while_loop_run(&mut self, w: &'a syn::ExprWhile) -> R<'a> {
        let mine = |l: &Option<String>| {
            l.is_none() || w.label.as_ref().is_some_and(|x| l.as_deref() == Some(&*x.name.ident.to_string()))
        };
        // Which entry into this loop this is: a condition the check decides by pattern
        // runs the loop a bounded number of times per entry ([`super::loop_decision`]).
        let entry = {
            let e = self.loop_entries.entry(&*w.cond as *const Expr as usize).or_insert(0);
            *e += 1;
            *e - 1
        };
        let mut n = 0u64;
        loop {
            let k = n as u32;
            n += 1;
            if n > LOOP_BOUND {
                return Err(undecidable(&w.cond, format!("a `while` loop of more than {LOOP_BOUND} iterations")));
            }
            let r = self.scoped(|me| -> R<'a> {
                match me.expr(&w.cond)? {
                    V::Bool(true) => me.block(&w.body).map(|_| V::Bool(true)),
                    V::Bool(false) => Ok(V::Bool(false)),
                    V::Agreed | V::Uniform => {
                        let site = &*w.cond as *const Expr as usize;
                        match me.agreed_branch(site, &[Branch::Block(&w.body)], w)? {
                            Some(_) if super::loop_decision(entry, k) => me.block(&w.body).map(|_| V::Bool(true)),
                            _ => Ok(V::Bool(false)),
                        }
                    }
                    V::Opaque { comm: false, fp } => {
                        let site = &*w.cond as *const Expr as usize;
                        match me.local_branch(fp, &w.cond, site, &[Branch::Block(&w.body)], w, Some((entry, k)))? {
                            Some(0) => me.block(&w.body).map(|_| V::Bool(true)),
                            _ => Ok(V::Bool(false)),
                        }
                    }
                    _ => {
                        me.speculate(&[Branch::Block(&w.body)], w)?;
                        Ok(V::Bool(false))
                    }
                }
            });
            match r {
                Ok(V::Bool(false)) => return Ok(V::Unit),
                Ok(_) => {}
                Err(Flow::Break(l, _)) if mine(&l) => return Ok(V::Unit),
                Err(Flow::Continue(l)) if mine(&l) => {}
                Err(f) => return Err(f),
            }
        }
    }

    pub(super) fn loop_expr(&mut self, l: &'a syn::ExprLoop) -> R<'a> {
        self.summarised_loop(&l.body, |me| me.loop_run(l))
    }

    fn loop_run(&mut self, l: &'a syn::ExprLoop) -> R<'a> {
        let mine = |x: &Option<String>| {
            x.is_none() || l.label.as_ref().is_some_and(|y| x.as_deref() == Some(&*y.name.ident.to_string()))
        };
        for _ in 0..LOOP_BOUND {
            match self.block(&l.body) {
                Ok(_) => {}
                Err(Flow::Break(x, v)) if mine(&x) => return Ok(v),
                Err(Flow::Continue(x)) if mine(&x) => {}
                Err(f) => return Err(f),
            }
        }
        Err(undecidable(&l.body, format!("a `loop` of more than {LOOP_BOUND} iterations")))
    }

    // ------------------------------------------------------------ calls

    pub(super) fn args(
        &mut self,
        args: &'a syn::punctuated::Punctuated<Expr, syn::Token![,]>,
    ) -> Result<Vec<V<'a>>, Flow<'a>> {
        let mut out = Vec::new();
        for a in args {
            out.push(self.expr(a)?);
        }
        Ok(out)
    }

    /// Calls a closure or nested fn with `args` bound to its parameters.
    pub(super) fn apply_closure(&mut self, c: Closure<'a>, args: Vec<V<'a>>) -> R<'a> {
        let c = c.0;
        self.scoped(|me| {
            for (p, v) in c.inputs.iter().zip(args) {
                me.bind(p, v);
            }
            match me.expr(&c.body) {
                Err(Flow::Return(v)) => Ok(v),
                r => r,
            }
        })
    }

    /// [`Self::apply_closure`], also handing back what the body left in its first
    /// parameter (`scan`'s `|acc, x| { *acc += x; Some(*acc) }`), if it binds one name.
    pub(super) fn apply_closure_state(
        &mut self,
        c: Closure<'a>,
        args: Vec<V<'a>>,
    ) -> Result<(V<'a>, Option<V<'a>>), Flow<'a>> {
        let c = c.0;
        self.scoped(|me| {
            for (p, v) in c.inputs.iter().zip(args) {
                me.bind(p, v);
            }
            let r = match me.expr(&c.body) {
                Err(Flow::Return(v)) => Ok(v),
                r => r,
            }?;
            let mut names = Vec::new();
            if let Some(p) = c.inputs.first() {
                pat_names(p, &mut names);
            }
            let st = match &names[..] {
                [n] => me.lookup(n).cloned(),
                _ => None,
            };
            Ok((r, st))
        })
    }

    /// Calls a nested fn or a file helper: `call` is the call expression, whose `&mut x`
    /// arguments get back the value the helper left in the matching parameter.
    /// Runs `f` with `args` (whose source expressions are `exprs`, the receiver first
    /// for a method), in a fresh scope; hands back what it wrote through `&mut`
    /// parameters (and `&mut self`) to the caller's places. `self_ty`: the type of a
    /// method's `Self`.
    pub(super) fn apply_with(
        &mut self,
        f: &'a ItemFn,
        exprs: Vec<&'a Expr>,
        args: Vec<V<'a>>,
        self_ty: Option<String>,
    ) -> R<'a> {
        // A nested fn sees only its parameters (and other items), not the caller's locals.
        let saved = std::mem::replace(&mut self.scopes, scopes::Scopes::new());
        for (a, v) in f.sig.inputs.iter().zip(args) {
            match a {
                FnArg::Typed(pt) => {
                    self.bind(&pt.pat, v);
                    self.note_param(pt, None);
                }
                FnArg::Receiver(_) => self.define("self".into(), v),
            }
        }
        let pushed = self_ty.is_some();
        if let Some(t) = self_ty {
            self.self_ty.push(t);
        }
        let r = self.block(&f.block);
        if pushed {
            self.self_ty.pop();
        }
        // What the parameters hold at the end (the body's own `let`s are in inner scopes).
        let outs: Vec<Option<V<'a>>> = f
            .sig
            .inputs
            .iter()
            .map(|a| match a {
                FnArg::Typed(pt) => pat_ident(&pt.pat).and_then(|n| self.scopes.get_in(0, scopes::sym(&n)).cloned()),
                FnArg::Receiver(_) => self.scopes.get_in(0, scopes::sym("self")).cloned(),
            })
            .collect();
        self.scopes = saved;
        let r = match r {
            Err(Flow::Return(v)) => Ok(v),
            r => r,
        }?;
        // Writes through `&mut` parameters reach the caller's variables.
        for (i, (a, p)) in exprs.iter().zip(&f.sig.inputs).enumerate() {
            if let FnArg::Receiver(rc) = p {
                // `&mut self`: the method's changes to its fields reach the receiver.
                if rc.reference.is_some() && rc.mutability.is_some() {
                    if let Some(v) = outs.get(i).cloned().flatten() {
                        if self.place_value(a).is_some() {
                            self.store(a, v)?;
                        }
                    }
                }
                continue;
            }
            let Expr::Reference(rf) = a else { continue };
            if rf.mutability.is_none() {
                continue;
            }
            let Some(name) = place_root(&rf.expr) else { continue };
            match (&*rf.expr, outs.get(i).cloned().flatten()) {
                (Expr::Path(_), Some(v)) => self.assign(&name, v),
                (Expr::Field(_), Some(v)) if self.place_value(&rf.expr).is_some() => self.store(&rf.expr, v)?,
                // `&mut self.slots[mb]`: that field only.
                _ => self.clobber_place(&rf.expr, false),
            }
        }
        Ok(r)
    }

    /// A method or associated function of a type the check has the source of
    /// (`impl Trainer { fn step(&self) }`, `ParallelState::new(&world)`): run like a
    /// helper, with `self` bound to the receiver.
    pub(super) fn apply_method(
        &mut self,
        e: &'a Expr,
        key: &str,
        exprs: Vec<&'a Expr>,
        args: Vec<V<'a>>,
    ) -> Option<R<'a>> {
        let f = self.file_fns.get(key)?;
        if self.via.len() > 16 {
            return Some(Err(undecidable(e, format!("calls into `{key}` nested more than 16 deep"))));
        }
        let ty = key.split_once("::").map(|(t, _)| t.to_string());
        Some(self.run_helper(e, f, exprs, args, ty, Some(key)))
    }

    /// Runs a helper (a nested fn, a file function, a method): a helper that cannot
    /// communicate runs as a quiet region, and when summarised its result is data and so
    /// is what it could write (`&mut` arguments, a `&mut self` receiver). `via`: report
    /// what happens inside it at the call (helpers of the package's files).
    fn run_helper(
        &mut self,
        e: &'a Expr,
        f: &'a ItemFn,
        exprs: Vec<&'a Expr>,
        args: Vec<V<'a>>,
        ty: Option<String>,
        via: Option<&str>,
    ) -> R<'a> {
        let quiet = self.quiet_helper(f, &args);
        // A quiet helper's result for these arguments, if an earlier rank or size ran it.
        let memo = if quiet { self.memo_key(f, &exprs, &args) } else { None };
        if let Some(key) = memo {
            if let Some(v) = self.memo_get(key, &args) {
                return Ok(v);
            }
        }
        let memo_args = memo.map(|_| args.clone());
        let pure = quiet && memo.is_none() && self.by_values(f, &exprs, &args) && self.deterministic(f);
        let args_kept = if pure { args.clone() } else { Vec::new() };
        // Given a communicator, a helper may read its rank (`c.rank()` to seed a rank's
        // keys): what it leaves, summarised, is this rank's.
        let mut fp_args: Vec<&V<'a>> = args.iter().collect();
        let me = V::Int(self.rank as i128);
        if args.iter().any(V::has_comm) {
            fp_args.push(&me);
        }
        let args_fp = fp_of(&fp_args);
        let input_args = exprs.iter().zip(&args).all(|(e, v)| input_like(e, v));
        let args_have_comm = args.iter().any(V::has_comm);
        // (The inputs themselves: `std::env::args()` or `env::var(..)` in the call. A
        // number from a config is not: what a helper makes of it with other values, a
        // data set whose rank's slice is this rank's, is data.)
        let given_input = exprs.iter().any(|e| {
            let t: String = e.to_token_stream().to_string().chars().filter(|c| !c.is_whitespace()).collect();
            ["env::args", "env::var"].iter().any(|w| {
                t.match_indices(w).any(|(at, _)| {
                    let before = t[..at].chars().next_back();
                    let after = t[at + w.len()..].chars().next();
                    !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                        && after.is_some_and(|c| c == '(' || c == '_' || c == 's')
                })
            })
        });
        let run = |me: &mut Self| {
            if let Some(key) = via {
                me.via.push((e, key.into()));
            }
            let r = me.apply_with(f, exprs.clone(), args, ty);
            if via.is_some() {
                let r = me.locate_stop(r);
                me.via.pop();
                return r;
            }
            r
        };
        if !quiet {
            return run(self);
        }
        // Whether this call reads an input, kept with its result.
        let outer = swap_read_uniform(false);
        let outer_touched = swap_touched_input(false);
        let r = self.quiet_region(f as *const ItemFn as usize, args_have_comm, run);
        let read = read_uniform();
        swap_read_uniform(outer || read);
        // (Given the inputs themselves, `Options::parse(std::env::args())`, it reads them.)
        let touched = swap_touched_input(outer_touched) || read || given_input;
        swap_touched_input(outer_touched || touched);
        // Summarised, its result is data; but a helper that reads the program's inputs
        // from arguments that are the same on every rank (`Config::from_args()`) gives
        // the same on every rank: an input, whatever it computes.
        // (A helper that computes from its arguments alone gives exact data of them: ranks
        // that pass it the same values hold the same result, `System::random(n, seed)`'s
        // `n` included, and a condition or a loop count on it is followed rank by rank.)
        let summary = match &memo_args {
            _ if touched && input_args => V::Uniform,
            Some(args) if self.deterministic(f) => V::derived(&args.iter().collect::<Vec<_>>()),
            Some(args) => V::taint(&args.iter().collect::<Vec<_>>()),
            // (A helper nested in the entry is not remembered, but computes alike.)
            None if pure => V::derived(&args_kept.iter().collect::<Vec<_>>()),
            None => V::data(args_fp),
        };
        if let (Some(key), Some(args)) = (memo, memo_args) {
            match &r {
                Some(Ok(v)) if touched && input_args => self.memo_put(key, &args, &uniform_data(v.clone()), read),
                Some(Ok(v)) => self.memo_put(key, &args, v, read),
                None => self.memo_put(key, &args, &summary, read),
                Some(Err(_)) => {}
            }
        }
        if let Some(r) = r {
            return if touched && input_args { r.map(uniform_data) } else { r };
        }
        for (a, p) in exprs.iter().zip(&f.sig.inputs) {
            let mut places = Vec::new();
            // A `&mut [T]` or `&mut [T; N]` parameter cannot change the length of what
            // it borrows: only the items are forgotten.
            let mut fixed_len = false;
            match p {
                FnArg::Receiver(rc) if rc.mutability.is_some() => places.push(*a),
                FnArg::Receiver(_) => {}
                FnArg::Typed(t) => {
                    fixed_len = matches!(&*t.ty, syn::Type::Reference(r)
                        if r.mutability.is_some() && matches!(&*r.elem, syn::Type::Slice(_) | syn::Type::Array(_)));
                    mut_loan_places(a, &mut places)
                }
            }
            for p in places {
                self.clobber_place_with(p, fixed_len, args_fp);
            }
        }
        Ok(summary)
    }

    pub(super) fn call(&mut self, e: &'a Expr, c: &'a syn::ExprCall) -> R<'a> {
        let args = self.args(&c.args)?;
        if let Some(r) = self.mem_call(c, &args)? {
            return Ok(r);
        }
        let r = match &*c.func {
            // dist's own functions are known by name, never read from source.
            Expr::Path(p) if is_dist_fn(&p.path) => self.known_call(e, &p.path, args)?,
            Expr::Path(p) if p.path.segments.len() == 1 && self.lookup_ident(&p.path.segments[0].ident).is_none() => {
                let name = path_str(&p.path);
                let helper = self.fns.get(&name).copied().or_else(|| self.file_fns.get(&name));
                if let Some(f) = helper {
                    if self.via.len() > 16 {
                        return Err(undecidable(e, format!("calls into `{name}` nested more than 16 deep")));
                    }
                    // Nested fns report at their own lines; file helpers at the call.
                    let via = (!self.fns.contains_key(&name)).then_some(name.as_str());
                    return self.run_helper(e, f, c.args.iter().collect(), args, None, via);
                }
                self.known_call(e, &p.path, args)?
            }
            Expr::Path(p) if p.path.segments.len() == 1 => {
                match self.lookup_ident(&p.path.segments[0].ident).cloned() {
                    Some(V::Closure(cl)) => self.apply_closure(cl, args)?,
                    _ => self.opaque_call(e, &path_str(&p.path), &args)?,
                }
            }
            Expr::Path(p) if p.path.segments.len() >= 2 => {
                // `Type::f(..)`, `Self::f(..)`, `module::f(..)`: functions whose source
                // the check has (the package's files).
                let n = p.path.segments.len();
                let (ty, f) = (p.path.segments[n - 2].ident.to_string(), p.path.segments[n - 1].ident.to_string());
                let ty = if ty == "Self" { self.self_ty.last().cloned().unwrap_or(ty) } else { ty };
                let key = format!("{ty}::{f}");
                if let Some(r) = self.apply_method(e, &key, c.args.iter().collect(), args.clone()) {
                    return r;
                }
                if self.file_fns.contains_key(&f)
                    && self.file_fns.get(&key).is_none()
                    && ty.chars().next().is_some_and(|ch| ch.is_lowercase())
                {
                    // `module::helper(..)`: a free function of another module file.
                    if let Some(r) = self.apply_method(e, &f, c.args.iter().collect(), args.clone()) {
                        return r;
                    }
                }
                self.known_call(e, &p.path, args)?
            }
            Expr::Path(p) => self.known_call(e, &p.path, args)?,
            func => match self.expr(func)? {
                V::Closure(cl) => self.apply_closure(cl, args)?,
                _ => self.opaque_call(e, "a computed function", &args)?,
            },
        };
        // Anything else may have written into what it borrowed mutably.
        self.clobber_loans(&c.args, false);
        Ok(r)
    }

    /// `std::mem::swap(&mut a, &mut b)`, `replace(&mut a, v)`, `take(&mut a)` on places
    /// the check follows: the values move as the call moves them (a double buffer
    /// swapped after each sweep keeps its length), instead of both places becoming data.
    fn mem_call(&mut self, c: &'a syn::ExprCall, args: &[V<'a>]) -> Result<Option<V<'a>>, Flow<'a>> {
        let Expr::Path(p) = &*c.func else { return Ok(None) };
        let name = path_str(&p.path);
        let f = match name.as_str() {
            "std::mem::swap" | "mem::swap" | "core::mem::swap" => "swap",
            "std::mem::replace" | "mem::replace" | "core::mem::replace" => "replace",
            "std::mem::take" | "mem::take" | "core::mem::take" => "take",
            // A bare `swap(..)` after `use std::mem::swap`, unless the package has one.
            "swap" | "replace" | "take"
                if !self.fns.contains_key(&name)
                    && self.file_fns.get(&name).is_none()
                    && self.lookup_ident(&p.path.segments[0].ident).is_none() =>
            {
                name.as_str()
            }
            _ => return Ok(None),
        };
        let place = |i: usize| match c.args.iter().nth(i) {
            Some(Expr::Reference(r)) if r.mutability.is_some() => Some(&*r.expr),
            _ => None,
        };
        let put = |me: &mut Self, at: &'a Expr, v: V<'a>| {
            if me.store(at, v).is_err() {
                me.clobber_place(at, false);
            }
        };
        match (f, args) {
            ("swap", [a, b]) => {
                let (Some(pa), Some(pb)) = (place(0), place(1)) else { return Ok(None) };
                let (a, b) = (a.clone(), b.clone());
                put(self, pa, b);
                put(self, pb, a);
                Ok(Some(V::Unit))
            }
            ("replace", [a, v]) => {
                let Some(pa) = place(0) else { return Ok(None) };
                let old = a.clone();
                put(self, pa, v.clone());
                Ok(Some(old))
            }
            ("take", [a]) => {
                let Some(pa) = place(0) else { return Ok(None) };
                let old = a.clone();
                // What `Default` leaves for the kinds of values the check holds.
                let empty = match &old {
                    V::List(_) => V::list(vec![]),
                    V::Int(_) => V::Int(0),
                    V::Bool(_) => V::Bool(false),
                    V::Opt(_) => V::Opt(None),
                    v => forget(v.clone(), false),
                };
                put(self, pa, empty);
                Ok(Some(old))
            }
            _ => Ok(None),
        }
    }

    /// Calls to paths the check knows (`Some`, `Tag::new`, `drop`), else opaque.
    fn known_call(&mut self, e: &'a Expr, path: &syn::Path, args: Vec<V<'a>>) -> R<'a> {
        let (name, last) = (path_str(path), last_seg(path));
        if matches!(last.as_str(), "args" | "args_os" | "var" | "var_os" | "read_to_string" | "read")
            && is_uniform_source(&name)
        {
            // A rank's own variables (`RANK`, `LOCAL_RANK`, `SLURM_PROCID` …) differ across ranks.
            if last.starts_with("var") && args.first().is_some_and(|a| matches!(a, V::Name(n) if rank_variable(n))) {
                return Ok(V::data(fp_of(&[&V::Int(self.rank as i128)])));
            }
            swap_touched_input(true);
            // The run without arguments: the program's name alone.
            if last.starts_with("args") && super::no_arguments() {
                super::note_read_uniform();
                return Ok(V::list(vec![V::Name("\"program\"".into())]));
            }
            return Ok(V::Uniform);
        }
        // A command line parsed by a library (clap's `Cli::parse()`, `Args::parse_from(..)`,
        // structopt's `from_args()`, argh's `from_env()`): an input, the same on every rank.
        let ty_fn = path.segments.len() >= 2 || last == "from_env";
        if ty_fn
            && matches!(
                last.as_str(),
                "parse" | "parse_from" | "try_parse" | "try_parse_from" | "from_args" | "from_env"
            )
            && !args.iter().any(V::has_comm)
        {
            swap_touched_input(true);
            return Ok(V::Uniform);
        }
        // `std::mem::size_of::<f64>()`: the primitive types' sizes.
        if last == "size_of" && args.is_empty() {
            if let Some(syn::PathArguments::AngleBracketed(ab)) = path.segments.last().map(|s| &s.arguments) {
                if let Some(syn::GenericArgument::Type(syn::Type::Path(tp))) = ab.args.first() {
                    let size = match last_seg(&tp.path).as_str() {
                        "u8" | "i8" | "bool" => Some(1),
                        "u16" | "i16" => Some(2),
                        "u32" | "i32" | "f32" | "char" => Some(4),
                        "u64" | "i64" | "f64" | "usize" | "isize" => Some(8),
                        "u128" | "i128" => Some(16),
                        _ => None,
                    };
                    if let Some(b) = size {
                        return Ok(V::Int(b));
                    }
                }
            }
        }
        match (last.as_str(), args.as_slice()) {
            ("Some", [x]) => Ok(V::Opt(Some(Box::new(x.clone())))),
            ("Ok", [x]) => Ok(x.clone()),
            ("Err", _) => Ok(V::Err),
            ("new", [V::Int(id)]) if name.ends_with("Tag::new") => Ok(V::Tag(format!("#{id}"))),
            // An empty collection the check follows (`push`, iteration, `wait_all`).
            ("new" | "with_capacity", _) if name.starts_with("Vec::") || name.starts_with("VecDeque::") => {
                Ok(V::list(Vec::new()))
            }
            // A map the check follows while its keys are known (`std_methods.rs`).
            ("new" | "default", []) if name.ends_with("BTreeMap::new") || name.ends_with("HashMap::new") => {
                Ok(V::Struct(if name.ends_with("BTreeMap::new") { "BTreeMap" } else { "HashMap" }.into(), Vec::new()))
            }
            ("min", [V::Int(a), V::Int(b)]) => Ok(V::Int(*a.min(b))),
            ("max", [V::Int(a), V::Int(b)]) => Ok(V::Int(*a.max(b))),
            ("from" | "try_from", [V::Int(a)]) => Ok(V::Int(*a)),
            ("from" | "try_from", [V::Bool(b)]) if !name.starts_with("bool") => Ok(V::Int(*b as i128)),
            ("wait_all", [v]) => {
                let ids = req_ids(v);
                self.events.push(Ev::Wait { ids, site: self.site(e), call: "wait_all" });
                Ok(V::Unit)
            }
            ("wait_any" | "wait_some", _) => {
                Err(undecidable(e, format!("`{last}`, whose completion order depends on timing")))
            }
            ("drop", [V::Req(ids)]) => {
                self.events.push(Ev::Wait { ids: ids.clone(), site: self.site(e), call: "drop" });
                Ok(V::Unit)
            }
            ("drop", _) => Ok(V::Unit),
            // A request forgotten is never waited: its op may never complete here, and
            // its buffer is released to the program while the op may still use it.
            ("forget" | "leak", [V::Req(_)]) => Err(Flow::Stop(Stop::Invalid {
                site: self.site(e),
                msg: format!(
                    "`{last}` of a request: the op is never waited, so it may never complete, and its buffer is \
                     handed back while the op may still use it; call `.wait()` (or let the request drop, which \
                     waits) before the next op on the communicator"
                ),
            })),
            _ => self.opaque_call(e, &name, &args),
        }
    }

    pub(super) fn opaque_call(&mut self, e: &'a Expr, name: &str, args: &[V<'a>]) -> R<'a> {
        if args.iter().any(V::has_comm) {
            return Err(undecidable(
                e,
                format!(
                    "a call to `{name}`, which takes a communicator: the check sees only functions \
                     defined in the same source file (or inside the #[spmd] function)"
                ),
            ));
        }
        // A clock or an entropy source reads something of its own on each rank.
        let last = name.rsplit("::").next().unwrap_or(name);
        if args.is_empty() && matches!(last, "now" | "thread_rng" | "random" | "rng" | "from_entropy" | "from_os_rng") {
            return Ok(V::data(fp_of(&[&V::Name(name.into()), &V::Int(self.rank as i128)])));
        }
        // Anything else computes from its arguments.
        Ok(V::taint(&args.iter().collect::<Vec<_>>()))
    }
}

/// The name a parameter pattern binds (`x`, `mut x`, `x: &mut T`), if it is one name.
fn pat_ident(p: &Pat) -> Option<String> {
    match p {
        Pat::Ident(i) if i.subpat.is_none() => Some(i.ident.to_string()),
        Pat::Type(t) => pat_ident(&t.pat),
        _ => None,
    }
}

/// Methods that hand out a mutable view of their receiver (`x.as_mut_slice()`).
fn lends_mut(method: &syn::Ident) -> bool {
    let m = method.to_string();
    m.starts_with("as_mut") || m.ends_with("_mut") || m == "borrow_mut" || m == "deref_mut"
}

/// The local variable a place expression writes into: `x` for `x`, `x[i]`, `x.f`,
/// `*x`, `x[1..]`, `x.as_mut_slice()`.
pub(super) fn place_root(e: &Expr) -> Option<String> {
    match e {
        Expr::Path(p) if p.qself.is_none() => p.path.get_ident().map(|i| i.to_string()),
        Expr::Reference(r) => place_root(&r.expr),
        Expr::Paren(p) => place_root(&p.expr),
        Expr::Group(g) => place_root(&g.expr),
        Expr::Index(i) => place_root(&i.expr),
        Expr::Field(f) => place_root(&f.base),
        Expr::Unary(u) if matches!(u.op, UnOp::Deref(_)) => place_root(&u.expr),
        Expr::MethodCall(m) if lends_mut(&m.method) => place_root(&m.receiver),
        _ => None,
    }
}

/// The places an argument lends mutably: `x` for `&mut x` or `Some(&mut x)`, `self.buf`
/// for `&mut self.buf[1..]` or `self.buf.as_mut_slice()`, `x` in `(r == 0).then_some(&mut
/// x)`. Closures are left alone (what they do is evaluated where they are called).
pub(super) fn mut_loan_places<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match e {
        Expr::Reference(r) if r.mutability.is_some() => out.push(&r.expr),
        Expr::Reference(r) => mut_loan_places(&r.expr, out),
        Expr::Paren(p) => mut_loan_places(&p.expr, out),
        Expr::Group(g) => mut_loan_places(&g.expr, out),
        Expr::Call(c) => c.args.iter().for_each(|a| mut_loan_places(a, out)),
        Expr::Tuple(t) => t.elems.iter().for_each(|a| mut_loan_places(a, out)),
        Expr::Array(a) => a.elems.iter().for_each(|a| mut_loan_places(a, out)),
        Expr::MethodCall(m) if lends_mut(&m.method) => out.push(&m.receiver),
        Expr::MethodCall(m) => m.args.iter().for_each(|a| mut_loan_places(a, out)),
        _ => {}
    }
}

/// The variables at the roots of the places an argument lends mutably ([`mut_loan_places`]).
pub(super) fn mut_loans(e: &Expr, out: &mut Vec<String>) {
    let mut places = Vec::new();
    mut_loan_places(e, &mut places);
    out.extend(places.into_iter().filter_map(place_root));
}

/// A value after something unknown was written into it: communicators, requests, tags
/// and closures stay (a buffer write does not change them); with `keep_shape`, lists
/// and tuples keep their length; everything else becomes opaque.
/// Whether a function's result type holds no communicator, whatever the package
/// declares: `()`, numbers, `bool`, `char`, `String`, and `Vec`s, arrays, slices,
/// tuples, `Option`s and `Result`s of those.
pub(super) fn plain_type(out: &syn::ReturnType) -> bool {
    fn plain(t: &syn::Type) -> bool {
        match t {
            syn::Type::Tuple(t) => t.elems.iter().all(plain),
            syn::Type::Array(a) => plain(&a.elem),
            syn::Type::Slice(s) => plain(&s.elem),
            syn::Type::Reference(r) => plain(&r.elem),
            syn::Type::Paren(p) => plain(&p.elem),
            syn::Type::Path(p) => {
                let Some(last) = p.path.segments.last() else { return false };
                let name = last.ident.to_string();
                let args_plain = match &last.arguments {
                    syn::PathArguments::None => true,
                    syn::PathArguments::AngleBracketed(a) => a.args.iter().all(|g| match g {
                        syn::GenericArgument::Type(t) => plain(t),
                        _ => true,
                    }),
                    syn::PathArguments::Parenthesized(_) => false,
                };
                let leaf = matches!(
                    name.as_str(),
                    "u8" | "u16"
                        | "u32"
                        | "u64"
                        | "u128"
                        | "usize"
                        | "i8"
                        | "i16"
                        | "i32"
                        | "i64"
                        | "i128"
                        | "isize"
                        | "f32"
                        | "f64"
                        | "bool"
                        | "char"
                        | "str"
                        | "String"
                );
                let wrapper = matches!(name.as_str(), "Vec" | "Option" | "Result" | "Box" | "VecDeque");
                (leaf || wrapper) && args_plain
            }
            _ => false,
        }
    }
    match out {
        syn::ReturnType::Default => true,
        syn::ReturnType::Type(_, t) => plain(t),
    }
}

pub(super) fn forget<'a>(v: V<'a>, keep_shape: bool) -> V<'a> {
    forget_with(v, keep_shape, 0)
}

/// [`forget`], where what was written is known by `salt` (a hash of what a method
/// pushed, the peer and tag of the receive that filled the buffer; 0 for nothing
/// known): each forgotten value's `fp` is computed from what it was and the salt, so
/// data that differed stays different, and a write that differs makes it differ.
pub(super) fn forget_with<'a>(v: V<'a>, keep_shape: bool, salt: u64) -> V<'a> {
    match v {
        // Data already forgotten (a buffer's items) is shared as it is.
        V::List(items)
            if keep_shape && salt == 0 && items.iter().all(|x| matches!(x, V::Opaque { comm: false, .. })) =>
        {
            V::List(items)
        }
        V::List(items) if keep_shape => V::list(items.iter().cloned().map(|x| forget_with(x, true, salt)).collect()),
        V::Tuple(items) if keep_shape => V::Tuple(items.into_iter().map(|x| forget_with(x, true, salt)).collect()),
        v @ (V::Comm(_) | V::Batch(_) | V::Req(_) | V::Tag(_) | V::Name(_) | V::Closure(_) | V::Unit) => v,
        // A struct keeps its communicators, requests and shape, and the numbers the
        // package never writes after building it (`super::set_written_fields`); its data
        // is forgotten.
        V::Struct(t, fields) => V::Struct(
            t.clone(),
            fields
                .into_iter()
                .map(|(k, v)| {
                    let v = forget_field(&t, &k, v, keep_shape, salt, false);
                    (k, v)
                })
                .collect(),
        ),
        // What was read from the program's inputs stays the same on every rank.
        V::Uniform => V::Uniform,
        V::Opaque { comm: false, fp } if salt == 0 => V::data(fp),
        v if v.has_comm() => V::Opaque { comm: true, fp: 0 },
        v => V::data(fp_of(&[&v, &V::Int(salt as i128)])),
    }
}

/// The sub-pattern at tuple positions `path` of `p` (`(w, &g)` at `[0]` is `w`).
fn pat_at<'p>(p: &'p Pat, path: &[usize]) -> Option<&'p Pat> {
    match (p, path.split_first()) {
        (p, None) => Some(p),
        (Pat::Tuple(t), Some((&i, rest))) => pat_at(t.elems.iter().nth(i)?, rest),
        (Pat::Paren(x), _) => pat_at(&x.pat, path),
        _ => None,
    }
}

/// A struct's field `k` after something unknown was written into the struct: a number
/// or flag the package never writes after building the struct stays; a list it never
/// resizes (or one written through an index, `indexed`) keeps its length.
fn forget_field<'a>(ty: &str, k: &str, v: V<'a>, keep_shape: bool, salt: u64, indexed: bool) -> V<'a> {
    match v {
        // A field the package never assigns nor lends mutably after building the struct
        // keeps what it holds: a number, an input, exact data (`n: sys.n`).
        v @ (V::Int(_) | V::Bool(_) | V::Uniform | V::Agreed | V::Name(_) | V::Opaque { comm: false, .. })
            if !super::field_written(ty, k) =>
        {
            v
        }
        v @ V::List(_) if indexed || !super::field_resized(ty, k) => forget_with(v, true, salt),
        v => forget_with(v, keep_shape, salt),
    }
}

/// An index expression evaluated again without effects: literals, variables, fields and
/// arithmetic on them (`a[i]`, `ready[2 * l + 1]`, `slots[self.mb]`).
fn plain_index(e: &Expr) -> bool {
    match e {
        Expr::Lit(_) | Expr::Path(_) => true,
        Expr::Field(f) => plain_index(&f.base),
        Expr::Paren(p) => plain_index(&p.expr),
        Expr::Cast(c) => plain_index(&c.expr),
        Expr::Unary(u) => plain_index(&u.expr),
        Expr::Binary(b) => plain_index(&b.left) && plain_index(&b.right),
        _ => false,
    }
}

/// An item reached through `last_mut`/`first_mut`/`get_mut`: the list's place, the
/// index (`None`: no such item), and the value (`Some(item)` or `None`).
type Accessor<'a> = (&'a Expr, Option<usize>, V<'a>);

/// `v` with every data hash cleared: its shape, for comparing what a branch changed.
fn shape(v: V<'_>) -> V<'_> {
    match v {
        V::Opaque { comm, .. } => V::Opaque { comm, fp: 0 },
        V::Struct(t, f) => V::Struct(t, f.into_iter().map(|(k, v)| (k, shape(v))).collect()),
        V::Tuple(l) => V::Tuple(l.into_iter().map(shape).collect()),
        V::List(l) => V::list(l.iter().cloned().map(shape).collect()),
        V::Opt(Some(x)) => V::Opt(Some(Box::new(shape(*x)))),
        v => v,
    }
}

/// What a collective of every rank wrote into a buffer: the same on every rank (a
/// list keeps its length; its items, and anything else, become [`V::Agreed`]).
pub(super) fn agree<'a>(v: V<'a>) -> V<'a> {
    match v {
        V::List(items) => V::list(items.iter().cloned().map(agree).collect()),
        V::Tuple(items) => V::Tuple(items.into_iter().map(agree).collect()),
        v @ (V::Comm(_) | V::Batch(_) | V::Req(_) | V::Tag(_) | V::Name(_) | V::Closure(_) | V::Unit) => v,
        V::Struct(t, fields) => V::Struct(t, fields.into_iter().map(|(k, v)| (k, agree(v))).collect()),
        v if v.has_comm() => V::Opaque { comm: true, fp: 0 },
        _ => V::Agreed,
    }
}

/// Whether `path` names one of dist's free functions the check knows (`wait_all`,
/// `dist_runtime::wait_any`, …) or anything under `dist_runtime::`/`std::`: those are
/// modelled, never interpreted from a source file that happens to define them.
/// The program's inputs: the same on every rank under the launcher (one command line,
/// one environment, one file system per host).
fn is_uniform_source(name: &str) -> bool {
    let name = name.replace(' ', "");
    // `args()` after `use std::env::args` (a helper of that name is found before this).
    name == "args"
        || ["env::args", "env::args_os", "env::var", "env::var_os", "fs::read_to_string", "fs::read"]
            .iter()
            .any(|s| name == *s || name.ends_with(&format!("::{s}")))
}

/// What a quiet helper that read the program's inputs (and took nothing that differs
/// across ranks) returned: its data parts are inputs too, the same on every rank.
fn uniform_data(v: V<'_>) -> V<'_> {
    match v {
        V::Opaque { comm: false, .. } => V::Uniform,
        V::Struct(t, f) => V::Struct(t, f.into_iter().map(|(k, v)| (k, uniform_data(v))).collect()),
        V::Tuple(l) => V::Tuple(l.into_iter().map(uniform_data).collect()),
        V::Opt(Some(x)) => V::Opt(Some(Box::new(uniform_data(*x)))),
        v => v,
    }
}

/// An environment variable that differs across the ranks of a job (`RANK`,
/// `LOCAL_RANK`, `OMPI_COMM_WORLD_RANK`, `SLURM_PROCID`, `PMI_RANK`, …).
fn rank_variable(quoted: &str) -> bool {
    let v = quoted.trim_matches('"').to_ascii_uppercase();
    v.contains("RANK") || v.contains("PROCID") || v.contains("LOCALID") || v.contains("NODEID")
}

fn is_dist_fn(path: &syn::Path) -> bool {
    let first = path.segments.first().map(|s| s.ident.to_string()).unwrap_or_default();
    let last = last_seg(path);
    matches!(first.as_str(), "dist_runtime" | "std" | "core" | "alloc")
        || matches!(last.as_str(), "wait_all" | "wait_any" | "wait_some" | "drop")
}

/// The scope entry that remembers which communicator's numbering a variable's rank is
/// in (a name no Rust variable can have).
pub(super) fn origin_key(name: &str) -> String {
    format!("\u{0}numbering:{name}")
}

fn pat_name_of_place(e: &Expr) -> Option<String> {
    match e {
        Expr::Path(p) if p.qself.is_none() => p.path.get_ident().map(|i| i.to_string()),
        _ => None,
    }
}

impl<'a> Interp<'a> {
    /// After `let NAME = init`: remember the numbering `init`'s rank is in (or that it
    /// has none, shadowing an outer one).
    pub(super) fn note_numbering(&mut self, pat: &Pat, init: &Expr) {
        let name = match pat {
            Pat::Ident(pi) if pi.subpat.is_none() => pi.ident.to_string(),
            Pat::Type(pt) => return self.note_numbering(&pt.pat, init),
            _ => return,
        };
        let origin = self.numbering_of(init).map_or(V::Unit, |c| V::Int(c as i128));
        self.define(origin_key(&name), origin);
    }

    /// Which communicator's numbering the rank `e` is in, where it is one unchanged:
    /// `c.rank()` (c's), `c.world_rank()`, `c.world_rank_of(..)` and `c.members()[i]`
    /// (the world's), `c.group_rank_of(..)` (c's), and variables bound to them. Any
    /// arithmetic makes it a plain number.
    pub(super) fn numbering_of(&self, e: &Expr) -> Option<usize> {
        let comm_of = |r: &Expr| match r {
            Expr::Path(p) => match self.lookup(&p.path.get_ident()?.to_string()) {
                Some(V::Comm(c)) => Some(*c),
                _ => None,
            },
            _ => None,
        };
        match e {
            Expr::Paren(p) => self.numbering_of(&p.expr),
            Expr::Group(g) => self.numbering_of(&g.expr),
            Expr::Reference(r) => self.numbering_of(&r.expr),
            Expr::Unary(u) if matches!(u.op, UnOp::Deref(_)) => self.numbering_of(&u.expr),
            Expr::Cast(c) => self.numbering_of(&c.expr),
            Expr::Try(t) => self.numbering_of(&t.expr),
            Expr::MethodCall(mc) => match mc.method.to_string().as_str() {
                "unwrap" | "expect" | "clone" | "to_owned" => self.numbering_of(&mc.receiver),
                "rank" | "group_rank_of" if mc.args.len() <= 1 => comm_of(&mc.receiver),
                "world_rank" | "world_rank_of" => comm_of(&mc.receiver).map(|_| 0),
                _ => None,
            },
            Expr::Index(ix) => match &*ix.expr {
                Expr::MethodCall(mc) if mc.method == "members" => comm_of(&mc.receiver).map(|_| 0),
                _ => None,
            },
            Expr::Path(p) => match self.lookup(&origin_key(&p.path.get_ident()?.to_string())) {
                Some(V::Int(c)) => usize::try_from(*c).ok(),
                _ => None,
            },
            _ => None,
        }
    }
}
