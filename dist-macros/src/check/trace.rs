//! What one rank's run records: its communication calls, in program order.

use quote::ToTokens;
use syn::Expr;

thread_local! {
    static LINES_KNOWN: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
    /// Where each helper of another file is defined ("src/comms.rs:12"), by name.
    static HELPERS_AT: std::cell::RefCell<std::collections::HashMap<String, String>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// Records where the helpers of other files are defined (for messages).
pub fn set_helpers_at(at: std::collections::HashMap<String, String>) {
    HELPERS_AT.with(|h| *h.borrow_mut() = at);
}

/// Whether spans carry real line numbers in this expansion (set once per check).
pub fn set_lines_known(known: bool) {
    LINES_KNOWN.with(|c| c.set(known));
}

fn lines_known() -> bool {
    LINES_KNOWN.with(|c| c.get())
}

/// Where a call is in the source: the expression, for spans and line numbers. A call
/// inside a helper defined elsewhere in the file is reported at the helper's call in
/// the checked function, naming the helper.
#[derive(Clone, Copy)]
pub struct Site<'a> {
    node: &'a dyn ToTokens,
    inside: Option<&'a syn::Ident>,
}

impl<'a> Site<'a> {
    pub fn new(e: &'a Expr) -> Self {
        Site { node: e, inside: None }
    }
    pub fn binary(b: &'a syn::ExprBinary) -> Self {
        Site { node: b, inside: None }
    }
    /// The call `call` of the helper `helper`, standing for what happens inside it.
    pub fn via(call: &'a Expr, helper: &'a syn::Ident) -> Self {
        Site { node: call, inside: Some(helper) }
    }
    /// The line of the call's first token (1-based).
    pub fn line(&self) -> usize {
        self.node.to_token_stream().into_iter().next().map(|t| t.span().start().line).unwrap_or(0)
    }
    /// "line 12", or "line 12, inside `exchange`"; where the front-end gives no line
    /// numbers (rust-analyzer), "the call marked here" instead of a wrong line.
    pub fn loc(&self) -> String {
        let at = if lines_known() { format!("line {}", self.line()) } else { "the call marked here".into() };
        match self.inside {
            Some(h) => match HELPERS_AT.with(|m| m.borrow().get(&h.to_string()).cloned()) {
                Some(def) => format!("{at}, inside `{h}` ({def})"),
                None => format!("{at}, inside `{h}`"),
            },
            None => at,
        }
    }
    /// " (inside `helper`, src/comms.rs:12)" for a call inside a helper, else "".
    pub fn helper_note(&self) -> String {
        match self.inside {
            Some(h) => match HELPERS_AT.with(|m| m.borrow().get(&h.to_string()).cloned()) {
                Some(def) => format!(" (inside `{h}`, {def})"),
                None => format!(" (inside `{h}`)"),
            },
            None => String::new(),
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
        site: Site<'a>,
    },
    /// Blocks until the posted events `ids` complete.
    Wait { ids: Vec<usize>, site: Site<'a>, call: &'static str },
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
