//! Calls: arguments, closures, the package's functions and methods (run, or summarised
//! when they cannot communicate), dist's own functions.

use super::super::collections::{may_hold_comm, without_comm};
use super::*;

impl<'a> Interp<'a> {
    pub(in crate::check::interp) fn args(
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
    pub(in crate::check::interp) fn apply_closure(&mut self, cl: Closure<'a>, args: Vec<V<'a>>) -> R<'a> {
        let c = cl.0;
        self.in_closure(cl, |me| {
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
    pub(in crate::check::interp) fn apply_closure_state(
        &mut self,
        c: Closure<'a>,
        args: Vec<V<'a>>,
    ) -> Result<(V<'a>, Option<V<'a>>), Flow<'a>> {
        self.apply_closure_keep(c, args, 0)
    }

    /// [`Self::apply_closure`], also handing back what the body left in its parameter
    /// `k` (an item lent mutably: `|h, layer| layer.forward(&h)` over `iter_mut()`), if
    /// it binds one name.
    pub(in crate::check::interp) fn apply_closure_keep(
        &mut self,
        c: Closure<'a>,
        args: Vec<V<'a>>,
        k: usize,
    ) -> Result<(V<'a>, Option<V<'a>>), Flow<'a>> {
        let cl = c;
        let c = c.0;
        self.in_closure(cl, |me| {
            for (p, v) in c.inputs.iter().zip(args) {
                me.bind(p, v);
            }
            let r = match me.expr(&c.body) {
                Err(Flow::Return(v)) => Ok(v),
                r => r,
            }?;
            let mut names = Vec::new();
            if let Some(p) = c.inputs.iter().nth(k) {
                pat_names(p, &mut names);
            }
            let st = match &names[..] {
                [n] => me.lookup(n).cloned(),
                _ => None,
            };
            Ok((r, st))
        })
    }

    /// Runs `f` in a fresh scope as the body of the closure `cl` (`?` there is the
    /// closure's), among the variables of the frame that made it: a closure handed to
    /// a function (`best_of(reps, || exchange(&world, &keys))`) reads and writes its
    /// maker's `world` and `keys`, not the function's. (A closure whose frame has
    /// returned, one a function returned, runs among the caller's variables, as does
    /// one that cannot communicate.)
    fn in_closure<T>(&mut self, cl: Closure<'a>, f: impl FnOnce(&mut Self) -> T) -> T {
        // (Only one that may communicate: a closure over data run where it is called,
        // its captured names unknown there, gives data, as before.)
        let away = (cl.1 != self.scopes.id() && self.may_communicate_deep(&*cl.0.body))
            .then(|| self.frames.iter().position(|s| s.id() == cl.1))
            .flatten();
        if let Some(i) = away {
            std::mem::swap(&mut self.scopes, &mut self.frames[i]);
            self.fn_stack.extend(cl.2);
        }
        self.closures.push(self.fn_stack.len());
        let r = self.scoped(f);
        self.closures.pop();
        if let Some(i) = away {
            if cl.2.is_some() {
                self.fn_stack.pop();
            }
            std::mem::swap(&mut self.scopes, &mut self.frames[i]);
        }
        r
    }

    /// Whether the code running now is the body of a function declared to return an
    /// `Option` (not a closure inside it).
    pub(in crate::check::interp) fn body_returns_option(&self) -> bool {
        if self.closures.last() == Some(&self.fn_stack.len()) {
            return false;
        }
        let Some(f) = self.fn_stack.last() else { return false };
        match &f.sig.output {
            syn::ReturnType::Type(_, t) => {
                matches!(&**t, syn::Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Option"))
            }
            syn::ReturnType::Default => false,
        }
    }

    /// The key of the package function `name` in the module `path` names, from the module
    /// of the function running now (`[]`: its own; `crate::a`, `super::b`, `self::c`, or
    /// `a` for a child module or one at the crate's root): `a::b/f`, where the package has
    /// such a function (`check::PackageItems::items` keys each free function so).
    pub(in crate::check::interp) fn module_key(&self, path: &[String], name: &str) -> Option<String> {
        let here: Vec<String> = match self.fn_stack.last() {
            Some(f) => super::super::module_of(f)?.split("::").filter(|s| !s.is_empty()).map(String::from).collect(),
            None => Vec::new(),
        };
        // What the module imports comes first (`use crate::ops::transpose;`, renamed or
        // not), as Rust resolves it; a path from the module itself next (`a::f`: a child
        // module's, `crate::`, `self::`, `super::`), glob imports after the module's own
        // items, a module at the crate's root last.
        let full: Vec<String> = path.iter().cloned().chain([name.to_string()]).collect();
        let mut paths = super::super::uses::imported(&here, &full);
        let own = super::super::uses::absolute(&here, &full);
        let relative = !matches!(path.first().map(String::as_str), Some("crate" | "self" | "super"));
        paths.extend(own.iter().take(1).cloned());
        if relative {
            paths.extend(super::super::uses::globbed(&here, &full));
        }
        paths.extend(own.into_iter().skip(1));
        let (module, name) = paths.iter().find_map(|p| {
            let (f, m) = p.split_last()?;
            let module = m.join("::");
            self.file_fns.contains_key(&format!("{module}/{f}")).then(|| (module, f.clone()))
        })?;
        // Where the function under the bare name is that one, it is called by that name
        // (one definition, one set of the check's per-function caches); the module's key
        // only where another module's function holds the bare name.
        if self.file_fns.get(&name).and_then(super::super::module_of).as_deref() == Some(module.as_str()) {
            return Some(name);
        }
        Some(format!("{module}/{name}"))
    }

    /// Calls a nested fn or a file helper: `call` is the call expression, whose `&mut x`
    /// arguments get back the value the helper left in the matching parameter.
    /// Runs `f` with `args` (whose source expressions are `exprs`, the receiver first
    /// for a method), in a fresh scope; hands back what it wrote through `&mut`
    /// parameters (and `&mut self`) to the caller's places. `self_ty`: the type of a
    /// method's `Self`.
    pub(in crate::check::interp) fn apply_with(
        &mut self,
        f: &'a ItemFn,
        exprs: Vec<&'a Expr>,
        args: Vec<V<'a>>,
        self_ty: Option<String>,
    ) -> R<'a> {
        // A nested fn sees only its parameters (and other items), not the caller's locals.
        self.enter_frame();
        for (a, v) in f.sig.inputs.iter().zip(args) {
            match a {
                FnArg::Typed(pt) => {
                    // What the parameter's declared type says holds no communicator is
                    // data, however the caller computed it (`dy: &[f32]` from a summarised
                    // `try_fold` over the layers).
                    let v = if v.has_comm() && !may_hold_comm(&pt.ty) { without_comm(v) } else { v };
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
        self.fn_stack.push(f);
        let generics = std::mem::take(&mut self.call_generics);
        self.generics.push(generics);
        let r = self.block(&f.block);
        self.generics.pop();
        self.fn_stack.pop();
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
        self.leave_frame();
        let r = match r {
            Err(Flow::Return(v)) => Ok(v),
            r => r,
        }?;
        // A helper declared to return a collection returns one, however its body built
        // it (an untyped `.collect()` in tail position).
        let r = match &f.sig.output {
            syn::ReturnType::Type(_, t) if matches!(r, V::List(_)) => super::super::collections::typed(r, t),
            _ => r,
        };
        // (And a return type that holds no communicator returns data.)
        let r = match &f.sig.output {
            syn::ReturnType::Type(_, t) if r.has_comm() && !may_hold_comm(t) => without_comm(r),
            _ => r,
        };
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

    /// The type a qualified path's `<T as Trait>` names: `Self`'s, a generic
    /// parameter's, or the type itself.
    pub(in crate::check::interp) fn qself_type(&self, q: &syn::QSelf) -> Option<String> {
        let syn::Type::Path(tp) = &*q.ty else { return None };
        let last = tp.path.segments.last()?.ident.to_string();
        match last.as_str() {
            "Self" => self.self_ty.last().cloned(),
            _ => Some(self.generic_type(&last).unwrap_or(last)),
        }
    }

    /// The type the generic parameter `name` of the function running now stands for.
    pub(in crate::check::interp) fn generic_type(&self, name: &str) -> Option<String> {
        self.generics.last()?.iter().find(|(p, _)| p == name).map(|(_, t)| t.clone())
    }

    /// What the generic type parameters of `f` stand for at the call `e`: given by a
    /// turbofish (`check_monoid::<Sum>(..)`, `x.scan::<M>()`), or read from the
    /// arguments (a parameter `x: &M` given a `Sum`, `xs: &[M]` a list of them).
    fn generic_bindings(&self, e: &'a Expr, f: &'a ItemFn, args: &[V<'a>]) -> Vec<(String, String)> {
        let params: Vec<String> = f.sig.generics.type_params().map(|t| t.ident.to_string()).collect();
        if params.is_empty() {
            return Vec::new();
        }
        let turbofish = match e {
            Expr::Call(c) => match &*c.func {
                Expr::Path(p) => match p.path.segments.last().map(|s| &s.arguments) {
                    Some(syn::PathArguments::AngleBracketed(a)) => Some(a),
                    _ => None,
                },
                _ => None,
            },
            Expr::MethodCall(mc) => mc.turbofish.as_ref(),
            _ => None,
        };
        let named = |t: &syn::Type| match t {
            syn::Type::Path(p) if p.qself.is_none() => {
                let last = p.path.segments.last()?.ident.to_string();
                match last.as_str() {
                    "Self" => self.self_ty.last().cloned(),
                    _ => Some(self.generic_type(&last).unwrap_or(last)),
                }
            }
            _ => None,
        };
        let mut out: Vec<(String, String)> = Vec::new();
        if let Some(a) = turbofish {
            let types = a.args.iter().filter_map(|g| match g {
                syn::GenericArgument::Type(t) => Some(t),
                _ => None,
            });
            for (p, t) in params.iter().zip(types) {
                if let Some(n) = named(t) {
                    out.push((p.clone(), n));
                }
            }
        }
        fn infer(t: &syn::Type, v: &V, params: &[String], out: &mut Vec<(String, String)>) {
            match (t, v) {
                (syn::Type::Reference(r), v) => infer(&r.elem, v, params, out),
                (syn::Type::Slice(s), V::List(items)) => items.iter().for_each(|i| infer(&s.elem, i, params, out)),
                (syn::Type::Array(a), V::List(items)) => items.iter().for_each(|i| infer(&a.elem, i, params, out)),
                (syn::Type::Path(p), v) if p.qself.is_none() => {
                    let Some(seg) = p.path.segments.last() else { return };
                    let name = seg.ident.to_string();
                    match v {
                        V::Struct(ty, _)
                            if p.path.segments.len() == 1
                                && params.contains(&name)
                                && !out.iter().any(|(q, _)| *q == name) =>
                        {
                            out.push((name, ty.rsplit("::").next().unwrap_or(ty).to_string()));
                        }
                        V::List(items) if matches!(name.as_str(), "Vec" | "VecDeque") => {
                            if let Some(elem) = super::super::collections::type_args(&p.path).first() {
                                items.iter().for_each(|i| infer(elem, i, params, out));
                            }
                        }
                        _ => {}
                    }
                }
                _ => {}
            }
        }
        for (a, v) in f.sig.inputs.iter().zip(args) {
            if let FnArg::Typed(pt) = a {
                infer(&pt.ty, v, &params, &mut out);
            }
        }
        out
    }

    /// A method or associated function of a type the check has the source of
    /// (`impl Trainer { fn step(&self) }`, `ParallelState::new(&world)`): run like a
    /// helper, with `self` bound to the receiver.
    pub(in crate::check::interp) fn apply_method(
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
    pub(in crate::check::interp) fn run_helper(
        &mut self,
        e: &'a Expr,
        f: &'a ItemFn,
        exprs: Vec<&'a Expr>,
        args: Vec<V<'a>>,
        ty: Option<String>,
        via: Option<&str>,
    ) -> R<'a> {
        let quiet = self.quiet_helper(f, &args);

        // A quiet helper's result for these arguments, if an earlier rank or size ran it
        // (not a generic one's: `M::identity()` differs with what `M` stands for).
        let generic = f.sig.generics.type_params().next().is_some();
        let memo = if quiet && !generic { self.memo_key(f, &exprs, &args) } else { None };
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
        let given_input = names_inputs(&exprs);
        let ty_name = ty.clone();
        // (A helper given known values that computes from them alone: [`summary`]'s
        // larger quota.)
        let known = quiet && args.iter().all(super::summary::concrete) && self.deterministic(f);
        let generics = self.generic_bindings(e, f, &args);
        let run = |me: &mut Self| {
            if let Some(key) = via {
                me.via.push((e, key.into()));
            }
            me.call_generics = generics;
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
        let r = self.quiet_region(f as *const ItemFn as usize, args_have_comm, known, run);
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
        // (A constructor summarised past its quota keeps the fields it copies from its
        // parameters: `System { n, a, b }`'s `n`.)
        let summary = match (&summary, memo_args.as_ref().or(pure.then_some(&args_kept)), r.is_none()) {
            (V::Opaque { comm: false, .. }, Some(vals), true) => {
                let vals = vals.clone();
                self.summarised_shape(f, &vals, &summary, ty_name.as_deref())
                    .or_else(|| self.summarised_struct(f, &vals, &summary, ty_name.as_deref()))
                    .unwrap_or(summary)
            }
            _ => summary,
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
        self.forget_written(f, &exprs, args_fp);
        Ok(summary)
    }

    /// After a summarised helper: what it could write is data now (`&mut` arguments,
    /// a `&mut self` receiver's fields its body writes, where the caller's receiver is a
    /// place the check follows).
    fn forget_written(&mut self, f: &'a ItemFn, exprs: &[&'a Expr], args_fp: u64) {
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
            // A `&mut self` method forgets only the fields its body writes (`self.assign`,
            // not `self.centroids`), where the caller's receiver is a place it follows.
            if let (FnArg::Receiver(rc), Some(base)) = (p, super::summary::place_path_of(a)) {
                let fields: Vec<String> = super::summary::written(&f.block)
                    .iter()
                    .filter_map(|w| w.strip_prefix("self.").map(str::to_string))
                    .collect();
                let whole = super::summary::written(&f.block).iter().any(|w| w == "self" || w == "self[]");
                if rc.mutability.is_some() && !whole && matches!(self.place_value(a), Some(V::Struct(..))) {
                    for field in fields {
                        self.clobber_path(&format!("{base}.{field}"), args_fp);
                    }
                    continue;
                }
            }
            for p in places {
                self.clobber_place_with(p, fixed_len, args_fp);
            }
        }
    }

    pub(in crate::check::interp) fn call(&mut self, e: &'a Expr, c: &'a syn::ExprCall) -> R<'a> {
        let args = self.args(&c.args)?;
        if let Some(r) = self.mem_call(c, &args)? {
            return Ok(r);
        }
        let r = match &*c.func {
            // `<M as Monoid>::from_words(..)`: the function of the type `M` stands for.
            Expr::Path(p) if p.qself.is_some() => {
                let ty = p.qself.as_ref().and_then(|q| self.qself_type(q));
                let key = ty.map(|t| format!("{t}::{}", last_seg(&p.path)));
                if let Some(r) = key.and_then(|k| self.apply_method(e, &k, c.args.iter().collect(), args.clone())) {
                    return r;
                }
                self.known_call(e, &p.path, args)?
            }
            // dist's own functions are known by name, never read from source.
            Expr::Path(p) if is_dist_fn(&p.path) => self.known_call(e, &p.path, args)?,
            Expr::Path(p) if p.path.segments.len() == 1 && self.lookup_ident(&p.path.segments[0].ident).is_none() => {
                let bare = path_str(&p.path);
                // The function of this module where another module has one of that name.
                let name = match self.module_key(&[], &bare) {
                    Some(k) if !self.fns.contains_key(&bare) => k,
                    _ => bare,
                };
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
                let ty = if ty == "Self" {
                    self.self_ty.last().cloned().unwrap_or(ty)
                } else {
                    self.generic_type(&ty).unwrap_or(ty)
                };
                let key = format!("{ty}::{f}");
                if let Some(r) = self.apply_method(e, &key, c.args.iter().collect(), args.clone()) {
                    return r;
                }
                // `serial::solve(..)`, `crate::solver::apply(..)`, `super::f(..)`: the
                // function of that module.
                let path: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
                if let Some(k) = self.module_key(&path[..n - 1], &f) {
                    if let Some(r) = self.apply_method(e, &k, c.args.iter().collect(), args.clone()) {
                        return r;
                    }
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
    pub(in crate::check::interp) fn mem_call(
        &mut self,
        c: &'a syn::ExprCall,
        args: &[V<'a>],
    ) -> Result<Option<V<'a>>, Flow<'a>> {
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
    pub(in crate::check::interp) fn known_call(&mut self, e: &'a Expr, path: &syn::Path, args: Vec<V<'a>>) -> R<'a> {
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
            // Owning and sharing wrappers are their contents here (`Box<Hierarchy>` of a
            // sub-communicator's solver; `*b`, `&b`, `b.x` and `Rc::clone` reach it).
            ("new", [x]) if matches!(name.as_str(), "Box::new" | "Rc::new" | "Arc::new" | "std::boxed::Box::new") => {
                Ok(x.clone())
            }
            ("Err", _) => Ok(V::Err),
            ("new", [V::Int(id)]) if name.ends_with("Tag::new") => Ok(V::Tag(format!("#{id}"))),
            // An empty collection the check follows (`push`, iteration, `wait_all`).
            ("new" | "with_capacity", _) if name.starts_with("Vec::") || name.starts_with("VecDeque::") => {
                Ok(V::list(Vec::new()))
            }
            // A map the check follows while its keys are known (`std_methods.rs`).
            // (`BTreeMap::<usize, Vec<u32>>::new()` knows its value type.)
            ("new" | "default" | "with_capacity", _) if coll_of_path(path).is_some() => {
                let (kind, seg) = coll_of_path(path).expect("checked");
                let args = super::super::collections::seg_args(seg);
                Ok(super::super::collections::empty(kind, args.get(1).copied()))
            }
            // `BTreeSet::from([3, 1, 3])`, `HashMap::from([(0, a), (1, b)])`.
            ("from" | "from_iter", [items]) if coll_of_path(path).is_some() && iter_items(items).is_some() => {
                let (_, seg) = coll_of_path(path).expect("checked");
                let ty = syn::Type::Path(syn::TypePath { qself: None, path: syn::Path::from(seg.clone()) });
                Ok(super::super::collections::typed(V::list(iter_items(items).expect("checked").to_vec()), &ty))
            }
            // `std::iter::once(b)`, `empty()`, `repeat_n(x, k)`: iterators of known length,
            // followed as lists (`w.iter().chain(once(b)).collect()` has `w.len() + 1` items).
            ("once", [x]) if iter_fn(&name, "once") => Ok(V::list(vec![x.clone()])),
            ("empty", []) if iter_fn(&name, "empty") => Ok(V::list(vec![])),
            ("repeat_n", [x, V::Int(k)]) if iter_fn(&name, "repeat_n") && (0..=REPEAT_BOUND).contains(k) => {
                Ok(V::list(vec![x.clone(); *k as usize]))
            }
            ("min", [V::Int(a), V::Int(b)]) => Ok(V::Int(*a.min(b))),
            ("max", [V::Int(a), V::Int(b)]) => Ok(V::Int(*a.max(b))),
            ("from", [V::Int(a)]) if name.starts_with("f64::") || name.starts_with("f32::") => {
                Ok(V::Float(*a as f64, false))
            }
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

    pub(in crate::check::interp) fn opaque_call(&mut self, e: &'a Expr, name: &str, args: &[V<'a>]) -> R<'a> {
        if args.iter().any(V::has_comm) {
            return Err(undecidable(
                e,
                format!(
                    "a call to `{name}`, which takes a communicator: the check follows the functions, \
                     methods and macros of this package's source files, and this one is not among them \
                     (another crate's, or a trait method on a type it could not tell)"
                ),
            ));
        }
        // A clock or an entropy source reads something of its own on each rank.
        let last = name.rsplit("::").next().unwrap_or(name);
        if args.is_empty() && matches!(last, "now" | "thread_rng" | "random" | "rng" | "from_entropy" | "from_os_rng") {
            return Ok(V::data(fp_of(&[&V::Name(name.into()), &V::Int(self.rank as i128)])));
        }
        // The standard library's deterministic functions (`BTreeSet::new()`,
        // `Vec::from(..)`, `std::cmp::max`, `f64::hypot`) compute from their arguments
        // alone: exact where those are ([`V::derived`]).
        if deterministic_std(name) {
            let mut all: Vec<&V<'a>> = args.iter().collect();
            let n = V::Name(name.to_string());
            all.push(&n);
            return Ok(V::derived(&all));
        }
        // Anything else computes from its arguments.
        Ok(V::taint(&args.iter().collect::<Vec<_>>()))
    }
}

/// Whether the path `name` names `std::iter`'s function `f` (`std::iter::once`,
/// `iter::once`, or `once` brought into scope).
/// The collection a path's type segment names (`BTreeMap::<K, V>::new` → the map and
/// its segment, generics included).
fn coll_of_path(path: &syn::Path) -> Option<(Coll, &syn::PathSegment)> {
    let n = path.segments.len();
    let seg = path.segments.iter().nth(n.checked_sub(2)?)?;
    Some((Coll::of(&seg.ident.to_string())?, seg))
}

fn iter_fn(name: &str, f: &str) -> bool {
    name == f || name.strip_suffix(f).is_some_and(|p| p.ends_with("iter::"))
}

/// Whether the path `name` names a function of the standard library that computes from
/// its arguments alone: a constructor or function of its deterministic types and
/// modules (not the environment, clocks, files, processes, threads, nor the hashed
/// collections, whose order is seeded per process).
fn deterministic_std(name: &str) -> bool {
    const TYPES: [&str; 30] = [
        "Vec",
        "VecDeque",
        "BTreeSet",
        "BTreeMap",
        "BinaryHeap",
        "LinkedList",
        "String",
        "Box",
        "Rc",
        "Arc",
        "Cell",
        "RefCell",
        "Wrapping",
        "Reverse",
        "cmp",
        "mem",
        "iter",
        "f64",
        "f32",
        "u8",
        "u16",
        "u32",
        "u64",
        "u128",
        "usize",
        "i32",
        "i64",
        "isize",
        "char",
        "str",
    ];
    let segs: Vec<&str> = name.split("::").collect();
    let segs = match segs.as_slice() {
        ["std" | "core" | "alloc", rest @ ..] => rest,
        s => s,
    };
    let skip = |s: &&str| matches!(*s, "collections" | "cell" | "rc" | "sync" | "num" | "vec" | "string" | "boxed");
    let first = segs.iter().find(|s| !skip(s));
    segs.len() >= 2 && first.is_some_and(|t| TYPES.contains(t))
}

/// Whether a call's arguments are the program's inputs themselves: `std::env::args()` or
/// `env::var(..)` in them.
fn names_inputs(exprs: &[&Expr]) -> bool {
    // (The inputs themselves: `std::env::args()` or `env::var(..)` in the call. A
    // number from a config is not: what a helper makes of it with other values, a
    // data set whose rank's slice is this rank's, is data.)
    // Each argument's answer is remembered by its syntax's address for the check
    // ([`reset_names_inputs`]): rendering it as text at every call was a tenth of a
    // training loop's check.
    exprs.iter().any(|e| {
        let key = *e as *const Expr as usize;
        if let Some(v) = NAMES_INPUTS.with(|m| m.borrow().get(&key).copied()) {
            return v;
        }
        let v = names_input(e);
        NAMES_INPUTS.with(|m| m.borrow_mut().insert(key, v));
        v
    })
}

thread_local! {
    static NAMES_INPUTS: std::cell::RefCell<FxMap<usize, bool>> = std::cell::RefCell::new(FxMap::default());
}

/// Forgets [`names_inputs`]' answers (at the start of each check: addresses of another
/// entry point's syntax may be reused).
pub(in crate::check::interp) fn reset_names_inputs() {
    NAMES_INPUTS.with(|m| m.borrow_mut().clear());
}

fn names_input(e: &Expr) -> bool {
    let t: String = e.to_token_stream().to_string().chars().filter(|c| !c.is_whitespace()).collect();
    ["env::args", "env::var"].iter().any(|w| {
        t.match_indices(w).any(|(at, _)| {
            let before = t[..at].chars().next_back();
            let after = t[at + w.len()..].chars().next();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                && after.is_some_and(|c| c == '(' || c == '_' || c == 's')
        })
    })
}
