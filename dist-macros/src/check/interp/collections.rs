//! Maps and sets the check follows while their keys are known (integers, string
//! literals): `BTreeMap`, `HashMap`, `BTreeSet`, `HashSet`, kept as a struct of their
//! entries (a set's values are `()`), with the value type a map was declared with
//! (`let m: BTreeMap<usize, Vec<u32>>`, `BTreeMap::<_, Vec<u32>>::new()`) so that
//! `m.entry(k).or_default()` makes the right empty value. Comm plans are built this way
//! ("group the ghosts by their owner's rank"): neighbour lists whose length is a count
//! of messages. A key the check does not know makes the collection data.

use super::*;
use syn::{Expr, ExprMethodCall};

/// The kinds of collection the check follows by their entries.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Coll {
    BTreeMap,
    HashMap,
    BTreeSet,
    HashSet,
}

thread_local! {
    /// The package's type aliases: alias → the last segment of the type it names.
    static ALIASES: std::cell::RefCell<std::collections::HashMap<String, String>> = Default::default();
}

thread_local! {
    /// The package's struct fields declared as collections: (struct, field) → its type,
    /// so `Plan { slot }` with `slot` collected untyped (`.collect()` into the field's
    /// `BTreeMap<usize, usize>`) is that map, not a list.
    static FIELD_TYPES: std::cell::RefCell<std::collections::HashMap<(String, String), syn::Type>> =
        Default::default();
}

/// Notes a struct field whose declared type is a collection (or an alias of one).
pub fn note_field_type(st: &str, field: &str, ty: &syn::Type) {
    FIELD_TYPES.with(|f| f.borrow_mut().insert((st.to_string(), field.to_string()), ty.clone()));
}

/// `v` as the collection struct `st`'s field `field` is declared as, where it is one.
pub(super) fn as_field<'a>(st: &str, field: &str, v: V<'a>) -> V<'a> {
    if !matches!(v, V::List(_) | V::Struct(..)) {
        return v;
    }
    FIELD_TYPES.with(|f| match f.borrow().get(&(st.to_string(), field.to_string())) {
        Some(t) => typed(v, t),
        None => v,
    })
}

/// Notes `type alias = ..::target<..>` (an alias of a collection builds that collection).
pub fn note_alias(alias: &str, target: &str) {
    ALIASES.with(|a| a.borrow_mut().insert(alias.to_string(), target.to_string()));
}

/// Forgets the aliases of the package read before (a new check).
pub fn reset_aliases() {
    ALIASES.with(|a| a.borrow_mut().clear());
}

/// The type a package's alias names (`type S = State;`: `S` gives `State`), followed
/// through aliases of aliases.
pub(super) fn alias_target(name: &str) -> Option<String> {
    ALIASES.with(|a| {
        let a = a.borrow();
        let mut t = a.get(name)?;
        for _ in 0..8 {
            match a.get(t.as_str()) {
                Some(next) if next != t => t = next,
                _ => break,
            }
        }
        Some(t.clone())
    })
}

impl Coll {
    /// The kind a struct name stands for (`"BTreeMap"`, or `"BTreeMap|Vec<u32>"` with
    /// the map's value type).
    pub(super) fn of(ty: &str) -> Option<Coll> {
        let name = ty.split('|').next()?;
        let target = ALIASES.with(|a| a.borrow().get(name).cloned());
        Some(match target.as_deref().unwrap_or(name) {
            "BTreeMap" => Coll::BTreeMap,
            "HashMap" => Coll::HashMap,
            "BTreeSet" => Coll::BTreeSet,
            "HashSet" => Coll::HashSet,
            _ => return None,
        })
    }

    fn sorted(self) -> bool {
        matches!(self, Coll::BTreeMap | Coll::BTreeSet)
    }

    fn is_map(self) -> bool {
        matches!(self, Coll::BTreeMap | Coll::HashMap)
    }

