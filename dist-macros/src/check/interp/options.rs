//! The methods of `Option` and `Result` the check follows (results are their values
//! here: the check assumes communication succeeds; an `Err` is `V::Err`).

use super::*;
use syn::{Expr, ExprMethodCall};

impl<'a> Interp<'a> {
    /// `recv.m(args)` on an option or result (or any value, for `unwrap`, `map_err`,
    /// `clone`): `Some(value)` where the check follows it. One `match`, an arm per method.
    pub(super) fn wrapper_method(
        &mut self,
        mc: &'a ExprMethodCall,
        recv: &V<'a>,
        m: &str,
        args: &[V<'a>],
    ) -> Result<Option<V<'a>>, Flow<'a>> {
        match (m, recv) {
            ("unwrap_or_else" | "unwrap_or_default", V::Opt(Some(x))) => return Ok(Some((**x).clone())),
            // A result's value (results are their values here).
            (
                "unwrap_or" | "unwrap_or_else" | "unwrap_or_default",
                V::Int(_) | V::Bool(_) | V::Tuple(_) | V::List(_) | V::Struct(..),
            ) => return Ok(Some(recv.clone())),
            // `Result::ok`: results are their values here, an `Err` is `None`.
            ("ok", V::Err) if args.is_empty() => return Ok(Some(V::Opt(None))),
            ("ok", V::Int(_) | V::Bool(_) | V::Tuple(_) | V::List(_) | V::Struct(..)) if args.is_empty() => {
                return Ok(Some(V::Opt(Some(Box::new(recv.clone())))))
            }
            ("is_ok" | "is_err", V::Err) if args.is_empty() => return Ok(Some(V::Bool(m == "is_err"))),
            ("is_ok" | "is_err", V::Int(_) | V::Bool(_) | V::Tuple(_) | V::List(_) | V::Struct(..))
                if args.is_empty() =>
            {
                return Ok(Some(V::Bool(m == "is_ok")))
            }
            // Only a `Result` has `map_err`, and a result is its value here: an
            // `Option` inside it (`subgroup`'s) stays an `Option`.
            ("map_err", _) => return Ok(Some(recv.clone())),
            ("unwrap" | "expect" | "context" | "with_context", V::Opt(Some(x))) => return Ok(Some((**x).clone())),
            ("unwrap" | "expect", V::Opt(None)) => return Err(Flow::Fail),
            ("unwrap" | "expect" | "context" | "with_context", V::Err) => return Err(Flow::Fail),
            ("unwrap" | "expect" | "context" | "with_context" | "clone" | "as_ref" | "borrow" | "to_owned", _) => {
                return Ok(Some(recv.clone()))
            }
            ("ok_or" | "ok_or_else", V::Opt(Some(x))) => return Ok(Some((**x).clone())),
            ("ok_or" | "ok_or_else", V::Opt(None)) => return Ok(Some(V::Err)),
            ("is_some", V::Opt(x)) => return Ok(Some(V::Bool(x.is_some()))),
            ("is_none", V::Opt(x)) => return Ok(Some(V::Bool(x.is_none()))),
            ("unwrap_or", V::Opt(x)) => return Ok(Some(x.as_deref().cloned().unwrap_or_else(|| args[0].clone()))),
            // `opt.take()`: the value, and `None` left behind.
            ("take", V::Opt(_)) if args.is_empty() => {
                if let Expr::Path(p) = &*mc.receiver {
                    self.store_path(p, V::Opt(None));
                    return Ok(Some(recv.clone()));
                }
                // `self.east.take()`: the field the check follows is `None` after.
                if self.place_value(&mc.receiver).is_some() && self.store(&mc.receiver, V::Opt(None)).is_ok() {
                    return Ok(Some(recv.clone()));
                }
            }
            // `Result::map` / `and_then` on a result's value (`gather_v(..).map(|()| None)`):
            // a unit, number, bool or struct has no other `map`.
            ("map" | "and_then", V::Unit | V::Int(_) | V::Bool(_) | V::Struct(..))
                if args.len() == 1 && matches!(args[0], V::Closure(_)) =>
            {
                return self.apply_fn(&args[0], recv.clone()).map(Some);
            }
            ("map" | "and_then", V::Err) if args.len() == 1 => return Ok(Some(V::Err)),
            ("map", V::Opt(x)) if args.len() == 1 => {
                return Ok(Some(match x {
                    Some(x) => V::Opt(Some(Box::new(self.apply_fn(&args[0], (**x).clone())?))),
                    None => V::Opt(None),
                }))
            }
            ("and_then", V::Opt(None)) | ("filter", V::Opt(None)) => return Ok(Some(V::Opt(None))),
            ("and_then", V::Opt(Some(x))) if args.len() == 1 => {
                return self.apply_fn(&args[0], (**x).clone()).map(Some)
            }
            // `Some(rank + 1).filter(|&r| r < n)`: kept where the predicate holds.
            ("filter", V::Opt(Some(x))) if args.len() == 1 => {
                if let V::Bool(keep) = self.apply_fn(&args[0], (**x).clone())? {
                    return Ok(Some(if keep { recv.clone() } else { V::Opt(None) }));
                }
            }
            ("unwrap_or_else", V::Opt(None)) => {
                if let Some(V::Closure(c)) = args.first() {
                    return self.apply_closure(*c, vec![]).map(Some);
                }
            }
            ("map_or", V::Opt(None)) if args.len() == 2 => return Ok(Some(args[0].clone())),
            ("map_or", V::Opt(Some(x))) if args.len() == 2 => return self.apply_fn(&args[1], (**x).clone()).map(Some),
            ("or" | "or_else", V::Opt(Some(_))) => return Ok(Some(recv.clone())),
            ("or", V::Opt(None)) if args.len() == 1 => return Ok(Some(args[0].clone())),
            ("cloned" | "copied", V::Opt(_)) => return Ok(Some(recv.clone())),
            // Option<Result<T>> ⇄ Result<Option<T>>: results are their values here.
            ("transpose", V::Opt(_)) => return Ok(Some(recv.clone())),
            ("get" | "get_mut", _) if args.len() == 1 => {
                if let (Some(items), V::Int(i)) = (iter_items(recv), &args[0]) {
                    return Ok(Some(V::Opt(
                        usize::try_from(*i).ok().and_then(|i| items.get(i).cloned()).map(Box::new),
                    )));
                }
            }
            _ => {}
        }
        Ok(None)
    }
}
