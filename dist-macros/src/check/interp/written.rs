//! Which fields of the package's structs its code ever writes, and ever resizes, after
//! building the struct: a field no code writes keeps what it was built with through an
//! unknown write into the struct (a `&mut self` method the check summarised), and one no
//! code resizes keeps its length.

use super::*;

thread_local! {
    /// The (type, field) pairs the package's code ever writes, and ever resizes, after
    /// building the struct ([`set_written_fields`]; type `*`: not known).
    static WRITTEN_FIELDS: std::cell::RefCell<(FieldSet, FieldSet, FieldSet)> = Default::default();
}

/// (type, field) pairs.
type FieldSet = std::collections::HashSet<(String, String)>;

/// What [`set_written_fields`] reads from one function at a time.
#[derive(Default)]
struct W {
    written: std::collections::HashSet<(String, String)>,
    resized: std::collections::HashSet<(String, String)>,
    /// Fields whose own length may change (not only a list's in them: `x.k.push(..)`,
    /// `x.k = ..`, `&mut x.k`; not `x.k[i].push(..)` or `&mut x.k[i]`).
    own: std::collections::HashSet<(String, String)>,
    /// The type of `self` in the function visited.
    me: Option<String>,
    /// Local bindings whose type the code names.
    types: HashMap<String, String>,
}
/// The type an initializer names: `T { .. }`, `T::new(..)`, `T::default()`.
fn named_type(e: &syn::Expr) -> Option<String> {
    match e {
        syn::Expr::Struct(s) => s.path.segments.last().map(|x| x.ident.to_string()),
        syn::Expr::Call(c) => match &*c.func {
            syn::Expr::Path(p) if p.path.segments.len() >= 2 => {
                let t = p.path.segments[p.path.segments.len() - 2].ident.to_string();
                t.chars().next().is_some_and(|c| c.is_uppercase()).then_some(t)
            }
            _ => None,
        },
        syn::Expr::Try(t) => named_type(&t.expr),
        syn::Expr::MethodCall(m) if matches!(m.method.to_string().as_str(), "unwrap" | "expect") => {
            named_type(&m.receiver)
        }
        _ => None,
    }
}
impl W {
    /// The field at the root of the place `e` and the type of what holds it (`*`:
    /// not known), through parens and derefs, and with `deep` through indexing and
    /// accessors too (`self.params[i].iter_mut()`).
    fn field(&self, e: &syn::Expr, deep: bool) -> Option<(String, String)> {
        match e {
            syn::Expr::Field(f) => {
                let name = match &f.member {
                    syn::Member::Named(i) => i.to_string(),
                    syn::Member::Unnamed(i) => i.index.to_string(),
                };
                let owner = match &*f.base {
                    syn::Expr::Path(p) if p.path.is_ident("self") => self.me.clone(),
                    syn::Expr::Path(p) => p.path.get_ident().and_then(|i| self.types.get(&i.to_string()).cloned()),
                    _ => None,
                };
                Some((owner.unwrap_or_else(|| "*".into()), name))
            }
            syn::Expr::Paren(p) => self.field(&p.expr, deep),
            syn::Expr::Unary(u) => self.field(&u.expr, deep),
            syn::Expr::Reference(r) if deep => self.field(&r.expr, deep),
            syn::Expr::Index(i) if deep => self.field(&i.expr, deep),
            syn::Expr::MethodCall(m) if deep => self.field(&m.receiver, deep),
            _ => None,
        }
    }
    /// A place whose length may change (`self.params[i].push(..)`).
    fn resized(&mut self, e: &syn::Expr) {
        if let Some(f) = self.field(e, true) {
            self.resized.insert(f);
        }
        if let Some(f) = self.field(e, false) {
            self.own.insert(f);
        }
    }
    /// A place assigned or lent mutably: its field is written, and may be resized.
    fn target(&mut self, e: &syn::Expr) {
        self.resized(e);
        if let Some(f) = self.field(e, false) {
            self.written.insert(f);
        }
    }
}
impl<'ast> syn::visit::Visit<'ast> for W {
    fn visit_local(&mut self, l: &'ast syn::Local) {
        let (name, ty) = match &l.pat {
            syn::Pat::Type(t) => (
                match &*t.pat {
                    syn::Pat::Ident(i) => Some(i.ident.to_string()),
                    _ => None,
                },
                match &*t.ty {
                    syn::Type::Path(p) => p.path.segments.last().map(|x| x.ident.to_string()),
                    _ => None,
                },
            ),
            syn::Pat::Ident(i) => (Some(i.ident.to_string()), l.init.as_ref().and_then(|x| named_type(&x.expr))),
            _ => (None, None),
        };
        if let Some(name) = name {
            match ty {
                Some(t) => self.types.insert(name, t),
                None => self.types.remove(&name),
            };
        }
        syn::visit::visit_local(self, l);
    }
    fn visit_expr_assign(&mut self, a: &'ast syn::ExprAssign) {
        self.target(&a.left);
        syn::visit::visit_expr_assign(self, a);
    }
    fn visit_expr_binary(&mut self, b: &'ast syn::ExprBinary) {
        if summary::is_compound_assign(&b.op) {
            self.target(&b.left);
        }
        syn::visit::visit_expr_binary(self, b);
    }
    fn visit_expr_reference(&mut self, r: &'ast syn::ExprReference) {
        if r.mutability.is_some() {
            self.target(&r.expr);
        }
        syn::visit::visit_expr_reference(self, r);
    }
    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        let name = m.method.to_string();
        if matches!(
            name.as_str(),
            "push"
                | "push_back"
                | "push_front"
                | "pop"
                | "pop_back"
                | "pop_front"
                | "clear"
                | "extend"
                | "extend_from_slice"
                | "append"
                | "insert"
                | "remove"
                | "swap_remove"
                | "truncate"
                | "resize"
                | "resize_with"
                | "retain"
                | "retain_mut"
                | "drain"
                | "dedup"
                | "dedup_by"
                | "dedup_by_key"
                | "split_off"
                | "push_str"
        ) {
            self.resized(&m.receiver);
        }
        syn::visit::visit_expr_method_call(self, m);
    }
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        super::super::macro_rules::visit_expansion(self, m);
    }
}

