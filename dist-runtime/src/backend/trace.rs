//! `DIST_TRACE=DIR`: every op of every communicator, as Chrome trace events.
//!
//! Each rank appends one JSON object per line to `DIR/rank-<world rank>.jsonl`:
//! a complete event (`"ph":"X"`) with the op's name, its communicator, bytes, peer or
//! root, and start/duration in microseconds since the Unix epoch (one clock for every
//! rank of the machine). `cargo spmd trace DIR` merges the ranks into one
//! `{"traceEvents": [..]}` file for Perfetto or chrome://tracing, one track per rank.
//! The wrapper sits around any backend, so shm and nccl are traced alike.

use super::{Backend, ReqId};
use crate::dtype::DType;
use crate::error::{Error, Result, Site};
use crate::op::Op;
use crate::reduce_op::ReduceOp;
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
    fn barrier(&self, cx: &Op) -> Result<()> {
        self.timed(cx.name, String::new(), || self.inner.barrier(cx))
    }
    fn broadcast(&self, cx: &Op, buf: &mut [u8], root: usize) -> Result<()> {
        self.timed(cx.name, format!(r#""bytes":{},"root":{root}"#, buf.len()), || self.inner.broadcast(cx, buf, root))
    }
    fn reduce(&self, cx: &Op, buf: &mut [u8], dtype: DType, op: ReduceOp, root: usize) -> Result<()> {
        let args = format!(r#""bytes":{},"root":{root},"op":"{op:?}""#, buf.len());
        self.timed(cx.name, args, || self.inner.reduce(cx, buf, dtype, op, root))
    }
    fn all_reduce(&self, cx: &Op, buf: &mut [u8], dtype: DType, op: ReduceOp) -> Result<()> {
        let args = format!(r#""bytes":{},"op":"{op:?}""#, buf.len());
        self.timed(cx.name, args, || self.inner.all_reduce(cx, buf, dtype, op))
    }
    fn gather_v(
        &self,
        cx: &Op,
        send: &[u8],
        recv: Option<&mut [u8]>,
        counts: &[usize],
        root: Option<usize>,
    ) -> Result<()> {
        let total: usize = counts.iter().sum();
        let root_arg = root.map(|r| format!(r#","root":{r}"#)).unwrap_or_default();
        let args = format!(r#""bytes":{},"total_bytes":{total}{root_arg}"#, send.len());
        self.timed(cx.name, args, || self.inner.gather_v(cx, send, recv, counts, root))
    }
    fn scatter(&self, cx: &Op, send: Option<&[u8]>, recv: &mut [u8], root: usize) -> Result<()> {
        let args = format!(r#""bytes":{},"root":{root}"#, recv.len());
        self.timed(cx.name, args, || self.inner.scatter(cx, send, recv, root))
    }
    fn reduce_scatter(&self, cx: &Op, send: &[u8], recv: &mut [u8], dtype: DType, op: ReduceOp) -> Result<()> {
        let args = format!(r#""bytes":{},"op":"{op:?}""#, send.len());
        self.timed(cx.name, args, || self.inner.reduce_scatter(cx, send, recv, dtype, op))
    }
    fn all_to_all_v(
        &self,
        cx: &Op,
        send: &[u8],
        send_counts: &[usize],
        recv: &mut [u8],
        recv_counts: &[usize],
    ) -> Result<()> {
        let args = format!(r#""bytes":{},"recv_bytes":{}"#, send.len(), recv.len());
        self.timed(cx.name, args, || self.inner.all_to_all_v(cx, send, send_counts, recv, recv_counts))
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
    fn create_child(&self, cx: &Op, key: &str, members: &[usize]) -> Result<Option<Box<dyn Backend>>> {
        let child = self
            .timed(cx.name, format!(r#""members":{}"#, members.len()), || self.inner.create_child(cx, key, members))?;
        let name = format!("{}/{key}", self.comm);
        Ok(child.map(|c| Box::new(Traced::new(c, self.tracer.clone(), name)) as Box<dyn Backend>))
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
