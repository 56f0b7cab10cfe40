//! Shape checks on the annotated function: one `Comm` parameter, no `async`, no generics.

use syn::{FnArg, ItemFn};

/// Collects every problem with the function's signature (all reported at once).
pub fn signature(f: &ItemFn, what: &str) -> syn::Result<()> {
    let mut errs: Vec<syn::Error> = Vec::new();
    let sig = &f.sig;
    if let Some(a) = &sig.asyncness {
        errs.push(syn::Error::new_spanned(a, format!("{what} cannot be `async`: ranks are processes; remove `async` and block on futures inside if you need them")));
    }
    if !sig.generics.params.is_empty() {
        errs.push(syn::Error::new_spanned(&sig.generics, format!("{what} cannot be generic: each entry is one concrete function; move the generic code into a helper it calls")));
    }
    match sig.inputs.len() {
        1 => {
            if let Some(FnArg::Receiver(r)) = sig.inputs.first() {
                errs.push(syn::Error::new_spanned(
                    r,
                    format!("{what} must be a free function taking `world: Comm<World>`, not a method"),
                ));
            }
        }
        0 => errs.push(syn::Error::new_spanned(
            &sig.ident,
            format!(
                "{what} needs the world communicator as its parameter: write `fn {}(world: Comm<World>)`",
                sig.ident
            ),
        )),
        _ => {
            let extra = sig.inputs.iter().nth(1).expect("len > 1");
            errs.push(syn::Error::new_spanned(
                extra,
                format!("{what} takes exactly one parameter, `world: Comm<World>`; derive other communicators from it inside (subgroup, split, mesh2)"),
            ));
        }
    }
    crate::args::combine(errs)
}
