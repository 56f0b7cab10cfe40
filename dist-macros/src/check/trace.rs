//! What one rank's run records: its communication calls, in program order.

use quote::ToTokens;
use syn::Expr;

thread_local! {
    static LINES_KNOWN: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
    /// The source file of each helper the check read (`src/comms.rs`), by its key
    /// (`exchange`, `Trainer::step`), and the entry's own file and name.
    static FILES: std::cell::RefCell<Files> = std::cell::RefCell::new(Files::default());
    /// Locations of calls inside helpers, rendered once ("src/pipeline.rs:42, in
    /// `forward`, called from `main` at src/main.rs:17"), by [`Site::at`].
    static LOCS: std::cell::RefCell<(Vec<String>, std::collections::HashMap<u64, u32>)> =
        std::cell::RefCell::new(Default::default());
}

/// Where the code the check reads comes from, for messages.
#[derive(Default)]
pub struct Files {
    /// The entry's file, relative to the package (`src/main.rs`), and its name.
    pub entry: (String, String),
    /// The file of each helper, by key (`exchange`, `Trainer::step`).
    pub helpers: std::collections::HashMap<String, String>,
}

/// Records where the entry and the helpers of the package are (for messages).
pub fn set_files(files: Files) {
    FILES.with(|h| *h.borrow_mut() = files);
    LOCS.with(|l| *l.borrow_mut() = Default::default());
}

/// The file a helper is defined in ("?" when unknown).
pub fn helper_file(key: &str) -> String {
    FILES.with(|f| f.borrow().helpers.get(key).cloned().unwrap_or_else(|| "?".into()))
}

/// The entry's file and name.
pub fn entry_file() -> (String, String) {
    FILES.with(|f| f.borrow().entry.clone())
}

/// "src/main.rs:12" for line 12 of the checked function, "line 12" where its file is not
/// known.
pub fn entry_place(line: usize) -> String {
    let (file, _) = entry_file();
    if file.is_empty() {
        format!("line {line}")
    } else {
        format!("{file}:{line}")
    }
}

/// The line of the first token of `t` (1-based; 0 when unknown). Helpers read from
/// their files carry their own lines (they are parsed with positions, see `check::mod`).
pub fn line_of(t: &dyn ToTokens) -> usize {
    t.to_token_stream().into_iter().next().map(|t| t.span().start().line).unwrap_or(0)
}

/// Interns a location rendered by the interpreter, under `key` (a hash of what it
/// was rendered from), rendering it only the first time.
pub fn intern_loc(key: u64, render: impl FnOnce() -> String) -> u32 {
    LOCS.with(|l| {
        let mut l = l.borrow_mut();
        if let Some(&i) = l.1.get(&key) {
            return i;
        }
        let i = l.0.len() as u32;
        let s = render();
        l.0.push(s);
        l.1.insert(key, i);
        i
    })
}

fn loc_text(i: u32) -> String {
    LOCS.with(|l| l.borrow().0.get(i as usize).cloned().unwrap_or_default())
}

/// Whether spans carry real line numbers in this expansion (set once per check).
pub fn set_lines_known(known: bool) {
    LINES_KNOWN.with(|c| c.set(known));
}

fn lines_known() -> bool {
    LINES_KNOWN.with(|c| c.get())
}

/// Where a call is in the source: the expression, for spans and line numbers. A call
/// inside a helper of the package is reported at the helper's call in the checked
/// function (the only tokens the compiler lets a macro point at), and its message
/// names the call's own file and line and the chain of calls that led there.
#[derive(Clone, Copy)]
pub struct Site<'a> {
    node: &'a dyn ToTokens,
    /// Inside a helper: the call's own place and the chain (interned, see [`intern_loc`]).
    at: Option<u32>,
}

impl<'a> Site<'a> {
    pub fn new(e: &'a Expr) -> Self {
        Site { node: e, at: None }
    }
    /// The call `call` in the checked function, standing for what happens inside the
    /// helper it calls, at the place `at` (from [`intern_loc`]).
    pub fn via(call: &'a Expr, at: u32) -> Self {
        Site { node: call, at: Some(at) }
    }
    /// The line of the call's first token in the checked function (1-based).
    pub fn line(&self) -> usize {
        line_of(self.node)
    }
    /// "line 12", or "src/pipeline.rs:42, in `forward`, called from `main` at
    /// src/main.rs:12"; where the front-end gives no line numbers (rust-analyzer), "the
    /// call marked here" instead of a wrong line.
    pub fn loc(&self) -> String {
        if !lines_known() {
            return "the call marked here".into();
        }
        match self.at {
            Some(i) => loc_text(i),
            None => entry_place(self.line()),
        }
    }
    /// " (at src/pipeline.rs:42, in `forward`, called from …)" for a call inside a
    /// helper, else "".
    pub fn helper_note(&self) -> String {
        match self.at {
            Some(_) if lines_known() => format!(" (at {})", self.loc()),
            _ => String::new(),
        }
    }

    /// The call's tokens.
    pub fn tokens(&self) -> proc_macro2::TokenStream {
        self.node.to_token_stream()
    }
    /// An error spanning the whole call.
    pub fn error(&self, msg: impl std::fmt::Display) -> syn::Error {
        syn::Error::new_spanned(self.node, msg)
    }
}

