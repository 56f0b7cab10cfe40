//! Lengths and counts computed from data, as linear forms over the data they come from:
//! `total + 1` where `total` is the sum of counts the check cannot compute, `rows * W`
//! beside `rows`. A length that is data is unknown, but two such lengths built from the
//! same unknowns can still be compared: `Σ counts + 1` is never `Σ counts`, and `3 · n`
//! is `n` only where `n` is 0. The check records the form of each number it computes
//! from data by `+`, `-`, `*` by a known number and `sum()`, and the length of each
//! buffer made by `vec![x; k]` with `k` such a number; a collective then compares its
//! buffers' lengths with its counts by their forms ([`provably_differ`]), and the
//! simulation does the same for what an `all_to_all_v` sender sends and its receiver
//! expects, once the receiver's counts are traced back to what the sender sent.

use super::super::trace::Count;
use super::counts::SentBy;
use super::value::V;
use super::FxMap;
use std::collections::BTreeMap;

/// `c + Σ k·x` over data `x` (by its hash): a number computed from data by additions,
/// subtractions and products with known numbers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Form {
    pub c: i128,
    pub terms: BTreeMap<u64, i128>,
}

thread_local! {
    /// The form of each number computed from data, by its hash.
    static FORMS: std::cell::RefCell<FxMap<u64, Form>> = Default::default();
    /// The length of each buffer `vec![x; k]` with `k` data, by the buffer's hash.
    static LENS: std::cell::RefCell<FxMap<u64, Form>> = Default::default();
}

/// Forgets the forms (between checks).
pub(super) fn reset() {
    FORMS.with(|f| f.borrow_mut().clear());
    LENS.with(|l| l.borrow_mut().clear());
}

impl Form {
    fn constant(c: i128) -> Form {
        Form { c, terms: BTreeMap::new() }
    }
    fn atom(fp: u64) -> Form {
        Form { c: 0, terms: BTreeMap::from([(fp, 1)]) }
    }
    fn add(&self, o: &Form, sign: i128) -> Option<Form> {
        let mut terms = self.terms.clone();
        for (x, k) in &o.terms {
            let t = terms.entry(*x).or_insert(0);
            *t = t.checked_add(k.checked_mul(sign)?)?;
            if *t == 0 {
                terms.remove(x);
            }
        }
        Some(Form { c: self.c.checked_add(o.c.checked_mul(sign)?)?, terms })
    }
    fn scale(&self, k: i128) -> Option<Form> {
        if k == 0 {
            return Some(Form::constant(0));
        }
        let terms = self.terms.iter().map(|(x, t)| Some((*x, t.checked_mul(k)?))).collect::<Option<_>>()?;
        Some(Form { c: self.c.checked_mul(k)?, terms })
    }
    /// The form of data with hash `fp`: what was recorded for it, or itself as an unknown.
    pub fn of_data(fp: u64) -> Form {
        FORMS.with(|f| f.borrow().get(&fp).cloned()).unwrap_or_else(|| Form::atom(fp))
    }
}

/// The form of a number: a known one, or data (`None` for anything else).
pub(super) fn form_of(v: &V) -> Option<Form> {
    match v {
        V::Int(i) => Some(Form::constant(*i)),
        V::Opaque { comm: false, fp } if *fp != 0 => Some(Form::of_data(*fp)),
        _ => None,
    }
}

/// Notes `result = l op r` where the result is data computed from numbers with forms.
pub(super) fn note_arith(op: &syn::BinOp, l: &V, r: &V, result: &V) {
    use syn::BinOp::*;
    let V::Opaque { comm: false, fp } = result else { return };
    let (Some(a), Some(b)) = (form_of(l), form_of(r)) else { return };
    let f = match op {
        Add(_) | AddAssign(_) => a.add(&b, 1),
        Sub(_) | SubAssign(_) => a.add(&b, -1),
        Mul(_) | MulAssign(_) if b.terms.is_empty() => a.scale(b.c),
        Mul(_) | MulAssign(_) if a.terms.is_empty() => b.scale(a.c),
        _ => None,
    };
    if let Some(f) = f {
        FORMS.with(|m| m.borrow_mut().insert(*fp, f));
    }
}

