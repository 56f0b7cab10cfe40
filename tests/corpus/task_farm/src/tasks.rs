//! The work itself: counting primes in half-open ranges.

#[derive(Clone, Copy, Debug)]
pub struct Task {
    pub id: u64,
    pub lo: u64,
    pub hi: u64,
}

/// [0, limit) cut into ranges of `chunk` numbers.
pub fn make_tasks(limit: u64, chunk: u64) -> Vec<Task> {
    (0..limit.div_ceil(chunk))
        .map(|id| Task { id, lo: id * chunk, hi: ((id + 1) * chunk).min(limit) })
        .collect()
}

fn is_prime(n: u64) -> bool {
    if n < 2 {
        return false;
    }
    if n % 2 == 0 {
        return n == 2;
    }
    let mut d = 3;
    while d * d <= n {
        if n % d == 0 {
            return false;
        }
        d += 2;
    }
    true
}

pub fn count_primes(task: &Task) -> u64 {
    (task.lo..task.hi).filter(|&n| is_prime(n)).count() as u64
}

/// The reference: a sieve over the whole range at once.
pub fn sieve_count(limit: u64) -> u64 {
    let limit = limit as usize;
    if limit < 3 {
        return 0;
    }
    let mut composite = vec![false; limit];
    let mut i = 2;
    while i * i < limit {
        if !composite[i] {
            (i * i..limit).step_by(i).for_each(|j| composite[j] = true);
        }
        i += 1;
    }
    (2..limit).filter(|&k| !composite[k]).count() as u64
}
