//! The recursive core, one file per kind of syntax: `pat.rs` (patterns), `stmt.rs`
//! (blocks, speculation), `expr.rs` (expressions), `place.rs` (reads and writes of
//! places), `flow.rs` (`if`, `match`, loops, undecided conditions), `call.rs` (calls of
//! closures and the package's functions). Here: what they share.

use super::super::trace::Ev;
use super::*;
use quote::ToTokens;
use syn::{BinOp, Block, Expr, FnArg, Item, ItemFn, Pat, RangeLimits, Stmt, UnOp};

mod call;
mod expr;
mod flow;
mod pat;
pub(super) use call::reset_names_inputs;
pub(super) use pat::names_equal;
mod place;
mod stmt;

/// The name a parameter pattern binds (`x`, `mut x`, `x: &mut T`), if it is one name.
fn pat_ident(p: &Pat) -> Option<String> {
    match p {
        Pat::Ident(i) if i.subpat.is_none() => Some(i.ident.to_string()),
        Pat::Type(t) => pat_ident(&t.pat),
        _ => None,
    }
}

/// Methods that hand out a mutable view of their receiver (`x.as_mut_slice()`).
fn lends_mut(m: &syn::ExprMethodCall) -> bool {
    let name = m.method.to_string();
    name.starts_with("as_mut")
        || name.ends_with("_mut")
        || matches!(
            name.as_str(),
            "borrow_mut"
                | "deref_mut"
                // The entry API: what `map.entry(k).or_default()` hands out is in `map`.
                | "entry"
                | "or_default"
                | "or_insert"
                | "or_insert_with"
                | "or_insert_with_key"
                | "and_modify"
                | "get_or_insert"
                | "get_or_insert_with"
        )
        // (`x.get_mut(i).unwrap()`: the `&mut` an `Option` held.)
        || (matches!(name.as_str(), "unwrap" | "expect")
            && matches!(&*m.receiver, syn::Expr::MethodCall(r) if lends_mut(r)))
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
        Expr::MethodCall(m) if lends_mut(m) => place_root(&m.receiver),
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
        Expr::MethodCall(m) if lends_mut(m) => out.push(&m.receiver),
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
        // A map written through a method that may add or remove entries holds data.
        v if !keep_shape && is_map(&v) => V::data(fp_of(&[&v, &V::Int(salt as i128)])),
        // A struct keeps its communicators, requests and shape, and the numbers the
        // package never writes after building it (`super::set_written_fields`); its data
        // is forgotten.
        V::Struct(t, fields) => V::Struct(
            t.clone(),
            fields
                .into_iter()
                .map(|(k, v)| {
                    let v = forget_field(&t, &k, v, keep_shape, salt, 0, true);
                    (k, v)
                })
                .collect(),
        ),
        // What was read from the program's inputs stays the same on every rank.
        V::Uniform => V::Uniform,
        // (A buffer whose length the check holds, forgotten where the length may have
        // changed, `mem::take`, a loan to code the check cannot read: another value.)
        v @ V::Opaque { comm: false, .. } if !keep_shape && super::long::long_len(&v).is_some() => {
            V::data(fp_of(&[&v, &V::Name("forgotten".into()), &V::Int(salt as i128)]))
        }
        V::Opaque { comm: false, fp } if salt == 0 => V::data(fp),
        v if v.has_comm() => V::Opaque { comm: true, fp: 0 },
        v => V::data(fp_of(&[&v, &V::Int(salt as i128)])),
    }
}

/// A list written through `depth` levels of indexing (`x[i] = v`, `x[i].push(v)`: 1;
/// `x[i][j] = v`: 2): the lists above keep their lengths, what lies below is forgotten
/// whole (`buckets[owner].push(k)` changes the length of a bucket).
pub(super) fn forget_depth<'a>(v: V<'a>, depth: usize, salt: u64) -> V<'a> {
    match v {
        V::List(items) if depth > 0 => {
            V::list(items.iter().cloned().map(|x| forget_depth(x, depth - 1, salt)).collect())
        }
        v => forget_with(v, depth > 0, salt),
    }
}

/// An option written through a view of its content (`opt.as_mut()`, `opt.iter_mut()`):
/// whether it holds a value stays; what it holds is forgotten.
pub(super) fn forget_content<'a>(v: V<'a>, salt: u64) -> V<'a> {
    match v {
        V::Opt(Some(x)) => V::Opt(Some(Box::new(forget_with(*x, false, salt)))),
        v @ V::Opt(None) => v,
        v => forget_with(v, false, salt),
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

/// A field of a struct whose data is forgotten: `whole` when the write is into the struct
/// somewhere (an unknown write, a summarised region's), not to this field. A number or
/// flag in a field the package never assigns nor lends mutably after building the
/// struct keeps its value either way (no method changes a number in place); where the
/// write is not to the field, one that the package also never resizes keeps an input, a
/// value the same on every rank or exact data too (`DistLu { n: sys.n, .. }`'s `n`). A
/// list in a field never resized keeps its length.
fn forget_field<'a>(ty: &str, k: &str, v: V<'a>, keep_shape: bool, salt: u64, depth: usize, whole: bool) -> V<'a> {
    let fixed = !super::field_written(ty, k);
    match v {
        v @ (V::Int(_) | V::Bool(_)) if fixed => v,
        v @ (V::Uniform | V::Agreed | V::Name(_) | V::Opaque { comm: false, .. })
            if whole && fixed && !super::field_resized(ty, k) =>
        {
            v
        }
        v @ V::List(_) if depth > 0 => forget_depth(v, depth, salt),
        v @ V::List(_) if !super::field_resized(ty, k) => forget_with(v, true, salt),
        // The field itself written through a view of its content (`self.emb.as_mut()`):
        // still `Some`.
        v @ V::Opt(_) if depth > 0 => forget_content(v, salt),
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
/// Whether `v` is a map or set the check holds (its entries are not fields).
pub(super) fn is_map(v: &V) -> bool {
    matches!(v, V::Struct(t, _) if super::Coll::of(t).is_some())
}

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
        // (Its values the same on every rank are functions of the inputs alone too,
        // the same all run long: `cfg.verbose`, set by `-v` in a parser's `match`, is the
        // program's flag, not a condition that changes as a residual's does.)
        V::Opaque { comm: false, .. } | V::Agreed => V::Uniform,
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
