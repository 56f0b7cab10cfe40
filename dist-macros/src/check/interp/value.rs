//! The checker's values (`V`), control flow (`Flow`), and how a run ends; arithmetic
//! and conversions on values.

use super::super::trace::Site;
use super::*;
use proc_macro2::TokenStream;
use std::collections::HashMap;
use syn::{BinOp, Block, Expr, Lit, Pat, UnOp};

/// A value, as far as the communication pattern needs it.
#[derive(Clone, Debug, PartialEq)]
pub enum V<'a> {
    Int(i128),
    /// A float the check knows (`(n as f64).sqrt()`, `len as f64 / 2.0`); `true` when it
    /// is the same on every rank (a literal, a float type's constant, computed from those
    /// alone), `false` when it may be the rank's own (`rank as f64`), as an `Int` may.
    Float(f64, bool),
    Bool(bool),
    Unit,
    /// A communicator: index into [`Interp::comms`].
    Comm(usize),
    /// The `b` of `comm.batch(|b| ..)`: the communicator it posts on.
    Batch(usize),
    /// Pending request ids (an `isend`/`irecv` handle).
    Req(Vec<usize>),
    /// A tag's identity: `#3` for `Tag::new(3)`, else the path that names it.
    Tag(String),
    /// A path the interpreter cannot see into (a module-level const, a unit struct).
    Name(String),
    Tuple(Vec<V<'a>>),
    /// Shared: reading a list (a buffer of up to 1024 items) copies a pointer.
    List(std::rc::Rc<Vec<V<'a>>>),
    Range(i128, i128),
    Opt(Option<Box<V<'a>>>),
    /// `Err(..)`: returning it ends the rank with an error.
    Err,
    Closure(Closure<'a>),
    /// A struct value (`ParallelState { dp, tp }`, a tuple struct's fields as "0", "1"):
    /// its type's name and its fields, followed like variables.
    Struct(String, Vec<(String, V<'a>)>),
    /// The `Status` of a receive from any source: its sender's communicator rank when
    /// the check resolved it, and its count where the message is known
    /// (`messages.rs`).
    Status(Option<i128>, Option<i128>),
    /// Unknown data; `comm` when it may hold a communicator (a helper's return value).
    /// `fp` is how it was computed: a hash of the known values it was computed from
    /// (integers such as the rank's block bounds, the peer and tag of the receive that
    /// filled it, the rank that a scatter or all-to-all delivered it to), 0 for nothing
    /// known. Two ranks whose `fp` differ at the same place computed the data from
    /// different inputs: it differs from rank to rank, as far as the check can tell,
    /// and a condition on it may go one way on one rank and the other way on another
    /// ([`super::local_decision`]). Equal `fp` proves nothing.
    Opaque {
        comm: bool,
        fp: u64,
    },
    /// Read from the program's inputs (`std::env::args`, `std::env::var`, a file): unknown,
    /// but the same on every rank, which all run one program with one command line and
    /// environment under the launcher. Used as a number (`.parse()`, arithmetic, a
    /// range's end, a communicator method's argument) it is the run's sample
    /// (`interp::set_uniform_sample`): each world size is checked with the inputs' numbers
    /// 1, 2 and 3, so a loop counted by `--steps` runs once and several times, and a
    /// `--tp` flag shapes the mesh.
    Uniform,
    /// Data that is the same on every rank, unknown to the check: what a collective that
    /// every rank joins leaves in its buffers (`all_reduce`, `broadcast`, `all_gather` on
    /// a communicator of all the ranks), a float literal, and what is computed from such
    /// values and the program's inputs alone. A condition on it (a converged residual, a
    /// `--batched` flag) takes the same branch on every rank: the check decides it by
    /// this run's pattern (`interp::set_agreed_mode`) instead of giving up.
    Agreed,
}

impl<'a> V<'a> {
    pub(super) fn list(items: Vec<V<'a>>) -> V<'a> {
        V::List(std::rc::Rc::new(items))
    }
    pub(super) fn opaque() -> V<'a> {
        V::Opaque { comm: false, fp: 0 }
    }
    /// Unknown data computed as `fp` says (see [`V::Opaque`]).
    pub(super) fn data(fp: u64) -> V<'a> {
        V::Opaque { comm: false, fp }
    }
    /// Whether this value is or may contain a communicator.
    pub(super) fn has_comm(&self) -> bool {
        match self {
            V::Comm(_) | V::Batch(_) | V::Opaque { comm: true, .. } => true,
            V::Tuple(v) => v.iter().any(V::has_comm),
            V::List(v) => v.iter().any(V::has_comm),
            V::Struct(_, fields) => fields.iter().any(|(_, v)| v.has_comm()),
            V::Opt(Some(v)) => v.has_comm(),
            _ => false,
        }
    }
    /// Unknown data computed from `vals`.
    pub(super) fn taint(vals: &[&V<'a>]) -> V<'a> {
        let comm = vals.iter().any(|v| v.has_comm());
        let fp = if comm { 0 } else { fp_of(vals) };
        relay(vals, fp);
        V::Opaque { comm, fp }
    }
}

impl<'a> V<'a> {
    /// Unknown data computed from `vals` by a deterministic operation the check knows
    /// (arithmetic, a comparison, an item picked by index, a method of the standard
    /// library on numbers or lists). Where every one of `vals` is itself known, the same
    /// on every rank, or such data ([`exact_class`]), the result's `fp` is *exact*: it
    /// determines the value, so ranks whose `fp` agree at one place hold the same value
    /// there ([`is_exact`]): a condition on it is decided alike on those ranks instead of
    /// being left not followed (`counts[c] > 0` with `counts` reduced over all ranks and
    /// `c` a loop counter). A call to code the check cannot read is never exact.
    pub(super) fn derived(vals: &[&V<'a>]) -> V<'a> {
        let comm = vals.iter().any(|v| v.has_comm());
        if comm || !vals.iter().all(|v| exact_class(v)) {
            return V::taint(vals);
        }
        // (Marked, so that no other way of computing an `fp` from the same values
        // gives it.)
        let fp = (fp_of(vals) ^ 0x9e37_79b9_7f4a_7c15) | 1;
        EXACT.with(|e| e.borrow_mut().insert(fp));
        relay(vals, fp);
        V::Opaque { comm: false, fp }
    }
}

thread_local! {
    /// The `fp`s of exact data ([`V::derived`]).
    static EXACT: std::cell::RefCell<std::collections::HashSet<u64>> = Default::default();
}

/// Whether the data with hash `fp` was computed exactly ([`V::derived`]).
pub(super) fn is_exact(fp: u64) -> bool {
    fp != 0 && EXACT.with(|e| e.borrow().contains(&fp))
}

/// Takes the data in `v` (its unknown leaves) for exact: what a deterministic region
/// computed from exact values alone left there.
pub(super) fn mark_exact(v: &V) {
    match v {
        V::Opaque { comm: false, fp } if *fp != 0 => {
            EXACT.with(|e| e.borrow_mut().insert(*fp));
        }
        V::List(l) => l.iter().for_each(mark_exact),
        V::Tuple(l) => l.iter().for_each(mark_exact),
        V::Struct(_, f) => f.iter().for_each(|(_, v)| mark_exact(v)),
        V::Opt(Some(x)) => mark_exact(x),
        _ => {}
    }
}

thread_local! {
    /// The `fp`s of data that arrived from another rank (a receive's buffer, an
    /// all-to-all's items, a scatter's part) or was computed from such data.
    static RELAYED: std::cell::RefCell<std::collections::HashSet<u64>> = Default::default();
}

/// Takes the data in `v` (its unknown leaves) for data another rank sent.
pub(super) fn mark_relayed(v: &V) {
    leaves(v, &mut 4096, &mut |fp| {
        RELAYED.with(|r| r.borrow_mut().insert(fp));
        false
    });
}

/// Whether the data with hash `fp` came from another rank, or was computed from such
/// data ([`mark_relayed`]): a condition on it may be tied to what the sender decided.
pub(super) fn is_relayed(fp: u64) -> bool {
    fp != 0 && RELAYED.with(|r| !r.borrow().is_empty() && r.borrow().contains(&fp))
}

/// Notes data `fp` computed from `vals` as relayed where any of them is.
fn relay(vals: &[&V], fp: u64) {
    if fp == 0 || RELAYED.with(|r| r.borrow().is_empty()) {
        return;
    }
    // (A bounded look at the operands' leaves: lists may hold many.)
    let mut budget = 256;
    if vals.iter().any(|v| leaves(v, &mut budget, &mut is_relayed)) {
        RELAYED.with(|r| r.borrow_mut().insert(fp));
    }
}

/// Calls `f` on the hashes of `v`'s unknown leaves until it returns `true` (then
/// `true`) or `budget` leaves were seen.
fn leaves(v: &V, budget: &mut u32, f: &mut impl FnMut(u64) -> bool) -> bool {
    if *budget == 0 {
        return false;
    }
    *budget -= 1;
    match v {
        V::Opaque { comm: false, fp } if *fp != 0 => f(*fp),
        V::List(l) => l.iter().any(|x| leaves(x, budget, f)),
        V::Tuple(l) => l.iter().any(|x| leaves(x, budget, f)),
        V::Struct(_, fs) => fs.iter().any(|(_, x)| leaves(x, budget, f)),
        V::Opt(Some(x)) => leaves(x, budget, f),
        _ => false,
    }
}

/// Forgets which hashes were exact and which relayed, and the long buffers' lengths
/// (between checks).
pub(super) fn reset_exact() {
    RELAYED.with(|r| r.borrow_mut().clear());
    EXACT.with(|e| e.borrow_mut().clear());
    super::long::reset();
}

/// Whether `v` determines what is computed from it: a known number, a value the same on
/// every rank, exact data, or a collection of those.
pub(super) fn exact_class(v: &V) -> bool {
    match v {
        V::Int(_)
        | V::Float(..)
        | V::Bool(_)
        | V::Unit
        | V::Range(..)
        | V::Agreed
        | V::Uniform
        | V::Name(_)
        | V::Tag(_) => true,
        V::Opt(None) => true,
        V::Opt(Some(x)) => exact_class(x),
        V::List(l) => l.iter().all(exact_class),
        V::Tuple(l) => l.iter().all(exact_class),
        V::Struct(_, f) => f.iter().all(|(_, v)| exact_class(v)),
        V::Opaque { comm: false, fp } => is_exact(*fp),
        _ => false,
    }
}

/// A hash of `vals` ([`V::Opaque`]'s `fp` for data computed from them): never 0.
pub(super) fn fp_of(vals: &[&V]) -> u64 {
    use std::hash::Hasher;
    let mut h = Fx::default();
    for v in vals {
        memo::fingerprint(v, &mut h);
    }
    h.finish() | 1
}

/// A closure value: the closure expression in the checked function, the frame it was
/// made in (its captured variables are that frame's: [`super::scopes::Scopes::id`]) and
/// the function that frame runs (whose module names its calls).
#[derive(Clone, Copy)]
pub struct Closure<'a>(pub(super) &'a syn::ExprClosure, pub(super) u64, pub(super) Option<&'a syn::ItemFn>);

impl std::fmt::Debug for Closure<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("closure")
    }
}

impl PartialEq for Closure<'_> {
    fn eq(&self, o: &Self) -> bool {
        std::ptr::eq(self.0, o.0)
    }
}

/// Code that may or may not run.
pub(super) enum Branch<'a> {
    Block(&'a Block),
    Expr(&'a Expr),
}

/// The bodies of the function's macros (`println!`, `assert!`, `vec!`), keyed by the
/// address of the `syn::Macro`.
pub type Macros = HashMap<usize, Box<MacroBody>>;

/// A macro body as the interpreter reads it.
pub enum MacroBody {
    /// Comma-separated expressions.
    Args(syn::punctuated::Punctuated<Expr, syn::Token![,]>),
    /// `vec![x; n]`.
    Repeat(Box<Expr>, Box<Expr>),
    /// A call of one of the package's `macro_rules!` macros: what it expands to.
    Expanded(&'static syn::Block),
}

/// Longest `vec![x; n]` or `[x; n]` materialised as a list (so `iter().enumerate()`
/// over microbatches works); longer ones are data.
pub(super) const REPEAT_BOUND: i128 = 1024;

/// Why a rank's run ended early.
#[derive(Debug)]
pub enum Stop<'a> {
    /// Communication depends on something the check cannot evaluate.
    /// `located`: `at` is in the checked function and `what` says where in a helper
    /// the construct is (see `Interp::locate_stop`).
    Undecidable { at: TokenStream, what: String, located: bool },
    /// A definite error found while running (a peer out of range).
    Invalid { site: Site<'a>, msg: String },
    /// The rank waits forever in the receive it just posted: no rank sent it the
    /// message in the last pass, which ran through (`messages.rs`). Its trace ends there.
    Blocked,
}

/// Non-local control flow while evaluating.
pub(super) enum Flow<'a> {
    Break(Option<String>, V<'a>),
    Continue(Option<String>),
    Return(V<'a>),
    /// A definite panic, or an `Err` returned: this rank fails at this size by design.
    Fail,
    Stop(Stop<'a>),
    /// A quiet region ran past its quota: it is summarised (`summary.rs`).
    OverQuota,
}

pub(super) type R<'a> = Result<V<'a>, Flow<'a>>;

/// How a rank's run ended.
pub enum Outcome<'a> {
    Done,
    Fails,
    Stop(Stop<'a>),
}

pub(super) fn lit_value<'a>(l: &Lit) -> Option<V<'a>> {
    match l {
        Lit::Int(i) => i.base10_parse::<i128>().ok().map(V::Int),
        Lit::Bool(b) => Some(V::Bool(b.value)),
        // A string literal: known by its text (so that `flag("--tp")` and `flag("--pp")`
        // are different calls), data otherwise.
        Lit::Str(t) => Some(V::Name(format!("{:?}", t.value()))),
        // A float literal: known, and the same on every rank.
        Lit::Float(f) => Some(f.base10_parse::<f64>().map_or(V::Agreed, |x| V::Float(x, true))),
        _ => None,
    }
}

pub(super) fn const_int(e: &Expr) -> Option<i128> {
    match e {
        Expr::Lit(l) => match lit_value(&l.lit)? {
            V::Int(x) => Some(x),
            _ => None,
        },
        Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => const_int(&u.expr).map(|x| -x),
        _ => None,
    }
}

/// The items of a list (shared, not copied) or a range.
pub(super) fn iter_items<'a>(v: &V<'a>) -> Option<std::rc::Rc<Vec<V<'a>>>> {
    match v {
        V::List(l) => Some(l.clone()),
        V::Range(a, b) if b - a <= LIST_BOUND => Some(std::rc::Rc::new((*a..*b.max(a)).map(V::Int).collect())),
        _ => None,
    }
}

/// `v` with every value read from the program's inputs, at any depth, taken as this
/// run's sample (an argument of a communicator method: a rank, a size, a mesh shape).
pub(super) fn sampled<'a>(v: V<'a>) -> V<'a> {
    match v {
        V::Uniform => V::Int(super::uniform_number()),
        V::List(items) if items.iter().any(|x| matches!(x, V::Uniform | V::List(_) | V::Tuple(_))) => {
            V::list(items.iter().cloned().map(sampled).collect())
        }
        V::Tuple(items) => V::Tuple(items.into_iter().map(sampled).collect()),
        v => v,
    }
}

/// Whether `v` is the same on every rank as far as the check knows without comparing
/// ranks: data the same on every rank, an input, a name, and lists, tuples, options and
/// structs of those. (A number may be the rank: not counted.)
pub(super) fn same_everywhere(v: &V) -> bool {
    match v {
        V::Agreed | V::Uniform | V::Name(_) | V::Tag(_) | V::Unit | V::Opt(None) => true,
        V::Float(_, same) => *same,
        V::List(l) => l.iter().all(same_everywhere),
        V::Tuple(l) => l.iter().all(same_everywhere),
        V::Struct(_, f) => f.iter().all(|(_, v)| same_everywhere(v)),
        V::Opt(Some(x)) => same_everywhere(x),
        _ => false,
    }
}

/// Whether the argument `e` (evaluated to `v`) is the same on every rank by its
/// construction: a literal, a constant, a value read from the program's inputs, a tag,
/// a name, or a collection of those. (A number in a variable may be a rank.)
pub(super) fn input_like(e: &Expr, v: &V) -> bool {
    let literal = |e: &Expr| match e {
        Expr::Lit(_) => true,
        Expr::Path(p) => p.path.segments.last().is_some_and(|s| {
            let t = s.ident.to_string();
            t.len() > 1 && t.chars().all(|c| c.is_uppercase() || c.is_ascii_digit() || c == '_')
        }),
        _ => false,
    };
    let e = match e {
        Expr::Reference(r) => &*r.expr,
        e => e,
    };
    same_everywhere(v) || (matches!(v, V::Int(_) | V::Bool(_)) && literal(e))
}

pub(super) fn int_list(v: &V) -> Option<Vec<i128>> {
    iter_items(v)?.iter().map(|x| if let V::Int(i) = x { Some(*i) } else { None }).collect()
}

pub(super) fn req_ids(v: &V) -> Vec<usize> {
    match v {
        V::Req(ids) => ids.clone(),
        V::List(l) => l.iter().flat_map(req_ids).collect(),
        V::Tuple(l) => l.iter().flat_map(req_ids).collect(),
        V::Struct(_, f) => f.iter().flat_map(|(_, v)| req_ids(v)).collect(),
        _ => vec![],
    }
}

pub(super) fn arith<'a>(op: &BinOp, l: &V<'a>, r: &V<'a>) -> Result<V<'a>, String> {
    use BinOp::*;
    // A value read from the program's inputs used as a number (a field of a parsed
    // command line, a length): this run's sample, the same on every rank.
    let sample = |v: &V<'a>| match v {
        V::Uniform => V::Int(super::uniform_number()),
        v => v.clone(),
    };
    let compare = matches!(op, Eq(_) | Ne(_) | Lt(_) | Le(_) | Gt(_) | Ge(_));
    // Values the same on every rank, combined with each other: the same on every rank.
    // (Two inputs compared are not taken as equal samples: which branch such a test
    // takes is decided by the run's pattern, like a reduced residual's.)
    // Two string literals (a flag against a command-line word): known.
    if let (V::Name(a), V::Name(b)) = (l, r) {
        if a.starts_with('"') && b.starts_with('"') && matches!(op, Eq(_) | Ne(_)) {
            return Ok(V::Bool((a == b) == matches!(op, Eq(_))));
        }
    }
    // Two variants of one enum held by name (`State::Idle != State::Finished`): known.
    if let (V::Name(a), V::Name(b), Eq(_) | Ne(_)) = (l, r, op) {
        if let Some(eq) = super::eval::names_equal(a, b) {
            return Ok(V::Bool(eq == matches!(op, Eq(_))));
        }
    }
    let agreed = |v: &V<'a>| matches!(v, V::Agreed | V::Uniform | V::Name(_) | V::Float(_, true));
    let known = |v: &V<'a>| matches!(v, V::Float(..));
    if agreed(l)
        && agreed(r)
        && !(known(l) && known(r))
        && (compare
            || matches!((l, r), (V::Agreed, _) | (_, V::Agreed))
            || matches!((l, r), (V::Uniform, V::Float(..)) | (V::Float(..), V::Uniform)))
    {
        return Ok(V::Agreed);
    }
    // Floats the check knows (an integer among them is one a cast gave back).
    let float = |v: &V<'a>| match v {
        V::Float(x, same) => Some((*x, *same)),
        V::Int(i) => Some((*i as f64, false)),
        _ => None,
    };
    if matches!(l, V::Float(..)) || matches!(r, V::Float(..)) {
        if let (Some((a, sa)), Some((b, sb))) = (float(l), float(r)) {
            let same = sa && sb;
            return Ok(match op {
                Add(_) => V::Float(a + b, same),
                Sub(_) => V::Float(a - b, same),
                Mul(_) => V::Float(a * b, same),
                Div(_) => V::Float(a / b, same),
                Rem(_) => V::Float(a % b, same),
                _ => compared(op, &a, &b).map_or_else(|| V::derived(&[l, r]), V::Bool),
            });
        }
    }
    if matches!((l, r), (V::Uniform, V::Int(_) | V::Uniform) | (V::Int(_), V::Uniform)) {
        return arith(op, &sample(l), &sample(r));
    }
    Ok(match (l, r) {
        (V::Int(a), V::Int(b)) => {
            let (a, b) = (*a, *b);
            match op {
                Add(_) => V::Int(a.checked_add(b).ok_or("integer overflow")?),
                Sub(_) => V::Int(a.checked_sub(b).ok_or("integer overflow")?),
                Mul(_) => V::Int(a.checked_mul(b).ok_or("integer overflow")?),
                Div(_) | Rem(_) if b == 0 => return Err("division by zero".into()),
                Div(_) => V::Int(a / b),
                Rem(_) => V::Int(a % b),
                BitAnd(_) => V::Int(a & b),
                BitOr(_) => V::Int(a | b),
                BitXor(_) => V::Int(a ^ b),
                Shl(_) if (0..64).contains(&b) => V::Int(a << b),
                Shr(_) if (0..128).contains(&b) => V::Int(a >> b),
                _ => compared(op, &a, &b).map_or_else(V::opaque, V::Bool),
            }
        }
        (V::Bool(a), V::Bool(b)) => match op {
            Eq(_) => V::Bool(a == b),
            Ne(_) => V::Bool(a != b),
            BitAnd(_) => V::Bool(a & b),
            BitOr(_) => V::Bool(a | b),
            BitXor(_) => V::Bool(a ^ b),
            _ => V::opaque(),
        },
        // `op == ReduceOp::Max`: variants the check holds by name, of one enum.
        (V::Name(a), V::Name(b)) if matches!(op, Eq(_) | Ne(_)) => match super::eval::names_equal(a, b) {
            Some(eq) => V::Bool(eq == matches!(op, Eq(_))),
            None => derived_of(op, l, r),
        },
        // A unit variant held by name beside one held as a struct (`self.state !=
        // State::Finished` where the state was built as `State::Busy(t)`): apart when
        // the variants are, equal when both are the same unit variant.
        (V::Struct(a, f), V::Name(b)) | (V::Name(b), V::Struct(a, f)) if matches!(op, Eq(_) | Ne(_)) => {
            match super::eval::names_equal(a, b) {
                Some(eq) if !eq || f.is_empty() => V::Bool(eq == matches!(op, Eq(_))),
                _ => V::derived(&[l, r]),
            }
        }
        // `action == Action::Idle`, `cfg.schedule != Schedule::GPipe`: decided when
        // both sides are known that far.
        (V::Struct(..), V::Struct(..)) if matches!(op, Eq(_) | Ne(_)) => match known_eq(l, r) {
            Some(eq) => V::Bool(eq == matches!(op, Eq(_))),
            None => V::derived(&[l, r]),
        },
        _ => derived_of(op, l, r),
    })
}

/// `l op r` for data the check computes no number for: data of both, the operands of
/// `+` and `*` in a fixed order (so `3 * c` and `c * 3` are one value).
pub(super) fn derived_of<'a>(op: &syn::BinOp, l: &V<'a>, r: &V<'a>) -> V<'a> {
    let commutes = matches!(op, BinOp::Add(_) | BinOp::Mul(_) | BinOp::AddAssign(_) | BinOp::MulAssign(_));
    if commutes && fp_of(&[l]) > fp_of(&[r]) {
        V::derived(&[r, l])
    } else {
        V::derived(&[l, r])
    }
}

/// `a op b` for a comparison operator; `None` for any other operator.
fn compared<T: PartialOrd>(op: &BinOp, a: &T, b: &T) -> Option<bool> {
    use BinOp::*;
    Some(match op {
        Eq(_) => a == b,
        Ne(_) => a != b,
        Lt(_) => a < b,
        Le(_) => a <= b,
        Gt(_) => a > b,
        Ge(_) => a >= b,
        _ => return None,
    })
}

/// Whether two values are equal, where the check knows both: variants of an enum by
/// name, then field by field; integers, booleans, lists and tuples item by item.
fn known_eq(l: &V, r: &V) -> Option<bool> {
    match (l, r) {
        (V::Int(a), V::Int(b)) => Some(a == b),
        (V::Bool(a), V::Bool(b)) => Some(a == b),
        (V::Struct(a, _), V::Struct(b, _)) if a != b => (a.contains("::") && b.contains("::")).then_some(false),
        (V::Struct(_, fa), V::Struct(_, fb)) if fa.len() == fb.len() => {
            let mut all = true;
            for ((ka, va), (kb, vb)) in fa.iter().zip(fb) {
                if ka != kb {
                    return None;
                }
                all &= known_eq(va, vb)?;
            }
            Some(all)
        }
        (V::Tuple(a), V::Tuple(b)) if a.len() == b.len() => {
            let mut all = true;
            for (x, y) in a.iter().zip(b) {
                all &= known_eq(x, y)?;
            }
            Some(all)
        }
        (V::List(a), V::List(b)) => {
            if a.len() != b.len() {
                return Some(false);
            }
            let mut all = true;
            for (x, y) in a.iter().zip(b.iter()) {
                all &= known_eq(x, y)?;
            }
            Some(all)
        }
        _ => None,
    }
}

pub(super) fn pat_names(p: &Pat, out: &mut Vec<String>) {
    match p {
        Pat::Ident(i) => {
            out.push(i.ident.to_string());
            if let Some((_, s)) = &i.subpat {
                pat_names(s, out);
            }
        }
        Pat::Tuple(t) => t.elems.iter().for_each(|x| pat_names(x, out)),
        Pat::TupleStruct(t) => t.elems.iter().for_each(|x| pat_names(x, out)),
        Pat::Struct(s) => s.fields.iter().for_each(|f| pat_names(&f.pat, out)),
        Pat::Slice(s) => s.elems.iter().for_each(|x| pat_names(x, out)),
        Pat::Or(o) => o.cases.iter().for_each(|x| pat_names(x, out)),
        Pat::Type(t) => pat_names(&t.pat, out),
        Pat::Reference(r) => pat_names(&r.pat, out),
        Pat::Paren(x) => pat_names(&x.pat, out),
        _ => {}
    }
}

/// Whether a method changes its receiver in place: `Some(true)` when it keeps the
/// length (`fill`, `sort`), `Some(false)` when it may change it (`clear`, `extend`).
/// `push` onto a list the check knows is followed exactly, so it is not here.
pub(super) fn mutates_receiver(method: &syn::Ident) -> Option<bool> {
    let m = method.to_string();
    match m.as_str() {
        "fill"
        | "fill_with"
        | "copy_from_slice"
        | "clone_from_slice"
        | "copy_within"
        | "swap"
        | "reverse"
        | "rotate_left"
        | "rotate_right"
        | "sort"
        | "sort_unstable"
        | "sort_by"
        | "sort_by_key"
        | "sort_unstable_by"
        | "sort_unstable_by_key" => Some(true),
        "clear" | "extend" | "extend_from_slice" | "insert" | "remove" | "swap_remove" | "pop" | "truncate"
        | "retain" | "retain_mut" | "drain" | "append" | "resize" | "resize_with" | "dedup" | "split_off" => {
            Some(false)
        }
        _ if m.starts_with("as_mut") || m.ends_with("_mut") => Some(true),
        _ => None,
    }
}
