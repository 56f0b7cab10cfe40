//! The server side: a state machine over the request channel.

use std::collections::HashMap;

use dist_runtime::prelude::*;
use dist_runtime::Result;

use crate::protocol::{Kind, MAX_MESSAGE, REPLY, REQUEST};

enum State {
    /// Waiting for requests; `done` peers have finished this phase.
    Serving { done: usize },
    Finished,
}

pub struct Server {
    comm: Comm<World>,
    pub store: HashMap<u64, u64>,
    pub puts_applied: u64,
    pub gets_served: u64,
}

impl Server {
    pub fn new(comm: &Comm<World>) -> Server {
        Server { comm: comm.clone(), store: HashMap::new(), puts_applied: 0, gets_served: 0 }
    }

    /// Serves requests from any rank until every rank (this one included) said Done.
    pub fn serve_phase(&mut self) -> Result<()> {
        let peers = self.comm.size();
        let mut buf = vec![0u64; MAX_MESSAGE];
        let mut state = State::Serving { done: 0 };
        loop {
            state = match state {
                State::Finished => break,
                State::Serving { done } if done == peers => State::Finished,
                State::Serving { done } => {
                    let status = self.comm.recv_any(REQUEST, &mut buf)?;
                    let msg = &buf[..status.count];
                    match Kind::from_word(msg[0]) {
                        Some(Kind::Put) => {
                            for kv in msg[1..].chunks_exact(2) {
                                let slot = self.store.entry(kv[0]).or_insert(0);
                                *slot = slot.wrapping_add(kv[1]);
                                self.puts_applied += 1;
                            }
                            State::Serving { done }
                        }
                        Some(Kind::Get) => {
                            let values: Vec<u64> =
                                msg[1..].iter().map(|k| self.store.get(k).copied().unwrap_or(0)).collect();
                            self.gets_served += values.len() as u64;
                            self.comm.send(status.source, REPLY, &values)?;
                            State::Serving { done }
                        }
                        Some(Kind::Done) => State::Serving { done: done + 1 },
                        Some(Kind::Reply) | None => {
                            panic!("rank {}: unexpected request word {} from rank {}", self.comm.rank(), msg[0], status.source)
                        }
                    }
                }
            };
        }
        Ok(())
    }
}
