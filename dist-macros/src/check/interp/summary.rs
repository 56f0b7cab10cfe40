//! Code that cannot communicate is summarised, not stepped through: a helper that takes
//! no communicator and whose body has no communication call, or a loop whose body
//! mentions no communicator and calls nothing that communicates, runs under a quota of
//! steps; past it, its effect is summarised as "what it writes is data" (the variables
//! it assigns or lends mutably become opaque, its result is opaque). Training loops'
//! arithmetic then costs the check a bounded number of steps, and small computations
//! (a peer, a count, a schedule) are still evaluated exactly.

use super::super::macro_rules;
use super::*;
use quote::ToTokens;
use syn::visit::Visit;

/// Steps a quiet region may take before it is summarised.
pub(super) const QUOTA: u64 = 5_000;

/// Steps a quiet region inside another may take (a helper's inner loop, a method
/// filling a buffer): it is summarised on its own, so the outer one keeps what it
/// computes itself (a list's length, a count) while the total stays within [`QUOTA`].
const NESTED_QUOTA: u64 = 1_000;

/// Steps a quiet region may take when everything it reads is known and it computes from
/// that alone (`Graph::generate(203, 2, 99)`, a helper that groups a graph's ghost
/// vertices by their owner's rank): what it computes is then known too, so a
/// neighbour list built from a generated graph is followed exactly. Bounded per check
/// by [`CONCRETE_BUDGET`]; past it such regions get the usual quota.
const CONCRETE_QUOTA: u64 = 100_000;

/// Steps all regions run under [`CONCRETE_QUOTA`] may take in one check, together.
const CONCRETE_BUDGET: u64 = 1_000_000;

thread_local! {
    /// Quiet regions (by the address of their syntax and the run's sample of the
    /// program's inputs) that ran out of steps in this check: summarised at once on the
    /// next ranks and world sizes of runs with that sample (always sound: running one only
    /// adds precision), so a training loop's arithmetic costs one rank's quota per sample.
    /// (By sample: a key generator too dear for the parser's defaults, 10 000 keys, still
    /// runs at the samples 1, 2 and 3, so what it returns keeps its length there.)
    static OVERFLOWED: std::cell::RefCell<std::collections::HashSet<usize, std::hash::BuildHasherDefault<super::Fx>>> =
        std::cell::RefCell::new(Default::default());
    /// Data a collective over part of the ranks left, by its `fp`: the groups within
    /// which it is the same, and its recipe (which calls made it, the same in every group:
    /// `std_methods.rs`, `group_uniform`).
    pub(super) static UNIFORM_OVER: std::cell::RefCell<FxMap<u64, (super::groups::Groups, u64)>> =
        std::cell::RefCell::new(FxMap::default());
    /// Steps spent so far in this check under [`CONCRETE_QUOTA`].
    static CONCRETE_SPENT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };

    /// [`Interp::calls_deep`] by the address of the syntax node, for one check.
    static DEEP: std::cell::RefCell<FxMap<usize, bool>> = std::cell::RefCell::new(FxMap::default());
    /// [`Interp::deterministic`] by the address of the helper, for one check.
    static PURE: std::cell::RefCell<FxMap<usize, bool>> = std::cell::RefCell::new(FxMap::default());
    /// The identifiers of a syntax node, by its address, for one check.
    static IDENTS: std::cell::RefCell<FxMap<usize, std::rc::Rc<Vec<String>>>> =
        std::cell::RefCell::new(FxMap::default());
}

/// Every identifier of `ts`, in order, groups included.
pub(super) fn ident_walk(ts: proc_macro2::TokenStream, out: &mut Vec<String>) {
    for t in ts {
        match t {
            proc_macro2::TokenTree::Ident(i) => out.push(i.to_string()),
            proc_macro2::TokenTree::Group(g) => ident_walk(g.stream(), out),
            _ => {}
        }
    }
}

/// The names `X` written as a primitive type's constant, `f64::X`, `u32::X`,
/// `consts::X` (`std::f64::consts::PI`), in `ts`.
fn assoc_consts(ts: proc_macro2::TokenStream, out: &mut Vec<String>) {
    use proc_macro2::TokenTree as T;
    const OWNERS: [&str; 16] = [
        "f32", "f64", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "char",
        "consts",
    ];
    let toks: Vec<T> = ts.into_iter().collect();
    for (k, t) in toks.iter().enumerate() {
        match t {
            T::Group(g) => assoc_consts(g.stream(), out),
            T::Ident(i) if k >= 3 => {
                let colons = matches!((&toks[k - 2], &toks[k - 1]), (T::Punct(a), T::Punct(b)) if a.as_char() == ':' && b.as_char() == ':');
                if colons && matches!(&toks[k - 3], T::Ident(o) if OWNERS.contains(&o.to_string().as_str())) {
                    out.push(i.to_string());
                }
            }
            _ => {}
        }
    }
}

