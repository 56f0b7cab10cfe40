//! The package the check reads around an entry: the entry's file, the module files it
//! declares, inline modules and a binary's library tree; its functions (each free one
//! also under its module's key), methods, enums, structs, constants and aliases.

use super::interp;
use super::macro_rules;
use super::Pos;
use std::collections::HashMap;
use syn::ItemFn;

/// `path` relative to the package being built, as messages name files.
pub(super) fn relative(path: &std::path::Path) -> String {
    let base = std::env::var("CARGO_MANIFEST_DIR").map(std::path::PathBuf::from).unwrap_or_default();
    path.strip_prefix(&base).unwrap_or(path).display().to_string()
}

/// `src/lib.rs` of the package holding `file`, if it has one.
pub(super) fn library_of(file: &std::path::Path) -> Option<std::path::PathBuf> {
    let mut dir = file.parent()?;
    for _ in 0..8 {
        if dir.join("Cargo.toml").is_file() {
            let lib = dir.join("src").join("lib.rs");
            return lib.is_file().then_some(lib);
        }
        dir = dir.parent()?;
    }
    None
}

/// Functions, methods (`Type::method`), tuple-struct constructors and consts of the
/// package's source files the check reads: the entry's file, the module files it
/// declares (`mod comms;` → `comms.rs` or `comms/mod.rs`, recursively), inline modules,
/// and the library crate's tree for a binary. The first definition of a name wins (the
/// entry's own file first).
#[derive(Default)]
pub(super) struct PackageItems {
    pub(super) fns: HashMap<String, ItemFn>,
    /// Each `const` with what names it besides its own name: its module's path
    /// (`data` for `data::BLOCKS`; empty at the crate's root) or, for an associated
    /// constant, its type (`Model` for `Model::LAYERS` and `Self::LAYERS`).
    pub(super) consts: Vec<interp::PackageConst>,
    /// Traits' provided methods (`fn grad(&self) -> Option<..> { None }`), by trait and
    /// method, and each `impl Trait for Type` with the methods it writes: a type that
    /// leaves one out runs the trait's body ([`Self::finish`]).
    pub(super) provided: std::collections::BTreeMap<(String, String), syn::TraitItemFn>,
    pub(super) trait_impls: Vec<(String, String, Vec<String>)>,
    /// `type A = T;` of the package, as (`A`, `T`).
    pub(super) aliases: Vec<(String, String)>,
    pub(super) seen: std::collections::HashSet<std::path::PathBuf>,
    /// The file of each function, by key (for messages).
    pub(super) files: HashMap<String, String>,
    /// The file being read, for messages (`src/comms.rs`).
    pub(super) name: String,
    /// Where the entry's name is (line, column), and the entry as read from its file.
    pub(super) entry_at: Option<Pos>,
    pub(super) entry: Option<ItemFn>,
    /// The module being read (`["solver"]` in `src/solver.rs`), for the keys that keep
    /// two modules' functions of one name apart (`solver/apply`, `serial/apply`).
    pub(super) module: Vec<String>,
}

impl PackageItems {
    /// Remembers the file `key` is defined in (the first definition wins).
    fn note_at(&mut self, key: &str) {
        self.files.entry(key.to_string()).or_insert_with(|| self.name.clone());
    }

    pub(super) fn file(&mut self, path: &std::path::Path, entry: &str, depth: usize) {
        if depth > 16 || !self.seen.insert(path.to_path_buf()) {
            return;
        }
        let Some(text) = std::fs::read_to_string(path).ok() else { return };
        let Some(file) = syn::parse_file(&text).ok() else { return };
        let saved_name = std::mem::replace(&mut self.name, relative(path));
        // Where `mod x;` of this file looks: beside it for main.rs, lib.rs and mod.rs,
        // else in the directory named after it.
        // A crate root (main.rs, lib.rs, a file of bin/, examples/, tests/, benches/, or
        // outside any src/) and mod.rs declare theirs beside them.
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        let dir = path.parent().map(|d| d.to_path_buf()).unwrap_or_default();
        let in_dir = |d: &str| path.parent().is_some_and(|p| p.ends_with(d));
        let root = matches!(stem, "main" | "lib" | "mod")
            || ["bin", "examples", "tests", "benches"].iter().any(|d| in_dir(d))
            || !path.components().any(|c| c.as_os_str() == "src");
        let here = if root { dir.clone() } else { dir.join(stem) };
        self.items(file.items, &here, &dir, entry, depth);
        self.name = saved_name;
    }

