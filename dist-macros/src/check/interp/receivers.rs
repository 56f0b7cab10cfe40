//! Which calls named like a communicator's operations may be one. A method called
//! `split`, `reduce`, `scan`, `send`, `broadcast` or `gather` is a communicator's
//! operation only where what it is called on may be a communicator (or a request, for
//! `wait`): `line.split(',')`, `xs.iter().copied().reduce(f64::max)`, `tx.send(v)` on a
//! channel and a model's own `self.split()` are data processing, and code made only of
//! such calls may be summarised (`summary.rs`) instead of run step by step.
//!
//! What a call is made on is judged from the syntax, by the rule written in
//! docs/static-checks.md ("Values the check follows"):
//! - a literal, arithmetic, a cast, a range, `format!(..)`, a string or number method's
//!   result (`trim()`, `len()`, `parse()`), an iterator adaptor's result (`iter()`,
//!   `map(..)`) holds no communicator;
//! - a field, an index, a reference, `clone()`, `unwrap()`, `get(..)` of a value holds
//!   one only where the value does;
//! - a variable holds one only where one of its bindings may: a `let` with a declared
//!   type that holds none (by the package's struct declarations,
//!   `collections::may_hold_comm`) or an initialiser of the kinds above does not; one
//!   bound outside the code judged is decided by the caller ([`OpCalls::may_communicate`]:
//!   a parameter's declared type, `self`'s type, or the value a variable holds now);
//! - anything else (a call of an unknown function, a closure's untyped parameter, a
//!   method of the package whose declared result may hold a communicator) may.

use super::collections::may_hold_comm;
use std::collections::HashMap;
use std::rc::Rc;
use syn::visit::Visit;
use syn::{Expr, Pat};

/// What a name outside the judged code is known to hold.
pub(super) enum Known {
    /// No communicator or request, at any depth.
    Plain,
    /// Maybe one.
    NotPlain,
    /// No such variable outside (a name only the code itself binds).
    Unknown,
}

/// The calls of one syntax node named like operations: `sure` when one of them may be an
/// operation whatever the node's surroundings hold; otherwise each remaining one is an
/// operation only if one of its names (outside variables the receiver is made from)
/// may hold a communicator. A name marked `true` is also bound inside the node: there an
/// unknown outside variable of that name is no objection.
#[derive(Default)]
pub(super) struct OpCalls {
    sure: bool,
    needs: Vec<Vec<(String, bool)>>,
}

impl OpCalls {
    /// Whether a call of the node may communicate, given what `resolve` knows of the
    /// names bound outside it.
    pub(super) fn may_communicate(&self, resolve: impl Fn(&str) -> Known) -> bool {
        self.sure
            || self.needs.iter().any(|conj| {
                conj.iter().any(|(x, bound)| match resolve(x) {
                    Known::Plain => false,
                    Known::NotPlain => true,
                    Known::Unknown => !bound,
                })
            })
    }
}

thread_local! {
    /// [`op_calls`] by the address of the syntax node, for one check.
    static CALLS: std::cell::RefCell<super::FxMap<usize, Rc<OpCalls>>> = Default::default();
    /// Names of the package's functions and methods whose declared result may hold a
    /// communicator (a `fn get(&self) -> &Comm<Tp>` makes `x.get()` no proof of data).
    static COMM_RESULTS: std::cell::RefCell<std::collections::HashSet<String>> = Default::default();
    /// Whether the package writes a conversion of its own from a list (`impl
    /// From<Vec<Task>> for Queue`): then a list's `.into()` may be that type, not the list.
    static OWN_FROM: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the package converts lists into a type of its own ([`OWN_FROM`]).
pub(super) fn own_from() -> bool {
    OWN_FROM.with(|c| c.get())
}

/// Forgets [`op_calls`]'s cache (another entry point's syntax may reuse the addresses).
pub(super) fn reset() {
    CALLS.with(|c| c.borrow_mut().clear());
}

/// Notes the package's functions (for [`COMM_RESULTS`]), at the start of a check.
pub fn note_package_fns<'f>(fns: impl IntoIterator<Item = (&'f str, &'f syn::ItemFn)>) {
    struct Nested<'n>(&'n mut std::collections::HashSet<String>);
    impl<'ast> Visit<'ast> for Nested<'_> {
        fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
            if returns_comm(&f.sig) {
                self.0.insert(f.sig.ident.to_string());
            }
            syn::visit::visit_item_fn(self, f);
        }
    }
    let mut names = std::collections::HashSet::new();
    let mut own_from = false;
    for (key, f) in fns {
        own_from |= key.ends_with("::from") && f.sig.inputs.iter().any(|a| takes_list(&f.sig, a));
        Nested(&mut names).visit_item_fn(f);
    }
    OWN_FROM.with(|c| c.set(own_from));
    COMM_RESULTS.with(|c| *c.borrow_mut() = names);
}

