//! The methods of numbers the check knows exactly: integers (`div_ceil`, `pow`,
//! `rem_euclid`, …) and floats (`sqrt`, `floor`, `ceil`, `powi`, …).

use super::V;
use syn::Expr;

/// The width and signedness of an integer type's name (`u64` → 64 bits, unsigned).
pub(super) fn int_type(name: &str) -> Option<(u32, bool)> {
    Some(match name {
        "u8" => (8, false),
        "u16" => (16, false),
        "u32" => (32, false),
        "u64" | "usize" => (64, false),
        "i8" => (8, true),
        "i16" => (16, true),
        "i32" => (32, true),
        "i64" | "isize" => (64, true),
        _ => return None,
    })
}

fn type_width(t: &syn::Type) -> Option<(u32, bool)> {
    match t {
        syn::Type::Path(p) => int_type(&p.path.segments.last()?.ident.to_string()),
        syn::Type::Reference(r) => type_width(&r.elem),
        _ => None,
    }
}

/// The integer type of `e` as its syntax says, inside the helper `f` (its parameters'
/// and typed `let`s' declared types, casts, suffixed literals, and what arithmetic on
/// those gives): `None` where the syntax does not say.
pub(super) fn int_width(e: &Expr, f: Option<&syn::ItemFn>) -> Option<(u32, bool)> {
    match e {
        Expr::Cast(c) => type_width(&c.ty),
        Expr::Lit(l) => match &l.lit {
            syn::Lit::Int(i) => int_type(i.suffix()),
            _ => None,
        },
        Expr::Paren(p) => int_width(&p.expr, f),
        Expr::Group(g) => int_width(&g.expr, f),
        Expr::Unary(u) => int_width(&u.expr, f),
        Expr::Binary(b) => match b.op {
            syn::BinOp::Shl(_) | syn::BinOp::Shr(_) => int_width(&b.left, f),
            syn::BinOp::Add(_)
            | syn::BinOp::Sub(_)
            | syn::BinOp::Mul(_)
            | syn::BinOp::Div(_)
            | syn::BinOp::Rem(_)
            | syn::BinOp::BitXor(_)
            | syn::BinOp::BitAnd(_)
            | syn::BinOp::BitOr(_) => int_width(&b.left, f).or_else(|| int_width(&b.right, f)),
            _ => None,
        },
        // A communicator's rank and size, a length or count: `usize`.
        Expr::MethodCall(m)
            if m.args.is_empty()
                && matches!(m.method.to_string().as_str(), "rank" | "size" | "len" | "count" | "world_rank") =>
        {
            Some((64, false))
        }
        Expr::MethodCall(m) => int_width(&m.receiver, f),
        Expr::Path(p) => {
            let name = p.path.get_ident()?.to_string();
            let f = f?;
            for a in &f.sig.inputs {
                if let syn::FnArg::Typed(pt) = a {
                    if matches!(&*pt.pat, syn::Pat::Ident(i) if i.ident == name) {
                        return type_width(&pt.ty);
                    }
                }
            }
            // (A typed `let` of that name in its body.)
            struct Find<'n>(&'n str, Option<(u32, bool)>);
            impl<'ast> syn::visit::Visit<'ast> for Find<'_> {
                fn visit_local(&mut self, l: &'ast syn::Local) {
                    if let syn::Pat::Type(pt) = &l.pat {
                        if matches!(&*pt.pat, syn::Pat::Ident(i) if i.ident == self.0) && self.1.is_none() {
                            self.1 = type_width(&pt.ty);
                        }
                    }
                    // (An untyped `let` of that name: its initialiser's type, where the
                    // syntax says, through a tuple: `let (r, p) = (c.rank(), c.size())`.)
                    if let (None, Some(init)) = (self.1, &l.init) {
                        let named = |p: &syn::Pat| matches!(p, syn::Pat::Ident(i) if i.ident == self.0);
                        self.1 = match (&l.pat, &*init.expr) {
                            (p, e) if named(p) => int_width(e, None),
                            (syn::Pat::Tuple(pt), Expr::Tuple(et)) if pt.elems.len() == et.elems.len() => pt
                                .elems
                                .iter()
                                .zip(&et.elems)
                                .find(|(p, _)| named(p))
                                .and_then(|(_, e)| int_width(e, None)),
                            _ => None,
                        };
                    }
                    syn::visit::visit_local(self, l);
                }
            }
            let mut find = Find(&name, None);
            syn::visit::Visit::visit_block(&mut find, &f.block);
            find.1
        }
        _ => None,
    }
}

