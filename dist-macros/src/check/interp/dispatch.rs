//! Methods of the package's own, called on values: on a struct of the package
//! (`trainer.step()`), on a value read from the inputs (`cfg.grid_for(n)`), and an
//! extension trait's on a `Result`, `Option` or communicator (`world.split(..)
//! .during("..")`).

use super::*;
use syn::{Expr, ExprMethodCall, FnArg};

impl<'a> Interp<'a> {
    /// A method of the package on a value of its own type (`trainer.step()`), or on a
    /// value read from the program's inputs (`cfg.grid_for(n)`): its body followed.
    pub(super) fn package_method(
        &mut self,
        e: &'a Expr,
        mc: &'a ExprMethodCall,
        recv: &V<'a>,
        m: &str,
    ) -> Result<Option<V<'a>>, Flow<'a>> {
        if let V::Struct(ty, _) = recv {
            // A variant's methods are its enum's (`Action::RecvAct` → `Action::peer`).
            let ty = ty.split("::").next().unwrap_or(ty);
            let key = format!("{ty}::{m}");
            if self.file_fns.contains_key(&key) {
                return self.method_on(e, mc, &key, recv);
            }
        }
        // A method of the package on a value read from the program's inputs (a parsed
        // command line whose fields are inputs: `cfg.grid_for(n)`): its body is followed
        // with `self` the input, so what it checks of the input against the world size
        // is seen (taking the input itself for the method's result skipped that check).
        // Only where one type of the package has a method of that name taking `self`.
        // A method of an extension trait the package implements for a type of std or
        // dist (`impl<T> Context<T> for dist_runtime::Result<T>`: `world.split(..)
        // .during("split")`, with `Ok(comm)` held as the communicator itself; for
        // `Option<T>`, for `Comm<G>`): its body followed with `self` the value.
        if let Some(key) = self.extension_method(recv, m) {
            return self.method_on(e, mc, &key, recv);
        }
        if matches!(recv, V::Uniform) && !input_method(m) {
            if let Some(key) = self.sole_method_named(m) {
                return self.method_on(e, mc, &key, recv);
            }
        }
        Ok(None)
    }

    /// The package's method `key` run on `recv` with the call's arguments (`None` where
    /// the package has no such method).
    fn method_on(
        &mut self,
        e: &'a Expr,
        mc: &'a ExprMethodCall,
        key: &str,
        recv: &V<'a>,
    ) -> Result<Option<V<'a>>, Flow<'a>> {
        let mut args = vec![recv.clone()];
        args.extend(self.args(&mc.args)?);
        let mut exprs: Vec<&'a Expr> = vec![&mc.receiver];
        exprs.extend(mc.args.iter());
        self.apply_method(e, key, exprs, args).transpose()
    }

    /// The package's one method named `m` that takes `self` (`Context::during` of an
    /// `impl Context<T> for dist_runtime::Result<T>`), if exactly one type has it.
    fn sole_method_named(&self, m: &str) -> Option<String> {
        let suffix = format!("::{m}");
        let mut found = self.file_fns.iter().filter(|(k, f)| {
            k.ends_with(&suffix)
                && k.matches("::").count() == 1
                && matches!(f.sig.inputs.first(), Some(FnArg::Receiver(_)))
        });
        match (found.next(), found.next()) {
            (Some((key, _)), None) => Some(key.clone()),
            _ => None,
        }
    }

    /// The package's method `m` of an extension trait on `Result`, `Option` or `Comm`
    /// that fits `recv` (a `Result` is held as its value), where it is the package's only
    /// method of that name and no method of a communicator.
    fn extension_method(&self, recv: &V<'a>, m: &str) -> Option<String> {
        if matches!(recv, V::Struct(..) | V::Uniform) || dist_ops::find(m).is_some() || model::comm_query_name(m) {
            return None;
        }
        let key = self.sole_method_named(m)?;
        let fits =
            matches!((key.split("::").next()?, recv), ("Result", _) | ("Option", V::Opt(_)) | ("Comm", V::Comm(_)));
        fits.then_some(key)
    }
}

/// Methods the check reads on an input itself (a string or number of the command line):
/// never taken for a method of the package of the same name.
fn input_method(m: &str) -> bool {
    matches!(
        m,
        "parse"
            | "parse_from"
            | "map"
            | "and_then"
            | "map_or"
            | "map_or_else"
            | "unwrap"
            | "unwrap_or"
            | "unwrap_or_default"
            | "unwrap_or_else"
            | "expect"
            | "clone"
            | "to_string"
            | "to_owned"
            | "as_str"
            | "len"
            | "is_empty"
            | "iter"
            | "get"
            | "ok"
            | "ok_or"
            | "ok_or_else"
    )
}
