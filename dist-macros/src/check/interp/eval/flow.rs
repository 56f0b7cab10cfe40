//! Control flow: `if`, `match` and loops, and how conditions the check cannot evaluate
//! are decided (by pattern where the same on every rank, rank by rank on data).

use super::*;

impl<'a> Interp<'a> {
    /// A match guard's value: one the same on every rank but unknown to the check is
    /// decided by this run's pattern ([`super::AGREED_MODES`]), the same way on every rank.
    pub(in crate::check::interp) fn decided(&mut self, cond: &'a Expr) -> R<'a> {
        Ok(match self.expr(cond)? {
            V::Agreed | V::Uniform => V::Bool(self.agreed_next(cond as *const Expr as usize, true).1),
            v => v,
        })
    }

    /// The ordinal of this decision at `site` in the rank's run, and the pattern's
    /// answer for it (noted as decided when `note`).
    pub(in crate::check::interp) fn agreed_next(&mut self, site: usize, note: bool) -> (u32, bool) {
        let seen = self.agreed_seen.entry(site).or_insert(0);
        let j = *seen;
        *seen += 1;
        (j, if note { super::agreed_decision(j) } else { false })
    }

    /// Code under a condition that is the same on every rank but unknown (a residual
    /// reduced over every rank against a tolerance, a flag or mode from the command
    /// line). Where none of `branches` communicates, or leaves early, it is speculated
    /// like a condition on data (`Ok(None)`: what the branches set is forgotten, so an
    /// argument parser's fields stay unknown; so is any such condition in code that
    /// cannot communicate). Where one does, every rank takes the same
    /// branch, and this run's pattern decides which: `Ok(Some(j))`, the decision's
    /// ordinal at `site` ([`Self::agreed_next`]); the caller runs that branch for real.
    pub(in crate::check::interp) fn agreed_branch(
        &mut self,
        site: usize,
        branches: &[Branch<'a>],
        at: &impl ToTokens,
        cond: &'a Expr,
    ) -> Result<Option<u32>, Flow<'a>> {
        if !self.agreed_communicates.contains(&site) {
            let (ne, nc, id) = (self.events.len(), self.comms.len(), self.next_id);
            self.spec_agreed = true;
            match self.speculate(branches, at) {
                // Branches that leave different values the check follows (a mode's
                // variant, a node size), left unmerged: every rank takes one of them, so
                // the condition is decided, as where they communicate, rather than the
                // values merged into data.
                Ok(()) if self.spec_lossy => self.rewind_to_decide(site, (ne, nc, id)),
                Ok(()) => return Ok(None),
                // (In code that cannot communicate and reads the program's inputs itself,
                // an argument parser's loop, the region is summarised instead: what it
                // computes stays an input as a whole, not one decided path of it.)
                Err(Flow::Stop(Stop::Undecidable { .. }))
                    if self.speculative == 0 && (self.quotas.is_empty() || !touched_input()) =>
                {
                    self.rewind_to_decide(site, (ne, nc, id));
                }
                Err(f) => return Err(f),
            }
        }
        super::note_decided_condition(site, || {
            // (Where it is: the file and line, without the chain of calls.)
            let here = self.chain_text(trace::line_of(cond));
            let here = here.split(", ").next().unwrap_or_default();
            // (A `for` loop's, labelled or not: its iterator.)
            let at_loop = at.to_token_stream().into_iter().take(4).any(|t| t.to_string() == "for");
            match at_loop {
                true => format!("the loop over `{}` at {here}", super::trace::expr_text(cond)),
                false => format!("`{}` at {here}", super::trace::expr_text(cond)),
            }
        });
        Ok(Some(self.agreed_next(site, false).0))
    }

    /// After speculating the branches at `site` showed they communicate or leave early:
    /// what the speculation recorded (events, communicators, ids since `mark`) is
    /// dropped, and the condition is decided from now on, never speculated again.
    pub(in crate::check::interp) fn rewind_to_decide(&mut self, site: usize, mark: (usize, usize, usize)) {
        self.events.truncate(mark.0);
        self.comms.truncate(mark.1);
        self.next_id = mark.2;
        self.agreed_communicates.insert(site);
    }

    /// Code under a condition on data that may differ from rank to rank (a local loss,
    /// a received count, `rank == owner` with the owner data): speculated where none of
    /// `branches` communicates or leaves early (`Ok(None)`). Where one does, the ranks
    /// decide it ([`super::local_decision`]): rank by rank, by the data's hash (`fp`), so
    /// that ranks whose data was computed from different values take different branches
    /// where the run's pattern makes them; `Ok(Some(arm))` is this rank's branch. When
    /// no two ranks' data tell apart, the pass ends as this construct not followed
    /// ([`super::local_verdict`]), as before. `trip`: the test's place in a `while` loop
    /// (which entry into the loop, which test in it), decided so that the loop runs a
    /// bounded number of times ([`super::loop_decision`]).
    pub(in crate::check::interp) fn local_branch(
        &mut self,
        fp: u64,
        cond: &'a Expr,
        site: usize,
        branches: &[Branch<'a>],
        at: &impl ToTokens,
        trip: Option<(u32, u32)>,
    ) -> Result<Option<usize>, Flow<'a>> {
        if !self.agreed_communicates.contains(&site) {
            let (ne, nc, id) = (self.events.len(), self.comms.len(), self.next_id);
            self.cond_fp = fp;
            match self.speculate(branches, at) {
                Ok(()) => return Ok(None),
                // (In code that cannot communicate, only on exact data: what the region
                // computes on data that may differ is summarised as data, never taken
                // from one arm picked for it.)
                Err(Flow::Stop(Stop::Undecidable { at: a, what, located }))
                    if fp != 0
                        && self.speculative == 0
                        && (self.quotas.is_empty() || (!touched_input() && super::value::is_exact(fp))) =>
                {
                    if !super::local_enabled() {
                        super::local_stop(site, fp);
                        return Err(Flow::Stop(Stop::Undecidable { at: a, what, located }));
                    }
                    self.rewind_to_decide(site, (ne, nc, id));
                    self.local_seen.insert(site, (0, what));
                }
                Err(f) => return Err(f),
            }
        }
        // (A condition decided before on data the same on every rank, now on data that
        // may differ: `shift <= tol` with `shift` reduced at first, then computed from
        // what the ranks computed.)
        if !self.local_seen.contains_key(&site) && fp != 0 && self.speculative == 0 {
            let what = "a condition on data whose code communicates or leaves early".to_string();
            if !super::local_enabled() {
                super::local_stop(site, fp);
                return Err(undecidable(at, what));
            }
            self.local_seen.insert(site, (0, what));
        }
        let Some((j, what)) = self.local_seen.get_mut(&site).map(|e| {
            e.0 += 1;
            (e.0 - 1, e.1.clone())
        }) else {
            return Err(undecidable(at, "a condition on data under a condition the same on every rank"));
        };
        let (at, what) = match self.locate_stop::<()>(Err(undecidable(at, what))) {
            Err(Flow::Stop(Stop::Undecidable { at, what, .. })) => (at, what),
            _ => unreachable!("locate_stop keeps the error"),
        };
        let text = format!("`{}` at {}", super::trace::expr_text(cond), self.chain_text(trace::line_of(cond)));
        let arms = branches.len().max(2);
        let (j, first) = match trip {
            Some((entry, k)) => ((entry << 16) | k.min(0xffff), Some(super::loop_decision(entry, k))),
            None => (j, None),
        };
        let pick = super::local_decision(site, j, fp, self.rank, arms, at, what, text, first);
        Ok(Some(pick))
    }

    pub(in crate::check::interp) fn labeled_block(&mut self, label: Option<&syn::Label>, b: &'a Block) -> R<'a> {
        match self.block(b) {
            Err(Flow::Break(Some(l), v)) if label.is_some_and(|x| x.name.ident == l) => Ok(v),
            r => r,
        }
    }

    /// An `if`'s taken `then` branch. `if got != want { return Err(..) }` that fails
    /// without communicating, after this rank decided a condition by pattern (a loop on
    /// a residual run once), is taken to pass where the run assumes so
    /// ([`Interp::assumes_checks_pass`]).
    fn then_branch(&mut self, i: &'a syn::ExprIf) -> R<'a> {
        let (ne, nc) = (self.events.len(), self.comms.len());
        match self.block(&i.then_branch) {
            Err(Flow::Fail)
                if i.else_branch.is_none()
                    && (self.events.len(), self.comms.len()) == (ne, nc)
                    && self.assumes_checks_pass() =>
            {
                Ok(V::Unit)
            }
            r => r,
        }
    }

    pub(in crate::check::interp) fn if_expr(&mut self, i: &'a syn::ExprIf) -> R<'a> {
        self.scoped(|me| {
            let c = me.expr(&i.cond)?;
            match c {
                V::Bool(true) => me.then_branch(i),
                V::Bool(false) => match &i.else_branch {
                    Some((_, e)) => me.expr(e),
                    None => Ok(V::Unit),
                },
                c => {
                    let mut branches = vec![Branch::Block(&i.then_branch)];
                    if let Some((_, e)) = &i.else_branch {
                        branches.push(Branch::Expr(e));
                    }
                    if matches!(c, V::Agreed | V::Uniform) {
                        let site = &*i.cond as *const Expr as usize;
                        if let Some(j) = me.agreed_branch(site, &branches, i, &i.cond)? {
                            let on = match c {
                                V::Uniform => super::input_decision(site),
                                _ => super::agreed_decision(j),
                            };
                            return match (on, &i.else_branch) {
                                (true, _) => me.then_branch(i),
                                (false, Some((_, e))) => me.expr(e),
                                (false, None) => Ok(V::Unit),
                            };
                        }
                        // Every rank took the same branch: its value is the same on
                        // every rank where each branch's is.
                        let vals = std::mem::take(&mut me.spec_values);
                        if i.else_branch.is_some() && vals.len() == 2 && vals.iter().all(same_everywhere) {
                            return Ok(if vals[0] == vals[1] { vals[0].clone() } else { agree(vals[0].clone()) });
                        }
                        if i.else_branch.is_some() && vals.len() == 2 {
                            return Ok(V::derived(&[&c, &vals[0], &vals[1]]));
                        }
                        return Ok(V::opaque());
                    }
                    if let V::Opaque { comm: false, fp } = c {
                        let site = &*i.cond as *const Expr as usize;
                        return match me.local_branch(fp, &i.cond, site, &branches, i, None)? {
                            Some(0) => me.block(&i.then_branch),
                            Some(_) => match &i.else_branch {
                                Some((_, e)) => me.expr(e),
                                None => Ok(V::Unit),
                            },
                            // Both branches computed from exact data under an exact
                            // condition: the value is exact too.
                            None => {
                                let vals = std::mem::take(&mut me.spec_values);
                                let mut all: Vec<&V<'a>> = vec![&c];
                                all.extend(vals.iter());
                                Ok(
                                    if super::value::is_exact(fp)
                                        && vals.len() == branches.len()
                                        && i.else_branch.is_some()
                                    {
                                        V::derived(&all)
                                    } else {
                                        V::taint(&[&c])
                                    },
                                )
                            }
                        };
                    }
                    me.speculate(&branches, i)?;
                    Ok(V::taint(&[&c]))
                }
            }
        })
    }

    /// The variant an input matched against `arms` is in this run, where the arms name
    /// an enum of the package whose variants are all units: in the run with inputs'
    /// sample `s` and pattern `mode`, the variant `(s + mode) % count`, so the runs of
    /// one world size take each of up to four variants. An input matched against
    /// `Some(x)` is an `Option` of an input: `Some` in some runs, `None` in others.
    fn input_variant(&self, arms: &[syn::Arm]) -> Option<V<'a>> {
        fn named(p: &Pat) -> Option<&syn::Path> {
            match p {
                Pat::Path(p) => Some(&p.path),
                Pat::Ident(i) if i.subpat.is_none() => None,
                Pat::Or(o) => o.cases.iter().find_map(named),
                _ => None,
            }
        }
        // (An input read as an `Option`, `--px` given or not: `Some(input)` or `None`.)
        let some = |p: &Pat| matches!(p, Pat::TupleStruct(t) if last_seg(&t.path) == "Some" && t.elems.len() == 1);
        if arms.iter().any(|a| some(&a.pat) || matches!(&a.pat, Pat::Or(o) if o.cases.iter().any(some))) {
            let k = crate::check::interp::uniform_number() as usize + crate::check::interp::agreed_mode() as usize;
            return Some(V::Opt((k % 2 == 1).then(|| Box::new(V::Uniform))));
        }
        let en = arms.iter().find_map(|a| named(&a.pat).and_then(|p| self.enum_of(&last_seg(p))))?;
        let marker = self.file_fns.get(&format!("{en}::__unit_variants"))?;
        let Some(syn::Stmt::Expr(Expr::Array(list), _)) = marker.block.stmts.first() else { return None };
        let names: Vec<String> = list
            .elems
            .iter()
            .filter_map(|e| match e {
                Expr::Path(p) => Some(last_seg(&p.path)),
                _ => None,
            })
            .collect();
        if names.is_empty() {
            return None;
        }
        let k = (crate::check::interp::uniform_number() as usize + crate::check::interp::agreed_mode() as usize)
            % names.len();
        Some(V::Struct(format!("{en}::{}", names[k]), Vec::new()))
    }

    pub(in crate::check::interp) fn match_expr(&mut self, m: &'a syn::ExprMatch) -> R<'a> {
        let accessor = self.mut_accessor(&m.expr)?;
        let v = match &accessor {
            Some((_, _, v)) => v.clone(),
            None => self.expr(&m.expr)?,
        };
        // A value of the package's enum of unit variants read from the program's inputs
        // (`--algo bitonic` parsed into `Algo::Bitonic`): the same on every rank, and
        // one of its variants, each taken in some run.
        let v = match v {
            V::Uniform => self.input_variant(&m.arms).unwrap_or(V::Uniform),
            v => v,
        };
        let mut unknown: Vec<Branch<'a>> = Vec::new();
        let mut unknown_arms: Vec<&'a syn::Arm> = Vec::new();
        for arm in &m.arms {
            let r = self.scoped(|me| -> Result<Option<R<'a>>, Flow<'a>> {
                let hit = me.bind(&arm.pat, v.clone());
                let hit = match (hit, &arm.guard) {
                    (Some(true), Some((_, g))) => match me.decided(g)? {
                        V::Bool(b) => Some(b),
                        _ => None,
                    },
                    (h, _) => h,
                };
                match hit {
                    Some(true) if unknown.is_empty() => {
                        let r = me.expr(&arm.body);
                        if let (Ok(_), Some((place, Some(idx), _))) = (&r, &accessor) {
                            me.write_back(&arm.pat, place, *idx)?;
                        }
                        Ok(Some(r))
                    }
                    Some(false) => Ok(None),
                    _ => {
                        unknown.push(Branch::Expr(&arm.body));
                        unknown_arms.push(arm);
                        Ok(None)
                    }
                }
            })?;
            if let Some(r) = r {
                return r;
            }
        }
        if unknown.is_empty() {
            return Ok(V::Unit);
        }
        // An arm the check cannot pick may write through the accessor's binding.
        if let Some((place, _, _)) = &accessor {
            self.clobber_place(place, true);
        }
        // A value the same on every rank (a mode from the command line, or a tuple of
        // them: `match (self.px, self.py)` of optional flags): every rank takes the same
        // arm, picked by this run's pattern.
        if same_input(&v) && unknown_arms.len() > 1 {
            let site = m as *const syn::ExprMatch as usize;
            let Some(j) = self.scoped(|me| {
                for arm in &unknown_arms {
                    me.bind_opaque(&arm.pat, &v);
                }
                me.agreed_branch(site, &unknown, m, &m.expr)
            })?
            else {
                return Ok(V::opaque());
            };
            let pick = super::arm_pick(site, j, unknown_arms.len());
            let arm = unknown_arms[pick];
            return self.scoped(|me| {
                me.bind_opaque(&arm.pat, &v);
                me.expr(&arm.body)
            });
        }
        // Data that may differ from rank to rank: each rank takes an arm by its data.
        if let (V::Opaque { comm: false, fp }, true) = (&v, unknown_arms.len() > 1) {
            let (fp, site) = (*fp, m as *const syn::ExprMatch as usize);
            let o = V::taint(&[&v]);
            let pick = self.scoped(|me| {
                for arm in &unknown_arms {
                    me.bind_opaque(&arm.pat, &o);
                }
                me.local_branch(fp, &m.expr, site, &unknown, m, None)
            })?;
            if let Some(pick) = pick {
                let arm = unknown_arms[pick % unknown_arms.len()];
                return self.scoped(|me| {
                    me.bind_opaque(&arm.pat, &o);
                    me.expr(&arm.body)
                });
            }
            return Ok(o);
        }
        // Arms whose patterns the check cannot decide: they must not communicate.
        self.scoped(|me| {
            let o = V::taint(&[&v]);
            for arm in &m.arms {
                me.bind_opaque(&arm.pat, &o);
            }
            me.speculate(&unknown, m)
        })?;
        Ok(V::taint(&[&v]))
    }

    /// Iterates a loop body over `items`, handling break/continue with labels.
    /// Runs `body` once per item bound to `pat`; with `keep`, pushes what each pass left
    /// in the binding named `keep.0` (see [`Self::for_loop`]).
    pub(in crate::check::interp) fn iterate(
        &mut self,
        label: Option<&syn::Label>,
        pat: Option<&'a Pat>,
        items: impl Iterator<Item = V<'a>>,
        body: &'a Block,
        mut keep: Option<(&str, &mut Vec<Option<V<'a>>>)>,
    ) -> R<'a> {
        let mine =
            |l: &Option<String>| l.is_none() || label.is_some_and(|x| l.as_deref() == Some(&*x.name.ident.to_string()));
        for x in items {
            let r = self.scoped(|me| {
                if let Some(p) = pat {
                    me.bind(p, x);
                }
                let r = me.block(body);
                if let Some((name, out)) = keep.as_mut() {
                    out.push(me.lookup(name).cloned());
                }
                r
            });
            match r {
                Ok(_) => {}
                Err(Flow::Break(l, v)) if mine(&l) => return Ok(v),
                Err(Flow::Continue(l)) if mine(&l) => {}
                Err(f) => return Err(f),
            }
        }
        Ok(V::Unit)
    }

    pub(in crate::check::interp) fn for_loop(&mut self, f: &'a syn::ExprForLoop) -> R<'a> {
        // `for w in self.w.iter_mut()`, `for (w, g) in w.iter_mut().zip(&g)`, `for (i, x)
        // in xs[a..b].iter_mut().enumerate()`: what the body leaves in the binding is
        // the list's item afterwards (`*w -= lr * g`), so the list keeps what it holds
        // instead of becoming data.
        let lent = self.lent_items(f)?;
        let it = self.expr(&f.expr)?;
        // (`for round in schedule`, one of the package's iterators: its items.)
        let it = self.package_iterator_items(&f.expr, &it)?.unwrap_or(it);
        let Some((place, offset, before, path)) = lent else {
            return self.summarised_loop(&f.body, Some(&it.clone()), |me| me.for_loop_items(f, it));
        };
        let name = match pat_at(&f.pat, &path) {
            Some(Pat::Ident(p)) if p.subpat.is_none() => p.ident.to_string(),
            _ => return self.summarised_loop(&f.body, Some(&it.clone()), |me| me.for_loop_items(f, it)),
        };
        let Some(items) = iter_items(&it) else {
            return self.summarised_loop(&f.body, Some(&it.clone()), |me| me.for_loop_items(f, it));
        };
        let mut after: Vec<Option<V<'a>>> = Vec::new();
        let r = self.summarised_loop(&f.body, Some(&it), |me| {
            me.iterate(f.label.as_ref(), Some(&f.pat), items.iter().cloned(), &f.body, Some((&name, &mut after)))
        });
        // Written back only where every pass left its item (a summarised loop did not).
        if r.is_ok() && after.len() <= items.len() && after.iter().all(Option::is_some) {
            let mut list = (*before).clone();
            if offset + after.len() <= list.len() {
                for (i, v) in after.into_iter().enumerate() {
                    list[offset + i] = v.expect("checked");
                }
                if self.store(place, V::list(list)).is_err() {
                    self.clobber_place(place, true);
                }
            }
        }
        r
    }

    /// For a `for` loop over items lent mutably from a list the check holds
    /// (`x.iter_mut()`, `&mut x`, `x[a..b].iter_mut()`, through `zip` and `enumerate`):
    /// the list's place, the first item's index in it, the list before the loop, and
    /// where the item sits in the loop's pattern (tuple positions).
    #[allow(clippy::type_complexity)]
    pub(in crate::check::interp) fn lent_items(
        &mut self,
        f: &'a syn::ExprForLoop,
    ) -> Result<Option<(&'a Expr, usize, std::rc::Rc<Vec<V<'a>>>, Vec<usize>)>, Flow<'a>> {
        fn source(e: &Expr) -> Option<(&Expr, Vec<usize>)> {
            match e {
                Expr::Paren(p) => source(&p.expr),
                Expr::Reference(r) if r.mutability.is_some() => Some((&r.expr, vec![])),
                Expr::MethodCall(m) if m.method == "iter_mut" && m.args.is_empty() => Some((&m.receiver, vec![])),
                Expr::MethodCall(m) if m.method == "enumerate" => {
                    source(&m.receiver).map(|(p, path)| (p, [vec![1], path].concat()))
                }
                Expr::MethodCall(m) if m.method == "zip" && m.args.len() == 1 => match source(&m.receiver) {
                    Some((p, path)) => Some((p, [vec![0], path].concat())),
                    None => source(&m.args[0]).map(|(p, path)| (p, [vec![1], path].concat())),
                },
                _ => None,
            }
        }
        let Some((src, path)) = source(&f.expr) else { return Ok(None) };
        let (place, offset) = match src {
            Expr::Index(ix) => match &*ix.index {
                Expr::Range(r) if plain_index(&ix.expr) || matches!(&*ix.expr, Expr::Field(_)) => {
                    let start = match &r.start {
                        Some(s) if plain_index(s) => match self.expr(s)? {
                            V::Int(i) if i >= 0 => i as usize,
                            _ => return Ok(None),
                        },
                        Some(_) => return Ok(None),
                        None => 0,
                    };
                    (&*ix.expr, start)
                }
                _ => return Ok(None),
            },
            p => (p, 0),
        };
        match self.place_value(place) {
            Some(V::List(items)) => Ok(Some((place, offset, items, path))),
            _ => Ok(None),
        }
    }

    pub(in crate::check::interp) fn for_loop_items(&mut self, f: &'a syn::ExprForLoop, it: V<'a>) -> R<'a> {
        match iter_items(&it) {
            Some(items) => self.iterate(f.label.as_ref(), Some(&f.pat), items.iter().cloned(), &f.body, None),
            // The command line walked by a parser (`for pair in args.chunks(2)`, `args`
            // bound from `std::env::args()` in this function): this run's sample of
            // items, each an input; a flag's value cut into pieces there (`--lens
            // 0,1,5`) is a sample of pieces too (`std_methods`).
            None if matches!(it, V::Uniform) && self.walks_command_line(&f.expr) => {
                let items = vec![V::Uniform; super::super::uniform_number() as usize];
                self.walking_args += 1;
                let r = self.iterate(f.label.as_ref(), Some(&f.pat), items.into_iter(), &f.body, None);
                self.walking_args -= 1;
                r
            }
            None => match self.unknown_count(&f.expr)? {
                Some(count) => self.counted_loop(f, count),
                None => {
                    let o = V::taint(&[&it]);
                    self.scoped(|me| {
                        me.bind_opaque(&f.pat, &o);
                        me.speculate(&[Branch::Block(&f.body)], f)
                    })?;
                    Ok(V::Unit)
                }
            },
        }
    }

    /// Whether `e` reads the program's command line: it calls `std::env::args()` (or
    /// `args_os`), or names a variable the running function binds from such a call.
    fn walks_command_line(&self, e: &Expr) -> bool {
        struct Finder<'n> {
            names: Option<&'n mut Vec<String>>,
            found: bool,
        }
        impl<'ast> syn::visit::Visit<'ast> for Finder<'_> {
            fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
                if let Expr::Path(p) = &*c.func {
                    let name = path_str(&p.path).replace(' ', "");
                    if ["env::args", "env::args_os"].iter().any(|s| name == *s || name.ends_with(&format!("::{s}"))) {
                        self.found = true;
                    }
                }
                syn::visit::visit_expr_call(self, c);
            }
            fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
                if let (Some(names), Some(id)) = (self.names.as_deref_mut(), p.path.get_ident()) {
                    names.push(id.to_string());
                }
            }
        }
        let reads = |x: &Expr, names: Option<&mut Vec<String>>| {
            let mut f = Finder { names, found: false };
            syn::visit::Visit::visit_expr(&mut f, x);
            f.found
        };
        let mut names = Vec::new();
        if reads(e, Some(&mut names)) {
            return true;
        }
        let Some(f) = self.fn_stack.last() else { return false };
        struct Lets<'n> {
            names: &'n [String],
            inits: Vec<Expr>,
        }
        impl<'ast> syn::visit::Visit<'ast> for Lets<'_> {
            fn visit_local(&mut self, l: &'ast syn::Local) {
                let mut bound = Vec::new();
                pat_names(&l.pat, &mut bound);
                if let Some(init) = &l.init {
                    if bound.iter().any(|b| self.names.contains(b)) {
                        self.inits.push((*init.expr).clone());
                    }
                }
                syn::visit::visit_local(self, l);
            }
        }
        let mut lets = Lets { names: &names, inits: Vec::new() };
        syn::visit::Visit::visit_block(&mut lets, &f.block);
        lets.inits.iter().any(|x| reads(x, None))
    }

    /// For `a..n` (or `a..=n`, or either `.rev()`) with `a` known and `n` unknown but
    /// followed, the same on every rank ([`V::Agreed`]) or data computed exactly
    /// ([`V::derived`]: `sys.n` of a struct a helper built from the inputs): `(a, n,
    /// reversed)`.
    pub(in crate::check::interp) fn unknown_count(
        &mut self,
        e: &'a Expr,
    ) -> Result<Option<(i128, V<'a>, bool)>, Flow<'a>> {
        let strip = |mut e: &'a Expr| {
            while let Expr::Paren(p) = e {
                e = &p.expr;
            }
            e
        };
        let (e, rev) = match strip(e) {
            Expr::MethodCall(m) if m.method == "rev" && m.args.is_empty() => (strip(&m.receiver), true),
            e => (e, false),
        };
        // (Open or closed: the count is unknown either way.)
        let Expr::Range(r) = e else { return Ok(None) };
        let Some(end) = &r.end else { return Ok(None) };
        let start = match &r.start {
            Some(s) => self.expr(s)?,
            None => V::Int(0),
        };
        let V::Int(a) = start else { return Ok(None) };
        Ok(match self.expr(end)? {
            V::Agreed => Some((a, V::Agreed, rev)),
            v @ V::Opaque { comm: false, fp } if super::value::is_exact(fp) => Some((a, v, rev)),
            _ => None,
        })
    }

    /// A `for` loop over a range whose end is unknown but followed ([`Self::unknown_count`]):
    /// how many passes it makes is decided as a `while` loop's condition on such data is,
    /// pass by pass (by this run's pattern; ranks whose end is the same data make as many),
    /// and the items count from the start (down to it, reversed).
    pub(in crate::check::interp) fn counted_loop(
        &mut self,
        f: &'a syn::ExprForLoop,
        (a, end, rev): (i128, V<'a>, bool),
    ) -> R<'a> {
        let site = &*f.expr as *const Expr as usize;
        let entry = {
            let e = self.loop_entries.entry(site).or_insert(0);
            *e += 1;
            *e - 1
        };
        let branch = [Branch::Block(&f.body)];
        let mut passes = 0i128;
        loop {
            if passes as u64 >= LOOP_BOUND {
                return Err(undecidable(&f.expr, format!("a `for` loop of more than {LOOP_BOUND} iterations")));
            }
            let k = passes as u32;
            let go = match end {
                V::Agreed => self.agreed_branch(site, &branch, f, &f.expr)?.is_some() && super::loop_decision(entry, k),
                V::Opaque { fp, .. } => self.local_branch(fp, &f.expr, site, &branch, f, Some((entry, k)))? == Some(0),
                _ => false,
            };
            if !go {
                break;
            }
            passes += 1;
        }
        let items = (0..passes).map(move |i| V::Int(if rev { a + passes - 1 - i } else { a + i }));
        self.iterate(f.label.as_ref(), Some(&f.pat), items, &f.body, None)
    }

    pub(in crate::check::interp) fn while_loop(&mut self, w: &'a syn::ExprWhile) -> R<'a> {
        self.summarised_loop(w, None, |me| me.while_loop_run(w))
    }

    pub(in crate::check::interp) fn while_loop_run(&mut self, w: &'a syn::ExprWhile) -> R<'a> {
        let mine = |l: &Option<String>| {
            l.is_none() || w.label.as_ref().is_some_and(|x| l.as_deref() == Some(&*x.name.ident.to_string()))
        };
        // Which entry into this loop this is: a condition the check decides by pattern
        // runs the loop a bounded number of times per entry ([`super::loop_decision`]).
        let entry = {
            let e = self.loop_entries.entry(&*w.cond as *const Expr as usize).or_insert(0);
            *e += 1;
            *e - 1
        };
        let mut n = 0u64;
        loop {
            let k = n as u32;
            n += 1;
            if n > LOOP_BOUND {
                return Err(undecidable(&w.cond, format!("a `while` loop of more than {LOOP_BOUND} iterations")));
            }
            let r = self.scoped(|me| -> R<'a> {
                let (ne, nc) = (me.events.len(), me.comms.len());
                let cond = me.expr(&w.cond)?;
                // A condition that itself communicates (`while let Chunk { .. } =
                // self.request()?`, a send and a receive per test) is tested again after
                // every pass: leaving the loop is a decision like any branch that
                // communicates, never a speculation of the body alone.
                if (me.events.len(), me.comms.len()) != (ne, nc) && !matches!(cond, V::Bool(_)) {
                    me.agreed_communicates.insert(&*w.cond as *const Expr as usize);
                }
                match cond {
                    V::Bool(true) => me.block(&w.body).map(|_| V::Bool(true)),
                    V::Bool(false) => Ok(V::Bool(false)),
                    V::Agreed | V::Uniform => {
                        let site = &*w.cond as *const Expr as usize;
                        match me.agreed_branch(site, &[Branch::Block(&w.body)], w, &w.cond)? {
                            Some(_) if super::loop_decision(entry, k) => me.block(&w.body).map(|_| V::Bool(true)),
                            _ => Ok(V::Bool(false)),
                        }
                    }
                    V::Opaque { comm: false, fp } => {
                        let site = &*w.cond as *const Expr as usize;
                        match me.local_branch(fp, &w.cond, site, &[Branch::Block(&w.body)], w, Some((entry, k)))? {
                            Some(0) => me.block(&w.body).map(|_| V::Bool(true)),
                            _ => Ok(V::Bool(false)),
                        }
                    }
                    _ => {
                        me.speculate(&[Branch::Block(&w.body)], w)?;
                        Ok(V::Bool(false))
                    }
                }
            });
            match r {
                Ok(V::Bool(false)) => return Ok(V::Unit),
                Ok(_) => {}
                Err(Flow::Break(l, _)) if mine(&l) => return Ok(V::Unit),
                Err(Flow::Continue(l)) if mine(&l) => {}
                Err(f) => return Err(f),
            }
        }
    }

    pub(in crate::check::interp) fn loop_expr(&mut self, l: &'a syn::ExprLoop) -> R<'a> {
        self.summarised_loop(&l.body, None, |me| me.loop_run(l))
    }

    pub(in crate::check::interp) fn loop_run(&mut self, l: &'a syn::ExprLoop) -> R<'a> {
        let mine = |x: &Option<String>| {
            x.is_none() || l.label.as_ref().is_some_and(|y| x.as_deref() == Some(&*y.name.ident.to_string()))
        };
        for _ in 0..LOOP_BOUND {
            match self.block(&l.body) {
                Ok(_) => {}
                Err(Flow::Break(x, v)) if mine(&x) => return Ok(v),
                Err(Flow::Continue(x)) if mine(&x) => {}
                Err(f) => return Err(f),
            }
        }
        Err(undecidable(&l.body, format!("a `loop` of more than {LOOP_BOUND} iterations")))
    }
}

/// A value the same on every rank that the check does not know: an input, data agreed
/// by a collective, or a tuple of such values and known ones (`(self.px, self.py)`).
fn same_input(v: &V) -> bool {
    match v {
        V::Agreed | V::Uniform => true,
        V::Tuple(items) => {
            items.iter().any(|x| matches!(x, V::Agreed | V::Uniform))
                && items.iter().all(|x| same_input(x) || matches!(x, V::Int(_) | V::Bool(_) | V::Opt(None) | V::Unit))
        }
        _ => false,
    }
}