/// Whether a `from` takes what may be a list (`Vec<T>`, `VecDeque<T>`, a slice or an
/// array, a generic): not `impl From<dist_runtime::Error> for MyError`.
fn takes_list(sig: &syn::Signature, arg: &syn::FnArg) -> bool {
    fn list(sig: &syn::Signature, t: &syn::Type) -> bool {
        match t {
            syn::Type::Reference(r) => list(sig, &r.elem),
            syn::Type::Paren(p) => list(sig, &p.elem),
            syn::Type::Slice(_) | syn::Type::Array(_) | syn::Type::ImplTrait(_) | syn::Type::Infer(_) => true,
            syn::Type::Path(p) => p.path.segments.last().is_some_and(|s| {
                matches!(s.ident.to_string().as_str(), "Vec" | "VecDeque" | "Box" | "Rc" | "Arc" | "Cow")
                    || sig.generics.type_params().any(|g| g.ident == s.ident)
            }),
            _ => false,
        }
    }
    matches!(arg, syn::FnArg::Typed(t) if list(sig, &t.ty))
}

fn returns_comm(sig: &syn::Signature) -> bool {
    match &sig.output {
        syn::ReturnType::Default => false,
        syn::ReturnType::Type(_, t) => may_hold_comm(t),
    }
}

fn comm_result(m: &str) -> bool {
    COMM_RESULTS.with(|c| c.borrow().contains(m))
}

/// Whether `v` holds no communicator, request or closure, at any depth.
pub(super) fn plain_value(v: &super::V) -> bool {
    use super::V;
    match v {
        V::Int(_)
        | V::Float(..)
        | V::Bool(_)
        | V::Unit
        | V::Tag(_)
        | V::Range(..)
        | V::Status(..)
        | V::Uniform
        | V::Agreed
        | V::Opt(None) => true,
        V::Opaque { comm, .. } => !comm,
        V::Tuple(items) => items.iter().all(plain_value),
        V::List(items) => items.iter().all(plain_value),
        V::Struct(_, fields) => fields.iter().all(|(_, v)| plain_value(v)),
        V::Opt(Some(v)) => plain_value(v),
        V::Comm(_) | V::Batch(_) | V::Req(_) | V::Closure(_) | V::Name(_) | V::Err => false,
    }
}

/// What the parameter `name` of `f` holds, by its declared type (`self` by the type of
/// the `impl` it was read from, `#[dist_self = ".."]`); `Unknown` for other names.
pub(super) fn param_known(f: &syn::ItemFn, name: &str) -> Known {
    for arg in &f.sig.inputs {
        match arg {
            syn::FnArg::Receiver(_) if name == "self" => {
                return match self_type(f) {
                    Some(t) if !may_hold_comm(&t) => Known::Plain,
                    _ => Known::NotPlain,
                };
            }
            syn::FnArg::Typed(pt) => {
                if let Pat::Ident(pi) = &*pt.pat {
                    if pi.ident == name {
                        return if may_hold_comm(&pt.ty) { Known::NotPlain } else { Known::Plain };
                    }
                } else if pat_names(&pt.pat).iter().any(|n| n == name) {
                    return Known::NotPlain;
                }
            }
            _ => {}
        }
    }
    Known::Unknown
}

/// The type of the `impl` a method was read from.
fn self_type(f: &syn::ItemFn) -> Option<syn::Type> {
    f.attrs.iter().find(|a| a.path().is_ident("dist_self")).and_then(|a| match &a.meta {
        syn::Meta::NameValue(nv) => match &nv.value {
            Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => syn::parse_str(&s.value()).ok(),
            _ => None,
        },
        _ => None,
    })
}