/// The identifiers in `node` (deduplicated), computed once per node.
/// The identifiers in `node` (cached by its address).
pub(super) fn idents_of<T: ToTokens>(node: &T) -> std::rc::Rc<Vec<String>> {
    idents(node)
}

fn idents<T: ToTokens>(node: &T) -> std::rc::Rc<Vec<String>> {
    let key = node as *const T as usize;
    if let Some(v) = IDENTS.with(|m| m.borrow().get(&key).cloned()) {
        return v;
    }
    let mut out = Vec::new();
    ident_walk(node.to_token_stream(), &mut out);
    out.sort();
    out.dedup();
    let v = std::rc::Rc::new(out);
    IDENTS.with(|m| m.borrow_mut().insert(key, v.clone()));
    v
}

/// Forgets the cache of [`may_communicate`] (at the start of each check: addresses of
/// another entry point's syntax may be reused) and the regions that overflowed.
pub(super) fn reset() {
    UNIFORM_OVER.with(|q| q.borrow_mut().clear());
    super::receivers::reset();
    DEEP.with(|q| q.borrow_mut().clear());
    PURE.with(|q| q.borrow_mut().clear());
    IDENTS.with(|m| m.borrow_mut().clear());
    WRITTEN.with(|m| m.borrow_mut().clear());
    OVERFLOWED.with(|o| o.borrow_mut().clear());
    CONCRETE_SPENT.with(|s| s.set(0));
    super::eval::reset_names_inputs();
}

/// What the check has spent of its budgets for quiet regions (the steps under the
/// concrete quota, the regions that ran out), saved before runs that explore beyond a
/// size's own (shifted arms, the program's checks taken to pass) and restored after, so
/// that they never leave later world sizes summarising what those sizes would follow.
pub(crate) struct Spent(u64, std::collections::HashSet<usize, std::hash::BuildHasherDefault<super::Fx>>);

pub(crate) fn spent() -> Spent {
    Spent(CONCRETE_SPENT.with(|s| s.get()), OVERFLOWED.with(|o| o.borrow().clone()))
}

pub(crate) fn restore_spent(s: Spent) {
    CONCRETE_SPENT.with(|c| c.set(s.0));
    OVERFLOWED.with(|o| *o.borrow_mut() = s.1);
}

/// Whether `v` is known whole: numbers, names, lists, tuples and structs of them, a
/// communicator (its rank is known), a closure (what it captures is checked apart).
pub(super) fn concrete(v: &V) -> bool {
    match v {
        V::Int(_) | V::Float(..) | V::Bool(_) | V::Unit | V::Range(..) | V::Name(_) | V::Tag(_) => true,
        V::Comm(_) | V::Closure(_) | V::Opt(None) => true,
        V::Opt(Some(x)) => concrete(x),
        V::List(l) => l.iter().all(concrete),
        V::Tuple(l) => l.iter().all(concrete),
        V::Struct(_, f) => f.iter().all(|(_, v)| concrete(v)),
        _ => false,
    }
}

/// Whether the region at `key` ran out of steps before in this check.
pub(super) fn overflowed(key: usize) -> bool {
    OVERFLOWED.with(|o| o.borrow().contains(&sampled_key(key)))
}

/// Notes that the region at `key` ran out of steps.
pub(super) fn note_overflow(key: usize) {
    OVERFLOWED.with(|o| o.borrow_mut().insert(sampled_key(key)));
}

/// A region's key in this run: its address with the run's sample of the inputs.
fn sampled_key(key: usize) -> usize {
    key ^ (super::uniform_sample() as usize).wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Whether `node` contains a call that may communicate whatever the variables it
/// reads from outside hold: a method named as a `Comm` operation or a request's wait
/// on something that may be a communicator or a request (`receivers.rs`), or a call to
/// `wait_all`/`wait_any`/`wait_some`.
pub(super) fn may_communicate<T: ToTokens>(node: &T) -> bool {
    super::receivers::op_calls(node).may_communicate(|_| super::receivers::Known::Unknown)
}

/// The names `node` calls: a function's path's last segment (`exchange` for
/// `halo::exchange(..)`, `new` for `Trainer::new(..)`, with the type: `Trainer::new`), a
/// method's name (`step` for `t.step()`), and names called inside macros.
fn called_names(node: &impl ToTokens) -> Vec<String> {
    struct Calls(Vec<String>);
    impl<'ast> Visit<'ast> for Calls {
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            self.0.push(m.method.to_string());
            syn::visit::visit_expr_method_call(self, m);
        }
        fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
            if let syn::Expr::Path(p) = &*c.func {
                let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
                if segs.len() >= 2 {
                    self.0.push(segs[segs.len() - 2..].join("::"));
                }
                self.0.extend(segs.last().cloned());
            }
            syn::visit::visit_expr_call(self, c);
        }
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            if macro_rules::visit_expansion(self, m) {
                return;
            }
            fn walk(ts: proc_macro2::TokenStream, out: &mut Vec<String>) {
                use proc_macro2::{Delimiter, TokenTree};
                let tokens: Vec<TokenTree> = ts.into_iter().collect();
                for (i, t) in tokens.iter().enumerate() {
                    match t {
                        TokenTree::Group(g) => walk(g.stream(), out),
                        TokenTree::Ident(id) if matches!(tokens.get(i + 1), Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis) => {
                            out.push(id.to_string())
                        }
                        _ => {}
                    }
                }
            }
            walk(m.tokens.clone(), &mut self.0);
        }
    }
    let mut c = Calls(Vec::new());
    if !super::receivers::visit_tokens(node, &mut c) {
        return vec!["?".into()];
    }
    c.0.sort();
    c.0.dedup();
    c.0
}

