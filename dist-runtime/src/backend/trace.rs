//! `DIST_TRACE=DIR`: every op of every communicator, as Chrome trace events.
//!
//! Each rank appends one JSON object per line to `DIR/rank-<world rank>.jsonl`:
//! a complete event (`"ph":"X"`) with the op's name, its communicator, bytes, peer or
//! root, and start/duration in microseconds since the Unix epoch (one clock for every
//! rank of the machine). `cargo spmd trace DIR` merges the ranks into one
//! `{"traceEvents": [..]}` file for Perfetto or chrome://tracing, one track per rank.
//! The wrapper sits around any backend, so shm and nccl are traced alike.

use super::{Backend, Bufs, ReqId};
use crate::dtype::DType;
use crate::error::{Error, Result, Site};
use crate::op::Op;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

/// One rank's trace file.
pub(crate) struct Tracer {
    out: Mutex<std::io::BufWriter<std::fs::File>>,
    rank: usize,
}

impl Tracer {
    /// Opens `dir/rank-<rank>.jsonl` (creating `dir`), truncating an old one.
    pub(crate) fn open(dir: &std::path::Path, rank: usize) -> Result<Arc<Tracer>> {
        let fail = |what: &str, e: std::io::Error| Error::Backend {
            backend: "trace",
            msg: format!("DIST_TRACE={}: cannot {what}", dir.display()),
            source: Some(Box::new(e)),
        };
        std::fs::create_dir_all(dir).map_err(|e| fail("create the directory", e))?;
        let path = dir.join(format!("rank-{rank}.jsonl"));
        let f = std::fs::File::create(&path).map_err(|e| fail(&format!("create {}", path.display()), e))?;
        Ok(Arc::new(Tracer { out: Mutex::new(std::io::BufWriter::new(f)), rank }))
    }

    fn now_us() -> f64 {
        SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs_f64() * 1e6
    }

    /// Appends one complete event. `args` is extra JSON members (`"bytes":8,...`).
    fn event(&self, name: &str, comm: &str, start: f64, args: &str) {
        let end = Self::now_us();
        // The async worker's ops go on their own track under the rank.
        let tid = match std::thread::current().name() {
            Some(n) if n.starts_with("dist-") => 1,
            _ => 0,
        };
        let mut line = String::with_capacity(160);
        let _ = write!(
            line,
            r#"{{"name":"{name}","cat":"{}","ph":"X","ts":{start:.3},"dur":{:.3},"pid":{},"tid":{tid},"args":{{"comm":"{}"{}{args}}}}}"#,
            json_escape(comm),
            (end - start).max(0.0),
            self.rank,
            json_escape(comm),
            if args.is_empty() { "" } else { "," },
        );
        line.push('\n');
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        let _ = out.write_all(line.as_bytes());
    }

    pub(crate) fn flush(&self) {
        let _ = self.out.lock().unwrap_or_else(|p| p.into_inner()).flush();
    }
}

fn json_escape(s: &str) -> String {
    s.chars()
        .flat_map(|c| match c {
            '"' => vec!['\\', '"'],
            '\\' => vec!['\\', '\\'],
            c if (c as u32) < 0x20 => format!("\\u{:04x}", c as u32).chars().collect(),
            c => vec![c],
        })
        .collect()
}

/// A backend whose ops are recorded by a [`Tracer`].
pub(crate) struct Traced {
    inner: Box<dyn Backend>,
    tracer: Arc<Tracer>,
    /// The communicator's name ("World", "Tp{0,1}").
    comm: String,
}

impl Traced {
    pub(crate) fn new(inner: Box<dyn Backend>, tracer: Arc<Tracer>, comm: String) -> Traced {
        Traced { inner, tracer, comm }
    }

    fn timed<T>(&self, name: &str, args: String, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let t = Tracer::now_us();
        let r = f();
        let args = if r.is_err() { format!("{args},\"error\":true") } else { args };
        self.tracer.event(name, &self.comm, t, args.trim_start_matches(','));
        r
    }
}

impl Drop for Traced {
    fn drop(&mut self) {
        self.tracer.flush();
    }
}

