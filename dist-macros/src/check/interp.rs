//! An interpreter of an `#[spmd]` body for one rank of one world size.
//!
//! It evaluates what the communication pattern depends on (ranks, sizes, integer
//! arithmetic, control flow) and records each communication call as an [`Ev`]. Data
//! (buffers, floats, I/O) is opaque: it is carried as [`V::Opaque`] and never decides
//! anything. When something that communicates depends on an opaque value, the rank's
//! run stops with [`Stop::Undecidable`] and that world size is left to the run-time
//! checks.

use super::trace::{Ev, Site};
use proc_macro2::TokenStream;
use quote::ToTokens;
use std::collections::HashMap;
use syn::{BinOp, Block, Expr, ExprMethodCall, FnArg, Item, ItemFn, Lit, Pat, RangeLimits, Stmt, UnOp};

/// Evaluation steps one rank may take before the check gives up on that size.
const STEP_BUDGET: u64 = 2_000_000;
/// Iterations a `while`/`loop` may take.
const LOOP_BOUND: u64 = 100_000;
/// Longest list the interpreter materialises (ranges over ranks, peers, microbatches).
const LIST_BOUND: i128 = 1 << 16;

/// A value, as far as the communication pattern needs it.
#[derive(Clone, Debug, PartialEq)]
pub enum V<'a> {
    Int(i128),
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
    List(Vec<V<'a>>),
    Range(i128, i128),
    Opt(Option<Box<V<'a>>>),
    /// `Err(..)`: returning it ends the rank with an error.
    Err,
    Closure(Closure<'a>),
    /// Unknown data; `comm` when it may hold a communicator (a helper's return value).
    Opaque {
        comm: bool,
    },
}

impl<'a> V<'a> {
    fn opaque() -> V<'a> {
        V::Opaque { comm: false }
    }
    /// Whether this value is or may contain a communicator.
    fn has_comm(&self) -> bool {
        match self {
            V::Comm(_) | V::Batch(_) | V::Opaque { comm: true } => true,
            V::Tuple(v) | V::List(v) => v.iter().any(V::has_comm),
            V::Opt(Some(v)) => v.has_comm(),
            _ => false,
        }
    }
    fn taint(vals: &[&V<'a>]) -> V<'a> {
        V::Opaque { comm: vals.iter().any(|v| v.has_comm()) }
    }
}

/// A closure value: the closure expression in the checked function.
#[derive(Clone, Copy)]
pub struct Closure<'a>(&'a syn::ExprClosure);

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
enum Branch<'a> {
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
}

/// Longest `vec![x; n]` or `[x; n]` materialised as a list (so `iter().enumerate()`
/// over microbatches works); longer ones are data.
const REPEAT_BOUND: i128 = 1024;

/// Why a rank's run ended early.
#[derive(Debug)]
pub enum Stop<'a> {
    /// Communication depends on something the check cannot evaluate.
    Undecidable { at: TokenStream, what: String },
    /// A definite error found while running (a peer out of range).
    Invalid { site: Site<'a>, msg: String },
}

/// Non-local control flow while evaluating.
enum Flow<'a> {
    Break(Option<String>, V<'a>),
    Continue(Option<String>),
    Return(V<'a>),
    /// A definite panic, or an `Err` returned: this rank fails at this size by design.
    Fail,
    Stop(Stop<'a>),
}

type R<'a> = Result<V<'a>, Flow<'a>>;

/// How a rank's run ended.
pub enum Outcome<'a> {
    Done,
    Fails,
    Stop(Stop<'a>),
}

/// A communicator as one rank sees it.
#[derive(Clone, Debug)]
pub struct CommInst {
    /// Identity shared by every member: parent key, creation index, and the color/part.
    pub key: String,
    /// The group marker's name (`World`, `Tp`), for messages.
    pub group: String,
    /// World ranks of the members in rank order; `None` while a split is unresolved.
    pub members: Option<Vec<usize>>,
    /// Communicators created from this one so far.
    children: usize,
}

/// One `split` call seen on this rank: (parent key, creation index), this rank's number
/// in the parent, and its (color, key).
pub type SplitSeen = ((String, usize), usize, (i128, i128));

/// What each rank passed to each `split`: `(parent key, creation index)` → per parent
/// rank `(color, key)`. Filled by one pass, read by the next.
pub type Splits = HashMap<(String, usize), HashMap<usize, (i128, i128)>>;

pub struct Interp<'a> {
    pub rank: usize,
    pub size: usize,
    scopes: Vec<HashMap<String, V<'a>>>,
    pub comms: Vec<CommInst>,
    pub events: Vec<Ev<'a>>,
    next_id: usize,
    fns: HashMap<String, &'a ItemFn>,
    /// Free functions of the same source file, checked inline when called.
    file_fns: &'a HashMap<String, ItemFn>,
    /// Values of the `const` items of the same source file (`STEPS`, `ACT`).
    consts: HashMap<String, V<'a>>,
    /// Calls into file helpers under way, outermost first.
    via: Vec<(&'a Expr, &'a syn::Ident)>,
    /// Macro bodies parsed as comma-separated expressions, by the macro's address.
    macros: &'a Macros,
    splits_in: &'a Splits,
    pub splits_out: Vec<SplitSeen>,
    /// A split's membership was unknown in this pass: run again with `splits_out`.
    pub needs_another_pass: bool,
    steps: u64,
    /// While evaluating a branch whose condition is opaque: communication there is undecidable.
    speculative: u32,
}

fn undecidable<'a>(at: &impl ToTokens, what: impl Into<String>) -> Flow<'a> {
    Flow::Stop(Stop::Undecidable { at: at.to_token_stream(), what: what.into() })
}

fn path_str(p: &syn::Path) -> String {
    p.segments.iter().map(|s| s.ident.to_string()).collect::<Vec<_>>().join("::")
}

fn last_seg(p: &syn::Path) -> String {
    p.segments.last().map(|s| s.ident.to_string()).unwrap_or_default()
}

impl<'a> Interp<'a> {
    pub fn new(
        rank: usize,
        size: usize,
        splits_in: &'a Splits,
        macros: &'a Macros,
        file_fns: &'a HashMap<String, ItemFn>,
        consts: HashMap<String, V<'a>>,
    ) -> Self {
        Interp {
            rank,
            size,
            scopes: vec![HashMap::new()],
            comms: vec![CommInst {
                key: "world".into(),
                group: "World".into(),
                members: Some((0..size).collect()),
                children: 0,
            }],
            events: Vec::new(),
            next_id: 0,
            fns: HashMap::new(),
            file_fns,
            consts,
            via: Vec::new(),
            macros,
            splits_in,
            splits_out: Vec::new(),
            needs_another_pass: false,
            steps: 0,
            speculative: 0,
        }
    }

    /// Runs `f` with its communicator parameter bound to the world.
    pub fn run(&mut self, f: &'a ItemFn) -> Outcome<'a> {
        if let Some(FnArg::Typed(pt)) = f.sig.inputs.first() {
            if self.bind(&pt.pat, V::Comm(0)) != Some(true) {
                return Outcome::Stop(Stop::Undecidable {
                    at: pt.pat.to_token_stream(),
                    what: "a parameter pattern other than a name".into(),
                });
            }
        }
        match self.block(&f.block) {
            Ok(V::Err) | Err(Flow::Fail) => Outcome::Fails,
            Ok(_) | Err(Flow::Break(..)) | Err(Flow::Continue(_)) => Outcome::Done,
            Err(Flow::Return(v)) => {
                if v == V::Err {
                    Outcome::Fails
                } else {
                    Outcome::Done
                }
            }
            Err(Flow::Stop(s)) => Outcome::Stop(s),
        }
    }

    // ------------------------------------------------------------ scopes

    fn lookup(&self, name: &str) -> Option<&V<'a>> {
        self.scopes.iter().rev().find_map(|s| s.get(name)).or_else(|| self.consts.get(name))
    }

    fn define(&mut self, name: String, v: V<'a>) {
        self.scopes.last_mut().expect("a scope").insert(name, v);
    }

    fn assign(&mut self, name: &str, v: V<'a>) {
        for s in self.scopes.iter_mut().rev() {
            if let Some(slot) = s.get_mut(name) {
                *slot = v;
                return;
            }
        }
    }

    fn scoped<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        self.scopes.push(HashMap::new());
        let r = f(self);
        self.scopes.pop();
        r
    }

    fn tick(&mut self, at: &impl ToTokens) -> Result<(), Flow<'a>> {
        self.steps += 1;
        if self.steps > STEP_BUDGET {
            return Err(undecidable(at, format!("more than {STEP_BUDGET} evaluation steps")));
        }
        Ok(())
    }

    /// Where to report an event at `e`: `e` itself, or the outermost call of a file
    /// helper when `e` is inside one (its tokens carry no usable location).
    fn site(&self, e: &'a Expr) -> Site<'a> {
        match self.via.first() {
            Some((call, helper)) => Site::via(call, helper),
            None => Site::new(e),
        }
    }

    fn site_binary(&self, b: &'a syn::ExprBinary) -> Site<'a> {
        match self.via.first() {
            Some((call, helper)) => Site::via(call, helper),
            None => Site::binary(b),
        }
    }

    fn fresh_id(&mut self) -> usize {
        self.next_id += 1;
        self.next_id - 1
    }

    // ------------------------------------------------------------ patterns

    /// Matches `v` against `pat`, binding names in the current scope.
    /// `Some(true)`: matched; `Some(false)`: did not; `None`: cannot tell.
    fn bind(&mut self, pat: &Pat, v: V<'a>) -> Option<bool> {
        match pat {
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
                    (_, other) => {
                        let o = V::taint(&[&other]);
                        for p in &ts.elems {
                            self.bind_opaque(p, &o);
                        }
                        None
                    }
                }
            }
            Pat::Path(p) => match (last_seg(&p.path).as_str(), &v) {
                ("None", V::Opt(x)) => Some(x.is_none()),
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
    fn bind_opaque(&mut self, pat: &Pat, o: &V<'a>) {
        let mut names = Vec::new();
        pat_names(pat, &mut names);
        for n in names {
            self.define(n, o.clone());
        }
    }

    // ------------------------------------------------------------ statements

    fn block(&mut self, b: &'a Block) -> R<'a> {
        self.scoped(|me| me.stmts(&b.stmts))
    }

    fn stmts(&mut self, stmts: &'a [Stmt]) -> R<'a> {
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
    fn speculate(&mut self, branches: &[Branch<'a>], at: &impl ToTokens) -> Result<(), Flow<'a>> {
        let before_scopes = self.scopes.clone();
        let (ne, nc) = (self.events.len(), self.comms.len());
        let mut changed: Vec<String> = Vec::new();
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
                Ok(_) | Err(Flow::Fail) => {}
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
            for (depth, s) in self.scopes.iter().enumerate() {
                for (k, v) in s {
                    if before_scopes.get(depth).and_then(|b| b.get(k)) != Some(v) {
                        changed.push(k.clone());
                    }
                }
            }
        }
        self.scopes = before_scopes;
        for k in changed {
            let taint = self.lookup(&k).map(|v| v.has_comm()).unwrap_or(false);
            self.assign(&k, V::Opaque { comm: taint });
        }
        Ok(())
    }

    // ------------------------------------------------------------ expressions

    fn expr(&mut self, e: &'a Expr) -> R<'a> {
        self.tick(e)?;
        match e {
            Expr::Lit(l) => Ok(lit_value(&l.lit).unwrap_or(V::opaque())),
            Expr::Path(p) => Ok(self.path(&p.path)),
            Expr::Paren(p) => self.expr(&p.expr),
            Expr::Group(g) => self.expr(&g.expr),
            Expr::Reference(r) => self.expr(&r.expr),
            Expr::Cast(c) => self.expr(&c.expr),
            Expr::Block(b) => self.labeled_block(b.label.as_ref(), &b.block),
            Expr::Unsafe(u) => self.block(&u.block),
            Expr::Unary(u) => {
                let v = self.expr(&u.expr)?;
                Ok(match (&u.op, v) {
                    (UnOp::Neg(_), V::Int(x)) => V::Int(-x),
                    (UnOp::Not(_), V::Bool(b)) => V::Bool(!b),
                    (UnOp::Not(_), V::Int(x)) => V::Int(!x),
                    (UnOp::Deref(_), v) => v,
                    (_, v) => V::taint(&[&v]),
                })
            }
            Expr::Binary(b) => self.binary(b),
            Expr::Tuple(t) => {
                let mut out = Vec::new();
                for x in &t.elems {
                    out.push(self.expr(x)?);
                }
                Ok(if out.is_empty() { V::Unit } else { V::Tuple(out) })
            }
            Expr::Array(a) => {
                let mut out = Vec::new();
                for x in &a.elems {
                    out.push(self.expr(x)?);
                }
                Ok(V::List(out))
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
                    _ => V::opaque(),
                })
            }
            Expr::Field(f) => {
                let base = self.expr(&f.base)?;
                Ok(match (&f.member, base) {
                    (syn::Member::Unnamed(i), V::Tuple(items)) => {
                        items.get(i.index as usize).cloned().unwrap_or(V::opaque())
                    }
                    (_, b) => V::taint(&[&b]),
                })
            }
            Expr::Index(ix) => {
                let base = self.expr(&ix.expr)?;
                let i = self.expr(&ix.index)?;
                Ok(match (base, i) {
                    (V::List(items), V::Int(i)) if i >= 0 && (i as usize) < items.len() => items[i as usize].clone(),
                    (V::List(items), V::Int(i)) => {
                        return Err(Flow::Stop(Stop::Invalid {
                            site: self.site(e),
                            msg: format!("index {i} is out of bounds for a list of {}", items.len()),
                        }))
                    }
                    (b, _) => V::taint(&[&b]),
                })
            }
            Expr::If(i) => self.if_expr(i),
            Expr::Match(m) => self.match_expr(m),
            Expr::Let(l) => {
                let v = self.expr(&l.expr)?;
                Ok(match self.bind(&l.pat, v) {
                    Some(b) => V::Bool(b),
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
                self.store(&a.left, v)?;
                Ok(V::Unit)
            }
            Expr::Closure(c) => Ok(V::Closure(Closure(c))),
            Expr::MethodCall(mc) => self.method(e, mc),
            Expr::Call(c) => self.call(e, c),
            Expr::Macro(m) => self.mac(&m.mac),
            Expr::Struct(s) => {
                let mut vals = Vec::new();
                for f in &s.fields {
                    vals.push(self.expr(&f.expr)?);
                }
                if let Some(rest) = &s.rest {
                    vals.push(self.expr(rest)?);
                }
                Ok(V::taint(&vals.iter().collect::<Vec<_>>()))
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

    fn path(&self, p: &syn::Path) -> V<'a> {
        if p.segments.len() == 1 {
            let name = p.segments[0].ident.to_string();
            if let Some(v) = self.lookup(&name) {
                return v.clone();
            }
            if name == "None" {
                return V::Opt(None);
            }
            if self.fns.contains_key(&name) {
                return V::Name(name);
            }
        }
        let s = path_str(p);
        match s.as_str() {
            "usize::MAX" | "u64::MAX" => V::Int(u64::MAX as i128),
            "u32::MAX" => V::Int(u32::MAX as i128),
            "i32::MAX" => V::Int(i32::MAX as i128),
            "i64::MAX" => V::Int(i64::MAX as i128),
            "usize::MIN" | "u32::MIN" | "u64::MIN" => V::Int(0),
            _ if s.ends_with("ReduceOp::Sum")
                || s.ends_with("ReduceOp::Prod")
                || s.ends_with("ReduceOp::Max")
                || s.ends_with("ReduceOp::Min")
                || s.ends_with("ReduceOp::Avg") =>
            {
                V::Name(last_seg(p))
            }
            _ => V::Name(s),
        }
    }

    /// `x = v`, `x += v`: only plain names are tracked.
    fn store(&mut self, place: &'a Expr, v: V<'a>) -> Result<(), Flow<'a>> {
        match place {
            Expr::Path(p) if p.path.segments.len() == 1 => {
                self.assign(&p.path.segments[0].ident.to_string(), v);
                Ok(())
            }
            Expr::Unary(u) if matches!(u.op, UnOp::Deref(_)) => self.store(&u.expr, v),
            Expr::Paren(p) => self.store(&p.expr, v),
            other => {
                // `a[i] = ..`, `s.f = ..`: the place is data; evaluate its parts for effects.
                if v.has_comm() {
                    return Err(undecidable(other, "a communicator stored in a field or element"));
                }
                Ok(())
            }
        }
    }

    fn binary(&mut self, b: &'a syn::ExprBinary) -> R<'a> {
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
            return Ok(match (&b.op, l, r) {
                (_, V::Bool(_), V::Bool(y)) => V::Bool(y),
                (And(_), _, V::Bool(false)) => V::Bool(false),
                (Or(_), _, V::Bool(true)) => V::Bool(true),
                _ => V::opaque(),
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
        let v = arith(&op, &l, &r).map_err(|msg| Flow::Stop(Stop::Invalid { site: self.site_binary(b), msg }))?;
        if compound.is_some() {
            self.store(&b.left, v)?;
            return Ok(V::Unit);
        }
        Ok(v)
    }

    fn labeled_block(&mut self, label: Option<&syn::Label>, b: &'a Block) -> R<'a> {
        match self.block(b) {
            Err(Flow::Break(Some(l), v)) if label.is_some_and(|x| x.name.ident == l) => Ok(v),
            r => r,
        }
    }

    fn if_expr(&mut self, i: &'a syn::ExprIf) -> R<'a> {
        self.scoped(|me| {
            let c = me.expr(&i.cond)?;
            match c {
                V::Bool(true) => me.block(&i.then_branch),
                V::Bool(false) => match &i.else_branch {
                    Some((_, e)) => me.expr(e),
                    None => Ok(V::Unit),
                },
                _ => {
                    let mut branches = vec![Branch::Block(&i.then_branch)];
                    if let Some((_, e)) = &i.else_branch {
                        branches.push(Branch::Expr(e));
                    }
                    me.speculate(&branches, i)?;
                    Ok(V::opaque())
                }
            }
        })
    }

    fn match_expr(&mut self, m: &'a syn::ExprMatch) -> R<'a> {
        let v = self.expr(&m.expr)?;
        let mut unknown: Vec<Branch<'a>> = Vec::new();
        for arm in &m.arms {
            let r = self.scoped(|me| -> Result<Option<R<'a>>, Flow<'a>> {
                let hit = me.bind(&arm.pat, v.clone());
                let hit = match (hit, &arm.guard) {
                    (Some(true), Some((_, g))) => match me.expr(g)? {
                        V::Bool(b) => Some(b),
                        _ => None,
                    },
                    (h, _) => h,
                };
                match hit {
                    Some(true) if unknown.is_empty() => Ok(Some(me.expr(&arm.body))),
                    Some(false) => Ok(None),
                    _ => {
                        unknown.push(Branch::Expr(&arm.body));
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
        // Arms whose patterns the check cannot decide: they must not communicate.
        self.scoped(|me| {
            let o = V::taint(&[&v]);
            for arm in &m.arms {
                me.bind_opaque(&arm.pat, &o);
            }
            me.speculate(&unknown, m)
        })?;
        Ok(V::opaque())
    }

    /// Iterates a loop body over `items`, handling break/continue with labels.
    fn iterate(
        &mut self,
        label: Option<&syn::Label>,
        pat: Option<&'a Pat>,
        items: impl Iterator<Item = V<'a>>,
        body: &'a Block,
    ) -> R<'a> {
        let mine =
            |l: &Option<String>| l.is_none() || label.is_some_and(|x| l.as_deref() == Some(&*x.name.ident.to_string()));
        for x in items {
            let r = self.scoped(|me| {
                if let Some(p) = pat {
                    me.bind(p, x);
                }
                me.block(body)
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

    fn for_loop(&mut self, f: &'a syn::ExprForLoop) -> R<'a> {
        let it = self.expr(&f.expr)?;
        match iter_items(&it) {
            Some(items) => self.iterate(f.label.as_ref(), Some(&f.pat), items.into_iter(), &f.body),
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

    fn while_loop(&mut self, w: &'a syn::ExprWhile) -> R<'a> {
        let mine = |l: &Option<String>| {
            l.is_none() || w.label.as_ref().is_some_and(|x| l.as_deref() == Some(&*x.name.ident.to_string()))
        };
        let mut n = 0u64;
        loop {
            n += 1;
            if n > LOOP_BOUND {
                return Err(undecidable(&w.cond, format!("a `while` loop of more than {LOOP_BOUND} iterations")));
            }
            let r = self.scoped(|me| -> R<'a> {
                match me.expr(&w.cond)? {
                    V::Bool(true) => me.block(&w.body).map(|_| V::Bool(true)),
                    V::Bool(false) => Ok(V::Bool(false)),
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

    fn loop_expr(&mut self, l: &'a syn::ExprLoop) -> R<'a> {
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

    fn args(&mut self, args: &'a syn::punctuated::Punctuated<Expr, syn::Token![,]>) -> Result<Vec<V<'a>>, Flow<'a>> {
        let mut out = Vec::new();
        for a in args {
            out.push(self.expr(a)?);
        }
        Ok(out)
    }

    /// Calls a closure or nested fn with `args` bound to its parameters.
    fn apply_closure(&mut self, c: Closure<'a>, args: Vec<V<'a>>) -> R<'a> {
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

    fn apply_fn(&mut self, f: &'a ItemFn, args: Vec<V<'a>>) -> R<'a> {
        // A nested fn sees only its parameters (and other items), not the caller's locals.
        let saved = std::mem::replace(&mut self.scopes, vec![HashMap::new()]);
        for (a, v) in f.sig.inputs.iter().zip(args) {
            if let FnArg::Typed(pt) = a {
                self.bind(&pt.pat, v);
            }
        }
        let r = self.block(&f.block);
        self.scopes = saved;
        match r {
            Err(Flow::Return(v)) => Ok(v),
            r => r,
        }
    }

    fn call(&mut self, e: &'a Expr, c: &'a syn::ExprCall) -> R<'a> {
        let args = self.args(&c.args)?;
        let Expr::Path(p) = &*c.func else {
            let f = self.expr(&c.func)?;
            if let V::Closure(cl) = f {
                return self.apply_closure(cl, args);
            }
            return self.opaque_call(e, "a computed function", &args);
        };
        let name = path_str(&p.path);
        let last = last_seg(&p.path);
        if p.path.segments.len() == 1 {
            match self.lookup(&name).cloned() {
                Some(V::Closure(cl)) => return self.apply_closure(cl, args),
                Some(_) => return self.opaque_call(e, &name, &args),
                None => {}
            }
            if let Some(f) = self.fns.get(&name).copied() {
                return self.apply_fn(f, args);
            }
            if let Some(f) = self.file_fns.get(&name) {
                if self.via.len() > 16 {
                    return Err(undecidable(e, format!("calls into `{name}` nested more than 16 deep")));
                }
                self.via.push((e, &f.sig.ident));
                let r = self.apply_fn(f, args);
                self.via.pop();
                return r;
            }
        }
        match (last.as_str(), args.as_slice()) {
            ("Some", [x]) => Ok(V::Opt(Some(Box::new(x.clone())))),
            ("Ok", [x]) => Ok(x.clone()),
            ("Err", _) => Ok(V::Err),
            ("new", [V::Int(id)]) if name.ends_with("Tag::new") => Ok(V::Tag(format!("#{id}"))),
            ("min", [V::Int(a), V::Int(b)]) => Ok(V::Int(*a.min(b))),
            ("max", [V::Int(a), V::Int(b)]) => Ok(V::Int(*a.max(b))),
            ("from" | "try_from", [V::Int(a)]) => Ok(V::Int(*a)),
            ("wait_all", [v]) => {
                let ids = req_ids(v);
                self.events.push(Ev::Wait { ids, site: self.site(e), call: "wait_all" });
                Ok(V::Unit)
            }
            ("drop", [V::Req(ids)]) => {
                self.events.push(Ev::Wait { ids: ids.clone(), site: self.site(e), call: "drop" });
                Ok(V::Unit)
            }
            ("drop", _) => Ok(V::Unit),
            _ => self.opaque_call(e, &name, &args),
        }
    }

    fn opaque_call(&mut self, e: &'a Expr, name: &str, args: &[V<'a>]) -> R<'a> {
        if args.iter().any(V::has_comm) {
            return Err(undecidable(
                e,
                format!(
                    "a call to `{name}`, which takes a communicator: the check sees only functions \
                     defined in the same source file (or inside the #[spmd] function)"
                ),
            ));
        }
        Ok(V::opaque())
    }

    fn method(&mut self, e: &'a Expr, mc: &'a ExprMethodCall) -> R<'a> {
        let recv = self.expr(&mc.receiver)?;
        let m = mc.method.to_string();
        match recv {
            V::Comm(c) => return self.comm_method(e, mc, c, &m),
            V::Batch(c) if m == "send" || m == "recv" => {
                let args = self.args(&mc.args)?;
                self.post_p2p(e, c, m == "send", &args[0], &args[1], &mc.args[0], call_name(&m))?;
                return Ok(V::Unit);
            }
            V::Batch(c) if m == "size" => {
                return Ok(self.comm_size(c));
            }
            V::Req(ids) if m == "wait" => {
                self.events.push(Ev::Wait { ids, site: self.site(e), call: "wait" });
                return Ok(V::Unit);
            }
            _ => {}
        }
        let args = self.args(&mc.args)?;
        // Closures applied by iterator adapters.
        let apply = |me: &mut Self, f: &V<'a>, x: V<'a>| -> R<'a> {
            match f {
                V::Closure(c) => me.apply_closure(*c, vec![x]),
                _ => Ok(V::opaque()),
            }
        };
        // Result/Option pass-throughs: the check assumes communication succeeds.
        match (m.as_str(), &recv) {
            ("unwrap" | "expect" | "map_err" | "context" | "with_context", V::Opt(Some(x))) => return Ok((**x).clone()),
            ("unwrap" | "expect", V::Opt(None)) => return Err(Flow::Fail),
            ("unwrap" | "expect" | "map_err" | "context" | "with_context", V::Err) if m != "map_err" => {
                return Err(Flow::Fail)
            }
            (
                "unwrap" | "expect" | "map_err" | "context" | "with_context" | "clone" | "as_ref" | "borrow"
                | "to_owned",
                _,
            ) => return Ok(recv),
            ("ok_or" | "ok_or_else", V::Opt(Some(x))) => return Ok((**x).clone()),
            ("ok_or" | "ok_or_else", V::Opt(None)) => return Ok(V::Err),
            ("is_some", V::Opt(x)) => return Ok(V::Bool(x.is_some())),
            ("is_none", V::Opt(x)) => return Ok(V::Bool(x.is_none())),
            ("unwrap_or", V::Opt(x)) => return Ok(x.as_deref().cloned().unwrap_or_else(|| args[0].clone())),
            _ => {}
        }
        if let V::Int(x) = recv {
            let a = args.first();
            let r = match (m.as_str(), a) {
                ("pow", Some(V::Int(y))) => x.checked_pow(*y as u32).map(V::Int),
                ("min", Some(V::Int(y))) => Some(V::Int(x.min(*y))),
                ("max", Some(V::Int(y))) => Some(V::Int(x.max(*y))),
                ("abs", None) => Some(V::Int(x.abs())),
                ("rem_euclid", Some(V::Int(y))) if *y != 0 => Some(V::Int(x.rem_euclid(*y))),
                ("div_euclid", Some(V::Int(y))) if *y != 0 => Some(V::Int(x.div_euclid(*y))),
                ("div_ceil", Some(V::Int(y))) if *y > 0 => Some(V::Int((x + y - 1).div_euclid(*y))),
                ("is_multiple_of", Some(V::Int(y))) => Some(V::Bool(if *y == 0 { x == 0 } else { x % y == 0 })),
                ("saturating_sub", Some(V::Int(y))) => Some(V::Int((x - y).max(0))),
                ("wrapping_add" | "saturating_add", Some(V::Int(y))) => Some(V::Int(x + y)),
                ("checked_sub", Some(V::Int(y))) => {
                    Some(V::Opt(if x >= *y { Some(Box::new(V::Int(x - y))) } else { None }))
                }
                ("is_power_of_two", None) => Some(V::Bool(x > 0 && x & (x - 1) == 0)),
                ("trailing_zeros", None) => Some(V::Int(if x == 0 { 128 } else { x.trailing_zeros() as i128 })),
                ("ilog2", None) if x > 0 => Some(V::Int(127 - x.leading_zeros() as i128)),
                ("count_ones", None) => Some(V::Int(x.count_ones() as i128)),
                ("into" | "try_into" | "to_owned" | "clone", _) => Some(V::Int(x)),
                _ => None,
            };
            if let Some(r) = r {
                return Ok(r);
            }
        }
        if let Some(items) = iter_items(&recv) {
            match (m.as_str(), args.as_slice()) {
                ("iter" | "into_iter" | "iter_mut" | "copied" | "cloned" | "collect" | "to_vec" | "into_vec", _) => {
                    return Ok(V::List(items))
                }
                ("rev", _) => return Ok(V::List(items.into_iter().rev().collect())),
                ("len" | "count", _) => return Ok(V::Int(items.len() as i128)),
                ("is_empty", _) => return Ok(V::Bool(items.is_empty())),
                ("enumerate", _) => {
                    return Ok(V::List(
                        items.into_iter().enumerate().map(|(i, x)| V::Tuple(vec![V::Int(i as i128), x])).collect(),
                    ))
                }
                ("step_by", [V::Int(k)]) if *k > 0 => {
                    return Ok(V::List(items.into_iter().step_by(*k as usize).collect()))
                }
                ("skip", [V::Int(k)]) => return Ok(V::List(items.into_iter().skip(*k as usize).collect())),
                ("take", [V::Int(k)]) => return Ok(V::List(items.into_iter().take(*k as usize).collect())),
                ("contains", [x]) if items.iter().all(|i| matches!(i, V::Int(_) | V::Bool(_))) => {
                    if matches!(x, V::Int(_) | V::Bool(_)) {
                        return Ok(V::Bool(items.contains(x)));
                    }
                }
                ("first", _) => return Ok(V::Opt(items.first().cloned().map(Box::new))),
                ("last", _) => return Ok(V::Opt(items.last().cloned().map(Box::new))),
                ("sum", _) if items.iter().all(|i| matches!(i, V::Int(_))) => {
                    return Ok(V::Int(items.iter().map(|i| if let V::Int(x) = i { *x } else { 0 }).sum()))
                }
                ("position", [f]) => {
                    let f = f.clone();
                    for (i, x) in items.into_iter().enumerate() {
                        match apply(self, &f, x)? {
                            V::Bool(true) => return Ok(V::Opt(Some(Box::new(V::Int(i as i128))))),
                            V::Bool(false) => {}
                            _ => return Ok(V::opaque()),
                        }
                    }
                    return Ok(V::Opt(None));
                }
                ("map", [f]) => {
                    let f = f.clone();
                    let mut out = Vec::new();
                    for x in items {
                        out.push(apply(self, &f, x)?);
                    }
                    return Ok(V::List(out));
                }
                ("filter", [f]) => {
                    let f = f.clone();
                    let mut out = Vec::new();
                    for x in items {
                        match apply(self, &f, x.clone())? {
                            V::Bool(true) => out.push(x),
                            V::Bool(false) => {}
                            _ => return Ok(V::opaque()),
                        }
                    }
                    return Ok(V::List(out));
                }
                ("push", [x]) => {
                    if let Expr::Path(p) = &*mc.receiver {
                        if let V::List(mut l) = recv {
                            l.push(x.clone());
                            self.store_path(p, V::List(l));
                        }
                    }
                    return Ok(V::Unit);
                }
                _ => {}
            }
        }
        if m == "push" {
            // Pushing into data we cannot see: a request pushed there is lost to the check.
            if args.iter().any(|a| matches!(a, V::Req(_)) || a.has_comm()) {
                return Err(undecidable(
                    e,
                    "a request or communicator pushed into a collection the check cannot follow",
                ));
            }
        }
        if recv.has_comm() && dist_ops::find(&m).is_some_and(|o| o.class != dist_ops::Class::Group) {
            return Err(undecidable(e, format!("`.{m}(..)` on a value that may be a communicator")));
        }
        if let V::Req(_) = &recv {
            // `req.is_done()` and the like: leave pending.
            return Ok(V::opaque());
        }
        let mut all: Vec<&V> = args.iter().collect();
        all.push(&recv);
        if args.iter().any(V::has_comm) {
            return Err(undecidable(e, format!("`.{m}(..)` called with a communicator argument")));
        }
        Ok(V::taint(&all))
    }

    /// `[x; k]` and `vec![x; k]`: a list of `k` copies when `k` is small and known.
    fn repeat(&mut self, x: &'a Expr, k: &'a Expr) -> R<'a> {
        let v = self.expr(x)?;
        Ok(match self.expr(k)? {
            V::Int(k) if (0..=REPEAT_BOUND).contains(&k) => V::List(vec![v; k as usize]),
            _ => V::taint(&[&v]),
        })
    }

    fn store_path(&mut self, p: &syn::ExprPath, v: V<'a>) {
        if p.path.segments.len() == 1 {
            self.assign(&p.path.segments[0].ident.to_string(), v);
        }
    }

    fn comm_size(&mut self, c: usize) -> V<'a> {
        match &self.comms[c].members {
            Some(m) => V::Int(m.len() as i128),
            None => {
                self.needs_another_pass = true;
                V::opaque()
            }
        }
    }

    fn comm_rank(&mut self, c: usize) -> V<'a> {
        match &self.comms[c].members {
            Some(m) => V::Int(m.iter().position(|&w| w == self.rank).expect("a member") as i128),
            None => {
                self.needs_another_pass = true;
                V::opaque()
            }
        }
    }

    fn comm_method(&mut self, e: &'a Expr, mc: &'a ExprMethodCall, c: usize, m: &str) -> R<'a> {
        match m {
            "rank" => return Ok(self.comm_rank(c)),
            "size" => return Ok(self.comm_size(c)),
            // `device()` is the same communicator's NCCL side: its ops have the same names and
            // arguments and run in stream order, so they are checked like blocking host ops.
            "clone" | "as_ref" | "borrow" | "device" => return Ok(V::Comm(c)),
            "members" | "name" | "backend" | "stream" => return Ok(V::opaque()),
            // Rank translation: this rank's world rank, and the world rank of a member or
            // the member of a world rank (a `Result` at run time; `?` passes the value).
            "world_rank" => return Ok(V::Int(self.rank as i128)),
            "world_rank_of" | "group_rank_of" => {
                let args = self.args(&mc.args)?;
                let (Some(V::Int(x)), Some(members)) = (args.first(), &self.comms[c].members) else {
                    return Ok(V::opaque());
                };
                let found = if m == "world_rank_of" {
                    usize::try_from(*x).ok().and_then(|i| members.get(i).copied())
                } else {
                    members.iter().position(|&w| w as i128 == *x)
                };
                // Out of range or not a member: an error at run time, not decided here.
                return Ok(found.map_or_else(V::opaque, |v| V::Int(v as i128)));
            }
            _ => {}
        }
        if self.speculative > 0 {
            // Record it, so `speculate` sees the communication and reports it.
            self.events.push(Ev::Wait { ids: vec![], site: self.site(e), call: call_name(m) });
            return Ok(V::Unit);
        }
        if m == "batch" {
            let Some(Expr::Closure(cl)) = mc.args.first() else {
                return Err(undecidable(e, "`batch` with something other than a closure `|b| { .. }`"));
            };
            let start = self.next_id;
            self.scoped(|me| -> Result<(), Flow<'a>> {
                if let Some(p) = cl.inputs.first() {
                    me.bind(p, V::Batch(c));
                }
                me.expr(&cl.body)?;
                Ok(())
            })?;
            let ids: Vec<usize> = (start..self.next_id).collect();
            self.events.push(Ev::Wait { ids, site: self.site(e), call: "batch" });
            return Ok(V::Unit);
        }
        let args = self.args(&mc.args)?;
        match m {
            "send" | "recv" | "isend" | "irecv" => {
                let (peer, tag) = (args.first(), args.get(1));
                let (Some(peer), Some(tag)) = (peer, tag) else { return Ok(V::Unit) };
                let id = self.post_p2p(e, c, m.starts_with("send") || m == "isend", peer, tag, &mc.args[0], m)?;
                if m.starts_with('i') {
                    return Ok(V::Req(vec![id]));
                }
                self.events.push(Ev::Wait { ids: vec![id], site: self.site(e), call: call_name(m) });
                return Ok(V::Unit);
            }
            "sendrecv" => {
                if args.len() < 4 {
                    return Ok(V::Unit);
                }
                let a = self.post_p2p(e, c, true, &args[0], &args[1], &mc.args[0], "sendrecv")?;
                let b = self.post_p2p(e, c, false, &args[3], &args[1], &mc.args[3], "sendrecv")?;
                self.events.push(Ev::Wait { ids: vec![a, b], site: self.site(e), call: "sendrecv" });
                return Ok(V::Unit);
            }
            "subgroup" | "split" | "mesh2" => return self.create(e, mc, c, m, &args),
            _ => {}
        }
        // Roles of the arguments come from the op table the runtime is tested against.
        if let Some(spec) = dist_ops::find(m).filter(|o| o.class == dist_ops::Class::Collective) {
            let (ri, oi) = (spec.root, spec.reduce);
            let root = match ri.and_then(|i| args.get(i)) {
                Some(V::Int(r)) => {
                    let r = *r;
                    self.check_peer(e, c, r, "root", &mc.args[ri.expect("root index")])?;
                    Some(r)
                }
                _ => None,
            };
            let op = match oi.and_then(|i| args.get(i)) {
                Some(V::Name(n)) => Some(n.clone()),
                _ => oi.and_then(|i| mc.args.get(i)).and_then(|a| match a {
                    Expr::Call(call) => match &*call.func {
                        Expr::Path(p) => Some(last_seg(&p.path)),
                        _ => None,
                    },
                    _ => None,
                }),
            };
            let id = self.post_coll(e, c, m.trim_end_matches("_async"), root, op)?;
            if !spec.blocking {
                return Ok(V::Req(vec![id]));
            }
            self.events.push(Ev::Wait { ids: vec![id], site: self.site(e), call: call_name(m) });
            return Ok(V::Unit);
        }
        Err(undecidable(e, format!("the communicator method `{m}`")))
    }

    fn check_peer(&self, e: &'a Expr, c: usize, p: i128, what: &str, arg: &'a Expr) -> Result<(), Flow<'a>> {
        let Some(members) = &self.comms[c].members else { return Ok(()) };
        let n = members.len() as i128;
        if p < 0 || p >= n {
            let comm = &self.comms[c];
            let ranks = if n == 1 { "1 rank".to_string() } else { format!("{n} ranks") };
            let ctx = if comm.key == "world" {
                format!("the world has {ranks}")
            } else {
                format!("`{}` has {ranks} here", comm.group)
            };
            let text = arg.to_token_stream().to_string();
            let value = if text == p.to_string() { format!("{what} {p}") } else { format!("{what} `{text}` = {p}") };
            return Err(Flow::Stop(Stop::Invalid {
                site: self.site(e),
                msg: format!(
                    "{value} on rank {} at world size {} is out of range: {ctx} (0..{n}); wrap it (`% n`), \
                     guard the call, or pin the sizes this program supports with #[spmd(sizes = A..=B)]",
                    self.rank, self.size
                ),
            }));
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn post_p2p(
        &mut self,
        e: &'a Expr,
        c: usize,
        send: bool,
        peer: &V<'a>,
        tag: &V<'a>,
        arg: &'a Expr,
        call: &str,
    ) -> Result<usize, Flow<'a>> {
        let V::Int(p) = *peer else {
            return Err(undecidable(
                arg,
                format!("the peer `{}` of `{call}`, which depends on data", arg.to_token_stream()),
            ));
        };
        if self.comms[c].members.is_none() {
            self.needs_another_pass = true;
            return Ok(self.fresh_id());
        }
        self.check_peer(e, c, p, if send { "the destination" } else { "the source" }, arg)?;
        let world_peer = self.comms[c].members.as_ref().expect("resolved")[p as usize];
        let tag = match tag {
            V::Tag(t) => t.clone(),
            V::Name(n) => n.clone(),
            _ => return Err(undecidable(e, format!("the tag of `{call}`, which is not a `Tag` constant"))),
        };
        let id = self.fresh_id();
        self.events.push(Ev::P2p {
            id,
            send,
            comm: self.comms[c].key.clone(),
            group: self.comms[c].group.clone(),
            peer: world_peer,
            tag,
            site: self.site(e),
            call: call_name(call),
        });
        Ok(id)
    }

    fn post_coll(
        &mut self,
        e: &'a Expr,
        c: usize,
        kind: &str,
        root: Option<i128>,
        op: Option<String>,
    ) -> Result<usize, Flow<'a>> {
        let id = self.fresh_id();
        let Some(members) = self.comms[c].members.clone() else {
            self.needs_another_pass = true;
            return Ok(id);
        };
        self.events.push(Ev::Coll {
            id,
            comm: self.comms[c].key.clone(),
            group: self.comms[c].group.clone(),
            members,
            kind: call_name(kind),
            root,
            op,
            site: self.site(e),
        });
        Ok(id)
    }

    /// `subgroup`, `split`, `mesh2`: a collective on the parent plus the new communicators.
    fn create(&mut self, e: &'a Expr, mc: &'a ExprMethodCall, c: usize, m: &str, args: &[V<'a>]) -> R<'a> {
        let groups: Vec<String> = mc
            .turbofish
            .as_ref()
            .map(|t| t.args.iter().map(|a| a.to_token_stream().to_string()).collect())
            .unwrap_or_default();
        let group = |i: usize| groups.get(i).cloned().unwrap_or_else(|| "?".into());
        let k = self.comms[c].children;
        self.comms[c].children += 1;
        let parent = self.comms[c].key.clone();
        let Some(pmembers) = self.comms[c].members.clone() else {
            self.needs_another_pass = true;
            return Ok(V::Opaque { comm: true });
        };
        let my_local = pmembers.iter().position(|&w| w == self.rank).expect("member");
        let id = self.fresh_id();
        self.events.push(Ev::Coll {
            id,
            comm: parent.clone(),
            group: self.comms[c].group.clone(),
            members: pmembers.clone(),
            kind: call_name(m),
            root: None,
            op: None,
            site: self.site(e),
        });
        self.events.push(Ev::Wait { ids: vec![id], site: self.site(e), call: call_name(m) });
        let new = |me: &mut Self, key: String, g: String, members: Option<Vec<usize>>| -> V<'a> {
            me.comms.push(CommInst { key, group: g, members, children: 0 });
            V::Comm(me.comms.len() - 1)
        };
        match m {
            "subgroup" => {
                let Some(ranks) = args.first().and_then(int_list) else {
                    return Err(undecidable(&mc.args[0], "a subgroup rank list that depends on data"));
                };
                for &r in &ranks {
                    self.check_peer(e, c, r, "subgroup rank", &mc.args[0])?;
                }
                let mut seen = std::collections::HashSet::new();
                if let Some(d) = ranks.iter().find(|r| !seen.insert(**r)) {
                    return Err(Flow::Stop(Stop::Invalid {
                        site: self.site(e),
                        msg: format!(
                            "rank {d} appears twice in the subgroup list {ranks:?} at world size {}",
                            self.size
                        ),
                    }));
                }
                if !ranks.contains(&(my_local as i128)) {
                    return Ok(V::Opt(None));
                }
                let members: Vec<usize> = ranks.iter().map(|&r| pmembers[r as usize]).collect();
                let v = new(self, format!("{parent}/{k}:sub{members:?}"), group(0), Some(members));
                Ok(V::Opt(Some(Box::new(v))))
            }
            "split" => {
                let (Some(V::Int(color)), Some(V::Int(key))) = (args.first(), args.get(1)) else {
                    return Err(undecidable(e, "a split color or key that depends on data"));
                };
                self.splits_out.push(((parent.clone(), k), my_local, (*color, *key)));
                let members = self.splits_in.get(&(parent.clone(), k)).and_then(|t| {
                    if t.len() != pmembers.len() {
                        return None;
                    }
                    let mut same: Vec<usize> = (0..pmembers.len()).filter(|r| t[r].0 == *color).collect();
                    same.sort_by_key(|r| (t[r].1, *r));
                    Some(same.into_iter().map(|r| pmembers[r]).collect::<Vec<_>>())
                });
                if members.is_none() {
                    self.needs_another_pass = true;
                }
                Ok(new(self, format!("{parent}/{k}:c{color}"), group(0), members))
            }
            _ => {
                let (Some(V::Int(a)), Some(V::Int(b))) = (args.first(), args.get(1)) else {
                    return Err(undecidable(e, "mesh dimensions that depend on data"));
                };
                let (a, b) = (*a, *b);
                if a <= 0 || b <= 0 || (a * b) as usize != pmembers.len() {
                    return Err(Flow::Stop(Stop::Invalid {
                        site: self.site(e),
                        msg: format!(
                            "a mesh of {a} × {b} needs {} ranks, but the communicator has {} at world size {}; \
                             derive the dimensions from `size()` or pin the size with #[spmd(ranks = {})]",
                            a * b,
                            pmembers.len(),
                            self.size,
                            a * b
                        ),
                    }));
                }
                let (a, b) = (a as usize, b as usize);
                let (i, j) = (my_local / b, my_local % b);
                let col: Vec<usize> = (0..a).map(|x| pmembers[x * b + j]).collect();
                let row: Vec<usize> = (0..b).map(|y| pmembers[i * b + y]).collect();
                let ca = new(self, format!("{parent}/{k}:c{j}"), group(0), Some(col));
                let cb = new(self, format!("{parent}/{k}:r{i}"), group(1), Some(row));
                Ok(V::Tuple(vec![ca, cb]))
            }
        }
    }

    // ------------------------------------------------------------ macros

    fn mac(&mut self, m: &'a syn::Macro) -> R<'a> {
        let name = last_seg(&m.path);
        let macros = self.macros;
        let body = macros.get(&(m as *const syn::Macro as usize)).map(|b| &**b);
        let parse_args = || match body {
            Some(MacroBody::Args(a)) => Some(a),
            _ => None,
        };
        match name.as_str() {
            "println" | "print" | "eprintln" | "eprint" | "format" | "write" | "writeln" | "format_args" | "info"
            | "debug" | "warn" | "error" | "trace" | "dbg" => {
                if let Some(args) = parse_args() {
                    for a in args.iter() {
                        match a {
                            // `println!("{x}", x = ..)`: a named argument, not an assignment.
                            Expr::Assign(x) => self.expr(&x.right)?,
                            a => self.expr(a)?,
                        };
                    }
                }
                Ok(V::opaque())
            }
            "assert" | "debug_assert" => {
                let Some(args) = parse_args() else { return Ok(V::Unit) };
                match args.first().map(|a| self.expr(a)).transpose()? {
                    Some(V::Bool(false)) if self.speculative == 0 => Err(Flow::Fail),
                    _ => Ok(V::Unit),
                }
            }
            "assert_eq" | "assert_ne" | "debug_assert_eq" | "debug_assert_ne" => {
                let Some(args) = parse_args() else { return Ok(V::Unit) };
                if args.len() < 2 {
                    return Ok(V::Unit);
                }
                let a = self.expr(&args[0])?;
                let b = self.expr(&args[1])?;
                let known = matches!((&a, &b), (V::Int(_), V::Int(_)) | (V::Bool(_), V::Bool(_)));
                let eq = a == b;
                if known && (eq != name.ends_with("_eq")) && self.speculative == 0 {
                    return Err(Flow::Fail);
                }
                Ok(V::Unit)
            }
            "panic" | "unreachable" | "todo" | "unimplemented" => Err(Flow::Fail),
            "vec" => {
                if let Some(MacroBody::Repeat(x, k)) = body {
                    return self.repeat(x, k);
                }
                match parse_args() {
                    Some(args) => Ok(V::List(self.args(args)?)),
                    None => Ok(V::opaque()),
                }
            }
            _ => {
                if mentions_comm(self, &m.tokens) {
                    Err(undecidable(m, format!("the macro `{name}!` with a communicator inside")))
                } else {
                    Ok(V::opaque())
                }
            }
        }
    }
}

/// Evaluates the `const` items of the source file (in two passes, so one may use
/// another defined below it); those that are not integers, booleans or tags are left out.
pub fn eval_consts<'a>(
    consts: &'a [syn::ItemConst],
    splits: &'a Splits,
    macros: &'a Macros,
    fns: &'a HashMap<String, ItemFn>,
) -> HashMap<String, V<'a>> {
    let mut it = Interp::new(0, 1, splits, macros, fns, HashMap::new());
    for _ in 0..2 {
        for c in consts {
            match it.expr(&c.expr) {
                // A numbered tag keeps its name for messages: "#1 ACT".
                Ok(V::Tag(t)) if t.starts_with('#') && !t.contains(' ') => {
                    it.consts.insert(c.ident.to_string(), V::Tag(format!("{t} {}", c.ident)));
                }
                Ok(v @ (V::Int(_) | V::Bool(_) | V::Tag(_))) => {
                    it.consts.insert(c.ident.to_string(), v);
                }
                _ => {}
            }
        }
    }
    it.consts
}

/// The display name of an op (`send`, `all_reduce`).
fn call_name(m: &str) -> &'static str {
    match m {
        "wait" => "wait",
        "wait_all" => "wait_all",
        _ => dist_ops::find(m).map_or("communication", |o| o.name),
    }
}

/// Whether a token stream names a variable bound to a communicator.
fn mentions_comm(me: &Interp, ts: &TokenStream) -> bool {
    ts.clone().into_iter().any(|t| match t {
        proc_macro2::TokenTree::Ident(i) => me.lookup(&i.to_string()).is_some_and(V::has_comm),
        proc_macro2::TokenTree::Group(g) => mentions_comm(me, &g.stream()),
        _ => false,
    })
}

fn lit_value<'a>(l: &Lit) -> Option<V<'a>> {
    match l {
        Lit::Int(i) => i.base10_parse::<i128>().ok().map(V::Int),
        Lit::Bool(b) => Some(V::Bool(b.value)),
        _ => None,
    }
}

fn const_int(e: &Expr) -> Option<i128> {
    match e {
        Expr::Lit(l) => match lit_value(&l.lit)? {
            V::Int(x) => Some(x),
            _ => None,
        },
        Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => const_int(&u.expr).map(|x| -x),
        _ => None,
    }
}

fn pat_names(p: &Pat, out: &mut Vec<String>) {
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

fn iter_items<'a>(v: &V<'a>) -> Option<Vec<V<'a>>> {
    match v {
        V::List(l) => Some(l.clone()),
        V::Range(a, b) if b - a <= LIST_BOUND => Some((*a..*b.max(a)).map(V::Int).collect()),
        _ => None,
    }
}

fn int_list(v: &V) -> Option<Vec<i128>> {
    iter_items(v)?.into_iter().map(|x| if let V::Int(i) = x { Some(i) } else { None }).collect()
}

fn req_ids(v: &V) -> Vec<usize> {
    match v {
        V::Req(ids) => ids.clone(),
        V::List(l) | V::Tuple(l) => l.iter().flat_map(req_ids).collect(),
        _ => vec![],
    }
}

fn arith<'a>(op: &BinOp, l: &V<'a>, r: &V<'a>) -> Result<V<'a>, String> {
    use BinOp::*;
    Ok(match (l, r) {
        (V::Int(a), V::Int(b)) => {
            let (a, b) = (*a, *b);
            match op {
                Add(_) => V::Int(a + b),
                Sub(_) => V::Int(a - b),
                Mul(_) => V::Int(a.checked_mul(b).ok_or("integer overflow")?),
                Div(_) | Rem(_) if b == 0 => return Err("division by zero".into()),
                Div(_) => V::Int(a / b),
                Rem(_) => V::Int(a % b),
                BitAnd(_) => V::Int(a & b),
                BitOr(_) => V::Int(a | b),
                BitXor(_) => V::Int(a ^ b),
                Shl(_) if (0..64).contains(&b) => V::Int(a << b),
                Shr(_) if (0..128).contains(&b) => V::Int(a >> b),
                Eq(_) => V::Bool(a == b),
                Ne(_) => V::Bool(a != b),
                Lt(_) => V::Bool(a < b),
                Le(_) => V::Bool(a <= b),
                Gt(_) => V::Bool(a > b),
                Ge(_) => V::Bool(a >= b),
                _ => V::opaque(),
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
        _ => V::taint(&[l, r]),
    })
}
