//! How the check's messages name ranks, communicators and tags ("ranks 0..=3", "the
//! world", "tag `ACT`"), and what matching compares of a tag.

use super::trace::Ev;

/// "rank 0", "ranks 1, 2", "ranks 0..=3", as messages name ranks.
pub fn ranks(rs: &[usize]) -> String {
    match rs {
        [r] => format!("rank {r}"),
        _ => format!("ranks {}", list(rs)),
    }
}

pub(super) fn list(rs: &[usize]) -> String {
    // 0, 1, 2, 3 → 0..=3
    if rs.len() > 2 && rs.windows(2).all(|w| w[1] == w[0] + 1) {
        return format!("{}..={}", rs[0], rs[rs.len() - 1]);
    }
    rs.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(", ")
}

pub(super) fn comm_desc(comm: &str, group: &str, members: &[usize]) -> String {
    if comm == "world" {
        "the world".into()
    } else {
        format!("`{group}` (world ranks {})", list(members))
    }
}

/// A tag as the program names it: `#3` (Tag::new(3)), `#3 ACT` (a const of the file),
/// or `ACT` (a const the check cannot see).
pub(super) fn tag_desc(t: &str) -> String {
    match t.strip_prefix('#').map(|n| n.split_once(' ')) {
        Some(Some((_, name))) => format!("tag `{name}`"),
        Some(None) => format!("tag {}", &t[1..]),
        None => format!("tag `{t}`"),
    }
}

pub(super) fn ev_tag(e: &Ev) -> String {
    match e {
        Ev::P2p { tag, .. } => tag.clone(),
        _ => String::new(),
    }
}

/// A point-to-point channel: (communicator, sender, receiver, tag).
pub(super) type Channel = (String, usize, usize, String);

/// What matching compares: the number when known, else the name.
pub(super) fn tag_id(t: &str) -> String {
    t.split(' ').next().unwrap_or(t).to_string()
}