/// A collective's trace arguments: its bytes, root and reduction.
fn op_args(cx: &Op, bufs: &Bufs<'_>) -> String {
    let mut args = if matches!(bufs, Bufs::None) { String::new() } else { format!(r#""bytes":{}"#, bufs.bytes()) };
    if let Some(r) = cx.root_rank() {
        args.push_str(&format!(r#","root":{r}"#));
    }
    if let Some(op) = cx.reduce_op() {
        args.push_str(&format!(r#","op":"{op:?}""#));
    }
    args
}

impl Backend for Traced {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }
    fn rank(&self) -> usize {
        self.inner.rank()
    }
    fn size(&self) -> usize {
        self.inner.size()
    }
    fn piggybacks_agreement(&self) -> bool {
        self.inner.piggybacks_agreement()
    }
    fn run(&self, cx: &Op, bufs: Bufs<'_>) -> Result<()> {
        let mut args = op_args(cx, &bufs);
        if cx.agreement {
            // The record exchange that checks the op: its own event, next to the op's.
            args.push_str(r#","agreement":true"#);
            return self.timed(&format!("{} (agreement)", cx.name), args, || self.inner.run(cx, bufs));
        }
        self.timed(cx.name, args, || self.inner.run(cx, bufs))
    }
    fn run_agreed(&self, name: &str, cx: &Op, bufs: Bufs<'_>) -> Result<()> {
        // One event for the op and its check, whichever way the inner backend compares
        // the records (in the op's messages, or an all-gather first).
        let args = op_args(cx, &bufs) + r#","agreement":true"#;
        self.timed(cx.name, args, || self.inner.run_agreed(name, cx, bufs))
    }
    fn alloc(&self, cx: &Op, bytes: usize) -> Result<Box<dyn crate::backend::SharedMem>> {
        self.timed(cx.name, format!(r#""bytes":{bytes}"#), || self.inner.alloc(cx, bytes))
    }
    fn send(&self, site: Site, dst: usize, tag: u32, dtype: DType, data: &[u8]) -> Result<()> {
        let args = format!(r#""bytes":{},"peer":{dst},"tag":{tag}"#, data.len());
        self.timed("send", args, || self.inner.send(site, dst, tag, dtype, data))
    }
    fn recv(&self, site: Site, src: usize, tag: u32, dtype: DType, buf: &mut [u8]) -> Result<()> {
        let args = format!(r#""bytes":{},"peer":{src},"tag":{tag}"#, buf.len());
        self.timed("recv", args, || self.inner.recv(site, src, tag, dtype, buf))
    }
    fn post_send(&self, site: Site, dst: usize, tag: u32, dtype: DType, data: &[u8]) -> Result<ReqId> {
        let args = format!(r#""bytes":{},"peer":{dst},"tag":{tag}"#, data.len());
        self.timed("isend", args, || self.inner.post_send(site, dst, tag, dtype, data))
    }
    fn post_recv(&self, site: Site, src: usize, tag: u32) -> Result<ReqId> {
        self.timed("irecv", format!(r#""peer":{src},"tag":{tag}"#), || self.inner.post_recv(site, src, tag))
    }
    fn wait_send(&self, site: Site, id: ReqId) -> Result<()> {
        self.timed("wait(isend)", String::new(), || self.inner.wait_send(site, id))
    }
    fn wait_recv(&self, site: Site, id: ReqId, dtype: DType, buf: &mut [u8]) -> Result<()> {
        let args = format!(r#""bytes":{}"#, buf.len());
        self.timed("wait(irecv)", args, || self.inner.wait_recv(site, id, dtype, buf))
    }
    fn set_timeout(&self, t: std::time::Duration) {
        self.inner.set_timeout(t)
    }
    fn timeout(&self) -> std::time::Duration {
        self.inner.timeout()
    }
    fn test_send(&self, site: Site, id: ReqId) -> Result<bool> {
        self.inner.test_send(site, id)
    }
    fn test_recv(&self, site: Site, id: ReqId, dtype: DType, buf: &mut [u8]) -> Result<bool> {
        self.inner.test_recv(site, id, dtype, buf)
    }
    fn post_recv_any(&self, site: Site, tag: u32) -> Result<ReqId> {
        self.timed("irecv_any", format!(r#""tag":{tag}"#), || self.inner.post_recv_any(site, tag))
    }
    fn wait_recv_any(&self, site: Site, id: ReqId, dtype: DType, buf: &mut [u8]) -> Result<(usize, usize)> {
        let args = format!(r#""bytes":{}"#, buf.len());
        self.timed("wait(irecv_any)", args, || self.inner.wait_recv_any(site, id, dtype, buf))
    }
    fn test_recv_any(&self, site: Site, id: ReqId, dtype: DType, buf: &mut [u8]) -> Result<Option<(usize, usize)>> {
        self.inner.test_recv_any(site, id, dtype, buf)
    }
    fn create_child(&self, cx: &Op, key: &str, name: &str, members: &[usize]) -> Result<Option<Box<dyn Backend>>> {
        let child = self.timed(cx.name, format!(r#""members":{}"#, members.len()), || {
            self.inner.create_child(cx, key, name, members)
        })?;
        let name = format!("{}/{key}", self.comm);
        Ok(child.map(|c| Box::new(Traced::new(c, self.tracer.clone(), name)) as Box<dyn Backend>))
    }
    fn unreceived(&self) -> Vec<String> {
        self.inner.unreceived()
    }
    fn failed_ranks(&self) -> Result<Vec<usize>> {
        self.inner.failed_ranks()
    }
    fn revoke(&self) -> Result<()> {
        self.inner.revoke()
    }
    fn agree(&self, cx: &Op, flag: bool, call: u64) -> Result<(bool, Vec<usize>)> {
        self.timed("agree", String::new(), || self.inner.agree(cx, flag, call))
    }
    fn shrink(&self, cx: &Op, call: u64, name: &dyn Fn(&[usize]) -> String) -> Result<(Box<dyn Backend>, Vec<usize>)> {
        let (child, lost) = self.timed("shrink", String::new(), || self.inner.shrink(cx, call, name))?;
        let name = format!("{}/shrink{call}", self.comm);
        Ok((Box::new(Traced::new(child, self.tracer.clone(), name)) as Box<dyn Backend>, lost))
    }
    fn finish(&self) {
        self.inner.finish();
        self.tracer.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::json_escape;

    #[test]
    fn escapes_json() {
        assert_eq!(json_escape(r#"Tp{0,1}"#), "Tp{0,1}");
        assert_eq!(json_escape("a\"b\\c\n"), "a\\\"b\\\\c\\u000a");
    }
}
