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

thread_local! {
    /// What [`of_type`] and [`call_text`] found, by the address of the syntax node, for
    /// one check (printing a node crosses the compiler's bridge: the check's dearest
    /// step before it was kept).
    static TEXTS: std::cell::RefCell<FxMap<usize, Option<String>>> = std::cell::RefCell::new(FxMap::default());
}

/// Forgets [`TEXTS`] (at the start of each check: addresses may be reused).
pub(super) fn reset() {
    TEXTS.with(|m| m.borrow_mut().clear());
}

/// `f(node)`, once per syntax node of the check.
fn cached<T>(node: &T, f: impl FnOnce(&T) -> Option<String>) -> Option<String> {
    let key = node as *const T as usize;
    if let Some(v) = TEXTS.with(|m| m.borrow().get(&key).cloned()) {
        return v;
    }
    let v = f(node);
    TEXTS.with(|m| m.borrow_mut().insert(key, v.clone()));
    v
}

/// The element type a type names: the innermost scalar in `Vec<f32>`, `[bool; 4]`,
/// `&mut [Complex<f64>]`.
fn of_type(t: &Type) -> Option<String> {
    cached(t, of_type_uncached)
}

/// The called path of a call, without spaces (`Complex::new`, `f16::from_f32`).
fn call_text(c: &syn::ExprCall) -> String {
    cached(c, |c| Some(c.func.to_token_stream().to_string().replace(' ', ""))).unwrap_or_default()
}

fn of_type_uncached(t: &Type) -> Option<String> {
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
    /// (`e` is of the checked syntax, alive for the whole check: the texts found are kept
    /// by its nodes' addresses.)
    pub(super) fn elem_of(&self, e: &'a Expr) -> Option<String> {
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
                let f = call_text(c);
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
                    Some(MacroBody::Expanded(_)) | None => None,
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
    pub(super) fn note_elem(&mut self, pat: &'a Pat, init: Option<&'a Expr>) {
        match pat {
            Pat::Ident(pi) if pi.subpat.is_none() => self.note_elem_of(&pi.ident, None, init),
            Pat::Type(pt) => self.note_param(pt, init),
            _ => {}
        }
    }

    /// A typed binding (`let x: T = init`, a parameter `x: T`).
    pub(super) fn note_param(&mut self, pt: &'a syn::PatType, init: Option<&'a Expr>) {
        if let Pat::Ident(pi) = &*pt.pat {
            if pi.subpat.is_none() {
                self.note_elem_of(&pi.ident, Some(&pt.ty), init);
            }
        }
    }

    fn note_elem_of(&mut self, name: &syn::Ident, ty: Option<&'a Type>, init: Option<&'a Expr>) {
        let t = ty.and_then(of_type).or_else(|| init.and_then(|e| self.elem_of(e)));
        self.define(elem_key(&name.to_string()), t.map_or(V::Unit, V::Name));
    }

    /// A reduce op that does not apply to the element type of `buf` (where known):
    /// the run-time check's rules, at compile time.
    pub(super) fn check_op_type(&self, e: &'a Expr, call: &str, buf: &'a Expr, op: &Expr) -> Result<(), Flow<'a>> {
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
