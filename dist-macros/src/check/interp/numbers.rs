//! The methods of numbers the check knows exactly: integers (`div_ceil`, `pow`,
//! `rem_euclid`, …) and floats (`sqrt`, `floor`, `ceil`, `powi`, …).

use super::V;

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
        ("wrapping_add" | "saturating_add", Some(V::Int(y))) => Some(V::Int(x + y)),
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