/// Notes that `result` is the sum of `items` (`counts.iter().sum()`), where each has a form.
pub(super) fn note_sum(items: &[V], result: &V) {
    let V::Opaque { comm: false, fp } = result else { return };
    let mut total = Form::constant(0);
    for x in items {
        let Some(f) = form_of(x).and_then(|f| total.add(&f, 1)) else { return };
        total = f;
    }
    FORMS.with(|m| m.borrow_mut().insert(*fp, total));
}

/// Notes that the buffer `buf` (data) holds `len` items, a number with a form.
pub(super) fn note_len(buf: &V, len: &V) {
    let (V::Opaque { comm: false, fp }, Some(f)) = (buf, form_of(len)) else { return };
    LENS.with(|l| l.borrow_mut().insert(*fp, f));
}

/// The length of a buffer as a form: a list's, or one noted by [`note_len`].
pub(super) fn len_form(v: &V) -> Option<Form> {
    match v {
        V::List(items) => Some(Form::constant(items.len() as i128)),
        V::Opt(Some(x)) => len_form(x),
        V::Opaque { comm: false, fp } => LENS.with(|l| l.borrow().get(fp).cloned()),
        _ => None,
    }
}

/// `.len()` of a buffer whose length is a form of data, and `.sum()` of numbers some of
/// which are data, each with a form: data with that form (`None` for anything else).
pub(super) fn method<'a>(recv: &V<'a>, m: &str, args: &[V<'a>]) -> Option<V<'a>> {
    if !args.is_empty() {
        return None;
    }
    match m {
        "len" if len_form(recv).is_some_and(|f| !f.terms.is_empty()) => {
            let v = V::derived(&[recv, &V::Name("len".into())]);
            note_len_read(recv, &v);
            Some(v)
        }
        "sum" => {
            let items = super::iter_items(recv)?;
            let data = items.iter().any(|x| matches!(x, V::Opaque { comm: false, .. }));
            if !data || !items.iter().all(|x| form_of(x).is_some()) {
                return None;
            }
            let v = V::derived(&[recv, &V::Name("sum".into())]);
            note_sum(&items, &v);
            Some(v)
        }
        _ => None,
    }
}

/// Notes that `v` (data) is the length of `buf`, where that length has a form.
pub(super) fn note_len_read(buf: &V, v: &V) {
    let (V::Opaque { comm: false, fp }, Some(f)) = (v, len_form(buf)) else { return };
    if !f.terms.is_empty() {
        FORMS.with(|m| m.borrow_mut().insert(*fp, f));
    }
}

/// How `have` differs from `want` where it differs for every value of the data they are
/// computed from, or for every value but 0: by a known number (`Σ counts + 1` against
/// `Σ counts`: "1 element more than"), or as a multiple of the same data (`3 · rows`
/// against `rows`: "3 times as many elements as"). `None` where they are equal, or may be
/// equal for data the check cannot rule out (forms over different data: what the program
/// computed apart may be equal).
pub fn provably_differ(have: &Form, want: &Form) -> Option<String> {
    let els = |d: i128| if d == 1 { "element" } else { "elements" };
    if have == want {
        return None;
    }
    if have.terms == want.terms {
        let d = have.c - want.c;
        return Some(if d > 0 {
            format!("{d} {} more than", els(d))
        } else {
            format!("{} {} fewer than", -d, els(-d))
        });
    }
    // A multiple: the same data, every coefficient and the constant scaled alike.
    if have.terms.is_empty() || !have.terms.keys().eq(want.terms.keys()) {
        return None;
    }
    let (x, k) = want.terms.iter().next().expect("not empty");
    let h = have.terms[x];
    // have = (h / k) · want, item by item.
    let same_ratio = |a: i128, b: i128| a.checked_mul(*k) == b.checked_mul(h);
    if !have.terms.iter().all(|(y, a)| same_ratio(*a, want.terms[y])) || !same_ratio(have.c, want.c) {
        return None;
    }
    Some(if h % k == 0 {
        format!("{} times as many elements as", h / k)
    } else {
        format!("{h}/{k} as many elements as")
    })
}

/// The sum of `forms`, where it does not overflow.
pub(super) fn sum(forms: &[Form]) -> Option<Form> {
    forms.iter().try_fold(Form::constant(0), |acc, f| acc.add(f, 1))
}

/// The form of a count as the simulation holds it: a number, data, what was received
/// traced to what its sender sent (`sent`), and sums and products with numbers of those.
pub fn of_count(c: &Count, sent: SentBy<'_>, depth: u32) -> Option<Form> {
    match c {
        Count::Known(i) => Some(Form::constant(*i)),
        Count::Data(fp) => Some(Form::of_data(*fp)),
        Count::Recv { comm, seq, from, idx } if depth > 0 => {
            let items = sent(comm, *from, *seq)?;
            of_count(items.get(*idx)?, sent, depth - 1)
        }
        Count::Derived { op, parts } if depth > 0 => {
            let [a, b] = parts.as_slice() else { return None };
            let (a, b) = (of_count(a, sent, depth - 1)?, of_count(b, sent, depth - 1)?);
            match op {
                Some('+') => a.add(&b, 1),
                Some('-') => a.add(&b, -1),
                Some('*') if b.terms.is_empty() => a.scale(b.c),
                Some('*') if a.terms.is_empty() => b.scale(a.c),
                _ => None,
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(c: i128, terms: &[(u64, i128)]) -> Form {
        Form { c, terms: terms.iter().copied().collect() }
    }

    /// Forms over the same data are compared; forms over other data never are.
    #[test]
    fn forms_differ_only_where_the_data_cannot_make_them_equal() {
        let (a, b) = (11u64, 22u64);
        // Σ + 1 against Σ, and Σ - 2 against Σ.
        let sum = form(0, &[(a, 1), (b, 1)]);
        assert_eq!(provably_differ(&form(1, &[(a, 1), (b, 1)]), &sum).as_deref(), Some("1 element more than"));
        assert_eq!(provably_differ(&form(-2, &[(a, 1), (b, 1)]), &sum).as_deref(), Some("2 elements fewer than"));
        // 3·a against a; a against 2·a; (2a + 2) against (a + 1).
        assert_eq!(
            provably_differ(&form(0, &[(a, 3)]), &form(0, &[(a, 1)])).as_deref(),
            Some("3 times as many elements as")
        );
        assert_eq!(
            provably_differ(&form(0, &[(a, 1)]), &form(0, &[(a, 2)])).as_deref(),
            Some("1/2 as many elements as")
        );
        assert!(provably_differ(&form(2, &[(a, 2)]), &form(1, &[(a, 1)])).is_some());
        // Equal, or over other data, or not a multiple: nothing claimed.
        assert_eq!(provably_differ(&sum, &sum), None);
        assert_eq!(provably_differ(&form(0, &[(a, 1)]), &form(0, &[(b, 1)])), None);
        assert_eq!(provably_differ(&form(1, &[(a, 2)]), &form(0, &[(a, 1)])), None);
        assert_eq!(provably_differ(&form(0, &[(a, 1), (b, 2)]), &form(0, &[(a, 1), (b, 1)])), None);
        // A known number against data: never claimed (the data may be that number).
        assert_eq!(provably_differ(&form(4, &[]), &form(0, &[(a, 1)])), None);
        assert_eq!(provably_differ(&form(0, &[(a, 1)]), &form(4, &[])), None);
    }

    /// Arithmetic and sums record forms: `2 · x + 3 - x` is `x + 3`.
    #[test]
    fn arithmetic_on_data_records_its_form() {
        reset();
        let x = V::data(7);
        let two_x = V::data(8);
        note_arith(&syn::parse_quote!(*), &V::Int(2), &x, &two_x);
        let plus = V::data(9);
        note_arith(&syn::parse_quote!(+), &two_x, &V::Int(3), &plus);
        let minus = V::data(10);
        note_arith(&syn::parse_quote!(-), &plus, &x, &minus);
        assert_eq!(form_of(&minus), Some(form(3, &[(7, 1)])));
        // (A product of two data is not linear: the result is an unknown of its own.)
        let sq = V::data(11);
        note_arith(&syn::parse_quote!(*), &x, &x, &sq);
        assert_eq!(form_of(&sq), Some(form(0, &[(11, 1)])));
        let total = V::data(12);
        note_sum(&[x.clone(), V::Int(4), minus.clone()], &total);
        assert_eq!(form_of(&total), Some(form(7, &[(7, 2)])));
        let buf = V::data(13);
        note_len(&buf, &total);
        assert_eq!(len_form(&buf), form_of(&total));
        reset();
    }
}
