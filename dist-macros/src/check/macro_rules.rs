//! The package's own `macro_rules!` macros, expanded as rustc expands them, so the check
//! follows a `timed!(world.all_reduce(..))` or a `send_to!(comm, peer, &buf)` through
//! their bodies instead of giving up on them.
//!
//! Each definition read from the package's files (or a function body) is kept by name;
//! a call by that name (`name!(..)`, `crate::name!(..)`, `self::name!(..)`) is matched
//! against the arms in order, the first that matches is transcribed, and the result is
//! what the interpreter runs. Supported: every fragment kind (`expr`, `ident`, `ty`,
//! `tt`, `pat`, `path`, `block`, `literal`, `lifetime`, `vis`, `stmt`, `item`, `meta`),
//! repetitions `$(..)sep*`, `+`, `?` at any depth, `$crate`, and macros calling macros.
//!
//! Places: the tokens a call passes in keep their own lines; those the definition
//! writes take the call's place, as rustc reports an error inside an expansion at the
//! macro's call.
//!
//! Not modelled: hygiene beyond `let` (a binding the definition introduces is local to
//! the expansion, one named by the caller's tokens is the caller's), and macros reached
//! through `#[macro_use]` of another crate (those are not the package's).

use proc_macro2::{Delimiter, Group, Ident, Span, TokenStream, TokenTree};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use syn::parse::{Parse, ParseStream, Parser};

/// One macro's arms: a matcher and its transcriber, in the order written.
pub(super) struct Rules {
    arms: Vec<(Vec<M>, TokenStream)>,
}

/// A matcher's element.
#[derive(Clone)]
enum M {
    /// A token to match exactly (an identifier, a punctuation or a literal).
    Tok(TokenTree),
    /// A delimited group and the matcher inside it.
    Group(Delimiter, Vec<M>),
    /// `$name:kind`.
    Frag(String, Kind),
    /// `$( .. ) sep op`.
    Rep(Vec<M>, Option<TokenTree>, char),
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Expr,
    Ident,
    Ty,
    Tt,
    Literal,
    Pat,
    PatParam,
    Path,
    Block,
    Stmt,
    Lifetime,
    Vis,
    Item,
    Meta,
}

impl Kind {
    fn of(name: &str) -> Option<Kind> {
        Some(match name {
            "expr" | "expr_2021" => Kind::Expr,
            "ident" => Kind::Ident,
            "ty" => Kind::Ty,
            "tt" => Kind::Tt,
            "literal" => Kind::Literal,
            "pat" => Kind::Pat,
            "pat_param" => Kind::PatParam,
            "path" => Kind::Path,
            "block" => Kind::Block,
            "stmt" => Kind::Stmt,
            "lifetime" => Kind::Lifetime,
            "vis" => Kind::Vis,
            "item" => Kind::Item,
            "meta" => Kind::Meta,
            _ => return None,
        })
    }
}

/// What a matcher's variable captured: tokens, or one capture per repetition.
#[derive(Clone, Debug)]
enum Bind {
    One(Vec<TokenTree>),
    /// A unary expression (`&a`, `-x`, `*p`): bare where it lands, except before a
    /// postfix operator (`$v.len()` with `&a` is `(&a).len()`).
    Unary(Vec<TokenTree>),
    Seq(Vec<Bind>),
}

type Binds = HashMap<String, Bind>;

/// Most matching steps for one call (a matcher with nested repetitions backtracks).
const MATCH_STEPS: u32 = 100_000;
/// Deepest expansion of macros that call macros.
pub(super) const EXPANSION_DEPTH: usize = 64;

thread_local! {
    /// The package's macros, by name, for the check running on this thread.
    static PACKAGE: RefCell<HashMap<String, Rc<Rules>>> = RefCell::new(HashMap::new());
    /// Each call's expansion as syntax, by the call's place, name and tokens.
    static EXPANDED: RefCell<HashMap<String, Option<&'static syn::Block>>> = RefCell::new(HashMap::new());
}

/// Forgets the macros of the last check.
pub(super) fn reset() {
    PACKAGE.with(|p| p.borrow_mut().clear());
    EXPANDED.with(|e| e.borrow_mut().clear());
}