thread_local! {
    /// `written` by the address of the syntax node, for one check.
    static WRITTEN: std::cell::RefCell<FxMap<usize, std::rc::Rc<Vec<String>>>> =
        std::cell::RefCell::new(FxMap::default());
}

/// [`written_uncached`], once per syntax node.
pub(super) fn written<T: ToTokens>(body: &T) -> std::rc::Rc<Vec<String>> {
    let key = body as *const T as usize;
    if let Some(v) = WRITTEN.with(|m| m.borrow().get(&key).cloned()) {
        return v;
    }
    let v = std::rc::Rc::new(written_uncached(body));
    WRITTEN.with(|m| m.borrow_mut().insert(key, v.clone()));
    v
}

/// The places `body` assigns, changes through a method, or lends mutably: a variable
/// (`x`), or a field of one (`self.next` for `self.next[i] = v`).
fn written_uncached(body: &impl ToTokens) -> Vec<String> {
    /// The places written, and the names the closures being visited bind (a closure's
    /// `|(c, b)| *c += b` writes its own `c`, not a variable `c` outside it).
    struct W(Vec<String>, Vec<Vec<String>>);
    impl W {
        fn add(&mut self, p: Option<String>) {
            if let Some(p) = p {
                let root = p.split(['.', '[']).next().unwrap_or_default();
                if !self.1.iter().any(|names| names.iter().any(|n| n == root)) {
                    self.0.push(p);
                }
            }
        }
    }
    impl<'ast> Visit<'ast> for W {
        fn visit_expr_assign(&mut self, a: &'ast syn::ExprAssign) {
            self.add(place_path(&a.left));
            syn::visit::visit_expr_assign(self, a);
        }
        fn visit_expr_binary(&mut self, b: &'ast syn::ExprBinary) {
            if is_compound_assign(&b.op) {
                self.add(place_path(&b.left));
            }
            syn::visit::visit_expr_binary(self, b);
        }
        fn visit_expr_reference(&mut self, r: &'ast syn::ExprReference) {
            if r.mutability.is_some() {
                self.add(place_path(&r.expr));
            }
            syn::visit::visit_expr_reference(self, r);
        }
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            // Any method may take `&mut self` (push, iter_mut, fill …). In a chain, the
            // first call names the place (`c[a..b].iter_mut()`: its items, `v.drain(..)`:
            // all of `v`); the calls after it act on what that returned. One that keeps
            // its receiver's length (`iter_mut`, `fill`, `sort`) writes its items only.
            // (One of the package's methods that takes `&self` writes nothing of it.)
            if !matches!(strip_borrows(&m.receiver), Expr::MethodCall(_)) && !super::reads_receiver(&m.method) {
                let keeps_length = super::value::mutates_receiver(&m.method) == Some(true);
                self.add(place_path(&m.receiver).map(|p| if keeps_length { p + "[]" } else { p }));
            }
            syn::visit::visit_expr_method_call(self, m);
        }
        fn visit_expr_closure(&mut self, c: &'ast syn::ExprClosure) {
            let mut names = Vec::new();
            c.inputs.iter().for_each(|p| pat_names(p, &mut names));
            self.1.push(names);
            syn::visit::visit_expr_closure(self, c);
            self.1.pop();
        }
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            macro_rules::visit_expansion(self, m);
        }
    }
    let mut w = W(Vec::new(), Vec::new());
    super::receivers::visit_tokens(body, &mut w);
    w.0.sort();
    w.0.dedup();
    w.0
}