/// Reads which struct fields the package writes after building the struct, from the
/// entry `f` and the package's functions (`(key, fn)`: a method's key is `Type::name`):
/// a field assigned (`x.k = ..`, `x.k += ..`) or lent mutably (`&mut x.k`) is written,
/// and may be resized, as one a method that adds or removes items is called on (`push`,
/// `clear`, …). Each write is noted with the struct's type where the code says it: a
/// `self.k` in a method of `impl T`, an `x.k` where `x` was bound from `T { .. }`,
/// `T::new(..)` or with `: T`; elsewhere with the field's name alone, for every type.
pub fn set_written_fields<'f>(fns: impl IntoIterator<Item = (&'f str, &'f syn::ItemFn)>) {
    use syn::visit::Visit;
    let mut w = W::default();
    // Each method name: whether every method of that name only reads its receiver.
    let mut by_name: HashMap<String, bool> = HashMap::new();
    let fns: Vec<(&'f str, &'f syn::ItemFn)> = fns.into_iter().collect();
    for (key, f) in &fns {
        if let (true, Some(FnArg::Receiver(rc))) = (key.contains("::"), f.sig.inputs.first()) {
            let reads = rc.reference.is_none() || rc.mutability.is_none();
            let e = by_name.entry(f.sig.ident.to_string()).or_insert(true);
            *e &= reads;
        }
    }
    let reading = by_name.into_iter().filter(|(_, r)| *r).map(|(n, _)| n).collect();
    for (key, f) in fns {
        w.me = key.rsplit_once("::").map(|(t, _)| t.rsplit("::").next().unwrap_or(t).to_string());
        w.types.clear();
        w.visit_item_fn(f);
    }
    WRITTEN_FIELDS.with(|s| *s.borrow_mut() = (w.written, w.resized, w.own));
    READING_METHODS.with(|r| *r.borrow_mut() = reading);
}

thread_local! {
    /// The names of the package's methods that only read their receiver: every method of
    /// that name takes `&self` (or `self`), none `&mut self`.
    static READING_METHODS: std::cell::RefCell<std::collections::HashSet<String>> = Default::default();
}

/// Whether `x.name(..)` leaves `x` as it was: `name` is one of the package's methods,
/// each taking `&self`, and not a name the standard library uses for one that writes
/// (`push`, `next`, `insert`, `take`, …).
pub(super) fn reads_receiver(name: &syn::Ident) -> bool {
    let m = name.to_string();
    let std_writes = matches!(
        m.as_str(),
        "push"
            | "push_str"
            | "insert_str"
            | "push_back"
            | "push_front"
            | "pop_back"
            | "pop_front"
            | "next"
            | "next_back"
            | "take"
            | "replace"
            | "entry"
            | "set"
            | "get_or_insert"
            | "get_or_insert_with"
            | "write"
            | "write_all"
            | "flush"
            | "read"
            | "read_exact"
            | "read_to_string"
            | "read_line"
            | "seek"
    ) || value::mutates_receiver(name).is_some();
    !std_writes && READING_METHODS.with(|r| r.borrow().contains(&m))
}

/// Whether the package writes the field `name` of a struct of type `ty` after building
/// it (a write whose struct's type the code does not say counts for every type).
pub(super) fn field_written(ty: &str, name: &str) -> bool {
    WRITTEN_FIELDS.with(|s| {
        let s = s.borrow();
        s.0.contains(&(ty.to_string(), name.to_string())) || s.0.contains(&("*".to_string(), name.to_string()))
    })
}

/// Whether the package may change the length of the field `name` of a `ty` (or of a list
/// in it) after building its struct: assigned, lent mutably, or a method that adds or
/// removes items called on it (`push`, `clear`, `extend`, `truncate`, …). Where it never
/// does, an unknown write into the struct forgets the field's items, not its length.
pub(super) fn field_resized(ty: &str, name: &str) -> bool {
    WRITTEN_FIELDS.with(|s| {
        let s = s.borrow();
        s.1.contains(&(ty.to_string(), name.to_string())) || s.1.contains(&("*".to_string(), name.to_string()))
    })
}

/// Whether the package may change the length of the field `name` of a `ty` itself (not
/// only of a list in it): a method that adds or removes items called on it, the field
/// assigned or lent mutably whole.
pub(super) fn field_own_resized(ty: &str, name: &str) -> bool {
    WRITTEN_FIELDS.with(|s| {
        let s = s.borrow();
        s.2.contains(&(ty.to_string(), name.to_string())) || s.2.contains(&("*".to_string(), name.to_string()))
    })
}
