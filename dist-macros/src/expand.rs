//! Code generation for `#[spmd]` and `#[dist_runtime::test]`.

use crate::{args, check};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::ItemFn;

/// The original item plus the error, so the rest of the crate keeps type-checking.
fn with_error(item: TokenStream, e: syn::Error) -> TokenStream {
    let err = e.to_compile_error();
    quote! { #item #err }
}

/// Registration of `entry_fn` under `module_path!()::name`, plus the constructor that
/// runs it when this process is started as one of its ranks.
fn register(name: &syn::Ident, body_fn: &syn::Ident) -> TokenStream {
    register_with(name, body_fn, false)
}

/// [`register`]; with `typed`, the body's parameter may be any `Comm<G>` (a distributed
/// test's): the world is handed over as `G` (`__private::test_comm`).
fn register_with(name: &syn::Ident, body_fn: &syn::Ident, typed: bool) -> TokenStream {
    let entry_fn = format_ident!("__dist_entry_{}", name);
    let ctor_fn = format_ident!("__dist_dispatch_{}", name);
    let addr_fn = format_ident!("__dist_addr_{}", name);
    let static_name = format_ident!("__DIST_ENTRY_{}", name);
    let name_str = name.to_string();
    let call = if typed {
        quote! {
            match ::dist_runtime::__private::test_comm(world) {
                ::core::result::Result::Ok(c) => ::dist_runtime::__private::finish_entry(#body_fn(c)),
                ::core::result::Result::Err(e) => {
                    ::dist_runtime::__private::finish_entry(::core::result::Result::<(), _>::Err(e))
                }
            }
        }
    } else {
        quote! { ::dist_runtime::__private::finish_entry(#body_fn(world)) }
    };
    quote! {
        #[doc(hidden)]
        #[allow(non_snake_case)]
        fn #entry_fn(
            world: ::dist_runtime::Comm<::dist_runtime::World>,
        ) -> ::core::result::Result<::std::vec::Vec<u8>, ::dist_runtime::__private::Failure> {
            #call
        }
        #[doc(hidden)]
        #[allow(non_snake_case)]
        fn #addr_fn() -> *const () {
            #body_fn as *const ()
        }
        #[doc(hidden)]
        #[allow(non_upper_case_globals)]
        #[::dist_runtime::__private::linkme::distributed_slice(::dist_runtime::__private::ENTRIES)]
        #[linkme(crate = ::dist_runtime::__private::linkme)]
        static #static_name: ::dist_runtime::__private::Entry = ::dist_runtime::__private::Entry {
            name: ::core::concat!(::core::module_path!(), "::", #name_str),
            run: #entry_fn,
            addr: #addr_fn,
        };
        #[doc(hidden)]
        #[allow(non_snake_case)]
        #[::dist_runtime::__private::ctor::ctor]
        fn #ctor_fn() {
            ::dist_runtime::__private::dispatch();
        }
    }
}

/// What to emit beside an error: the function as written (so its body still
/// type-checks), except that a `main` with parameters becomes a hidden function plus an
/// empty `main`, so rustc adds no "wrong type for main" noise to our message.
fn keep_for_ide(f: &ItemFn) -> TokenStream {
    if f.sig.ident == "main" {
        let mut body = f.clone();
        body.sig.ident = format_ident!("__dist_spmd_main");
        quote! { #[allow(dead_code)] #body fn main() {} }
    } else {
        quote! { #[allow(dead_code)] #f }
    }
}

pub fn spmd(attr: TokenStream, item: TokenStream) -> TokenStream {
    let f: ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(e) => {
            return with_error(
                item,
                syn::Error::new(e.span(), "#[spmd] goes on a function: `fn main(world: Comm<World>)`"),
            )
        }
    };
    let mut errs = Vec::new();
    let a = args::parse_spmd(attr).map_err(|e| errs.push(e)).ok();
    if let Err(e) = check::signature(&f, "an #[spmd] function") {
        errs.push(e);
    }
    if let Err(e) = args::combine(errs) {
        return with_error(keep_for_ide(&f), e);
    }
    let a = a.expect("parsed");
    let expanded = spmd_expand(&f);
    if !a.unchecked {
        let (t, s0) = (std::time::Instant::now(), check::steps());
        let v = check::communication(&f, &check::sizes(a.sizes), a.strict);
        // `DIST_CHECK_TIMES=FILE`: one line per checked entry (for docs/static-checks.md).
        if let Some(path) = std::env::var_os("DIST_CHECK_TIMES") {
            let file = f.sig.ident.span().local_file().map(|p| p.display().to_string()).unwrap_or_default();
            let line = format!(
                "{file}\t{}\t{:.1} ms\t{} steps\t{}\n",
                f.sig.ident,
                t.elapsed().as_secs_f64() * 1e3,
                check::steps() - s0,
                if v.errors.is_none() { "ok" } else { "error" }
            );
            append(&path, &line);
        }
        // `DIST_CHECK_REPORT=FILE` (set by `cargo spmd check`): what was proven, per entry.
        if let Some(path) = std::env::var_os("DIST_CHECK_REPORT") {
            append(&path, &report_line(&f.sig.ident.to_string(), a.strict, &v));
        }
        let warnings = unfollowed_warnings(&v);
        if let Some(e) = v.errors {
            return with_error(quote! { #expanded #warnings }, e);
        }
        return quote! { #expanded #warnings };
    }
    expanded
}

fn append(path: &std::ffi::OsStr, line: &str) {
    use std::io::Write;
    if let Ok(mut out) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
        let _ = out.write_all(line.as_bytes());
    }
}

/// A JSON string.
fn json(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn json_sizes(v: &[usize]) -> String {
    format!("[{}]", v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(","))
}

/// One line of JSON for `cargo spmd check`: the entry, the sizes proven, unsupported and
/// left open, each construct not followed (line, sizes, why) and the first error.
fn report_line(entry: &str, strict: bool, v: &check::Verdict) -> String {
    let unfollowed: Vec<String> = v
        .unfollowed
        .iter()
        .map(|u| format!("{{\"line\":{},\"sizes\":{},\"what\":{}}}", u.line, json_sizes(&u.sizes), json(&u.what)))
        .collect();
    let error = v.errors.as_ref().map_or("null".to_string(), |e| {
        let line = e.span().start().line;
        json(&format!("line {line}: {e}"))
    });
    format!(
        "{{\"file\":{},\"entry\":{},\"strict\":{strict},\"proven\":{},\"unsupported\":{},\"open\":{},\"unfollowed\":[{}],\"error\":{error}}}\n",
        json(&v.file),
        json(entry),
        json_sizes(&v.proven),
        json_sizes(&v.unsupported),
        json_sizes(&v.open),
        unfollowed.join(",")
    )
}

/// World sizes as ranges: "2..=8, 12, 16".
fn sizes_text(v: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        out.push(if j > i + 1 {
            format!("{}..={}", v[i], v[j])
        } else if j == i + 1 {
            format!("{}, {}", v[i], v[j])
        } else {
            v[i].to_string()
        });
        i = j + 1;
    }
    out.join(", ")
}

/// Warnings on stable Rust for what the check could not follow: each a use of a
/// deprecated constant, spanned at the construct (rustc prints the note). The check is
/// never silently off: `#[spmd(strict)]` makes these errors, `#[spmd(unchecked)]`
/// turns the check off.
fn unfollowed_warnings(v: &check::Verdict) -> TokenStream {
    let proven = if v.proven.is_empty() {
        "no world size".to_string()
    } else {
        format!("world sizes {}", sizes_text(&v.proven))
    };
    let items = v.unfollowed.iter().take(8).map(|u| {
        // rustc calls the constant deprecated; the note's first words say it is not.
        let note = check::layout(&format!(
            "not a deprecation: dist's compile-time communication check cannot follow {} at world size {}: those \
             sizes are left to the run-time checks ({proven} proven; `cargo spmd check` lists what was; \
             #[spmd(strict)] makes this an error)",
            u.what,
            sizes_text(&u.sizes)
        ));
        let (a, b) = u.span;
        let first = quote::quote_spanned!(a => dist_check_incomplete);
        let last = quote::quote_spanned!(b => ;);
        quote! {
            const _: () = {
                #[deprecated(note = #note)]
                #[allow(non_upper_case_globals)]
                const dist_check_incomplete: () = ();
                let _ = #first #last
            };
        }
    });
    quote! { #(#items)* }
}

fn spmd_expand(f: &ItemFn) -> TokenStream {
    let name = f.sig.ident.clone();
    if name == "main" {
        // The body becomes a plain function; `main` runs it as this rank.
        let mut body = f.clone();
        let body_name = format_ident!("__dist_spmd_main");
        body.sig.ident = body_name.clone();
        let attrs: Vec<_> = f.attrs.iter().filter(|a| !a.path().is_ident("doc")).collect();
        let reg = register(&name, &body_name);
        let vis = &f.vis;
        quote! {
            #body
            #reg
            #(#attrs)*
            #vis fn main() {
                let code = ::dist_runtime::__private::run_rank(|world| {
                    ::dist_runtime::__private::finish_entry(#body_name(world))
                });
                ::std::process::exit(code)
            }
        }
    } else {
        let reg = register(&name, &name);
        quote! { #f #reg }
    }
}

pub fn test(attr: TokenStream, item: TokenStream) -> TokenStream {
    let f: ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(e) => {
            return with_error(
                item,
                syn::Error::new(e.span(), "#[dist_runtime::test] goes on a function: `fn name(world: Comm<World>)`"),
            )
        }
    };
    // On error, keep the function (unused, so allow that) so the crate still type-checks.
    let keep = quote! { #[allow(dead_code)] #f };
    let mut errs = Vec::new();
    let a = args::parse_test(attr).map_err(|e| errs.push(e)).ok();
    if let Err(e) = check::signature(&f, "a distributed test") {
        errs.push(e);
    }
    if let Err(e) = args::combine(errs) {
        return with_error(keep, e);
    }
    let a = a.expect("parsed");
    let name = f.sig.ident.clone();
    let body_name = format_ident!("__dist_test_{}", name);
    let mut body = f.clone();
    body.sig.ident = body_name.clone();
    body.attrs.retain(|a| !a.path().is_ident("doc"));
    let passthrough: Vec<_> = f.attrs.iter().filter(|a| !a.path().is_ident("doc")).collect();
    let reg = register_with(&name, &body_name, true);
    let ranks = &a.ranks;
    let timeout = a.timeout;
    let name_str = name.to_string();
    quote! {
        #[allow(non_snake_case)]
        #body
        #reg
        #[test]
        #(#passthrough)*
        fn #name() {
            ::dist_runtime::__private::run_test(
                ::core::concat!(::core::module_path!(), "::", #name_str),
                &[#(#ranks),*],
                #timeout,
            );
        }
    }
}
