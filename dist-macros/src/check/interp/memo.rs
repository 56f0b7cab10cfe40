//! Quiet helpers' results remembered within one check: a helper that cannot
//! communicate, called again with the same argument values (at another rank, another
//! world size), gives the result it gave before without being stepped through again.

use super::summary::lends_mut_type;
use super::*;

/// Most results remembered in one check (a helper called with every rank's
/// coordinates at size 1024 stays within it).
const MEMO_MAX: usize = 1 << 16;

impl<'a> Interp<'a> {
    /// The key under which a quiet helper's result is remembered, or `None` where the
    /// result may depend on more than the argument values: a helper that can write
    /// through an argument (`&mut` parameters or loans, a `mut self`), a closure
    /// argument (it reads its captures from the caller's scopes), nested fns of the
    /// entry (seen only where their block ran).
    ///
    /// A quiet helper's run depends on its arguments, the file's items and constants, the
    /// sample of the program's inputs and whether the call is speculative; and whether
    /// it is summarised depends on its own quota (once it overflowed it is summarised
    /// for the whole check), a run cut short by an outer region's quota is never kept.
    /// So a remembered result is the one running it again would give.
    pub(super) fn memo_key(&self, f: &ItemFn, exprs: &[&Expr], args: &[V<'a>]) -> Option<MemoKey> {
        if !self.fns.is_empty() || !self.by_values(f, exprs, args) {
            return None;
        }
        let mut h = Fx::default();
        args.iter().for_each(|a| fingerprint(a, &mut h));
        Some((
            f as *const ItemFn as usize,
            (uniform_sample() * 8 + agreed_mode() as i128) * 64 + super::arm_offset() as i128,
            self.speculative > 0,
            std::hash::Hasher::finish(&h),
        ))
    }

    /// Whether a call of `f` with `args` (from `exprs`) depends on the argument values
    /// alone as far as the call goes: no communicator (an index into this rank's own
    /// list), no closure (it reads its captures from the caller's scopes), nothing it can
    /// write through (`&mut` parameters or loans, a `mut self`).
    pub(super) fn by_values(&self, f: &ItemFn, exprs: &[&Expr], args: &[V<'a>]) -> bool {
        if args.iter().any(has_closure) || args.iter().any(V::has_comm) {
            return false;
        }
        let writes = f.sig.inputs.iter().any(|a| match a {
            FnArg::Receiver(rc) => rc.mutability.is_some(),
            FnArg::Typed(pt) => lends_mut_type(&pt.ty),
        });
        let mut loans = Vec::new();
        exprs.iter().for_each(|e| mut_loans(e, &mut loans));
        !writes && loans.is_empty()
    }

    /// The remembered result of a call with `args`.
    pub(super) fn memo_get(&self, key: MemoKey, args: &[V<'a>]) -> Option<V<'a>> {
        let memo = self.memo.borrow();
        let (_, v, read) = memo.get(&key)?.iter().find(|(a, _, _)| {
            let a: &[V<'a>] = a;
            a == args
        })?;
        if *read {
            uniform_number();
        }
        Some(v.clone())
    }

    pub(super) fn memo_put(&self, key: MemoKey, args: &[V<'a>], v: &V<'a>, read: bool) {
        let (Some(args), Some(v)) = (args.iter().map(detach).collect::<Option<Vec<_>>>(), detach(v)) else { return };
        let mut memo = self.memo.borrow_mut();
        if memo.len() < MEMO_MAX {
            memo.entry(key).or_default().push((args, v, read));
        }
    }
}

/// A memo entry's key: see [`Memo`].
pub(super) type MemoKey = (usize, i128, bool, u64);

/// Feeds `v`'s structure to `h` (values equal under `==` hash alike).
pub(super) fn fingerprint(v: &V, h: &mut Fx) {
    use std::hash::{Hash, Hasher};
    std::mem::discriminant(v).hash(h);
    match v {
        V::Int(i) => h.write_u64(*i as u64),
        V::Float(x, same) => {
            h.write_u64(x.to_bits());
            h.write_u64(*same as u64);
        }
        V::Bool(b) => h.write_u64(*b as u64),
        V::Comm(c) | V::Batch(c) => h.write_usize(*c),
        V::Req(r) => r.iter().for_each(|&x| h.write_usize(x)),
        V::Tag(t) | V::Name(t) => t.hash(h),
        V::Tuple(v) => v.iter().for_each(|x| fingerprint(x, h)),
        V::List(v) => {
            h.write_usize(v.len());
            v.iter().take(64).for_each(|x| fingerprint(x, h));
        }
        V::Range(a, b) => {
            h.write_u64(*a as u64);
            h.write_u64(*b as u64);
        }
        V::Opt(Some(v)) => fingerprint(v, h),
        V::Struct(t, fields) => {
            t.hash(h);
            fields.iter().for_each(|(k, v)| {
                k.hash(h);
                fingerprint(v, h);
            });
        }
        V::Status(s, k) => (s, k).hash(h),
        V::Opaque { comm, fp } => {
            h.write_u64(*comm as u64);
            h.write_u64(*fp);
        }
        V::Opt(None) | V::Unit | V::Err | V::Closure(_) | V::Uniform => {}
        V::Agreed => h.write_u64(7),
    }
}

/// `v` as a value that borrows no syntax, unless it holds a closure.
fn detach(v: &V<'_>) -> Option<V<'static>> {
    Some(match v {
        V::Int(i) => V::Int(*i),
        V::Float(x, same) => V::Float(*x, *same),
        V::Bool(b) => V::Bool(*b),
        V::Unit => V::Unit,
        V::Comm(c) => V::Comm(*c),
        V::Batch(c) => V::Batch(*c),
        V::Req(r) => V::Req(r.clone()),
        V::Tag(t) => V::Tag(t.clone()),
        V::Name(t) => V::Name(t.clone()),
        V::Tuple(v) => V::Tuple(v.iter().map(detach).collect::<Option<_>>()?),
        V::List(v) => V::list(v.iter().map(detach).collect::<Option<_>>()?),
        V::Range(a, b) => V::Range(*a, *b),
        V::Opt(o) => V::Opt(match o {
            Some(v) => Some(Box::new(detach(v)?)),
            None => None,
        }),
        V::Err => V::Err,
        V::Closure(_) => return None,
        V::Struct(t, fields) => {
            V::Struct(t.clone(), fields.iter().map(|(k, v)| Some((k.clone(), detach(v)?))).collect::<Option<_>>()?)
        }
        V::Status(s, k) => V::Status(*s, *k),
        V::Opaque { comm, fp } => V::Opaque { comm: *comm, fp: *fp },
        V::Uniform => V::Uniform,
        V::Agreed => V::Agreed,
    })
}

/// Whether `v` is or holds a closure.
fn has_closure(v: &V) -> bool {
    match v {
        V::Closure(_) => true,
        V::Tuple(v) => v.iter().any(has_closure),
        V::List(v) => v.iter().any(has_closure),
        V::Struct(_, fields) => fields.iter().any(|(_, v)| has_closure(v)),
        V::Opt(Some(v)) => has_closure(v),
        _ => false,
    }
}
