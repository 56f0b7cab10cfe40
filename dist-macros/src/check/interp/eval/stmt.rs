//! Statements and blocks, and speculation: running the branches of a condition the
//! check cannot decide to see whether they communicate, and what they leave.

use super::*;

impl<'a> Interp<'a> {
    pub(in crate::check::interp) fn block(&mut self, b: &'a Block) -> R<'a> {
        self.scoped(|me| me.stmts(&b.stmts))
    }

    pub(in crate::check::interp) fn stmts(&mut self, stmts: &'a [Stmt]) -> R<'a> {
        // Nested fns and consts are visible in the whole block.
        for s in stmts {
            match s {
                Stmt::Item(Item::Fn(f)) => {
                    self.fns.insert(f.sig.ident.to_string(), f);
                }
                Stmt::Item(Item::Const(c)) => {
                    let v = self.expr(&c.expr).unwrap_or(V::opaque());
                    self.define(c.ident.to_string(), v);
                }
                _ => {}
            }
        }
        let mut last = V::Unit;
        for (i, s) in stmts.iter().enumerate() {
            last = match s {
                Stmt::Local(l) => {
                    let Some(init) = &l.init else {
                        self.bind_opaque(&l.pat, &V::opaque());
                        continue;
                    };
                    let mut v = self.expr(&init.expr)?;
                    // (`let s: BTreeSet<usize> = xs.iter().collect()`: the declared collection.)
                    if let Pat::Type(pt) = &l.pat {
                        v = super::super::collections::typed(v, &pt.ty);
                    }
                    self.aliased(&init.expr);
                    if matches!(v, V::Opaque { .. }) {
                        let mut names = Vec::new();
                        pat_names(&l.pat, &mut names);
                        for n in names {
                            let text =
                                format!("`{n}` is `{}` ({})", init.expr.to_token_stream(), self.place(&init.expr));
                            self.note_why(&n, text, &init.expr);
                        }
                    }
                    self.note_numbering(&l.pat, &init.expr);
                    self.note_elem(&l.pat, Some(&init.expr));
                    match self.bind(&l.pat, v) {
                        Some(true) => {}
                        Some(false) => match &init.diverge {
                            Some((_, e)) => {
                                // The else block diverges (return, break, panic).
                                self.expr(e)?;
                                return Err(Flow::Fail);
                            }
                            None => return Err(Flow::Fail),
                        },
                        None => {
                            if let Some((_, e)) = &init.diverge {
                                // The else branch may run: it must not communicate.
                                self.speculate(&[Branch::Expr(e)], e)?;
                            }
                        }
                    }
                    V::Unit
                }
                Stmt::Item(_) => V::Unit,
                Stmt::Expr(e, semi) => {
                    let v = self.expr(e)?;
                    if semi.is_some() && i + 1 < stmts.len() {
                        V::Unit
                    } else if semi.is_some() {
                        // `return`-free last statement with a semicolon: the block is ().
                        if v == V::Err {
                            V::Err
                        } else {
                            V::Unit
                        }
                    } else {
                        v
                    }
                }
                Stmt::Macro(m) => self.mac(&m.mac)?,
            };
        }
        Ok(last)
    }

    /// Evaluates branches that may or may not run (their condition is opaque). They must
    /// not communicate; variables they change become opaque afterwards.
    pub(in crate::check::interp) fn speculate(
        &mut self,
        branches: &[Branch<'a>],
        at: &impl ToTokens,
    ) -> Result<(), Flow<'a>> {
        let before_scopes = self.scopes.clone();
        let (ne, nc) = (self.events.len(), self.comms.len());
        let mut changed: Vec<scopes::Sym> = Vec::new();
        let mut reshaped: Vec<scopes::Sym> = Vec::new();
        // What each changed variable was set to, in any branch, and the condition: the
        // data it holds after is computed from those ([`V::Opaque`]'s `fp`).
        let cond_fp = std::mem::take(&mut self.cond_fp);
        let agreed_cond = std::mem::take(&mut self.spec_agreed);
        let mut salts: Vec<(scopes::Sym, u64)> = Vec::new();
        // Under a condition the same on every rank, every rank takes the same branch:
        // a variable that each branch leaves the same on every rank (and that was so
        // before) is the same on every rank after (`if counts[c] > 0 { x = sums[c] /
        // counts[c] }`).
        let mut all_agreed: Vec<(scopes::Sym, bool)> = Vec::new();
        // Under a condition on exact data ([`V::derived`]), what each branch leaves is
        // exact where its values and the variable's before are.
        let mut all_exact: Vec<(scopes::Sym, bool)> = Vec::new();
        let mut values = Vec::new();
        // What each branch left in each variable it changed.
        let mut afters: Vec<(scopes::Sym, V<'a>)> = Vec::new();
        for b in branches {
            self.scopes = before_scopes.clone();
            self.speculative += 1;
            let r = match b {
                Branch::Expr(e) => self.expr(e),
                Branch::Block(b) => self.block(b),
            };
            self.speculative -= 1;
            let communicated = self.events.len() != ne || self.comms.len() != nc;
            if communicated {
                let what = match &self.events[ne..].first() {
                    // (Where the op is, when it is in a helper: the construct's own span
                    // is the condition's.)
                    Some(ev) => {
                        format!("`{}`{} under a condition that depends on data", ev.call(), ev.site().helper_note())
                    }
                    None => "a communicator created under a condition that depends on data".into(),
                };
                self.scopes = before_scopes;
                return Err(undecidable(at, what));
            }
            match r {
                Ok(v) => values.push(v),
                Err(Flow::Fail) => {}
                Err(Flow::Stop(s)) => {
                    self.scopes = before_scopes;
                    return Err(Flow::Stop(s));
                }
                Err(_) => {
                    self.scopes = before_scopes;
                    return Err(undecidable(
                        at,
                        "`return`, `break` or `continue` under a condition that depends on data",
                    ));
                }
            }
            for (depth, k, v) in self.scopes.entries() {
                if before_scopes.get_in(depth, k) != Some(v) {
                    // Whether only its data changed (a struct whose buffers a branch
                    // wrote keeps its communicators and shape).
                    let same_shape = before_scopes
                        .get_in(depth, k)
                        .is_some_and(|b| shape(forget(b.clone(), false)) == shape(forget(v.clone(), false)))
                        // (A map's shape is its keys.)
                        && before_scopes.get_in(depth, k).is_some_and(|b| !is_map(b) || shape(b.clone()) == shape(v.clone()));
                    if !same_shape {
                        reshaped.push(k);
                    }
                    changed.push(k);
                    salts.push((k, fp_of(&[v, &V::Int(cond_fp as i128)])));
                    afters.push((k, v.clone()));
                    let before = before_scopes.get_in(depth, k);
                    let same = agreed_cond && same_everywhere(v) && before.is_none_or(same_everywhere);
                    let exact = (agreed_cond || super::value::is_exact(cond_fp))
                        && exact_class(v)
                        && before.is_none_or(exact_class);
                    all_agreed.push((k, same));
                    all_exact.push((k, exact));
                }
            }
        }
        self.scopes = before_scopes;
        // Under a condition the same on every rank, branches that leave different values
        // the check follows are not merged: the caller decides the condition instead
        // ([`Self::agreed_branch`]), from the scopes as they were.
        self.spec_lossy = agreed_cond
            && self.speculative == 0
            && (self.quotas.is_empty() || !touched_input())
            && lossy(&values, &changed, &afters, &self.scopes);
        if self.spec_lossy {
            return Ok(());
        }
        self.spec_values = values;
        let changes = Changes { changed, reshaped, salts, all_agreed, all_exact, afters };
        self.merge_changes(changes, cond_fp, agreed_cond, at);
        Ok(())
    }

    /// The variables the branches of [`Self::speculate`] changed, after them: the same on
    /// every rank where the condition and every branch's value were, exact data where
    /// they were exact, else data (its shape kept where no branch changed it).
    fn merge_changes(&mut self, ch: Changes<'a>, cond_fp: u64, agreed_cond: bool, at: &impl ToTokens) {
        let Changes { changed, reshaped, salts, all_agreed, all_exact, afters } = ch;
        // (Where the condition is, and the names it reads, for the notes of what came to
        // hold data: worked out once, and only for a variable that needs a note. Each
        // renders `at` as tokens, which for a loop is its whole body.)
        let mut cond: Option<(String, Vec<String>)> = None;
        for k in changed {
            if let Some(slot) = self.scopes.get_mut(k) {
                let salt = salts.iter().filter(|x| x.0 == k).fold(0u64, |a, x| a.rotate_left(5) ^ x.1) | 1;
                let agreed = all_agreed.iter().filter(|x| x.0 == k).all(|x| x.1);
                let exact = all_exact.iter().filter(|x| x.0 == k).all(|x| x.1) && !slot.has_comm();
                *slot = if agreed {
                    if reshaped.contains(&k) {
                        V::Agreed
                    } else {
                        agree(slot.clone())
                    }
                } else if exact {
                    let after: Vec<&V<'a>> = afters.iter().filter(|x| x.0 == k).map(|x| &x.1).collect();
                    exact_after(slot.clone(), &after, !reshaped.contains(&k), cond_fp, agreed_cond)
                } else if reshaped.contains(&k) {
                    let comm = slot.has_comm();
                    V::Opaque { comm, fp: if comm { 0 } else { fp_of(&[slot, &V::Int(salt as i128)]) } }
                } else if matches!(slot, V::Struct(..)) {
                    // (A struct's fields that no branch changed, its communicators among
                    // them, keep what they hold.)
                    let after: Vec<&V<'a>> = afters.iter().filter(|x| x.0 == k).map(|x| &x.1).collect();
                    let exact_cond = agreed_cond || super::value::is_exact(cond_fp);
                    merged_after(slot.clone(), &after, true, cond_fp, (exact_cond, agreed_cond))
                } else {
                    forget_with(slot.clone(), false, salt)
                };
                let name = scopes::text(k).to_string();
                if !name.starts_with('\u{0}') {
                    let (place, reads) = cond.get_or_insert_with(|| {
                        let mut reads = Vec::new();
                        super::summary::ident_walk(at.to_token_stream(), &mut reads);
                        (self.place(at), reads)
                    });
                    let text = format!("`{name}` is set in a branch or loop whose condition depends on data ({place})");
                    let more = reads.iter().filter(|m| **m != name).cloned().collect();
                    self.why.insert(name, (text, more));
                }
            }
        }
    }
}

/// Whether merging the branches of a speculated region loses what the check follows:
/// their values (`values`, one a branch that ended) or what they left in a variable
/// (`afters`, against what it held before, in `scopes`) differ, and one of them is a
/// value that can shape communication ([`followed`]).
fn lossy<'a>(
    values: &[V<'a>],
    changed: &[scopes::Sym],
    afters: &[(scopes::Sym, V<'a>)],
    scopes: &scopes::Scopes<'a>,
) -> bool {
    let differ = |vs: &[&V<'a>]| vs.iter().any(|v| *v != vs[0]) && vs.iter().any(|v| followed(v));
    if values.len() > 1 && differ(&values.iter().collect::<Vec<_>>()) {
        return true;
    }
    changed.iter().any(|k| {
        let mut vs: Vec<&V<'a>> = afters.iter().filter(|x| x.0 == *k).map(|x| &x.1).collect();
        match scopes.get(*k) {
            Some(before) => vs.push(before),
            None => return false,
        }
        differ(&vs)
    })
}

/// A value the check follows and that can shape communication: a number, a flag, an
/// option, a variant or struct, a list or tuple (not data, floats or text).
fn followed(v: &V) -> bool {
    match v {
        V::Int(_) | V::Bool(_) | V::Opt(_) | V::Range(..) | V::Comm(_) => true,
        V::Struct(_, fields) => fields.is_empty() || fields.iter().any(|(_, v)| followed(v)),
        V::List(items) => items.iter().any(followed),
        V::Tuple(items) => items.iter().any(followed),
        _ => false,
    }
}

/// What the branches of a speculated region changed: each variable changed, those whose
/// shape changed, per branch its salt (what it was set to and the condition), whether it
/// stayed the same on every rank and exact, and what the branch left in it.
struct Changes<'a> {
    changed: Vec<scopes::Sym>,
    reshaped: Vec<scopes::Sym>,
    salts: Vec<(scopes::Sym, u64)>,
    all_agreed: Vec<(scopes::Sym, bool)>,
    all_exact: Vec<(scopes::Sym, bool)>,
    afters: Vec<(scopes::Sym, V<'a>)>,
}

/// What a variable holds after a branch under a condition on exact data (or one the
/// same on every rank) whose branches leave it exact: what it was (`v`) where every branch
/// that changed it (`after`) left it so, else exact data of what it was and what the
/// branches did (`salt`); where no branch changed its shape, a list keeps its length and
/// a struct its fields, each merged alike (`stopper.bad_epochs` after `if val <
/// self.best { .. } else { self.bad_epochs += 1 }`, its `patience` kept as it was).
fn exact_after<'a>(v: V<'a>, after: &[&V<'a>], same_shape: bool, cond: u64, agreed: bool) -> V<'a> {
    merged_after(v, after, same_shape, cond, (true, agreed))
}

/// What a variable holds after branches under a condition on data (`cond`: its hash)
/// that changed it (`after`: what each branch left): field by field in a struct, where a
/// field no branch changed keeps its value and a changed one is data computed from its
/// own values (not from its struct's other fields, which may be the rank's own while it
/// is not); exact data where `exact` ([`exact_after`]); `agreed` where the condition is
/// the same on every rank.
fn merged_after<'a>(v: V<'a>, after: &[&V<'a>], same_shape: bool, cond: u64, (exact, agreed): (bool, bool)) -> V<'a> {
    if !after.is_empty() && after.iter().all(|a| **a == v) {
        return v;
    }
    // Computed from what it was, what each branch left and the condition.
    let from = |v: &V<'a>| {
        let mut all: Vec<&V<'a>> = vec![v];
        all.extend(after.iter().copied());
        V::Int(fp_of(&all) as i128 ^ cond as i128)
    };
    // (Exact where the condition is and what it was and what each branch left are.)
    let exact_leaf = exact && exact_class(&v) && after.iter().all(|a| exact_class(a));
    let leaf = |v: &V<'a>, salt: &V<'a>| {
        if v.has_comm() || after.iter().any(|a| a.has_comm()) {
            V::Opaque { comm: true, fp: 0 }
        } else if exact_leaf {
            V::derived(&[v, salt])
        } else {
            V::data(fp_of(&[v, salt]))
        }
    };
    // (A list keeps its length only where no branch left a list of another length: a
    // struct's field grown in a branch or loop, `out.idx.push(i)`, has a length from
    // data; one a branch left as data keeps its length where the package never resizes
    // that field itself, below. Under a condition the same on every rank, a flag parsed
    // from the inputs, the branches' lengths are those of one run, as the inputs'
    // numbers are samples: the list keeps its length.)
    let same_len = |items: &[V<'a>]| agreed || after.iter().all(|a| !matches!(a, V::List(l) if l.len() != items.len()));
    match v {
        V::List(items) if same_shape && same_len(&items) => {
            let salt = from(&V::List(items.clone()));
            V::list(items.iter().map(|x| leaf(x, &salt)).collect())
        }
        V::Struct(t, fields) if same_shape => {
            let merged = fields
                .into_iter()
                .enumerate()
                .map(|(i, (k, x))| {
                    let at: Vec<&V<'a>> = after
                        .iter()
                        .filter_map(|a| match a {
                            V::Struct(_, f) => f.get(i).filter(|(fk, _)| *fk == k).map(|(_, fv)| fv),
                            _ => None,
                        })
                        .collect();
                    // (A field the package resizes, left as data by a branch: its length too.)
                    let resized = !agreed
                        && matches!(x, V::List(_))
                        && super::super::field_own_resized(&t, &k)
                        && at.iter().any(|a| !matches!(a, V::List(_)));
                    let x = if at.len() == after.len() && !resized {
                        merged_after(x, &at, true, cond, (exact, agreed))
                    } else {
                        leaf(&x, &V::Name(format!("{k}/{cond}")))
                    };
                    (k, x)
                })
                .collect();
            V::Struct(t, merged)
        }
        v => {
            let salt = from(&v);
            leaf(&v, &salt)
        }
    }
}
