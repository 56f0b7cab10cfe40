//! The flight recorder (torch's, in spirit): each thread keeps its last `N` ops — the
//! communicator, the op's number on it, its name and call site, and whether it
//! completed — in a fixed ring, at the cost of a few stores per op. When a rank fails
//! (an error, a panic, a deadlock, a peer's failure) the entry runner prints the ring
//! and hands it to the launcher, which lines the ranks up per communicator: who stopped
//! at which op, and where the others are ("World: rank 0 is at #13 all_reduce
//! (src/main.rs:20, not completed); ranks 1–7 are at #13 broadcast (src/main.rs:24, not
//! completed)").

use std::panic::Location;
use std::sync::Mutex;

/// Ops kept per thread.
pub(crate) const N: usize = 64;

/// Communicators whose ops are numbered (two counters each per thread: collectives, whose
/// numbers agree across the members of a correct program, and point-to-point ops); ops
/// on others are recorded with number 0.
const COMM_SEQS: usize = 256;

#[derive(Clone, Copy)]
struct Entry {
    comm: u32,
    seq: u64,
    op: &'static str,
    site: Option<&'static Location<'static>>,
    done: bool,
}

const EMPTY: Entry = Entry { comm: 0, seq: 0, op: "", site: None, done: false };

struct Ring {
    entries: [Entry; N],
    /// Where the next op goes.
    next: usize,
    /// Ops recorded so far (up to N are kept).
    len: usize,
    /// Ops so far on each communicator (by its recorder id), from this thread:
    /// [point-to-point, collective].
    seqs: [[u64; 2]; COMM_SEQS],
    /// The number of the op this thread is in (its last `start`), for wait records.
    current: u64,
}

thread_local! {
    // A plain cell: `start`, `done` and `dump` never call out while they hold it.
    static RING: std::cell::UnsafeCell<Ring> = const {
        std::cell::UnsafeCell::new(Ring { entries: [EMPTY; N], next: 0, len: 0, seqs: [[0; 2]; COMM_SEQS], current: 0 })
    };
}

/// Communicator names, by recorder id.
static COMMS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Gives a communicator its recorder id.
pub(crate) fn register(name: &str) -> u32 {
    let mut c = COMMS.lock().unwrap_or_else(|p| p.into_inner());
    c.push(name.to_string());
    (c.len() - 1) as u32
}

/// Records the start of an op on communicator `comm` (a collective, or a point-to-point
/// op); returns its slot for [`done`].
#[inline]
pub(crate) fn start(comm: u32, collective: bool, op: &'static str, site: &'static Location<'static>) -> usize {
    RING.with(|r| {
        // SAFETY: this thread's ring; no reference to it outlives this closure.
        let r = unsafe { &mut *r.get() };
        let seq = match r.seqs.get_mut(comm as usize) {
            Some(s) => {
                s[collective as usize] += 1;
                s[collective as usize]
            }
            None => 0,
        };
        r.current = seq;
        let at = r.next;
        r.entries[at] = Entry { comm, seq, op, site: Some(site), done: false };
        r.next = (at + 1) % N;
        r.len += 1;
        at
    })
}

/// The number of the op this thread is in on its communicator ("collective #5"), as the
/// flight recorder numbers it; 0 when unknown.
#[inline]
pub(crate) fn current() -> u64 {
    // SAFETY: as in start.
    RING.with(|r| unsafe { (*r.get()).current })
}

/// Marks the op recorded in `slot` completed.
#[inline]
pub(crate) fn done(slot: usize) {
    // SAFETY: as in start.
    RING.with(|r| unsafe { (*r.get()).entries[slot % N].done = true });
}

/// This thread's ring, oldest first, one op per line: `comm \t #seq \t op \t file:line \t
/// completed|not completed`.
pub(crate) fn dump() -> String {
    let names = COMMS.lock().unwrap_or_else(|p| p.into_inner()).clone();
    // SAFETY: as in start; the entries are copied out first.
    let (entries, next, len) = RING.with(|r| unsafe {
        let r = &*r.get();
        (r.entries, r.next, r.len)
    });
    let k = len.min(N);
    let first = if len < N { 0 } else { next };
    (0..k)
        .map(|i| entries[(first + i) % N])
        .filter_map(|e| {
            let site = e.site?;
            Some(format!(
                "{}\t#{}\t{}\t{}:{}\t{}\n",
                names.get(e.comm as usize).map_or("?", String::as_str),
                e.seq,
                e.op,
                site.file(),
                site.line(),
                if e.done { "completed" } else { "not completed" }
            ))
        })
        .collect()
}

