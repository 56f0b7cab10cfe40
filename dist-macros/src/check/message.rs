//! The check's verdicts laid out for a reader. The check composes each verdict as one
//! sentence with its places and conditions in parentheses; rustc prints a message's
//! later lines indented under its first, so a verdict is shown as:
//!
//! ```text
//! error: `recv` on rank 0 from rank 1 (tag `T`) has no matching `send` at world size 2 (at src/ring.rs:16)
//!        src/ring.rs:16 is in `Ring::step`, called from `main` at src/main.rs:40
//!        it would wait forever
//!        note: when a number the program reads from its arguments, environment or files is 1
//! ```
//!
//! The first line says what is wrong and where the call is (a call in a helper of
//! another file is named there: a macro can only point rustc's own arrow at the entry's
//! tokens); the chain of calls that led there, the consequence and the fix follow, one
//! clause a line, then the run the problem showed in.

/// `msg` laid out on several lines: its first clause (up to the first `; ` outside
/// parentheses and backquotes) first, the helper's place (`(at FILE:LINE, in …)`) kept
/// there as `(at FILE:LINE)` with the call chain on the next line (as for the places of
/// the two sides of a pair, `(FILE:LINE, in …)`), the other clauses one a line, and the
/// conditions of the run (`(when …; when …)`) as notes last.
pub fn layout(msg: &str) -> String {
    let mut clauses: Vec<String> = vec![String::new()];
    let mut places: Vec<(usize, String, String)> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let chars: Vec<char> = msg.chars().collect();
    let mut i = 0;
    let mut quoted = false;
    while i < chars.len() {
        let c = chars[i];
        if c == '`' {
            quoted = !quoted;
        } else if !quoted && c == '(' {
            if let Some(end) = closing(&chars, i) {
                let inner: String = chars[i + 1..end].iter().collect();
                if let Some((place, chain)) = inner.strip_prefix("at ").and_then(helper_place) {
                    let k = clauses.len() - 1;
                    let cur = &mut clauses[k];
                    if k == 0 {
                        cur.push_str(&format!("(at {place})"));
                    } else {
                        trim_end(cur);
                    }
                    places.push((k, place, chain));
                    i = end + 1;
                    continue;
                }
                // A side's place in a sentence about two calls: kept, its chain moved.
                if let Some((place, chain)) = helper_place(&inner).filter(|(_, chain)| chain.starts_with("in ")) {
                    let k = clauses.len() - 1;
                    clauses[k].push_str(&format!("({place})"));
                    places.push((usize::MAX, place, chain));
                    i = end + 1;
                    continue;
                }
                if inner.starts_with("when ") {
                    notes.extend(split_top(&inner).into_iter().map(|s| s.trim().to_string()));
                    trim_end(clauses.last_mut().expect("one clause"));
                    i = end + 1;
                    continue;
                }
                clauses.last_mut().expect("one clause").extend(&chars[i..=end]);
                i = end + 1;
                continue;
            }
        } else if !quoted && c == ';' && chars.get(i + 1) == Some(&' ') {
            clauses.push(String::new());
            i += 2;
            continue;
        }
        clauses.last_mut().expect("one clause").push(c);
        i += 1;
    }
    let mut lines: Vec<String> = Vec::new();
    let mut head = clauses[0].trim().to_string();
    // The first helper's place on the first line, wherever the sentence had it.
    let moved = places.iter().find(|(k, ..)| (1..usize::MAX).contains(k));
    if let Some((_, place, _)) = moved.filter(|_| !places.iter().any(|(k, ..)| *k == 0 || *k == usize::MAX)) {
        head.push_str(&format!(" (at {place})"));
    }
    lines.push(head);
    for (_, place, chain) in &places {
        if !chain.is_empty() {
            let line = format!("{place} is {chain}");
            if !lines.contains(&line) {
                lines.push(line);
            }
        }
    }
    lines.extend(clauses[1..].iter().map(|c| c.trim().to_string()).filter(|c| !c.is_empty()));
    lines.extend(notes.into_iter().map(|n| format!("note: {n}")));
    lines.join("\n")
}

/// The helper's place a verdict names (`(at src/x.rs:12, …)`), if any: two verdicts at
/// one call of the entry are about one call only when they name the same place.
pub fn place(msg: &str) -> Option<&str> {
    let i = msg.find("(at ")? + 4;
    let rest = &msg[i..];
    let end = rest.find([',', ')']).unwrap_or(rest.len());
    Some(&rest[..end])
}

