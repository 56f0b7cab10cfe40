//! Parsing of the macros' arguments.

use proc_macro2::TokenStream;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, ExprLit, Lit, Meta, Token};

/// Arguments of `#[spmd(..)]`.
#[derive(Default)]
pub struct SpmdArgs {
    /// World sizes the compile-time check covers (default: 1..=8 and 12, 16, 17, 32, 64).
    pub sizes: Option<(usize, usize)>,
    /// Whether "cannot decide" is an error.
    pub strict: bool,
    /// Skip the communication check (for programs that exercise the run-time checks).
    pub unchecked: bool,
}

/// Arguments of `#[dist_runtime::test(..)]`.
pub struct TestArgs {
    pub ranks: Vec<usize>,
    pub timeout: f64,
}

struct MetaList(Punctuated<Meta, Token![,]>);

impl Parse for MetaList {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        Ok(MetaList(Punctuated::parse_terminated(input)?))
    }
}

fn int(e: &Expr) -> syn::Result<usize> {
    match e {
        Expr::Lit(ExprLit { lit: Lit::Int(i), .. }) => i.base10_parse(),
        other => Err(syn::Error::new_spanned(other, "expected an integer literal")),
    }
}

fn positive(e: &Expr, what: &str) -> syn::Result<usize> {
    let v = int(e)?;
    if v == 0 {
        return Err(syn::Error::new_spanned(e, format!("{what} must be at least 1: a world has one rank or more")));
    }
    if v > 1024 {
        return Err(syn::Error::new_spanned(e, format!("{what} = {v} is more than the limit of 1024 ranks")));
    }
    Ok(v)
}

/// All the errors as one (each keeps its span), or `Ok` when there are none.
pub(crate) fn combine(errs: Vec<syn::Error>) -> syn::Result<()> {
    let mut it = errs.into_iter();
    match it.next() {
        None => Ok(()),
        Some(mut first) => {
            for e in it {
                first.combine(e);
            }
            Err(first)
        }
    }
}

pub fn parse_spmd(attr: TokenStream) -> syn::Result<SpmdArgs> {
    let list: MetaList = syn::parse2(attr)?;
    let mut out = SpmdArgs::default();
    let mut errs = Vec::new();
    for meta in list.0 {
        let r: syn::Result<()> = (|| {
            match &meta {
                Meta::Path(p) if p.is_ident("strict") => out.strict = true,
                Meta::Path(p) if p.is_ident("unchecked") => out.unchecked = true,
                Meta::NameValue(nv) if nv.path.is_ident("ranks") => {
                    let n = positive(&nv.value, "ranks")?;
                    out.sizes = Some((n, n));
                }
                Meta::NameValue(nv) if nv.path.is_ident("sizes") => match &nv.value {
                    Expr::Range(r) if matches!(r.limits, syn::RangeLimits::Closed(_)) => {
                        let (Some(a), Some(b)) = (&r.start, &r.end) else {
                            return Err(syn::Error::new_spanned(r, "write sizes = A..=B with both bounds"));
                        };
                        let (a, b) = (positive(a, "sizes")?, positive(b, "sizes")?);
                        if a > b || b > 4096 {
                            return Err(syn::Error::new_spanned(r, "sizes = A..=B needs 1 <= A <= B <= 4096"));
                        }
                        out.sizes = Some((a, b));
                    }
                    other => return Err(syn::Error::new_spanned(other, "write sizes = A..=B, e.g. sizes = 2..=16")),
                },
                other => {
                    return Err(syn::Error::new_spanned(
                        other,
                        "unknown #[spmd] option; expected `ranks = N`, `sizes = A..=B`, `strict` or `unchecked`",
                    ))
                }
            }
            Ok(())
        })();
        if let Err(e) = r {
            errs.push(e);
        }
    }
    combine(errs)?;
    Ok(out)
}

pub fn parse_test(attr: TokenStream) -> syn::Result<TestArgs> {
    let list: MetaList = syn::parse2(attr)?;
    let mut out = TestArgs { ranks: vec![2], timeout: 60.0 };
    let mut errs = Vec::new();
    for meta in list.0 {
        let r: syn::Result<()> = (|| {
            match &meta {
                Meta::NameValue(nv) if nv.path.is_ident("ranks") => match &nv.value {
                    Expr::Array(a) => {
                        if a.elems.is_empty() {
                            return Err(syn::Error::new_spanned(a, "ranks = [..] needs at least one world size"));
                        }
                        out.ranks = a.elems.iter().map(|e| positive(e, "ranks")).collect::<syn::Result<_>>()?;
                    }
                    e => out.ranks = vec![positive(e, "ranks")?],
                },
                Meta::NameValue(nv) if nv.path.is_ident("timeout") => {
                    let secs = match &nv.value {
                        Expr::Lit(ExprLit { lit: Lit::Int(i), .. }) => i.base10_parse::<u64>()? as f64,
                        Expr::Lit(ExprLit { lit: Lit::Float(f), .. }) => f.base10_parse::<f64>()?,
                        other => {
                            return Err(syn::Error::new_spanned(
                                other,
                                "timeout is a number of seconds, e.g. timeout = 30",
                            ))
                        }
                    };
                    if secs <= 0.0 {
                        return Err(syn::Error::new_spanned(&nv.value, "timeout must be positive"));
                    }
                    out.timeout = secs;
                }
                other => {
                    return Err(syn::Error::new_spanned(
                        other,
                        "unknown test option; expected `ranks = N`, `ranks = [N, ..]` or `timeout = SECS`",
                    ))
                }
            }
            Ok(())
        })();
        if let Err(e) = r {
            errs.push(e);
        }
    }
    combine(errs)?;
    Ok(out)
}