impl std::fmt::Debug for Site<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.loc())
    }
}

/// The peer of a receive from any source (`recv_any`) until the simulation resolves it.
pub const ANY_SOURCE: usize = usize::MAX;

/// One communication event of one rank. Ids are per rank.
#[derive(Debug)]
pub enum Ev<'a> {
    /// A posted send or receive (blocking calls are a post plus a [`Ev::Wait`]).
    P2p {
        id: usize,
        send: bool,
        /// Identity of the communicator, the same on every member.
        comm: String,
        group: String,
        /// The peer in world numbering.
        peer: usize,
        tag: String,
        site: Site<'a>,
        call: &'static str,
        /// The buffer's length in elements, where evaluable (a receive must be posted
        /// with the length of the message it takes).
        len: Option<i128>,
    },
    /// A posted collective on a communicator (blocking ones are followed by a wait).
    Coll {
        id: usize,
        comm: String,
        group: String,
        members: Vec<usize>,
        kind: &'static str,
        root: Option<i128>,
        op: Option<String>,
        /// The length of the buffer every rank must pass alike, where evaluable.
        len: Option<i128>,
        /// A root that is data: its hash ([`super::interp::V::Opaque`]'s `fp`) and text.
        root_data: Option<(u64, String)>,
        /// A root or reduce op the check cannot prove the same on every rank (data it
        /// could not tell apart, in the default mode): what it is and why. Once the
        /// size shows no problem, it is a construct not followed (a warning).
        unproven: Option<String>,
        /// The `counts` every rank must pass alike (`gather_v`, `scatter_v`,
        /// `all_gather_v`, `reduce_scatter_v`), where evaluable.
        counts: Option<Counts>,
        /// `all_to_all_v`'s send and receive counts, where the check holds them as
        /// lists: what rank i sends rank j must be what j expects from i; or what an
        /// `all_to_all` sent, for those counts to be traced to it.
        a2a: Option<A2a>,
        site: Site<'a>,
    },
    /// Blocks until the posted events `ids` complete.
    Wait { ids: Vec<usize>, site: Site<'a>, call: &'static str },
}

/// One count as the check holds it ([`super::interp::resolve`] replaces what was
/// received by what was sent).
#[derive(Debug, Clone, PartialEq)]
pub enum Count {
    Known(i128),
    /// Data, by its hash ([`super::interp::V::Opaque`]'s `fp`).
    Data(u64),
    /// Item `idx` of what world rank `from` sent by its `seq`-th collective (an
    /// `all_to_all`) on `comm`.
    Recv {
        comm: String,
        seq: u64,
        from: usize,
        idx: usize,
    },
    /// Computed by `op` from `parts`.
    Derived {
        op: Option<char>,
        parts: Vec<Count>,
    },
    Unknown,
}

/// `all_to_all_v`'s counts, or what an `all_to_all` sent.
#[derive(Debug, Clone, PartialEq)]
pub enum A2a {
    /// Send counts and receive counts, one per member.
    Counts(Vec<Count>, Vec<Count>),
    /// What this rank's `seq`-th collective on the communicator sent, item by item.
    Sent(u64, Vec<Count>),
}

/// Per-rank counts passed to a collective: known numbers, or data (its hash, as a root
/// that is data, and the argument's text).
#[derive(Debug, Clone, PartialEq)]
pub enum Counts {
    Known(Vec<i128>),
    Data(u64, String),
}

impl<'a> Ev<'a> {
    pub fn call(&self) -> &'static str {
        match self {
            Ev::P2p { call, .. } | Ev::Wait { call, .. } => call,
            Ev::Coll { kind, .. } => kind,
        }
    }
    /// The tokens of the call, for a diagnostic that is not an error.
    pub fn tokens(&self) -> proc_macro2::TokenStream {
        self.site().tokens()
    }
    pub fn site(&self) -> Site<'a> {
        match self {
            Ev::P2p { site, .. } | Ev::Wait { site, .. } | Ev::Coll { site, .. } => *site,
        }
    }
}

/// An expression's source text as a message quotes it: the tokens' text with the
/// spaces a token stream puts around `.`, `::`, brackets and `?` taken out
/// (`sl . len () + 1` reads `sl.len() + 1`).
pub fn expr_text(e: &dyn ToTokens) -> String {
    let mut t = e.to_token_stream().to_string();
    for (from, to) in [
        (" . ", "."),
        (" .", "."),
        (" :: ", "::"),
        (":: ", "::"),
        (" ::", "::"),
        (" (", "("),
        ("( ", "("),
        (" )", ")"),
        (" [", "["),
        ("[ ", "["),
        (" ]", "]"),
        (" ,", ","),
        (" ?", "?"),
        ("& mut ", "&mut "),
        ("! (", "!("),
    ] {
        while t.contains(from) {
            t = t.replace(from, to);
        }
    }
    // Keep a space after keywords and binary operators that lost it above.
    t.replace("if(", "if (").replace("+(", "+ (").replace("-(", "- (").replace("*(", "* (").replace("/(", "/ (")
}

/// The display name of an op (`send`, `all_reduce`).
pub fn call_name(m: &str) -> &'static str {
    match m {
        "wait" => "wait",
        "wait_all" => "wait_all",
        _ => dist_ops::find(m).map_or("communication", |o| o.name),
    }
}