/// `x.m(y)` for the wrapping and rotating methods of an integer of `width` (bits,
/// signed): computed as that type does.
pub(super) fn wrapping<'a>(x: i128, m: &str, y: Option<&V<'a>>, (bits, signed): (u32, bool)) -> Option<V<'a>> {
    let modulus = 1i128 << bits;
    let wrap = |v: i128| {
        let u = v.rem_euclid(modulus);
        if signed && u >= modulus / 2 {
            u - modulus
        } else {
            u
        }
    };
    let ux = x.rem_euclid(modulus) as u128;
    let r = match (m, y) {
        ("wrapping_add", Some(V::Int(y))) => wrap(x.checked_add(*y)?),
        ("wrapping_sub", Some(V::Int(y))) => wrap(x.checked_sub(*y)?),
        ("wrapping_mul", Some(V::Int(y))) => {
            // (Modulo 2^bits, from the operands' residues: no overflow of i128.)
            let p = ux.wrapping_mul(y.rem_euclid(modulus) as u128) % (modulus as u128);
            wrap(p as i128)
        }
        ("wrapping_neg", None) => wrap(-x),
        ("rotate_left" | "rotate_right", Some(V::Int(k))) => {
            let k = (k.rem_euclid(bits as i128)) as u32;
            let k = if m == "rotate_left" { k } else { (bits - k) % bits };
            let mask = (modulus - 1) as u128;
            let r = if k == 0 { ux } else { ((ux << k) | (ux >> (bits - k))) & mask };
            wrap(r as i128)
        }
        ("wrapping_shl", Some(V::Int(k))) => {
            wrap(((ux << (k.rem_euclid(bits as i128) as u32)) & ((modulus - 1) as u128)) as i128)
        }
        ("wrapping_shr", Some(V::Int(k))) if !signed => wrap((ux >> (k.rem_euclid(bits as i128) as u32)) as i128),
        _ => return None,
    };
    Some(V::Int(r))
}

