//! Native side of `npm run bench:core`: erasure encode / degraded decode throughput, and the
//! per-chunk checksum against a plain copy, on the native engine.
//!
//! `bench-core` alone measures every workload (median of 5 rounds of 300 ms) and prints one JSON
//! row per line. `bench-core --serve` reads lines `k m op` from stdin and answers each with the
//! GiB/s of one more 300 ms round of that workload, so `scripts/bench-core.mjs` can alternate
//! native and WASM rounds and both see the same load on a shared machine.

use shardgate_core::erasure::EngineKind;
use shardgate_core::workload::{Op, Workload};
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

const CONFIGS: [(usize, usize); 2] = [(4, 2), (8, 4)];
const BLOCK_BYTES: usize = 1 << 20;
/// Time spent per measurement; the median of several rounds is reported.
const ROUND: Duration = Duration::from_millis(300);
const ROUNDS: usize = 5;

fn workload(k: usize, m: usize, op: Op) -> Workload {
    let mut w = Workload::new(k, m, BLOCK_BYTES, op, EngineKind::Native).expect("valid workload");
    w.run(3).expect("warm-up");
    w
}

/// GiB/s of one round.
fn round(w: &mut Workload) -> f64 {
    let start = Instant::now();
    let mut iters = 0u64;
    while start.elapsed() < ROUND {
        std::hint::black_box(w.run(4).expect("run"));
        iters += 4;
    }
    (iters * BLOCK_BYTES as u64) as f64 / start.elapsed().as_secs_f64() / (1u64 << 30) as f64
}

fn serve() {
    let mut workloads: HashMap<(usize, usize, String), Workload> = HashMap::new();
    let mut out = std::io::stdout().lock();
    for line in std::io::stdin().lock().lines() {
        let line = line.expect("stdin");
        let [k, m, op] = line.split_whitespace().collect::<Vec<_>>()[..] else {
            panic!("expected `k m op`, got {line:?}");
        };
        let (k, m) = (k.parse().expect("k"), m.parse().expect("m"));
        let w = workloads
            .entry((k, m, op.to_string()))
            .or_insert_with(|| workload(k, m, Op::from_name(op).expect("op")));
        writeln!(out, "{:.4}", round(w)).expect("stdout");
        out.flush().expect("stdout");
    }
}

fn main() {
    if std::env::args().any(|a| a == "--serve") {
        return serve();
    }
    let mut rows = Vec::new();
    for (k, m) in CONFIGS {
        rows.push((k, m, Op::Encode, "encode"));
        rows.push((k, m, Op::Decode, "decode"));
    }
    rows.push((1, 1, Op::Checksum, "checksum"));
    rows.push((1, 1, Op::Copy, "copy"));
    for (k, m, op, name) in rows {
        let mut w = workload(k, m, op);
        let mut rates: Vec<f64> = (0..ROUNDS).map(|_| round(&mut w)).collect();
        rates.sort_by(f64::total_cmp);
        let config = if op == Op::Encode || op == Op::Decode {
            format!("{k}+{m}")
        } else {
            "-".to_string()
        };
        println!(
            "{{\"config\":\"{config}\",\"block_bytes\":{BLOCK_BYTES},\"op\":\"{name}\",\"engine\":\"native\",\"gib_per_s\":{:.4}}}",
            rates[ROUNDS / 2]
        );
    }
}
