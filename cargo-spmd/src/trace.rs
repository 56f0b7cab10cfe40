//! `cargo spmd trace DIR` (and `cargo xtask trace DIR`): merges the per-rank traces that `DIST_TRACE=DIR` wrote into
//! one Chrome trace (`DIR/trace.json`), one track per rank, for Perfetto
//! (ui.perfetto.dev) or chrome://tracing, and prints a per-op summary.

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub fn merge(dir: &Path, out: Option<PathBuf>) -> Result<(), String> {
    let mut files: Vec<(usize, PathBuf)> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let rank = name.strip_prefix("rank-")?.strip_suffix(".jsonl")?.parse().ok()?;
            Some((rank, e.path()))
        })
        .collect();
    if files.is_empty() {
        return Err(format!(
            "no rank-*.jsonl in {}: run the program with DIST_TRACE={} (or `cargo spmd run --trace {}`)",
            dir.display(),
            dir.display(),
            dir.display()
        ));
    }
    files.sort();
    let mut events: Vec<Value> = Vec::new();
    for (rank, path) in &files {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let v: Value = serde_json::from_str(line).map_err(|e| {
                format!("{}:{}: not a trace event ({e}); was the rank killed mid-write?", path.display(), i + 1)
            })?;
            events.push(v);
        }
        events.push(json!({"name": "process_name", "ph": "M", "pid": rank, "args": {"name": format!("rank {rank}")}}));
        events.push(json!({"name": "process_sort_index", "ph": "M", "pid": rank, "args": {"sort_index": rank}}));
        events.push(json!({"name": "thread_name", "ph": "M", "pid": rank, "tid": 0, "args": {"name": "ops"}}));
        events.push(json!({"name": "thread_name", "ph": "M", "pid": rank, "tid": 1, "args": {"name": "non-blocking collectives"}}));
    }
    // One clock for all ranks (µs since the epoch); start the timeline at the first op.
    let t0 = events.iter().filter_map(|e| e["ts"].as_f64()).fold(f64::INFINITY, f64::min);
    let mut summary: BTreeMap<String, (usize, f64, u64)> = BTreeMap::new();
    let mut last = 0.0f64;
    for e in events.iter_mut() {
        if let Some(ts) = e["ts"].as_f64() {
            let rel = ts - t0;
            e["ts"] = json!((rel * 1000.0).round() / 1000.0);
            let dur = e["dur"].as_f64().unwrap_or(0.0);
            last = last.max(rel + dur);
            let s = summary.entry(e["name"].as_str().unwrap_or("?").to_string()).or_default();
            s.0 += 1;
            s.1 += dur;
            s.2 += e["args"]["bytes"].as_u64().unwrap_or(0);
        }
    }
    let out = out.unwrap_or_else(|| dir.join("trace.json"));
    let doc = json!({"traceEvents": events, "displayTimeUnit": "ms"});
    std::fs::write(&out, serde_json::to_string(&doc).map_err(|e| e.to_string())?)
        .map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    let n_ops: usize = summary.values().map(|s| s.0).sum();
    println!("{} ranks, {n_ops} ops over {:.3} ms -> {}", files.len(), last / 1e3, out.display());
    // (Summed over the ranks: an all_reduce of 8 ranks is 8 calls, its bytes 8 buffers.)
    println!("per op, summed over all {} ranks (calls, time inside the op, bytes of the buffers):", files.len());
    println!("{:<16} {:>8} {:>12} {:>14} {:>12}", "op", "calls", "total ms", "bytes", "ms per call");
    for (name, (calls, us, bytes)) in &summary {
        println!("{name:<16} {calls:>8} {:>12.3} {bytes:>14} {:>12.4}", us / 1e3, us / 1e3 / (*calls).max(1) as f64);
    }
    println!("open it in https://ui.perfetto.dev or chrome://tracing");
    let flight = flight_line_up(dir)?;
    if !flight.is_empty() {
        println!("flight recorder, where each failing rank last was:\n{flight}");
    }
    Ok(())
}

/// The `flight-<rank>.tsv` files failing ranks wrote under `dir`, lined up per
/// communicator (empty when no rank failed).
pub fn flight_line_up(dir: &Path) -> Result<String, String> {
    let mut dumps: Vec<(usize, String)> = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(rank) = name.strip_prefix("flight-").and_then(|r| r.strip_suffix(".tsv")?.parse().ok()) {
            let text = std::fs::read_to_string(e.path()).map_err(|err| format!("cannot read {name}: {err}"))?;
            dumps.push((rank, text));
        }
    }
    dumps.sort();
    Ok(dist_runtime::line_up_flight_records(&dumps))
}

#[cfg(test)]
mod tests {
    #[test]
    fn merges_ranks_onto_one_timeline() {
        let dir = std::env::temp_dir().join(format!("xtask-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ev = |rank: usize, ts: f64| {
            format!(
                r#"{{"name":"all_reduce","cat":"World","ph":"X","ts":{ts},"dur":5.0,"pid":{rank},"tid":0,"args":{{"comm":"World","bytes":8}}}}"#
            )
        };
        std::fs::write(dir.join("rank-0.jsonl"), format!("{}\n{}\n", ev(0, 1e15 + 10.0), ev(0, 1e15 + 30.0))).unwrap();
        std::fs::write(dir.join("rank-1.jsonl"), format!("{}\n", ev(1, 1e15 + 12.0))).unwrap();
        super::merge(&dir, None).unwrap();
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("trace.json")).unwrap()).unwrap();
        let evs = doc["traceEvents"].as_array().unwrap();
        let ts: Vec<f64> = evs.iter().filter(|e| e["ph"] == "X").map(|e| e["ts"].as_f64().unwrap()).collect();
        assert_eq!(ts, vec![0.0, 20.0, 2.0]);
        let names: Vec<&str> =
            evs.iter().filter(|e| e["name"] == "process_name").map(|e| e["args"]["name"].as_str().unwrap()).collect();
        assert_eq!(names, vec!["rank 0", "rank 1"]);
        // Failing ranks' flight recorders, lined up.
        std::fs::write(dir.join("flight-0.tsv"), "World\t#3\tall_reduce\tsrc/main.rs:20\tnot completed\n").unwrap();
        std::fs::write(dir.join("flight-1.tsv"), "World\t#3\tbroadcast\tsrc/main.rs:24\tnot completed\n").unwrap();
        assert_eq!(
            super::flight_line_up(&dir).unwrap(),
            "World: rank 0 was last at #3 all_reduce (src/main.rs:20, not completed); rank 1 was last at #3 \
             broadcast (src/main.rs:24, not completed)"
        );
        std::fs::write(dir.join("rank-2.jsonl"), "{not json\n").unwrap();
        assert!(super::merge(&dir, None).unwrap_err().contains("rank-2.jsonl:1: not a trace event"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