/// `x.m(arg)` on an integer the check knows, if it computes it.
pub(super) fn int_method<'a>(x: i128, m: &str, arg: Option<&V<'a>>) -> Option<V<'a>> {
    match (m, arg) {
        ("pow", Some(V::Int(y))) => x.checked_pow(*y as u32).map(V::Int),
        ("min", Some(V::Int(y))) => Some(V::Int(x.min(*y))),
        ("max", Some(V::Int(y))) => Some(V::Int(x.max(*y))),
        ("abs", None) => Some(V::Int(x.abs())),
        ("rem_euclid", Some(V::Int(y))) if *y != 0 => Some(V::Int(x.rem_euclid(*y))),
        ("div_euclid", Some(V::Int(y))) if *y != 0 => Some(V::Int(x.div_euclid(*y))),
        ("div_ceil", Some(V::Int(y))) if *y > 0 => Some(V::Int((x + y - 1).div_euclid(*y))),
        ("is_multiple_of", Some(V::Int(y))) => Some(V::Bool(if *y == 0 { x == 0 } else { x % y == 0 })),
        ("saturating_sub", Some(V::Int(y))) => Some(V::Int((x - y).max(0))),
        // (Without the type's width, only where no type could have wrapped:
        // `numbers::wrapping` where the check knows the width.)
        ("wrapping_add" | "saturating_add", Some(V::Int(y))) if (0..=i32::MAX as i128).contains(&(x + y)) => {
            Some(V::Int(x + y))
        }
        ("checked_sub", Some(V::Int(y))) => Some(V::Opt(if x >= *y { Some(Box::new(V::Int(x - y))) } else { None })),
        ("is_power_of_two", None) => Some(V::Bool(x > 0 && x & (x - 1) == 0)),
        ("trailing_zeros", None) => Some(V::Int(if x == 0 { 128 } else { x.trailing_zeros() as i128 })),
        ("ilog2", None) if x > 0 => Some(V::Int(127 - x.leading_zeros() as i128)),
        ("count_ones", None) => Some(V::Int(x.count_ones() as i128)),
        // As a `usize`/`u64` (64 bits), the integers ranks and sizes are.
        ("leading_zeros", None) if (0..=u64::MAX as i128).contains(&x) => {
            Some(V::Int((x as u64).leading_zeros() as i128))
        }
        ("next_power_of_two", None) if (0..=1i128 << 62).contains(&x) => {
            Some(V::Int((x as u64).next_power_of_two() as i128))
        }
        ("abs_diff", Some(V::Int(y))) => Some(V::Int((x - y).abs())),
        ("signum", None) => Some(V::Int(x.signum())),
        ("isqrt", None) if x >= 0 => Some(V::Int((x as u64).isqrt() as i128)),
        ("checked_div", Some(V::Int(y))) => Some(V::Opt(if *y != 0 { Some(Box::new(V::Int(x / y))) } else { None })),
        ("into" | "try_into" | "to_owned" | "clone", _) => Some(V::Int(x)),
        _ => None,
    }
}

/// `x.m(arg)` on a float the check knows (`same`: the same on every rank), if it
/// computes it.
pub(super) fn float_method<'a>(x: f64, same: bool, m: &str, arg: Option<&V<'a>>) -> Option<V<'a>> {
    let y = match arg {
        Some(V::Float(y, s)) => Some((*y, *s)),
        Some(V::Int(i)) => Some((*i as f64, false)),
        _ => None,
    };
    let f = |r: f64| Some(V::Float(r, same));
    match (m, y) {
        ("sqrt", None) => f(x.sqrt()),
        ("cbrt", None) => f(x.cbrt()),
        ("floor", None) => f(x.floor()),
        ("ceil", None) => f(x.ceil()),
        ("round", None) => f(x.round()),
        ("trunc", None) => f(x.trunc()),
        ("fract", None) => f(x.fract()),
        ("abs", None) => f(x.abs()),
        ("signum", None) => f(x.signum()),
        ("recip", None) => f(x.recip()),
        ("exp", None) => f(x.exp()),
        ("exp2", None) => f(x.exp2()),
        ("ln", None) => f(x.ln()),
        ("log2", None) => f(x.log2()),
        ("log10", None) => f(x.log10()),
        ("sin", None) => f(x.sin()),
        ("cos", None) => f(x.cos()),
        ("tanh", None) => f(x.tanh()),
        ("powi", Some((y, s))) => Some(V::Float(x.powi(y as i32), same && s)),
        ("powf" | "log", Some((y, s))) => Some(V::Float(if m == "powf" { x.powf(y) } else { x.log(y) }, same && s)),
        ("min", Some((y, s))) => Some(V::Float(x.min(y), same && s)),
        ("max", Some((y, s))) => Some(V::Float(x.max(y), same && s)),
        ("is_nan", None) => Some(V::Bool(x.is_nan())),
        ("is_finite", None) => Some(V::Bool(x.is_finite())),
        ("is_sign_negative", None) => Some(V::Bool(x.is_sign_negative())),
        ("into" | "clone" | "to_owned", None) => f(x),
        _ => None,
    }
}
