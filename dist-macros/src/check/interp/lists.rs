//! The methods of lists and iterators the check follows item by item (`map`, `zip`,
//! `chain`, `filter`, `fold`, `windows`, `push`, …) on a list or range it holds.

use super::*;
use syn::ExprMethodCall;

thread_local! {
    /// Set when a list method stored its receiver's new value exactly (`v.extend(..)`
    /// on a list the check holds): the caller does not forget it after
    /// ([`take_stored`]).
    static STORED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the last list method stored its receiver exactly (and clears it).
pub(super) fn take_stored() -> bool {
    STORED.with(|s| s.replace(false))
}

impl<'a> Interp<'a> {
    /// After a closure ran on the items of `x.iter_mut()` (the receiver of `mc`): `x`
    /// gets back what it left in each (`kept`, in order; `None` where the check does not
    /// know). Items lent through other adapters (`x.iter_mut().rev()`) are forgotten,
    /// their shape kept.
    fn lend_back(&mut self, mc: &'a ExprMethodCall, items: &[V<'a>], kept: Vec<Option<V<'a>>>) -> Result<(), Flow<'a>> {
        let mut r = &*mc.receiver;
        let mut direct = true;
        let place = loop {
            match r {
                Expr::Paren(p) => r = &p.expr,
                Expr::MethodCall(m) if m.method == "iter_mut" && m.args.is_empty() => break Some(&*m.receiver),
                Expr::MethodCall(m) => {
                    direct = false;
                    r = &m.receiver;
                }
                _ => break None,
            }
        };
        let Some(place) = place else { return Ok(()) };
        match self.place_value(place) {
            Some(V::List(list)) if direct && list.len() == items.len() && kept.iter().all(Option::is_some) => {
                let mut list = (*list).clone();
                for (slot, v) in list.iter_mut().zip(kept) {
                    *slot = v.expect("checked");
                }
                if self.store(place, V::list(list)).is_err() {
                    self.clobber_place(place, true);
                }
            }
            _ => self.clobber_place(place, true),
        }
        Ok(())
    }

    /// `recv.m(args)` where `recv` holds `items`: `Some(value)` where the check follows
    /// the method, `None` to fall back to the generic rule (data computed from the
    /// receiver and arguments). (Long as one `match` over (method, arguments): one arm per
    /// method it follows.)
    pub(super) fn list_method(
        &mut self,
        mc: &'a ExprMethodCall,
        recv: V<'a>,
        items: std::rc::Rc<Vec<V<'a>>>,
        m: &str,
        args: &[V<'a>],
    ) -> Result<Option<V<'a>>, Flow<'a>> {
        let ints = || items.iter().map(|x| if let V::Int(i) = x { Some(*i) } else { None }).collect::<Option<Vec<_>>>();
        match (m, args) {
            ("max" | "min", []) => {
                if let Some(v) = ints() {
                    let r = if m == "max" { v.iter().max() } else { v.iter().min() };
                    return Ok(Some(V::Opt(r.map(|x| Box::new(V::Int(*x))))));
                }
            }
            ("product", []) => {
                if let Some(v) = ints() {
                    // (Past i128, a product is just data.)
                    let p = v.iter().try_fold(1i128, |acc, &x| acc.checked_mul(x));
                    return Ok(Some(p.map_or_else(V::opaque, V::Int)));
                }
            }
            // `it.next()` on an iterator kept in a variable or field: its first item,
            // and the rest left behind.
            ("next", []) if matches!(&*mc.receiver, Expr::Path(_) | Expr::Field(_)) => {
                let rest = V::list(items.iter().skip(1).cloned().collect());
                if self.place_value(&mc.receiver).is_some() && self.store(&mc.receiver, rest).is_ok() {
                    return Ok(Some(V::Opt(items.first().cloned().map(Box::new))));
                }
            }
            ("nth", [V::Int(k)]) => {
                return Ok(Some(V::Opt(usize::try_from(*k).ok().and_then(|k| items.get(k)).cloned().map(Box::new))))
            }
            ("windows" | "chunks" | "chunks_exact", [V::Int(k)]) if *k > 0 => {
                let k = *k as usize;
                let parts: Vec<V<'a>> = if m == "windows" {
                    items.windows(k).map(|w| V::list(w.to_vec())).collect()
                } else if m == "chunks" {
                    items.chunks(k).map(|w| V::list(w.to_vec())).collect()
                } else {
                    items.chunks_exact(k).map(|w| V::list(w.to_vec())).collect()
                };
                return Ok(Some(V::list(parts)));
            }
            ("any" | "all" | "find", [f @ V::Closure(_)]) => {
                let f = f.clone();
                for x in items.iter().cloned() {
                    match (m, self.apply_fn(&f, x.clone())?) {
                        ("any", V::Bool(true)) => return Ok(Some(V::Bool(true))),
                        ("all", V::Bool(false)) => return Ok(Some(V::Bool(false))),
                        ("find", V::Bool(true)) => return Ok(Some(V::Opt(Some(Box::new(x))))),
                        (_, V::Bool(_)) => {}
                        (_, other) => return Ok(Some(V::derived(&[&V::List(items.clone()), &other]))),
                    }
                }
                return Ok(Some(if m == "find" { V::Opt(None) } else { V::Bool(m == "all") }));
            }
            ("for_each", [V::Closure(c)]) => {
                let c = *c;
                let mut kept = Vec::new();
                for x in items.iter().cloned() {
                    kept.push(self.apply_closure_keep(c, vec![x], 0)?.1);
                }
                self.lend_back(mc, &items, kept)?;
                return Ok(Some(V::Unit));
            }
            ("fold", [init, V::Closure(c)]) => {
                let (c, mut acc) = (*c, init.clone());
                for x in items.iter().cloned() {
                    acc = self.apply_closure(c, vec![acc, x])?;
                }
                return Ok(Some(acc));
            }
            // `try_fold(x.to_vec(), |h, layer| layer.forward(&h))`: a `fold` that an `Err`
            // ends with the error, and an `Option`-valued closure's `None` with `None`.
            // Items lent by `x.iter_mut()` get back what the closure left in them.
            ("try_fold", [init, V::Closure(c)]) => {
                let (c, mut acc) = (*c, init.clone());
                // (An `Option`-valued closure folding a plain accumulator: `Some(v)` goes on.)
                let by_option = !matches!(init, V::Opt(_));
                let mut wrapped = false;
                let mut kept = Vec::new();
                let mut out = None;
                for x in items.iter().cloned() {
                    let (r, item) = self.apply_closure_keep(c, vec![acc.clone(), x], 1)?;
                    kept.push(item);
                    match r {
                        V::Err => out = Some(V::Err),
                        V::Opt(None) if by_option => out = Some(V::Opt(None)),
                        V::Opt(Some(v)) if by_option => {
                            wrapped = true;
                            acc = *v;
                        }
                        v => acc = v,
                    }
                    if out.is_some() {
                        break;
                    }
                }
                self.lend_back(mc, &items, kept)?;
                return Ok(Some(out.unwrap_or(if wrapped { V::Opt(Some(Box::new(acc))) } else { acc })));
            }
            ("try_for_each", [V::Closure(c)]) => {
                let c = *c;
                let mut kept = Vec::new();
                let mut out = V::Unit;
                for x in items.iter().cloned() {
                    let (r, item) = self.apply_closure_keep(c, vec![x], 0)?;
                    kept.push(item);
                    if matches!(r, V::Err | V::Opt(None)) {
                        out = r;
                        break;
                    }
                }
                self.lend_back(mc, &items, kept)?;
                return Ok(Some(out));
            }
            // `scan(init, |acc, x| { *acc += x; Some(*acc) })`: the state is what the
            // closure leaves in its first parameter.
            ("scan", [init, V::Closure(c)]) => {
                let (c, mut st) = (*c, init.clone());
                let mut out = Vec::new();
                for x in items.iter().cloned() {
                    match self.apply_closure_state(c, vec![st.clone(), x])? {
                        (V::Opt(Some(v)), Some(next)) => {
                            out.push(*v);
                            st = next;
                        }
                        (V::Opt(None), _) => break,
                        (other, _) => return Ok(Some(V::derived(&[&V::List(items.clone()), &other]))),
                    }
                }
                return Ok(Some(V::list(out)));
            }
            ("partition", [f @ V::Closure(_)]) => {
                let f = f.clone();
                let (mut yes, mut no) = (Vec::new(), Vec::new());
                for x in items.iter().cloned() {
                    match self.apply_fn(&f, x.clone())? {
                        V::Bool(true) => yes.push(x),
                        V::Bool(false) => no.push(x),
                        other => return Ok(Some(V::derived(&[&V::List(items.clone()), &other]))),
                    }
                }
                return Ok(Some(V::Tuple(vec![V::list(yes), V::list(no)])));
            }
            ("filter_map", [f @ V::Closure(_)]) => {
                let f = f.clone();
                let mut out = Vec::new();
                for x in items.iter().cloned() {
                    match self.apply_fn(&f, x)? {
                        V::Opt(Some(y)) => out.push(*y),
                        V::Opt(None) => {}
                        other => return Ok(Some(V::derived(&[&V::List(items.clone()), &other]))),
                    }
                }
                return Ok(Some(V::list(out)));
            }
            // `collect::<BTreeSet<_>>()`: the collection of the items.
            ("collect", _) if mc.turbofish.is_some() => {
                let ty = mc.turbofish.as_ref().and_then(|t| t.args.first()).and_then(|a| match a {
                    syn::GenericArgument::Type(t) => Some(t),
                    _ => None,
                });
                return Ok(Some(match ty {
                    Some(t) => super::collections::typed(V::List(items), t),
                    None => V::List(items),
                }));
            }
            ("iter" | "into_iter" | "iter_mut" | "copied" | "cloned" | "collect" | "to_vec" | "into_vec", _) => {
                return Ok(Some(V::List(items)))
            }
            // `tasks.into()` as a `VecDeque` (or a `Box<[T]>`): the same items, unless the
            // package converts lists into types of its own.
            ("into", []) if !super::receivers::own_from() => return Ok(Some(V::List(items))),
            ("rev", _) => return Ok(Some(V::list(items.iter().rev().cloned().collect()))),
            ("zip", [other]) => {
                if let Some(b) = iter_items(other) {
                    return Ok(Some(V::list(
                        items.iter().cloned().zip(b.iter().cloned()).map(|(x, y)| V::Tuple(vec![x, y])).collect(),
                    )));
                }
            }
            ("chain", [other]) => {
                if let Some(b) = iter_items(other) {
                    return Ok(Some(V::list(items.iter().chain(b.iter()).cloned().collect())));
                }
            }
            ("len" | "count", _) => return Ok(Some(V::Int(items.len() as i128))),
            ("is_empty", _) => return Ok(Some(V::Bool(items.is_empty()))),
            ("enumerate", _) => {
                return Ok(Some(V::list(
                    items.iter().cloned().enumerate().map(|(i, x)| V::Tuple(vec![V::Int(i as i128), x])).collect(),
                )))
            }
            ("step_by", [V::Int(k)]) if *k > 0 => {
                return Ok(Some(V::list(items.iter().step_by(*k as usize).cloned().collect())))
            }
            ("skip", [V::Int(k)]) => return Ok(Some(V::list(items.iter().skip(*k as usize).cloned().collect()))),
            ("take", [V::Int(k)]) => return Ok(Some(V::list(items.iter().take(*k as usize).cloned().collect()))),
            ("contains", [x]) if items.iter().all(|i| matches!(i, V::Int(_) | V::Bool(_))) => {
                if matches!(x, V::Int(_) | V::Bool(_)) {
                    return Ok(Some(V::Bool(items.contains(x))));
                }
            }
            // On a sorted list of known integers (`cols.binary_search(&k).ok()`, where this
            // rank keeps column k): `Ok(index)`, or an `Err` (its insertion point is not
            // followed).
            ("binary_search", [V::Int(x)])
                if items.iter().all(|i| matches!(i, V::Int(_)))
                    && items.windows(2).all(|w| matches!((&w[0], &w[1]), (V::Int(a), V::Int(b)) if a <= b)) =>
            {
                let found = items.iter().position(|i| i == &V::Int(*x));
                return Ok(Some(found.map_or(V::Err, |i| V::Int(i as i128))));
            }
            ("first" | "front", _) => return Ok(Some(V::Opt(items.first().cloned().map(Box::new)))),
            ("last" | "back", _) => return Ok(Some(V::Opt(items.last().cloned().map(Box::new)))),
            ("sum", _) if items.iter().all(|i| matches!(i, V::Int(_))) => {
                let total =
                    items
                        .iter()
                        .try_fold(0i128, |acc, i| if let V::Int(x) = i { acc.checked_add(*x) } else { Some(acc) });
                return Ok(Some(total.map_or_else(V::opaque, V::Int)));
            }
            // `offsets.partition_point(|&o| o <= j)`: how many leading items the
            // predicate holds for (the owner of row `j` in a block partition).
            ("partition_point", [f]) => {
                let f = f.clone();
                for (i, x) in items.iter().cloned().enumerate() {
                    match self.apply_fn(&f, x)? {
                        V::Bool(true) => {}
                        V::Bool(false) => return Ok(Some(V::Int(i as i128))),
                        other => return Ok(Some(V::derived(&[&V::List(items.clone()), &other]))),
                    }
                }
                return Ok(Some(V::Int(items.len() as i128)));
            }
            ("position", [f]) => {
                let f = f.clone();
                for (i, x) in items.iter().cloned().enumerate() {
                    match self.apply_fn(&f, x)? {
                        V::Bool(true) => return Ok(Some(V::Opt(Some(Box::new(V::Int(i as i128)))))),
                        V::Bool(false) => {}
                        other => return Ok(Some(V::derived(&[&V::List(items.clone()), &other]))),
                    }
                }
                return Ok(Some(V::Opt(None)));
            }
            // `flat_map(|w| [a, b])`, `flatten()`: the items' items, where each is
            // a list, a range or an option the check holds.
            ("flat_map", [_]) | ("flatten", []) => {
                let f = args.first().cloned().unwrap_or(V::Unit);
                let mut out = Vec::new();
                for x in items.iter().cloned() {
                    let y = if m == "flatten" { x } else { self.apply_fn(&f, x)? };
                    match y {
                        V::Opt(Some(v)) => out.push(*v),
                        V::Opt(None) => {}
                        y => match iter_items(&y) {
                            Some(ys) => out.extend(ys.iter().cloned()),
                            None => return Ok(Some(V::derived(&[&V::List(items.clone()), &y]))),
                        },
                    }
                }
                return Ok(Some(V::list(out)));
            }
            ("map", [f]) => {
                let f = f.clone();
                let mut out = Vec::new();
                for x in items.iter().cloned() {
                    out.push(self.apply_fn(&f, x)?);
                }
                return Ok(Some(V::list(out)));
            }
            ("filter", [f]) => {
                let f = f.clone();
                let mut out = Vec::new();
                for x in items.iter().cloned() {
                    match self.apply_fn(&f, x.clone())? {
                        V::Bool(true) => out.push(x),
                        V::Bool(false) => {}
                        other => return Ok(Some(V::derived(&[&V::List(items.clone()), &other]))),
                    }
                }
                return Ok(Some(V::list(out)));
            }
            // `take_while` / `skip_while`: the prefix its closure holds for, or what follows.
            ("take_while" | "skip_while", [f]) => {
                let f = f.clone();
                let mut k = items.len();
                for (i, x) in items.iter().cloned().enumerate() {
                    match self.apply_fn(&f, x)? {
                        V::Bool(true) => {}
                        V::Bool(false) => {
                            k = i;
                            break;
                        }
                        other => return Ok(Some(V::derived(&[&V::List(items.clone()), &other]))),
                    }
                }
                let part = if m == "take_while" { items[..k].to_vec() } else { items[k..].to_vec() };
                return Ok(Some(V::list(part)));
            }
            // `max_by_key` / `min_by_key` with integer keys: the last largest, the first
            // smallest, as the standard library picks.
            ("max_by_key" | "min_by_key", [f]) => {
                let f = f.clone();
                let mut best: Option<(i128, V<'a>)> = None;
                for x in items.iter().cloned() {
                    match self.apply_fn(&f, x.clone())? {
                        V::Int(key) => {
                            let better = match &best {
                                None => true,
                                Some((b, _)) if m == "max_by_key" => key >= *b,
                                Some((b, _)) => key < *b,
                            };
                            if better {
                                best = Some((key, x));
                            }
                        }
                        other => return Ok(Some(V::derived(&[&V::List(items.clone()), &other]))),
                    }
                }
                return Ok(Some(V::Opt(best.map(|(_, x)| Box::new(x)))));
            }
            // A list the check holds, changed in place and stored back where it lives
            // (`order.extend(..)`, `v.truncate(k)`, `v.pop()`, `v.insert(i, x)`).
            (
                "extend" | "extend_from_slice" | "append" | "truncate" | "clear" | "pop" | "insert" | "remove" | "sort"
                | "sort_unstable" | "dedup" | "reverse" | "pop_back" | "pop_front" | "push_front",
                _,
            ) if matches!(recv, V::List(_))
                && matches!(&*mc.receiver, Expr::Path(_) | Expr::Field(_) | Expr::MethodCall(_)) =>
            {
                let mut l = items.to_vec();
                // Numbers read from the inputs, ordered beside known ones (`vec![opts.root,
                // n - 1]` sorted): this run's sample, as in arithmetic.
                if matches!(m, "sort" | "sort_unstable" | "dedup")
                    && l.iter().all(|x| matches!(x, V::Int(_) | V::Uniform))
                {
                    l = l.into_iter().map(super::value::sampled).collect();
                }
                let out = match (m, args) {
                    ("extend" | "extend_from_slice" | "append", [more]) => match iter_items(more) {
                        Some(more) if l.len() + more.len() <= LIST_BOUND as usize => {
                            l.extend(more.iter().cloned());
                            Some(V::Unit)
                        }
                        _ => None,
                    },
                    ("truncate", [V::Int(k)]) if *k >= 0 => {
                        l.truncate(usize::try_from(*k).unwrap_or(usize::MAX));
                        Some(V::Unit)
                    }
                    ("clear", []) => {
                        l.clear();
                        Some(V::Unit)
                    }
                    ("pop" | "pop_back", []) => Some(V::Opt(l.pop().map(Box::new))),
                    // A `VecDeque` the check holds: a queue of tasks handed out while it lasts.
                    ("pop_front", []) => Some(V::Opt((!l.is_empty()).then(|| Box::new(l.remove(0))))),
                    ("push_front", [x]) if l.len() < LIST_BOUND as usize => {
                        l.insert(0, x.clone());
                        Some(V::Unit)
                    }
                    ("insert", [V::Int(i), x]) if *i >= 0 && *i <= l.len() as i128 => {
                        l.insert(*i as usize, x.clone());
                        Some(V::Unit)
                    }
                    ("remove", [V::Int(i)]) if *i >= 0 && *i < l.len() as i128 => Some(l.remove(*i as usize)),
                    // Known integers sorted and deduplicated as Rust does (`cols.sort_unstable();
                    // cols.dedup()` on a sparse row's columns); any list reversed.
                    ("sort" | "sort_unstable", []) if l.iter().all(|x| matches!(x, V::Int(_))) => {
                        l.sort_by_key(|x| if let V::Int(i) = x { *i } else { 0 });
                        Some(V::Unit)
                    }
                    ("dedup", []) if l.iter().all(|x| matches!(x, V::Int(_) | V::Bool(_))) => {
                        l.dedup();
                        Some(V::Unit)
                    }
                    ("reverse", []) => {
                        l.reverse();
                        Some(V::Unit)
                    }
                    _ => None,
                };
                if let Some(out) = out {
                    if self.store(&mc.receiver, V::list(l)).is_ok() {
                        STORED.with(|s| s.set(true));
                        return Ok(Some(out));
                    }
                }
            }
            ("push" | "push_back", [x]) => {
                if let V::List(mut l) = recv {
                    if let Expr::Path(p) = &*mc.receiver {
                        std::rc::Rc::make_mut(&mut l).push(x.clone());
                        self.store_path(p, V::List(l));
                        return Ok(Some(V::Unit));
                    }
                    // `self.dims.push(w)`: a list in a field the check follows.
                    // (And one in a map's entry: `by_owner.entry(r).or_default().push(x)`.)
                    if matches!(&*mc.receiver, Expr::Field(_) | Expr::MethodCall(_)) && l.len() < LIST_BOUND as usize {
                        std::rc::Rc::make_mut(&mut l).push(x.clone());
                        if self.store(&mc.receiver, V::List(l)).is_ok() {
                            return Ok(Some(V::Unit));
                        }
                    }
                }
                // Anywhere else the list is no longer known.
                self.clobber_place(&mc.receiver, false);
                return Ok(Some(V::Unit));
            }
            _ => {}
        }
        Ok(None)
    }
}