/// The index of the `)` that closes the `(` at `open`, outside backquotes.
fn closing(chars: &[char], open: usize) -> Option<usize> {
    let (mut depth, mut quoted) = (0usize, false);
    for (j, &c) in chars.iter().enumerate().skip(open) {
        match c {
            '`' => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

/// `src/x.rs:12, in `f`, called from …` → (`src/x.rs:12`, `in `f`, called from …`).
fn helper_place(rest: &str) -> Option<(String, String)> {
    let (place, chain) = rest.split_once(", ").unwrap_or((rest, ""));
    let (file, line) = place.rsplit_once(':')?;
    (file.ends_with(".rs")
        && !file.contains(char::is_whitespace)
        && !line.is_empty()
        && line.chars().all(|c| c.is_ascii_digit()))
    .then(|| (place.to_string(), chain.to_string()))
}

/// `s` split at `; ` outside parentheses and backquotes.
fn split_top(s: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth, mut quoted) = (Vec::new(), String::new(), 0usize, false);
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '`' => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted => depth = depth.saturating_sub(1),
            ';' if !quoted && depth == 0 && it.peek() == Some(&' ') => {
                it.next();
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    out
}

fn trim_end(s: &mut String) {
    s.truncate(s.trim_end().len());
}

#[cfg(test)]
mod tests {
    use super::layout;

    #[test]
    fn a_helper_verdict_is_laid_out_one_clause_a_line() {
        let msg = "`gather_v` on rank 1 at world size 2: rank 1 is the root and must pass `Some(..)`, not `None`; \
                   the runtime refuses it: size the buffers (at src/zero.rs:134, in `Z::checkpoint`, called from \
                   `main` at src/main.rs:53) (when a number is 1: the same on every rank; when each condition \
                   (a value; a flag) is false: every rank takes the same branch)";
        assert_eq!(
            layout(msg),
            "`gather_v` on rank 1 at world size 2: rank 1 is the root and must pass `Some(..)`, not `None` \
             (at src/zero.rs:134)\n\
             src/zero.rs:134 is in `Z::checkpoint`, called from `main` at src/main.rs:53\n\
             the runtime refuses it: size the buffers\n\
             note: when a number is 1: the same on every rank\n\
             note: when each condition (a value; a flag) is false: every rank takes the same branch"
        );
    }

    #[test]
    fn a_place_in_the_first_clause_stays_where_it_is() {
        let msg = "`all_reduce` (at src/a.rs:9, in `f`, called from `main` at src/main.rs:3) is reached by rank 0 \
                   only; call it outside the branch; `x; y` stays";
        assert_eq!(
            layout(msg),
            "`all_reduce` (at src/a.rs:9) is reached by rank 0 only\n\
             src/a.rs:9 is in `f`, called from `main` at src/main.rs:3\n\
             call it outside the branch\n\
             `x; y` stays"
        );
    }

    #[test]
    fn the_sides_of_a_pair_keep_their_places_and_give_their_chains() {
        let msg = "deadlock: rank 0 in `send` (src/x.rs:7, in `ex`, called from `main` at src/main.rs:4), rank 1 in \
                   `send` (src/x.rs:7, in `ex`, called from `main` at src/main.rs:4); post both at once";
        assert_eq!(
            layout(msg),
            "deadlock: rank 0 in `send` (src/x.rs:7), rank 1 in `send` (src/x.rs:7)\n\
             src/x.rs:7 is in `ex`, called from `main` at src/main.rs:4\n\
             post both at once"
        );
    }

    #[test]
    fn a_verdict_names_its_helper_place() {
        assert_eq!(super::place("`send` (at src/p.rs:62, in `f`) from rank 0"), Some("src/p.rs:62"));
        assert_eq!(super::place("`send` (at src/p.rs:62) from rank 0"), Some("src/p.rs:62"));
        assert_eq!(super::place("`send` (line 4) from rank 0"), None);
    }

    #[test]
    fn other_parentheses_and_plain_messages_are_kept() {
        assert_eq!(layout("a (b; c) d"), "a (b; c) d");
        assert_eq!(layout("x (line 3) y"), "x (line 3) y");
        assert_eq!(layout("x (y at src/a.rs:3, in `f`) z"), "x (y at src/a.rs:3, in `f`) z");
        assert_eq!(layout("x (src/a.rs:3, also) y"), "x (src/a.rs:3, also) y");
        assert_eq!(layout("unbalanced (at src/a.rs:3"), "unbalanced (at src/a.rs:3");
    }
}
