//! Local operators on one partition: hash join and hash aggregation. Also used, on the
//! whole tables, as the serial reference.

use crate::table::Rows;
use std::collections::HashMap;

/// R ⋈ S on key → rows (key, r.payload, s.payload), in no particular order.
pub fn hash_join(r: &Rows, s: &Rows) -> Rows {
    let mut build: HashMap<u64, Vec<u64>> = HashMap::new();
    for (k, v) in r.keys.iter().zip(&r.cols[0]) {
        build.entry(*k).or_default().push(*v);
    }
    let mut out = Rows::with_columns(2);
    for (k, sv) in s.keys.iter().zip(&s.cols[0]) {
        if let Some(rvs) = build.get(k) {
            rvs.iter().for_each(|rv| out.push(*k, &[*rv, *sv]));
        }
    }
    out
}

/// GROUP BY key: (key, count, sum of payloads). Input columns are either one payload
/// column (raw rows) or already (count, sum) partials from a combiner.
pub fn aggregate(rows: &Rows) -> Rows {
    let mut acc: HashMap<u64, (u64, u64)> = HashMap::new();
    let partial = rows.cols.len() == 2;
    for i in 0..rows.len() {
        let e = acc.entry(rows.keys[i]).or_insert((0, 0));
        if partial {
            e.0 += rows.cols[0][i];
            e.1 = e.1.wrapping_add(rows.cols[1][i]);
        } else {
            e.0 += 1;
            e.1 = e.1.wrapping_add(rows.cols[0][i]);
        }
    }
    let mut out = Rows::with_columns(2);
    for (k, (c, s)) in acc {
        out.push(k, &[c, s]);
    }
    out
}

/// Rows as sorted tuples, for comparison.
pub fn canonical(rows: &Rows) -> Vec<Vec<u64>> {
    let mut v: Vec<Vec<u64>> = (0..rows.len())
        .map(|i| {
            let (k, vals) = rows.row(i);
            std::iter::once(k).chain(vals).collect()
        })
        .collect();
    v.sort_unstable();
    v
}