/// The calls of `node` named like operations, and what decides whether each is one.
pub(super) fn op_calls<T: quote::ToTokens>(node: &T) -> Rc<OpCalls> {
    let key = node as *const T as usize;
    if let Some(c) = CALLS.with(|c| c.borrow().get(&key).cloned()) {
        return c;
    }
    let c = Rc::new(judge(node));
    CALLS.with(|m| m.borrow_mut().insert(key, c.clone()));
    c
}

fn judge(node: &impl quote::ToTokens) -> OpCalls {
    let mut binds = Binds::default();
    if !visit_tokens(node, &mut binds) {
        return OpCalls { sure: true, needs: Vec::new() };
    }
    let mut find = Find { binds: &binds, out: OpCalls::default() };
    visit_tokens(node, &mut find);
    find.out
}

/// A name's way of being bound.
enum Bind {
    /// With a declared type: whether it holds no communicator.
    Typed(bool),
    /// To this value (or a part of it: a pattern's piece).
    Of(Expr),
    /// To an item of this iterable (a `for` loop's pattern).
    Item(Expr),
    /// Some other way (an untyped closure parameter, `let x;`).
    Unknown,
}

/// The bindings of a node, by name.
#[derive(Default)]
struct Binds(HashMap<String, Vec<Bind>>);

impl Binds {
    fn add(&mut self, pat: &Pat, how: impl Fn() -> Bind) {
        for n in pat_names(pat) {
            self.0.entry(n).or_default().push(how());
        }
    }
}

/// The names a pattern binds ([`super::value::pat_names`]).
fn pat_names(p: &Pat) -> Vec<String> {
    let mut out = Vec::new();
    super::value::pat_names(p, &mut out);
    out
}

impl<'ast> Visit<'ast> for Binds {
    fn visit_local(&mut self, l: &'ast syn::Local) {
        match (&l.pat, &l.init) {
            (Pat::Type(pt), _) => {
                let plain = !may_hold_comm(&pt.ty);
                self.add(&pt.pat, || Bind::Typed(plain));
            }
            (p, Some(init)) => self.add(p, || Bind::Of((*init.expr).clone())),
            (p, None) => self.add(p, || Bind::Unknown),
        }
        syn::visit::visit_local(self, l);
    }
    fn visit_expr_for_loop(&mut self, f: &'ast syn::ExprForLoop) {
        self.add(&f.pat, || Bind::Item((*f.expr).clone()));
        syn::visit::visit_expr_for_loop(self, f);
    }
    fn visit_expr_let(&mut self, l: &'ast syn::ExprLet) {
        self.add(&l.pat, || Bind::Of((*l.expr).clone()));
        syn::visit::visit_expr_let(self, l);
    }
    fn visit_expr_match(&mut self, m: &'ast syn::ExprMatch) {
        for arm in &m.arms {
            self.add(&arm.pat, || Bind::Of((*m.expr).clone()));
        }
        syn::visit::visit_expr_match(self, m);
    }
    fn visit_expr_closure(&mut self, c: &'ast syn::ExprClosure) {
        for p in &c.inputs {
            match p {
                Pat::Type(pt) => {
                    let plain = !may_hold_comm(&pt.ty);
                    self.add(&pt.pat, || Bind::Typed(plain));
                }
                p => self.add(p, || Bind::Unknown),
            }
        }
        syn::visit::visit_expr_closure(self, c);
    }
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        for arg in &f.sig.inputs {
            if let syn::FnArg::Typed(pt) = arg {
                self.add(&pt.pat, || Bind::Unknown);
            }
        }
        syn::visit::visit_item_fn(self, f);
    }
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        super::super::macro_rules::visit_expansion(self, m);
    }
}

/// What a receiver's names must hold for it to hold no communicator: `None` where it
/// may hold one whatever they hold.
type Need = Option<Vec<(String, bool)>>;

fn join(a: Need, b: Need) -> Need {
    let (mut a, b) = (a?, b?);
    a.extend(b);
    Some(a)
}