    fn name(self) -> &'static str {
        match self {
            Coll::BTreeMap => "BTreeMap",
            Coll::HashMap => "HashMap",
            Coll::BTreeSet => "BTreeSet",
            Coll::HashSet => "HashSet",
        }
    }
}

/// An empty collection of `kind`; a map remembers `value` (its value type) for
/// `entry(k).or_default()`.
pub(super) fn empty<'a>(kind: Coll, value: Option<&syn::Type>) -> V<'a> {
    let name = match (kind.is_map(), value) {
        (true, Some(t)) if !matches!(t, syn::Type::Infer(_)) => {
            format!("{}|{}", kind.name(), t.to_token_stream())
        }
        _ => kind.name().to_string(),
    };
    V::Struct(name, Vec::new())
}

/// Whether a value of type `t` may hold a communicator, by the package's declarations
/// (docs/static-checks.md, "Values the check follows"): numbers, strings and booleans
/// never do; references, slices, arrays, tuples and the standard library's containers
/// (`Vec`, `Option`, `Box`, maps, a `Result`'s value) as their items do; a struct of
/// the package as its fields do; anything else (a generic parameter, a trait object, a
/// type from another crate, `Comm` itself) may.
pub(super) fn may_hold_comm(t: &syn::Type) -> bool {
    holds_comm(t, 0)
}

fn holds_comm(t: &syn::Type, depth: u32) -> bool {
    if depth > 8 {
        return true;
    }
    let d = depth + 1;
    match t {
        syn::Type::Reference(r) => holds_comm(&r.elem, d),
        syn::Type::Slice(s) => holds_comm(&s.elem, d),
        syn::Type::Array(a) => holds_comm(&a.elem, d),
        syn::Type::Paren(p) => holds_comm(&p.elem, d),
        syn::Type::Group(g) => holds_comm(&g.elem, d),
        syn::Type::Tuple(t) => t.elems.iter().any(|e| holds_comm(e, d)),
        syn::Type::Path(p) if p.qself.is_none() => {
            let Some(seg) = p.path.segments.last() else { return true };
            let name = seg.ident.to_string();
            let args = seg_args(seg);
            match name.as_str() {
                "f16" | "bf16" | "f32" | "f64" | "i8" | "i16" | "i32" | "i64" | "i128" | "isize" | "u8" | "u16"
                | "u32" | "u64" | "u128" | "usize" | "bool" | "char" | "str" | "String" | "Duration" | "Instant"
                | "PathBuf" | "Path" | "ReduceOp" | "DType" => false,
                // (A `Result`'s error holds no communicator a program goes on with.)
                "Result" => args.first().is_none_or(|a| holds_comm(a, d)),
                "Vec" | "VecDeque" | "Option" | "Box" | "Rc" | "Arc" | "HashMap" | "BTreeMap" | "HashSet"
                | "BTreeSet" | "Cell" | "RefCell" | "Complex" | "Range" | "Cow" => {
                    !args.is_empty() && args.iter().any(|a| holds_comm(a, d)) || args.is_empty() && name == "Range"
                }
                _ => {
                    let fields: Vec<syn::Type> = FIELD_TYPES.with(|f| {
                        f.borrow().iter().filter(|((st, _), _)| *st == name).map(|(_, t)| t.clone()).collect()
                    });
                    fields.is_empty() || fields.iter().any(|f| holds_comm(f, d))
                }
            }
        }
        _ => true,
    }
}

/// `v` with what may hold a communicator taken for plain data: a value whose declared
/// type holds none ([`may_hold_comm`]).
pub(super) fn without_comm<'a>(v: V<'a>) -> V<'a> {
    match v {
        V::Opaque { comm: true, fp } => V::Opaque { comm: false, fp },
        V::List(items) if items.iter().any(V::has_comm) => V::list(items.iter().cloned().map(without_comm).collect()),
        V::Tuple(items) => V::Tuple(items.into_iter().map(without_comm).collect()),
        V::Struct(t, fields) => V::Struct(t, fields.into_iter().map(|(k, v)| (k, without_comm(v))).collect()),
        V::Opt(Some(x)) => V::Opt(Some(Box::new(without_comm(*x)))),
        v => v,
    }
}

