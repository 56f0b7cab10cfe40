//! Expressions: literals, paths, operators, fields, indexing; enum variants.

use super::*;

impl<'a> Interp<'a> {
    /// One expression's value. (Long as one `match` over the expression's syntax: one
    /// arm per kind, the large ones in their own methods.)
    pub(in crate::check::interp) fn expr(&mut self, e: &'a Expr) -> R<'a> {
        self.tick(e)?;
        match e {
            Expr::Lit(l) => Ok(lit_value(&l.lit).unwrap_or(V::opaque())),
            // `<M as Monoid>::WORDS`: the constant of the type `M` stands for.
            Expr::Path(p) if p.qself.is_some() => Ok(p
                .qself
                .as_ref()
                .and_then(|q| self.qself_type(q))
                .and_then(|ty| self.consts.get(&format!("{ty}::{}", last_seg(&p.path))).cloned())
                .unwrap_or_else(V::opaque)),
            Expr::Path(p) => Ok(self.path(&p.path)),
            Expr::Paren(p) => self.expr(&p.expr),
            Expr::Group(g) => self.expr(&g.expr),
            Expr::Reference(r) => self.expr(&r.expr),
            Expr::Cast(c) => Ok(cast(self.expr(&c.expr)?, &c.ty)),
            Expr::Block(b) => self.labeled_block(b.label.as_ref(), &b.block),
            Expr::Unsafe(u) => self.block(&u.block),
            Expr::Unary(u) => {
                let v = self.expr(&u.expr)?;
                Ok(match (&u.op, v) {
                    (UnOp::Neg(_), V::Int(x)) => V::Int(-x),
                    (UnOp::Neg(_), V::Float(x, same)) => V::Float(-x, same),
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
                    // Bounds the check does not know but that are exact (`0..g.len()` of
                    // a graph built from the inputs): exact data of them.
                    (lo, hi) if exact_class(&lo) && exact_class(&hi) => {
                        let closed = V::Bool(matches!(r.limits, RangeLimits::Closed(_)));
                        V::derived(&[&lo, &hi, &closed])
                    }
                    // (Other bounds: nothing known, not even how they were computed.)
                    _ => V::opaque(),
                })
            }
            Expr::Field(f) => {
                let base = self.expr(&f.base)?;
                Ok(match (&f.member, base) {
                    (syn::Member::Unnamed(i), V::Tuple(items)) => {
                        items.get(i.index as usize).cloned().unwrap_or(V::opaque())
                    }
                    (syn::Member::Named(m), V::Status(Some(src), _)) if m == "source" => V::Int(src),
                    (syn::Member::Named(m), V::Status(_, Some(k))) if m == "count" => V::Int(k),
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
                    return Ok(if 0 <= *a && a <= b && *b <= items.len() as i128 {
                        V::list(items[*a as usize..*b as usize].to_vec())
                    } else {
                        V::opaque()
                    });
                }
                // A slice by a range the check holds of data it does not (`&a[c * n..(c + 1) * n]`
                // of a matrix computed from the inputs): its length is the range's, as
                // the slice panics otherwise; its items are the data's.
                if let (V::Opaque { comm: false, .. } | V::Agreed | V::Uniform, V::Range(a, b)) = (&base, &i) {
                    if 0 <= *a && a <= b && b - a <= REPEAT_BOUND {
                        return Ok(V::list(
                            (*a..*b)
                                .map(|k| match &base {
                                    V::Agreed | V::Uniform => base.clone(),
                                    _ => V::derived(&[&base, &V::Int(k)]),
                                })
                                .collect(),
                        ));
                    }
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
                            && i < items.len() as i128
                            && matches!(items[i as usize], V::Agreed)
                            && !input_like(&ix.index, &V::Int(i)) =>
                    {
                        V::derived(&[&V::Int(i)])
                    }
                    (V::List(items), V::Int(i)) if i >= 0 && i < items.len() as i128 => items[i as usize].clone(),
                    // Out of bounds in a run that guessed a value computed from the inputs:
                    // the guess, not the program, may be what is wrong (a list of
                    // `cfg.bins` items indexed by a shift computed from it).
                    (V::List(items), V::Int(i)) if super::super::guessed_input() => {
                        return Err(undecidable(
                            e,
                            format!(
                                "an index ({i}, for a list of {}) computed from the program's inputs in a way the \
                                 check does not follow",
                                items.len()
                            ),
                        ))
                    }
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
                // (Whether data matches is data computed from it: ranks that hold the same
                // data take the same way.)
                let whether = V::taint(&[&v]);
                Ok(match self.bind(&l.pat, v) {
                    Some(b) => V::Bool(b),
                    // Whether an input matches: the same on every rank.
                    None if same => V::Agreed,
                    None => whether,
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
                // Results are transparent (`subgroup(..)?` is still an Option); in the
                // body of a function returning an `Option` (not a closure's), `?` takes an
                // option apart (`.last()?`: its value, or the function returns `None`).
                match v {
                    V::Err => Err(Flow::Fail),
                    V::Opt(o) if self.body_returns_option() => match o {
                        Some(x) => Ok(*x),
                        None => Err(Flow::Return(V::Opt(None))),
                    },
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
            Expr::Closure(c) => Ok(V::Closure(Closure(c, self.scopes.id(), self.fn_stack.last().copied()))),
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
                // A field declared as a collection holds that collection, however the
                // value was built (an untyped `.collect()`).
                let fields = fields
                    .into_iter()
                    .map(|(name, v)| (name.clone(), super::super::collections::as_field(&ty, &name, v)))
                    .collect();
                if let Some(en) = self.enum_of_path(&s.path) {
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

    pub(in crate::check::interp) fn path(&self, p: &'a syn::Path) -> V<'a> {
        if p.segments.len() == 1 {
            let sym = super::super::scopes::ident_sym(&p.segments[0].ident);
            if let Some(v) = self.scopes.get(sym) {
                return v.clone();
            }
            if let Some(v) = self.const_syms.get(&sym) {
                return self.module_const(&p.segments[0].ident).unwrap_or_else(|| v.clone());
            }
            let name = p.segments[0].ident.to_string();
            if name == "None" {
                return V::Opt(None);
            }
            if self.fns.contains_key(&name) {
                return V::Name(name);
            }
        }
        if let Some(v) = self.const_by_path(p) {
            return v;
        }
        // A unit struct of the package as a value (`Box::new(Tanh)`): that struct; by a
        // path, only where no enum of the package has a variant of that name.
        let last = last_seg(p);
        let unit = self.file_fns.contains_key(&format!("{last}::__unit_struct"));
        if unit && p.segments.len() == 1 {
            return V::Struct(last, Vec::new());
        }
        // A unit variant of the package's enum: `Phase::Warmup`, or `Warmup` after a `use`.
        if let Some(en) = self.enum_of_path(p) {
            return V::Struct(format!("{en}::{last}"), Vec::new());
        } else if unit {
            return V::Struct(last, Vec::new());
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
        // `f64::INFINITY`, `f32::EPSILON`, `std::f64::consts::PI`: a float, the same on
        // every rank (as a float literal is).
        let n = p.segments.len();
        if n >= 2 && matches!(p.segments[n - 2].ident.to_string().as_str(), "f32" | "f64" | "consts") {
            let f32 = p.segments[n - 2].ident == "f32" || s.contains("f32::");
            return float_const(&last, f32).map_or(V::Agreed, |x| V::Float(x, true));
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

    /// The module of the running function (or of the constant being evaluated).
    fn module_here(&self) -> Option<String> {
        match self.fn_stack.last() {
            Some(f) => super::super::module_of(f),
            None => self.const_module.clone(),
        }
    }

    /// A constant `name` of the running function's module (not the crate's root): what a bare `HIDDEN` names in `shapes.rs`,
    /// whatever the crate's root calls `HIDDEN`.
    fn module_const(&self, name: &syn::Ident) -> Option<V<'a>> {
        let m = self.module_here()?;
        if m.is_empty() {
            return None;
        }
        self.consts.get(&format!("{m}::{name}")).cloned()
    }

    /// A constant of the package named by a path: `data::BLOCKS`, `crate::data::BLOCKS`,
    /// `super::BLOCKS`, `Self::LAYERS`, `Model::LAYERS`. The path's modules from the
    /// crate's root (`crate::`, `self::` and `super::` dropped) or its tail name the
    /// const (`data::BLOCKS` is `model::data::BLOCKS` where only that module has one);
    /// a path of modules only (`super::`, `crate::`) names the const of that name.
    fn const_by_path(&self, p: &syn::Path) -> Option<V<'a>> {
        let n = p.segments.len();
        if n < 2 {
            return None;
        }
        let name = p.segments[n - 1].ident.to_string();
        let here: Vec<String> =
            self.module_here().unwrap_or_default().split("::").filter(|s| !s.is_empty()).map(String::from).collect();
        let segs: Vec<String> = p.segments.iter().take(n - 1).map(|s| s.ident.to_string()).collect();
        // `crate::a`, `self::a`, `super::a` from the running function's module; `Self::N`
        // the type's; `a::N` a child module of this one, or `a` from the crate's root.
        let (mut qual, rest, relative): (Vec<String>, &[String], bool) = match segs[0].as_str() {
            "crate" => (Vec::new(), &segs[1..], false),
            "self" => (here.clone(), &segs[1..], false),
            "super" => {
                let ups = segs.iter().take_while(|s| *s == "super").count();
                (here[..here.len().saturating_sub(ups)].to_vec(), &segs[ups..], false)
            }
            "Self" => (vec![self.self_ty.last()?.clone()], &segs[1..], false),
            // `M::WORDS` in a function generic over `M`: the constant of the type `M` is.
            g if self.generic_type(g).is_some() => (vec![self.generic_type(g)?], &segs[1..], false),
            _ => (Vec::new(), &segs[..], true),
        };
        qual.extend(rest.iter().cloned());
        if qual.is_empty() {
            return self.consts.get(&name).cloned();
        }
        let key = format!("{}::{name}", qual.join("::"));
        if relative && !here.is_empty() {
            if let Some(v) = self.consts.get(&format!("{}::{key}", here.join("::"))) {
                return Some(v.clone());
            }
        }
        if let Some(v) = self.consts.get(&key) {
            return Some(v.clone());
        }
        let tail = format!("::{key}");
        let mut found = self.consts.iter().filter(|(k, _)| k.ends_with(&tail));
        match (found.next(), found.next()) {
            (Some((_, v)), None) => Some(v.clone()),
            _ => None,
        }
    }

    /// A `&mut place` kept beyond a call's arguments (`let r = &mut self.buf;`, `for v in
    /// [&mut self.a, &mut self.b] { *v = .. }`): what is written through it is not
    /// followed, so the place is forgotten (length included).
    pub(in crate::check::interp) fn aliased(&mut self, e: &'a Expr) {
        if let Expr::Reference(r) = e {
            if r.mutability.is_some() {
                self.clobber_place(&r.expr, false);
            }
        }
    }

    /// The enum of the package a path to a variant names: the type before the variant
    /// (`State::Busy`, `Self::Busy`) where it is an enum of the package with that
    /// variant, else the enum that has a variant of that name (`Busy` after a `use`).
    pub(in crate::check::interp) fn enum_of_path(&self, p: &syn::Path) -> Option<String> {
        let n = p.segments.len();
        let last = p.segments[n - 1].ident.to_string();
        if n >= 2 {
            let ty = p.segments[n - 2].ident.to_string();
            let ty = if ty == "Self" { self.self_ty.last().cloned().unwrap_or(ty) } else { ty };
            if self.file_fns.contains_key(&format!("{ty}::{last}::__variant")) {
                return Some(ty);
            }
            // (Through an alias, `type W = State;`, where no enum of that name has it.)
            if let Some(target) = super::super::collections::alias_target(&ty) {
                if self.file_fns.contains_key(&format!("{target}::{last}::__variant")) {
                    return Some(target);
                }
            }
            if ty.chars().next().is_some_and(|c| c.is_uppercase()) {
                return None;
            }
        }
        self.enum_of(&last)
    }

    /// The enum of the package that has a variant named `variant`.
    pub(in crate::check::interp) fn enum_of(&self, variant: &str) -> Option<String> {
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
    pub(in crate::check::interp) fn other_variant(&self, pat: &syn::Path, ty: &str) -> bool {
        let p = last_seg(pat);
        let v = ty.rsplit("::").next().unwrap_or(ty);
        p != "Self" && p != v && (ty.contains("::") || self.enum_of(&p).is_some())
    }

    pub(in crate::check::interp) fn binary(&mut self, b: &'a syn::ExprBinary) -> R<'a> {
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
                // The same on every rank, with what this rank knows: still the same (and
                // a flag from the inputs where the rest holds, `cfg.verbose && rank == 0`
                // on rank 0, is still that flag: the same all run long).
                (_, V::Bool(_), y) if same(&y) => y,
                (_, x, V::Bool(_)) if same(&x) => x,
                (_, V::Uniform, V::Uniform) => V::Uniform,
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
        super::super::counts::note_arith(&op, &l, &r, &v);
        super::super::forms::note_arith(&op, &l, &r, &v);
        if compound.is_some() {
            self.store(&b.left, v)?;
            return Ok(V::Unit);
        }
        Ok(v)
    }
}

/// A float type's constant or one of `std::f64::consts` (`f32`'s as `f32` values).
fn float_const(name: &str, f32: bool) -> Option<f64> {
    let (a, b) = match name {
        "INFINITY" => (f64::INFINITY, f32::INFINITY),
        "NEG_INFINITY" => (f64::NEG_INFINITY, f32::NEG_INFINITY),
        "MAX" => (f64::MAX, f32::MAX),
        "MIN" => (f64::MIN, f32::MIN),
        "MIN_POSITIVE" => (f64::MIN_POSITIVE, f32::MIN_POSITIVE),
        "EPSILON" => (f64::EPSILON, f32::EPSILON),
        "NAN" => (f64::NAN, f32::NAN),
        "PI" => (std::f64::consts::PI, std::f32::consts::PI),
        "TAU" => (std::f64::consts::TAU, std::f32::consts::TAU),
        "E" => (std::f64::consts::E, std::f32::consts::E),
        "SQRT_2" => (std::f64::consts::SQRT_2, std::f32::consts::SQRT_2),
        "LN_2" => (std::f64::consts::LN_2, std::f32::consts::LN_2),
        "LN_10" => (std::f64::consts::LN_10, std::f32::consts::LN_10),
        _ => return None,
    };
    Some(if f32 { b as f64 } else { a })
}

/// `v as ty`: a bool to an integer is 0 or 1; an integer to a float is that float (the
/// rank's own, as the integer may be); a float to an integer truncates and saturates as
/// Rust's `as` does; to `f32`, rounded to `f32`. Anything else keeps its value.
pub(in crate::check::interp) fn cast<'a>(v: V<'a>, ty: &syn::Type) -> V<'a> {
    let name = match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default(),
        _ => String::new(),
    };
    let int_range = |n: &str| -> Option<(i128, i128)> {
        Some(match n {
            "u8" => (0, u8::MAX as i128),
            "u16" => (0, u16::MAX as i128),
            "u32" => (0, u32::MAX as i128),
            "u64" | "usize" => (0, u64::MAX as i128),
            "u128" => (0, i128::MAX),
            "i8" => (i8::MIN as i128, i8::MAX as i128),
            "i16" => (i16::MIN as i128, i16::MAX as i128),
            "i32" => (i32::MIN as i128, i32::MAX as i128),
            "i64" | "isize" => (i64::MIN as i128, i64::MAX as i128),
            "i128" => (i128::MIN, i128::MAX),
            _ => return None,
        })
    };
    match (v, name.as_str()) {
        // `b as usize`: a bool cast to an integer is 0 or 1.
        (V::Bool(b), n) if n != "bool" => V::Int(b as i128),
        (V::Int(i), "f64") => V::Float(i as f64, false),
        (V::Int(i), "f32") => V::Float(i as f32 as f64, false),
        (V::Float(x, same), "f64") => V::Float(x, same),
        (V::Float(x, same), "f32") => V::Float(x as f32 as f64, same),
        // `x as u64`, `h as u32`: wrapped to the type, as Rust's `as` does.
        (V::Int(i), n) if int_range(n).is_some() => {
            let (lo, hi) = int_range(n).expect("checked");
            if (lo..=hi).contains(&i) || n.ends_with("128") {
                V::Int(i)
            } else {
                let span = hi - lo + 1;
                V::Int((i - lo).rem_euclid(span) + lo)
            }
        }
        (V::Float(x, _), n) if int_range(n).is_some() => {
            let (lo, hi) = int_range(n).expect("checked");
            V::Int(if x.is_nan() { 0 } else { (x.trunc().clamp(lo as f64, hi as f64) as i128).clamp(lo, hi) })
        }
        (v, _) => v,
    }
}