/// Methods whose result is a number, a string, a character or their iterator, on
/// whatever they are called (`len`, `trim`, `parse`, `lines`).
const SCALAR: &[&str] = &[
    "len",
    "is_empty",
    "count",
    "sum",
    "product",
    "to_string",
    "to_lowercase",
    "to_uppercase",
    "trim",
    "trim_start",
    "trim_end",
    "trim_matches",
    "as_str",
    "as_bytes",
    "parse",
    "starts_with",
    "ends_with",
    "contains",
    "contains_key",
    "abs",
    "sqrt",
    "powi",
    "powf",
    "exp",
    "ln",
    "min",
    "max",
    "chars",
    "bytes",
    "lines",
    "split_whitespace",
    "char_indices",
    "is_some",
    "is_none",
    "is_ok",
    "is_err",
    "position",
    "to_le_bytes",
    "to_be_bytes",
    "hash",
    "eq",
    "cmp",
    "partial_cmp",
    "any",
    "all",
];

/// Iterator adaptors that yield their source's items (or pieces of them): an iterator
/// is no communicator, and its items hold one only where the source's do.
const ITEMS: &[&str] = &[
    "iter",
    "iter_mut",
    "into_iter",
    "enumerate",
    "rev",
    "skip",
    "take",
    "step_by",
    "cloned",
    "copied",
    "peekable",
    "windows",
    "chunks",
    "chunks_exact",
    "chunks_mut",
    "keys",
    "values",
    "values_mut",
    "drain",
    "zip",
    "chain",
    "cycle",
    "filter",
    "take_while",
    "skip_while",
    "inspect",
    "sorted",
];

/// Iterator adaptors whose items a closure computes: no communicator themselves, their
/// items anything.
const MAPPED: &[&str] = &["map", "filter_map", "flat_map", "map_while"];

/// Methods whose result is part of (or a copy of) the value they are called on.
const PART: &[&str] = &[
    "clone",
    "unwrap",
    "expect",
    "unwrap_or_default",
    "unwrap_or",
    "as_ref",
    "as_mut",
    "as_deref",
    "borrow",
    "borrow_mut",
    "get",
    "get_mut",
    "first",
    "last",
    "to_vec",
    "as_slice",
    "as_mut_slice",
    "to_owned",
    "next",
    "ok",
    "copied",
    "cloned",
    "split_at",
    "split_first",
    "split_last",
];

struct Find<'b> {
    binds: &'b Binds,
    out: OpCalls,
}

