//! `println!`, `assert!`, `vec!` and friends: macro bodies evaluated as expressions.

use super::*;
use syn::Expr;

impl<'a> Interp<'a> {
    pub(super) fn mac(&mut self, m: &'a syn::Macro) -> R<'a> {
        let name = last_seg(&m.path);
        let macros = self.macros;
        let body = macros.get(&(m as *const syn::Macro as usize)).map(|b| &**b);
        if let Some(MacroBody::Expanded(b)) = body {
            return self.expanded(m, b);
        }
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
                    Some(V::Bool(false)) if self.speculative == 0 && !self.assumes_checks_pass() => Err(Flow::Fail),
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
                if known && (eq != name.ends_with("_eq")) && self.speculative == 0 && !self.assumes_checks_pass() {
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
                    Some(args) => Ok(V::list(self.args(args)?)),
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

    /// A call of one of the package's macros: its expansion, run in a scope of its own
    /// (what the definition binds with `let` is its own, as rustc's hygiene keeps it),
    /// except the names the caller's tokens bind (`let $name = ..`), which are the
    /// caller's from here on.
    fn expanded(&mut self, m: &'a syn::Macro, b: &'a syn::Block) -> R<'a> {
        use syn::visit::Visit;
        struct Bound(Vec<String>, Option<(usize, usize)>);
        impl<'ast> Visit<'ast> for Bound {
            fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
                let at = p.ident.span().start();
                if Some((at.line, at.column)) != self.1 {
                    self.0.push(p.ident.to_string());
                }
                syn::visit::visit_pat_ident(self, p);
            }
        }
        let call = m.path.segments.last().map(|s| s.ident.span().start()).map(|a| (a.line, a.column));
        let mut bound = Bound(Vec::new(), call);
        for s in &b.stmts {
            if let syn::Stmt::Local(l) = s {
                bound.visit_pat(&l.pat);
            }
        }
        self.scopes.push();
        let r = self.stmts(&b.stmts);
        let kept: Vec<(String, V<'a>)> =
            bound.0.into_iter().filter_map(|n| self.lookup(&n).cloned().map(|v| (n, v))).collect();
        self.scopes.pop();
        for (n, v) in kept {
            self.define(n, v);
        }
        r
    }

    /// `[x; k]` and `vec![x; k]`: a list of `k` copies when `k` is small and known.
    pub(super) fn repeat(&mut self, x: &'a Expr, k: &'a Expr) -> R<'a> {
        let v = self.expr(x)?;
        let n = match self.expr(k)? {
            // A count read from the program's inputs: this run's sample.
            V::Uniform => V::Int(super::uniform_number()),
            n => n,
        };
        Ok(match n {
            V::Int(k) if (0..=REPEAT_BOUND).contains(&k) => V::list(vec![v; k as usize]),
            // (Too long to hold item by item: its length is still known.)
            V::Int(k) if k > REPEAT_BOUND && !v.has_comm() => super::long::long_buffer(&v, k),
            // (Its length is what `k` is: data computed from it differs where `k` does;
            // its length is `k`'s form, `super::forms`.)
            n => {
                let buf = V::derived(&[&v, &n]);
                super::forms::note_len(&buf, &n);
                buf
            }
        })
    }
}