impl<'a> Interp<'a> {
    /// Runs `f` (a loop over `body`) under the quota if `body` is quiet: past the quota,
    /// the variables it writes become opaque and the loop's value is opaque, computed
    /// from what the body reads and what a `for` loop goes `over` (`for i in range`: a
    /// rank's rows).
    pub(super) fn summarised_loop(
        &mut self,
        body: &impl ToTokens,
        over: Option<&V<'a>>,
        f: impl FnOnce(&mut Self) -> R<'a>,
    ) -> R<'a> {
        // A closure it calls may communicate on what it captured.
        let calls_closure = |me: &Self| {
            idents(body).iter().any(|i| match me.lookup(i) {
                Some(V::Closure(cl)) => me.may_communicate_deep(&*cl.0.body),
                _ => false,
            })
        };
        // (The package's functions it calls matter only where it can reach a communicator:
        // through a variable, or through the items a `for` loop binds, `for layer in
        // &self.layers` with layers that hold one.)
        let reaches_comm = |me: &Self| {
            over.is_some_and(V::has_comm) || idents(body).iter().any(|i| me.lookup(i).is_some_and(V::has_comm))
        };
        if self.may_communicate_here(body) || calls_closure(self) || (reaches_comm(self) && self.calls_deep(body)) {
            return f(self);
        }
        let key = body as *const _ as *const u8 as usize;
        let in_reach = reaches_comm(self);
        // (Everything it reads known, and nothing of the process: [`CONCRETE_QUOTA`].)
        let known = over.is_none_or(concrete)
            && idents(body).iter().all(|i| match self.lookup(i) {
                Some(V::Closure(cl)) => idents(&*cl.0.body).iter().all(|i| self.lookup(i).is_none_or(concrete)),
                Some(v) => concrete(v),
                None => true,
            })
            && self.deterministic_node(key, body);
        match self.quiet_region(key, in_reach, known, f) {
            Some(r) => r,
            None => {
                // What it writes: in its body, and in the closures it calls (which write
                // the variables they captured). The values it left behind are forgotten.
                let mut changed: Vec<String> = written(body).to_vec();
                // What it computes is computed from what it reads: the values of the
                // variables it names (so ranks that ran it on different data keep
                // different hashes, [`V::Opaque`]'s `fp`).
                let mut read: Vec<V<'a>> = over.into_iter().cloned().collect();
                let mut closures = Vec::new();
                for i in idents(body).iter() {
                    match self.lookup(i) {
                        Some(V::Closure(cl)) => {
                            let body = &*cl.0.body;
                            changed.extend(written(body).iter().cloned());
                            closures.push(body);
                        }
                        Some(v) => read.push(v.clone()),
                        None => {}
                    }
                }
                // (And what the closures it calls read.)
                for cb in &closures {
                    for i in idents(*cb).iter() {
                        if let Some(v) = self.lookup(i).filter(|v| !matches!(v, V::Closure(_))) {
                            read.push(v.clone());
                        }
                    }
                }
                // (One that can reach a communicator may read its rank.)
                if read.iter().any(V::has_comm) {
                    read.push(V::Int(self.rank as i128));
                }
                // A loop that computes from what it reads alone (no clock, entropy,
                // environment, process-wide state, at any depth of the package's code it
                // calls), all of it exact, leaves exact data: ranks that ran it on the same
                // values hold the same results (`Graph::generate`'s adjacency filled by a
                // loop past its quota).
                // (Each body's answer is remembered for the check: a loop summarised at
                // every step of an outer one asked it again each time, a quarter of a
                // check's time in a training loop.)
                let exact = read.iter().all(value::exact_class)
                    && self.deterministic_node(key, body)
                    && closures.iter().all(|cb| self.deterministic_node(closure_key(cb), *cb));
                let salt = fp_of(&read.iter().collect::<Vec<_>>());
                for k in changed {
                    self.clobber_path(&k, salt);
                    if exact {
                        let root = k.split(['.', '[']).next().unwrap_or_default();
                        if let Some(v) = self.lookup(root) {
                            value::mark_exact(v);
                        }
                    }
                }
                Ok(if exact { V::derived(&read.iter().collect::<Vec<_>>()) } else { V::data(salt) })
            }
        }
    }

    /// Runs the quiet region `key` under its quota: `Some(result)` to use as it is (an
    /// outer region's `OverQuota` included, which that region summarises), or `None`
    /// when this region is to be summarised (it ran out of its own steps, now or earlier
    /// at this world size, or met data it cannot follow, which in code that cannot
    /// communicate is just data).
    pub(super) fn quiet_region(
        &mut self,
        key: usize,
        comm_in_reach: bool,
        known: bool,
        f: impl FnOnce(&mut Self) -> R<'a>,
    ) -> Option<R<'a>> {
        let r = if overflowed(key) {
            Err(Flow::OverQuota)
        } else {
            let start = self.steps;
            let known = self.enter_quiet(known);
            self.known_depth += u32::from(known);
            let r = f(self);
            self.known_depth -= u32::from(known);
            self.quotas.pop();
            // (Steps counted once: those of a region inside another such one are in
            // the outer one's.)
            if known && self.known_depth == 0 {
                CONCRETE_SPENT.with(|s| s.set(s.get() + (self.steps - start)));
            }
            r
        };
        match r {
            Err(Flow::OverQuota) if self.outer_over() => Some(Err(Flow::OverQuota)),
            Err(Flow::OverQuota) => {
                note_overflow(key);
                None
            }
            // Where a communicator is in reach, what the check could not follow about it
            // (a call into code it cannot read that takes it) may communicate: never
            // summarised away.
            Err(Flow::Stop(Stop::Undecidable { ref what, .. })) if comm_in_reach && what.contains("communicator") => {
                Some(r)
            }
            Err(Flow::Stop(Stop::Undecidable { .. })) => None,
            r => Some(r),
        }
    }

    /// Whether `node` may communicate: a call of its own that may ([`may_communicate`]),
    /// or a call to one of the package's functions or methods that may, at any depth. A
    /// method call is taken for a call to every method of the package with its name (the
    /// receiver's type is not known here), so a name the package uses for a communicating
    /// method counts wherever it is called. Code that provably cannot communicate is data
    /// processing, whatever values it touches (a struct holding a communicator included):
    /// the check may summarise it.
    pub(super) fn may_communicate_deep<T: ToTokens>(&self, node: &T) -> bool {
        may_communicate(node) || self.calls_deep(node)
    }

    /// Whether `node` calls one of the package's functions or methods that may
    /// communicate, at any depth (by name: see [`Self::may_communicate_deep`]).
    pub(super) fn calls_deep<T: ToTokens>(&self, node: &T) -> bool {
        let key = node as *const T as usize;
        if let Some(v) = DEEP.with(|q| q.borrow().get(&key).copied()) {
            return v;
        }
        let mut seen = std::collections::HashSet::new();
        let v = self.calls_communicate(called_names(node), &mut seen);
        DEEP.with(|q| q.borrow_mut().insert(key, v));
        v
    }

    /// Whether `node`, run here and now, may communicate by a call of its own: the
    /// variables it reads from outside are judged by the values they hold now (one that
    /// `node` writes by what it may come to hold: anything).
    fn may_communicate_here<T: ToTokens>(&self, node: &T) -> bool {
        use super::receivers::Known;
        let calls = super::receivers::op_calls(node);
        // (What it writes, and what the closures it calls write.)
        let mut w = written(node).to_vec();
        for i in idents(node).iter() {
            if let Some(V::Closure(cl)) = self.lookup(i) {
                w.extend(written(&*cl.0.body).iter().cloned());
            }
        }
        calls.may_communicate(|x| match self.lookup(x) {
            None => Known::Unknown,
            Some(v) if super::receivers::plain_value(v) && !w.iter().any(|p| p.split(['.', '[']).next() == Some(x)) => {
                Known::Plain
            }
            Some(_) => Known::NotPlain,
        })
    }

    /// Whether the package's function `f` may communicate by a call of its own, its
    /// parameters judged by their declared types ([`super::receivers::param_known`]).
    fn fn_may_communicate(&self, f: &ItemFn) -> bool {
        super::receivers::op_calls(&f.block).may_communicate(|x| super::receivers::param_known(f, x))
    }

    /// The package's functions a call of `name` may run: a fn nested in the entry of that
    /// name, and every function or method of the package's files whose path ends with it
    /// (the receiver's type is not known here); each with its key.
    fn package_fns(&self, name: &str) -> Vec<(String, &'a ItemFn)> {
        // (`Type::name` for methods; `module/name` for each module's free function of
        // that name, whichever holds the bare name.)
        let (method, free) = (format!("::{name}"), format!("/{name}"));
        let nested = self.fns.get(name).map(|f| (name.to_string(), *f));
        nested
            .into_iter()
            .chain(
                self.file_fns
                    .iter()
                    .filter(|(k, _)| *k == name || k.ends_with(&method) || k.ends_with(&free))
                    .map(|(k, f)| (k.clone(), f)),
            )
            .collect()
    }

    /// Whether a method of the package named `m` may communicate, at any depth.
    pub(super) fn package_method_communicates(&self, m: &str) -> bool {
        self.calls_communicate(vec![m.to_string()], &mut std::collections::HashSet::new())
    }

    fn calls_communicate(&self, names: Vec<String>, seen: &mut std::collections::HashSet<String>) -> bool {
        for name in names {
            if name == "?" {
                return true;
            }
            for (k, f) in self.package_fns(&name) {
                if !seen.insert(k) {
                    continue;
                }
                if self.fn_may_communicate(f) || self.calls_communicate(called_names(&f.block), seen) {
                    return true;
                }
            }
        }
        false
    }

    /// Whether the helper `f` computes its result from its arguments alone, at any depth
    /// of the package's code it calls: it reads no clock, randomness, environment,
    /// file, standard input, process id, `HashMap` order (seeded per process) or
    /// process-wide state (a `static` other than the package's constants, an atomic, a
    /// thread-local, a once-cell). A summarised call of such a helper is exact data of
    /// its arguments ([`V::derived`]): the same on every rank that passes the same values.
    pub(super) fn deterministic(&self, f: &ItemFn) -> bool {
        let key = f as *const ItemFn as usize;
        if let Some(v) = PURE.with(|q| q.borrow().get(&key).copied()) {
            return v;
        }
        let mut seen = std::collections::HashSet::new();
        let v = self.reads_only_args(&f.block, &mut seen);
        PURE.with(|q| q.borrow_mut().insert(key, v));
        v
    }

    /// What a helper summarised past its quota returns when its body ends in an
    /// expression that builds a value of a known shape from its locals (a tuple, an
    /// array, `vec![..]`, a struct literal, `Grads::from([("w1", w1), ("b1", b1)])`): that
    /// expression evaluated with the parameters as the caller passed them (those the body
    /// does not reassign) and each local as data computed as the whole call's `summary`
    /// is (each its own), so the shape, keys and lengths written in it are kept. `None`
    /// where the tail names anything else, or is too long to evaluate.
    pub(super) fn summarised_shape(
        &mut self,
        f: &'a ItemFn,
        args: &[V<'a>],
        summary: &V<'a>,
        self_ty: Option<&str>,
    ) -> Option<V<'a>> {
        let tail = returned_value(f)?;
        let shaped = match tail {
            Expr::Tuple(_) | Expr::Array(_) | Expr::Struct(_) => true,
            Expr::Macro(m) => m.mac.path.is_ident("vec"),
            Expr::Call(c) => matches!(&*c.func, Expr::Path(p) if p.path.segments.len() == 2
                && matches!(last_seg(&p.path).as_str(), "from" | "from_iter")),
            _ => false,
        };
        if !shaped {
            return None;
        }
        // The body's locals (any `let` of it) and the parameters.
        struct Lets(Vec<String>);
        impl<'ast> Visit<'ast> for Lets {
            fn visit_local(&mut self, l: &'ast syn::Local) {
                pat_names(&l.pat, &mut self.0);
                syn::visit::visit_local(self, l);
            }
        }
        let mut lets = Lets(Vec::new());
        lets.visit_block(&f.block);
        let mut params: Vec<String> = Vec::new();
        for a in &f.sig.inputs {
            match a {
                FnArg::Typed(pt) => pat_names(&pt.pat, &mut params),
                FnArg::Receiver(_) => params.push("self".into()),
            }
        }
        // Every variable the tail reads (outside closures) is one of them.
        struct Free(Vec<String>);
        impl<'ast> Visit<'ast> for Free {
            fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
                if let Some(i) = p.path.get_ident() {
                    self.0.push(i.to_string());
                }
            }
            fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
            fn visit_macro(&mut self, m: &'ast syn::Macro) {
                let mut names = Vec::new();
                ident_walk(m.tokens.clone(), &mut names);
                self.0.extend(names);
            }
        }
        let mut free = Free(Vec::new());
        free.visit_expr(tail);
        let known = |i: &String| {
            lets.0.contains(i) || params.contains(i) || i.starts_with(|c: char| c.is_uppercase()) || i == "vec"
        };
        if !free.0.iter().all(known) {
            return None;
        }
        let written = written(&f.block);
        let exact = matches!(summary, V::Opaque { fp, .. } if value::is_exact(*fp));
        let data = |name: &str| {
            let salt = V::Name(name.to_string());
            if exact {
                V::derived(&[summary, &salt])
            } else {
                V::taint(&[summary, &salt])
            }
        };
        self.enter_frame();
        for (a, v) in f.sig.inputs.iter().zip(args) {
            match a {
                FnArg::Typed(pt) => {
                    let mut names = Vec::new();
                    pat_names(&pt.pat, &mut names);
                    if names.iter().any(|n| written.iter().any(|w| w == n || w.starts_with(&format!("{n}.")))) {
                        names.into_iter().for_each(|n| self.define(n.clone(), data(&n)));
                    } else {
                        self.bind(&pt.pat, v.clone());
                    }
                }
                FnArg::Receiver(_) => self.define("self".into(), v.clone()),
            }
        }
        for l in &lets.0 {
            self.define(l.clone(), data(l));
        }
        if let Some(t) = self_ty {
            self.self_ty.push(t.to_string());
        }
        self.fn_stack.push(f);
        let key = tail as *const Expr as usize;
        let r = self.quiet_region(key, false, false, |me| me.expr(tail));
        self.fn_stack.pop();
        if self_ty.is_some() {
            self.self_ty.pop();
        }
        self.leave_frame();
        match r {
            Some(Ok(v)) if !matches!(v, V::Opaque { .. }) && !v.has_comm() => Some(v),
            _ => None,
        }
    }

    /// What a helper summarised past its quota returns when its body ends in a struct
    /// literal (`System { n, a, b }`, `Ok(Self { .. })`): that struct, with the fields
    /// that are its parameters, unchanged by its body, as the caller passed them (`n`),
    /// and the others data computed as the whole call's `summary` is.
    pub(super) fn summarised_struct(
        &self,
        f: &ItemFn,
        args: &[V<'a>],
        summary: &V<'a>,
        self_ty: Option<&str>,
    ) -> Option<V<'a>> {
        let tail = returned_value(f)?;
        let Expr::Struct(s) = tail else { return None };
        if s.rest.is_some() {
            return None;
        }
        let name = s.path.segments.last()?.ident.to_string();
        let name = if name == "Self" { self_ty?.rsplit("::").next()?.to_string() } else { name };
        let written = written(&f.block);
        let param = |id: &str| {
            f.sig.inputs.iter().zip(args).find_map(|(a, v)| match a {
                FnArg::Typed(pt) if matches!(&*pt.pat, syn::Pat::Ident(i) if i.ident == id) => Some(v.clone()),
                _ => None,
            })
        };
        let exact = matches!(summary, V::Opaque { fp, .. } if value::is_exact(*fp));
        let mut fields = Vec::new();
        for fv in &s.fields {
            let key = match &fv.member {
                syn::Member::Named(i) => i.to_string(),
                syn::Member::Unnamed(i) => i.index.to_string(),
            };
            let copied = match &fv.expr {
                Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()).filter(|i| !written.contains(i)),
                _ => None,
            };
            let salt = V::Name(key.clone());
            let v = match copied.and_then(|i| param(&i)) {
                Some(v) => v,
                None if exact => V::derived(&[summary, &salt]),
                None => V::taint(&[summary, &salt]),
            };
            fields.push((key, v));
        }
        Some(V::Struct(name, fields))
    }

    /// [`Self::deterministic`] for a loop's body at `key` (its address), or a closure's
    /// ([`closure_key`]).
    fn deterministic_node(&self, key: usize, body: &impl ToTokens) -> bool {
        if let Some(v) = PURE.with(|q| q.borrow().get(&key).copied()) {
            return v;
        }
        let v = self.reads_only_args(body, &mut std::collections::HashSet::new());
        PURE.with(|q| q.borrow_mut().insert(key, v));
        v
    }

    fn reads_only_args(&self, node: &impl ToTokens, seen: &mut std::collections::HashSet<String>) -> bool {
        const OUTSIDE: [&str; 31] = [
            "thread_rng",
            "ThreadRng",
            "random",
            "from_entropy",
            "OsRng",
            "getrandom",
            "from_os_rng",
            "Instant",
            "SystemTime",
            "UNIX_EPOCH",
            "now",
            "new_v4",
            "env",
            "process",
            "getpid",
            "hostname",
            "stdin",
            "File",
            "fs",
            "read_to_string",
            "HashMap",
            "HashSet",
            "RandomState",
            "thread_local",
            "OnceLock",
            "OnceCell",
            "Lazy",
            "lazy_static",
            "static",
            "current",
            "available_parallelism",
        ];
        let ids = idents_of(node);
        if ids.iter().any(|i| {
            OUTSIDE.contains(&i.as_str()) || i.starts_with("Atomic") || i == "rng" && ids.iter().any(|j| j == "rand")
        }) {
            return false;
        }
        // An upper-case name that is not one of the package's constants may be a `static`
        // (not a primitive type's constant: `f64::INFINITY`, `u64::MAX`, `consts::PI`).
        let mut assoc = Vec::new();
        assoc_consts(node.to_token_stream(), &mut assoc);
        let statics = ids.iter().any(|i| {
            i.len() > 1
                && i.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                && i.chars().next().is_some_and(|c| c.is_ascii_uppercase())
                && !self.consts.contains_key(i)
                && !assoc.contains(i)
        });
        if statics {
            return false;
        }
        for name in called_names(node) {
            for (k, f) in self.package_fns(&name) {
                if seen.insert(k) && !self.reads_only_args(&f.block, seen) {
                    return false;
                }
            }
        }
        true
    }

    /// Whether a call to the helper `f` with `args` may be summarised: given no
    /// communicator, it calls no op itself; given one (`&self` of a struct holding one),
    /// it cannot communicate at any depth ([`Self::may_communicate_deep`]) and its
    /// result's type holds none (a constructor's struct is followed whole, or its
    /// communicators would be lost).
    pub(super) fn quiet_helper(&self, f: &ItemFn, args: &[V<'a>]) -> bool {
        // A closure it is given may communicate when called (`best_of(reps, ||
        // exchange(&world, &keys))`): then neither may the helper be summarised.
        if args.iter().any(|a| matches!(a, V::Closure(cl) if self.may_communicate_deep(&*cl.0.body))) {
            return false;
        }
        if !args.iter().any(V::has_comm) {
            // Nothing to communicate on (a communicator comes only through its arguments).
            return !self.fn_may_communicate(f);
        }
        !self.fn_may_communicate(f) && !self.calls_deep(&f.block) && super::eval::plain_type(&f.sig.output)
    }

    /// Starts a quiet region: [`QUOTA`] steps, or [`NESTED_QUOTA`] inside another
    /// (never past the outer one's limit); [`CONCRETE_QUOTA`] for one that reads only
    /// known values (`known`) while the check's [`CONCRETE_BUDGET`] lasts. Whether it
    /// got that.
    pub(super) fn enter_quiet(&mut self, known: bool) -> bool {
        let left = CONCRETE_BUDGET.saturating_sub(CONCRETE_SPENT.with(|s| s.get()));
        let big = known && left > QUOTA;
        let own = if big {
            CONCRETE_QUOTA.min(left)
        } else if self.quotas.is_empty() {
            QUOTA
        } else {
            NESTED_QUOTA
        };
        let limit = match self.quotas.last() {
            // (Inside another, what the outer one has left but a reserve, half of it up to
            // [`QUOTA`]: past it, this one is summarised alone and the outer one still
            // finishes, keeping what it computes itself (`init()`'s list of layers whose
            // weights an `Rng` made); and a helper the outer one calls row by row gets
            // as much each time, not half of the last one's share.)
            Some(&outer) if big => {
                let left = outer.saturating_sub(self.steps);
                self.steps + own.min(left - (left / 2).min(QUOTA))
            }
            Some(&outer) => outer.min(self.steps + own),
            None => self.steps + own,
        };
        self.quotas.push(limit);
        big
    }

    /// Whether an `OverQuota` that ended a region belongs to an outer region (which must
    /// then be summarised as a whole).
    pub(super) fn outer_over(&self) -> bool {
        self.quotas.last().is_some_and(|&q| self.steps > q)
    }
}