impl Find<'_> {
    /// What `e` (`deep`: and everything it holds) needs to hold no communicator.
    fn need(&self, e: &Expr, deep: bool, depth: u32) -> Need {
        if depth > 8 {
            return None;
        }
        let d = depth + 1;
        match e {
            Expr::Lit(_) | Expr::Binary(_) | Expr::Cast(_) | Expr::Range(_) => Some(Vec::new()),
            Expr::Unary(u) if !matches!(u.op, syn::UnOp::Deref(_)) => Some(Vec::new()),
            Expr::Unary(u) => self.need(&u.expr, deep, d),
            Expr::Paren(p) => self.need(&p.expr, deep, d),
            Expr::Group(g) => self.need(&g.expr, deep, d),
            Expr::Reference(r) => self.need(&r.expr, deep, d),
            Expr::Field(f) => self.need(&f.base, true, d),
            Expr::Index(i) => self.need(&i.expr, true, d),
            Expr::Try(t) => self.need(&t.expr, true, d),
            Expr::Tuple(t) => t.elems.iter().try_fold(Vec::new(), |acc, x| join(Some(acc), self.need(x, true, d))),
            Expr::Array(a) => a.elems.iter().try_fold(Vec::new(), |acc, x| join(Some(acc), self.need(x, true, d))),
            Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
                self.name(&p.path.segments[0].ident.to_string(), d)
            }
            Expr::Macro(m) => {
                let name = m.mac.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
                matches!(name.as_str(), "format" | "concat" | "stringify" | "env" | "include_str").then(Vec::new)
            }
            Expr::MethodCall(mc) => {
                let m = mc.method.to_string();
                if comm_result(&m) {
                    return None;
                }
                let m = m.as_str();
                // (An item or a mapped value of a receiver that holds none, or of any
                // receiver where only the result itself is asked about.)
                if SCALAR.contains(&m) || !deep && (ITEMS.contains(&m) || MAPPED.contains(&m)) {
                    Some(Vec::new())
                } else if ITEMS.contains(&m) {
                    let own = self.need(&mc.receiver, true, d);
                    match m {
                        "zip" | "chain" => mc.args.iter().fold(own, |acc, a| join(acc, self.items(a, d))),
                        _ => own,
                    }
                } else if PART.contains(&m) {
                    let own = self.need(&mc.receiver, true, d);
                    match m {
                        "unwrap_or" => mc.args.iter().fold(own, |acc, a| join(acc, self.need(a, true, d))),
                        _ => own,
                    }
                } else {
                    None
                }
            }
            Expr::Call(c) => {
                let Expr::Path(p) = &*c.func else { return None };
                let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
                let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
                match segs.as_slice() {
                    [.., "String" | "Vec" | "VecDeque" | "HashMap" | "BTreeMap" | "HashSet" | "BTreeSet", "new" | "with_capacity"] => {
                        Some(Vec::new())
                    }
                    [.., "String", "from"] => Some(Vec::new()),
                    ["Some" | "Ok"] | [.., "Box" | "Rc" | "Arc" | "RefCell" | "Cell", "new"] => {
                        c.args.iter().try_fold(Vec::new(), |acc, a| join(Some(acc), self.need(a, true, d)))
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// What the items of the iterable `e` need to hold no communicator.
    fn items(&self, e: &Expr, depth: u32) -> Need {
        let d = depth + 1;
        match e {
            Expr::Range(_) => Some(Vec::new()),
            Expr::Paren(p) => self.items(&p.expr, d),
            Expr::Reference(r) => self.items(&r.expr, d),
            Expr::MethodCall(mc) => {
                let m = mc.method.to_string();
                if comm_result(&m) {
                    None
                } else if matches!(m.as_str(), "chars" | "bytes" | "lines" | "split_whitespace" | "char_indices") {
                    Some(Vec::new())
                } else if ITEMS.contains(&m.as_str()) || m == "split" {
                    let own = self.need(&mc.receiver, true, d);
                    match m.as_str() {
                        "zip" | "chain" => mc.args.iter().fold(own, |acc, a| join(acc, self.items(a, d))),
                        _ => own,
                    }
                } else {
                    self.need(e, true, d)
                }
            }
            e => self.need(e, true, d),
        }
    }

    /// What the variable `x` needs: each of its bindings in the node's, and the outside
    /// variable of that name where there is one.
    fn name(&self, x: &str, depth: u32) -> Need {
        let Some(binds) = self.binds.0.get(x) else {
            return Some(vec![(x.to_string(), false)]);
        };
        let mut need = vec![(x.to_string(), true)];
        for b in binds {
            let more = match b {
                Bind::Typed(true) => Some(Vec::new()),
                Bind::Typed(false) | Bind::Unknown => None,
                Bind::Of(e) => self.need(e, true, depth),
                Bind::Item(e) => self.items(e, depth),
            };
            need.extend(more?);
        }
        Some(need)
    }
}

fn op_named(name: &str) -> bool {
    dist_ops::find(name).is_some() || matches!(name, "wait" | "test" | "wait_timeout")
}

impl<'ast> Visit<'ast> for Find<'_> {
    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        if op_named(&m.method.to_string()) {
            match self.need(&m.receiver, false, 0) {
                None => self.out.sure = true,
                Some(n) if n.is_empty() => {}
                Some(mut n) => {
                    n.sort();
                    n.dedup();
                    self.out.needs.push(n);
                }
            }
        }
        syn::visit::visit_expr_method_call(self, m);
    }
    fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
        if let Expr::Path(p) = &*c.func {
            let last = super::last_seg(&p.path);
            // (`wait_all(..)`, `dist::init()`, and an operation called by its path:
            // `Comm::all_reduce(&world, ..)`.)
            if matches!(last.as_str(), "wait_all" | "wait_any" | "wait_some" | "init" | "launch")
                || p.path.segments.len() >= 2 && op_named(&last)
            {
                self.out.sure = true;
            }
        }
        syn::visit::visit_expr_call(self, c);
    }
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        // One of the package's macros: what it expands to.
        if super::super::macro_rules::visit_expansion(self, m) {
            return;
        }
        // A macro's body may hold calls: look for `.op(` with `op` an operation's
        // name (a field `h.batch` or a string "--batch" is not a call).
        fn calls(ts: proc_macro2::TokenStream) -> bool {
            use proc_macro2::{Delimiter, TokenTree};
            let tokens: Vec<TokenTree> = ts.into_iter().collect();
            tokens.iter().enumerate().any(|(i, t)| match t {
                TokenTree::Group(g) => calls(g.stream()),
                TokenTree::Ident(id) => {
                    let name = id.to_string();
                    let dotted = i > 0 && matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == '.');
                    let called = matches!(tokens.get(i + 1), Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis)
                        || matches!(tokens.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == ':');
                    dotted && called && op_named(&name)
                        || (called && matches!(name.as_str(), "wait_all" | "wait_any" | "wait_some"))
                }
                _ => false,
            })
        }
        if calls(m.tokens.clone()) {
            self.out.sure = true;
        }
    }
}

