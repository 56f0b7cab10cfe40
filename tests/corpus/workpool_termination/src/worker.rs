//! A work-stealing worker: an event loop over one any-source receive, with Safra's
//! token-ring termination detection. A rank is `Working` while it has tasks, `Stealing`
//! while it asks the others one at a time, `Passive` once `sweeps` rounds of requests
//! came back empty; a passive rank only answers requests, never sends on its own, and
//! only a passive rank passes the token on (Safra's precondition).

use std::collections::VecDeque;

use dist_runtime::prelude::*;

use crate::Res;
use crate::config::Config;
use crate::msg::{CTRL, Colour, MAX_BATCH, MAX_WORDS, Msg, Token};
use crate::task::{Summary, Task};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State { Working, Stealing { victim: usize, tried: usize }, Passive }

enum Flow { Continue, Stop }

#[derive(Clone, Copy, Debug, Default)]
pub struct Stats { pub summary: Summary, pub steals_ok: u64, pub steals_failed: u64, pub tasks_in: u64, pub tasks_out: u64 }

pub struct Worker {
    comm: Comm<World>,
    rank: usize,
    size: usize,
    cfg: Config,
    queue: VecDeque<Task>,
    state: State,
    colour: Colour,
    /// Basic messages sent minus basic messages received.
    counter: i64,
    /// The token, while this rank holds it.
    token: Option<Token>,
    stats: Stats,
}

impl Worker {
    pub fn new(comm: Comm<World>, cfg: Config, initial: Vec<Task>) -> Worker {
        let (rank, size) = (comm.rank(), comm.size());
        let token = (rank == 0).then(Token::fresh);
        let (state, colour, stats) = (State::Working, Colour::White, Stats::default());
        Worker { comm, rank, size, cfg, queue: initial.into(), state, colour, counter: 0, token, stats }
    }

    pub fn run(mut self) -> Res<Stats> {
        if self.size == 1 {
            while self.work_chunk() {}
            return Ok(self.stats);
        }
        let comm = self.comm.clone();
        let mut inbox = vec![0u64; MAX_WORDS];
        self.settle()?;
        loop {
            let status = {
                let mut pending = comm.irecv_any(CTRL, &mut inbox)?;
                loop {
                    if let Some(st) = pending.test()? {
                        break st;
                    }
                    if self.state == State::Working {
                        self.work_chunk();
                        self.settle()?;
                    } else {
                        break pending.wait()?;
                    }
                }
            };
            let msg = Msg::decode(&inbox[..status.count])?;
            match self.handle(status.source, msg)? {
                Flow::Continue => self.settle()?,
                Flow::Stop => break,
            }
        }
        Ok(self.stats)
    }

    /// Runs up to `chunk` tasks; whether work is left.
    fn work_chunk(&mut self) -> bool {
        for _ in 0..self.cfg.chunk {
            let Some(task) = self.queue.pop_back() else { break };
            self.stats.summary.record(task.execute(self.cfg.work));
            self.queue.extend(task.children(self.cfg.max_depth));
        }
        !self.queue.is_empty()
    }

    /// After every event: start stealing when the queue ran dry, pass the token on
    /// when passive.
    fn settle(&mut self) -> Res<()> {
        if self.state == State::Working && self.queue.is_empty() {
            let victim = self.next_victim(self.rank);
            self.state = State::Stealing { victim, tried: 0 };
            self.post(victim, Msg::StealRequest)?;
        }
        if self.state == State::Passive {
            if let Some(tok) = self.token.take() {
                self.pass_token(tok)?;
            }
        }
        Ok(())
    }

    fn handle(&mut self, src: usize, msg: Msg) -> Res<Flow> {
        if msg.is_basic() {
            self.counter -= 1;
            self.colour = Colour::Black;
        }
        match (msg, self.state) {
            (Msg::StealRequest, _) => {
                let loot = self.split_off_loot();
                if loot.is_empty() {
                    self.post(src, Msg::NoWork)?;
                } else {
                    self.stats.tasks_out += loot.len() as u64;
                    self.post(src, Msg::Work(loot))?;
                }
            }
            (Msg::Work(tasks), State::Stealing { .. }) => {
                self.stats.steals_ok += 1;
                self.stats.tasks_in += tasks.len() as u64;
                self.queue.extend(tasks);
                self.state = State::Working;
            }
            (Msg::NoWork, State::Stealing { victim, tried }) => {
                self.stats.steals_failed += 1;
                let tried = tried + 1;
                if tried >= self.cfg.sweeps * (self.size - 1) {
                    self.state = State::Passive;
                } else {
                    let victim = self.next_victim(victim);
                    self.state = State::Stealing { victim, tried };
                    self.post(victim, Msg::StealRequest)?;
                }
            }
            (Msg::Token(tok), state) => {
                if self.rank == 0 && state == State::Passive {
                    return self.conclude_round(tok);
                }
                self.token = Some(tok);
            }
            (Msg::Terminate, State::Passive) => return Ok(Flow::Stop),
            (msg, state) => {
                return Err(format!("rank {} got {msg:?} from {src} while {state:?}", self.rank).into());
            }
        }
        Ok(Flow::Continue)
    }

    /// Rank 0, passive, got the token back: terminate, or go round again.
    fn conclude_round(&mut self, tok: Token) -> Res<Flow> {
        let quiet = tok.colour == Colour::White && self.colour == Colour::White && tok.count + self.counter == 0;
        if quiet {
            for r in 1..self.size {
                self.post(r, Msg::Terminate)?;
            }
            return Ok(Flow::Stop);
        }
        self.pass_token(tok)?;
        Ok(Flow::Continue)
    }

    fn pass_token(&mut self, tok: Token) -> Res<()> {
        let next = (self.rank + 1) % self.size;
        let out = if self.rank == 0 {
            Token::fresh()
        } else {
            let colour = if self.colour == Colour::Black { Colour::Black } else { tok.colour };
            Token { colour, count: tok.count + self.counter }
        };
        self.colour = Colour::White;
        self.post(next, Msg::Token(out))
    }

    /// Half of the queue, oldest first (the biggest subtrees), at most `MAX_BATCH`.
    fn split_off_loot(&mut self) -> Vec<Task> {
        if self.state != State::Working || self.queue.len() < 2 {
            return Vec::new();
        }
        let take = (self.queue.len() / 2).min(MAX_BATCH);
        self.queue.drain(..take).collect()
    }

    fn next_victim(&self, after: usize) -> usize {
        let v = (after + 1) % self.size;
        if v == self.rank { (v + 1) % self.size } else { v }
    }

    fn post(&mut self, dst: usize, msg: Msg) -> Res<()> {
        if msg.is_basic() {
            self.counter += 1;
        }
        let words = msg.encode();
        // `isend` is eager (the words are copied out), so waiting on it does not wait for
        // the receiver: two ranks messaging each other from their handlers cannot block.
        self.comm.isend(dst, CTRL, &words)?.wait()?;
        Ok(())
    }
}
