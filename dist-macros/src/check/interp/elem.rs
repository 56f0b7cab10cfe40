//! Element types of buffers, where the source says them (an annotation, a typed
//! literal, a cast), so a reduce op that does not apply to its buffer's type is a
//! compile error rather than a run-time one: `ReduceOp::BXor` on an `f32` buffer,
//! `Max` on complex numbers, `Avg` on `bool`, `PreMulSum` on integers.

use super::*;
use quote::ToTokens;
use syn::{Expr, Lit, Pat, Type, UnOp};

/// The scope entry remembering a variable's element type (a name no variable can have).
fn elem_key(name: &str) -> String {
    format!("\u{0}elem:{name}")
}

const FLOATS: &[&str] = &["f16", "bf16", "f32", "f64"];
const INTS: &[&str] = &["u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "usize", "isize", "u128", "i128"];

/// The element type a type names: the innermost scalar in `Vec<f32>`, `[bool; 4]`,
/// `&mut [Complex<f64>]`.
fn of_type(t: &Type) -> Option<String> {
    let text = t.to_token_stream().to_string();
    let words: Vec<&str> = text.split(|c: char| !c.is_alphanumeric() && c != '_').filter(|w| !w.is_empty()).collect();
    if let Some(i) = words.iter().position(|w| *w == "Complex") {
        return Some(match words.get(i + 1) {
            Some(&"f32") => "Complex<f32>".into(),
            Some(&"f64") => "Complex<f64>".into(),
            _ => "a complex type".into(),
        });
    }
    words.iter().rev().find(|w| FLOATS.contains(w) || INTS.contains(w) || **w == "bool").map(|w| w.to_string())
}

impl<'a> Interp<'a> {
    /// The element type of the values `e` builds, where the source says it.
    pub(super) fn elem_of(&self, e: &Expr) -> Option<String> {
        match e {
            Expr::Lit(l) => match &l.lit {
                Lit::Float(f) => {
                    Some(if f.suffix().is_empty() { "a floating-point type".into() } else { f.suffix().into() })
                }
                Lit::Int(i) if !i.suffix().is_empty() => Some(i.suffix().into()),
                Lit::Bool(_) => Some("bool".into()),
                _ => None,
            },
            Expr::Array(a) => a.elems.iter().find_map(|x| self.elem_of(x)),
            Expr::Repeat(r) => self.elem_of(&r.expr),
            Expr::Paren(p) => self.elem_of(&p.expr),
            Expr::Group(g) => self.elem_of(&g.expr),
            Expr::Reference(r) => self.elem_of(&r.expr),
            Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => self.elem_of(&u.expr),
            Expr::Cast(c) => of_type(&c.ty),
            Expr::Call(c) => {
                let f = c.func.to_token_stream().to_string().replace(' ', "");
                if f.ends_with("Complex::new") {
                    c.args.iter().find_map(|a| self.elem_of(a)).map(|t| match t.as_str() {
                        "f32" => "Complex<f32>".into(),
                        "f64" => "Complex<f64>".into(),
                        _ => "a complex type".into(),
                    })
                } else if ["f16::", "bf16::"].iter().any(|p| f.starts_with(p)) {
                    Some(f.split("::").next().unwrap_or("f16").into())
                } else {
                    None
                }
            }
            Expr::Macro(m) if last_seg(&m.mac.path) == "vec" => {
                match self.macros.get(&(&m.mac as *const syn::Macro as usize)).map(|b| &**b) {
                    Some(MacroBody::Repeat(x, _)) => self.elem_of(x),
                    Some(MacroBody::Args(a)) => a.iter().find_map(|x| self.elem_of(x)),
                    None => None,
                }
            }
            Expr::MethodCall(mc) if matches!(mc.method.to_string().as_str(), "clone" | "to_vec" | "to_owned") => {
                self.elem_of(&mc.receiver)
            }
            Expr::Path(p) => match self.lookup(&elem_key(&p.path.get_ident()?.to_string())) {
                Some(V::Name(t)) => Some(t.clone()),
                _ => None,
            },
            _ => None,
        }
    }

    /// After `let PAT = init`: remember the element type of a simple binding.
    pub(super) fn note_elem(&mut self, pat: &Pat, init: Option<&Expr>) {
        let (name, ty) = match pat {
            Pat::Ident(pi) if pi.subpat.is_none() => (pi.ident.to_string(), None),
            Pat::Type(pt) => match &*pt.pat {
                Pat::Ident(pi) if pi.subpat.is_none() => (pi.ident.to_string(), Some(&*pt.ty)),
                _ => return,
            },
            _ => return,
        };
        let t = ty.and_then(of_type).or_else(|| init.and_then(|e| self.elem_of(e)));
        self.define(elem_key(&name), t.map_or(V::Unit, V::Name));
    }

    /// A reduce op that does not apply to the element type of `buf` (where known):
    /// the run-time check's rules, at compile time.
    pub(super) fn check_op_type(&self, e: &'a Expr, call: &str, buf: &Expr, op: &Expr) -> Result<(), Flow<'a>> {
        let Some(t) = self.elem_of(buf) else { return Ok(()) };
        let name = match op {
            Expr::Path(p) => last_seg(&p.path),
            Expr::Call(c) => match &*c.func {
                Expr::Path(p) => last_seg(&p.path),
                _ => return Ok(()),
            },
            _ => return Ok(()),
        };
        let float = FLOATS.contains(&t.as_str()) || t == "a floating-point type";
        let complex = t.contains("omplex");
        let why = match name.as_str() {
            "PreMulSum" if !float && !complex => "is defined on floating-point and complex types only",
            "Avg" if t == "bool" => "is not defined on bool (as torch)",
            "Max" | "Min" if complex => "needs an order, and complex numbers have none",
            "BAnd" | "BOr" | "BXor" if float || complex => "is defined on integer types (and bool) only",
            _ => return Ok(()),
        };
        let text = buf.to_token_stream().to_string().replace("& mut ", "&mut ");
        Err(Flow::Stop(Stop::Invalid {
            site: self.site(e),
            msg: format!(
                "`{call}` with ReduceOp::{name} on `{text}`, whose elements are {}: ReduceOp::{name} {why}; pick an \
                 op that applies, or convert the buffer",
                if t.starts_with("a ") { t.clone() } else { format!("`{t}`") }
            ),
        }))
    }
}