/// Whether a parameter's type lends something mutably (`&mut T`, `Option<&mut T>`,
/// `impl FnMut`).
pub(super) fn lends_mut_type(t: &syn::Type) -> bool {
    struct Find(bool);
    impl<'ast> Visit<'ast> for Find {
        fn visit_type_reference(&mut self, r: &'ast syn::TypeReference) {
            self.0 |= r.mutability.is_some();
            syn::visit::visit_type_reference(self, r);
        }
        fn visit_type_ptr(&mut self, p: &'ast syn::TypePtr) {
            self.0 |= p.mutability.is_some();
        }
    }
    let mut f = Find(false);
    f.visit_type(t);
    f.0
}

/// Whether `op` assigns its left side (`+=`, `-=`, `<<=`, …).
pub(super) fn is_compound_assign(op: &syn::BinOp) -> bool {
    use syn::BinOp::*;
    matches!(
        op,
        AddAssign(_)
            | SubAssign(_)
            | MulAssign(_)
            | DivAssign(_)
            | RemAssign(_)
            | BitAndAssign(_)
            | BitOrAssign(_)
            | BitXorAssign(_)
            | ShlAssign(_)
            | ShrAssign(_)
    )
}

/// The place an expression writes into, as a variable and its fields (`self.next` for
/// `self.next[i]`, `&mut self.next[..]`, `self.next.as_mut_slice()`).
/// [`place_path`], for a receiver passed to a method (`km`, `self.model`).
pub(super) fn place_path_of(e: &Expr) -> Option<String> {
    place_path(e).filter(|p| !p.contains("[]"))
}

