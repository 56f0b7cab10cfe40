//! Method calls: the std methods the check understands (Option/Result, integers,
//! iterators and lists), and the hand-off of communicator methods to the model.

use super::super::trace::Ev;
use super::*;
use syn::{Expr, ExprMethodCall};

impl<'a> Interp<'a> {
    pub(super) fn method(&mut self, e: &'a Expr, mc: &'a ExprMethodCall) -> R<'a> {
        let recv = self.expr(&mc.receiver)?;
        let m = mc.method.to_string();
        if let V::Struct(ty, _) = &recv {
            let key = format!("{ty}::{m}");
            if self.file_fns.contains_key(&key) {
                let mut args = vec![recv.clone()];
                args.extend(self.args(&mc.args)?);
                let mut exprs: Vec<&'a Expr> = vec![&mc.receiver];
                exprs.extend(mc.args.iter());
                return self.apply_method(e, &key, exprs, args).expect("present");
            }
        }
        match recv {
            V::Comm(c) => {
                let r = self.comm_method(e, mc, c, &m)?;
                self.written_by_comm(mc, &m);
                return Ok(r);
            }
            V::Batch(c) if m == "send" || m == "recv" => {
                let args = self.args(&mc.args)?;
                self.post_p2p(e, c, m == "send", &args[0], &args[1], &mc.args[0], call_name(&m))?;
                self.written_by_comm(mc, &m);
                return Ok(V::Unit);
            }
            V::Batch(c) if m == "size" => {
                return Ok(self.comm_size(c));
            }
            V::Req(ids) if m == "wait" => {
                let any = self.events.iter().find_map(|ev| match ev {
                    Ev::P2p { id, peer, comm, .. } if ids.contains(id) && *peer == crate::check::trace::ANY_SOURCE => {
                        Some((*id, comm.clone()))
                    }
                    _ => None,
                });
                self.events.push(Ev::Wait { ids, site: self.site(e), call: "wait" });
                // A receive from any source gives its status.
                if let Some((id, comm)) = any {
                    let c = self.comms.iter().position(|k| k.key == comm).unwrap_or(0);
                    return Ok(self.status_of(c, id));
                }
                return Ok(V::Unit);
            }
            _ => {}
        }
        let r = self.std_method(e, mc, recv, &m)?;
        // What the method may have written: what it borrowed mutably, and its receiver.
        self.clobber_loans(&mc.args, false);
        if let Some(keep_shape) = mutates_receiver(&mc.method) {
            self.clobber_place(&mc.receiver, keep_shape);
        }
        Ok(r)
    }

    /// After a communication call: its receive buffers hold what arrived, which the
    /// check does not know (a send's buffer and the role arguments stay as they were).
    fn written_by_comm(&mut self, mc: &'a ExprMethodCall, m: &str) {
        let Some(spec) = dist_ops::find(m) else { return };
        if matches!(m, "send" | "isend") || spec.class == dist_ops::Class::Group {
            return;
        }
        for (i, a) in mc.args.iter().enumerate() {
            let role = spec.peers.contains(&i) || spec.tag == Some(i) || spec.root == Some(i) || spec.reduce == Some(i);
            if role || (m == "sendrecv" && i != 4) {
                continue;
            }
            let mut names = Vec::new();
            mut_loans(a, &mut names);
            // A variable that already is a `&mut` buffer, passed as it is.
            if let (true, Some(n)) = (names.is_empty() && matches!(a, Expr::Path(_)), place_root(a)) {
                if matches!(self.lookup(&n), Some(V::List(_) | V::Tuple(_))) {
                    names.push(n);
                }
            }
            for n in names {
                self.clobber(&n, true);
            }
        }
    }

    fn std_method(&mut self, e: &'a Expr, mc: &'a ExprMethodCall, recv: V<'a>, m: &str) -> R<'a> {
        let m = m.to_string();
        let args = self.args(&mc.args)?;
        // Closures applied by iterator adapters.
        let apply = |me: &mut Self, f: &V<'a>, x: V<'a>| -> R<'a> {
            match f {
                V::Closure(c) => me.apply_closure(*c, vec![x]),
                _ => Ok(V::opaque()),
            }
        };
        // The program's inputs: what is read from them stays an input (the same on every
        // rank); a number parsed from one is this run's sample of such numbers.
        if matches!(recv, V::Uniform) {
            return match m.as_str() {
                // A number parsed from an input: this run's sample (the same on every rank).
                "parse" | "parse_from" => Ok(V::Int(super::uniform_number())),
                "map" | "and_then" | "map_or" | "map_or_else" if !args.is_empty() => match args.last() {
                    Some(f @ V::Closure(_)) => apply(self, f, recv),
                    _ => Ok(recv),
                },
                _ => Ok(recv),
            };
        }
        // Result/Option pass-throughs: the check assumes communication succeeds.
        match (m.as_str(), &recv) {
            ("unwrap_or_else" | "unwrap_or_default", V::Opt(Some(x))) => return Ok((**x).clone()),
            // A result's value (results are their values here).
            (
                "unwrap_or" | "unwrap_or_else" | "unwrap_or_default",
                V::Int(_) | V::Bool(_) | V::Tuple(_) | V::List(_),
            ) => return Ok(recv),
            // `Result::ok`: results are their values here, an `Err` is `None`.
            ("ok", V::Err) if args.is_empty() => return Ok(V::Opt(None)),
            ("ok", V::Int(_) | V::Bool(_) | V::Tuple(_) | V::List(_)) if args.is_empty() => {
                return Ok(V::Opt(Some(Box::new(recv))))
            }
            // Only a `Result` has `map_err`, and a result is its value here: an
            // `Option` inside it (`subgroup`'s) stays an `Option`.
            ("map_err", _) => return Ok(recv),
            ("unwrap" | "expect" | "context" | "with_context", V::Opt(Some(x))) => return Ok((**x).clone()),
            ("unwrap" | "expect", V::Opt(None)) => return Err(Flow::Fail),
            ("unwrap" | "expect" | "context" | "with_context", V::Err) => return Err(Flow::Fail),
            ("unwrap" | "expect" | "context" | "with_context" | "clone" | "as_ref" | "borrow" | "to_owned", _) => {
                return Ok(recv)
            }
            ("ok_or" | "ok_or_else", V::Opt(Some(x))) => return Ok((**x).clone()),
            ("ok_or" | "ok_or_else", V::Opt(None)) => return Ok(V::Err),
            ("is_some", V::Opt(x)) => return Ok(V::Bool(x.is_some())),
            ("is_none", V::Opt(x)) => return Ok(V::Bool(x.is_none())),
            ("unwrap_or", V::Opt(x)) => return Ok(x.as_deref().cloned().unwrap_or_else(|| args[0].clone())),
            // `opt.take()`: the value, and `None` left behind.
            ("take", V::Opt(_)) if args.is_empty() => {
                if let Expr::Path(p) = &*mc.receiver {
                    self.store_path(p, V::Opt(None));
                    return Ok(recv);
                }
            }
            ("map", V::Opt(x)) if args.len() == 1 => {
                return Ok(match x {
                    Some(x) => V::Opt(Some(Box::new(apply(self, &args[0], (**x).clone())?))),
                    None => V::Opt(None),
                })
            }
            // Option<Result<T>> ⇄ Result<Option<T>>: results are their values here.
            ("transpose", V::Opt(_)) => return Ok(recv),
            ("get" | "get_mut", _) if args.len() == 1 => {
                if let (Some(items), V::Int(i)) = (iter_items(&recv), &args[0]) {
                    return Ok(V::Opt(usize::try_from(*i).ok().and_then(|i| items.get(i).cloned()).map(Box::new)));
                }
            }
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
                ("rev", _) => return Ok(V::list(items.iter().rev().cloned().collect())),
                ("zip", [other]) => {
                    if let Some(b) = iter_items(other) {
                        return Ok(V::list(
                            items.iter().cloned().zip(b.iter().cloned()).map(|(x, y)| V::Tuple(vec![x, y])).collect(),
                        ));
                    }
                }
                ("chain", [other]) => {
                    if let Some(b) = iter_items(other) {
                        return Ok(V::list(items.iter().chain(b.iter()).cloned().collect()));
                    }
                }
                ("len" | "count", _) => return Ok(V::Int(items.len() as i128)),
                ("is_empty", _) => return Ok(V::Bool(items.is_empty())),
                ("enumerate", _) => {
                    return Ok(V::list(
                        items.iter().cloned().enumerate().map(|(i, x)| V::Tuple(vec![V::Int(i as i128), x])).collect(),
                    ))
                }
                ("step_by", [V::Int(k)]) if *k > 0 => {
                    return Ok(V::list(items.iter().step_by(*k as usize).cloned().collect()))
                }
                ("skip", [V::Int(k)]) => return Ok(V::list(items.iter().skip(*k as usize).cloned().collect())),
                ("take", [V::Int(k)]) => return Ok(V::list(items.iter().take(*k as usize).cloned().collect())),
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
                    for (i, x) in items.iter().cloned().enumerate() {
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
                    for x in items.iter().cloned() {
                        out.push(apply(self, &f, x)?);
                    }
                    return Ok(V::list(out));
                }
                ("filter", [f]) => {
                    let f = f.clone();
                    let mut out = Vec::new();
                    for x in items.iter().cloned() {
                        match apply(self, &f, x.clone())? {
                            V::Bool(true) => out.push(x),
                            V::Bool(false) => {}
                            _ => return Ok(V::opaque()),
                        }
                    }
                    return Ok(V::list(out));
                }
                ("push", [x]) => {
                    if let Expr::Path(p) = &*mc.receiver {
                        if let V::List(mut l) = recv {
                            std::rc::Rc::make_mut(&mut l).push(x.clone());
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
}

/// Whether a method changes its receiver in place: `Some(true)` when it keeps the
/// length (`fill`, `sort`), `Some(false)` when it may change it (`clear`, `extend`).
/// `push` onto a list the check knows is followed exactly, so it is not here.
fn mutates_receiver(method: &syn::Ident) -> Option<bool> {
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