/// A call of one of the package's macros as the block it expands to (`{ .. }` around
/// its statements or its expression); `None` when the call names none of them or no
/// arm matches.
pub(super) fn expansion(m: &syn::Macro) -> Option<&'static syn::Block> {
    let own = named(&m.path).is_some();
    if !own && m.path.segments.last()?.ident != "matches" {
        return None;
    }
    let at = m.path.segments.last().map(|s| s.ident.span().start());
    let key =
        format!("{:?} {}!{}", at.map(|a| (a.line, a.column)), quote::ToTokens::to_token_stream(&m.path), m.tokens);
    if let Some(found) = EXPANDED.with(|e| e.borrow().get(&key).copied()) {
        return found;
    }
    let block = if own { expand(m) } else { matches_expansion(m) }
        .and_then(|ts| syn::parse2::<syn::Block>(TokenTree::Group(Group::new(Delimiter::Brace, ts)).into()).ok());
    // Leaked on purpose: one small block per call site of a package macro, for the
    // life of the compiler process (the syntax the interpreter runs borrows it).
    let block: Option<&'static syn::Block> = block.map(|b| &*Box::leak(Box::new(b)));
    EXPANDED.with(|e| e.borrow_mut().insert(key, block));
    block
}

/// `matches!(x, pat if guard)` as the `match` it stands for (the standard library's
/// definition), so a variant test in a filter (`slots.iter().filter(|s| matches!(s,
/// Slot::Busy(_))).count()`) is followed like any `match`.
fn matches_expansion(m: &syn::Macro) -> Option<TokenStream> {
    let parse = |input: ParseStream| -> syn::Result<TokenStream> {
        let x: syn::Expr = input.parse()?;
        input.parse::<syn::Token![,]>()?;
        let pat = syn::Pat::parse_multi_with_leading_vert(input)?;
        let guard = if input.peek(syn::Token![if]) {
            input.parse::<syn::Token![if]>()?;
            let g: syn::Expr = input.parse()?;
            Some(quote::quote!(if #g))
        } else {
            None
        };
        input.parse::<Option<syn::Token![,]>>()?;
        Ok(quote::quote!(match #x { #pat #guard => true, _ => false }))
    };
    m.parse_body_with(parse).ok()
}

/// Lets a syntax visitor see inside calls of the package's macros: visits the
/// expansion, if `m` is one.
pub(super) fn visit_expansion<'ast, V: syn::visit::Visit<'ast>>(v: &mut V, m: &syn::Macro) -> bool {
    match expansion(m) {
        Some(b) => {
            v.visit_block(b);
            true
        }
        None => false,
    }
}

/// Remembers `macro_rules! name { .. }` (the first definition of a name is kept: the
/// entry's file is read first).
pub(super) fn define(m: &syn::ItemMacro) {
    let (Some(name), true) = (&m.ident, m.mac.path.is_ident("macro_rules")) else { return };
    if let Some(rules) = Rules::parse(m.mac.tokens.clone()) {
        PACKAGE.with(|p| {
            p.borrow_mut().entry(name.to_string()).or_insert_with(|| Rc::new(rules));
        });
    }
}

/// The package's macro a call names, if it names one: `name!`, `crate::name!`,
/// `self::name!`, `super::name!`.
fn named(path: &syn::Path) -> Option<Rc<Rules>> {
    let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    let local = segs.len() == 1 || (segs.len() == 2 && matches!(segs[0].as_str(), "crate" | "self" | "super"));
    let name = segs.last().filter(|_| local)?;
    PACKAGE.with(|p| p.borrow().get(name).cloned())
}

/// The expansion of a call of one of the package's macros, or `None` when the call
/// names none or no arm matches.
pub(super) fn expand(m: &syn::Macro) -> Option<TokenStream> {
    let rules = named(&m.path)?;
    let at = m.path.segments.last().map(|s| s.ident.span()).unwrap_or_else(Span::call_site);
    rules.expand(m.tokens.clone(), at)
}

impl Rules {
    /// Reads `(matcher) => { transcriber };` arms.
    fn parse(body: TokenStream) -> Option<Rules> {
        let toks: Vec<TokenTree> = body.into_iter().collect();
        let mut arms = Vec::new();
        let mut i = 0;
        while i < toks.len() {
            let TokenTree::Group(matcher) = &toks[i] else { return None };
            let arrow = matches!((toks.get(i + 1), toks.get(i + 2)),
                (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b))) if a.as_char() == '=' && b.as_char() == '>');
            let Some(TokenTree::Group(transcriber)) = toks.get(i + 3).filter(|_| arrow) else { return None };
            arms.push((matcher_of(matcher.stream())?, transcriber.stream()));
            i += 4;
            if matches!(toks.get(i), Some(TokenTree::Punct(p)) if p.as_char() == ';') {
                i += 1;
            }
        }
        Some(Rules { arms })
    }

    fn expand(&self, input: TokenStream, at: Span) -> Option<TokenStream> {
        let toks: Vec<TokenTree> = input.into_iter().collect();
        for (matcher, transcriber) in &self.arms {
            let steps = Cell::new(0);
            let mut binds = Binds::new();
            if seq(matcher, &toks, &mut binds, &steps, &mut |rest, _| rest.is_empty()) {
                return transcribe(transcriber.clone(), &binds, &[], at);
            }
        }
        None
    }
}

/// A matcher's elements from its tokens.
fn matcher_of(ts: TokenStream) -> Option<Vec<M>> {
    let toks: Vec<TokenTree> = ts.into_iter().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        match &toks[i] {
            TokenTree::Punct(p) if p.as_char() == '$' => match toks.get(i + 1) {
                Some(TokenTree::Ident(name)) => {
                    let colon = matches!(toks.get(i + 2), Some(TokenTree::Punct(c)) if c.as_char() == ':');
                    let Some(TokenTree::Ident(kind)) = toks.get(i + 3).filter(|_| colon) else { return None };
                    out.push(M::Frag(name.to_string(), Kind::of(&kind.to_string())?));
                    i += 4;
                }
                Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis => {
                    let inner = matcher_of(g.stream())?;
                    let (sep, op, used) = repetition_tail(&toks[i + 2..])?;
                    out.push(M::Rep(inner, sep, op));
                    i += 2 + used;
                }
                _ => return None,
            },
            TokenTree::Group(g) => {
                out.push(M::Group(g.delimiter(), matcher_of(g.stream())?));
                i += 1;
            }
            t => {
                out.push(M::Tok(t.clone()));
                i += 1;
            }
        }
    }
    Some(out)
}

/// After `$( .. )`: an optional separator and the operator; how many tokens they take.
fn repetition_tail(toks: &[TokenTree]) -> Option<(Option<TokenTree>, char, usize)> {
    let op = |t: Option<&TokenTree>| match t {
        Some(TokenTree::Punct(p)) if matches!(p.as_char(), '*' | '+' | '?') => Some(p.as_char()),
        _ => None,
    };
    if let Some(o) = op(toks.first()) {
        return Some((None, o, 1));
    }
    Some((Some(toks.first()?.clone()), op(toks.get(1))?, 2))
}

/// Whether two tokens are the same token (spacing and places aside).
fn same(a: &TokenTree, b: &TokenTree) -> bool {
    match (a, b) {
        (TokenTree::Ident(x), TokenTree::Ident(y)) => x == y,
        (TokenTree::Punct(x), TokenTree::Punct(y)) => x.as_char() == y.as_char(),
        (TokenTree::Literal(x), TokenTree::Literal(y)) => x.to_string() == y.to_string(),
        _ => false,
    }
}

/// The rest of the input after a match, and what was bound; `true` ends the search.
type Then<'k> = dyn FnMut(&[TokenTree], &mut Binds) -> bool + 'k;

/// Matches `ms` against a prefix of `toks`, calling `k` with what is left; backtracks
/// (over repetition counts) until `k` accepts.
fn seq(ms: &[M], toks: &[TokenTree], b: &mut Binds, steps: &Cell<u32>, k: &mut Then) -> bool {
    steps.set(steps.get() + 1);
    if steps.get() > MATCH_STEPS {
        return false;
    }
    let Some((first, rest)) = ms.split_first() else { return k(toks, b) };
    match first {
        M::Tok(t) => toks.first().is_some_and(|x| same(x, t)) && seq(rest, &toks[1..], b, steps, k),
        M::Group(d, inner) => {
            let Some(TokenTree::Group(g)) = toks.first() else { return false };
            if g.delimiter() != *d {
                return false;
            }
            let inside: Vec<TokenTree> = g.stream().into_iter().collect();
            let after = &toks[1..];
            let mut inner_b = b.clone();
            if !seq(inner, &inside, &mut inner_b, steps, &mut |left, _| left.is_empty()) {
                return false;
            }
            let saved = std::mem::replace(b, inner_b);
            let ok = seq(rest, after, b, steps, k);
            if !ok {
                *b = saved;
            }
            ok
        }
        M::Frag(name, kind) => {
            let Some(n) = fragment(*kind, toks) else { return false };
            let got: Vec<TokenTree> = toks[..n].to_vec();
            // An expression keeps its precedence where it lands (rustc's invisible
            // group): `$x * 2` with `a + b` is `(a + b) * 2`.
            let bind = match kind {
                Kind::Expr => match level(&got) {
                    Level::Postfix => Bind::One(got),
                    Level::Unary => Bind::Unary(got),
                    Level::Other => Bind::One(vec![parenthesised(got)]),
                },
                _ => Bind::One(got),
            };
            let old = b.insert(name.clone(), bind);
            let ok = seq(rest, &toks[n..], b, steps, k);
            if !ok {
                match old {
                    Some(o) => b.insert(name.clone(), o),
                    None => b.remove(name),
                };
            }
            ok
        }
        M::Rep(inner, sep, op) => {
            let mut iters = Vec::new();
            rep(inner, sep.as_ref(), *op, rest, toks, b, &mut iters, steps, k)
        }
    }
}

/// One more iteration of a repetition (greedy), or stop and match what follows it.
#[allow(clippy::too_many_arguments)]
fn rep(
    inner: &[M],
    sep: Option<&TokenTree>,
    op: char,
    rest: &[M],
    toks: &[TokenTree],
    b: &mut Binds,
    iters: &mut Vec<Binds>,
    steps: &Cell<u32>,
    k: &mut Then,
) -> bool {
    let more = op != '?' || iters.is_empty();
    let from = match (iters.is_empty(), sep) {
        (false, Some(s)) => toks.first().filter(|t| same(t, s)).map(|_| &toks[1..]),
        _ => Some(toks),
    };
    if let Some(from) = from.filter(|_| more) {
        let mut one = Binds::new();
        let progress = from.len();
        let found = seq(inner, from, &mut one, steps, &mut |left, got| {
            if left.len() == progress && sep.is_none() {
                // An iteration that takes nothing would repeat forever.
                return false;
            }
            iters.push(got.clone());
            let ok = rep(inner, sep, op, rest, left, b, iters, steps, k);
            if !ok {
                iters.pop();
            }
            ok
        });
        if found {
            return true;
        }
    }
    if op == '+' && iters.is_empty() {
        return false;
    }
    let mut names = Vec::new();
    vars(inner, &mut names);
    let saved = b.clone();
    for n in names {
        let seq_of = iters.iter().map(|i| i.get(&n).cloned().unwrap_or(Bind::Seq(Vec::new()))).collect();
        b.insert(n, Bind::Seq(seq_of));
    }
    let ok = seq(rest, toks, b, steps, k);
    if !ok {
        *b = saved;
    }
    ok
}

/// The variables a matcher binds.
fn vars(ms: &[M], out: &mut Vec<String>) {
    for m in ms {
        match m {
            M::Frag(n, _) => out.push(n.clone()),
            M::Group(_, inner) | M::Rep(inner, _, _) => vars(inner, out),
            M::Tok(_) => {}
        }
    }
}

/// How many tokens a fragment of `kind` takes at the start of `toks`.
fn fragment(kind: Kind, toks: &[TokenTree]) -> Option<usize> {
    let first = toks.first();
    match kind {
        Kind::Tt => first.map(|_| 1),
        Kind::Ident => matches!(first, Some(TokenTree::Ident(i)) if i != "_").then_some(1),
        Kind::Lifetime => {
            let tick = matches!(first, Some(TokenTree::Punct(p)) if p.as_char() == '\'');
            (tick && matches!(toks.get(1), Some(TokenTree::Ident(_)))).then_some(2)
        }
        Kind::Literal => match (first?, toks.get(1)) {
            (TokenTree::Literal(_), _) => Some(1),
            (TokenTree::Ident(i), _) if i == "true" || i == "false" => Some(1),
            (TokenTree::Punct(p), Some(TokenTree::Literal(_))) if p.as_char() == '-' => Some(2),
            _ => None,
        },
        Kind::Block => matches!(first, Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace).then_some(1),
        Kind::Expr => parsed_len::<syn::Expr>(toks).filter(|&n| n > 0),
        Kind::Ty => parsed_len::<syn::Type>(toks).filter(|&n| n > 0),
        Kind::Path => parsed_len::<syn::Path>(toks).filter(|&n| n > 0),
        Kind::Stmt => parsed_len::<syn::Stmt>(toks).filter(|&n| n > 0),
        Kind::Item => parsed_len::<syn::Item>(toks).filter(|&n| n > 0),
        Kind::Meta => parsed_len::<syn::Meta>(toks).filter(|&n| n > 0),
        Kind::Vis => parsed_len::<syn::Visibility>(toks),
        Kind::Pat => parsed_len_with(toks, syn::Pat::parse_multi_with_leading_vert).filter(|&n| n > 0),
        Kind::PatParam => parsed_len_with(toks, syn::Pat::parse_single).filter(|&n| n > 0),
    }
}

fn parsed_len<T: Parse>(toks: &[TokenTree]) -> Option<usize> {
    parsed_len_with(toks, T::parse)
}

/// How many tokens `parse` takes from the start of `toks`.
fn parsed_len_with<T>(toks: &[TokenTree], parse: fn(ParseStream) -> syn::Result<T>) -> Option<usize> {
    let ts: TokenStream = toks.iter().cloned().collect();
    let left = |input: ParseStream| -> syn::Result<usize> {
        parse(input)?;
        let rest: TokenStream = input.parse()?;
        Ok(rest.into_iter().count())
    };
    left.parse2(ts).ok().map(|l| toks.len() - l)
}

/// How tightly an expression's tokens bind.
enum Level {
    /// Tighter than any operator: a path, a literal, a call, a method call, a field, an
    /// index, `?`, a macro or a group.
    Postfix,
    /// A prefix operator's: tighter than any binary operator or `as`.
    Unary,
    Other,
}

fn level(toks: &[TokenTree]) -> Level {
    if toks.len() == 1 {
        return Level::Postfix;
    }
    let ts: TokenStream = toks.iter().cloned().collect();
    match syn::parse2::<syn::Expr>(ts) {
        Ok(
            syn::Expr::Path(_)
            | syn::Expr::Call(_)
            | syn::Expr::MethodCall(_)
            | syn::Expr::Field(_)
            | syn::Expr::Index(_)
            | syn::Expr::Macro(_)
            | syn::Expr::Try(_)
            | syn::Expr::Lit(_),
        ) => Level::Postfix,
        Ok(syn::Expr::Reference(_) | syn::Expr::Unary(_)) => Level::Unary,
        _ => Level::Other,
    }
}

fn parenthesised(toks: Vec<TokenTree>) -> TokenTree {
    let span = toks[0].span();
    let mut g = Group::new(Delimiter::Parenthesis, toks.into_iter().collect());
    g.set_span(span);
    TokenTree::Group(g)
}

/// The transcriber with its variables replaced (`idx`: the repetition being written at
/// each depth), the definition's own tokens placed at the call.
fn transcribe(ts: TokenStream, b: &Binds, idx: &[usize], at: Span) -> Option<TokenStream> {
    let toks: Vec<TokenTree> = ts.into_iter().collect();
    let mut out: Vec<TokenTree> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        match &toks[i] {
            TokenTree::Punct(p) if p.as_char() == '$' => match toks.get(i + 1) {
                Some(TokenTree::Ident(name)) if name == "crate" => {
                    out.push(TokenTree::Ident(Ident::new("crate", at)));
                    i += 2;
                }
                Some(TokenTree::Ident(name)) => {
                    let (toks_of, unary) = value_at(b.get(&name.to_string())?, idx)?;
                    let postfix = match toks.get(i + 2) {
                        Some(TokenTree::Punct(p)) => matches!(p.as_char(), '.' | '?'),
                        Some(TokenTree::Group(g)) => g.delimiter() == Delimiter::Bracket,
                        _ => false,
                    };
                    if unary && postfix {
                        out.push(parenthesised(toks_of.clone()));
                    } else {
                        out.extend(toks_of.iter().cloned());
                    }
                    i += 2;
                }
                Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis => {
                    let (sep, _, used) = repetition_tail(&toks[i + 2..])?;
                    let count = repetitions(g.stream(), b, idx)?;
                    for r in 0..count {
                        if r > 0 {
                            if let Some(s) = &sep {
                                out.push(placed(s.clone(), at));
                            }
                        }
                        let deeper: Vec<usize> = idx.iter().copied().chain([r]).collect();
                        out.extend(transcribe(g.stream(), b, &deeper, at)?);
                    }
                    i += 2 + used;
                }
                _ => return None,
            },
            TokenTree::Group(g) => {
                let mut ng = Group::new(g.delimiter(), transcribe(g.stream(), b, idx, at)?);
                ng.set_span(at);
                out.push(TokenTree::Group(ng));
                i += 1;
            }
            t => {
                out.push(placed(t.clone(), at));
                i += 1;
            }
        }
    }
    Some(out.into_iter().collect())
}

