//! Round-robin tournament schedule (the circle method): every pair of ranks meets in
//! exactly one round. With an even number of players, player `m = players - 1` stays
//! put and the others rotate; in round `k`, player `k` meets `m` and every other player
//! `i` meets `(2k - i) mod m`. An odd number of ranks gets a phantom player: whoever
//! meets it has a bye that round.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Round {
    pub index: usize,
    /// `None`: a bye.
    pub partner: Option<usize>,
}

#[derive(Clone, Debug)]
pub struct Schedule {
    me: usize,
    ranks: usize,
    players: usize,
    round: usize,
}

impl Schedule {
    pub fn new(me: usize, ranks: usize) -> Schedule {
        let players = if ranks % 2 == 0 { ranks } else { ranks + 1 };
        Schedule { me, ranks, players, round: 0 }
    }

    pub fn rounds(&self) -> usize {
        self.players - 1
    }

    fn opponent(&self, k: usize) -> usize {
        let m = self.players - 1;
        if self.me == m {
            k
        } else if self.me == k {
            m
        } else {
            (2 * k + m - self.me) % m
        }
    }
}

impl Iterator for Schedule {
    type Item = Round;

    fn next(&mut self) -> Option<Round> {
        if self.round == self.rounds() {
            return None;
        }
        let index = self.round;
        self.round += 1;
        let p = self.opponent(index);
        Some(Round { index, partner: (p < self.ranks).then_some(p) })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.rounds() - self.round;
        (left, Some(left))
    }
}

impl ExactSizeIterator for Schedule {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every pair meets exactly once, and partners agree on the round.
    #[test]
    fn every_pair_meets_once() {
        for ranks in 1..=12 {
            let table: Vec<Vec<Round>> = (0..ranks).map(|r| Schedule::new(r, ranks).collect()).collect();
            for (r, rounds) in table.iter().enumerate() {
                for x in rounds.iter().filter(|x| x.partner.is_some()) {
                    let p = x.partner.unwrap();
                    assert_eq!(table[p][x.index].partner, Some(r), "{ranks} ranks, round {}", x.index);
                }
                let mut met: Vec<usize> = rounds.iter().filter_map(|x| x.partner).collect();
                met.sort_unstable();
                assert_eq!(met, (0..ranks).filter(|&q| q != r).collect::<Vec<_>>());
            }
        }
    }
}