/// The generic arguments' types of a path's last segment (`BTreeMap<K, V>` → `[K, V]`).
pub(super) fn type_args(p: &syn::Path) -> Vec<&syn::Type> {
    p.segments.last().map(seg_args).unwrap_or_default()
}

/// The generic arguments' types of one path segment.
pub(super) fn seg_args(seg: &syn::PathSegment) -> Vec<&syn::Type> {
    match Some(&seg.arguments) {
        Some(syn::PathArguments::AngleBracketed(ab)) => ab
            .args
            .iter()
            .filter_map(|a| match a {
                syn::GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// `T::default()` for the types the check follows; `None` for the others.
pub(super) fn default_of<'a>(t: &syn::Type) -> Option<V<'a>> {
    match t {
        syn::Type::Paren(p) => default_of(&p.elem),
        syn::Type::Tuple(t) => Some(V::Tuple(t.elems.iter().map(default_of).collect::<Option<Vec<_>>>()?)),
        syn::Type::Path(p) if p.qself.is_none() => {
            let seg = p.path.segments.last()?;
            let name = seg.ident.to_string();
            Some(match name.as_str() {
                "u8" | "u16" | "u32" | "u64" | "u128" | "usize" | "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => {
                    V::Int(0)
                }
                "f32" | "f64" => V::Float(0.0, true),
                "bool" => V::Bool(false),
                "Vec" | "VecDeque" => V::list(Vec::new()),
                "Option" => V::Opt(None),
                _ => {
                    let kind = Coll::of(&name)?;
                    empty(kind, type_args(&p.path).get(1).copied())
                }
            })
        }
        _ => None,
    }
}

/// The value type a map's struct name carries (`"BTreeMap|Vec<u32>"`), made empty.
fn value_default<'a>(ty: &str) -> Option<V<'a>> {
    let (_, t) = ty.split_once('|')?;
    default_of(&syn::parse_str::<syn::Type>(t).ok()?)
}

/// A key the check can compare: an integer or a name (a string literal).
fn key_text(k: &V) -> Option<String> {
    match k {
        V::Name(n) => Some(n.clone()),
        V::Int(i) => Some(format!("{i}")),
        _ => None,
    }
}

fn key_value<'a>(t: &str) -> V<'a> {
    match t.parse::<i128>() {
        Ok(i) => V::Int(i),
        Err(_) => V::Name(t.to_string()),
    }
}

/// `v` as the collection the declared type `t` names, where `v` is a list of what it
/// collects (`let s: BTreeSet<usize> = xs.iter().collect()`, `collect::<HashMap<_, _>>()`):
/// keys deduplicated, sorted for the `BTree` kinds; a map of pairs. Anything else is `v`
/// itself; a list the check cannot make the collection of (unknown keys) is data.
pub(super) fn typed<'a>(v: V<'a>, t: &syn::Type) -> V<'a> {
    let syn::Type::Path(p) = t else { return v };
    let Some(seg) = p.path.segments.last() else { return v };
    let Some(kind) = Coll::of(&seg.ident.to_string()) else { return v };
    let args = type_args(&p.path);
    match v {
        // A map made empty: it learns its value type.
        V::Struct(ty, entries) if Coll::of(&ty) == Some(kind) && kind.is_map() && !ty.contains('|') => {
            let V::Struct(name, _) = empty(kind, args.get(1).copied()) else { unreachable!() };
            V::Struct(name, entries)
        }
        V::List(items) => {
            let mut out: Vec<(String, V<'a>)> = Vec::new();
            for x in items.iter() {
                let (k, val) = match (kind.is_map(), x) {
                    (true, V::Tuple(kv)) if kv.len() == 2 => (&kv[0], kv[1].clone()),
                    (false, k) => (k, V::Unit),
                    _ => return V::taint(&[&V::List(items.clone())]),
                };
                let Some(kt) = key_text(k) else { return V::taint(&[&V::List(items.clone())]) };
                match out.iter_mut().find(|(x, _)| *x == kt) {
                    // (A map collects the last value of a key; a set keeps its first.)
                    Some(slot) if kind.is_map() => slot.1 = val,
                    Some(_) => {}
                    None => out.push((kt, val)),
                }
            }
            let V::Struct(name, _) = empty(kind, args.get(1).copied()) else { unreachable!() };
            V::Struct(name, sort(kind, out))
        }
        v => v,
    }
}

fn sort<'a>(kind: Coll, mut es: Vec<(String, V<'a>)>) -> Vec<(String, V<'a>)> {
    if kind.sorted() {
        es.sort_by(|a, b| match (a.0.parse::<i128>(), b.0.parse::<i128>()) {
            (Ok(x), Ok(y)) => x.cmp(&y),
            _ => a.0.cmp(&b.0),
        });
    }
    es
}