    /// An enum's constructors and, for unit variants only (a mode from the command
    /// line), the list of its variants, as functions the check follows.
    fn enum_items(&mut self, en: &syn::ItemEnum) {
        let name = &en.ident;
        // An enum of unit variants only (a mode from the command line): its
        // variants, for a value read from the program's inputs to take each.
        if !en.variants.is_empty() && en.variants.iter().all(|v| matches!(v.fields, syn::Fields::Unit)) {
            let vs = en.variants.iter().map(|v| &v.ident);
            if let Ok(marker) = syn::parse2::<ItemFn>(quote::quote! { fn __unit_variants() -> #name { [#(#vs),*] } }) {
                self.fns.entry(format!("{name}::__unit_variants")).or_insert(marker);
            }
        }
        for v in &en.variants {
            let vid = &v.ident;
            if let Ok(marker) = syn::parse2::<ItemFn>(quote::quote! { fn __enum() -> #name {} }) {
                // By the variant's name (the first enum that has it), and by the enum's
                // and the variant's (`State::Busy` where `Slot` has a `Busy` too).
                self.fns.entry(format!("{name}::{vid}::__variant")).or_insert(marker.clone());
                self.fns.entry(format!("{vid}::__enum")).or_insert(marker);
            }
            if let syn::Fields::Unnamed(u) = &v.fields {
                let params: Vec<syn::Ident> = (0..u.unnamed.len()).map(|i| quote::format_ident!("__f{}", i)).collect();
                let idx = (0..u.unnamed.len()).map(syn::Index::from);
                let f: syn::Result<ItemFn> = syn::parse2(quote::quote! {
                    fn #vid(#(#params: _),*) -> #name { #name::#vid { #(#idx: #params),* } }
                });
                if let Ok(f) = f {
                    self.fns.entry(format!("{name}::{vid}")).or_insert(f.clone());
                    self.fns.entry(vid.to_string()).or_insert(f);
                }
            }
        }
    }

    /// A struct's `#[derive(Default)]` and a tuple struct's constructor, as functions the
    /// check follows.
    fn struct_items(&mut self, st: &syn::ItemStruct) {
        for (i, f) in st.fields.iter().enumerate() {
            // (A tuple struct's fields by position, "0", "1", as the check names them.)
            let name = f.ident.as_ref().map_or_else(|| i.to_string(), |n| n.to_string());
            interp::note_field_type(&st.ident.to_string(), &name, &f.ty);
        }
        // `#[derive(Default)]`: `Config::default()` is each field's default,
        // by its declared type (numbers 0, `Vec` empty, `Option` `None`).
        if derives(&st.attrs, "Default") {
            let name = &st.ident;
            let values = st.fields.iter().map(|f| default_of(&f.ty));
            let body = match &st.fields {
                syn::Fields::Named(n) => {
                    let names = n.named.iter().map(|f| f.ident.clone());
                    quote::quote! { #name { #(#names: #values),* } }
                }
                syn::Fields::Unnamed(_) => {
                    let idx = (0..st.fields.len()).map(syn::Index::from);
                    quote::quote! { #name { #(#idx: #values),* } }
                }
                syn::Fields::Unit => quote::quote! { #name },
            };
            let f: syn::Result<ItemFn> = syn::parse2(quote::quote! { fn default() -> #name { #body } });
            if let Ok(f) = f {
                self.fns.entry(format!("{name}::default")).or_insert(f);
            }
        }
        // A unit struct (`struct Tanh;`) named as a value is that struct.
        if matches!(st.fields, syn::Fields::Unit) {
            let name = &st.ident;
            if let Ok(marker) = syn::parse2::<ItemFn>(quote::quote! { fn __unit_struct() -> #name { #name {} } }) {
                self.fns.entry(format!("{name}::__unit_struct")).or_insert(marker);
            }
        }
        // A tuple struct's constructor: `Pair(a, b)` is `Pair { 0: a, 1: b }`.
        if let syn::Fields::Unnamed(u) = &st.fields {
            let name = &st.ident;
            let params: Vec<syn::Ident> = (0..u.unnamed.len()).map(|i| quote::format_ident!("__f{}", i)).collect();
            let idx = (0..u.unnamed.len()).map(syn::Index::from);
            let f: syn::Result<ItemFn> = syn::parse2(quote::quote! {
                fn #name(#(#params: _),*) -> #name { #name { #(#idx: #params),* } }
            });
            if let Ok(f) = f {
                self.fns.entry(name.to_string()).or_insert(f);
            }
        }
    }

    /// The entry, marked with its module as a helper is (`interp::module_of`): what
    /// that module imports names its calls.
    fn set_entry(&mut self, mut g: ItemFn) {
        let module = self.module.join("::");
        g.attrs.push(syn::parse_quote!(#[dist_module = #module]));
        self.entry = Some(g);
    }

    /// `here`: where `mod x;` looks; `dir`: the directory of the file being read (what
    /// `#[path = ".."]` is relative to).
    fn items(
        &mut self,
        items: Vec<syn::Item>,
        here: &std::path::Path,
        dir: &std::path::Path,
        entry: &str,
        depth: usize,
    ) {
        let is_entry = |g: &ItemFn| {
            g.attrs.iter().any(|a| a.path().segments.last().is_some_and(|s| s.ident == "spmd" || s.ident == "test"))
        };
        for item in items {
            match item {
                syn::Item::Fn(g)
                    if g.sig.ident == entry
                        && self.entry.is_none()
                        && self.entry_at
                            == Some((g.sig.ident.span().start().line, g.sig.ident.span().start().column)) =>
                {
                    self.set_entry(g)
                }
                syn::Item::Fn(mut g) if g.sig.ident != entry && !is_entry(&g) => {
                    let name = g.sig.ident.to_string();
                    // Each free function also under its module's key, and marked with
                    // its module: a call of `apply` inside `solver.rs` is `solver/apply`,
                    // whatever `apply` another module defines (`interp::module_key`).
                    let module = self.module.join("::");
                    g.attrs.push(syn::parse_quote!(#[dist_module = #module]));
                    let key = format!("{module}/{name}");
                    self.note_at(&key);
                    self.fns.entry(key).or_insert_with(|| g.clone());
                    self.note_at(&name);
                    self.fns.entry(name).or_insert(g);
                }
                syn::Item::Const(c) => self.consts.push((self.module.join("::"), false, c)),
                syn::Item::Use(u) => interp::note_use(&self.module.join("::"), &u.tree),
                syn::Item::Trait(t) => {
                    for it in t.items {
                        if let syn::TraitItem::Fn(m) = it {
                            if m.default.is_some() {
                                self.provided.entry((t.ident.to_string(), m.sig.ident.to_string())).or_insert(m);
                            }
                        }
                    }
                }
                // `type Grads = BTreeMap<&'static str, Vec<f64>>`: `Grads::new()` and
                // `Grads::from([..])` build the collection it names.
                syn::Item::Type(t) => {
                    if let syn::Type::Path(tp) = &*t.ty {
                        if let Some(last) = tp.path.segments.last() {
                            interp::note_alias(&t.ident.to_string(), &last.ident.to_string());
                            self.aliases.push((t.ident.to_string(), last.ident.to_string()));
                        }
                    }
                }
                // Inherent impls, and trait impls of the package's types (`impl Default
                // for Config`): `Config::default()` is followed like `Config::new()`.
                syn::Item::Impl(imp) => self.impl_items(imp),
                // An enum's variants: `Action::RecvAct(mb)` and `RecvAct(mb)` build a value
                // the check follows like a struct (`Action::RecvAct` with field `0`), and
                // `match` tells the variants apart (a schedule built as `Vec<Action>`).
                syn::Item::Enum(en) => self.enum_items(&en),
                syn::Item::Struct(st) => self.struct_items(&st),
                syn::Item::Macro(m) if m.ident.is_some() => macro_rules::define(&m),
                // A call of the package's macro among items: the items it writes
                // (`impl_monoid!(Sum, i64)`).
                syn::Item::Macro(m) if depth < macro_rules::EXPANSION_DEPTH => {
                    if let Some(items) = macro_rules::expand(&m.mac).and_then(|ts| syn::parse2::<syn::File>(ts).ok()) {
                        self.items(items.items, here, dir, entry, depth + 1);
                    }
                }
                syn::Item::Mod(m) => {
                    self.module.push(m.ident.to_string());
                    self.module_items(m, here, dir, entry, depth);
                    self.module.pop();
                }
                _ => {}
            }
        }
    }

    /// Inherent impls, and trait impls of the package's types (`impl Default for
    /// Config`): each method as `Type::method`, each associated const by its type.
    fn impl_items(&mut self, imp: syn::ItemImpl) {
        let syn::Type::Path(tp) = &*imp.self_ty else { return };
        let Some(ty) = tp.path.segments.last().map(|s| s.ident.to_string()) else { return };
        let mut written = Vec::new();
        for it in imp.items {
            match it {
                syn::ImplItem::Fn(mut m) => {
                    let key = format!("{ty}::{}", m.sig.ident);
                    written.push(m.sig.ident.to_string());
                    self.note_at(&key);
                    // Its module, as a free function's (`interp::module_of`).
                    let module = self.module.join("::");
                    m.attrs.push(syn::parse_quote!(#[dist_module = #module]));
                    // Its `Self` type, for what `self` may hold (`interp::receivers`).
                    let self_ty = quote::ToTokens::to_token_stream(&*imp.self_ty).to_string();
                    m.attrs.push(syn::parse_quote!(#[dist_self = #self_ty]));
                    let f = ItemFn { attrs: m.attrs, vis: m.vis, sig: m.sig, block: Box::new(m.block) };
                    self.fns.entry(key).or_insert(f);
                }
                syn::ImplItem::Const(c) => {
                    let c = syn::ItemConst {
                        attrs: c.attrs,
                        vis: c.vis,
                        const_token: c.const_token,
                        ident: c.ident,
                        generics: c.generics,
                        colon_token: c.colon_token,
                        ty: Box::new(c.ty),
                        eq_token: c.eq_token,
                        expr: Box::new(c.expr),
                        semi_token: c.semi_token,
                    };
                    self.consts.push((ty.clone(), true, c));
                }
                _ => {}
            }
        }
        if let Some((_, tr, _)) = &imp.trait_ {
            if let Some(t) = tr.segments.last() {
                self.trait_impls.push((ty, t.ident.to_string(), written));
            }
        }
    }

    /// Once every file is read: a type that implements a trait of the package without
    /// writing one of its provided methods runs the trait's body (`layer.grad()` on a
    /// layer that keeps the default), as `Type::method`.
    pub(super) fn finish(&mut self) {
        // `type W = State;`: `W::Busy(t)` builds `State::Busy(t)` (unit variants through
        // an alias are resolved where a path is read: `enum_of_path`).
        for (alias, target) in std::mem::take(&mut self.aliases) {
            let variants: Vec<(String, ItemFn)> = self
                .fns
                .iter()
                .filter_map(|(k, f)| {
                    let v = k.strip_prefix(&format!("{target}::"))?;
                    let unnamed = !v.contains("::") && self.fns.contains_key(&format!("{k}::__variant"));
                    unnamed.then(|| (format!("{alias}::{v}"), f.clone()))
                })
                .collect();
            for (k, f) in variants {
                self.fns.entry(k).or_insert(f);
            }
        }
        for (ty, tr, written) in std::mem::take(&mut self.trait_impls) {
            for ((t, name), m) in &self.provided {
                if *t != tr || written.contains(name) {
                    continue;
                }
                let Some(block) = m.default.clone() else { continue };
                let mut attrs = m.attrs.clone();
                attrs.push(syn::parse_quote!(#[dist_self = #ty]));
                let f = ItemFn { attrs, vis: syn::Visibility::Inherited, sig: m.sig.clone(), block: Box::new(block) };
                self.fns.entry(format!("{ty}::{name}")).or_insert(f);
            }
        }
    }

    /// A `mod` item: its inline items, or the file it names.
    fn module_items(
        &mut self,
        m: syn::ItemMod,
        here: &std::path::Path,
        dir: &std::path::Path,
        entry: &str,
        depth: usize,
    ) {
        let sub = here.join(m.ident.to_string());
        let at = m.attrs.iter().find(|a| a.path().is_ident("path")).and_then(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        });
        match (m.content, at) {
            (Some((_, inner)), _) => self.items(inner, &sub, dir, entry, depth + 1),
            (None, Some(p)) => self.file(&dir.join(p), entry, depth + 1),
            (None, None) => {
                let flat = here.join(format!("{}.rs", m.ident));
                let nested = sub.join("mod.rs");
                if flat.is_file() {
                    self.file(&flat, entry, depth + 1);
                } else if nested.is_file() {
                    self.file(&nested, entry, depth + 1);
                }
            }
        }
    }
}

/// Whether `attrs` hold `#[derive(.., name, ..)]`.
fn derives(attrs: &[syn::Attribute], name: &str) -> bool {
    attrs.iter().filter(|a| a.path().is_ident("derive")).any(|a| {
        let mut found = false;
        let _ = a.parse_nested_meta(|m| {
            found |= m.path.segments.last().is_some_and(|s| s.ident == name);
            Ok(())
        });
        found
    })
}

/// What `Default::default()` gives for a field of type `ty`, as an expression the
/// check follows: `0` for numbers, `false`, `None`, an empty `Vec`, the package type's
/// own `default()`; anything else stays a call the check treats as data.
fn default_of(ty: &syn::Type) -> proc_macro2::TokenStream {
    let syn::Type::Path(tp) = ty else { return quote::quote! { ::core::default::Default::default() } };
    let Some(last) = tp.path.segments.last() else { return quote::quote! { ::core::default::Default::default() } };
    let t = last.ident.to_string();
    match t.as_str() {
        "usize" | "isize" | "u8" | "u16" | "u32" | "u64" | "u128" | "i8" | "i16" | "i32" | "i64" | "i128" => {
            quote::quote! { 0 }
        }
        "f32" | "f64" => quote::quote! { 0.0 },
        "bool" => quote::quote! { false },
        "Option" => quote::quote! { None },
        "Vec" | "VecDeque" => quote::quote! { Vec::new() },
        "BTreeMap" | "HashMap" => {
            let id = &last.ident;
            quote::quote! { #id::new() }
        }
        _ if matches!(last.arguments, syn::PathArguments::None) => {
            let id = &last.ident;
            quote::quote! { #id::default() }
        }
        _ => quote::quote! { ::core::default::Default::default() },
    }
}