fn placed(mut t: TokenTree, at: Span) -> TokenTree {
    t.set_span(at);
    t
}

/// A variable's tokens at the repetition `idx` (a variable bound outside a repetition
/// is the same in each of its iterations), and whether they are a unary expression.
fn value_at<'b>(bind: &'b Bind, idx: &[usize]) -> Option<(&'b Vec<TokenTree>, bool)> {
    match (bind, idx.split_first()) {
        (Bind::One(t), _) => Some((t, false)),
        (Bind::Unary(t), _) => Some((t, true)),
        (Bind::Seq(items), Some((&i, rest))) => value_at(items.get(i)?, rest),
        (Bind::Seq(_), None) => None,
    }
}

/// How many times a repetition of the transcriber runs: the length of the sequences its
/// variables are bound to at this depth (they must agree).
fn repetitions(ts: TokenStream, b: &Binds, idx: &[usize]) -> Option<usize> {
    fn used(ts: TokenStream, out: &mut Vec<String>) {
        let toks: Vec<TokenTree> = ts.into_iter().collect();
        for (i, t) in toks.iter().enumerate() {
            match t {
                TokenTree::Group(g) => used(g.stream(), out),
                TokenTree::Ident(id) if i > 0 && matches!(&toks[i - 1], TokenTree::Punct(p) if p.as_char() == '$') => {
                    out.push(id.to_string())
                }
                _ => {}
            }
        }
    }
    let mut names = Vec::new();
    used(ts, &mut names);
    let mut count = None;
    for n in names {
        let Some(mut bind) = b.get(&n) else { continue };
        for &i in idx {
            bind = match bind {
                Bind::Seq(items) => items.get(i)?,
                Bind::One(_) | Bind::Unary(_) => break,
            };
        }
        if let Bind::Seq(items) = bind {
            match count {
                Some(c) if c != items.len() => return None,
                _ => count = Some(items.len()),
            }
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand_text(def: &str, call: &str) -> Option<String> {
        let m: syn::ItemMacro = syn::parse_str(def).unwrap();
        let rules = Rules::parse(m.mac.tokens).unwrap();
        let input: TokenStream = call.parse().unwrap();
        rules.expand(input, Span::call_site()).map(|t| t.to_string().replace(' ', ""))
    }

    #[test]
    fn fragments_and_precedence() {
        let def = "macro_rules! twice { ($x:expr) => { $x * 2 }; }";
        assert_eq!(expand_text(def, "a + b").unwrap(), "(a+b)*2");
        assert_eq!(expand_text(def, "c.rank()").unwrap(), "c.rank()*2");
        let def = "macro_rules! len { ($x:expr) => { $x.len() + $x }; }";
        assert_eq!(expand_text(def, "&a").unwrap(), "(&a).len()+&a");
    }

    #[test]
    fn arms_in_order_and_repetitions() {
        let def = "macro_rules! send_all {
            ($c:expr; $($to:expr => $v:expr),* $(,)?) => { $( $c.send($to, T, $v)?; )* };
            ($c:expr) => { () };
        }";
        let out = expand_text(def, "world; 1 => &a, 2 => &b,").unwrap();
        assert_eq!(out, "world.send(1,T,&a)?;world.send(2,T,&b)?;");
        assert_eq!(expand_text(def, "world").unwrap(), "()");
        assert_eq!(expand_text(def, "1 +").as_deref(), None);
    }

    #[test]
    fn nested_repetitions_and_idents() {
        let def = "macro_rules! m { ($($name:ident = [$($v:expr),*]);*) => { $( let $name = vec![$($v),*]; )* }; }";
        let out = expand_text(def, "a = [1, 2]; b = []").unwrap();
        assert_eq!(out, "leta=vec![1,2];letb=vec![];");
    }

    #[test]
    fn tt_munching() {
        let def = "macro_rules! count { () => { 0 }; ($h:tt $($t:tt)*) => { 1 + count!($($t)*) }; }";
        assert_eq!(expand_text(def, "a b c").unwrap(), "1+count!(bc)");
    }
}