impl<'a> Interp<'a> {
    /// Stores the entries `es` as the collection `ty` a method's receiver holds
    /// (`sets[a].insert(b)`: into a list's item; a place the check does not hold is
    /// forgotten by `store`).
    fn coll_store(
        &mut self,
        mc: &'a ExprMethodCall,
        kind: Coll,
        ty: &str,
        es: Vec<(String, V<'a>)>,
    ) -> Result<(), Flow<'a>> {
        if self.store(&mc.receiver, V::Struct(ty.to_string(), sort(kind, es))).is_err() {
            self.clobber_place(&mc.receiver, false);
        }
        Ok(())
    }

    /// A method of a collection called with a key the check does not hold: data, and
    /// the receiver forgotten where the method `writes`.
    fn forget_receiver(&mut self, mc: &'a ExprMethodCall, writes: bool) -> Result<Option<V<'a>>, Flow<'a>> {
        if writes {
            self.clobber_place(&mc.receiver, false);
        }
        Ok(Some(V::opaque()))
    }

    /// A method of a collection the check holds by its entries. A `BTree` kind iterates
    /// in key order on every rank; a `Hash` kind in an order that differs from process to
    /// process (its hasher is seeded per process), so here each rank sees it rotated by
    /// its rank: a loop over it that communicates per entry is what it is at run time,
    /// ranks communicating in different orders. `None`: a method it does not model (the
    /// generic rule forgets the receiver where the method may change it).
    /// (Long as one `match` over (method, arguments): one arm per method of the collection.)
    pub(super) fn coll_method(
        &mut self,
        mc: &'a ExprMethodCall,
        kind: Coll,
        ty: &str,
        entries: &[(String, V<'a>)],
        m: &str,
        args: &[V<'a>],
    ) -> Result<Option<V<'a>>, Flow<'a>> {
        let map = kind.is_map();
        Ok(Some(match (m, args) {
            ("insert", [k, v]) if map => {
                let Some(kt) = key_text(k) else { return self.forget_receiver(mc, true) };
                let mut es = entries.to_vec();
                let old = match es.iter_mut().find(|(x, _)| *x == kt) {
                    Some(slot) => Some(std::mem::replace(&mut slot.1, v.clone())),
                    None => {
                        es.push((kt, v.clone()));
                        None
                    }
                };
                self.coll_store(mc, kind, ty, es)?;
                V::Opt(old.map(Box::new))
            }
            ("insert", [k]) if !map => {
                let Some(kt) = key_text(k) else { return self.forget_receiver(mc, true) };
                let mut es = entries.to_vec();
                let new = !es.iter().any(|(x, _)| *x == kt);
                if new {
                    es.push((kt, V::Unit));
                }
                self.coll_store(mc, kind, ty, es)?;
                V::Bool(new)
            }
            ("remove", [k]) => {
                let Some(kt) = key_text(k) else { return self.forget_receiver(mc, true) };
                let mut es = entries.to_vec();
                let old = es.iter().position(|(x, _)| *x == kt).map(|i| es.remove(i).1);
                self.coll_store(mc, kind, ty, es)?;
                if map {
                    V::Opt(old.map(Box::new))
                } else {
                    V::Bool(old.is_some())
                }
            }
            ("extend", [items]) => {
                let Some(items) = iter_items(items) else { return self.forget_receiver(mc, true) };
                let mut es = entries.to_vec();
                for x in items.iter() {
                    let (k, v) = match (map, x) {
                        (true, V::Tuple(kv)) if kv.len() == 2 => (&kv[0], kv[1].clone()),
                        (false, k) => (k, V::Unit),
                        _ => return self.forget_receiver(mc, true),
                    };
                    let Some(kt) = key_text(k) else { return self.forget_receiver(mc, true) };
                    match es.iter_mut().find(|(x, _)| *x == kt) {
                        Some(slot) if map => slot.1 = v,
                        Some(_) => {}
                        None => es.push((kt, v)),
                    }
                }
                self.coll_store(mc, kind, ty, es)?;
                V::Unit
            }
            ("clear", []) => {
                self.coll_store(mc, kind, ty, Vec::new())?;
                V::Unit
            }
            ("get" | "contains_key" | "contains", [k]) => {
                let Some(kt) = key_text(k) else { return self.forget_receiver(mc, false) };
                let found = entries.iter().find(|(x, _)| *x == kt).map(|(_, v)| v.clone());
                if m == "get" && map {
                    V::Opt(found.map(Box::new))
                } else if m == "get" {
                    V::Opt(found.map(|_| Box::new(key_value(&kt))))
                } else {
                    V::Bool(found.is_some())
                }
            }
            ("len", []) => V::Int(entries.len() as i128),
            ("is_empty", []) => V::Bool(entries.is_empty()),
            ("first" | "last", []) if kind == Coll::BTreeSet => {
                let e = if m == "first" { entries.first() } else { entries.last() };
                V::Opt(e.map(|(k, _)| Box::new(key_value(k))))
            }
            ("first_key_value" | "last_key_value", []) if kind == Coll::BTreeMap => {
                let e = if m == "first_key_value" { entries.first() } else { entries.last() };
                V::Opt(e.map(|(k, v)| Box::new(V::Tuple(vec![key_value(k), v.clone()]))))
            }
            (
                "iter" | "iter_mut" | "into_iter" | "values" | "values_mut" | "into_values" | "keys" | "into_keys"
                | "drain",
                [],
            ) => {
                let mut items: Vec<V<'a>> = entries
                    .iter()
                    .map(|(k, v)| match m {
                        _ if !map => key_value(k),
                        "values" | "values_mut" | "into_values" => v.clone(),
                        "keys" | "into_keys" => key_value(k),
                        _ => V::Tuple(vec![key_value(k), v.clone()]),
                    })
                    .collect();
                if !kind.sorted() && !items.is_empty() {
                    let n = items.len();
                    items.rotate_left(self.rank % n);
                }
                if m.ends_with("_mut") {
                    // What the loop writes through the items is not followed.
                    self.clobber_place(&mc.receiver, true);
                }
                if m == "drain" {
                    self.coll_store(mc, kind, ty, Vec::new())?;
                }
                V::list(items)
            }
            _ => return Ok(None),
        }))
    }

    /// `m.entry(k).or_default()`, `.or_insert(v)`, `.or_insert_with(f)` on a map the check
    /// holds with `k` known: the entry's value (inserted first where absent), and the
    /// map's place and key, so what is written through it goes back into the map
    /// ([`Self::store_entry`]). `None` for any other expression.
    pub(super) fn entry_value(&mut self, mc: &'a ExprMethodCall) -> Result<Option<V<'a>>, Flow<'a>> {
        let Some((map, key)) = entry_call(mc) else { return Ok(None) };
        let Some(V::Struct(ty, entries)) = self.place_value(map) else { return Ok(None) };
        if !Coll::of(&ty).is_some_and(Coll::is_map) {
            return Ok(None);
        }
        let k = self.expr(key)?;
        let Some(kt) = key_text(&k) else { return Ok(None) };
        if let Some((_, v)) = entries.iter().find(|(x, _)| *x == kt) {
            // (An `or_insert_with` closure runs only for an absent key.)
            return Ok(Some(v.clone()));
        }
        let m = mc.method.to_string();
        let v = match (m.as_str(), mc.args.first()) {
            ("or_default", None) => match value_default(&ty) {
                Some(v) => v,
                None => return Ok(None),
            },
            ("or_insert", Some(a)) => self.expr(a)?,
            ("or_insert_with", Some(a)) => {
                let f = self.expr(a)?;
                match &f {
                    V::Closure(c) => self.apply_closure(*c, vec![])?,
                    // `Vec::new`, `BTreeSet::new`, `Default::default` as a function.
                    V::Name(n) => match n.rsplit("::").nth(1) {
                        Some("Vec" | "VecDeque") => V::list(Vec::new()),
                        Some(t) if Coll::of(t).is_some() => empty(Coll::of(t).expect("checked"), None),
                        _ if n.ends_with("default") => match value_default(&ty) {
                            Some(v) => v,
                            None => return Ok(None),
                        },
                        _ => return Ok(None),
                    },
                    _ => return Ok(None),
                }
            }
            _ => return Ok(None),
        };
        let mut es = entries.clone();
        es.push((kt, v.clone()));
        let kind = Coll::of(&ty).expect("checked");
        if self.store(map, V::Struct(ty, sort(kind, es))).is_err() {
            return Ok(None);
        }
        Ok(Some(v))
    }

    /// Writes `v` into the entry `place` names (`m.entry(k).or_default()`, see
    /// [`Self::entry_value`]): `false` where `place` is no such entry.
    pub(super) fn store_entry(&mut self, place: &'a Expr, v: &V<'a>) -> Result<bool, Flow<'a>> {
        let Expr::MethodCall(mc) = place else { return Ok(false) };
        let Some((map, key)) = entry_call(mc) else { return Ok(false) };
        let Some(V::Struct(ty, mut entries)) = self.place_value(map) else { return Ok(false) };
        if !Coll::of(&ty).is_some_and(Coll::is_map) {
            return Ok(false);
        }
        let Some(kt) = key_text(&self.expr(key)?) else { return Ok(false) };
        match entries.iter_mut().find(|(x, _)| *x == kt) {
            Some(slot) => slot.1 = v.clone(),
            None => entries.push((kt, v.clone())),
        }
        let kind = Coll::of(&ty).expect("checked");
        self.store(map, V::Struct(ty, sort(kind, entries)))?;
        Ok(true)
    }

    /// The value the entry `place` holds now, if it is one ([`Self::entry_value`]).
    pub(super) fn entry_place_value(&self, place: &Expr) -> Option<V<'a>> {
        let Expr::MethodCall(mc) = place else { return None };
        let (map, key) = entry_call(mc)?;
        let V::Struct(ty, entries) = self.place_value(map)? else { return None };
        Coll::of(&ty).filter(|k| k.is_map())?;
        // (Only a key the check can read without evaluating anything: a literal or a
        // variable.)
        let k = match key {
            Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => V::Int(i.base10_parse().ok()?),
            Expr::Path(p) => self.lookup(&p.path.get_ident()?.to_string())?.clone(),
            _ => return None,
        };
        let kt = key_text(&k)?;
        entries.into_iter().find(|(x, _)| *x == kt).map(|(_, v)| v)
    }
}

/// `(map, key)` for `map.entry(key).or_default()` (or `or_insert`, `or_insert_with`).
fn entry_call(mc: &ExprMethodCall) -> Option<(&Expr, &Expr)> {
    if !matches!(mc.method.to_string().as_str(), "or_default" | "or_insert" | "or_insert_with") {
        return None;
    }
    let Expr::MethodCall(e) = &*mc.receiver else { return None };
    if e.method != "entry" || e.args.len() != 1 {
        return None;
    }
    Some((&e.receiver, &e.args[0]))
}