/// `e` without the parentheses and borrows around it.
fn strip_borrows(e: &Expr) -> &Expr {
    match e {
        Expr::Reference(r) => strip_borrows(&r.expr),
        Expr::Paren(p) => strip_borrows(&p.expr),
        Expr::Group(g) => strip_borrows(&g.expr),
        _ => e,
    }
}

fn place_path(e: &Expr) -> Option<String> {
    match e {
        Expr::Path(p) if p.qself.is_none() => p.path.get_ident().map(|i| i.to_string()),
        Expr::Reference(r) => place_path(&r.expr),
        Expr::Paren(p) => place_path(&p.expr),
        Expr::Group(g) => place_path(&g.expr),
        // (Marked, once per level: a write through an index changes items, not the
        // length. A range is a view of the same level: `c[a..b].iter_mut()` writes `c`'s
        // items.)
        Expr::Index(i) if matches!(strip_borrows(&i.index), Expr::Range(_)) => place_path(&i.expr),
        Expr::Index(i) => place_path(&i.expr).map(|p| p + "[]"),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => place_path(&u.expr),
        Expr::Field(f) => {
            let base = place_path(&f.base)?;
            let base = base.trim_end_matches("[]");
            match &f.member {
                syn::Member::Named(m) => Some(format!("{base}.{m}")),
                syn::Member::Unnamed(i) => Some(format!("{base}.{}", i.index)),
            }
        }
        _ => place_root(e),
    }
}

/// The value a helper's body ends in: its tail expression, inside `Ok(..)` when it is
/// wrapped in one (`Ok(Self { .. })`).
fn returned_value(f: &ItemFn) -> Option<&Expr> {
    let Some(syn::Stmt::Expr(tail, None)) = f.block.stmts.last() else { return None };
    match tail {
        Expr::Call(c) if matches!(&*c.func, Expr::Path(p) if p.path.is_ident("Ok")) && c.args.len() == 1 => {
            Some(&c.args[0])
        }
        _ => Some(tail),
    }
}

/// The key under which [`Interp::deterministic_node`] remembers a closure body's answer:
/// its address with the low bit set, so that it never meets a loop body's or a helper's
/// (addresses of syntax nodes are aligned), even where the closure's body is a loop
/// whose block sits at the same address.
fn closure_key(body: &&syn::Expr) -> usize {
    (*body as *const syn::Expr as usize) | 1
}
