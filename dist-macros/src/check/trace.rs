//! What one rank's run records: its communication calls, in program order.

use quote::ToTokens;
use syn::Expr;

/// Where a call is in the source: the expression, for spans and line numbers.
#[derive(Clone, Copy)]
pub struct Site<'a>(&'a dyn ToTokens);

impl<'a> Site<'a> {
    pub fn new(e: &'a Expr) -> Self {
        Site(e)
    }
    pub fn binary(b: &'a syn::ExprBinary) -> Self {
        Site(b)
    }
    /// The line of the call's first token (1-based).
    pub fn line(&self) -> usize {
        self.0.to_token_stream().into_iter().next().map(|t| t.span().start().line).unwrap_or(0)
    }
    /// An error spanning the whole call.
    pub fn error(&self, msg: impl std::fmt::Display) -> syn::Error {
        syn::Error::new_spanned(self.0, msg)
    }
}

impl std::fmt::Debug for Site<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}", self.line())
    }
}

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
    pub fn site(&self) -> Site<'a> {
        match self {
            Ev::P2p { site, .. } | Ev::Wait { site, .. } | Ev::Coll { site, .. } => *site,
        }
    }
}