/// Visits what `node`'s tokens parse as: a block, statements or an expression. (Parsed
/// from the node's own tokens only: those of a helper read from its file are
/// proc-macro2's, and must not be mixed with new tokens of the compiler's.)
pub(super) fn visit_tokens<V: for<'ast> Visit<'ast>>(node: &impl quote::ToTokens, v: &mut V) -> bool {
    use syn::parse::Parser;
    let ts = node.to_token_stream();
    if let Ok(b) = syn::parse2::<syn::Block>(ts.clone()) {
        v.visit_block(&b);
    } else if let Ok(stmts) = syn::Block::parse_within.parse2(ts.clone()) {
        stmts.iter().for_each(|s| v.visit_stmt(s));
    } else if let Ok(e) = syn::parse2::<syn::Expr>(ts) {
        v.visit_expr(&e);
    } else {
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::{op_calls, Known};

    /// Whether the block `src` may communicate, its outside names judged by `plain`.
    fn communicates(src: &str, plain: &[&str]) -> bool {
        super::reset();
        let b: syn::Block = syn::parse_str(src).expect("a block");
        op_calls(&b).may_communicate(|x| if plain.contains(&x) { Known::Plain } else { Known::Unknown })
    }

    #[test]
    fn data_processing_named_like_operations_is_data() {
        for src in [
            "{ let v = vec![1.0, 2.0]; let m = v.iter().copied().reduce(f64::max); }",
            "{ let s: &str = \"a,b\"; for p in s.split(',') {} }",
            "{ let t = format!(\"{}\", 3); let parts: Vec<_> = t.trim().split(',').collect(); }",
            "{ let xs = Vec::new(); let acc: Vec<f64> = xs.iter().scan(0.0, |s, x| { *s += x; Some(*s) }).collect(); }",
            "{ for line in text.lines() { let f = line.split('='); } }",
            "{ let k = (a + b).to_string(); k.split(':'); }",
        ] {
            assert!(!communicates(src, &[]), "{src}");
        }
    }

    #[test]
    fn what_outside_names_hold_decides() {
        // `line` and `self` from outside: data only where the caller knows them to be.
        for src in ["{ line.split(','); }", "{ let (a, b, c) = self.split(); }", "{ self.w.reduce(0); }"] {
            assert!(communicates(src, &[]), "{src}");
            assert!(!communicates(src, &["line", "self"]), "{src}");
        }
    }

    #[test]
    fn what_may_be_a_communicator_stays_an_operation() {
        for src in [
            "{ world.split(0, 0)?.barrier()?; }",
            "{ let c = world.clone(); c.barrier()?; }",
            "{ for c in comms.iter() { c.barrier()?; } }",
            "{ comms.iter().for_each(|c| { c.barrier(); }); }",
            "{ Comm::barrier(&world)?; }",
            "{ opt.cloned().unwrap().barrier()?; }",
            "{ let s = \"x\"; let s = world.clone(); s.barrier()?; }",
            "{ let r = world.isend(&b, 1, t)?; r.wait()?; }",
            "{ let c = make(); c.all_reduce(&mut x, ReduceOp::Sum)?; }",
            "{ println!(\"{:?}\", world.barrier()); }",
        ] {
            assert!(communicates(src, &["line"]), "{src}");
        }
        // A variable bound to an outside one holds what it holds.
        assert!(communicates("{ let c = world.clone(); c.barrier()?; }", &[]));
        assert!(!communicates("{ let c = xs.clone(); c.scan(0); }", &["xs"]));
    }
}