/// The ranks' dumps (`(world rank, dump)`) lined up per communicator: for each, the last
/// op each rank recorded on it, ranks grouped where they agree, smallest group first; a
/// communicator on which all ranks are at the same completed op is left out.
pub(crate) fn line_up(dumps: &[(usize, String)]) -> String {
    // comm -> rank -> (seq, op, site, state)
    let mut last: std::collections::BTreeMap<String, Vec<(usize, String)>> = Default::default();
    for (rank, d) in dumps {
        let mut per: std::collections::BTreeMap<&str, String> = Default::default();
        for line in d.lines() {
            let f: Vec<&str> = line.split('\t').collect();
            if let [comm, seq, op, site, state] = f[..] {
                per.insert(comm, format!("{seq} {op} ({site}, {state})"));
            }
        }
        for (comm, what) in per {
            last.entry(comm.to_string()).or_default().push((*rank, what));
        }
    }
    let mut out = Vec::new();
    for (comm, ranks) in last {
        let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
        for (r, what) in ranks {
            match groups.iter_mut().find(|g| g.0 == what) {
                Some(g) => g.1.push(r),
                None => groups.push((what, vec![r])),
            }
        }
        if groups.len() == 1 && groups[0].0.ends_with(", completed)") {
            continue;
        }
        groups.sort_by_key(|g| (g.1.len(), g.1[0]));
        let parts: Vec<String> = groups
            .iter()
            .map(|(what, rs)| {
                let mut rs = rs.clone();
                rs.sort_unstable();
                let who = super::deadlock::rank_list(&rs);
                format!("{who} {} last at {what}", if rs.len() == 1 { "was" } else { "were" })
            })
            .collect();
        out.push(format!("{comm}: {}", parts.join("; ")));
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_keeps_the_last_ops_in_order() {
        let id = register("World");
        let site = Location::caller();
        for _ in 0..(N + 5) {
            let s = start(id, true, "all_reduce", site);
            done(s);
        }
        start(id, false, "send", site);
        assert_eq!(current(), 1, "point-to-point ops are numbered apart");
        start(id, true, "broadcast", site);
        assert_eq!(current(), N as u64 + 6);
        let d = dump();
        let lines: Vec<&str> = d.lines().collect();
        assert_eq!(lines.len(), N);
        assert!(lines[N - 1].starts_with(&format!("World\t#{}\tbroadcast\t", N + 6)), "{}", lines[N - 1]);
        assert!(lines[N - 1].ends_with("not completed"));
        assert!(lines[0].contains(&format!("#{}\tall_reduce", 8)) && lines[0].ends_with("\tcompleted"), "{}", lines[0]);
    }

    #[test]
    fn ranks_are_lined_up_where_they_diverge() {
        let d = |seq: u32, op: &str, line: u32, done: bool| {
            format!(
                "World\t#{}\tbarrier\tx.rs:3\tcompleted\nWorld\t#{seq}\t{op}\tx.rs:{line}\t{}\nTp{{0,1}}\t#2\tbarrier\tx.rs:9\tcompleted\n",
                seq - 1,
                if done { "completed" } else { "not completed" }
            )
        };
        let dumps = vec![
            (0, d(13, "all_reduce", 20, false)),
            (1, d(13, "broadcast", 24, false)),
            (2, d(13, "broadcast", 24, false)),
        ];
        let s = line_up(&dumps);
        assert!(s.contains("World: rank 0 was last at #13 all_reduce (x.rs:20, not completed); ranks 1, 2 were last at #13 broadcast (x.rs:24, not completed)"), "{s}");
        assert!(!s.contains("Tp{0,1}"), "agreeing communicators are left out: {s}");
    }
}
