//! Named scalar metrics, each with the reduction that makes it global.

use dist_runtime::prelude::*;

pub struct Metric {
    pub value: f64,
    pub op: ReduceOp,
}

#[derive(Default)]
pub struct Metrics {
    entries: std::collections::BTreeMap<&'static str, Metric>,
}

impl Metrics {
    pub fn record(&mut self, name: &'static str, value: f64, op: ReduceOp) {
        self.entries.insert(name, Metric { value, op });
    }

    /// Replace every local value by its global reduction.
    pub fn reduce(&mut self, comm: &Comm<World>) -> dist_runtime::Result<()> {
        for m in self.entries.values_mut() {
            let mut buf = [m.value];
            comm.all_reduce(&mut buf, m.op)?;
            m.value = buf[0];
        }
        Ok(())
    }

    pub fn get(&self, name: &str) -> f64 {
        self.entries.get(name).map(|m| m.value).unwrap_or(f64::NAN)
    }
}
